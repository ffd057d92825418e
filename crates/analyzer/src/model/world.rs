//! The objects that decide where traffic goes, as last seen: Services, their EndpointSlices,
//! Pods and Argo CD Applications. Rollouts and ReplicaSets live in their
//! [`RolloutTrack`](crate::model::rollout::RolloutTrack)s; how the two meet is
//! [`traffic`](crate::model::traffic).
//!
//! Each object is reduced to the few fields the cross-object detectors compare, so memory follows
//! the number of live objects, not the number of records.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::base::HashMap;

use rf_format::{Kind, Op, Record, Timestamp};

use crate::base::At;
use crate::base::HASH_LABEL;
use crate::base::Str;
use crate::base::image::image_digest;
use crate::base::time::parse_rfc3339;
use crate::input::prepare::Parsed;
use crate::model::analysis::{RunObj, run_obj};

type Key = (String, String);

/// A Service: its selector.
#[derive(Debug, Clone)]
pub(crate) struct ServiceObj {
    /// `None`: no selector (endpoints managed by hand).
    pub selector: Option<BTreeMap<String, String>>,
    pub pos: At,
    /// The last [`HASH_WRITES`] writes that changed its selector's `rollouts-pod-template-hash`.
    pub hash_writes: Vec<HashWrite>,
}

/// How many changes of a Service's selector hash are kept: enough to see two writers take
/// turns, bounded however long they do.
pub(crate) const HASH_WRITES: usize = 16;

/// A write that changed a Service's selector `rollouts-pod-template-hash`, and its writer.
#[derive(Debug, Clone)]
pub(crate) struct HashWrite {
    pub pos: At,
    /// The new value (`None`: the key was removed).
    pub hash: Option<String>,
    /// The field manager that wrote it, when the managed fields say.
    pub writer: Option<Str>,
}

impl HashWrite {
    /// The Argo Rollouts controller wrote it.
    pub fn by_controller(&self) -> bool {
        self.writer
            .as_deref()
            .is_some_and(crate::input::view::rollouts_controller)
    }

    /// Another writer than the controller, when the managed fields name it.
    pub fn by_other(&self) -> Option<&str> {
        self.writer.as_deref().filter(|_| !self.by_controller())
    }
}

/// One endpoint of an EndpointSlice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointObj {
    /// `targetRef.name` when it is a Pod.
    pub pod: Option<Str>,
    pub address: Str,
    pub ready: bool,
}

/// An EndpointSlice: the Service it serves and its endpoints.
#[derive(Debug, Clone)]
pub(crate) struct SliceObj {
    pub service: String,
    pub endpoints: Vec<EndpointObj>,
    pub pos: At,
}

/// One container of a Pod: the image asked for and the digest that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodImage {
    pub container: Str,
    pub image: Str,
    /// `sha256:...` from `status.containerStatuses[].imageID`, once pulled.
    pub digest: Option<String>,
}

/// A Pod: its revision, readiness, images and labels.
#[derive(Debug, Clone)]
pub(crate) struct PodObj {
    pub hash: Option<Str>,
    /// Its labels, as the JSON text of the map (read when asked: [`PodObj::labels`]).
    pub labels: Option<std::sync::Arc<PodLabelsText>>,
    pub owner: Option<Str>,
    pub ready: bool,
    pub ready_since: Option<Timestamp>,
    pub images: Vec<PodImage>,
    /// Why it does not run, when its status says: a container waiting for a reason other than
    /// starting (`ErrImagePull`, `CrashLoopBackOff`...), one that ended in failure, or the
    /// scheduler's `Unschedulable`.
    pub trouble: Option<Box<Trouble>>,
    pub pos: At,
}

/// Why a pod does not run, from its status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Trouble {
    /// The container (none for the scheduler's reason).
    pub container: Option<Str>,
    pub reason: Str,
    pub message: Option<Str>,
}

/// Waiting reasons of a container that is starting normally.
fn starting(reason: &str) -> bool {
    matches!(reason, "ContainerCreating" | "PodInitializing" | "")
}

/// Why a pod does not run, from its container statuses and conditions.
fn trouble_of(v: &crate::input::view::PodView, ready: bool) -> Option<Box<Trouble>> {
    for c in &v.status.container_statuses {
        if let Some(w) = &c.state.waiting {
            let reason = w.reason.as_deref().unwrap_or_default();
            if !starting(reason) {
                let mut message = w.message.clone();
                // A crash loop's cause is how the container last ended.
                if let Some(t) = &c.last_state.terminated {
                    let how = format!(
                        "last ended {}{}{}",
                        t.reason.as_deref().unwrap_or("with no reason"),
                        t.exit_code
                            .map(|e| format!(" (exit code {e})"))
                            .unwrap_or_default(),
                        t.message
                            .as_deref()
                            .map(|m| format!(": {m}"))
                            .unwrap_or_default()
                    );
                    message = Some(Str::new(&how));
                }
                return Some(Box::new(Trouble {
                    container: Some(c.name.clone()),
                    reason: Str::new(reason),
                    message,
                }));
            }
        }
        if let Some(t) = c
            .state
            .terminated
            .as_ref()
            .filter(|t| t.exit_code.unwrap_or(0) != 0)
        {
            return Some(Box::new(Trouble {
                container: Some(c.name.clone()),
                reason: t.reason.clone().unwrap_or_else(|| Str::new("Error")),
                message: t.message.clone(),
            }));
        }
    }
    if ready {
        return None;
    }
    v.status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled" && c.status == "False")
        .map(|c| {
            Box::new(Trouble {
                container: None,
                reason: c
                    .reason
                    .clone()
                    .unwrap_or_else(|| Str::new("Unschedulable")),
                message: c.message.clone(),
            })
        })
}

/// A pod's labels as the JSON text of the map, parsed once when first asked (shared by the
/// pod's records while the text stays the same).
#[derive(Debug)]
pub(crate) struct PodLabelsText {
    text: Box<str>,
    parsed: std::sync::OnceLock<BTreeMap<String, String>>,
}

impl PodLabelsText {
    fn new(text: &str) -> Self {
        PodLabelsText {
            text: text.into(),
            parsed: std::sync::OnceLock::new(),
        }
    }
}

impl PartialEq for PodLabelsText {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl PodObj {
    /// Its labels (those of string values).
    pub fn labels(&self) -> &BTreeMap<String, String> {
        static NONE: BTreeMap<String, String> = BTreeMap::new();
        let Some(l) = self.labels.as_deref() else {
            return &NONE;
        };
        l.parsed.get_or_init(|| {
            serde_json::from_str::<BTreeMap<String, serde_json::Value>>(&l.text)
                .map(|m| {
                    m.into_iter()
                        .filter_map(|(k, v)| Some((k, v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default()
        })
    }
}

/// A change of a Deployment's `spec.replicas`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scale {
    pub pos: At,
    pub from: i64,
    pub to: i64,
    pub actor: Option<Str>,
}

impl Scale {
    /// `, by argocd-controller`, or nothing when the writer is not known.
    pub fn by_words(&self) -> String {
        self.actor
            .as_ref()
            .map(|a| format!(", by {a}"))
            .unwrap_or_default()
    }
}

/// A Deployment: its replicas, its pod template (a rollout's, through `workloadRef`), and when
/// its replicas last went up from none.
#[derive(Debug, Clone)]
pub(crate) struct DeploymentObj {
    pub namespace: String,
    pub name: String,
    /// `spec.replicas` (1 when not set, as the API server defaults it).
    pub replicas: i64,
    /// `status.readyReplicas`.
    pub ready: i64,
    pub generation: Option<i64>,
    /// `spec.template`, as its JSON text.
    pub template: Option<std::sync::Arc<str>>,
    /// The latest change of `spec.replicas` from 0 to more.
    pub scaled_up: Option<Scale>,
    /// The latest change of `spec.replicas` to 0.
    pub scaled_down: Option<Scale>,
    /// How many times `spec.replicas` went from 0 to more while recorded.
    pub scale_ups: usize,
    /// Who wrote its spec last (the record's actor, or the last manager of the main resource).
    pub actor: Option<Str>,
    pub pos: At,
    /// `spec.revisionHistoryLimit` (10 when not set, as the API server defaults it).
    pub revision_history_limit: Option<i64>,
    /// The last changes of its pod template while recorded, oldest first (at most
    /// [`KEEP_TEMPLATE_CHANGES`]).
    pub template_changes: std::collections::VecDeque<TemplateChange>,
    /// The Argo CD Application that tracks it (tracking id or instance label), by name.
    pub tracked_by: Option<Str>,
    /// The Flux object that applies it, by its labels: (`HelmRelease` or `Kustomization`, name).
    pub flux: Option<(&'static str, Str)>,
    /// The labels of its pod template (read when the template changes).
    pub pod_labels: BTreeMap<String, String>,
}

/// The string labels of a pod template given as JSON text.
fn template_labels(text: &str) -> BTreeMap<String, String> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .and_then(|t| {
            t["metadata"]["labels"].as_object().map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
        })
        .unwrap_or_default()
}

/// Template changes kept per Deployment: two make a double render.
const KEEP_TEMPLATE_CHANGES: usize = 2;

/// One change of a Deployment's pod template.
#[derive(Debug, Clone)]
pub(crate) struct TemplateChange {
    pub pos: At,
    pub generation: Option<i64>,
    pub actor: Option<Str>,
    pub before: std::sync::Arc<str>,
    pub after: std::sync::Arc<str>,
}

impl TemplateChange {
    /// Where the template changed, in words (at most four paths, then how many more), and
    /// whether only annotations changed.
    pub fn paths(&self) -> (Vec<String>, bool) {
        let changes = crate::model::diff::diff_json(&self.before, &self.after).unwrap_or_default();
        let mut words: Vec<String> = changes.iter().take(4).map(|c| c.path.to_string()).collect();
        if changes.len() > 4 {
            words.push(format!("{} more", changes.len() - 4));
        }
        (words, crate::model::diff::only_annotations(&changes))
    }
}

impl DeploymentObj {
    /// Its record at `pos`, as evidence showing `detail`.
    pub fn evidence_at(
        &self,
        pos: At,
        detail: impl Into<String>,
    ) -> crate::report::finding::Evidence {
        let kind = rf_format::api::DEPLOYMENT.newest();
        evidence_of(pos, kind, &self.namespace, &self.name, detail)
    }
}

/// The kinds of object that decide where requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Router {
    Ingress,
    HttpRoute,
    VirtualService,
}

impl Router {
    /// Its kind, as recorded (the newest version).
    pub fn kind(self) -> Kind {
        match self {
            Router::Ingress => rf_format::api::INGRESS.newest(),
            Router::HttpRoute => rf_format::api::HTTP_ROUTE.newest(),
            Router::VirtualService => rf_format::api::VIRTUAL_SERVICE.newest(),
        }
    }

    /// Its kind's name, for the reader.
    pub fn word(self) -> &'static str {
        match self {
            Router::Ingress => "Ingress",
            Router::HttpRoute => "HTTPRoute",
            Router::VirtualService => "VirtualService",
        }
    }

    /// Its resource name in kubectl commands.
    pub fn resource(self) -> &'static str {
        match self {
            Router::Ingress => "ingress",
            Router::HttpRoute => "httproute",
            Router::VirtualService => "virtualservice",
        }
    }

    /// The router of a recorded kind, if it is one.
    pub fn of(kind: &Kind) -> Option<Router> {
        if rf_format::api::INGRESS.is(kind) {
            Some(Router::Ingress)
        } else if rf_format::api::HTTP_ROUTE.is(kind) {
            Some(Router::HttpRoute)
        } else if rf_format::api::VIRTUAL_SERVICE.is(kind) {
            Some(Router::VirtualService)
        } else {
            None
        }
    }
}

/// Where one backend of a rule sends requests: Service `service` of namespace `namespace`
/// (a VirtualService's destination host, cut at its first dot), its DestinationRule `subset`,
/// with `weight` (none when not set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BackendObj {
    pub namespace: Str,
    pub service: Str,
    pub subset: Option<Str>,
    pub weight: Option<i64>,
    /// Where its Service name is in the object, as a JSON pointer.
    pub pointer: String,
}

/// One rule of a router: the requests for each `(host, path)` of `matches` (any host or path
/// when empty) go to `backends`. An Ingress path is a rule of one match and one backend.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RuleObj {
    pub name: Option<Str>,
    pub matches: Vec<(Str, Str)>,
    pub backends: Vec<BackendObj>,
}

impl RuleObj {
    /// Its matches as `host/path`, `*` for any host, `/` for any path.
    pub fn match_words(&self) -> Vec<String> {
        if self.matches.is_empty() {
            return vec!["*/".to_owned()];
        }
        self.matches
            .iter()
            .map(|(host, path)| {
                format!(
                    "{}{}",
                    if host.is_empty() { "*" } else { host },
                    if path.is_empty() { "/" } else { path }
                )
            })
            .collect()
    }

    /// What the rule gives the backends `canary` picks, as (their weight, all weights): a
    /// backend with no weight has 1 in an HTTPRoute, and in a VirtualService all when it is
    /// the only one, else none.
    pub fn share(&self, router: Router, canary: impl Fn(&BackendObj) -> bool) -> (i64, i64) {
        let alone = self.backends.len() == 1;
        let weight = |b: &BackendObj| {
            b.weight.unwrap_or(match router {
                Router::HttpRoute => 1,
                _ if alone => 100,
                _ => 0,
            })
        };
        let total = self.backends.iter().map(weight).sum();
        let picked = self.backends.iter().filter(|b| canary(b)).map(weight).sum();
        (picked, total)
    }
}

/// An object that decides where requests go: an Ingress, an HTTPRoute or a VirtualService.
#[derive(Debug, Clone)]
pub(crate) struct RouterObj {
    pub router: Router,
    pub namespace: String,
    pub name: String,
    pub rules: Vec<RuleObj>,
    /// Every annotation (a router has few): an Ingress's canary ones are read under the prefix
    /// its rollout names.
    pub annotations: BTreeMap<String, String>,
    /// Who wrote it last (the record's actor, or the last manager of the main resource).
    pub actor: Option<Str>,
    /// An Ingress's class: `spec.ingressClassName`, else the `kubernetes.io/ingress.class`
    /// annotation.
    pub class: Option<Str>,
    pub pos: At,
}

impl RouterObj {
    /// Its last record, as evidence showing `detail`.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        evidence_of(
            self.pos,
            self.router.kind(),
            &self.namespace,
            &self.name,
            detail,
        )
    }

    /// Its kind and name, as `Kind name`.
    pub fn words(&self) -> String {
        format!("{} {}", self.router.word(), self.name)
    }

    /// Where its rules send requests: `host/path -> Service [weight]` for each.
    pub fn routes_words(&self) -> String {
        let mut words: Vec<String> = Vec::new();
        for rule in &self.rules {
            let to: Vec<String> = rule
                .backends
                .iter()
                .map(|b| {
                    let subset = b
                        .subset
                        .as_ref()
                        .map(|s| format!(" subset {s}"))
                        .unwrap_or_default();
                    let weight = b.weight.map(|w| format!(" weight {w}")).unwrap_or_default();
                    format!("Service {}{subset}{weight}", b.service)
                })
                .collect();
            for m in rule.match_words() {
                words.push(format!("{m} -> {}", to.join(" + ")));
            }
        }
        words.join(", ")
    }

    /// The value of annotation `prefix/key`.
    pub fn annotation(&self, prefix: &str, key: &str) -> Option<&str> {
        self.annotations
            .get(&format!("{prefix}/{key}"))
            .map(String::as_str)
    }

    /// True for the canary Ingress the rollouts controller makes for NGINX (annotated
    /// `canary: "true"` under any prefix): it is no front door of its own.
    pub fn is_nginx_canary(&self) -> bool {
        self.router == Router::Ingress
            && self
                .annotations
                .iter()
                .any(|(k, v)| k.ends_with("/canary") && v == "true")
    }
}

/// `host` of a VirtualService destination as (Service, namespace): `name`,
/// `name.namespace`, `name.namespace.svc.cluster.local`; its namespace `ns` when it names none.
fn service_of_host(host: &str, ns: &str) -> (Str, Str) {
    let mut parts = host.split('.');
    let name = parts.next().unwrap_or_default();
    let namespace = parts.next().filter(|n| !n.is_empty()).unwrap_or(ns);
    (Str::new(name), Str::new(namespace))
}

/// One `status.history[]` entry of an Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sync {
    /// The revision deployed (a multi-source Application's, joined with `+`).
    pub revision: String,
    pub deployed_at: Timestamp,
    pub id: Option<i64>,
    /// `automated`, or the user who started it.
    pub initiator: Option<Str>,
    /// What each source deployed: a sync that changed only an Application's inline Helm
    /// parameters deploys the same revisions as the one before it (the real Argo CD's history
    /// shows both), so revisions alone do not tell two syncs apart.
    pub sources: Vec<SyncSource>,
}

/// One source of a [`Sync`]: its repository, the revision deployed, its Helm parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SyncSource {
    pub repo: Str,
    pub revision: Str,
    pub parameters: Vec<(Str, Str)>,
}

impl Sync {
    /// Reads history entry `h`; `None` without a revision or a time.
    pub fn of(h: &crate::input::view::AppHistory) -> Option<Sync> {
        let revision = h.revision()?;
        let deployed_at = h.deployed_at.as_deref().and_then(parse_rfc3339)?;
        let initiator = h.initiated_by.as_ref().and_then(|i| {
            if i.automated == Some(true) {
                Some(Str::new("automated"))
            } else {
                i.username.clone().filter(|u| !u.is_empty())
            }
        });
        let source = |s: &crate::input::view::AppSource, revision: Option<&Str>| SyncSource {
            repo: s.repo_url.clone().unwrap_or_default(),
            revision: revision.cloned().unwrap_or_default(),
            parameters: s
                .helm
                .as_ref()
                .and_then(|h| h.parameters.as_ref())
                .map(|ps| {
                    ps.iter()
                        .take(16)
                        .filter_map(|p| {
                            Some((p.name.clone()?, p.value.clone().unwrap_or_default()))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        };
        let sources = match (&h.sources, &h.revisions) {
            (Some(sources), revisions) if !sources.is_empty() => sources
                .iter()
                .take(8)
                .enumerate()
                .map(|(i, s)| source(s, revisions.as_ref().and_then(|r| r.get(i))))
                .collect(),
            _ => h
                .source
                .iter()
                .map(|s| source(s, h.revision.as_ref()))
                .collect(),
        };
        Some(Sync {
            revision,
            deployed_at,
            id: h.id,
            initiator,
            sources,
        })
    }

    /// What this sync deployed that `before` did not, in words: each source whose revision
    /// moved (`values 4c3758d6 -> 5467196d`), each Helm parameter that changed
    /// (`image.tag 1.0 -> 1.1`). Empty: the same input twice.
    pub fn changes_from(&self, before: &Sync) -> Vec<String> {
        let short = |r: &str| r.get(..8).unwrap_or(r).to_owned();
        if self.sources.is_empty() || before.sources.is_empty() {
            return if self.revision == before.revision {
                Vec::new()
            } else {
                vec![format!(
                    "revision {} -> {}",
                    short(&before.revision),
                    short(&self.revision)
                )]
            };
        }
        let mut words = Vec::new();
        for (i, now) in self.sources.iter().enumerate() {
            let then = before.sources.get(i);
            let repo = repo_name(&now.repo, i);
            match then {
                Some(then) if then.revision != now.revision => words.push(format!(
                    "{repo} {} -> {}",
                    short(&then.revision),
                    short(&now.revision)
                )),
                None => words.push(format!("{repo} added at {}", short(&now.revision))),
                _ => {}
            }
            let old = then.map(|t| t.parameters.as_slice()).unwrap_or_default();
            for (name, value) in &now.parameters {
                match old.iter().find(|(n, _)| n == name) {
                    Some((_, v)) if v == value => {}
                    Some((_, v)) if redacted(v) && redacted(value) => {
                        words.push(format!("{name} changed (its values are redacted)"));
                    }
                    Some((_, v)) => words.push(format!("{name} {} -> {}", shown(v), shown(value))),
                    None => words.push(format!("{name} set to {}", shown(value))),
                }
            }
            for (name, _) in old {
                if !now.parameters.iter().any(|(n, _)| n == name) {
                    words.push(format!("{name} unset"));
                }
            }
        }
        if before.sources.len() > self.sources.len() {
            words.push("a source removed".to_owned());
        }
        words
    }

    /// The sync in words: `sync 2 (automated) at TIME`.
    pub fn words(&self) -> String {
        let id = self.id.map(|i| format!(" {i}")).unwrap_or_default();
        let by = self
            .initiator
            .as_deref()
            .map(|i| {
                if i == "automated" {
                    " (automated)".to_owned()
                } else {
                    format!(" (by {i})")
                }
            })
            .unwrap_or_default();
        format!(
            "sync{id}{by} at {}",
            crate::base::time::rfc3339(self.deployed_at)
        )
    }
}

/// What sync `i` of `history` deployed that the sync before it did not, in words (the first
/// one: its revision); `None` when it deployed the same revisions and parameters.
pub(crate) fn sync_changes(history: &[Sync], i: usize) -> Option<String> {
    let sync = &history[i];
    match i.checked_sub(1) {
        Some(p) => {
            let words = sync.changes_from(&history[p]);
            (!words.is_empty()).then(|| words.join(", "))
        }
        None => Some(format!(
            "revision {}",
            sync.revision.get(..8).unwrap_or(&sync.revision)
        )),
    }
}

/// A source's repository by the last part of its URL (`values` of `.../values.git`), or its
/// place when the URL says nothing.
fn repo_name(url: &str, i: usize) -> String {
    let last = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .unwrap_or_default()
        .trim_end_matches(".git");
    if last.is_empty() {
        format!("source {}", i + 1)
    } else {
        last.to_owned()
    }
}

/// True for a value the recorder redacted: `sha256:` and 12 hex digits of its digest.
fn redacted(v: &str) -> bool {
    v.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 12 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A parameter's value as shown: a digest or long value shortened.
fn shown(v: &str) -> String {
    match v.strip_prefix("sha256:") {
        Some(hex) => format!("sha256:{}…", hex.get(..12).unwrap_or(hex)),
        None if v.chars().count() > 40 => format!("{}…", v.chars().take(40).collect::<String>()),
        None => v.to_owned(),
    }
}

/// An Argo CD Application.
#[derive(Debug, Clone)]
pub(crate) struct AppObj {
    pub namespace: String,
    pub name: String,
    pub sync: Option<Str>,
    pub health: Option<Str>,
    pub revision: Option<Str>,
    /// The last few syncs, oldest first.
    pub history: Arc<Vec<Sync>>,
    /// The Rollouts it manages (`status.resources[]`): (namespace, name).
    pub rollouts: Vec<Key>,
    /// The `status.history` and `status.resources` its syncs and rollouts were read from: a
    /// record that shares them (the reader shares what did not change) changes neither.
    history_read: Arc<Vec<crate::input::view::AppHistory>>,
    resources_read: Arc<Vec<crate::input::view::AppResource>>,
    /// The `status.operationState` its `failing` and `self_heal` were read from.
    operation_read: Option<Arc<crate::input::view::AppOperationState>>,
    pub pos: At,
    /// What its last record changed, in words, for the timelines of its rollouts: its sync
    /// status, its health, each new sync of its history, each self-heal.
    pub changes: Vec<String>,
    /// Its last operation was a self-heal (`autoHealAttemptsCount` above 0).
    pub self_heal: Option<SelfHeal>,
    /// Its last operation, when it failed or is failing (a hook or a resource that failed).
    pub failing: Option<FailedSync>,
}

/// A sync operation that failed, or is running on after a failure (a retry), as the
/// Application's `operationState` says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FailedSync {
    /// `Failed`, `Error`, or `Running` (retrying).
    pub phase: String,
    pub message: String,
    /// What failed, in words: `PreSync hook Job rollout-forensics-gate Failed: ...`.
    pub failed: Vec<String>,
}

impl FailedSync {
    fn of(state: Option<&crate::input::view::AppOperationState>) -> Option<FailedSync> {
        let state = state?;
        let phase = state.phase.clone().unwrap_or_default();
        let failed: Vec<String> = state
            .sync_result
            .as_ref()
            .map(|r| r.resources.as_slice())
            .unwrap_or_default()
            .iter()
            .map(|r| {
                let what = match (&r.hook_type, &r.hook_phase) {
                    (Some(hook), Some(p)) => format!("{hook} hook {} {} {p}", r.kind, r.name),
                    _ => format!(
                        "{} {} {}",
                        r.kind,
                        r.name,
                        r.status.as_deref().unwrap_or("failed")
                    ),
                };
                match r.message.as_deref().filter(|m| !m.is_empty()) {
                    Some(m) => format!("{what}: {m}"),
                    None => what,
                }
            })
            .collect();
        if !matches!(phase.as_str(), "Failed" | "Error") && failed.is_empty() {
            return None;
        }
        Some(FailedSync {
            phase: phase.to_string(),
            message: state
                .message
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default(),
            failed,
        })
    }

    /// `sync operation Failed: MESSAGE; PreSync hook Job NAME Failed: ...`.
    pub fn words(&self) -> String {
        let mut s = format!("sync operation {}", self.phase);
        if !self.message.is_empty() {
            s.push_str(&format!(": {}", self.message));
        }
        for f in &self.failed {
            s.push_str(&format!("; {f}"));
        }
        s
    }
}

/// An Application's self-heal, as its last operation says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SelfHeal {
    /// `autoHealAttemptsCount`: the self-heal syncs of the same revisions in a row.
    pub attempts: i64,
    /// The resources the sync was limited to, (kind, name): the ones that drifted.
    pub resources: Vec<(String, String)>,
}

impl SelfHeal {
    fn of(state: Option<&crate::input::view::AppOperationState>) -> Option<SelfHeal> {
        let sync = state?.operation.as_ref()?.sync.as_ref()?;
        let attempts = sync.auto_heal_attempts_count.filter(|n| *n > 0)?;
        Some(SelfHeal {
            attempts,
            resources: sync
                .resources
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|r| (r.kind.to_string(), r.name.to_string()))
                .collect(),
        })
    }

    /// The resources in words: `Service checkout-api`, or every resource.
    pub fn resource_words(&self) -> String {
        if self.resources.is_empty() {
            return "all its resources".to_owned();
        }
        self.resources
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The record at `pos` of object `kind` `ns`/`name`, as evidence showing `detail`.
fn evidence_of(
    pos: At,
    kind: Kind,
    ns: &str,
    name: &str,
    detail: impl Into<String>,
) -> crate::report::finding::Evidence {
    crate::report::finding::Evidence::of(
        pos,
        crate::report::finding::Subject::new(kind, ns, name),
        detail,
    )
}

impl AppObj {
    /// Its last record, as evidence showing `detail`.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        evidence_of(
            self.pos,
            Kind::Application,
            &self.namespace,
            &self.name,
            detail,
        )
    }

    /// True when this Application manages rollout `ns`/`name`, which names `tracked_by` as its
    /// Application: what [`World::apps_of_rollout`] answers by index (and the tests check it
    /// against).
    #[cfg(test)]
    pub fn manages(&self, ns: &str, name: &str, tracked_by: Option<&str>) -> bool {
        self.rollouts.iter().any(|(n, r)| n == ns && r == name)
            || tracked_by == Some(self.name.as_str())
    }
}

/// What a record changed in the world. One is made at most Service, EndpointSlice and Pod
/// records: its names are held inline when short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Touched {
    /// A Pod whose revision, readiness or images changed (or that appeared or went).
    Pod { namespace: Str, name: Str },
    /// A Service's selector (or the Service appeared or went).
    Service { namespace: Str },
    /// The endpoints of a Service: `service` is the Service the EndpointSlice serves now,
    /// `was` the one it served before when that differs.
    Endpoints {
        namespace: Str,
        service: Option<Str>,
        was: Option<Str>,
    },
    /// An Application.
    App { namespace: Str, name: Str },
    /// An Ingress, HTTPRoute or VirtualService.
    Router {
        router: Router,
        namespace: Str,
        name: Str,
    },
    /// A Flux HelmRelease or Kustomization.
    Flux,
    /// An AnalysisRun (its words of what changed are on [`RunObj::changes`]).
    Analysis { namespace: Str, name: Str },
    /// A Deployment; `template` when its pod template changed (or it appeared with one).
    Deployment {
        namespace: Str,
        name: Str,
        template: bool,
    },
}

/// Syncs kept per Application.
const KEEP_SYNCS: usize = 8;

/// The live objects of one namespace, by name: looked up by `&str`, with no key built per lookup
/// (these run for every endpoint of every Service on every pod change).
#[derive(Debug, Default)]
pub(crate) struct Namespace {
    services: BTreeMap<String, ServiceObj>,
    slices: HashMap<String, SliceObj>,
    /// EndpointSlice names by the Service they serve.
    slices_of: HashMap<String, BTreeSet<String>>,
    /// Changes with each change of a Service's endpoints (a slice of it added, changed or
    /// removed), by Service, while it has slices ([`crate::model::stamp`]).
    endpoints_stamps: HashMap<String, u64>,
    pods: HashMap<String, PodObj>,
    /// Pod names by pod-template hash, so a rollout's revision is looked up without scanning
    /// every pod of the namespace.
    pods_by_hash: HashMap<String, BTreeSet<String>>,
    /// Service names by one label of their selector (key, then value): a Service selects a
    /// pod only when the pod has every label of its selector, that one among them, so the
    /// Services that may select a rollout's pods are found from their labels without a walk
    /// over every Service of the namespace.
    by_selector_label: HashMap<String, HashMap<String, BTreeSet<String>>>,
    /// Changes with each Service added, removed or given another selector
    /// ([`crate::model::stamp`]; 0 until the first).
    services_stamp: u64,
}

impl Namespace {
    /// See the field: while it is the same, so is every Service's selector.
    pub fn services_stamp(&self) -> u64 {
        self.services_stamp
    }

    /// The Services, by name.
    pub fn services(&self) -> impl Iterator<Item = (&str, &ServiceObj)> + '_ {
        self.services.iter().map(|(name, s)| (name.as_str(), s))
    }

    /// See the field: while it is the same, so are the Service's endpoints (`None` while it
    /// has no EndpointSlice).
    pub fn endpoints_stamp(&self, service: &str) -> Option<u64> {
        self.endpoints_stamps.get(service).copied()
    }

    /// True when at least one EndpointSlice of the Service is known: only then can its
    /// endpoints be judged.
    pub fn has_slices(&self, service: &str) -> bool {
        self.slices_of.contains_key(service)
    }

    /// The EndpointSlices of a Service of this namespace.
    pub fn slices_of<'a>(
        &'a self,
        service: &str,
    ) -> impl Iterator<Item = (&'a str, &'a SliceObj)> + 'a {
        self.slices_of
            .get(service)
            .into_iter()
            .flatten()
            .filter_map(move |name| Some((name.as_str(), self.slices.get(name)?)))
    }

    pub fn pod(&self, name: &str) -> Option<&PodObj> {
        self.pods.get(name)
    }

    /// The Service `name`, if recorded.
    pub fn service(&self, name: &str) -> Option<&ServiceObj> {
        self.services.get(name)
    }

    /// Service `name`, with its name as the namespace holds it.
    pub fn service_entry(&self, name: &str) -> Option<(&str, &ServiceObj)> {
        self.services
            .get_key_value(name)
            .map(|(name, svc)| (name.as_str(), svc))
    }

    fn is_empty(&self) -> bool {
        self.services.is_empty() && self.slices.is_empty() && self.pods.is_empty()
    }

    fn len(&self) -> usize {
        self.services.len() + self.slices.len() + self.pods.len()
    }

    fn apply_service(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        if deleted {
            if let Some(old) = self.services.remove(rec.name.as_str()) {
                self.unindex_selector(&rec.name, old.selector.as_ref());
                self.services_stamp = crate::model::stamp();
            }
        } else {
            let Parsed::Service(mut v) = parsed else {
                return None;
            };
            let selector = std::mem::take(&mut v.spec.selector);
            let old = self.services.get(rec.name.as_str());
            if old.is_some_and(|old| old.selector == selector) {
                return None;
            }
            self.services_stamp = crate::model::stamp();
            let mut hash_writes = Vec::new();
            if let Some(old) = self.services.remove(rec.name.as_str()) {
                self.unindex_selector(&rec.name, old.selector.as_ref());
                let hash_of = |s: Option<&BTreeMap<String, String>>| {
                    s.and_then(|s| s.get(HASH_LABEL)).cloned()
                };
                let hash = hash_of(selector.as_ref());
                hash_writes = old.hash_writes;
                if hash != hash_of(old.selector.as_ref()) {
                    if hash_writes.len() == HASH_WRITES {
                        hash_writes.remove(0);
                    }
                    hash_writes.push(HashWrite {
                        pos,
                        hash,
                        writer: v.selector_writer(),
                    });
                }
            }
            self.index_selector(&rec.name, selector.as_ref());
            self.services.insert(
                rec.name.clone(),
                ServiceObj {
                    selector,
                    pos,
                    hash_writes,
                },
            );
        }
        Some(Touched::Service {
            namespace: Str::new(&rec.namespace),
        })
    }

    /// Indexes Service `name` under one label of `selector`: the one the fewest Services are
    /// indexed under yet (the first such), so that a label every pod of the namespace has
    /// (`team: payments`) is not the one asked for when an `app` label is there.
    fn index_selector(&mut self, name: &str, selector: Option<&BTreeMap<String, String>>) {
        let indexed = |k: &str, v: &str| {
            self.by_selector_label
                .get(k)
                .and_then(|by| by.get(v))
                .map_or(0, BTreeSet::len)
        };
        let Some((k, v)) = selector
            .into_iter()
            .flatten()
            .min_by_key(|(k, v)| indexed(k, v))
        else {
            return;
        };
        self.by_selector_label
            .entry(k.clone())
            .or_default()
            .entry(v.clone())
            .or_default()
            .insert(name.to_owned());
    }

    /// Drops Service `name` from the index, under whichever label of `selector` it was.
    fn unindex_selector(&mut self, name: &str, selector: Option<&BTreeMap<String, String>>) {
        for (k, v) in selector.into_iter().flatten() {
            let Some(by_value) = self.by_selector_label.get_mut(k.as_str()) else {
                continue;
            };
            if let Some(names) = by_value.get_mut(v.as_str()) {
                names.remove(name);
                if names.is_empty() {
                    by_value.remove(v.as_str());
                }
            }
            if by_value.is_empty() {
                self.by_selector_label.remove(k.as_str());
            }
        }
    }

    /// The names of the Services named in `named` and of those whose selector holds one of the
    /// pod labels in `labels`, in name order: the Services that may route to a rollout, found
    /// through its names and its pods' labels rather than by asking every Service of the
    /// namespace (a namespace of many rollouts has as many Services, and this runs at every
    /// look).
    pub fn services_for<'a, 'l>(
        &'a self,
        named: [Option<&str>; 2],
        labels: impl Iterator<Item = &'l BTreeMap<String, String>>,
    ) -> BTreeSet<&'a str> {
        let mut names: BTreeSet<&'a str> = BTreeSet::new();
        for name in named.into_iter().flatten() {
            if let Some((name, _)) = self.services.get_key_value(name) {
                names.insert(name.as_str());
            }
        }
        if !self.by_selector_label.is_empty() {
            for pod_labels in labels {
                for (k, v) in pod_labels {
                    if let Some(found) = self
                        .by_selector_label
                        .get(k.as_str())
                        .and_then(|by| by.get(v.as_str()))
                    {
                        names.extend(found.iter().map(String::as_str));
                    }
                }
            }
        }
        names
    }

    fn apply_slice(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let old = self.slices.remove(rec.name.as_str());
        if let Some(old) = &old {
            unindex(&mut self.slices_of, &old.service, &rec.name);
        }
        let mut now_serves: Option<Str> = None;
        if !deleted {
            let Parsed::Slice(v) = parsed else {
                return None;
            };
            if let Some(service) = v.service().map(str::to_owned) {
                let endpoints = v
                    .endpoints
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| EndpointObj {
                        pod: e
                            .target_ref
                            .as_ref()
                            .filter(|t| t.kind == "Pod" && !t.name.is_empty())
                            .map(|t| t.name.clone()),
                        address: e.addresses.first().cloned().unwrap_or_default(),
                        ready: e.conditions.ready.unwrap_or(true),
                    })
                    .collect();
                index(&mut self.slices_of, &service, &rec.name);
                let unchanged = old
                    .as_ref()
                    .is_some_and(|o| o.service == service && o.endpoints == endpoints);
                now_serves = Some(Str::new(&service));
                self.slices.insert(
                    rec.name.clone(),
                    SliceObj {
                        service,
                        endpoints,
                        pos,
                    },
                );
                if unchanged {
                    return None;
                }
            }
        }
        let was = old
            .map(|o| o.service)
            .filter(|o| now_serves.as_deref() != Some(o.as_str()))
            .map(|o| Str::new(&o));
        for service in [&now_serves, &was].into_iter().flatten() {
            if self.slices_of.contains_key(service.as_str()) {
                let stamp = crate::model::stamp();
                match self.endpoints_stamps.get_mut(service.as_str()) {
                    Some(s) => *s = stamp,
                    None => {
                        self.endpoints_stamps.insert(service.to_string(), stamp);
                    }
                }
            } else {
                self.endpoints_stamps.remove(service.as_str());
            }
        }
        Some(Touched::Endpoints {
            namespace: Str::new(&rec.namespace),
            service: now_serves,
            was,
        })
    }

    fn apply_pod(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        if deleted {
            if let Some(h) = self.pods.remove(rec.name.as_str()).and_then(|p| p.hash) {
                unindex(&mut self.pods_by_hash, &h, &rec.name);
            }
        } else {
            let Parsed::Pod(mut v) = parsed else {
                return None;
            };
            let (ready, since) = v.ready();
            let terminating = v.metadata.deletion_timestamp.is_some();
            let ready = ready && !terminating;
            let old = self.pods.get(rec.name.as_str());
            let ready_since = match old {
                Some(o) if o.ready && ready => o.ready_since,
                _ if ready => Some(
                    since
                        .and_then(parse_rfc3339)
                        .map_or(pos.at, |t| t.min(pos.at)),
                ),
                _ => None,
            };
            let trouble = trouble_of(&v, ready);
            // The view is this record's own: its names and images move, not copied.
            let statuses = std::mem::take(&mut v.status.container_statuses);
            let images: Vec<PodImage> = std::mem::take(&mut v.spec.init_containers)
                .into_iter()
                .chain(std::mem::take(&mut v.spec.containers))
                .map(|c| PodImage {
                    digest: statuses
                        .iter()
                        .find(|s| s.name == c.name)
                        .and_then(|s| image_digest(&s.image_id).map(str::to_owned)),
                    container: c.name,
                    image: c.image,
                })
                .collect();
            let hash = v.metadata.labels.kept.remove(HASH_LABEL);
            let owner = v.owner_replicaset().map(Str::new);
            // Indexed by hash once, not again on every record of the pod.
            let old_hash = old.and_then(|o| o.hash.as_deref());
            if old_hash != hash.as_deref() {
                if let Some(h) = old_hash {
                    unindex(&mut self.pods_by_hash, h, &rec.name);
                }
                if let Some(h) = &hash {
                    index(&mut self.pods_by_hash, h, &rec.name);
                }
            }
            // The labels' text, shared with the pod's last record when it is the same.
            let text = v
                .metadata
                .labels
                .raw
                .as_ref()
                .and_then(|r| r.get(&rec.object));
            let labels = match old {
                Some(o) if o.labels.as_deref().map(|l| &*l.text) == text => o.labels.clone(),
                _ => text.map(|t| std::sync::Arc::new(PodLabelsText::new(t))),
            };
            let unchanged = old.is_some_and(|o| {
                o.ready == ready
                    && o.hash == hash
                    && o.images == images
                    && o.owner == owner
                    && o.labels == labels
                    && o.trouble == trouble
            });
            let pod = PodObj {
                hash,
                labels,
                owner,
                ready,
                ready_since,
                images,
                trouble,
                pos,
            };
            match self.pods.get_mut(rec.name.as_str()) {
                Some(old) => *old = pod,
                None => {
                    self.pods.insert(rec.name.clone(), pod);
                }
            }
            if unchanged {
                return None;
            }
        }
        Some(Touched::Pod {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        })
    }
}

/// Removes `name` from the set under `key`, and the set once empty.
fn unindex(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    if let Some(set) = index.get_mut(key) {
        set.remove(name);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Adds `name` to the set under `key`.
fn index(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    let set = match index.get_mut(key) {
        Some(set) => set,
        None => index.entry(key.to_owned()).or_default(),
    };
    if !set.contains(name) {
        set.insert(name.to_owned());
    }
}

/// The live objects of the kinds the cross-object detectors read.
#[derive(Debug, Default)]
pub(crate) struct World {
    namespaces: HashMap<String, Namespace>,
    /// By namespace and name: looked up at every look at a rollout an Application manages.
    apps: crate::base::by_name::ByName<AppObj>,
    /// The Applications that list each Rollout in `status.resources`, by the Rollout's
    /// namespace and name: [`apps_of`](World::apps_of) runs for every change around a rollout
    /// that an Application manages, and scanning every Application's resources there made
    /// `analyze` of a recording with Argo CD 60% slower.
    listing: HashMap<String, HashMap<String, BTreeSet<Key>>>,
    /// The Applications by name (a Rollout's tracking id names its Application, not the
    /// Application's namespace).
    named: HashMap<String, BTreeSet<Key>>,
    deployments: BTreeMap<Key, DeploymentObj>,
    routers: BTreeMap<(String, Router, String), RouterObj>,
    /// AnalysisRuns by namespace and name.
    analysis_runs: BTreeMap<Key, RunObj>,
    /// Flux HelmReleases and Kustomizations by name, kind and namespace.
    flux: BTreeMap<(String, &'static str, String), FluxObj>,
    /// The kubelet's and the scheduler's Events of why pods did not run, from the first lists,
    /// by namespace (at most [`KEEP_POD_EVENTS`] a namespace).
    pod_events: HashMap<String, Vec<PodEvent>>,
    /// Argo CD's Events of failed operations, from the first lists, by namespace (at most
    /// [`KEEP_APPLICATION_EVENTS`] a namespace).
    application_events: HashMap<String, Vec<FailedOperation>>,
}

/// Argo CD's Events of failed operations kept a namespace.
const KEEP_APPLICATION_EVENTS: usize = 256;

/// An operation of an Application that failed, as the Event Argo CD's application controller
/// emits when it completes says it (reason `OperationCompleted`, type `Warning`, `Sync
/// operation to REVISION failed: MESSAGE`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FailedOperation {
    pub application: String,
    /// When it last happened, and how many times the Event counted.
    pub last: Timestamp,
    pub count: u32,
    pub message: String,
}

impl FailedOperation {
    /// `TIME: MESSAGE` (`(N times)` for a counted Event).
    pub fn words(&self) -> String {
        let times = if self.count > 1 {
            format!(" ({} times)", self.count)
        } else {
            String::new()
        };
        format!(
            "{}: {}{times}",
            crate::base::time::rfc3339(self.last),
            self.message
        )
    }
}

/// Pod Events kept per namespace.
const KEEP_POD_EVENTS: usize = 1024;

/// An Event of why a pod did not run: pulling its image, starting its containers, placing it.
#[derive(Debug, Clone)]
pub(crate) struct PodEvent {
    pub pod: String,
    /// The Event's own name, for evidence.
    pub name: String,
    /// What it says, as a container's waiting reason would (`ErrImagePull`,
    /// `ImagePullBackOff`, `CrashLoopBackOff`, `Unschedulable`...).
    pub reason: String,
    pub message: String,
    /// The image it names, when it names one.
    pub image: Option<String>,
    pub pos: At,
}

/// What a pod Event says of why the pod did not run, as a waiting reason, if it says so.
fn pod_event_reason(reason: &str, message: &str) -> Option<&'static str> {
    Some(match reason {
        "FailedScheduling" => "Unschedulable",
        "FailedMount" => "FailedMount",
        "Unhealthy" => "Unhealthy",
        _ if message.contains("ImagePullBackOff") || message.contains("Back-off pulling image") => {
            "ImagePullBackOff"
        }
        _ if message.contains("ErrImagePull") || message.contains("Failed to pull image") => {
            "ErrImagePull"
        }
        _ if message.contains("InvalidImageName") => "InvalidImageName",
        _ if message.contains("Back-off restarting failed container")
            || message.contains("CrashLoopBackOff") =>
        {
            "CrashLoopBackOff"
        }
        _ if message.contains("CreateContainerConfigError") => "CreateContainerConfigError",
        _ => return None,
    })
}

/// The image an Event's message names: `... image "REF"...`.
fn event_image(message: &str) -> Option<String> {
    let rest = &message[message.find("image \"")? + 7..];
    Some(rest[..rest.find('"')?].to_owned())
}

/// Attempts kept per Flux object.
const KEEP_ATTEMPTS: usize = 8;

/// A Flux HelmRelease or Kustomization: what it attempted, and when.
#[derive(Debug, Clone)]
pub(crate) struct FluxObj {
    /// `HelmRelease` or `Kustomization`.
    pub kind: &'static str,
    pub namespace: String,
    pub name: String,
    /// Oldest first: a HelmRelease's Helm releases (by their deploy time), else each change
    /// of the attempted revision as recorded.
    pub attempts: Vec<Attempt>,
    pub pos: At,
}

/// One upgrade or apply a Flux object attempted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// `chart 1.4.2, values sha256:9f2c1b7e (Helm release 7)`, `main@sha1:3f2a…`.
    pub words: String,
    /// When it was deployed (a Helm release), or recorded attempted.
    pub at: Timestamp,
    /// A HelmRelease's Helm release number.
    pub release: Option<i64>,
}

impl FluxObj {
    /// The attempt nearest `at`, at most 10 s after it and 60 s before.
    pub fn attempt_near(&self, at: Timestamp) -> Option<&Attempt> {
        self.attempts
            .iter()
            .filter(|a| a.at.0 <= at.0 + 10 * 1_000_000_000 && at.0 - a.at.0 <= 60 * 1_000_000_000)
            .min_by_key(|a| (a.at.0 - at.0).abs())
    }

    /// Evidence of its last record.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        let kind = if self.kind == "HelmRelease" {
            rf_format::api::HELM_RELEASE.newest()
        } else {
            rf_format::api::KUSTOMIZATION.newest()
        };
        evidence_of(self.pos, kind, &self.namespace, &self.name, detail)
    }

    /// The command that shows its history.
    pub fn command(&self) -> String {
        if self.kind == "HelmRelease" {
            format!("flux -n {} get helmreleases {}", self.namespace, self.name)
        } else {
            format!(
                "flux -n {} get kustomizations {}",
                self.namespace, self.name
            )
        }
    }
}

/// A digest cut for words: `sha256:9f2c1b7e`.
fn short_digest(d: &str) -> &str {
    d.get(..15).unwrap_or(d)
}

/// The router `rec` holds, its object `parsed`; none when unreadable.
fn router_obj(router: Router, rec: &Record, parsed: Parsed, pos: At) -> Option<RouterObj> {
    let ns = rec.namespace.as_str();
    let (mut meta, rules, class) = match parsed {
        Parsed::Ingress(v) => {
            let v = *v;
            let rules = ingress_rules(&v.spec, ns);
            let class = v.spec.ingress_class_name.clone().or_else(|| {
                v.metadata
                    .annotations
                    .get("kubernetes.io/ingress.class")
                    .map(|c| Str::new(c))
            });
            (v.metadata, rules, class)
        }
        Parsed::HttpRoute(v) => {
            let v = *v;
            (v.metadata, http_route_rules(&v.spec, ns), None)
        }
        Parsed::VirtualService(v) => {
            let v = *v;
            (v.metadata, virtual_service_rules(&v.spec, ns), None)
        }
        _ => return None,
    };
    let actor = rec.actor.as_deref().map(Str::new).or_else(|| {
        meta.managed_fields
            .main
            .take()
            .map(|(_, m)| m)
            .filter(|m| !m.is_empty())
    });
    Some(RouterObj {
        router,
        class,
        namespace: rec.namespace.clone(),
        name: rec.name.clone(),
        rules,
        annotations: std::mem::take(&mut meta.annotations),
        actor,
        pos,
    })
}

/// One way in that a router gives requests, as `check` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouterPath {
    /// `Ingress`, `HTTPRoute` or `VirtualService`.
    pub kind: &'static str,
    pub name: String,
    /// `*` for any host.
    pub host: String,
    /// `/` for any path.
    pub path: String,
    pub service: String,
    /// The backend's weight, when the router sets one.
    pub weight: Option<i64>,
}

/// The paths of the Ingress, HTTPRoute or VirtualService `rec` holds to the Services of its own
/// namespace with a weight above 0, as the analyzer reads them: none for another kind, an
/// unreadable object, or the canary Ingress the rollouts controller makes for NGINX.
pub fn router_paths(rec: &Record) -> Vec<RouterPath> {
    let Some(router) = Router::of(&rec.kind) else {
        return Vec::new();
    };
    let parsed = crate::input::prepare::Prepared::of(rec).0;
    let pos = At {
        file: 0,
        seq: rec.seq,
        at: rec.observed_at,
    };
    let Some(obj) = router_obj(router, rec, parsed, pos) else {
        return Vec::new();
    };
    if obj.is_nginx_canary() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for rule in &obj.rules {
        for b in &rule.backends {
            if b.weight == Some(0) || b.namespace != rec.namespace.as_str() {
                continue;
            }
            for (host, path) in rule
                .matches
                .iter()
                .map(|(h, p)| (h.as_str(), p.as_str()))
                .chain(rule.matches.is_empty().then_some(("", "")))
            {
                out.push(RouterPath {
                    kind: router.word(),
                    name: obj.name.clone(),
                    host: if host.is_empty() { "*" } else { host }.to_owned(),
                    path: if path.is_empty() { "/" } else { path }.to_owned(),
                    service: b.service.to_string(),
                    weight: b.weight,
                });
            }
        }
    }
    out
}

/// An Ingress's paths, each a rule (its default backend first, matching anything).
fn ingress_rules(spec: &crate::input::view::IngressSpec, ns: &str) -> Vec<RuleObj> {
    let backend = |service: &crate::input::view::IngressBackend, pointer: String| {
        service.service.as_ref().map(|s| BackendObj {
            namespace: Str::new(ns),
            service: s.name.clone(),
            subset: None,
            weight: None,
            pointer,
        })
    };
    let mut rules = Vec::new();
    if let Some(b) = spec
        .default_backend
        .as_ref()
        .and_then(|b| backend(b, "/spec/defaultBackend/service/name".to_owned()))
    {
        rules.push(RuleObj {
            name: None,
            matches: Vec::new(),
            backends: vec![b],
        });
    }
    for (r, rule) in spec.rules.iter().flatten().enumerate() {
        let host = rule.host.clone().unwrap_or_default();
        for (i, p) in rule.http.iter().flat_map(|h| &h.paths).enumerate() {
            let pointer = format!("/spec/rules/{r}/http/paths/{i}/backend/service/name");
            if let Some(b) = backend(&p.backend, pointer) {
                rules.push(RuleObj {
                    name: None,
                    matches: vec![(host.clone(), p.path.clone().unwrap_or_default())],
                    backends: vec![b],
                });
            }
        }
    }
    rules
}

/// Each of `hosts` with each of `paths`, an empty list standing for any (`""`).
fn host_paths(hosts: &[Str], paths: impl Iterator<Item = Str>) -> Vec<(Str, Str)> {
    let any = [Str::default()];
    let hosts = if hosts.is_empty() { &any[..] } else { hosts };
    let mut paths: Vec<Str> = paths.collect();
    if paths.is_empty() {
        paths.push(Str::default());
    }
    hosts
        .iter()
        .flat_map(|h| paths.iter().map(move |p| (h.clone(), p.clone())))
        .collect()
}

/// An HTTPRoute's rules: each hostname with each path match, and the Service backends.
fn http_route_rules(spec: &crate::input::view::HttpRouteSpec, ns: &str) -> Vec<RuleObj> {
    spec.rules
        .iter()
        .enumerate()
        .map(|(r, rule)| {
            let paths = rule.matches.iter().map(|m| {
                m.path
                    .as_ref()
                    .and_then(|p| p.value.clone())
                    .unwrap_or_default()
            });
            let matches = host_paths(&spec.hostnames, paths);
            let backends = rule
                .backend_refs
                .iter()
                .enumerate()
                .filter(|(_, b)| {
                    b.group.as_deref().is_none_or(str::is_empty)
                        && b.kind.as_deref().is_none_or(|k| k == "Service")
                })
                .map(|(i, b)| BackendObj {
                    namespace: b.namespace.clone().unwrap_or_else(|| Str::new(ns)),
                    service: b.name.clone(),
                    subset: None,
                    weight: b.weight,
                    pointer: format!("/spec/rules/{r}/backendRefs/{i}/name"),
                })
                .collect();
            RuleObj {
                name: rule.name.clone(),
                matches,
                backends,
            }
        })
        .collect()
}

/// A VirtualService's HTTP routes: each host with each URI match, and the destinations.
fn virtual_service_rules(spec: &crate::input::view::VirtualServiceSpec, ns: &str) -> Vec<RuleObj> {
    spec.http
        .iter()
        .enumerate()
        .map(|(r, http)| {
            let uris = http.matches.iter().map(|m| {
                m.uri
                    .as_ref()
                    .and_then(|u| u.prefix.clone().or(u.exact.clone()).or(u.regex.clone()))
                    .unwrap_or_default()
            });
            let matches = host_paths(&spec.hosts, uris);
            let backends = http
                .route
                .iter()
                .enumerate()
                .filter(|(_, d)| !d.destination.host.is_empty())
                .map(|(i, d)| {
                    let (service, namespace) = service_of_host(&d.destination.host, ns);
                    BackendObj {
                        namespace,
                        service,
                        subset: d.destination.subset.clone().filter(|s| !s.is_empty()),
                        weight: d.weight,
                        pointer: format!("/spec/http/{r}/route/{i}/destination/host"),
                    }
                })
                .collect();
            RuleObj {
                name: http.name.clone().filter(|n| !n.is_empty()),
                matches,
                backends,
            }
        })
        .collect()
}

impl World {
    /// Applies one record of a Service, EndpointSlice, Pod or Application, its object parsed
    /// (nothing for a deletion). Returns what changed.
    pub fn apply(&mut self, rec: &Record, parsed: Parsed, pos: At) -> Option<Touched> {
        let deleted = matches!(rec.op, Op::Deleted { .. });
        match rec.kind {
            Kind::Service | Kind::EndpointSlice | Kind::Pod => {
                let ns = match self.namespaces.get_mut(rec.namespace.as_str()) {
                    Some(ns) => ns,
                    None => self.namespaces.entry(rec.namespace.clone()).or_default(),
                };
                let touched = match rec.kind {
                    Kind::Service => ns.apply_service(rec, parsed, pos, deleted),
                    Kind::EndpointSlice => ns.apply_slice(rec, parsed, pos, deleted),
                    _ => ns.apply_pod(rec, parsed, pos, deleted),
                };
                if ns.is_empty() {
                    self.namespaces.remove(rec.namespace.as_str());
                }
                touched
            }
            Kind::Application => self.apply_app(rec, parsed, pos, deleted),
            _ if rf_format::api::DEPLOYMENT.is(&rec.kind) => {
                self.apply_deployment(rec, parsed, pos, deleted)
            }
            _ if rf_format::api::ANALYSIS_RUN.is(&rec.kind) => {
                self.apply_analysis_run(rec, parsed, pos, deleted)
            }
            _ if crate::input::prepare::is_flux(&rec.kind) => {
                self.apply_flux(rec, parsed, pos, deleted)
            }
            _ => match Router::of(&rec.kind) {
                Some(router) => self.apply_router(router, rec, parsed, pos, deleted),
                None => None,
            },
        }
    }

    fn apply_deployment(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        let touched = |template| Touched::Deployment {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
            template,
        };
        let (false, Parsed::Deployment(mut v)) = (deleted, parsed) else {
            // Deleted, or unreadable: it no longer counts.
            return self.deployments.remove(&key).map(|_| touched(false));
        };
        let replicas = v.spec.replicas.unwrap_or(1);
        let ready = v.status.ready_replicas.unwrap_or(0);
        let text = v.spec.template.as_ref().and_then(|t| t.get(&rec.object));
        let actor = rec
            .actor
            .as_deref()
            .map(Str::new)
            .or_else(|| v.metadata.take_last_manager(false));
        let obj = match self.deployments.get_mut(&key) {
            Some(obj) => obj,
            None => self.deployments.entry(key).or_insert(DeploymentObj {
                namespace: rec.namespace.clone(),
                name: rec.name.clone(),
                replicas,
                ready: 0,
                generation: None,
                template: None,
                scaled_up: None,
                scaled_down: None,
                scale_ups: 0,
                actor: None,
                pos,
                revision_history_limit: None,
                template_changes: std::collections::VecDeque::new(),
                tracked_by: None,
                flux: None,
                pod_labels: BTreeMap::new(),
            }),
        };
        if replicas != obj.replicas {
            let scale = Scale {
                pos,
                from: obj.replicas,
                to: replicas,
                actor: actor.clone(),
            };
            if obj.replicas == 0 {
                obj.scale_ups += 1;
                obj.scaled_up = Some(scale);
            } else if replicas == 0 {
                obj.scaled_down = Some(scale);
            }
        }
        obj.replicas = replicas;
        obj.ready = ready;
        obj.actor = actor;
        obj.generation = v.metadata.generation;
        obj.pos = pos;
        obj.revision_history_limit = v.spec.revision_history_limit;
        let tracked_by = crate::input::view::tracking_app(&v.metadata);
        if obj.tracked_by.as_deref() != tracked_by {
            obj.tracked_by = tracked_by.map(Str::new);
        }
        let flux = crate::input::view::flux_of(&v.metadata);
        if obj.flux.as_ref().map(|(k, n)| (*k, n.as_str())) != flux {
            obj.flux = flux.map(|(k, n)| (k, Str::new(n)));
        }
        let changed = text.is_some_and(|t| obj.template.as_deref() != Some(t));
        if changed {
            obj.pod_labels = template_labels(text.unwrap_or_default());
            let after: std::sync::Arc<str> = std::sync::Arc::from(text.unwrap_or_default());
            if let Some(before) = obj.template.replace(after.clone()) {
                if obj.template_changes.len() == KEEP_TEMPLATE_CHANGES {
                    obj.template_changes.pop_front();
                }
                obj.template_changes.push_back(TemplateChange {
                    pos,
                    generation: obj.generation,
                    actor: obj.actor.clone(),
                    before,
                    after,
                });
            }
        }
        Some(touched(changed))
    }

    fn apply_router(
        &mut self,
        router: Router,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), router, rec.name.clone());
        let touched = Touched::Router {
            router,
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        };
        let obj = match (deleted, router_obj(router, rec, parsed, pos)) {
            (false, Some(obj)) => obj,
            // Deleted, or unreadable: it no longer counts.
            _ => return self.routers.remove(&key).map(|_| touched),
        };
        self.routers.insert(key, obj);
        Some(touched)
    }

    fn apply_analysis_run(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        let touched = Touched::Analysis {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        };
        let (false, Parsed::AnalysisRun(v)) = (deleted, parsed) else {
            // Deleted (the rollout keeps a few), or unreadable: it no longer counts.
            return self.analysis_runs.remove(&key).map(|_| touched);
        };
        let run = run_obj(rec, *v, self.analysis_runs.get(&key), pos);
        self.analysis_runs.insert(key, run);
        Some(touched)
    }

    fn apply_flux(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let kind = if rf_format::api::HELM_RELEASE.is(&rec.kind) {
            "HelmRelease"
        } else {
            "Kustomization"
        };
        let key = (rec.name.clone(), kind, rec.namespace.clone());
        let (false, Parsed::Flux(v)) = (deleted, parsed) else {
            return self.flux.remove(&key).map(|_| Touched::Flux);
        };
        let obj = self.flux.entry(key).or_insert_with(|| FluxObj {
            kind,
            namespace: rec.namespace.clone(),
            name: rec.name.clone(),
            attempts: Vec::new(),
            pos,
        });
        obj.pos = pos;
        let st = &v.status;
        if !st.history.is_empty() {
            // helm-controller v2: the Helm releases themselves, newest first, cut to the latest
            // and the previous deployed one: merged into those seen before, by release number.
            for h in &st.history {
                let deployed = h.last_deployed.as_deref().or(h.first_deployed.as_deref());
                let Some(at) = deployed.and_then(crate::base::time::parse_rfc3339) else {
                    continue;
                };
                let mut words = format!("chart {}", h.chart_version.as_deref().unwrap_or("?"));
                if let Some(d) = &h.config_digest {
                    words.push_str(&format!(", values {}", short_digest(d)));
                }
                if let Some(v) = h.version {
                    words.push_str(&format!(" (Helm release {v})"));
                }
                match obj
                    .attempts
                    .iter_mut()
                    .find(|a| a.release == h.version && h.version.is_some())
                {
                    Some(a) => {
                        a.words = words;
                        a.at = at;
                    }
                    None => obj.attempts.push(Attempt {
                        words,
                        at,
                        release: h.version,
                    }),
                }
            }
            obj.attempts.sort_by_key(|a| (a.at, a.release));
            let excess = obj.attempts.len().saturating_sub(KEEP_ATTEMPTS);
            obj.attempts.drain(..excess);
        } else if let Some(rev) = &st.last_attempted_revision {
            let mut words = rev.clone();
            if let Some(d) = st
                .last_attempted_config_digest
                .as_ref()
                .or(st.last_attempted_values_checksum.as_ref())
            {
                words.push_str(&format!(", values {}", short_digest(d)));
            }
            if obj.attempts.last().is_none_or(|a| a.words != words) {
                if obj.attempts.len() == KEEP_ATTEMPTS {
                    obj.attempts.remove(0);
                }
                obj.attempts.push(Attempt {
                    words,
                    at: pos.at,
                    release: None,
                });
            }
        }
        Some(Touched::Flux)
    }

    /// The Flux objects of `kind` named `name`, in any namespace (the label names no namespace).
    pub fn flux_named<'a>(
        &'a self,
        kind: &'static str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a FluxObj> + 'a {
        self.flux
            .range((name.to_owned(), kind, String::new())..)
            .take_while(move |((n, k, _), _)| n == name && *k == kind)
            .map(|(_, o)| o)
    }

    /// AnalysisRun `ns`/`name`, if it is live.
    pub fn analysis_run(&self, ns: &str, name: &str) -> Option<&RunObj> {
        self.analysis_runs.get(&(ns.to_owned(), name.to_owned()))
    }

    /// The live AnalysisRuns of rollout `ns`/`rollout`, by name.
    pub fn analysis_runs_of<'a>(
        &'a self,
        ns: &'a str,
        rollout: &'a str,
    ) -> impl Iterator<Item = &'a RunObj> + 'a {
        // Asked at every look at every rollout: most recordings have no run, and the range
        // bound would cost two allocations.
        (!self.analysis_runs.is_empty())
            .then(|| {
                self.analysis_runs
                    .range((ns.to_owned(), String::new())..)
                    .take_while(move |((n, _), _)| n == ns)
                    .map(|(_, r)| r)
                    .filter(move |r| r.rollout.as_deref() == Some(rollout))
            })
            .into_iter()
            .flatten()
    }

    /// The routers of namespace `ns`: Ingresses, HTTPRoutes, VirtualServices, each by name.
    pub fn routers_in<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = &'a RouterObj> + 'a {
        self.routers
            .range((ns.to_owned(), Router::Ingress, String::new())..)
            .take_while(move |((n, _, _), _)| n == ns)
            .map(|(_, r)| r)
    }

    /// Router `ns`/`name` of kind `router`, if it is live.
    pub fn router(&self, router: Router, ns: &str, name: &str) -> Option<&RouterObj> {
        self.routers.get(&(ns.to_owned(), router, name.to_owned()))
    }

    /// Ingress `ns`/`name`, if it is live.
    pub fn ingress(&self, ns: &str, name: &str) -> Option<&RouterObj> {
        self.router(Router::Ingress, ns, name)
    }

    /// Deployment `ns`/`name`, if it is live.
    pub fn deployment(&self, ns: &str, name: &str) -> Option<&DeploymentObj> {
        self.deployments.get(&(ns.to_owned(), name.to_owned()))
    }

    fn apply_app(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        if deleted {
            self.unindex_app(&key);
            self.apps.remove(&key.0, &key.1);
        } else {
            let Parsed::App(v) = parsed else {
                self.unindex_app(&key);
                return None;
            };
            let old = self.apps.get(&key.0, &key.1);
            // Argo CD rewrites an Application's status at every refresh; its history, the
            // rollouts it lists and its last operation rarely change: each is worked out again
            // only when it did (the reader shares what it read before otherwise).
            let same_history = old.is_some_and(|o| Arc::ptr_eq(&o.history_read, &v.status.history));
            let same_operation =
                old.is_some_and(|o| match (&o.operation_read, &v.status.operation_state) {
                    (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                    (None, None) => true,
                    _ => false,
                });
            let history = match old {
                Some(o) if same_history => Arc::clone(&o.history),
                _ => {
                    let mut history: Vec<Sync> =
                        v.status.history.iter().filter_map(Sync::of).collect();
                    history.sort_by_key(|h| h.deployed_at);
                    if history.len() > KEEP_SYNCS {
                        history.drain(..history.len() - KEEP_SYNCS);
                    }
                    Arc::new(history)
                }
            };
            // The last operation, as the last record had it: what was worked out of it stands.
            let (failing, self_heal) = match old {
                Some(o) if same_operation => (o.failing.clone(), o.self_heal.clone()),
                _ => {
                    let state = v.status.operation_state.as_deref();
                    (FailedSync::of(state), SelfHeal::of(state))
                }
            };
            let mut changes = Vec::new();
            if let Some(old) = old {
                if let Some(f) = failing
                    .as_ref()
                    .filter(|f| old.failing.as_ref() != Some(*f))
                {
                    changes.push(f.words());
                }
                if let Some(heal) = self_heal
                    .as_ref()
                    .filter(|h| old.self_heal.as_ref() != Some(*h))
                {
                    changes.push(format!(
                        "self-heal {}: a sync of {}",
                        heal.attempts,
                        heal.resource_words()
                    ));
                }
                let word = |w: &Option<Str>| w.as_deref().unwrap_or("none").to_owned();
                if old.sync != v.status.sync.status {
                    changes.push(format!(
                        "sync {} -> {}",
                        word(&old.sync),
                        word(&v.status.sync.status)
                    ));
                }
                if old.health != v.status.health.status {
                    changes.push(format!(
                        "health {} -> {}",
                        word(&old.health),
                        word(&v.status.health.status)
                    ));
                }
                for (i, sync) in history.iter().enumerate() {
                    // A shared history holds no sync the last record did not.
                    if same_history || old.history.contains(sync) {
                        continue;
                    }
                    let what = sync_changes(&history, i)
                        .unwrap_or_else(|| "the same revisions and parameters".to_owned());
                    changes.push(format!("{}: {what}", sync.words()));
                }
            }
            let (rollouts, listed_again) = match old {
                Some(o) if Arc::ptr_eq(&o.resources_read, &v.status.resources) => {
                    (o.rollouts.clone(), false)
                }
                _ => {
                    let rollouts: Vec<Key> = v
                        .status
                        .resources
                        .iter()
                        .filter(|r| r.kind == "Rollout")
                        .map(|r| (r.namespace.to_string(), r.name.to_string()))
                        .collect();
                    let again = old.is_none_or(|old| old.rollouts != rollouts);
                    (rollouts, again)
                }
            };
            // Indexed again only when the rollouts it lists changed.
            if listed_again {
                self.unindex_app(&key);
                for (ns, name) in &rollouts {
                    self.listing
                        .entry(ns.clone())
                        .or_default()
                        .entry(name.clone())
                        .or_default()
                        .insert(key.clone());
                }
                self.named
                    .entry(rec.name.clone())
                    .or_default()
                    .insert(key.clone());
            }
            self.apps.set(
                &key.0,
                &key.1,
                AppObj {
                    namespace: rec.namespace.clone(),
                    name: rec.name.clone(),
                    sync: v.status.sync.status,
                    health: v.status.health.status,
                    revision: v.status.sync.revision,
                    history,
                    rollouts,
                    history_read: v.status.history,
                    resources_read: v.status.resources,
                    operation_read: v.status.operation_state,
                    pos,
                    changes,
                    self_heal,
                    failing,
                },
            );
        }
        Some(Touched::App {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        })
    }

    /// The objects of namespace `ns`, when it has any: looked up once for many questions.
    pub fn namespace(&self, ns: &str) -> Option<&Namespace> {
        self.namespaces.get(ns)
    }

    /// The Services of a namespace, by name.
    #[cfg(test)]
    pub fn services_in<'a>(
        &'a self,
        ns: &str,
    ) -> impl Iterator<Item = (&'a str, &'a ServiceObj)> + 'a {
        self.namespaces
            .get(ns)
            .into_iter()
            .flat_map(Namespace::services)
    }

    /// The EndpointSlices of a Service.
    pub fn slices_of<'a>(
        &'a self,
        ns: &str,
        service: &str,
    ) -> impl Iterator<Item = (&'a str, &'a SliceObj)> + 'a {
        self.namespaces
            .get(ns)
            .map(|n| n.slices_of(service))
            .into_iter()
            .flatten()
    }

    pub fn pod(&self, ns: &str, name: &str) -> Option<&PodObj> {
        self.namespaces.get(ns)?.pod(name)
    }

    /// The pods of the namespace labelled with pod-template hash `hash`.
    pub fn pods_of_hash<'a>(
        &'a self,
        ns: &str,
        hash: &str,
    ) -> impl Iterator<Item = (&'a str, &'a PodObj)> + 'a {
        let ns = self.namespaces.get(ns);
        ns.and_then(|n| n.pods_by_hash.get(hash))
            .into_iter()
            .flatten()
            .filter_map(move |name| {
                let pod = ns?.pods.get(name)?;
                Some((name.as_str(), pod))
            })
    }

    /// True when a pod of the namespace is labelled with pod-template hash `hash`.
    pub fn has_pods_of_hash(&self, ns: &str, hash: &str) -> bool {
        self.namespaces
            .get(ns)
            .is_some_and(|n| n.pods_by_hash.contains_key(hash))
    }

    /// Drops the Application `key` (if known) from the indexes of the Applications.
    fn unindex_app(&mut self, key: &Key) {
        let Some(old) = self.apps.get(&key.0, &key.1) else {
            return;
        };
        for (ns, name) in &old.rollouts {
            if let Some(by_name) = self.listing.get_mut(ns) {
                if let Some(keys) = by_name.get_mut(name) {
                    keys.remove(key);
                    if keys.is_empty() {
                        by_name.remove(name);
                    }
                }
                if by_name.is_empty() {
                    self.listing.remove(ns);
                }
            }
        }
        if let Some(keys) = self.named.get_mut(&key.1) {
            keys.remove(key);
            if keys.is_empty() {
                self.named.remove(&key.1);
            }
        }
    }

    pub fn app(&self, ns: &str, name: &str) -> Option<&AppObj> {
        self.apps.get(ns, name)
    }

    /// The Applications that manage rollout `ns`/`name` (the Rollouts of their
    /// `status.resources[]`) or that it names as its own (`tracked_by`, its tracking id or
    /// instance label), by namespace and name.
    pub fn apps_of_rollout<'a>(
        &'a self,
        ns: &str,
        name: &str,
        tracked_by: Option<&str>,
    ) -> impl Iterator<Item = &'a AppObj> + 'a {
        // Most recordings hold no Application: no lookup by the rollout's names then (this
        // runs at every look).
        let any = !self.apps.is_empty();
        let listing = any
            .then(|| self.listing.get(ns))
            .flatten()
            .and_then(|by_name| by_name.get(name));
        let named = tracked_by
            .filter(|_| any)
            .and_then(|app| self.named.get(app));
        // Both sets are in key order: merged, each key once, with no list made (this runs at
        // every look at the rollout, by each rule that reads Applications).
        let mut a = listing.into_iter().flatten().peekable();
        let mut b = named.into_iter().flatten().peekable();
        std::iter::from_fn(move || match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if x == y => {
                b.next();
                a.next()
            }
            (Some(x), Some(y)) if y < x => b.next(),
            (Some(_), _) => a.next(),
            (None, _) => b.next(),
        })
        .filter_map(|key| self.apps.get(&key.0, &key.1))
    }

    /// The Applications named `app` (a tracking id or instance label names no namespace).
    pub fn apps_named<'a>(&'a self, app: &str) -> impl Iterator<Item = &'a AppObj> + 'a {
        self.named
            .get(app)
            .into_iter()
            .flatten()
            .filter_map(|key| self.apps.get(&key.0, &key.1))
    }

    /// The Deployments held, each by (namespace, name).
    /// Keeps a listed Event of why a pod did not run (others are not kept).
    pub fn note_pod_event(
        &mut self,
        namespace: &str,
        name: &str,
        view: &crate::input::view::EventView,
        pos: At,
    ) {
        let about = view.about();
        if about.kind != "Pod" || about.name.is_empty() {
            return;
        }
        let Some(reason) = pod_event_reason(&view.reason, view.text()) else {
            return;
        };
        let list = self.pod_events.entry(namespace.to_owned()).or_default();
        if list.len() >= KEEP_POD_EVENTS {
            return;
        }
        list.push(PodEvent {
            pod: about.name.to_string(),
            name: name.to_owned(),
            reason: reason.to_owned(),
            message: view.text().to_owned(),
            image: event_image(view.text()),
            pos,
        });
    }

    /// Keeps a listed Event of Argo CD's that an Application's operation failed (others are
    /// not kept): what `operationState` no longer says once another operation ran.
    pub fn note_application_event(
        &mut self,
        namespace: &str,
        view: &crate::input::view::EventView,
    ) {
        let about = view.about();
        if about.kind != "Application" || about.name.is_empty() {
            return;
        }
        let failed = view.reason == "OperationCompleted"
            && (view.severity.as_deref() == Some("Warning") || view.text().contains(" failed"));
        if !failed {
            return;
        }
        let Some((_, last, count, _)) = view.span() else {
            return;
        };
        let ns = view.about_namespace(namespace);
        let list = self.application_events.entry(ns.to_owned()).or_default();
        if list.len() >= KEEP_APPLICATION_EVENTS {
            return;
        }
        list.push(FailedOperation {
            application: about.name.to_string(),
            last,
            count,
            message: view.text().to_owned(),
        });
    }

    /// The failed operations of Application `ns/name` its Events held, oldest first.
    pub fn failed_operations(
        &self,
        ns: &str,
        name: &str,
    ) -> impl Iterator<Item = &FailedOperation> {
        let mut failed: Vec<&FailedOperation> = self
            .application_events
            .get(ns)
            .into_iter()
            .flatten()
            .filter(|e| e.application == name)
            .collect();
        failed.sort_by_key(|e| e.last);
        failed.into_iter()
    }

    /// The pod Events of namespace `ns` about pods named `prefix...`.
    pub fn pod_events<'a>(
        &'a self,
        ns: &str,
        prefix: &'a str,
    ) -> impl Iterator<Item = &'a PodEvent> + 'a {
        self.pod_events
            .get(ns)
            .into_iter()
            .flatten()
            .filter(move |e| e.pod.starts_with(prefix))
    }

    pub fn deployments(&self) -> impl Iterator<Item = &DeploymentObj> {
        self.deployments.values()
    }

    /// The Deployments of namespace `ns`.
    pub fn deployments_in<'a>(
        &'a self,
        ns: &'a str,
    ) -> impl Iterator<Item = &'a DeploymentObj> + 'a {
        self.deployments
            .range((ns.to_owned(), String::new())..)
            .take_while(move |((n, _), _)| n == ns)
            .map(|(_, d)| d)
    }

    /// Objects held, all kinds.
    pub fn len(&self) -> usize {
        self.namespaces.values().map(Namespace::len).sum::<usize>()
            + self.apps.len()
            + self.deployments.len()
            + self.routers.len()
    }
}

/// True when `selector` (non-empty) selects pods with `labels`.
pub(crate) fn selects(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::view::ReplicaSetView;
    use crate::model::rollout::RolloutTrack;
    use crate::model::traffic::{
        Route, has_revision, membership, of_revision, revision, route, serves_revision,
    };

    fn track_with(replicasets: &[(&str, Option<&str>)]) -> RolloutTrack {
        let mut track = RolloutTrack::new("ns", "r", false);
        for (i, (name, hash)) in replicasets.iter().enumerate() {
            let mut labels = serde_json::Map::new();
            if let Some(h) = hash {
                labels.insert(HASH_LABEL.to_owned(), (*h).into());
            }
            let view: ReplicaSetView = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": labels,
                    "ownerReferences": [{"kind": "Rollout", "name": "r", "uid": "u"}]},
                "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}}
            }))
            .unwrap_or_default();
            let pos = At {
                file: 0,
                seq: i as u64,
                at: Timestamp(0),
            };
            track.observe_replicaset(&view, &[], pos, false, true);
        }
        track
    }

    #[test]
    fn serves_revision_says_what_membership_says() {
        // Rollout `r` with revisions h1 and h2 (ReplicaSets r-h1, r-h2); pods named after
        // them or not, labelled with their hash or another or none, owned or not; endpoints in
        // every order, ready or not, across two slices.
        let track = track_with(&[("r-h1", Some("h1")), ("r-h2", Some("h2"))]);
        let pods: [(&str, Option<&str>, Option<&str>); 7] = [
            ("r-h1-a", Some("h1"), Some("r-h1")),
            ("r-h2-b", Some("h2"), Some("r-h2")),
            ("r-h2-c", Some("h1"), Some("r-h1")),
            ("other", Some("h2"), None),
            ("r-h1-d", None, Some("r-h2")),
            ("x-h2-e", None, None),
            ("r-h2-f", Some("h9"), None),
        ];
        let at = At {
            file: 0,
            seq: 0,
            at: Timestamp(0),
        };
        let mut rng = rf_scenarios::SplitMix::new(3);
        let (mut served, mut cases) = (0, 0);
        for _ in 0..2000 {
            let mut ns = Namespace::default();
            for (name, hash, owner) in pods {
                if rng.below(4) > 0 {
                    ns.pods.insert(
                        name.to_owned(),
                        PodObj {
                            hash: hash.map(Str::new),
                            labels: None,
                            owner: owner.map(Str::new),
                            ready: true,
                            ready_since: None,
                            images: Vec::new(),
                            trouble: None,
                            pos: at,
                        },
                    );
                }
            }
            for slice in ["s1", "s2"] {
                let endpoints = (0..rng.below(5))
                    .map(|_| EndpointObj {
                        pod: (rng.below(8) > 0).then(|| Str::new(pods[rng.below(pods.len())].0)),
                        address: Str::new("10.0.0.1"),
                        ready: rng.below(3) > 0,
                    })
                    .collect();
                ns.slices.insert(
                    slice.to_owned(),
                    SliceObj {
                        service: "svc".to_owned(),
                        endpoints,
                        pos: at,
                    },
                );
                index(&mut ns.slices_of, "svc", slice);
            }
            let mut world = World::default();
            world.namespaces.insert("ns".to_owned(), ns);
            let by = membership(&world, &track, "svc");
            for hash in ["h1", "h2", "h9"] {
                let want = by.get(hash).is_some_and(|pods| !pods.is_empty());
                assert_eq!(
                    serves_revision(&world, &track, "svc", hash),
                    want,
                    "{hash} {by:?}"
                );
                served += usize::from(want);
                cases += 1;
            }
        }
        assert!(
            served > cases / 5 && served < cases * 4 / 5,
            "{served} of {cases}"
        );
    }

    /// Applies a record of `kind` `ns/name` holding `object`, or its deletion (`None`).
    fn apply_object(
        world: &mut World,
        seq: u64,
        kind: Kind,
        (ns, name): (&str, &str),
        object: Option<serde_json::Value>,
    ) {
        let rec = Record {
            seq,
            observed_at: Timestamp(0),
            kind,
            op: if object.is_some() {
                Op::Modified
            } else {
                Op::Deleted { inferred: false }
            },
            namespace: ns.into(),
            name: name.into(),
            uid: String::new(),
            resource_version: seq.to_string(),
            actor: None,
            object: object
                .map(|o| serde_json::to_vec(&o).unwrap_or_default())
                .unwrap_or_default(),
        };
        let parsed = crate::Prepared::of(&rec).0;
        let pos = At {
            file: 0,
            seq,
            at: Timestamp(0),
        };
        world.apply(&rec, parsed, pos);
    }

    /// Applies a Service record of namespace `ns` with `selector` (`None`: no selector);
    /// `deleted` deletes it.
    fn service(
        world: &mut World,
        seq: u64,
        name: &str,
        selector: Option<&[(&str, &str)]>,
        deleted: bool,
    ) {
        let mut spec = serde_json::Map::new();
        if let Some(sel) = selector {
            let sel: serde_json::Map<String, serde_json::Value> = sel
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).into()))
                .collect();
            spec.insert("selector".to_owned(), sel.into());
        }
        let object =
            serde_json::json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec});
        apply_object(
            world,
            seq,
            Kind::Service,
            ("ns", name),
            (!deleted).then_some(object),
        );
    }

    /// A Service's endpoints stamp moves with each change of its endpoints (a slice added,
    /// changed, moved to another Service or deleted) and only then; it is gone with its last
    /// slice.
    #[test]
    fn the_endpoints_stamp_moves_with_the_endpoints_only() {
        let mut world = World::default();
        let slice = |world: &mut World, seq, name: &str, service: &str, pods: &[(&str, bool)]| {
            let endpoints: Vec<serde_json::Value> = pods
                .iter()
                .map(|(pod, ready)| {
                    serde_json::json!({"addresses": ["10.0.0.1"], "conditions": {"ready": ready},
                        "targetRef": {"kind": "Pod", "name": pod}})
                })
                .collect();
            let object = serde_json::json!({
                "metadata": {"name": name, "namespace": "ns",
                    "labels": {"kubernetes.io/service-name": service}},
                "endpoints": endpoints});
            apply_object(world, seq, Kind::EndpointSlice, ("ns", name), Some(object));
        };
        let stamp = |world: &World, service: &str| {
            world
                .namespace("ns")
                .and_then(|n| n.endpoints_stamp(service))
        };
        slice(&mut world, 1, "web-a", "web", &[("web-1", true)]);
        let first = stamp(&world, "web");
        assert!(first.is_some());
        // The same endpoints again (a new resourceVersion): the same stamp.
        slice(&mut world, 2, "web-a", "web", &[("web-1", true)]);
        assert_eq!(stamp(&world, "web"), first);
        // One endpoint not ready: another stamp.
        slice(&mut world, 3, "web-a", "web", &[("web-1", false)]);
        let second = stamp(&world, "web");
        assert!(second.is_some() && second != first);
        // A second slice of the Service moves it; one of another Service does not.
        slice(&mut world, 4, "web-b", "web", &[("web-2", true)]);
        let third = stamp(&world, "web");
        assert!(third.is_some() && third != second);
        slice(&mut world, 5, "api-a", "api", &[("api-1", true)]);
        assert_eq!(stamp(&world, "web"), third);
        // A slice moved to another Service moves both.
        let api = stamp(&world, "api");
        slice(&mut world, 6, "web-b", "api", &[("web-2", true)]);
        assert!(stamp(&world, "web").is_some_and(|s| Some(s) != third));
        assert!(stamp(&world, "api").is_some_and(|s| Some(s) != api));
        // Deleting its last slice: none.
        apply_object(&mut world, 7, Kind::EndpointSlice, ("ns", "web-a"), None);
        assert_eq!(stamp(&world, "web"), None);
    }

    #[test]
    fn the_services_routing_to_a_rollout_are_the_ones_a_walk_over_every_service_finds() {
        // Services come, change selector and go, with selectors drawn from labels the
        // rollout's pods have and do not have (a label all share, its own `app`, another
        // rollout's, a revision's hash), none, or no selector at all; the rollout names some
        // of them as its canary or stable Service, and its ReplicaSets come and go.
        const LABELS: [(&str, &str); 6] = [
            ("team", "pay"),
            ("app", "r"),
            ("app", "s"),
            (HASH_LABEL, "h1"),
            (HASH_LABEL, "h2"),
            ("tier", "web"),
        ];
        let replicaset = |name: &str, hash: &str, tier: bool| -> ReplicaSetView {
            let mut labels = serde_json::json!({"team": "pay", "app": "r", HASH_LABEL: hash});
            if tier {
                labels["tier"] = "web".into();
            }
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": labels,
                    "ownerReferences": [{"kind": "Rollout", "name": "r", "uid": "u"}]},
                "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}}
            }))
            .unwrap_or_default()
        };
        let mut rng = rf_scenarios::SplitMix::new(11);
        let mut world = World::default();
        let mut track = RolloutTrack::new("ns", "r", false);
        let mut cache = crate::model::traffic::RoutingCache::default();
        let (mut routed, mut looks) = (0, 0);
        for seq in 0..3000u64 {
            let name = ["a", "b", "c", "d", "e", "f", "g"][rng.below(7)];
            match rng.below(10) {
                0 => service(&mut world, seq, name, None, true),
                1 => service(&mut world, seq, name, None, false),
                2 => {
                    let (rs, hash) = [("r-h1", "h1"), ("r-h2", "h2")][rng.below(2)];
                    let pos = At {
                        file: 0,
                        seq,
                        at: Timestamp(0),
                    };
                    let view = replicaset(rs, hash, rng.below(2) == 0);
                    track.observe_replicaset(&view, &[], pos, rng.below(3) == 0, false);
                }
                3 => {
                    let pick = |rng: &mut rf_scenarios::SplitMix| {
                        (rng.below(3) > 0).then(|| ["a", "b", "h"][rng.below(3)].to_owned())
                    };
                    let (canary, stable) = (pick(&mut rng), pick(&mut rng));
                    track.set_services(canary, stable);
                }
                _ => {
                    let selector: Vec<(&str, &str)> = (0..rng.below(4))
                        .map(|_| LABELS[rng.below(LABELS.len())])
                        .collect::<BTreeMap<_, _>>()
                        .into_iter()
                        .collect();
                    service(&mut world, seq, name, Some(&selector), false);
                }
            }
            let walk: Vec<(&str, Route)> = world
                .services_in("ns")
                .filter_map(|(name, svc)| Some((name, route(&track, name, svc)?)))
                .collect();
            let found: Vec<(&str, Route)> = world
                .routing(&track)
                .into_iter()
                .map(|(name, _, why)| (name, why))
                .collect();
            assert_eq!(found, walk, "at {seq}");
            // Kept between looks: the same until a stamp changes.
            let kept: Vec<(&str, Route)> = cache
                .routing(&world, &track)
                .into_iter()
                .map(|(name, _, why)| (name, why))
                .collect();
            assert_eq!(kept, walk, "kept, at {seq}");
            routed += walk.len();
            looks += 1;
        }
        assert!(
            routed > looks && routed < looks * 5,
            "{routed} Services routed over {looks} looks"
        );
    }

    /// Applies an Application record listing `rollouts` (namespace, name); `None` deletes it.
    fn app(world: &mut World, seq: u64, ns: &str, name: &str, rollouts: Option<&[(&str, &str)]>) {
        let resources: Vec<serde_json::Value> = rollouts
            .unwrap_or_default()
            .iter()
            .map(|(ns, n)| serde_json::json!({"kind": "Rollout", "namespace": ns, "name": n}))
            .collect();
        let object = serde_json::json!({"metadata": {"name": name, "namespace": ns},
            "status": {"resources": resources}});
        apply_object(
            world,
            seq,
            Kind::Application,
            (ns, name),
            rollouts.map(|_| object),
        );
    }

    /// A refresh that shares the history and the operation read before changes no sync and
    /// no failure of them (its words say only what changed), and a new sync is told as before.
    #[test]
    fn an_applications_syncs_are_read_again_only_when_its_history_changed() {
        let mut world = World::default();
        let sync = |id: i64, rev: &str, at: &str| serde_json::json!({"id": id, "revision": rev, "deployedAt": at, "source": {"repoURL": "git"}});
        let failed = serde_json::json!({"phase": "Failed", "message": "one or more objects failed",
            "syncResult": {"resources": [{"kind": "Job", "name": "gate", "hookType": "PreSync",
                "hookPhase": "Failed", "message": "refused"}]}});
        let succeeded = serde_json::json!({"phase": "Succeeded", "syncResult": {"resources": []}});
        let mut put =
            |seq: u64, health: &str, history: &[serde_json::Value], op: &serde_json::Value| {
                let object = serde_json::json!({"metadata": {"name": "shop", "namespace": "argocd"},
                "status": {"health": {"status": health}, "history": history, "operationState": op,
                    "resources": [{"kind": "Rollout", "namespace": "team", "name": "web"}]}});
                apply_object(
                    &mut world,
                    seq,
                    Kind::Application,
                    ("argocd", "shop"),
                    Some(object),
                );
                world
                    .app("argocd", "shop")
                    .cloned()
                    .expect("the Application")
            };
        let one = [sync(1, "aaa", "2026-03-14T13:00:00Z")];
        let first = put(1, "Healthy", &one, &failed);
        assert_eq!(first.history.len(), 1);
        let failing = first.failing.clone().expect("the failed sync");
        assert_eq!(failing.failed, ["PreSync hook Job gate Failed: refused"]);
        let refresh = put(2, "Degraded", &one, &failed);
        assert!(Arc::ptr_eq(&first.history, &refresh.history));
        assert_eq!(refresh.changes, ["health Healthy -> Degraded"]);
        assert_eq!(refresh.failing, Some(failing));
        assert_eq!(refresh.rollouts, [("team".to_owned(), "web".to_owned())]);
        let two = [one[0].clone(), sync(2, "bbb", "2026-03-14T13:05:00Z")];
        let synced = put(3, "Degraded", &two, &succeeded);
        assert_eq!(synced.history.len(), 2);
        assert_eq!(synced.failing, None);
        assert_eq!(synced.changes.len(), 1, "{:?}", synced.changes);
        assert!(
            synced.changes[0].starts_with("sync 2 at 2026-03-14T13:05:00Z: "),
            "{:?}",
            synced.changes
        );
        let app = world.app("argocd", "shop").expect("the Application");
        assert_eq!(
            world
                .apps_of(&RolloutTrack::new("team", "web", false))
                .map(|a| a.name.as_str())
                .collect::<Vec<_>>(),
            [app.name.as_str()]
        );
    }

    #[test]
    fn the_apps_of_a_rollout_are_the_apps_that_manage_it() {
        let mut world = World::default();
        let mut tracked = RolloutTrack::new("team", "r", false);
        tracked.tracked_by = Some("by-id".into());
        let tracks = [
            RolloutTrack::new("team", "r", false),
            tracked,
            RolloutTrack::new("team", "s", false),
        ];
        let check = |world: &World, step: &str, want: &[&[&str]]| {
            for (track, want) in tracks.iter().zip(want) {
                let got: Vec<&str> = world.apps_of(track).map(|a| a.name.as_str()).collect();
                let scan: Vec<&str> = world
                    .apps
                    .values()
                    .filter(|a| {
                        a.manages(&track.namespace, &track.name, track.tracked_by.as_deref())
                    })
                    .map(|a| a.name.as_str())
                    .collect();
                assert_eq!(got, scan, "{step}: {}", track.name);
                assert_eq!(got, *want, "{step}: {}", track.name);
            }
        };
        app(&mut world, 1, "argocd", "one", Some(&[("team", "r")]));
        app(
            &mut world,
            2,
            "argocd",
            "both",
            Some(&[("team", "s"), ("team", "r")]),
        );
        app(&mut world, 3, "other", "by-id", Some(&[]));
        app(
            &mut world,
            4,
            "argocd",
            "elsewhere",
            Some(&[("team2", "r")]),
        );
        check(
            &world,
            "listed",
            &[&["both", "one"], &["both", "one", "by-id"], &["both"]],
        );
        // An Application that stops listing a Rollout no longer manages it.
        app(&mut world, 5, "argocd", "one", Some(&[("team", "s")]));
        check(
            &world,
            "relisted",
            &[&["both"], &["both", "by-id"], &["both", "one"]],
        );
        // A status refresh that lists the same rollouts: indexed as it was.
        app(&mut world, 5, "argocd", "one", Some(&[("team", "s")]));
        app(
            &mut world,
            5,
            "argocd",
            "both",
            Some(&[("team", "s"), ("team", "r")]),
        );
        check(
            &world,
            "refreshed",
            &[&["both"], &["both", "by-id"], &["both", "one"]],
        );
        // Listing a rollout and naming it by tracking id: once.
        app(&mut world, 6, "other", "by-id", Some(&[("team", "r")]));
        check(
            &world,
            "both ways",
            &[&["both", "by-id"], &["both", "by-id"], &["both", "one"]],
        );
        app(&mut world, 7, "argocd", "both", None);
        app(&mut world, 8, "other", "by-id", None);
        check(&world, "deleted", &[&[], &[], &["one"]]);
        app(&mut world, 9, "argocd", "one", None);
        app(&mut world, 10, "argocd", "elsewhere", None);
        assert!(
            world.listing.is_empty() && world.named.is_empty(),
            "{world:?}"
        );
    }

    #[test]
    fn a_pod_named_after_a_replicaset_is_of_its_revision() {
        // ReplicaSets whose names hold dashes, and one a prefix of another.
        let track = track_with(&[
            ("r", Some("h0")),
            ("r-h1", Some("h1")),
            ("r-h1-x", Some("hx")),
            ("r-h2", None),
        ]);
        assert!(has_revision(&track, "hx"), "the fixture has revisions");
        // By definition: the ReplicaSet whose name, a dash and a suffix without one, is the
        // pod's name.
        let by_definition = |pod: &str| {
            track
                .replicasets()
                .values()
                .filter(|rs| {
                    pod.strip_prefix(rs.name.as_str())
                        .and_then(|rest| rest.strip_prefix('-'))
                        .is_some_and(|suffix| !suffix.contains('-'))
                })
                .find_map(|rs| rs.hash.as_deref())
        };
        let names = [
            "r-h1-abc",
            "r-h1-x-abc",
            "r-h1-x",
            "r-abc",
            "r-h2-abc",
            "r-h1-",
            "r-h1--",
            "r-",
            "-",
            "",
            "r",
            "r-h1",
            "q-h1-abc",
            "r-h1-abc-def",
        ];
        for name in names {
            assert_eq!(revision(&track, name, None), by_definition(name), "{name}");
        }
        assert_eq!(revision(&track, "r-h1-x-abc", None), Some("hx"));
        assert_eq!(revision(&track, "r-h1-abc", None), Some("h1"));
        assert_eq!(revision(&track, "r-h2-abc", None), None);
    }

    #[test]
    fn a_rollout_says_which_replicaset_names_it_may_hold() {
        use crate::model::rollout::name_bits;
        let names: Vec<String> = (0..8).map(|i| format!("r-h{i}")).collect();
        let named: Vec<(&str, Option<&str>)> =
            names.iter().map(|n| (n.as_str(), Some("h"))).collect();
        let mut track = track_with(&named);
        let held = |track: &RolloutTrack, name: &str| track.may_hold_replicaset(name_bits(name));
        for name in &names {
            assert!(held(&track, name), "{name}");
        }
        // Others are not, but for a rare collision.
        let others = (0..1000)
            .filter(|i| held(&track, &format!("q-{i}")))
            .count();
        assert!(others < 50, "{others} of 1000 names not held pass");
        // Deleted, all: the oldest are forgotten, and then not held.
        for (i, name) in names.iter().enumerate() {
            let view: ReplicaSetView = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns",
                    "ownerReferences": [{"kind": "Rollout", "name": "r", "uid": "u"}]},
                "spec": {"replicas": 0}
            }))
            .unwrap_or_default();
            let pos = At {
                file: 0,
                seq: 100 + i as u64,
                at: Timestamp(0),
            };
            track.observe_replicaset(&view, &[], pos, true, false);
        }
        let kept: Vec<&str> = track.replicasets().keys().map(|k| k.as_str()).collect();
        assert!(!kept.is_empty() && kept.len() < names.len(), "{kept:?}");
        for name in &names {
            assert_eq!(held(&track, name), kept.contains(&name.as_str()), "{name}");
        }
    }

    #[test]
    fn of_revision_says_what_revision_says() {
        let tracks = [
            track_with(&[("r-h1", Some("h1")), ("r-h2", Some("h2")), ("r-x", None)]),
            track_with(&[("r-h2", Some("h2"))]),
            track_with(&[]),
        ];
        assert!(has_revision(&tracks[0], "h1"), "the fixture has revisions");
        let hashes = [None, Some("h1"), Some("h2"), Some("h3")];
        let owners = [None, Some("r-h1"), Some("r-h2"), Some("r-x"), Some("gone")];
        let names = ["r-h1-abc", "r-h2-x", "r-h2-x-y", "other", "r-x-q"];
        let mut cases = 0;
        let mut true_cases = 0;
        for track in &tracks {
            for name in names {
                for with_pod in [false, true] {
                    for label in hashes {
                        for owner in owners {
                            let pod = PodObj {
                                hash: label.map(Str::new),
                                labels: None,
                                owner: owner.map(Str::new),
                                ready: true,
                                ready_since: None,
                                images: Vec::new(),
                                trouble: None,
                                pos: At {
                                    file: 0,
                                    seq: 0,
                                    at: Timestamp(0),
                                },
                            };
                            let pod = with_pod.then_some(&pod);
                            for hash in ["h1", "h2", "h3"] {
                                let want = revision(track, name, pod) == Some(hash);
                                let got =
                                    of_revision(track, name, pod, hash, has_revision(track, hash));
                                assert_eq!(
                                    got,
                                    want,
                                    "pod {name} {pod:?}, hash {hash}, replicasets {:?}",
                                    track.replicasets.keys().collect::<Vec<_>>()
                                );
                                cases += 1;
                                true_cases += usize::from(want);
                            }
                        }
                    }
                }
            }
        }
        assert!(
            true_cases > 20 && true_cases < cases / 2,
            "{true_cases} of {cases}"
        );
    }
}
