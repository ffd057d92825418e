//! Parsing a record's object into the small view the analyzer reads. Independent of the
//! analyzer's state, so a reader can prepare records on other threads while the analyzer
//! replays them in order ([`Analyzer::push_prepared`](crate::Analyzer::push_prepared)). A view
//! depends on its record only: each thread keeps the pod templates it last read, which makes
//! reading the next version of an object faster, never different.

use std::cell::RefCell;

use rf_format::{Kind, Op, Record};
use serde::de::DeserializeOwned;

use crate::base::HashMap;
use crate::input::skim;

use crate::input::view::{
    ApplicationView, DeploymentView, EndpointSliceView, HttpRouteView, IngressView, PodView,
    ReplicaSetView, RolloutView, ServiceView, VirtualServiceView,
};

/// A record's object, parsed (or the reason it could not be).
#[derive(Debug)]
pub struct Prepared(pub(crate) Parsed);

#[derive(Debug)]
pub(crate) enum Parsed {
    /// Nothing to parse: a marker, a deletion, or a kind no detector reads.
    Nothing,
    Rollout(Box<RolloutView>),
    ReplicaSet(Box<ReplicaSetView>),
    Service(Box<ServiceView>),
    Slice(Box<EndpointSliceView>),
    Pod(Box<PodView>),
    App(Box<ApplicationView>),
    Deployment(Box<DeploymentView>),
    Ingress(Box<IngressView>),
    HttpRoute(Box<HttpRouteView>),
    VirtualService(Box<VirtualServiceView>),
    AnalysisRun(Box<crate::input::view::AnalysisRunView>),
    Flux(Box<crate::input::view::FluxView>),
    /// An Event of a list ([`Prepared::reads_listed`]).
    Event(Box<crate::input::view::EventView>),
    /// The warning to report.
    Unreadable(String),
}

/// Reads the view of `rec`'s object: with the fast reader `skim` when it can, with serde
/// otherwise (which then decides, and words the error).
fn parse<T: DeserializeOwned>(
    rec: &Record,
    skim: for<'a> fn(&mut skim::Json<'a>) -> Result<T, skim::Bail>,
    wrap: fn(Box<T>) -> Parsed,
) -> Parsed {
    parse_with(rec, &mut skim::Known::default(), skim, wrap)
}

/// What this thread last read of each object ([`skim::Known`]): the pod templates of Rollouts,
/// ReplicaSets and Deployments in one store, the endpoints of EndpointSlices in another, the
/// sync histories, resources and last operations of Applications in a third.
struct Templates {
    by_object: HashMap<Box<[u8]>, skim::Known>,
    /// The bytes of the templates held.
    bytes: usize,
    /// The bytes to hold at most: past them, all are forgotten.
    keep: usize,
    key: Vec<u8>,
}

/// The bytes kept per thread: past it, all are forgotten, and each object is read whole once
/// more. An object's are forgotten when its deletion is read; this bounds those of objects
/// whose deletion a recording does not hold (a gap, a watch that ended). Less than what the
/// 1M-record bench file's live Rollouts and ReplicaSets hold on one thread: it forgets them all
/// four times in a million records, and counts as many instructions as with four times more.
const KEEP_TEMPLATE_BYTES: usize = 2 * 1024 * 1024;

/// The bytes of EndpointSlices' endpoints kept per thread, apart from the templates: a
/// namespace of 200 Services of 100 pods each holds about 6 MiB of them.
const KEEP_SLICE_BYTES: usize = 8 * 1024 * 1024;

/// The bytes of Applications' sync histories, resource lists and last operations kept per
/// thread, apart from the others: 200 Applications of ten syncs and a dozen resources hold
/// about 1 MiB of them.
const KEEP_APP_BYTES: usize = 4 * 1024 * 1024;

thread_local! {
    static TEMPLATES: RefCell<Templates> = RefCell::new(Templates {
        by_object: HashMap::default(),
        bytes: 0,
        keep: KEEP_TEMPLATE_BYTES,
        key: Vec::new(),
    });
    /// The endpoints last read of each EndpointSlice.
    static SLICES: RefCell<Templates> = RefCell::new(Templates {
        by_object: HashMap::default(),
        bytes: 0,
        keep: KEEP_SLICE_BYTES,
        key: Vec::new(),
    });
    /// The sync history, resources and last operation last read of each Application.
    static APPS: RefCell<Templates> = RefCell::new(Templates {
        by_object: HashMap::default(),
        bytes: 0,
        keep: KEEP_APP_BYTES,
        key: Vec::new(),
    });
}

/// [`parse`] of an object with a pod template (a Rollout, a ReplicaSet), given the template
/// of the same object last read on this thread ([`skim::Known`]).
fn parse_known<T: DeserializeOwned>(
    rec: &Record,
    skim: for<'a> fn(&mut skim::Json<'a>) -> Result<T, skim::Bail>,
    wrap: fn(Box<T>) -> Parsed,
) -> Parsed {
    parse_kept(Store::Templates, rec, skim, wrap)
}

/// Which of a thread's stores of what is known ([`Templates`]) an object's is in.
#[derive(Clone, Copy)]
enum Store {
    Templates,
    Slices,
    Apps,
}

/// Runs `f` on `store` of this thread.
fn with_store<T>(store: Store, f: impl FnOnce(&RefCell<Templates>) -> T) -> T {
    match store {
        Store::Templates => TEMPLATES.with(f),
        Store::Slices => SLICES.with(f),
        Store::Apps => APPS.with(f),
    }
}

impl Templates {
    /// Takes what is known of `rec`'s object out of the store, if anything is.
    fn take(&mut self, rec: &Record) -> Option<skim::Known> {
        rec.identity_into(&mut self.key);
        let known = self.by_object.remove(self.key.as_slice())?;
        self.bytes = self.bytes.saturating_sub(known.bytes());
        Some(known)
    }
}

/// [`parse_known`], with what is known kept in `store`.
fn parse_kept<T: DeserializeOwned>(
    store: Store,
    rec: &Record,
    skim: for<'a> fn(&mut skim::Json<'a>) -> Result<T, skim::Bail>,
    wrap: fn(Box<T>) -> Parsed,
) -> Parsed {
    with_store(store, |t| {
        let Ok(mut t) = t.try_borrow_mut() else {
            return parse(rec, skim, wrap);
        };
        if t.bytes > t.keep {
            t.by_object.clear();
            t.bytes = 0;
        }
        // The last version of an object: what is known of it is read once more, and forgotten.
        if matches!(rec.op, Op::Deleted { .. }) {
            let mut known = t.take(rec).unwrap_or_default();
            return parse_with(rec, &mut known, skim, wrap);
        }
        let Templates {
            by_object,
            bytes,
            key,
            ..
        } = &mut *t;
        rec.identity_into(key);
        if let Some(known) = by_object.get_mut(key.as_slice()) {
            let before = known.bytes();
            let parsed = parse_with(rec, known, skim, wrap);
            *bytes = (*bytes + known.bytes()).saturating_sub(before);
            return parsed;
        }
        let mut known = skim::Known::kept();
        let parsed = parse_with(rec, &mut known, skim, wrap);
        *bytes += known.bytes();
        by_object.insert(key.as_slice().into(), known);
        parsed
    })
}

/// Forgets what `store` knows of `rec`'s object, deleted.
fn forget(store: Store, rec: &Record) {
    with_store(store, |t| {
        if let Ok(mut t) = t.try_borrow_mut() {
            t.take(rec);
        }
    });
}

fn parse_with<T: DeserializeOwned>(
    rec: &Record,
    known: &mut skim::Known,
    skim: for<'a> fn(&mut skim::Json<'a>) -> Result<T, skim::Bail>,
    wrap: fn(Box<T>) -> Parsed,
) -> Parsed {
    // One UTF-8 check of the whole object, then parsers that trust it: checking each string
    // as it is parsed (what parsing from bytes does) took more time than this one pass. The
    // SIMD check says only whether it is valid; the standard one then says where it is not.
    let text = match simdutf8::basic::from_utf8(&rec.object) {
        Ok(text) => Ok(text),
        Err(_) => std::str::from_utf8(&rec.object),
    };
    let parsed = match text {
        Ok(text) => match skim::read_with(text, known, skim) {
            Some(v) => Ok(v),
            None => serde_json::from_str::<T>(text).map_err(|e| e.to_string()),
        },
        Err(e) => Err(format!("not UTF-8 at byte {}", e.valid_up_to())),
    };
    match parsed {
        Ok(v) => wrap(Box::new(v)),
        Err(e) => Parsed::Unreadable(format!(
            "record seq {} ({} {}/{}): unreadable object: {e}",
            rec.seq,
            rec.kind.name(),
            rec.namespace,
            rec.name
        )),
    }
}

impl Prepared {
    /// True for the kinds whose objects the analyzer reads; the others it counts, and reads
    /// nothing of their objects (a reader may leave them out: `Reader::objects_of`).
    pub fn reads(kind: &Kind) -> bool {
        matches!(
            kind,
            Kind::Rollout
                | Kind::ReplicaSet
                | Kind::Service
                | Kind::EndpointSlice
                | Kind::Pod
                | Kind::Application
        ) || rf_format::api::DEPLOYMENT.is(kind)
            || rf_format::api::ANALYSIS_RUN.is(kind)
            || is_flux(kind)
            || is_router(kind)
    }

    /// True for the kinds whose objects the analyzer reads in a list only (`Op::Listed`): the
    /// Events the cluster held when recording began, the history before it. A reader may leave
    /// out their other records' objects (`Reader::listed_objects_of`).
    pub fn reads_listed(kind: &Kind) -> bool {
        *kind == Kind::Event
    }

    /// Parses what the analyzer will read of `rec`.
    pub fn of(rec: &Record) -> Prepared {
        if rec.op == Op::Listed && Self::reads_listed(&rec.kind) && !rec.object.is_empty() {
            return Prepared(by_serde(rec, "Event", Parsed::Event));
        }
        let deleted = matches!(rec.op, Op::Deleted { .. });
        if !matches!(
            rec.op,
            Op::Added | Op::Modified | Op::Listed | Op::Deleted { .. }
        ) || !Self::reads(&rec.kind)
        {
            return Prepared(Parsed::Nothing);
        }
        Prepared(match rec.kind {
            // A deleted ReplicaSet is still read: its owner names the rollout.
            Kind::ReplicaSet => match parse_known(rec, skim::replicaset, Parsed::ReplicaSet) {
                Parsed::ReplicaSet(mut v) => {
                    v.template_digest = v
                        .spec
                        .template
                        .as_ref()
                        .and_then(|raw| raw.bytes(&rec.object))
                        .map_or(0, crate::base::digest);
                    Parsed::ReplicaSet(v)
                }
                other => other,
            },
            // Not read; what this thread knows of it is forgotten.
            Kind::EndpointSlice if deleted => {
                forget(Store::Slices, rec);
                Parsed::Nothing
            }
            _ if deleted => {
                if rec.kind == Kind::Rollout || rf_format::api::DEPLOYMENT.is(&rec.kind) {
                    forget(Store::Templates, rec);
                } else if rec.kind == Kind::Application {
                    forget(Store::Apps, rec);
                }
                Parsed::Nothing
            }
            Kind::Rollout => parse_known(rec, skim::rollout, Parsed::Rollout),
            Kind::Service => parse(rec, skim::service, Parsed::Service),
            Kind::EndpointSlice => parse_kept(Store::Slices, rec, skim::slice, Parsed::Slice),
            Kind::Pod => parse(rec, skim::pod, Parsed::Pod),
            Kind::Application => parse_kept(Store::Apps, rec, skim::application, Parsed::App),
            _ if rf_format::api::DEPLOYMENT.is(&rec.kind) => {
                parse_known(rec, skim::deployment, Parsed::Deployment)
            }
            _ if rf_format::api::INGRESS.is(&rec.kind) => by_serde(rec, "Ingress", Parsed::Ingress),
            _ if rf_format::api::HTTP_ROUTE.is(&rec.kind) => {
                by_serde(rec, "HTTPRoute", Parsed::HttpRoute)
            }
            _ if rf_format::api::VIRTUAL_SERVICE.is(&rec.kind) => {
                by_serde(rec, "VirtualService", Parsed::VirtualService)
            }
            _ if rf_format::api::ANALYSIS_RUN.is(&rec.kind) => {
                by_serde(rec, "AnalysisRun", Parsed::AnalysisRun)
            }
            _ if is_flux(&rec.kind) => by_serde(rec, "Flux object", Parsed::Flux),
            _ => Parsed::Nothing,
        })
    }
}

/// True for the kinds read by serde alone, which have no skimming reader: the routers, the
/// AnalysisRuns and the Flux objects.
#[cfg(test)]
pub(crate) fn by_serde_alone(kind: &Kind) -> bool {
    is_router(kind) || rf_format::api::ANALYSIS_RUN.is(kind) || is_flux(kind)
}

/// True for Flux's HelmReleases and Kustomizations.
pub(crate) fn is_flux(kind: &Kind) -> bool {
    rf_format::api::HELM_RELEASE.is(kind) || rf_format::api::KUSTOMIZATION.is(kind)
}

/// True for the kinds that decide where requests go: Ingress, HTTPRoute, VirtualService.
pub(crate) fn is_router(kind: &Kind) -> bool {
    rf_format::api::INGRESS.is(kind)
        || rf_format::api::HTTP_ROUTE.is(kind)
        || rf_format::api::VIRTUAL_SERVICE.is(kind)
}

/// Reads `rec`'s object with serde alone (for kinds that change rarely), as `what`.
fn by_serde<T: DeserializeOwned>(rec: &Record, what: &str, wrap: fn(Box<T>) -> Parsed) -> Parsed {
    match serde_json::from_slice::<T>(&rec.object) {
        Ok(v) => wrap(Box::new(v)),
        Err(e) => Parsed::Unreadable(format!(
            "record seq {} ({what} {}/{}): unreadable object: {e}",
            rec.seq, rec.namespace, rec.name
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prepared_records_can_move_to_the_analyzer_thread() {
        fn is_send<T: Send>() {}
        is_send::<super::Prepared>();
    }

    fn pod(object: &[u8]) -> Parsed {
        Prepared::of(&record(object)).0
    }

    fn record(object: &[u8]) -> Record {
        Record {
            seq: 9,
            observed_at: rf_format::Timestamp(0),
            kind: Kind::Pod,
            op: Op::Modified,
            namespace: "ns".into(),
            name: "p".into(),
            uid: String::new(),
            resource_version: "1".into(),
            actor: None,
            object: object.to_vec(),
        }
    }

    #[test]
    fn the_kinds_read_are_the_kinds_parsed() {
        let other = Kind::Other {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
        };
        for kind in Kind::KNOWN.into_iter().chain([other]) {
            // Not an object: unreadable if parsed, nothing if not.
            let parsed = Prepared::of(&Record {
                kind: kind.clone(),
                object: b"[".to_vec(),
                ..record(b"")
            })
            .0;
            assert_eq!(
                Prepared::reads(&kind),
                !matches!(parsed, Parsed::Nothing),
                "{kind:?}: {parsed:?}"
            );
        }
    }

    #[test]
    fn an_unreadable_object_says_what_and_where() {
        // Not UTF-8: the byte where it stops being text.
        let Parsed::Unreadable(w) = pod(b"{\"metadata\":{\"name\":\"a\xff\"}}") else {
            panic!("invalid UTF-8 read as an object");
        };
        assert!(w.contains("record seq 9 (Pod ns/p)"), "{w}");
        assert!(w.contains("not UTF-8 at byte 22"), "{w}");
        // Invalid JSON in a field no detector reads: the fast reader leaves it to serde, which
        // says where.
        let Parsed::Unreadable(w) = pod(br#"{"metadata":{"name":"a"},"spec":{"x":[1,]}}"#) else {
            panic!("invalid JSON read as an object");
        };
        assert!(w.contains("line 1 column 41"), "{w}");
        // The same object, valid: read.
        assert!(matches!(
            pod(br#"{"metadata":{"name":"a"},"spec":{"x":[1]}}"#),
            Parsed::Pod(v) if v.metadata.name == "a"
        ));
    }

    #[test]
    fn a_deletion_forgets_what_was_known_of_its_object() {
        let known = |name: &str| {
            TEMPLATES.with(|t| {
                let t = t.borrow();
                let mut key = Vec::new();
                record_of(Kind::ReplicaSet, name, Op::Modified, b"").identity_into(&mut key);
                (t.by_object.contains_key(key.as_slice()), t.bytes)
            })
        };
        let rs = br#"{"metadata":{"name":"web-1","ownerReferences":[{"kind":"Rollout","name":"web"}]},"spec":{"replicas":1,"template":{"metadata":{"labels":{"app":"web"}}}}}"#;
        let (_, before) = known("web-1");
        let modified = Prepared::of(&record_of(Kind::ReplicaSet, "web-1", Op::Modified, rs));
        let (held, during) = known("web-1");
        assert!(held && during > before, "{during} > {before}");
        let gone = Op::Deleted { inferred: false };
        let deleted = Prepared::of(&record_of(Kind::ReplicaSet, "web-1", gone.clone(), rs));
        // Read as the version before it was, and then forgotten.
        assert_eq!(format!("{deleted:?}"), format!("{modified:?}"));
        assert_eq!(known("web-1"), (false, before));
        // Read again as if new: the same view.
        let again = Prepared::of(&record_of(Kind::ReplicaSet, "web-1", gone, rs));
        assert_eq!(format!("{again:?}"), format!("{modified:?}"));
        assert_eq!(known("web-1"), (false, before));
    }

    #[test]
    fn a_deleted_slice_is_forgotten() {
        let held = |name: &str| {
            SLICES.with(|t| {
                let mut key = Vec::new();
                record_of(Kind::EndpointSlice, name, Op::Modified, b"").identity_into(&mut key);
                t.borrow().by_object.contains_key(key.as_slice())
            })
        };
        let slice = br#"{"metadata":{"name":"web-x","labels":{"kubernetes.io/service-name":"web"}},"endpoints":[{"addresses":["10.0.0.1"],"conditions":{"ready":true}}]}"#;
        let read = Prepared::of(&record_of(
            Kind::EndpointSlice,
            "web-x",
            Op::Modified,
            slice,
        ));
        assert!(
            matches!(read.0, Parsed::Slice(v) if v.endpoints.as_ref().is_some_and(|e| e.len() == 1))
        );
        assert!(held("web-x"));
        let gone = Op::Deleted { inferred: false };
        let deleted = Prepared::of(&record_of(Kind::EndpointSlice, "web-x", gone, slice));
        assert!(matches!(deleted.0, Parsed::Nothing));
        assert!(!held("web-x"));
    }

    /// An Application's refresh rewrites its status; a history, resource list and last
    /// operation that did not change are the ones read before (shared), one that did is read
    /// anew, and a deletion forgets them.
    #[test]
    fn an_applications_unchanged_history_and_resources_are_shared() {
        let held = || {
            APPS.with(|t| {
                let mut key = Vec::new();
                record_of(Kind::Application, "shop", Op::Modified, b"").identity_into(&mut key);
                t.borrow().by_object.contains_key(key.as_slice())
            })
        };
        let sync = |rev: &str, at: &str| {
            format!(
                r#"{{"revision":"{rev}","deployedAt":"{at}","id":1,"source":{{"repoURL":"git"}}}}"#
            )
        };
        let app = |health: &str, history: &[String]| {
            let text = format!(
                r#"{{"metadata":{{"name":"shop","namespace":"argocd"}},"status":{{"health":{{"status":"{health}"}},"history":[{}],"resources":[{{"kind":"Rollout","namespace":"team","name":"web"}}],"operationState":{{"phase":"Succeeded"}},"reconciledAt":"{health}"}}}}"#,
                history.join(",")
            );
            match Prepared::of(&record_of(
                Kind::Application,
                "shop",
                Op::Modified,
                text.as_bytes(),
            ))
            .0
            {
                Parsed::App(v) => v,
                other => panic!("not read as an Application: {other:?}"),
            }
        };
        let one = [sync("aaa", "2026-03-14T13:00:00Z")];
        let first = app("Healthy", &one);
        let refresh = app("Progressing", &one);
        assert_eq!(refresh.status.health.status.as_deref(), Some("Progressing"));
        assert!(std::sync::Arc::ptr_eq(
            &first.status.history,
            &refresh.status.history
        ));
        assert!(std::sync::Arc::ptr_eq(
            &first.status.resources,
            &refresh.status.resources
        ));
        let operation = |v: &crate::input::view::ApplicationView| v.status.operation_state.clone();
        assert!(matches!(
            (operation(&first), operation(&refresh)),
            (Some(a), Some(b)) if std::sync::Arc::ptr_eq(&a, &b)
        ));
        assert!(held());
        let two = [one[0].clone(), sync("bbb", "2026-03-14T13:05:00Z")];
        let synced = app("Healthy", &two);
        assert!(!std::sync::Arc::ptr_eq(
            &first.status.history,
            &synced.status.history
        ));
        let revisions: Vec<_> = synced
            .status
            .history
            .iter()
            .map(|h| h.revision.clone())
            .collect();
        assert_eq!(format!("{revisions:?}"), r#"[Some("aaa"), Some("bbb")]"#);
        // The resources did not change with the history: still shared.
        assert!(std::sync::Arc::ptr_eq(
            &first.status.resources,
            &synced.status.resources
        ));
        let gone = Op::Deleted { inferred: false };
        assert!(matches!(
            Prepared::of(&record_of(Kind::Application, "shop", gone, b"{}")).0,
            Parsed::Nothing
        ));
        assert!(!held());
    }

    fn record_of(kind: Kind, name: &str, op: Op, object: &[u8]) -> Record {
        Record {
            kind,
            op,
            name: name.into(),
            ..record(object)
        }
    }
}
