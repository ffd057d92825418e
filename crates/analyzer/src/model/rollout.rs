//! The per-rollout state machine: consecutive observations of a Rollout become domain
//! transitions (a revision change and its class, a step jump) that detectors read.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use rf_format::{Kind, Timestamp};
use serde_json::Value;

use crate::base::{At, Str};
use crate::input::view::{ReplicaSetView, RolloutView, Step};
use crate::report::finding::{Evidence, Subject};
use crate::report::timeline::{
    MAX_TIMELINE_ENTRIES, ReplicaSetState, Role, TimelineEntry, TrafficEntry,
};

/// Deleted ReplicaSets remembered per rollout (for diffs against a revision just removed).
const KEEP_DELETED: usize = 4;

/// Template comparisons kept per rollout.
const KEEP_COMPARED: usize = 4;

/// Revision changes kept waiting for their templates per rollout, here and by the detectors
/// that compare them.
pub(crate) const KEEP_PENDING: usize = 16;
const KEEP_UNCOMPARED: usize = KEEP_PENDING;

/// Moments a rollout became Healthy on one revision remembered per rollout: the latest ones (a
/// finding older than all of them is still moved past by the oldest kept).
pub(crate) const KEEP_SETTLES: usize = 1024;

/// Restarts of the canary remembered per rollout: the first and the most recent ones.
pub(crate) const KEEP_RESTARTS: usize = 16;

/// One observation of a Rollout: where and by whom it was observed, and its state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Snapshot {
    pub pos: At,
    pub actor: Option<Str>,
    pub state: RolloutState,
    /// Of an aborted rollout: the last writer of its status other than the controller, and
    /// when (`managedFields`, to the second).
    pub status_user: Option<(i64, Str)>,
}

impl std::ops::Deref for Snapshot {
    type Target = RolloutState;

    fn deref(&self) -> &RolloutState {
        &self.state
    }
}

/// The phase of a status that has none (Argo Rollouts before v1.0), from its conditions, pauses
/// and replica counts, in the order Argo CD's health check for such a Rollout reads them:
/// `Degraded` (an invalid spec, an abort, the progress deadline exceeded), `Paused`,
/// `Progressing` (a generation not yet observed, replicas not yet updated or available, the
/// active Service not yet switched, the steps not yet done) or `Healthy`.
fn legacy_phase(
    generation: Option<i64>,
    spec_replicas: Option<i64>,
    spec_paused: bool,
    blue_green: bool,
    st: &crate::input::view::RolloutStatus,
    current: &str,
    stable: Option<&str>,
) -> &'static str {
    let observed = st
        .observed_generation
        .as_deref()
        .and_then(|g| g.parse::<i64>().ok());
    if st.observed_generation.is_none() || (observed.is_some() && observed != generation) {
        return "Progressing";
    }
    let degraded = st.conditions.iter().flatten().any(|c| {
        c.type_ == "InvalidSpec"
            || (c.type_ == "Progressing"
                && matches!(
                    c.reason.as_deref(),
                    Some("RolloutAborted" | "ProgressDeadlineExceeded")
                ))
    });
    if degraded {
        return "Degraded";
    }
    if spec_paused || st.pause_conditions.as_ref().is_some_and(|p| !p.is_empty()) {
        return "Paused";
    }
    let desired = spec_replicas.unwrap_or(1);
    let replicas = st.replicas.unwrap_or(0);
    let updated = st.updated_replicas.unwrap_or(0);
    let available = st.available_replicas.unwrap_or(0);
    if updated < desired || available < updated {
        return "Progressing";
    }
    let done = if blue_green {
        let active = st
            .blue_green
            .as_ref()
            .and_then(|b| b.active_selector.as_deref());
        active == Some(current) && stable.is_none_or(|s| s == current)
    } else {
        replicas <= updated && stable == Some(current)
    };
    if done { "Healthy" } else { "Progressing" }
}

/// The fields of a Rollout that the state machine follows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RolloutState {
    pub generation: Option<i64>,
    pub observed_generation: Option<Str>,
    pub pod_hash: Option<Str>,
    pub step_hash: Option<Str>,
    pub step_index: i64,
    pub steps_len: usize,
    pub stable_rs: Option<Str>,
    pub phase: Option<Str>,
    pub message: Option<Str>,
    pub pause_reasons: Vec<Str>,
    pub controller_pause: bool,
    pub abort: bool,
    pub promote_full: bool,
    pub spec_paused: bool,
    pub progressing_reason: Option<Str>,
    pub canary_weight: Option<i64>,
    pub revision: Option<Str>,
}

impl Snapshot {
    /// The state of `v`, whose strings it takes: the view is read once, and nothing reads
    /// its status, annotations or managers after this.
    pub fn from_view(
        v: &mut RolloutView,
        pos: At,
        record_actor: Option<&str>,
        spec_changed: bool,
    ) -> Self {
        let steps_len = v.steps().len();
        let canary_weight = v.canary_weight();
        let st = &mut v.status;
        // `status.stableRS` when present (even empty, which then reads as none), else
        // `status.canary.stableRS`.
        let stable_rs = match st.stable_rs.take() {
            Some(s) => Some(s),
            None => st.canary.as_mut().and_then(|c| c.stable_rs.take()),
        }
        .filter(|s| !s.is_empty());
        // A controller before v1.0 writes no phase: it is derived as Argo CD's health check
        // does for such a status (read before the strings below are taken).
        let derived_phase = match (&st.phase, &st.current_pod_hash) {
            (None, Some(hash)) if !hash.is_empty() => Some(Str::new(legacy_phase(
                v.metadata.generation,
                v.spec.replicas,
                v.spec.paused.unwrap_or(false),
                v.spec.strategy.blue_green.is_some(),
                st,
                hash,
                stable_rs.as_deref(),
            ))),
            _ => None,
        };
        let progressing_reason = st
            .conditions
            .iter_mut()
            .flatten()
            .find(|c| c.type_ == "Progressing")
            .and_then(|c| c.reason.take());
        let state = RolloutState {
            generation: v.metadata.generation,
            observed_generation: st.observed_generation.take(),
            pod_hash: st.current_pod_hash.take().filter(|h| !h.is_empty()),
            step_hash: st.current_step_hash.take(),
            step_index: st.current_step_index.unwrap_or(0),
            steps_len,
            stable_rs,
            phase: st.phase.take().or(derived_phase),
            message: st.message.take(),
            pause_reasons: st
                .pause_conditions
                .iter_mut()
                .flatten()
                .map(|p| std::mem::take(&mut p.reason))
                .collect(),
            controller_pause: st.controller_pause.unwrap_or(false),
            abort: st.abort.unwrap_or(false),
            promote_full: st.promote_full.unwrap_or(false),
            spec_paused: v.spec.paused.unwrap_or(false),
            progressing_reason,
            canary_weight,
            revision: v
                .metadata
                .annotations
                .remove("rollout.argoproj.io/revision"),
        };
        let status_user = if state.abort {
            v.metadata.managed_fields.status_user.take()
        } else {
            None
        };
        let actor = match record_actor {
            Some(a) => Some(Str::new(a)),
            None => v.metadata.take_last_manager(!spec_changed),
        };
        Snapshot {
            pos,
            actor,
            state,
            status_user,
        }
    }

    /// Reasons of `status.pauseConditions`, plus `spec.paused` when set.
    pub fn pause_words(&self) -> Vec<Str> {
        let mut pause = self.pause_reasons.clone();
        if self.spec_paused {
            pause.push(Str::new("spec.paused"));
        }
        pause
    }

    /// True when paused at a canary pause step.
    /// Paused at a pause the strategy plans: a canary's pause step (`CanaryPauseStep`), or a
    /// blue-green preview waiting to be promoted (`BlueGreenPause`, at step index 0).
    pub fn at_pause_step(&self) -> bool {
        self.pause_reasons
            .iter()
            .any(|r| r == "CanaryPauseStep" || r == "BlueGreenPause")
    }

    /// Same state apart from where and by whom it was observed.
    fn same_state(&self, other: &Snapshot) -> bool {
        self.state == other.state
    }
}

/// What one revision (pod-template hash) reached while it was the rollout's current one.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Progress {
    /// The highest step index reached, and where.
    pub max_index: i64,
    pub max_at: Option<At>,
    /// Pause steps reached (a `CanaryPauseStep` condition seen at that index), and when first.
    pub pauses: BTreeMap<i64, At>,
}

impl Progress {
    pub fn progressed(&self) -> bool {
        self.max_index > 0 || !self.pauses.is_empty()
    }

    /// The last pause reached, by step index.
    pub fn last_pause(&self) -> Option<(i64, At)> {
        self.pauses.iter().next_back().map(|(i, at)| (*i, *at))
    }
}

/// Why `status.currentPodHash` changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RevisionClass {
    /// An in-progress canary that had progressed (past its first step, or to a pause) was
    /// replaced and its steps restarted: the restart of `rerender-restart` and
    /// `restart-churn`, and of `wait --max-restarts`.
    Restart,
    /// An in-progress canary that had not progressed yet was replaced.
    Superseded,
    /// The previous revision was complete (stable): an ordinary new release.
    NewRelease,
    /// Back to the stable revision: the index jumps to the end, nothing restarts.
    RollbackToStable,
    /// The previous canary had been aborted.
    AfterAbort,
}

/// A spec change of the rollout (a `metadata.generation` bump), or of the Deployment whose
/// template it runs (`spec.workloadRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SpecChange {
    pub pos: At,
    /// The `metadata.generation` of the object changed.
    pub generation: Option<i64>,
    pub actor: Option<Str>,
    /// The Deployment the change was made to; `None`: the rollout itself.
    pub deployment: Option<Str>,
    pub template_changed: bool,
    /// The template changed, and only in annotations.
    pub only_annotations: bool,
    /// The paths the template change touched (at most a few).
    pub paths: Vec<String>,
}

impl SpecChange {
    /// `generation 4`, or `generation 4 of Deployment checkout-api` (`a spec change` when the
    /// generation is not known).
    pub fn generation_words(&self) -> String {
        let generation = self
            .generation
            .map_or_else(|| "a spec change".to_owned(), |g| format!("generation {g}"));
        match &self.deployment {
            Some(d) => format!("{generation} of Deployment {d}"),
            None => generation,
        }
    }

    /// `, by argocd-controller`, or nothing when the writer is not known.
    pub fn by_words(&self) -> String {
        self.actor
            .as_ref()
            .map(|a| format!(", by {a}"))
            .unwrap_or_default()
    }

    /// Evidence of the record of the change: the rollout's, or its Deployment's.
    pub fn evidence(&self, track: &RolloutTrack, detail: impl Into<String>) -> Evidence {
        match &self.deployment {
            Some(d) => Evidence::of(
                self.pos,
                Subject::new(rf_format::api::DEPLOYMENT.newest(), &track.namespace, d),
                detail,
            ),
            None => track.evidence(self.pos, detail),
        }
    }
}

/// A change of `status.currentPodHash`.
#[derive(Clone, Debug)]
pub(crate) struct RevisionChange {
    pub from: Str,
    pub to: Str,
    pub class: RevisionClass,
    /// What the old revision reached.
    pub old_progress: Progress,
    /// The template change that brought the new revision, and the one before it.
    pub render: Option<SpecChange>,
    pub previous_render: Option<SpecChange>,
    /// True when the index dropped in a later write than the hash change (seen in coalesced
    /// sources such as kubectl watch output): the change itself was reported already.
    pub deferred: bool,
}

/// A restart of the canary: when, and from which pod-template hash to which.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Restart {
    pub pos: At,
    pub from: Str,
    pub to: Str,
}

impl Restart {
    fn of(pos: At, change: &RevisionChange) -> Restart {
        Restart {
            pos,
            from: change.from.clone(),
            to: change.to.clone(),
        }
    }
}

/// A forward move of the step index that skipped pause steps never reached.
#[derive(Clone, Debug)]
pub(crate) struct StepJump {
    pub from: i64,
    pub to: i64,
    pub skipped_pauses: Vec<i64>,
}

/// What one observation changed, for detectors.
#[derive(Debug)]
pub(crate) struct Transition<'a> {
    pub track: &'a RolloutTrack,
    pub prev: &'a Snapshot,
    pub cur: &'a Snapshot,
    pub revision: Option<&'a RevisionChange>,
    pub jump: Option<&'a StepJump>,
}

/// A pod template kept as its JSON text (a few hundred bytes to a few kilobytes; built it
/// takes several times that), compared as text ([`crate::model::diff::diff_json`]): only where two
/// differ are their values built. Only text that is JSON is kept. Cloning shares the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template(Arc<str>);

impl Template {
    /// The template of `raw`; `None` when it is not JSON.
    fn new(raw: &str) -> Option<Template> {
        crate::input::skim::is_json(raw).then(|| Template(Arc::from(raw)))
    }

    /// The template of `raw`, and the string values of its `metadata.labels` (the pod labels),
    /// read without building the parsed template; `None` when it does not parse.
    fn with_labels(raw: &str) -> Option<(Template, BTreeMap<String, String>)> {
        let labels = match crate::input::skim::template_labels(raw) {
            Some(labels) => labels,
            None => crate::model::diff::string_values(
                &serde_json::from_str::<Value>(raw).ok()?,
                "/metadata/labels",
            ),
        };
        Some((Template(Arc::from(raw)), labels))
    }

    pub fn text(&self) -> &str {
        &self.0
    }
}

/// True when `status.observedGeneration` (a string) names `metadata.generation`, both absent
/// included: the comparison of `generation.to_string()` with it, without allocating (this runs
/// for every Rollout record).
fn generation_observed(generation: Option<i64>, observed: Option<&str>) -> bool {
    use std::io::Write;
    match (generation, observed) {
        (None, None) => true,
        (Some(g), Some(o)) => {
            let mut buf = [0u8; 24];
            let mut w = &mut buf[..];
            if write!(w, "{g}").is_err() {
                return false;
            }
            let len = 24 - w.len();
            buf[..len] == *o.as_bytes()
        }
        _ => false,
    }
}

/// One ReplicaSet of a rollout, as last seen.
#[derive(Clone, Debug)]
pub(crate) struct RsTrack {
    pub name: Str,
    pub hash: Option<Str>,
    pub owner_uid: Option<Str>,
    pub created: Option<At>,
    pub last: At,
    pub replicas: i64,
    pub status_replicas: i64,
    pub ready: i64,
    pub deadline: Option<Str>,
    pub deleted: bool,
    /// The latest pod template, for diffs, and a digest of its bytes (parsed again only when
    /// they change: ephemeral metadata can relabel a ReplicaSet's template).
    pub template: Option<Template>,
    template_digest: u64,
    /// When it stopped being the new or the stable one.
    pub other_since: Option<At>,
    /// It has been the stable one: the previous stable of a promotion is what the controller
    /// keeps up for `scaleDownDelaySeconds`.
    pub was_stable: bool,
    /// The labels of its pods (`spec.template.metadata.labels`).
    pub pod_labels: BTreeMap<String, String>,
    /// Since when it has had ready replicas.
    pub ready_since: Option<Timestamp>,
    /// Its `rollout.argoproj.io/revision` (a rollback gives an old ReplicaSet a new one).
    pub revision: Option<i64>,
    /// Its `metadata.creationTimestamp`: when its revision was first made.
    pub created_at: Option<Timestamp>,
    /// It was first seen in the recording's first list: made before the recording began.
    pub listed_initially: bool,
}

impl RsTrack {
    pub fn template(&self) -> Option<&Template> {
        self.template.as_ref()
    }
}

/// How the controller scales down a ReplicaSet that is no longer the new, the stable or a
/// referenced one (argo-rollouts' `scaleDownDelaySeconds`, defaulted as its controller does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScaleDown {
    /// At once: a canary without traffic routing.
    Immediate,
    /// At the `scale-down-deadline` it writes, this many seconds after the ReplicaSet was
    /// replaced: blue-green, and a canary with traffic routing (default 30).
    After(i64),
    /// Never: a blue-green rollout with `scaleDownDelaySeconds: 0` keeps old ReplicaSets up.
    Kept,
}

/// The controller's default `scaleDownDelaySeconds`.
const DEFAULT_SCALE_DOWN_DELAY_SECONDS: i64 = 30;

impl ScaleDown {
    /// `blue_green`: the blue-green strategy's `scaleDownDelaySeconds` (set or not), when the
    /// strategy is blue-green; `routed_canary` likewise for a canary with traffic routing.
    fn of(blue_green: Option<Option<i64>>, routed_canary: Option<Option<i64>>) -> ScaleDown {
        match (blue_green, routed_canary) {
            (Some(delay), _) => match delay.unwrap_or(DEFAULT_SCALE_DOWN_DELAY_SECONDS) {
                d if d <= 0 => ScaleDown::Kept,
                d => ScaleDown::After(d),
            },
            (None, Some(delay)) => match delay.unwrap_or(DEFAULT_SCALE_DOWN_DELAY_SECONDS) {
                d if d <= 0 => ScaleDown::Immediate,
                d => ScaleDown::After(d),
            },
            (None, None) => ScaleDown::Immediate,
        }
    }
}

/// Two bits of 128 standing for a ReplicaSet's name, for [`RolloutTrack::may_hold_replicaset`].
pub(crate) fn name_bits(name: &str) -> u128 {
    let h = crate::base::digest(name.as_bytes());
    (1 << (h & 127)) | (1 << ((h >> 7) & 127))
}

/// Everything known about one rollout.
#[derive(Debug)]
pub(crate) struct RolloutTrack {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) uid: Str,
    pub(super) last: Option<Snapshot>,
    pub(super) steps: Vec<Step>,
    pub(super) progress: BTreeMap<Str, Progress>,
    pub(super) template_changes: VecDeque<SpecChange>,
    last_template: Option<Template>,
    /// Templates from the rollout's own spec, by hash, when status and spec agreed.
    pub(super) spec_templates: BTreeMap<Str, Template>,
    pub(super) replicasets: BTreeMap<Str, RsTrack>,
    /// The [`name_bits`] of every ReplicaSet name in `replicasets`, or-ed: a name whose bits
    /// are not all here is not there, answered without a lookup (a deleted pod is matched to
    /// its rollout by name, against every rollout of its namespace).
    replicaset_names: u128,
    /// Restarts of the canary, in order: the first and the latest, [`KEEP_RESTARTS`] in all
    /// (the evidence of `restart-churn`, so only what that evidence names is kept, not the
    /// renders of each change). A rollout restarting all day holds no more than that.
    pub(super) restarts: Vec<Restart>,
    /// How many restarts there were, kept or not.
    pub(super) restarts_total: usize,
    /// When each pod-template hash last stopped being the current one.
    pub(super) superseded_at: BTreeMap<Str, At>,
    pub(super) gap_pending: bool,
    pub(super) deleted: bool,
    /// Its first record was in the recording's first list: it was there before.
    pub(super) listed_initially: bool,
    pub(super) timeline: Vec<TimelineEntry>,
    pub(super) timeline_truncated: bool,
    pub(super) keep_timeline: bool,
    pub(super) last_revision_change: Option<RevisionChange>,
    pub(super) last_jump: Option<StepJump>,
    /// `spec.strategy.canary.canaryService` / `stableService`; of a blue-green rollout,
    /// `spec.strategy.blueGreen.previewService` / `activeService`.
    pub(super) canary_service: Option<String>,
    pub(super) stable_service: Option<String>,
    /// The strategy of its last record, which the fields read from it (steps, Services,
    /// routers, role labels, scale-down) follow: an unchanged one is the same value.
    strategy: Option<Arc<crate::input::view::Strategy>>,
    /// Changes whenever what [`Routes`](crate::model::routes::Routes) indexes the rollout under
    /// or how a Service routes to it may have changed (its live ReplicaSets' pod labels, its
    /// canary and stable Services, their role labels): unique across tracks, so that what is
    /// worked out under a stamp holds while the stamp does.
    routes_stamp: u64,
    /// `spec.strategy.canary.trafficRouting` is set.
    pub(super) traffic_routing: bool,
    /// `spec.strategy.blueGreen` is set.
    pub(super) blue_green: bool,
    /// How the controller scales down a ReplicaSet it replaced.
    pub(super) scale_down: ScaleDown,
    /// `spec.strategy.canary.dynamicStableScale`.
    pub(super) dynamic_stable_scale: bool,
    /// `abortScaleDownDelaySeconds` of its strategy, when set.
    pub(super) abort_scale_down: Option<i64>,
    /// `spec.progressDeadlineSeconds` (when set) and `spec.progressDeadlineAbort`.
    pub(super) progress_deadline: (Option<i64>, bool),
    /// `spec.strategy.canary.canaryMetadata.labels` / `stableMetadata.labels`: put on the pods
    /// of that role by the controller.
    pub(super) canary_labels: BTreeMap<String, String>,
    pub(super) stable_labels: BTreeMap<String, String>,
    /// `spec.revisionHistoryLimit`.
    pub(super) revision_history_limit: Option<i64>,
    /// `spec.workloadRef`, when it names a Deployment.
    pub(super) workload: Option<Workload>,
    /// `trafficRouting.nginx`, when it is NGINX.
    pub(super) nginx: Option<Nginx>,
    /// The VirtualServices (Istio) and HTTPRoutes (the Gateway API plugin) whose weights the
    /// controller sets.
    pub(super) splits: Splits,
    /// `status.canary.weights.canary.podTemplateHash`: the revision the controller believes
    /// the canary weight goes to.
    pub(super) weights_canary_hash: Option<Str>,
    /// The Argo CD Application that tracks it (tracking-id annotation or instance label), as
    /// of its last record: set by the analyzer, which indexes rollouts by it.
    pub(super) tracked_by: Option<String>,
    /// The Flux object that renders it (its `helm.toolkit.fluxcd.io/name` or
    /// `kustomize.toolkit.fluxcd.io/name` label): its kind and name.
    pub(super) flux: Option<(&'static str, Str)>,
    /// Container images of the last template seen (containers and init containers).
    pub(super) images: Vec<String>,
    /// The ReplicaSet of the last `observe_replicaset`, and whether that record deleted it.
    pub(super) last_rs_change: Option<(Str, bool)>,
    /// Endpoint membership of the Services routing to it, per change (with timelines on).
    pub(super) traffic: Vec<crate::report::timeline::TrafficEntry>,
    traffic_last: BTreeMap<String, BTreeMap<String, Vec<String>>>,
    /// A hash change away from a canary that had progressed, whose index has not dropped yet.
    pending_reset: Option<RevisionChange>,
    /// The moments it became Healthy on one revision, in order, the latest [`KEEP_SETTLES`].
    pub(super) settles: Vec<crate::report::end::Settled>,
    /// `status.stableRS` when the current revision became the current one.
    stable_when_current: Option<Str>,
    /// The latest comparisons of two templates ([`KEEP_COMPARED`]), made as soon as a revision
    /// change's templates are both known: every detector that compares a revision change's
    /// templates asks for the same one in turn, and reads it here.
    compared: VecDeque<(Template, Template, Vec<crate::model::diff::Change>)>,
    /// Revision changes (from, to) whose templates are not both known yet, the latest
    /// [`KEEP_UNCOMPARED`].
    uncompared: VecDeque<(Str, Str)>,
}

/// The annotation prefix of the NGINX ingress controller, unless a rollout names another.
pub(crate) const NGINX_ANNOTATION_PREFIX: &str = "nginx.ingress.kubernetes.io";

/// A canary's NGINX traffic routing: the Ingresses it makes canary Ingresses of.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Nginx {
    pub stable_ingresses: Vec<String>,
    /// The prefix of the canary annotations (`nginx.ingress.kubernetes.io`).
    pub prefix: String,
}

impl Nginx {
    /// The name the controller gives the canary Ingress of `stable` for rollout `rollout`
    /// (`<rollout>-<stable>-canary`, cut to 253 characters as Kubernetes names are).
    pub fn canary_ingress(rollout: &str, stable: &str) -> String {
        const SUFFIX: &str = "-canary";
        let mut prefix = format!("{rollout}-{stable}");
        if prefix.len() > 253 - SUFFIX.len() {
            let mut cut = 253 - SUFFIX.len();
            while !prefix.is_char_boundary(cut) {
                cut -= 1;
            }
            prefix.truncate(cut);
        }
        prefix + SUFFIX
    }
}

/// One object whose backend weights the controller sets: VirtualService or HTTPRoute
/// `namespace`/`name`, and the rules it sets them on (by name; none: the controller's default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub router: crate::model::world::Router,
    pub namespace: String,
    pub name: String,
    pub rules: Vec<String>,
}

/// A canary's Istio and Gateway API traffic routing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Splits {
    pub objects: Vec<Split>,
    /// The DestinationRule subsets that stand for the canary and the stable revision.
    pub canary_subset: Option<String>,
    pub stable_subset: Option<String>,
}

impl Splits {
    /// Reads `trafficRouting`'s Istio and Gateway API parts, for a rollout of namespace `ns`.
    fn of(t: &crate::input::view::TrafficRouting, ns: &str) -> Splits {
        use crate::model::world::Router;
        let mut out = Splits::default();
        if let Some(istio) = &t.istio {
            for vs in istio
                .virtual_service
                .iter()
                .chain(istio.virtual_services.iter().flatten())
            {
                // `name` or `name.namespace` (the namespace is the last part; a cluster
                // domain suffix is dropped).
                let full = vs.name.trim_end_matches(".cluster.local");
                let full = full.strip_suffix(".svc").unwrap_or(full);
                let (name, namespace) = match full.rsplit_once('.') {
                    Some((n, space)) if !n.is_empty() && !space.is_empty() => (n, space),
                    _ => (full, ns),
                };
                if name.is_empty() {
                    continue;
                }
                out.objects.push(Split {
                    router: Router::VirtualService,
                    namespace: namespace.to_owned(),
                    name: name.to_owned(),
                    rules: vs.routes.iter().flatten().map(|r| r.to_string()).collect(),
                });
            }
            if let Some(dr) = &istio.destination_rule {
                let some =
                    |s: &Option<Str>| s.as_deref().filter(|s| !s.is_empty()).map(str::to_owned);
                out.canary_subset = some(&dr.canary_subset_name);
                out.stable_subset = some(&dr.stable_subset_name);
            }
        }
        if let Some(g) = t.plugins.as_ref().and_then(|p| p.gateway_api.as_ref()) {
            let namespace = g
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(ns);
            for name in g
                .http_route
                .iter()
                .chain(g.http_routes.iter().flatten().map(|r| &r.name))
            {
                if !name.is_empty() && !out.objects.iter().any(|o| o.name == name.as_str()) {
                    out.objects.push(Split {
                        router: Router::HttpRoute,
                        namespace: namespace.to_owned(),
                        name: name.to_string(),
                        rules: Vec::new(),
                    });
                }
            }
        }
        out
    }
}

/// The Deployment a rollout takes its pod template from (`spec.workloadRef`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Workload {
    pub deployment: Str,
    /// `scaleDown`: `never` (also when not set), `onsuccess` or `progressively`.
    pub scale_down: Option<Str>,
}

/// The role of the ReplicaSet of pod-template hash `hash` in the rollout's state `last`.
fn role(last: Option<&Snapshot>, hash: Option<&str>) -> Role {
    let Some(last) = last else {
        return Role::Other;
    };
    match hash {
        Some(h) if last.pod_hash.as_deref() == Some(h) => Role::New,
        Some(h) if last.stable_rs.as_deref() == Some(h) => Role::Stable,
        _ => Role::Other,
    }
}

impl RolloutTrack {
    pub fn new(namespace: &str, name: &str, keep_timeline: bool) -> Self {
        RolloutTrack {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
            uid: Str::default(),
            last: None,
            steps: Vec::new(),
            progress: BTreeMap::new(),
            template_changes: VecDeque::new(),
            last_template: None,
            spec_templates: BTreeMap::new(),
            replicasets: BTreeMap::new(),
            replicaset_names: 0,
            restarts: Vec::new(),
            restarts_total: 0,
            superseded_at: BTreeMap::new(),
            gap_pending: false,
            deleted: false,
            listed_initially: false,
            timeline: Vec::new(),
            timeline_truncated: false,
            keep_timeline,
            last_revision_change: None,
            last_jump: None,
            canary_service: None,
            stable_service: None,
            strategy: None,
            routes_stamp: crate::model::stamp(),
            traffic_routing: false,
            blue_green: false,
            scale_down: ScaleDown::Immediate,
            dynamic_stable_scale: false,
            abort_scale_down: None,
            progress_deadline: (None, false),
            canary_labels: BTreeMap::new(),
            stable_labels: BTreeMap::new(),
            revision_history_limit: None,
            workload: None,
            nginx: None,
            splits: Splits::default(),
            weights_canary_hash: None,
            tracked_by: None,
            flux: None,
            images: Vec::new(),
            last_rs_change: None,
            traffic: Vec::new(),
            traffic_last: BTreeMap::new(),
            pending_reset: None,
            settles: Vec::new(),
            stable_when_current: None,
            compared: VecDeque::new(),
            uncompared: VecDeque::new(),
        }
    }

    // What the detectors and the engine read of a track. The model's own files (traffic,
    // routes, revisions, world) read its fields.

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// `metadata.uid` of its last record; empty when not known.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// Its last observation.
    pub fn last(&self) -> Option<&Snapshot> {
        self.last.as_ref()
    }

    /// `spec.strategy.canary.steps` of its last record.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// What revision `hash` reached.
    pub fn progress(&self, hash: &str) -> Option<&Progress> {
        self.progress.get(hash)
    }

    /// Its latest spec changes, oldest first.
    pub fn template_changes(&self) -> &VecDeque<SpecChange> {
        &self.template_changes
    }

    /// Its ReplicaSets by name, deleted ones among them (for diffs).
    pub fn replicasets(&self) -> &BTreeMap<Str, RsTrack> {
        &self.replicasets
    }

    /// Restarts of the canary, in order: the first and the latest, [`KEEP_RESTARTS`] in all.
    pub fn restarts(&self) -> &[Restart] {
        &self.restarts
    }

    /// How many restarts there were, kept or not.
    pub fn restarts_total(&self) -> usize {
        self.restarts_total
    }

    /// When pod-template hash `hash` last stopped being the current one.
    pub fn superseded_at(&self, hash: &str) -> Option<&At> {
        self.superseded_at.get(hash)
    }

    /// `spec.strategy.canary.canaryService`, or a blue-green rollout's `previewService`.
    pub fn canary_service(&self) -> Option<&str> {
        self.canary_service.as_deref()
    }

    /// `spec.strategy.canary.stableService`, or a blue-green rollout's `activeService`.
    pub fn stable_service(&self) -> Option<&str> {
        self.stable_service.as_deref()
    }

    /// The labels `canaryMetadata` and `stableMetadata` put on the pods of each role.
    pub fn ephemeral_labels(&self) -> (&BTreeMap<String, String>, &BTreeMap<String, String>) {
        (&self.canary_labels, &self.stable_labels)
    }

    /// Its strategy is blue-green: no steps, one pause before promotion (`BlueGreenPause`).
    pub fn is_blue_green(&self) -> bool {
        self.blue_green
    }

    /// How the controller scales down a ReplicaSet it replaced.
    pub fn scale_down(&self) -> ScaleDown {
        self.scale_down
    }

    /// `spec.strategy.canary.dynamicStableScale`.
    pub fn dynamic_stable_scale(&self) -> bool {
        self.dynamic_stable_scale
    }

    /// `abortScaleDownDelaySeconds` of its strategy, when set (the controller's default is 30).
    pub fn abort_scale_down(&self) -> Option<i64> {
        self.abort_scale_down
    }

    /// `spec.progressDeadlineSeconds` (when set), and whether `progressDeadlineAbort` is on.
    pub fn progress_deadline(&self) -> (Option<i64>, bool) {
        self.progress_deadline
    }

    /// True when `spec.strategy.canary.trafficRouting` is set.
    pub fn traffic_routed(&self) -> bool {
        self.traffic_routing
    }

    /// `spec.revisionHistoryLimit`.
    pub fn revision_history_limit(&self) -> Option<i64> {
        self.revision_history_limit
    }

    /// Its NGINX traffic routing, if any.
    pub fn nginx(&self) -> Option<&Nginx> {
        self.nginx.as_ref()
    }

    /// The VirtualServices and HTTPRoutes whose weights the controller sets for it.
    pub fn splits(&self) -> &Splits {
        &self.splits
    }

    /// The revision the controller believes the canary weight goes to.
    pub fn weights_canary_hash(&self) -> Option<&str> {
        self.weights_canary_hash.as_deref()
    }

    /// The Deployment it takes its pod template from (`spec.workloadRef`), if any.
    pub fn workload(&self) -> Option<&Workload> {
        self.workload.as_ref()
    }

    /// True when no pod template has been seen yet (its own, or its Deployment's).
    pub fn lacks_template(&self) -> bool {
        self.last_template.is_none()
    }

    /// The Argo CD Application that tracks it, as of its last record.
    /// The Flux object that renders it: `HelmRelease` or `Kustomization`, and its name.
    pub fn flux(&self) -> Option<(&'static str, &str)> {
        self.flux.as_ref().map(|(k, n)| (*k, n.as_str()))
    }

    pub fn tracked_by(&self) -> Option<&str> {
        self.tracked_by.as_deref()
    }

    /// Sets the Application that tracks it; the one before.
    pub fn set_tracked_by(&mut self, app: Option<String>) -> Option<String> {
        std::mem::replace(&mut self.tracked_by, app)
    }

    /// Container images of the last template seen (containers and init containers).
    pub fn images(&self) -> &[String] {
        &self.images
    }

    /// The ReplicaSet of the last ReplicaSet record, and whether that record deleted it.
    pub fn last_rs_change(&self) -> Option<(&str, bool)> {
        self.last_rs_change
            .as_ref()
            .map(|(name, deleted)| (name.as_str(), *deleted))
    }

    /// The change of revision of its last transition, if it was one.
    pub fn last_revision_change(&self) -> Option<&RevisionChange> {
        self.last_revision_change.as_ref()
    }

    /// The step jump of its last transition, if it was one.
    pub fn last_jump(&self) -> Option<&StepJump> {
        self.last_jump.as_ref()
    }

    /// The recording has a gap: the next observation is not a successor of the last.
    pub fn mark_gap(&mut self) {
        self.gap_pending = true;
    }

    /// Its Rollout was deleted.
    pub fn mark_deleted(&mut self) {
        self.deleted = true;
    }

    /// Timeline entries kept.
    /// The pod labels of the last template seen (`spec.template.metadata.labels`, or its
    /// workloadRef Deployment's): they select the pods of that template's revision.
    pub fn template_labels(&self) -> BTreeMap<String, String> {
        /// Only `metadata.labels` of a template: serde passes over the rest without building it.
        #[derive(serde::Deserialize)]
        struct Labelled {
            metadata: Option<Metadata>,
        }
        #[derive(serde::Deserialize)]
        struct Metadata {
            labels: Option<BTreeMap<String, String>>,
        }
        self.last_template
            .as_ref()
            .and_then(|t| serde_json::from_str::<Labelled>(t.text()).ok())
            .and_then(|t| t.metadata?.labels)
            .unwrap_or_default()
    }

    /// True when its first record was in the recording's first list.
    pub fn listed_initially(&self) -> bool {
        self.listed_initially
    }

    /// Notes whether its first record, now, is in the recording's first list.
    pub fn note_listed_initially(&mut self, listed: bool) {
        self.listed_initially = listed;
    }

    pub fn is_deleted(&self) -> bool {
        self.deleted
    }

    pub fn timeline_len(&self) -> usize {
        self.timeline.len()
    }

    /// Its timeline, its traffic entries, and whether the timeline was cut short, taken out.
    pub fn take_timeline(&mut self) -> (Vec<TimelineEntry>, Vec<TrafficEntry>, bool) {
        (
            std::mem::take(&mut self.timeline),
            std::mem::take(&mut self.traffic),
            self.timeline_truncated,
        )
    }

    pub fn subject(&self) -> Subject {
        Subject::new(Kind::Rollout, &self.namespace, &self.name)
    }

    /// The name of the ReplicaSet with this hash: the one seen, or the controller's naming.
    pub fn rs_name(&self, hash: &str) -> String {
        self.rs_by_hash(hash)
            .map(|rs| &rs.name)
            .map_or_else(|| format!("{}-{}", self.name, hash), |n| n.to_string())
    }

    pub fn rs_by_hash(&self, hash: &str) -> Option<&RsTrack> {
        // Prefer a live one; a hash can be reused by a recreated RS.
        let mut found = None;
        for rs in self.replicasets.values() {
            if rs.hash.as_deref() == Some(hash) {
                if !rs.deleted {
                    return Some(rs);
                }
                found = Some(rs);
            }
        }
        found
    }

    /// The pod template of a revision, comparable with `other`'s: both from ReplicaSets when
    /// both exist (the API server defaults their fields the same way), else both from the
    /// rollout's spec.
    pub fn comparable_templates(
        &self,
        a: &str,
        b: &str,
    ) -> Option<(&Template, &Template, &'static str)> {
        let rs = |h: &str| self.rs_by_hash(h).and_then(RsTrack::template);
        if let (Some(x), Some(y)) = (rs(a), rs(b)) {
            return Some((x, y, "ReplicaSet templates"));
        }
        match (self.spec_templates.get(a), self.spec_templates.get(b)) {
            (Some(x), Some(y)) => Some((x, y, "Rollout spec templates")),
            _ => None,
        }
    }

    /// The differences between templates `a` and `b` ([`crate::model::diff::template_diff`]), or
    /// `None` when one does not parse: the comparison made when a revision change's templates
    /// became known ([`Self::compare_revisions`]), or made now.
    pub fn template_diff(
        &self,
        a: &Template,
        b: &Template,
    ) -> Option<Vec<crate::model::diff::Change>> {
        match self.compared.iter().find(|(x, y, _)| x == a && y == b) {
            Some((_, _, changes)) => Some(changes.clone()),
            None => crate::model::diff::diff_json(a.text(), b.text()),
        }
    }

    /// Compares the templates of the revision changes waiting for them, where both are known
    /// now, so that the detectors asking next read the comparison instead of each making it.
    fn compare_revisions(&mut self) {
        let mut i = 0;
        while i < self.uncompared.len() {
            let (from, to) = &self.uncompared[i];
            let Some((a, b, _)) = self.comparable_templates(from, to) else {
                i += 1;
                continue;
            };
            let known = self.compared.iter().any(|(x, y, _)| x == a && y == b);
            if !known {
                if let Some(changes) = crate::model::diff::diff_json(a.text(), b.text()) {
                    let (a, b) = (a.clone(), b.clone());
                    if self.compared.len() >= KEEP_COMPARED {
                        self.compared.pop_front();
                    }
                    self.compared.push_back((a, b, changes));
                }
            }
            self.uncompared.remove(i);
        }
    }

    /// A revision change's templates are to be compared, now or once both are known.
    fn wants_comparison(&mut self) {
        let Some(change) = &self.last_revision_change else {
            return;
        };
        let pair = (change.from.clone(), change.to.clone());
        if !self.uncompared.contains(&pair) {
            if self.uncompared.len() >= KEEP_UNCOMPARED {
                self.uncompared.pop_front();
            }
            self.uncompared.push_back(pair);
        }
        self.compare_revisions();
    }

    pub fn evidence(&self, pos: At, detail: impl Into<String>) -> Evidence {
        Evidence::of(pos, self.subject(), detail)
    }

    pub fn rs_evidence(&self, rs: &RsTrack, pos: At, detail: impl Into<String>) -> Evidence {
        Evidence::of(
            pos,
            Subject::new(Kind::ReplicaSet, &self.namespace, &rs.name),
            detail,
        )
    }

    fn role_of(&self, hash: Option<&str>) -> Role {
        role(self.last.as_ref(), hash)
    }

    /// Applies one observation of the Rollout. Returns true when its state changed, after which
    /// `last_revision_change` / `last_jump` describe the transition from the previous state.
    /// `object` is the record's object, which `view` was read from.
    pub fn observe_rollout(
        &mut self,
        view: &mut RolloutView,
        object: &[u8],
        pos: At,
        actor: Option<&str>,
    ) -> Option<Snapshot> {
        if !self.uid.is_empty() && !view.metadata.uid.is_empty() && self.uid != view.metadata.uid {
            // Deleted and created again under the same name: a new object, a new history.
            self.forget_history();
        }
        if self.uid != view.metadata.uid {
            self.uid.clone_from(&view.metadata.uid);
        }
        self.deleted = false;
        let flux = crate::input::view::flux_of(&view.metadata);
        if self.flux.as_ref().map(|(k, n)| (*k, n.as_str())) != flux {
            self.flux = flux.map(|(k, n)| (k, n.into()));
        }
        let prev_generation = self.last.as_ref().and_then(|s| s.generation);
        let spec_changed = prev_generation.is_some() && view.metadata.generation > prev_generation;
        let cur = Snapshot::from_view(view, pos, actor, spec_changed);
        let workload = view
            .spec
            .workload_ref
            .as_ref()
            .filter(|w| w.kind.as_deref().is_none_or(|k| k == "Deployment"))
            .and_then(|w| {
                Some(Workload {
                    deployment: Str::from(w.name.as_deref().filter(|n| !n.is_empty())?),
                    scale_down: w.scale_down.clone().filter(|s| !s.is_empty()),
                })
            });
        if self.workload != workload {
            // Its template is the new Deployment's from now on, as first seen.
            if workload.is_some() {
                self.last_template = None;
            }
            self.workload = workload;
        }
        let weights_hash = view
            .status
            .canary
            .as_ref()
            .and_then(|c| c.weights.as_ref())
            .and_then(|w| w.canary.as_ref())
            .and_then(|d| d.pod_template_hash.clone())
            .filter(|h| !h.is_empty());
        if self.weights_canary_hash != weights_hash {
            self.weights_canary_hash = weights_hash;
        }
        self.progress_deadline = (
            view.spec.progress_deadline_seconds,
            view.spec.progress_deadline_abort == Some(true),
        );
        // Almost every record repeats the strategy (the reader shares it while its bytes are
        // the same): what is read from it is worked out only when it is another one.
        if !self
            .strategy
            .as_ref()
            .is_some_and(|s| Arc::ptr_eq(s, &view.spec.strategy))
        {
            self.follow_strategy(&view.spec.strategy);
            self.strategy = Some(Arc::clone(&view.spec.strategy));
        }
        self.revision_history_limit = view.spec.revision_history_limit;
        self.track_template(view, object, &cur, spec_changed);

        let prev = self.last.take();
        self.last_revision_change = None;
        self.last_jump = None;
        let after_gap = std::mem::take(&mut self.gap_pending);
        if let Some(prev) = &prev {
            if prev.same_state(&cur) {
                self.last = Some(cur);
                return None;
            }
            self.classify(prev, &cur, after_gap);
            self.wants_comparison();
        } else if let Some(h) = &cur.pod_hash {
            self.progress.entry(h.clone()).or_default();
        }
        self.update_progress(prev.as_ref(), &cur);
        self.note_settle(prev.as_ref(), &cur);
        // Described only for a timeline (the words cost more than the rest of this record).
        let changes = if self.keep_timeline {
            describe_changes(prev.as_ref(), &cur, &self.steps)
        } else {
            Vec::new()
        };
        let actor = cur.actor.clone();
        // The first observation is its own previous state: the only copy this needs.
        let prev = prev.unwrap_or_else(|| cur.clone());
        self.last = Some(cur);
        self.update_roles(pos);
        self.push_timeline(pos, "Rollout", changes, actor, None);
        Some(prev)
    }

    /// Follows what is read of the rollout's `spec.strategy`: its steps, Services, routers,
    /// role labels and how it scales down.
    fn follow_strategy(&mut self, strategy: &crate::input::view::Strategy) {
        let steps = strategy
            .canary
            .as_ref()
            .and_then(|c| c.steps.as_deref())
            .unwrap_or(&[]);
        if self.steps != steps {
            self.steps = steps.to_vec();
        }
        let canary = strategy.canary.as_ref();
        fn service(s: Option<&Str>) -> Option<&str> {
            s.map(Str::as_str).filter(|s| !s.is_empty())
        }
        // A blue-green rollout's preview Service is, for what routes where, its canary Service
        // (the new revision's before promotion), and its active Service its stable one.
        let blue_green = strategy.blue_green.as_ref();
        let canary_service = service(
            canary
                .and_then(|c| c.canary_service.as_ref())
                .or_else(|| blue_green.and_then(|b| b.preview_service.as_ref())),
        );
        if self.canary_service.as_deref() != canary_service {
            self.canary_service = canary_service.map(str::to_owned);
            self.routes_stamp = crate::model::stamp();
        }
        let stable_service = service(
            canary
                .and_then(|c| c.stable_service.as_ref())
                .or_else(|| blue_green.and_then(|b| b.active_service.as_ref())),
        );
        if self.stable_service.as_deref() != stable_service {
            self.stable_service = stable_service.map(str::to_owned);
            self.routes_stamp = crate::model::stamp();
        }
        self.traffic_routing = canary.is_some_and(|c| c.traffic_routing.is_some());
        let nginx = canary
            .and_then(|c| c.traffic_routing.as_ref())
            .and_then(|t| t.nginx.as_ref())
            .map(|n| {
                let mut stable_ingresses: Vec<String> = Vec::new();
                for name in n
                    .stable_ingress
                    .iter()
                    .chain(n.stable_ingresses.iter().flatten())
                {
                    if !name.is_empty() && !stable_ingresses.iter().any(|s| s == name.as_str()) {
                        stable_ingresses.push(name.to_string());
                    }
                }
                Nginx {
                    stable_ingresses,
                    prefix: n
                        .annotation_prefix
                        .as_deref()
                        .filter(|p| !p.is_empty())
                        .unwrap_or(NGINX_ANNOTATION_PREFIX)
                        .to_owned(),
                }
            });
        if self.nginx != nginx {
            self.nginx = nginx;
        }
        let splits = canary
            .and_then(|c| c.traffic_routing.as_ref())
            .map(|t| Splits::of(t, &self.namespace))
            .unwrap_or_default();
        if self.splits != splits {
            self.splits = splits;
        }
        self.blue_green = blue_green.is_some();
        self.dynamic_stable_scale = canary.and_then(|c| c.dynamic_stable_scale) == Some(true);
        self.abort_scale_down = canary
            .and_then(|c| c.abort_scale_down_delay_seconds)
            .or_else(|| blue_green.and_then(|b| b.abort_scale_down_delay_seconds));
        self.scale_down = ScaleDown::of(
            blue_green.map(|b| b.scale_down_delay_seconds),
            canary
                .filter(|c| c.traffic_routing.is_some())
                .map(|c| c.scale_down_delay_seconds),
        );
        /// `kept` becomes the labels of `meta` (none without it), copied only when they
        /// changed; true when they did.
        fn follow(
            kept: &mut BTreeMap<String, String>,
            meta: Option<&crate::input::view::EphemeralMetadata>,
        ) -> bool {
            match meta.and_then(|m| m.labels.as_ref()) {
                Some(labels) if kept != labels => kept.clone_from(labels),
                None if !kept.is_empty() => kept.clear(),
                _ => return false,
            }
            true
        }
        // A blue-green rollout's preview and active pods are the controller's canary and
        // stable ones here (rollout/ephemeralmetadata.go).
        let blue_green = strategy.blue_green.as_ref();
        let canary_changed = follow(
            &mut self.canary_labels,
            canary
                .and_then(|c| c.canary_metadata.as_ref())
                .or_else(|| blue_green.and_then(|b| b.preview_metadata.as_ref())),
        );
        let stable_changed = follow(
            &mut self.stable_labels,
            canary
                .and_then(|c| c.stable_metadata.as_ref())
                .or_else(|| blue_green.and_then(|b| b.active_metadata.as_ref())),
        );
        // Which role a selecting Service routes to follows these labels.
        if canary_changed || stable_changed {
            self.routes_stamp = crate::model::stamp();
        }
    }

    /// True while the traffic timeline takes entries: timelines are kept and not full.
    pub fn wants_traffic(&self) -> bool {
        self.keep_timeline && self.traffic.len() < MAX_TIMELINE_ENTRIES
    }

    /// Records `endpoints`, the ready endpoint pods by revision of `service` (a Service that
    /// routes to this rollout), at `pos` when they changed. One look records every Service that
    /// routes to the rollout, so [`Self::wants_traffic`] is asked once per look, by the caller.
    pub fn record_traffic(
        &mut self,
        service: &str,
        endpoints: BTreeMap<String, Vec<String>>,
        pos: At,
    ) {
        if self.traffic_last.get(service) == Some(&endpoints) {
            return;
        }
        self.traffic.push(crate::report::timeline::TrafficEntry {
            at: pos.at,
            file: pos.file,
            seq: pos.seq,
            service: service.to_owned(),
            endpoints: endpoints.clone(),
        });
        self.traffic_last.insert(service.to_owned(), endpoints);
    }

    /// Counts a restart and keeps it, forgetting the oldest but the first beyond
    /// [`KEEP_RESTARTS`].
    fn restarted(&mut self, restart: Restart) {
        self.restarts_total += 1;
        if self.restarts.len() >= KEEP_RESTARTS {
            self.restarts.remove(1);
        }
        self.restarts.push(restart);
    }

    fn forget_history(&mut self) {
        self.last = None;
        self.progress.clear();
        self.template_changes.clear();
        self.last_template = None;
        self.spec_templates.clear();
        self.restarts.clear();
        self.restarts_total = 0;
        self.superseded_at.clear();
        self.pending_reset = None;
    }

    /// Follows the rollout's `spec.template`: the template change of a spec change, the
    /// template of each revision, the images. Runs for every Rollout record: the template is
    /// read only when something needs it, and parsed only when its bytes changed. A rollout
    /// with a `workloadRef` has none: its Deployment's is followed
    /// ([`Self::observe_workload_template`]).
    fn track_template(
        &mut self,
        view: &RolloutView,
        object: &[u8],
        cur: &Snapshot,
        spec_changed: bool,
    ) {
        let in_sync = generation_observed(cur.generation, cur.observed_generation.as_deref());
        let needs_template = spec_changed
            || self.last_template.is_none()
            || (in_sync
                && cur
                    .pod_hash
                    .as_ref()
                    .is_some_and(|h| !self.spec_templates.contains_key(h)));
        if !needs_template {
            return;
        }
        let Some(raw) = view.spec.template.as_ref().and_then(|r| r.get(object)) else {
            return;
        };
        let change = spec_changed.then(|| SpecChange {
            pos: cur.pos,
            generation: cur.generation,
            actor: cur.actor.clone(),
            deployment: None,
            template_changed: false,
            only_annotations: false,
            paths: Vec::new(),
        });
        let hash = cur.pod_hash.as_ref().filter(|_| in_sync);
        self.follow_template(raw, change, hash);
    }

    /// Follows the template of `deployment`, the Deployment the rollout's `workloadRef` names:
    /// `change` (where, which generation, by whom) when the record changed it, `None` for the
    /// template as first seen.
    pub fn observe_workload_template(
        &mut self,
        deployment: &str,
        raw: &str,
        change: Option<(At, Option<i64>, Option<Str>)>,
    ) {
        let change = change.map(|(pos, generation, actor)| SpecChange {
            pos,
            generation,
            actor,
            deployment: Some(Str::new(deployment)),
            template_changed: false,
            only_annotations: false,
            paths: Vec::new(),
        });
        let at = change
            .as_ref()
            .map(|c| (c.pos, c.generation_words(), c.actor.clone()));
        self.follow_template(raw, change, None);
        if let Some((pos, generation, actor)) = at {
            let changed = self.template_changes.back().filter(|c| c.pos == pos);
            if let Some(c) = changed.filter(|c| c.template_changed) {
                let what = if c.paths.is_empty() {
                    "pod template changed".to_owned()
                } else {
                    format!("pod template changed: {}", c.paths.join(", "))
                };
                let words = vec![format!("{what} ({generation})")];
                self.push_timeline(pos, "Deployment", words, actor, None);
            }
        }
    }

    /// The template `raw` is the latest: `change` is the spec change that wrote it (its
    /// template fields are filled here), `hash` the revision it is known to be.
    fn follow_template(&mut self, raw: &str, change: Option<SpecChange>, hash: Option<&Str>) {
        // The same bytes as the last template: the same template (it parsed then), the same
        // images.
        let (template, new_text) = match &self.last_template {
            Some(last) if last.text() == raw => (last.clone(), false),
            _ => match Template::new(raw) {
                Some(t) => (t, true),
                None => return,
            },
        };
        if let Some(mut change) = change {
            let (template_changed, diff) = match (&self.last_template, new_text) {
                (_, false) => (false, Vec::new()),
                // A difference is a change. No difference is none, though the text changed: a
                // `null` or `{}` where nothing was is the same pod template to the controller
                // (the real Argo Rollouts controller writes `resources: {}` into a container and
                // takes it out again after a render, with the hash unchanged), and the hash
                // label is the controller's own.
                (Some(old), true) => match crate::model::diff::diff_json(old.text(), raw) {
                    Some(diff) => (!diff.is_empty(), diff),
                    None => (true, Vec::new()),
                },
                (None, true) => (true, Vec::new()),
            };
            change.template_changed = template_changed;
            change.only_annotations =
                !diff.is_empty() && crate::model::diff::only_annotations(&diff);
            change.paths = diff.iter().take(4).map(|c| c.path.to_string()).collect();
            self.template_changes.push_back(change);
            if self.template_changes.len() > 16 {
                self.template_changes.pop_front();
            }
        }
        if let Some(h) = hash {
            if !self.spec_templates.contains_key(h) {
                self.spec_templates.insert(h.clone(), template.clone());
            }
        }
        if new_text {
            self.images = template_images_text(raw);
        }
        self.last_template = Some(template);
    }

    /// The last two template changes at or before `pos`.
    fn renders_before(&self, pos: At) -> (Option<SpecChange>, Option<SpecChange>) {
        let mut it = self
            .template_changes
            .iter()
            .rev()
            .filter(|c| c.template_changed && (c.pos.file, c.pos.seq) <= (pos.file, pos.seq));
        (it.next().cloned(), it.next().cloned())
    }

    fn classify(&mut self, prev: &Snapshot, cur: &Snapshot, after_gap: bool) {
        match (&prev.pod_hash, &cur.pod_hash) {
            (Some(from), Some(to)) if from != to => {
                let old_progress = self.progress.get(from).cloned().unwrap_or_default();
                let is_stable = |h: &Str| {
                    cur.stable_rs.as_ref() == Some(h) || prev.stable_rs.as_ref() == Some(h)
                };
                self.pending_reset = None;
                // A stable revision stays up as the stable one: it becomes a candidate for
                // scale-down when the stable moves (`RsTrack::other_since`), not here.
                if !is_stable(from) {
                    self.superseded_at.insert(from.clone(), cur.pos);
                }
                let dropped = cur.step_index == 0 || cur.step_index < old_progress.max_index;
                let class = if is_stable(to) {
                    RevisionClass::RollbackToStable
                } else if prev.abort {
                    RevisionClass::AfterAbort
                } else if is_stable(from)
                    // A canary past its last step is complete; a blue-green preview has no
                    // steps, and is complete only once promoted (stable).
                    || (!self.blue_green
                        && (prev.steps_len == 0 || prev.step_index >= prev.steps_len as i64))
                {
                    RevisionClass::NewRelease
                } else if old_progress.progressed() && dropped {
                    RevisionClass::Restart
                } else {
                    RevisionClass::Superseded
                };
                let (render, previous_render) = self.renders_before(cur.pos);
                let change = RevisionChange {
                    from: from.clone(),
                    to: to.clone(),
                    class,
                    old_progress,
                    render,
                    previous_render,
                    deferred: false,
                };
                if class == RevisionClass::Restart {
                    self.restarted(Restart::of(cur.pos, &change));
                } else if class == RevisionClass::Superseded && change.old_progress.progressed() {
                    // The index may drop in a later write of this revision.
                    self.pending_reset = Some(RevisionChange {
                        class: RevisionClass::Restart,
                        deferred: true,
                        ..change.clone()
                    });
                }
                self.last_revision_change = Some(change);
            }
            (Some(h), Some(_))
                if cur.step_index < prev.step_index
                    && self.pending_reset.as_ref().is_some_and(|p| p.to == *h) =>
            {
                if let Some(change) = self.pending_reset.take() {
                    self.restarted(Restart::of(cur.pos, &change));
                    self.last_revision_change = Some(change);
                }
            }
            (Some(h), Some(_)) if cur.step_index > prev.step_index && !after_gap => {
                if cur.promote_full || prev.promote_full {
                    return;
                }
                // A rollout's first revision has no stable to test against: the controller
                // makes it stable and sets the index past every step at once (seen with the
                // real controller, v1.10).
                let first_deploy = prev.stable_rs.is_none()
                    && cur.stable_rs.as_deref() == Some(h.as_str())
                    && usize::try_from(cur.step_index).is_ok_and(|i| i == self.steps.len());
                if first_deploy {
                    return;
                }
                let reached = self.progress.get(h);
                let skipped: Vec<i64> = (prev.step_index..cur.step_index)
                    .filter(|&k| {
                        usize::try_from(k)
                            .ok()
                            .and_then(|k| self.steps.get(k))
                            .is_some_and(Step::is_pause)
                    })
                    .filter(|k| !reached.is_some_and(|p| p.pauses.contains_key(k)))
                    .collect();
                if !skipped.is_empty() {
                    self.last_jump = Some(StepJump {
                        from: prev.step_index,
                        to: cur.step_index,
                        skipped_pauses: skipped,
                    });
                }
            }
            _ => {}
        }
    }

    fn update_progress(&mut self, prev: Option<&Snapshot>, cur: &Snapshot) {
        let Some(h) = &cur.pod_hash else { return };
        if self
            .last_revision_change
            .as_ref()
            .is_some_and(|c| !c.deferred)
        {
            // The revision became current now: what it reached in an earlier life does not count.
            self.progress.insert(h.clone(), Progress::default());
        }
        let p = self.progress.entry(h.clone()).or_default();
        let same_hash = prev.is_some_and(|s| s.pod_hash.as_ref() == Some(h));
        if same_hash && prev.is_some_and(|s| cur.step_index < s.step_index) {
            // Abort, steps change, retry: this revision starts over.
            p.max_index = cur.step_index;
            p.pauses.retain(|k, _| *k < cur.step_index);
        }
        if cur.step_index > p.max_index || p.max_at.is_none() {
            p.max_index = p.max_index.max(cur.step_index);
            p.max_at = Some(cur.pos);
        }
        if cur.at_pause_step() {
            p.pauses.entry(cur.step_index).or_insert(cur.pos);
        }
    }

    /// Notes the moment the rollout becomes Healthy on one revision (`stableRS` equal to
    /// `currentPodHash`, not aborted).
    fn note_settle(&mut self, prev: Option<&Snapshot>, cur: &Snapshot) {
        if prev.is_none_or(|p| p.pod_hash != cur.pod_hash) {
            self.stable_when_current.clone_from(&cur.stable_rs);
        }
        let settled = |s: &RolloutState| {
            !s.abort
                && s.phase.as_deref() == Some("Healthy")
                && s.pod_hash.is_some()
                && s.pod_hash == s.stable_rs
        };
        if !settled(cur) || prev.is_some_and(|p| settled(p) && p.pod_hash == cur.pod_hash) {
            return;
        }
        let Some(hash) = cur.pod_hash.clone() else {
            return;
        };
        if self.settles.len() >= KEEP_SETTLES {
            self.settles.drain(..KEEP_SETTLES / 2);
        }
        self.settles.push(crate::report::end::Settled {
            at: cur.pos.at,
            hash,
            before: self.stable_when_current.clone(),
        });
    }

    /// See the field: equal while what the rollout is indexed under by route is the same.
    pub fn routes_stamp(&self) -> u64 {
        self.routes_stamp
    }

    /// Sets its canary and stable Services, as a change of its spec does.
    #[cfg(test)]
    pub(super) fn set_services(&mut self, canary: Option<String>, stable: Option<String>) {
        self.canary_service = canary;
        self.stable_service = stable;
        self.routes_stamp = crate::model::stamp();
    }

    /// The moments it became Healthy on one revision, in order.
    pub fn settles(&self) -> &[crate::report::end::Settled] {
        &self.settles
    }

    fn update_roles(&mut self, pos: At) {
        // One pass over the ReplicaSets, in place (this runs on every change of state).
        let last = self.last.as_ref();
        for rs in self.replicasets.values_mut() {
            match role(last, rs.hash.as_deref()) {
                Role::Other => {
                    rs.other_since.get_or_insert(pos);
                }
                r => {
                    rs.other_since = None;
                    rs.was_stable |= r == Role::Stable;
                }
            }
        }
    }

    /// Applies one observation of a ReplicaSet this rollout owns.
    /// `object` is the record's object, which `view` was read from.
    pub fn observe_replicaset(
        &mut self,
        view: &ReplicaSetView,
        object: &[u8],
        pos: At,
        deleted: bool,
        added: bool,
    ) {
        let name = view.metadata.name.clone();
        let role = self.role_of(view.hash());
        let replicas = view.spec.replicas.unwrap_or(1);
        let ready = view.status.ready_replicas.unwrap_or(0);
        let status_replicas = view.status.replicas.unwrap_or(0);
        let old = self.replicasets.get(&name);
        let is_new = old.is_none();
        // Described only for a timeline.
        let changes = match old {
            _ if !self.keep_timeline => Vec::new(),
            None => vec![if deleted {
                format!("rs {name} deleted")
            } else {
                format!(
                    "rs {name} {} (replicas {replicas})",
                    if added { "created" } else { "seen" }
                )
            }],
            Some(old) => {
                let mut c = Vec::new();
                if deleted && !old.deleted {
                    c.push(format!("rs {name} deleted"));
                }
                if old.replicas != replicas {
                    c.push(format!("rs {name} replicas {} -> {replicas}", old.replicas));
                }
                if old.ready != ready {
                    c.push(format!("rs {name} ready {} -> {ready}", old.ready));
                }
                c
            }
        };
        if is_new {
            self.replicaset_names |= name_bits(&name);
        }
        let entry = self
            .replicasets
            .entry(name.clone())
            .or_insert_with(|| RsTrack {
                name: name.clone(),
                hash: None,
                owner_uid: None,
                created: None,
                last: pos,
                replicas,
                status_replicas,
                ready,
                deadline: None,
                deleted,
                template: None,
                template_digest: 0,
                other_since: None,
                was_stable: false,
                pod_labels: BTreeMap::new(),
                ready_since: None,
                revision: None,
                created_at: None,
                listed_initially: false,
            });
        if is_new && added {
            entry.created = Some(pos);
        }
        entry.hash = view.hash().map(Str::new);
        entry.owner_uid = view.rollout_owner().map(|(_, uid)| Str::new(uid));
        entry.last = pos;
        entry.replicas = replicas;
        entry.status_replicas = status_replicas;
        entry.ready = ready;
        entry.deadline = view.scale_down_deadline().map(Str::new);
        entry.revision = view
            .metadata
            .annotations
            .get(crate::base::REVISION_ANNOTATION)
            .and_then(|r| r.parse().ok());
        if let Some(t) = view.metadata.creation_timestamp.as_deref() {
            entry.created_at = crate::base::time::parse_rfc3339(t);
        }
        let deleted_now = deleted && !entry.deleted;
        if is_new || deleted != entry.deleted {
            self.routes_stamp = crate::model::stamp();
        }
        entry.deleted = deleted;
        if ready > 0 && !deleted {
            entry.ready_since.get_or_insert(pos.at);
        } else {
            entry.ready_since = None;
        }
        // Its text is looked at (and checked as UTF-8) only when it is new.
        let digest = view.template_digest;
        if entry.template.is_none() || digest != entry.template_digest {
            if let Some((template, labels)) = view
                .spec
                .template
                .as_ref()
                .and_then(|r| r.get(object))
                .and_then(Template::with_labels)
            {
                if entry.pod_labels != labels {
                    self.routes_stamp = crate::model::stamp();
                }
                entry.pod_labels = labels;
                entry.template = Some(template);
                entry.template_digest = digest;
            }
        }
        if role == Role::Other && self.last.is_some() {
            entry.other_since.get_or_insert(pos);
        } else if role != Role::Other {
            entry.other_since = None;
            entry.was_stable |= role == Role::Stable;
        }
        if !changes.is_empty() {
            self.push_timeline(pos, "ReplicaSet", changes, None, Some(&name));
        }
        self.last_rs_change = Some((name, deleted_now));
        if deleted {
            self.compact();
        }
        if !self.uncompared.is_empty() {
            self.compare_revisions();
        }
    }

    /// False when no ReplicaSet of this rollout is named what gave `bits` ([`name_bits`]); true
    /// when one may be.
    pub fn may_hold_replicaset(&self, bits: u128) -> bool {
        self.replicaset_names & bits == bits
    }

    /// Notes whether ReplicaSet `name`, first seen now, was in the recording's first list.
    pub fn note_initially_listed(&mut self, name: &str, initial: bool) {
        if let Some(rs) = self.replicasets.get_mut(name) {
            rs.listed_initially = initial;
        }
    }

    /// Forgets what only deleted revisions needed, keeping the newest few, so that what a
    /// rollout holds follows its live ReplicaSets and not how many releases it has seen.
    fn compact(&mut self) {
        let mut deleted: Vec<(At, Str)> = self
            .replicasets
            .values()
            .filter(|rs| rs.deleted)
            .map(|rs| (rs.last, rs.name.clone()))
            .collect();
        if deleted.len() > KEEP_DELETED {
            deleted.sort_by_key(|(at, _)| (at.file, at.seq));
            for (_, name) in &deleted[..deleted.len() - KEEP_DELETED] {
                self.replicasets.remove(name);
            }
            self.replicaset_names = self.replicasets.keys().fold(0, |b, n| b | name_bits(n));
            self.routes_stamp = crate::model::stamp();
        }
        let mut keep: Vec<&str> = self
            .replicasets
            .values()
            .filter_map(|rs| rs.hash.as_deref())
            .collect();
        if let Some(last) = &self.last {
            keep.extend(last.pod_hash.as_deref());
            keep.extend(last.stable_rs.as_deref());
        }
        let keep: std::collections::BTreeSet<Str> = keep.into_iter().map(Str::new).collect();
        self.spec_templates.retain(|h, _| keep.contains(h));
        self.progress.retain(|h, _| keep.contains(h));
        self.superseded_at.retain(|h, _| keep.contains(h));
    }

    /// A change of an object around the rollout (`source`: its kind), in words, on the timeline.
    pub fn note(&mut self, pos: At, source: &str, changes: Vec<String>) {
        if !changes.is_empty() {
            self.push_timeline(pos, source, changes, None, None);
        }
    }

    fn push_timeline(
        &mut self,
        pos: At,
        source: &str,
        changes: Vec<String>,
        actor: Option<Str>,
        touched: Option<&str>,
    ) {
        if !self.keep_timeline {
            return;
        }
        if self.timeline.len() >= MAX_TIMELINE_ENTRIES {
            self.timeline_truncated = true;
            return;
        }
        let Some(s) = &self.last else { return };
        let replicasets = self
            .replicasets
            .values()
            .filter(|rs| {
                (!rs.deleted && (rs.replicas > 0 || rs.status_replicas > 0))
                    || Some(rs.name.as_str()) == touched
            })
            .map(|rs| ReplicaSetState {
                name: rs.name.clone(),
                hash: rs.hash.clone().unwrap_or_default(),
                role: self.role_of(rs.hash.as_deref()),
                replicas: if rs.deleted { 0 } else { rs.replicas },
                ready: if rs.deleted { 0 } else { rs.ready },
            })
            .collect();
        let pause = s.pause_words();
        self.timeline.push(TimelineEntry {
            at: pos.at,
            file: pos.file,
            seq: pos.seq,
            source: source.to_owned(),
            changes,
            actor,
            generation: s.generation,
            observed_generation: s.observed_generation.clone(),
            pod_hash: s.pod_hash.clone(),
            stable_rs: s.stable_rs.clone(),
            step_index: s.step_index,
            step_count: s.steps_len,
            phase: s.phase.clone(),
            pause,
            abort: s.abort,
            message: s.message.clone(),
            replicasets,
        });
    }
}

fn describe_changes(prev: Option<&Snapshot>, cur: &Snapshot, steps: &[Step]) -> Vec<String> {
    let Some(prev) = prev else {
        return vec!["first seen".to_owned()];
    };
    let mut c = Vec::new();
    let opt = |o: &Option<Str>| o.as_deref().unwrap_or("-").to_owned();
    if prev.generation != cur.generation {
        c.push(format!(
            "generation {} -> {}",
            prev.generation.unwrap_or(0),
            cur.generation.unwrap_or(0)
        ));
    }
    if prev.revision != cur.revision {
        c.push(format!(
            "revision {} -> {}",
            opt(&prev.revision),
            opt(&cur.revision)
        ));
    }
    if prev.pod_hash != cur.pod_hash {
        c.push(format!(
            "pod hash {} -> {}",
            opt(&prev.pod_hash),
            opt(&cur.pod_hash)
        ));
    }
    if prev.step_hash != cur.step_hash {
        c.push(format!(
            "steps hash {} -> {}",
            opt(&prev.step_hash),
            opt(&cur.step_hash)
        ));
    }
    if prev.step_index != cur.step_index {
        let what = usize::try_from(cur.step_index)
            .ok()
            .and_then(|i| steps.get(i))
            .map(|s| format!(" ({})", s.describe()))
            .unwrap_or_default();
        c.push(format!(
            "step {} -> {}{what}",
            prev.step_index, cur.step_index
        ));
    }
    if prev.stable_rs != cur.stable_rs {
        c.push(format!(
            "stable {} -> {}",
            opt(&prev.stable_rs),
            opt(&cur.stable_rs)
        ));
    }
    if prev.phase != cur.phase {
        c.push(format!("phase {} -> {}", opt(&prev.phase), opt(&cur.phase)));
    }
    if prev.pause_reasons != cur.pause_reasons {
        let show = |r: &[Str]| {
            if r.is_empty() {
                "none".to_owned()
            } else {
                r.join(",")
            }
        };
        c.push(format!(
            "pause {} -> {}",
            show(&prev.pause_reasons),
            show(&cur.pause_reasons)
        ));
    }
    if prev.abort != cur.abort {
        c.push(if cur.abort {
            "abort requested".to_owned()
        } else {
            "abort cleared".to_owned()
        });
    }
    if prev.spec_paused != cur.spec_paused {
        c.push(format!("spec.paused {}", cur.spec_paused));
    }
    if prev.promote_full != cur.promote_full {
        c.push(format!("promoteFull {}", cur.promote_full));
    }
    if prev.canary_weight != cur.canary_weight {
        c.push(format!(
            "canary weight {} -> {}",
            prev.canary_weight.unwrap_or(0),
            cur.canary_weight.unwrap_or(0)
        ));
    }
    if prev.progressing_reason != cur.progressing_reason {
        c.push(format!("progressing {}", opt(&cur.progressing_reason)));
    }
    if prev.observed_generation != cur.observed_generation && c.is_empty() {
        c.push(format!(
            "observed generation {}",
            opt(&cur.observed_generation)
        ));
    }
    if prev.controller_pause != cur.controller_pause && c.is_empty() {
        c.push(format!("controllerPause {}", cur.controller_pause));
    }
    if c.is_empty() {
        c.push("status updated".to_owned());
    }
    c
}

/// Every container and init container image of a template given as JSON text, read without
/// building it: the containers' `image` strings, in order, each once.
pub(crate) fn template_images_text(raw: &str) -> Vec<String> {
    use crate::model::diff::{Sides, member, opener, string, trimmed};
    /// The member `key` of the object `text` (`None` when `text` is not an object: a JSON
    /// pointer through it finds nothing); `Err` when it does not parse.
    fn at<'t>(sides: &Sides<'t>, text: Option<&'t str>, key: &str) -> Result<Option<&'t str>, ()> {
        match text {
            Some(t) if opener(t) == b'{' => Ok(member(&sides.members(t).ok_or(())?, key)),
            _ => Ok(None),
        }
    }
    let raw = trimmed(raw);
    // Each level read through the template's structure, not scanned again.
    let sides = Sides::of(raw);
    let at = |text, key| at(&sides, text, key);
    let images = || -> Result<Vec<String>, ()> {
        let spec = at(Some(raw), "spec")?;
        let mut images: Vec<String> = Vec::new();
        for list in ["containers", "initContainers"] {
            let list = match at(spec, list)? {
                Some(l) if opener(l) == b'[' => sides.items(l).ok_or(())?,
                _ => Vec::new(),
            };
            for item in list {
                let Some(image) = at(Some(item), "image")?.filter(|i| opener(i) == b'"') else {
                    continue;
                };
                let image = string(image).ok_or(())?;
                if !images.iter().any(|i| *i == image) {
                    images.push(image.into_owned());
                }
            }
        }
        Ok(images)
    };
    images().unwrap_or_default()
}

/// Every container and init container image of a pod template, read from the built value: what
/// [`template_images_text`] must find.
#[cfg(test)]
pub(crate) fn template_images(template: &Value) -> Vec<String> {
    let mut images = Vec::new();
    for list in ["containers", "initContainers"] {
        for c in template
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(image) = c.get("image").and_then(Value::as_str) {
                if !images.iter().any(|i| i == image) {
                    images.push(image.to_owned());
                }
            }
        }
    }
    images
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(text: &str) -> Template {
        Template(Arc::from(text))
    }

    #[test]
    fn a_comparison_is_kept_for_the_detectors_that_ask_for_it_again() {
        let track = RolloutTrack::new("ns", "web", false);
        let (a, b) = (template(r#"{"n":"a"}"#), template(r#"{"n":"b"}"#));
        let changes = track.template_diff(&a, &b).expect("both parse");
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].old, Some("a".into()));
        // Equal text in another allocation is the same template.
        let again = track
            .template_diff(&template(r#"{"n":"a"}"#), &b)
            .expect("both parse");
        assert_eq!(again, changes);
        assert!(track.template_diff(&b, &b).expect("parses").is_empty());
    }

    #[test]
    fn a_revision_change_is_compared_once_both_templates_are_known() {
        let mut track = RolloutTrack::new("ns", "web", false);
        let (a, b) = (template(r#"{"n":"a"}"#), template(r#"{"n":"b"}"#));
        track.last_revision_change = Some(RevisionChange {
            from: "h1".into(),
            to: "h2".into(),
            class: RevisionClass::Restart,
            old_progress: Progress::default(),
            render: None,
            previous_render: None,
            deferred: false,
        });
        track.spec_templates.insert("h1".into(), a.clone());
        track.wants_comparison();
        assert!(track.compared.is_empty(), "h2's template is not known yet");
        assert_eq!(track.uncompared.len(), 1);
        track.spec_templates.insert("h2".into(), b.clone());
        track.compare_revisions();
        assert!(track.uncompared.is_empty());
        assert_eq!(track.compared.len(), 1);
        assert!(track.compared[0].0 == a && track.compared[0].1 == b);
        assert_eq!(
            track.template_diff(&a, &b),
            crate::model::diff::diff_json(a.text(), b.text())
        );
    }

    #[test]
    fn a_template_that_does_not_parse_is_no_template_and_no_comparison() {
        assert!(Template::new("{not json").is_none());
        assert!(Template::new(r#"{"n":"a"} x"#).is_none());
        assert_eq!(
            Template::new(r#"{"n":"a"}"#).map(|t| t.text().to_owned()),
            Some(r#"{"n":"a"}"#.to_owned())
        );
        let track = RolloutTrack::new("ns", "web", false);
        let (good, bad) = (template(r#"{"n":"a"}"#), template("{not json"));
        assert!(track.template_diff(&good, &bad).is_none());
        assert!(track.template_diff(&bad, &good).is_none());
    }

    #[test]
    fn images_read_from_text_are_the_images_of_the_built_template() {
        let cases = [
            r#"{"spec":{"containers":[{"name":"a","image":"x:1"},{"name":"b","image":"y:2"}],"initContainers":[{"image":"x:1"},{"image":"z:3"}]}}"#,
            r#" { "spec" : { "containers" : [ { "image" : "a\u0062:1" } ] } } "#,
            r#"{"spec":{"containers":[{"image":5},{"image":null},{},"s",["x"],{"image":"ok"}]}}"#,
            r#"{"spec":{"containers":{"image":"x"}}}"#,
            r#"{"spec":["x"]}"#,
            r#"{"spec":null}"#,
            r#"[{"containers":[{"image":"x"}]}]"#,
            r#"{"spec":{"containers":[{"image":"x","image":"y"}]}}"#,
            r#"{"spec":{"containers":[{"image":"x"}],"containers":[{"image":"y"}]}}"#,
            r#"{"spec":{"initContainers":[{"image":"i"}],"containers":[{"image":"c"}]}}"#,
            r#"{"metadata":{}}"#,
            "not json",
        ];
        for raw in cases {
            let built = serde_json::from_str::<Value>(raw)
                .map(|v| template_images(&v))
                .unwrap_or_default();
            assert_eq!(template_images_text(raw), built, "{raw}");
        }
    }
}

#[cfg(test)]
mod legacy_phase_tests {
    use serde_json::{Value, json};

    use super::Snapshot;
    use crate::base::At;
    use crate::input::view::RolloutView;

    /// The phase read from a Rollout whose `status` (without `phase`) is `status`.
    fn phase_of(strategy: Value, status: Value) -> Option<String> {
        let obj = json!({
            "metadata": {"name": "app", "generation": 3},
            "spec": {"replicas": 3, "strategy": strategy},
            "status": status,
        });
        let mut view: RolloutView = serde_json::from_value(obj).unwrap();
        let at = At {
            file: 0,
            seq: 1,
            at: rf_format::Timestamp::from_unix_seconds(0),
        };
        Snapshot::from_view(&mut view, at, None, false)
            .phase
            .as_ref()
            .map(|p| p.to_string())
    }

    fn canary() -> Value {
        json!({"canary": {"steps": [{"setWeight": 20}, {"pause": {}}]}})
    }

    fn status(extra: Value) -> Value {
        let mut s = json!({"observedGeneration": "3", "currentPodHash": "h2",
                           "canary": {"stableRS": "h1"},
                           "replicas": 4, "updatedReplicas": 1, "availableReplicas": 4});
        for (k, v) in extra.as_object().unwrap() {
            s[k] = v.clone();
        }
        s
    }

    #[test]
    fn a_phase_the_controller_wrote_is_kept() {
        assert_eq!(
            phase_of(canary(), status(json!({"phase": "Degraded"}))).as_deref(),
            Some("Degraded")
        );
    }

    #[test]
    fn a_status_not_yet_reconciled_has_no_phase() {
        assert_eq!(phase_of(canary(), json!({})), None);
    }

    #[test]
    fn a_pre_v1_canary_is_paused_progressing_degraded_or_healthy_by_its_status() {
        let paused = status(json!({"pauseConditions": [{"reason": "CanaryPauseStep"}]}));
        assert_eq!(phase_of(canary(), paused).as_deref(), Some("Paused"));
        // Not all replicas updated yet, at a step past the pause.
        assert_eq!(
            phase_of(canary(), status(json!({}))).as_deref(),
            Some("Progressing")
        );
        let aborted = status(json!({"conditions": [
            {"type": "Available", "status": "True"},
            {"type": "Progressing", "status": "False", "reason": "RolloutAborted"}]}));
        assert_eq!(phase_of(canary(), aborted).as_deref(), Some("Degraded"));
        let invalid = status(json!({"conditions": [{"type": "InvalidSpec", "status": "True"}]}));
        assert_eq!(phase_of(canary(), invalid).as_deref(), Some("Degraded"));
        let unobserved = status(json!({"observedGeneration": "2"}));
        assert_eq!(
            phase_of(canary(), unobserved).as_deref(),
            Some("Progressing")
        );
        let done = status(json!({"canary": {"stableRS": "h2"}, "replicas": 3,
                                 "updatedReplicas": 3, "availableReplicas": 3}));
        assert_eq!(phase_of(canary(), done).as_deref(), Some("Healthy"));
        let old_pods_left = status(json!({"canary": {"stableRS": "h2"}, "replicas": 4,
                                          "updatedReplicas": 3, "availableReplicas": 3}));
        assert_eq!(
            phase_of(canary(), old_pods_left).as_deref(),
            Some("Progressing")
        );
    }

    #[test]
    fn a_pre_v1_blue_green_is_healthy_once_the_active_service_is_switched() {
        let bg = json!({"blueGreen": {"activeService": "app"}});
        let full = |active: &str| {
            status(
                json!({"replicas": 6, "updatedReplicas": 3, "availableReplicas": 3,
                          "canary": {}, "blueGreen": {"activeSelector": active}}),
            )
        };
        assert_eq!(
            phase_of(bg.clone(), full("h1")).as_deref(),
            Some("Progressing")
        );
        assert_eq!(phase_of(bg, full("h2")).as_deref(), Some("Healthy"));
    }
}
