//! Where each rollout ended, and which findings its later state moved past.

use rf_format::Timestamp;
use serde::Serialize;

use crate::base::Str;
use crate::report::finding::{Finding, Resolved, Rule, Subject, serialize_time};
use crate::report::timeline::{ReplicaSetState, Role};

/// A rollout's state at the end of the analysis: its last status, and its ReplicaSets' pods.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RolloutEnd {
    /// The rollout.
    pub rollout: Subject,
    /// When the analysis ended (the end of the recording, or `--at`/`--until`).
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// `canary` or `blueGreen`.
    pub strategy: &'static str,
    /// `status.phase`.
    pub phase: Option<Str>,
    /// `status.currentStepIndex` (absent = 0).
    pub step_index: i64,
    /// Number of canary steps.
    pub step_count: usize,
    /// `status.currentPodHash`: the revision it is rolling out, or runs.
    pub pod_hash: Option<Str>,
    /// `status.stableRS`.
    pub stable_rs: Option<Str>,
    /// Reasons of `status.pauseConditions`, plus `spec.paused` when set.
    pub pause: Vec<Str>,
    /// `status.abort`.
    pub abort: bool,
    /// `status.message`.
    pub message: Option<Str>,
    /// The rollout was deleted.
    pub deleted: bool,
    /// Its ReplicaSets that have pods, and its new and stable ones, roles from the status
    /// above (the stable one when it is also the current one).
    pub replicasets: Vec<ReplicaSetState>,
    /// When it last became Healthy with every pod on one revision (`stableRS` equal to
    /// `currentPodHash`), and on which.
    pub last_settled: Option<Settled>,
    /// The Argo CD Applications that manage it, as they ended (none: the key is left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub applications: Vec<ApplicationEnd>,
}

/// An Argo CD Application's state at the end: what its status said last.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ApplicationEnd {
    pub namespace: Str,
    pub name: Str,
    /// `status.sync.status`.
    pub sync: Option<Str>,
    /// `status.health.status`.
    pub health: Option<Str>,
    /// Its last sync of `status.history`, in words (`sync 2 (automated) at TIME`).
    pub last_sync: Option<String>,
    /// Its last operation, when it failed or is failing after a failure, in words (`sync
    /// operation Failed: ...; PreSync hook Job NAME Failed: ...`).
    pub failing: Option<String>,
    /// The failed operations the cluster's Events about it still held when it was first
    /// listed, oldest first, in words (`TIME: Sync operation to REV failed: ...`): failures an
    /// operation since may have replaced in its `operationState` (none: the key is left out).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub failed_before: Vec<String>,
}

impl ApplicationEnd {
    /// `Application NS/NAME: OutOfSync, Suspended · last sync 2 (automated) at TIME · sync
    /// operation Failed: ...`.
    pub fn describe(&self) -> String {
        let word = |w: &Option<Str>| w.as_deref().unwrap_or("unknown").to_owned();
        let mut s = format!(
            "Application {}/{}: {}, {}",
            self.namespace,
            self.name,
            word(&self.sync),
            word(&self.health)
        );
        if let Some(l) = &self.last_sync {
            s.push_str(&format!(" · last {l}"));
        }
        if let Some(f) = &self.failing {
            s.push_str(&format!(" · {f}"));
        }
        match self.failed_before.as_slice() {
            [] => {}
            [one] => s.push_str(&format!(" · its Events: {one}")),
            [.., last] => s.push_str(&format!(
                " · its Events: {} failed operations, the last {last}",
                self.failed_before.len()
            )),
        }
        s
    }
}

impl RolloutEnd {
    /// The role of the ReplicaSet of `hash` at the end.
    pub fn role(&self, hash: &str) -> Role {
        if self.stable_rs.as_deref() == Some(hash) {
            Role::Stable
        } else if self.pod_hash.as_deref() == Some(hash) {
            Role::New
        } else {
            Role::Other
        }
    }

    /// `Paused at step 1/4 (CanaryPauseStep) · current 66c66dbf9f · stable 5c5c8c44fd`, or
    /// `Healthy on 54477fc49b` once one revision runs everywhere.
    pub fn describe(&self) -> String {
        let phase = self.phase.as_deref().unwrap_or("no phase");
        let mut s = if self.deleted {
            "deleted".to_owned()
        } else if self.pod_hash.is_some() && self.pod_hash == self.stable_rs {
            format!(
                "{phase} on {}",
                self.pod_hash.as_deref().unwrap_or_default()
            )
        } else {
            let step = if self.strategy == "canary" && self.step_count > 0 {
                format!(" at step {}/{}", self.step_index, self.step_count)
            } else {
                String::new()
            };
            format!(
                "{phase}{step} · current {} · stable {}",
                self.pod_hash.as_deref().unwrap_or("none"),
                self.stable_rs.as_deref().unwrap_or("none")
            )
        };
        if !self.pause.is_empty() {
            let reasons: Vec<&str> = self.pause.iter().map(Str::as_str).collect();
            s.push_str(&format!(" · paused ({})", reasons.join(", ")));
        }
        if self.abort {
            s.push_str(" · aborted");
        }
        s
    }

    /// `status.message` when it says more than the phase and pause reasons do (the controller
    /// writes `CanaryPauseStep` there while paused).
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref().filter(|m| {
            !m.is_empty()
                && self.phase.as_deref() != Some(*m)
                && !self.pause.iter().any(|p| p.as_str() == *m)
        })
    }

    /// `checkout-api-54477fc49b stable 4/4 ready`, one per ReplicaSet.
    pub fn pods(&self) -> Vec<String> {
        self.replicasets
            .iter()
            .map(|r| {
                let role = match r.role {
                    Role::Stable if self.pod_hash == self.stable_rs => "stable (current)",
                    Role::Stable => "stable",
                    Role::New => "new (current)",
                    Role::Other => "other",
                };
                format!("{} {role} {}/{} ready", r.name, r.ready, r.replicas)
            })
            .collect()
    }
}

/// A moment a rollout became Healthy on one revision.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Settled {
    /// When it was observed.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// The revision (`stableRS` = `currentPodHash`).
    pub hash: Str,
    /// The stable revision before it, when another: it was promoted; when the same, it went
    /// back to it (an undo, a rollback to stable).
    #[serde(skip)]
    pub before: Option<Str>,
}

impl Settled {
    /// `promoted, Healthy on 54477fc49b`.
    pub fn words(&self) -> String {
        match &self.before {
            Some(b) if *b == self.hash => {
                format!("back on the stable revision, Healthy on {}", self.hash)
            }
            _ => format!("promoted, Healthy on {}", self.hash),
        }
    }
}

impl Rule {
    /// True for a rule whose remedy is about a release in progress (let it progress, do not
    /// re-run it, promote, abort, watch it): a later moment the rollout is Healthy on one
    /// revision moves past it. The others are about configuration or what is still running at
    /// the end, which a promotion does not change.
    pub fn settled_by_promotion(self) -> bool {
        matches!(
            self,
            Rule::RerenderRestart
                | Rule::PauseLost
                | Rule::DoubleRender
                | Rule::ConfigOnlyRerender
                | Rule::RestartChurn
                | Rule::ManualStepJump
                | Rule::HashOnlyChange
                | Rule::CanaryNotInEndpoints
                | Rule::TrafficWeightMismatch
                | Rule::AnalysisWithoutTraffic
                | Rule::AnalysisFailed
                | Rule::RolloutStopped
                | Rule::GitopsHealthMismatch
        )
    }
}

/// Marks the findings the rollouts' later states moved past: each rollout's settle points, in
/// time order, by rollout.
/// A change a detector makes to its findings once the analysis has ended, as each is read
/// (held or packed): what it could not know when it made them.
pub(crate) type Amender = std::sync::Arc<dyn Fn(&mut Finding) + Send + Sync>;

#[derive(Clone, Default)]
pub struct Resolver {
    /// Namespace -> name -> the moments, in time order.
    settles: Settles,
    /// The records of the first file's first lists, as a bit per `seq`: evidence of them is
    /// marked [`listed`](crate::Evidence::listed).
    listed: std::sync::Arc<Vec<u64>>,
    amenders: Vec<Amender>,
}

impl std::fmt::Debug for Resolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resolver")
            .field("settles", &self.settles)
            .field("listed", &self.listed.len())
            .field("amenders", &self.amenders.len())
            .finish()
    }
}

/// Namespace -> rollout name -> the moments it became Healthy on one revision.
type Settles = std::collections::BTreeMap<String, std::collections::BTreeMap<String, Vec<Settled>>>;

impl Resolver {
    /// A resolver of these settle points of each rollout (namespace, name), each in time
    /// order.
    pub(crate) fn new(points: impl IntoIterator<Item = ((String, String), Vec<Settled>)>) -> Self {
        let mut settles = Settles::new();
        for ((ns, name), p) in points {
            settles.entry(ns).or_default().insert(name, p);
        }
        Resolver {
            settles,
            listed: std::sync::Arc::default(),
            amenders: Vec::new(),
        }
    }

    /// Applies `amender` to every finding read.
    pub(crate) fn with_amender(mut self, amender: Amender) -> Self {
        self.amenders.push(amender);
        self
    }

    /// Marks evidence of the records whose `seq` bit is set in `listed` (of the first file) as
    /// of the first list.
    pub(crate) fn with_listed(mut self, listed: std::sync::Arc<Vec<u64>>) -> Self {
        self.listed = listed;
        self
    }

    /// Sets `finding.resolved` when its rollout settled after it.
    pub fn apply(&self, finding: &mut Finding) {
        for amend in &self.amenders {
            amend(finding);
        }
        if !self.listed.is_empty() {
            for e in finding.evidence.iter_mut().filter(|e| e.file == 0) {
                let word = usize::try_from(e.seq / 64).unwrap_or(usize::MAX);
                if self
                    .listed
                    .get(word)
                    .is_some_and(|w| w & (1 << (e.seq % 64)) != 0)
                {
                    e.listed = true;
                }
            }
        }
        if finding.resolved.is_some() || !finding.rule.settled_by_promotion() {
            return;
        }
        if finding.rollout.kind != rf_format::Kind::Rollout {
            return;
        }
        let Some(points) = self
            .settles
            .get(&finding.rollout.namespace)
            .and_then(|names| names.get(&finding.rollout.name))
        else {
            return;
        };
        let i = points.partition_point(|s| s.at <= finding.at);
        if let Some(s) = points.get(i) {
            finding.resolved = Some(Resolved {
                at: s.at,
                how: s.words(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::report::timeline::Role;
    use crate::testkit::{Kit, template};

    /// The re-render race, then the canary promoted to Healthy on its second render.
    fn race(promote: bool) -> crate::Report {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        kit.advance(5);
        kit.scale("h2", 1, template("app:2", "c2"));
        kit.step(1);
        kit.pause();
        if promote {
            kit.advance(20);
            kit.unpause_to(2);
            kit.advance(5);
            kit.step(3);
            kit.advance(5);
            kit.scale("h2", 5, template("app:2", "c2"));
            kit.scale("stable0", 0, template("app:1", "c0"));
            kit.status(|s| {
                s.remove("pauseConditions");
                s.remove("controllerPause");
                s.insert("currentStepIndex".into(), json!(4));
                s.insert("stableRS".into(), json!("h2"));
                s.insert("phase".into(), json!("Healthy"));
            });
        }
        kit.advance(40);
        kit.finish()
    }

    #[test]
    fn issue_46_a_restart_the_rollout_was_promoted_past_is_resolved_with_where_it_ended() {
        let report = race(true);
        let restart = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::RerenderRestart)
            .expect("the restart is still reported");
        let resolved = restart.resolved.as_ref().expect("and resolved");
        assert_eq!(resolved.how, "promoted, Healthy on h2");
        assert!(resolved.at > restart.at);
        // Every finding of a release in progress before the promotion is moved past by it; a
        // finding about configuration is not.
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.rule == Rule::OrphanedReplicaSet && f.resolved.is_none()),
            "{:#?}",
            report.findings
        );
        for f in &report.findings {
            assert_eq!(
                f.resolved.is_some(),
                f.rule.settled_by_promotion() && f.at < resolved.at,
                "{}: {:?}",
                f.rule,
                f.resolved
            );
        }
        let [end] = report.rollouts.as_slice() else {
            panic!("{:?}", report.rollouts)
        };
        assert_eq!(end.describe(), "Healthy on h2");
        assert_eq!(end.role("h2"), Role::Stable);
        assert_eq!(end.role("stable0"), Role::Other);
        assert_eq!(
            end.pods(),
            [
                "checkout-api-h2 stable (current) 5/5 ready",
                "checkout-api-h1 other 1/1 ready"
            ],
            "stable0, scaled to 0, is not listed"
        );
        assert_eq!(
            end.last_settled.as_ref().map(|s| s.hash.as_str()),
            Some("h2")
        );
    }

    #[test]
    fn issue_46_a_restart_still_paused_at_the_end_is_not_resolved() {
        let report = race(false);
        assert!(report.findings.iter().all(|f| f.resolved.is_none()));
        let [end] = report.rollouts.as_slice() else {
            panic!("{:?}", report.rollouts)
        };
        assert_eq!(
            end.describe(),
            "Paused at step 1/4 · current h2 · stable stable0 · paused (CanaryPauseStep)"
        );
        assert_eq!(end.role("h2"), Role::New);
        assert_eq!(end.role("stable0"), Role::Stable);
    }

    /// Argo CD's Events keep the operations that failed before the last one: a sync the
    /// PreSync gate refused, then one that went through. The Application's end state says
    /// both; its succeeded operations and status changes are not kept.
    #[test]
    fn issue_49_the_applications_failed_operations_are_read_from_its_events() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        let failed = "Sync operation to 5adf8d63, 00085 failed: one or more synchronization \
                      tasks completed unsuccessfully, reason: PreSync hook Job \
                      rollout-forensics-gate Failed";
        let first =
            kit.listed_app_event("app.1", ("OperationCompleted", "Warning"), failed, 1, 600);
        kit.listed_app_event(
            "app.2",
            ("OperationCompleted", "Normal"),
            "Sync operation to 5adf8d63, 00085 succeeded",
            1,
            300,
        );
        kit.listed_app_event(
            "app.3",
            ("ResourceUpdated", "Normal"),
            "Updated sync status: Synced -> OutOfSync",
            1,
            300,
        );
        let last = kit.listed_app_event(
            "app.4",
            ("OperationCompleted", "Warning"),
            "Partial sync operation to 5adf8d63 failed: Operation terminated",
            2,
            120,
        );
        kit.app("Synced", "Suspended", &[("r1", 0)]);
        kit.advance(10);
        let report = kit.finish();
        let apps = &report.rollouts[0].applications;
        assert_eq!(apps.len(), 1, "{apps:?}");
        assert_eq!(
            apps[0].failed_before,
            [
                format!("{first}: {failed}"),
                format!(
                    "{last}: Partial sync operation to 5adf8d63 failed: Operation terminated (2 times)"
                ),
            ]
        );
        assert!(
            apps[0].describe().ends_with(&format!(
                " · its Events: 2 failed operations, the last {}",
                apps[0].failed_before[1]
            )),
            "{}",
            apps[0].describe()
        );
    }

    #[test]
    fn issue_46_going_back_to_the_stable_revision_says_so() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        kit.advance(10);
        kit.new_revision("stable0", template("app:1", "c0"));
        kit.advance(10);
        let report = kit.finish();
        let restart = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::RerenderRestart)
            .expect("the restart");
        assert_eq!(
            restart.resolved.as_ref().map(|r| r.how.as_str()),
            Some("back on the stable revision, Healthy on stable0")
        );
    }
}
