//! `deployment-not-scaled-down` (warning): the Deployment a rollout's `workloadRef` took over
//! still runs ready pods beside the rollout's own.
//!
//! # What it detects
//! A rollout with `spec.workloadRef` to a Deployment, past its migration (it has a stable
//! revision), runs ready pods of its own while the Deployment has `spec.replicas` above 0 and
//! ready pods too, for at least 30 s. The finding names both, the ready pods each runs, the
//! rollout's `scaleDown` policy, and, when the recording holds it, the write that scaled the
//! Deployment up again (from 0, by whom).
//!
//! # Why it matters
//! The controller scales the Deployment down only as `scaleDown` says, and only while the
//! rollout's first revision is being rolled out: `onsuccess` once that revision is Healthy,
//! `progressively` as its pods become ready; `never` (the default) leaves it to you. A GitOps
//! sync that restores the Deployment's `replicas` from Git afterwards is never undone: both run,
//! double the capacity, and a Service that selects the app's labels sends part of the traffic to
//! pods no canary step, pause or analysis controls. A sync and a controller that scale the same
//! Deployment in turn are a fight that lasts as long as both run.
//!
//! # Example
//! Rollout `payments/checkout-api` (`workloadRef`, `scaleDown: onsuccess`) is Healthy with 3
//! pods; an Argo CD sync sets Deployment `checkout-api` back to `replicas: 3`, and 3 more pods
//! run beside the rollout's from then on.
//!
//! # Remedy
//! Scale the Deployment to 0 once the rollout serves on its own (a decision: its pods may take
//! traffic), and stop Git from scaling it up again: leave `replicas` out of the Deployment's
//! manifest (or set it to 0), or have Argo CD ignore `/spec/replicas` of that Deployment.

use rf_format::Timestamp;

use crate::base::time::{human_duration, rfc3339};
use crate::detectors::{Detector, Facts, Scene, Settling, argo};
use crate::report::finding::{Finding, Rule, Subject};

/// How long both must run before it counts: the controller scales the Deployment down in the
/// sync that finds the first revision Healthy, and its pods stop being ready within seconds.
pub(crate) const HOLD_SECONDS: i64 = 30;

/// (namespace, rollout, deployment).
type Key = (String, String, String);

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(DeploymentNotScaledDown::default())
}

#[derive(Debug, Default)]
pub(crate) struct DeploymentNotScaledDown {
    settling: Settling<Key>,
}

impl Detector for DeploymentNotScaledDown {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::DeploymentNotScaledDown, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let ns = track.namespace();
        // This rollout's keys: the range of them is made only when any key is held.
        let mine = || {
            super::rollout_keys(track.name(), |n| -> Key {
                (ns.to_owned(), n, String::new())
            })
        };
        self.settling.begin(s.now);
        let (Some(workload), Some(cur)) = (track.workload(), track.last()) else {
            return self.settling.end_in(mine);
        };
        let Some(dep) = s.world.deployment(ns, &workload.deployment) else {
            return self.settling.end_in(mine);
        };
        let Some(stable) = cur.stable_rs.as_deref() else {
            // Still migrating: both run by design until the first revision is Healthy.
            return self.settling.end_in(mine);
        };
        let own: Vec<_> = track
            .replicasets()
            .values()
            .filter(|rs| !rs.deleted && rs.ready > 0)
            .collect();
        let own_ready: i64 = own.iter().map(|rs| rs.ready).sum();
        if dep.replicas == 0 || dep.ready == 0 || own_ready == 0 {
            return self.settling.end_in(mine);
        }
        let key = (
            ns.to_owned(),
            track.name().to_owned(),
            workload.deployment.to_string(),
        );
        let Some(since) = self.settling.ripe(s, key, HOLD_SECONDS) else {
            return self.settling.end_in(mine);
        };

        let name = &dep.name;
        let policy = workload.scale_down.as_deref().unwrap_or("never");
        let scaled_up = dep.scaled_up.as_ref();
        let up_words = scaled_up.map_or_else(String::new, |u| {
            format!(
                ": its replicas went {} -> {} at {}{}",
                u.from,
                u.to,
                rfc3339(u.pos.at),
                u.actor
                    .as_ref()
                    .map(|a| format!(" by {a}"))
                    .unwrap_or_default()
            )
        });
        let summary = format!(
            "Deployment {name} runs {} ready pod(s) beside rollout {}'s {own_ready}, which took it over through workloadRef (scaleDown: {policy}){up_words}",
            dep.ready,
            track.name()
        );
        let policy_words = match policy {
            "onsuccess" => {
                "scaleDown: onsuccess: the controller scaled the Deployment to 0 once, when the rollout's first revision became Healthy, and never does again"
            }
            "progressively" => {
                "scaleDown: progressively: the controller scaled the Deployment down while the rollout's first revision became ready, and never does again after it"
            }
            _ => {
                "scaleDown is never (the default): the controller never scales the Deployment; that is left to whoever runs the migration"
            }
        };
        let fights = if dep.scale_ups > 1 {
            format!(
                " Its replicas went up from 0 {} times in this recording: something scales it down and something else up again.",
                dep.scale_ups
            )
        } else {
            String::new()
        };
        let explanation = format!(
            "The rollout's workloadRef has {policy_words}. The rollout serves on its own (stable revision {stable}, {own_ready} ready pod(s)), yet Deployment {name} has replicas {} with {} ready, so both run: double the capacity, and a Service that selects the app's labels sends part of the traffic to pods that no canary step, pause or analysis controls. Both have run for {} at least.{fights}",
            dep.replicas,
            dep.ready,
            human_duration(s.now.at.0 - since.at.0)
        );
        let mut evidence = Vec::new();
        if let Some(u) = scaled_up {
            evidence.push(dep.evidence_at(
                u.pos,
                format!("replicas {} -> {}{}", u.from, u.to, u.by_words()),
            ));
        }
        if let Some(d) = &dep.scaled_down {
            evidence.push(dep.evidence_at(
                d.pos,
                format!("replicas {} -> 0{}", d.from, d.by_words()),
            ));
        }
        evidence.push(dep.evidence_at(
            dep.pos,
            format!("{} ready of {} replicas", dep.ready, dep.replicas),
        ));
        for rs in &own {
            evidence.push(track.rs_evidence(rs, rs.last, format!("{} ready", rs.ready)));
        }
        evidence.push(track.evidence(
            cur.pos,
            format!("stable revision {stable}, workloadRef Deployment {name} (scaleDown: {policy})"),
        ));
        let commands = vec![
            format!("kubectl -n {ns} get deployment {name}"),
            format!("kubectl argo rollouts get rollout {}", argo(track)),
        ];
        // Its pods may take traffic: scaling it down is a decision, not a command to paste.
        let decide = vec![format!("kubectl -n {ns} scale deployment {name} --replicas=0")];
        out.push(
            Finding::new(
                Rule::DeploymentNotScaledDown,
                Subject::new(rf_format::api::DEPLOYMENT.newest(), ns, name),
                track.subject(),
                since.at,
                summary,
            )
            .explain(explanation)
            .with_evidence(evidence)
            .remedy(
                format!(
                    "Once the rollout's own pods carry the load, scale Deployment {name} to 0; check first that no Service sends traffic only to its pods."
                ),
                commands,
                format!(
                    "Stop Git from scaling {name} up again: leave `replicas` out of its manifest (or set it to 0), or have Argo CD ignore /spec/replicas of that Deployment (ignoreDifferences)."
                ),
            )
            .decide(decide),
        );
        self.settling.end_in(mine)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::HOLD_SECONDS;
    use crate::Rule;
    use crate::testkit::{Kit, NAME, NS, template};

    /// The rollout runs Deployment `checkout-api`'s template with `scaleDown`, Healthy on it
    /// with 5 pods; the Deployment was scaled to 0 by the controller.
    fn migrated(scale_down: &str) -> Kit {
        let mut kit = Kit::new();
        kit.deployment(5, 5, template("app:1", "c0"), "argocd-controller");
        kit.workload_ref(scale_down);
        kit.advance(5);
        kit.deployment(0, 0, template("app:1", "c0"), "rollouts-controller");
        kit
    }

    #[test]
    fn a_sync_that_scales_the_deployment_up_again_is_reported_with_both_sides() {
        let mut kit = migrated("onsuccess");
        kit.advance(60);
        kit.deployment(3, 0, template("app:1", "c0"), "argocd-controller");
        kit.advance(5);
        kit.deployment(3, 3, template("app:1", "c0"), "kube-controller-manager");
        kit.advance(HOLD_SECONDS - 1);
        kit.step(4);
        assert!(kit.of_rule(Rule::DeploymentNotScaledDown).is_empty(), "not before it held {HOLD_SECONDS}s");
        kit.advance(2);
        kit.step(4);
        let f = kit.of_rule(Rule::DeploymentNotScaledDown);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        let f = f[0];
        assert!(
            f.summary.contains("Deployment checkout-api runs 3 ready pod(s)")
                && f.summary.contains(&format!("rollout {NAME}'s 5"))
                && f.summary.contains("scaleDown: onsuccess")
                && f.summary.contains("0 -> 3")
                && f.summary.contains("by argocd-controller"),
            "{}",
            f.summary
        );
        assert_eq!(f.subject.kind.name(), "Deployment");
        assert!(
            f.remedy.commands.iter().all(|c| !c.contains("scale")),
            "scaling down is a decision: {:?}",
            f.remedy.commands
        );
        assert_eq!(
            f.remedy.decisions,
            [format!("kubectl -n {NS} scale deployment checkout-api --replicas=0")]
        );
        assert!(
            f.evidence.iter().any(|e| e.detail.contains("replicas 0 -> 3")),
            "{:?}",
            f.evidence
        );
    }

    #[test]
    fn a_deployment_kept_at_zero_or_without_ready_pods_is_no_finding() {
        let mut kit = migrated("onsuccess");
        kit.advance(600);
        kit.step(4);
        // Scaled up but never ready (no capacity): nothing runs beside the rollout.
        kit.deployment(3, 0, template("app:1", "c0"), "argocd-controller");
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::DeploymentNotScaledDown).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn both_running_during_the_migration_is_by_design() {
        let mut kit = Kit::new();
        kit.status(|s| {
            s.remove("stableRS");
            s.insert("phase".into(), json!("Progressing"));
        });
        kit.deployment(5, 5, template("app:1", "c0"), "argocd-controller");
        kit.workload_ref("progressively");
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::DeploymentNotScaledDown).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn scale_down_never_left_running_is_reported_as_left_to_the_user() {
        let mut kit = Kit::new();
        kit.deployment(2, 2, template("app:1", "c0"), "argocd-controller");
        kit.workload_ref("never");
        kit.advance(HOLD_SECONDS + 1);
        kit.step(4);
        let f = kit.of_rule(Rule::DeploymentNotScaledDown);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].explanation.contains("never scales the Deployment"),
            "{}",
            f[0].explanation
        );
        assert!(!f[0].summary.contains("->"), "no scale-up was recorded");
    }

    #[test]
    fn a_render_of_the_deployment_at_the_pause_is_the_race_with_the_deployment_named() {
        let mut kit = migrated("onsuccess");
        kit.workload_release_to_pause("new1", template("app:2", "c0"));
        kit.advance(20);
        kit.workload_revision("new2", template("app:2", "c1"));
        let rules = kit.rules();
        for rule in [
            Rule::RerenderRestart,
            Rule::PauseLost,
            Rule::ConfigOnlyRerender,
        ] {
            assert!(rules.contains(&rule), "{rule:?} missing: {rules:?}");
        }
        let restart = kit
            .found
            .iter()
            .find(|f| f.rule == Rule::RerenderRestart)
            .unwrap();
        assert!(
            restart
                .explanation
                .contains("a change of Deployment checkout-api (the rollout's workloadRef)"),
            "{}",
            restart.explanation
        );
        assert!(
            restart
                .evidence
                .iter()
                .any(|e| e.object.kind.name() == "Deployment" && e.detail.starts_with("render")),
            "{:?}",
            restart.evidence
        );
        let double = kit
            .found
            .iter()
            .find(|f| f.rule == Rule::DoubleRender)
            .unwrap();
        assert!(
            double.summary.contains("of Deployment checkout-api"),
            "{}",
            double.summary
        );
    }
}
