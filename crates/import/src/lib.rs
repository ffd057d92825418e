//! rf-import: turns what already exists when an incident is noticed into a recording.
//!
//! Two sources are understood:
//!
//! - [`kubectl_watch`]: what `kubectl get KIND -w -o json` prints, with or without
//!   `--output-watch-events`: concatenated JSON documents (pretty or compact, or JSON lines),
//!   either watch events `{"type": "MODIFIED", "object": {...}}` or bare objects. kubectl prints
//!   no receive times, so each event's time is taken from the object (the latest of
//!   `managedFields[].time`, condition `lastUpdateTime`/`lastTransitionTime`, pause condition
//!   `startTime`, `creationTimestamp` and `deletionTimestamp` less its grace period) and never
//!   goes backwards within one input; the header's notes say `times: approximate`. The
//!   `resourceVersion` is a cluster-wide counter in every current API server: a write is never
//!   dated before one with a lower numeric `resourceVersion` (a `DELETED` event, whose object
//!   carries only earlier times, lands after what preceded it), and events that fall on the same
//!   time are ordered by it.
//! - [`audit_log`]: `audit.k8s.io/v1` Event JSON lines (plain or gzip). Completed
//!   (`ResponseComplete`), successful (code < 400) `create`, `update`, `patch` and `delete`
//!   requests of the recorded kinds, subresources included, become records at their
//!   `stageTimestamp`, with `user.username` as the record's actor (`alice (as bob)` when alice
//!   impersonated bob). The state is the `responseObject` (audit level `RequestResponse`). At
//!   `Request` level an update's body is taken as the state and a patch is applied to the last
//!   known state: a JSON array as a JSON patch (RFC 6902), an object as a JSON merge patch
//!   (RFC 7386). The audit log does not say which patch type a request used, so a strategic merge
//!   patch is applied as a merge patch: lists are replaced whole, `$patch`/`$retainKeys`
//!   directives are not understood (they are dropped with a warning). A write whose state cannot be
//!   known (no base for a patch; `Metadata` level) becomes a `Gap` record that says so.
//!
//! - [`gke_audit`] and [`eks_audit`]: the audit logs of GKE (`gcloud logging read
//!   --format=json`) and EKS (CloudWatch Logs exports), each entry turned into the
//!   `audit.k8s.io/v1` Event it records and read as [`audit_log`] reads those.
//! - [`events`]: exported Events (`kubectl get events -A -o json`, `kubectl get events -w -o
//!   json`, an event exporter's JSON lines), as one list of the latest version of each at the
//!   time of the last: the history a recording's first list holds, which `analyze`
//!   reconstructs from.
//!
//! - [`controller_log`]: the Argo Rollouts controller's logs (text or JSON): each line that logs
//!   an Event it emitted becomes that Event, listed as [`events`] lists them.
//!
//! Each produces an [`Imported`]: a header, records with `seq` from 1 in time order (from a
//! watch capture or an audit log the first sight of an object is `Added`: there is no initial
//! list), and the warnings met ([`Diagnostic`]s, `file:line: message`). Every object goes
//! through the recorder's redaction.
//!
//! This crate reads any [`std::io::BufRead`]; it never opens a path or prints.
//!
//! ```no_run
//! use rf_import::{Input, audit_log};
//! let file = std::io::BufReader::new(std::fs::File::open("audit.log.gz")?);
//! let imported = audit_log(vec![Input::new("audit.log.gz", file)])?;
//! for w in &imported.warnings {
//!     eprintln!("warning: {w}");
//! }
//! println!("{} records", imported.records.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod audit;
mod build;
mod cloud;
mod controller_log;
mod error;
mod events;
mod input;
mod kubectl;
mod patch;

pub use audit::audit_log;
pub use build::Imported;
pub use cloud::{eks_audit, gke_audit};
pub use controller_log::controller_log;
pub use error::{Error, Result};
pub use events::events;
pub use input::{Diagnostic, Input, MAX_INPUT_BYTES};
pub use kubectl::kubectl_watch;
pub use patch::{json_patch, merge_patch};
