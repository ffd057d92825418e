//! `no-rollback-history` (warning): `revisionHistoryLimit: 0`, or the previous stable ReplicaSet
//! deleted before the rollout was Healthy.
//!
//! # What it detects
//! A rollout with `spec.revisionHistoryLimit: 0` (reported once, when first seen so), or the
//! ReplicaSet of its stable revision deleted mid-release, or of its previous stable revision
//! deleted while the rollout was not yet Healthy on the new one (reported per ReplicaSet).
//! A plain Deployment (one no rollout's `workloadRef` names) with
//! `spec.revisionHistoryLimit: 0`, reported once, with `kubectl rollout history`.
//!
//! # Why it matters
//! A rollback to the previous release reuses its ReplicaSet. Without it, `kubectl argo rollouts
//! undo` has nothing to go back to, and a bad release can only be fixed forward through the
//! pipeline, at the worst moment.
//!
//! # Example
//! `payments/checkout-api` has `revisionHistoryLimit: 0`: after the release of `5d98c7bf64` the
//! ReplicaSet of `68f6c5dd9b` is deleted.
//!
//! # Remedy
//! Keep `revisionHistoryLimit` at 2 or more; keep pruning away from ReplicaSets a Rollout owns.
//!
//! # Before the sync
//! `lint` reads `revisionHistoryLimit: 0` on a rendered Rollout or Deployment.

use std::collections::{BTreeMap, BTreeSet};

use rf_format::Kind;

use crate::detectors::{DeploymentScene, Detector, argo};
use crate::report::finding::{Finding, Rule, Subject};
use crate::model::rollout::{RolloutTrack, Transition};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(NoRollbackHistory::default())
}

#[derive(Debug, Default)]
pub(crate) struct NoRollbackHistory {
    /// The stable revision before the current one, per rollout.
    previous_stable: BTreeMap<(String, String), String>,
    fired_limit: BTreeSet<(String, String, String)>,
    fired_rs: BTreeSet<(String, String)>,
    /// Deployments reported, by (namespace, name).
    fired_deployments: BTreeSet<(String, String)>,
}

impl Detector for NoRollbackHistory {
    fn on_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        let dep = d.dep;
        if d.pod.is_some()
            || dep.revision_history_limit != Some(0)
            || !self
                .fired_deployments
                .insert((dep.namespace.clone(), dep.name.clone()))
        {
            return;
        }
        let (ns, name) = (&dep.namespace, &dep.name);
        out.push(
            Finding::new(
                Rule::NoRollbackHistory,
                d.subject(),
                d.subject(),
                dep.pos.at,
                format!("Deployment {name} keeps no old ReplicaSets (revisionHistoryLimit: 0): `kubectl rollout undo` has nothing to go back to"),
            )
            .explain("With revisionHistoryLimit 0 the Deployment controller deletes every old ReplicaSet once it is scaled down. `kubectl rollout undo` rolls back to the template of a previous ReplicaSet; with none kept, it fails, and the only way back is a new release through the pipeline.".to_owned())
            .with_evidence([d.evidence("spec.revisionHistoryLimit: 0")])
            .remedy(
                "Keep at least the previous revision.".to_owned(),
                vec![format!("kubectl -n {ns} rollout history deployment/{name}")],
                "Set spec.revisionHistoryLimit to 2 or more in the manifest.".to_owned(),
            ),
        );
    }

    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let track = t.track;
        let key = (track.namespace().to_owned(), track.name().to_owned());
        if let (Some(old), Some(new)) = (&t.prev.stable_rs, &t.cur.stable_rs) {
            if old != new {
                self.previous_stable.insert(key.clone(), old.to_string());
            }
        }
        if track.revision_history_limit() != Some(0)
            || !self
                .fired_limit
                .insert((key.0.clone(), key.1.clone(), track.uid().to_owned()))
        {
            return;
        }
        out.push(
            Finding::new(
                Rule::NoRollbackHistory,
                track.subject(),
                track.subject(),
                t.cur.pos.at,
                format!("rollout {} keeps no old ReplicaSets (revisionHistoryLimit: 0): nothing to roll back to", track.name()),
            )
            .explain("With revisionHistoryLimit 0 the controller deletes every old ReplicaSet once it is scaled down. A rollback needs the previous revision's ReplicaSet; without it the only way back is a new release through the pipeline.".to_owned())
            .with_evidence([track.evidence(t.cur.pos, "spec.revisionHistoryLimit: 0")])
            .remedy(
                "Keep at least the previous revision.".to_owned(),
                vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
                "Set spec.revisionHistoryLimit to 2 or more in the manifest.".to_owned(),
            ),
        );
    }

    fn on_replicaset(&mut self, track: &RolloutTrack, out: &mut Vec<Finding>) {
        let Some((name, true)) = track.last_rs_change() else {
            return;
        };
        let Some(cur) = track.last() else { return };
        let Some(rs) = track.replicasets().get(name) else {
            return;
        };
        let Some(hash) = rs.hash.as_deref() else {
            return;
        };
        let key = (track.namespace().to_owned(), track.name().to_owned());
        let is_stable_mid_release =
            cur.stable_rs.as_deref() == Some(hash) && cur.pod_hash.as_deref() != Some(hash);
        let is_previous_stable = self.previous_stable.get(&key).map(String::as_str) == Some(hash)
            && cur.phase.as_deref() != Some("Healthy");
        if !(is_stable_mid_release || is_previous_stable) {
            return;
        }
        if !self
            .fired_rs
            .insert((track.namespace().to_owned(), name.to_string()))
        {
            return;
        }
        let phase = cur.phase.as_deref().unwrap_or("unknown").to_owned();
        out.push(
            Finding::new(
                Rule::NoRollbackHistory,
                Subject::new(Kind::ReplicaSet, track.namespace(), name),
                track.subject(),
                rs.last.at,
                format!(
                    "ReplicaSet {name} of the previous stable revision {hash} was deleted while the rollout was {phase}, not yet Healthy on {}",
                    cur.pod_hash.as_deref().unwrap_or("its new revision")
                ),
            )
            .explain("Until the new revision is Healthy, the previous stable ReplicaSet is the way back. It is gone: a rollback now creates it anew from the old template (a full restart of the old revision), or is impossible if the template is gone too.".to_owned())
            .with_evidence([
                track.rs_evidence(rs, rs.last, format!("deleted ReplicaSet of {hash}")),
                track.evidence(cur.pos, format!("phase {phase}")),
            ])
            .remedy(
                "Do not rely on a quick rollback for this release; find what deleted the ReplicaSet.".to_owned(),
                vec![
                    format!("kubectl argo rollouts get rollout {}", argo(track)),
                    format!("kubectl -n {} get rs -l rollouts-pod-template-hash={hash}", track.namespace()),
                ],
                "Keep revisionHistoryLimit of 2 or more, and keep cleanup jobs and pruning (Argo CD prune) away from ReplicaSets that a Rollout owns.".to_owned(),
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    fn count(report: &crate::Report) -> usize {
        report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::NoRollbackHistory)
            .count()
    }

    #[test]
    fn revision_history_limit_zero_is_reported_once() {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s.insert("revisionHistoryLimit".into(), json!(0));
        });
        kit.release_to_pause("a", template("app:2", "c1"));
        assert_eq!(count(&kit.finish()), 1);
    }

    #[test]
    fn deleting_the_stable_replicaset_mid_release_is_reported() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template("app:2", "c1"));
        kit.replicaset(
            "stable0",
            0,
            template("app:1", "c0"),
            rf_format::Op::Deleted { inferred: false },
        );
        let report = kit.finish();
        assert_eq!(count(&report), 1, "{:#?}", report.findings);
        assert_eq!(
            report
                .findings
                .iter()
                .find(|f| f.rule == Rule::NoRollbackHistory)
                .unwrap()
                .subject
                .kind,
            rf_format::Kind::ReplicaSet
        );
    }

    #[test]
    fn a_default_history_and_cleanup_after_healthy_are_fine() {
        let mut kit = Kit::new();
        kit.release_to_pause("a", template("app:2", "c1"));
        kit.status(|s| {
            s.insert("stableRS".into(), json!("a"));
            s.insert("currentStepIndex".into(), json!(4));
            s.insert("phase".into(), json!("Healthy"));
            s.remove("pauseConditions");
        });
        kit.advance(60);
        kit.replicaset(
            "stable0",
            0,
            template("app:1", "c0"),
            rf_format::Op::Deleted { inferred: false },
        );
        let report = kit.finish();
        assert_eq!(count(&report), 0, "{:#?}", report.findings);
    }
}
