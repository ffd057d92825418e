//! rf-serve: a read-only Kubernetes API server that serves a rollout-forensics recording, so
//! kubectl, k9s and `kubectl argo rollouts get rollout -w` can look at a past incident, and so the
//! recorder's tests have an API server whose whole history is known.
//!
//! It never writes: every verb but GET (and HEAD) is answered `405 MethodNotAllowed` with a
//! `Status`. It binds to loopback unless [`Options::listen`] says otherwise. It never reads a
//! path: the caller hands it a [`Timeline`] built from any [`std::io::Read`] or from records.
//!
//! # Shape
//!
//! The pure part is [`Timeline`]: built once from the records, it knows the state of every kind
//! at every *position* (the state after the first `p` records) and the watch [`Event`]s between
//! them. [`Server`] (async, tokio + hyper) answers requests from that shared, immutable timeline;
//! each watch stream is a task pulling from it into a bounded channel, so memory does not grow
//! per client beyond the objects of one list. [`Background`] runs a server on its own thread.
//!
//! ```no_run
//! use std::sync::Arc;
//! use rf_serve::{Background, Options, Pace, Timeline};
//! let file = std::fs::File::open("recordings/rerender-race.rfr")?;
//! let timeline = Arc::new(Timeline::read(file)?);
//! let server = Background::start(timeline, Options { pace: Pace::Max, ..Options::default() })?;
//! println!("kubectl -s {} get rollouts -A", server.url());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is served
//!
//! Discovery (`/version`, `/api`, `/api/v1`, `/apis`, `/apis/GROUP`, `/apis/GROUP/VERSION`)
//! lists every recorded kind ([`Resource::for_kind`]: `rollouts` (`ro`), `applications`,
//! `replicasets` (`rs`), `services` (`svc`), `endpointslices`, `pods` (`po`), `events` (`ev`), and
//! the lowercase kind + `s` for other kinds), all namespaced, verbs `get`, `list`, `watch`; plus
//! the recording's namespaces as `Namespace` objects. Kinds that were not recorded are not
//! served (an empty list would claim there were none), with one exception: AnalysisRuns and
//! Experiments (`argoproj.io/v1alpha1`) and Deployments (`apps/v1`), which
//! `kubectl argo rollouts get rollout` waits for before it shows anything, are answered as
//! empty lists, empty watches or NotFound, each answer with a `Warning` header (printed by
//! kubectl and client-go) that they were not recorded.
//!
//! GET, LIST (one namespace or all; `labelSelector`; `fieldSelector` on `metadata.name` and
//! `metadata.namespace`; `limit`/`continue`) and WATCH (`{"type","object"}` lines, chunked). With
//! `Accept: application/json;as=Table;v=v1;g=meta.k8s.io` lists, gets and watches answer a
//! `Table` with kubectl's columns for the kind, ages measured to the served "now" (not the wall
//! clock), rows carrying a `PartialObjectMetadata`, the object, or nothing (`includeObject`).
//! A bad parameter is a `400 BadRequest` naming it; an unknown path a `404 NotFound`.
//!
//! # resourceVersion semantics
//!
//! **The base.** The oldest served state is the one after every kind's first list ended (the
//! recorder's initial lists); with no lists, the empty state before the first record. Earlier
//! states are "compacted": a watch from an older resourceVersion gets HTTP 200 and a single
//! `ERROR` event holding a `410 Expired` Status, as the API server answers; a list with an
//! `Exact` version or a `continue` token from before the base gets a `410 Expired` Status.
//!
//! **Versions are per resource**, as the API allows. For each kind ([`RvMode`]):
//! - [`RvMode::Recorded`] when its recorded resourceVersions are decimal integers that increase
//!   in record order (one etcd counter, one watch per kind): each event's version is the
//!   recorded one and objects are served byte for byte as recorded, `metadata.resourceVersion`
//!   included. The state at a position has the version of the last event before it (the base:
//!   the highest version recorded before it, the initial list's). A relist after a gap is served
//!   at its list's version: its changes share that version, and an inferred deletion's object
//!   carries it in `metadata.resourceVersion` (the one rewrite in this mode).
//! - [`RvMode::Counter`] otherwise (imports, several watchers of one kind interleaved, versions
//!   that are not integers): the state at position `p` has version `p + 1`, the object a record
//!   produced (index `i` from 0) has `i + 2`, and every object's `metadata.resourceVersion` is
//!   rewritten to it (other bytes untouched). [`Timeline::warnings`] says which kinds and why.
//!
//! **Ops as watch events.** `Added` is ADDED; `Modified` is MODIFIED (ADDED if the object was not
//! there); `Listed` is ADDED when first seen, MODIFIED when its bytes changed and nothing when
//! unchanged; `Deleted` and `Deleted{inferred}` are DELETED carrying the last state. `ListBegin`,
//! `ListEnd` and `Gap` carry no object and make no event. With a label or field selector, an
//! object that starts matching is ADDED and one that stops matching is DELETED.
//!
//! # The served "now" ([`Pace`])
//!
//! - [`Pace::At`]`(T)`: the state at T (every record observed at or before T, never before the
//!   base), forever. Watches send the events up to T, then idle.
//! - [`Pace::Speed`]`(x)`: now starts at the base and advances with wall time × x; watches
//!   send each event when now reaches its recorded time.
//! - [`Pace::Max`]: watches send every later event at once, as fast as the client reads, in
//!   record order. Each (resource, namespace scope) has a cursor that starts at the base and
//!   moves to the last event any watch of that scope has sent; a list without a version is
//!   served at that cursor. So a recorder that lists (at the base), then watches from the
//!   list's version, sees every state in order; after a broken watch it resumes from its last
//!   version; after a 410 its relist returns the state it had reached.
//!
//! Lists: `resourceVersion` unset or `"0"`: the state at the cursor. A version `v` (or
//! `resourceVersionMatch=NotOlderThan`): the state at the cursor if it is at least `v`, else
//! `504 Timeout` "Too large resource version" (under [`Pace::Max`]: the state at `v`).
//! `resourceVersionMatch=Exact`: the state at `v`, any from the base to the cursor (history is
//! never compacted past the base; later is `504`, except under [`Pace::Max`]). `continue` tokens hold the list's position and resume after the last key, so
//! pages are one consistent state.
//!
//! Watches: `resourceVersion` unset or `"0"` (or `sendInitialEvents=true`): synthetic ADDED
//! events for the state at the cursor (then, for `sendInitialEvents`, a BOOKMARK annotated
//! `k8s.io/initial-events-end`), then what follows. A version `v`: every event with a version
//! above `v`, in record order. `allowWatchBookmarks=true`: a BOOKMARK whenever the stream has
//! caught up and every [`Options::bookmark_interval`] while idle, and one at the end.
//! `timeoutSeconds` ends the stream (default [`Options::default_watch_timeout`]). At the end of
//! the recording a watch idles until its timeout.
//!
//! # Faults
//!
//! [`Faults`] makes clients' error paths testable: close each watch after N events, answer every
//! M-th watch with 410, stall a stream after N events.

mod api;
mod body;
mod clock;
mod error;
mod http;
mod json;
mod options;
mod resource;
mod rows;
mod selector;
mod server;
mod spill;
mod table;
mod timeline;
mod watch;
mod wire;

pub use body::Json;
pub use error::{Error, Result};
pub use json::Meta;
pub use options::{Faults, Options, Pace};
pub use resource::Resource;
pub use selector::{FieldSelector, LabelSelector};
pub use server::{Background, Server, kubeconfig};
pub use spill::{Holds, Scratch};
pub use table::human_duration;
pub use timeline::{
    Event, EventType, Indexing, KindTimeline, ObjectKey, Prepared, Preparer, RvMode, Timeline,
    TooOld, Version,
};
