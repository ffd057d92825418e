//! `gitops-health-mismatch` (info or warning): the Argo CD Application reads red while the rollout
//! pauses by design (info), or green while the rollout is Degraded or its revision is not adopted
//! (warning).
//!
//! # What it detects
//! The Argo CD Application that manages a rollout (it lists the Rollout in
//! `status.resources`, or the Rollout carries its tracking id or instance label) disagrees with
//! the rollout:
//! - **info**: the Application reads `Suspended` or `Degraded` while the rollout is paused at a
//!   canary pause step by design (not aborted, not Degraded);
//! - **warning**: the Application reads `Healthy` and `Synced` while the rollout is Degraded, or
//!   while its current revision takes traffic that no Service sends it
//!   (`canary-not-in-endpoints`), for at least 10 s.
//!
//! Once per Application, revision and kind of disagreement.
//!
//! # Why it matters
//! People act on the GitOps UI. A paused canary reads red there by design, and pipelines get
//! re-run against a healthy rollout ("trust the rollout, not the app health"). The opposite is
//! worse: green everywhere while customers never reach the release.
//!
//! # Example
//! `checkout-api` reads `Suspended` at 13:03:00 while the rollout waits at step 1 (pause until
//! promoted) on `7b4c9f5d86`.
//!
//! # Remedy
//! Trust the rollout, not the app health; add an adoption check to the sync.


use rf_format::{Kind, Timestamp};

use crate::detectors::{
    Detector, Facts, FactsUse, SETTLE_SECONDS, Scene, Settling, argo, paused_words, step_words,
};
use crate::report::finding::{Finding, Rule, Severity, Subject};
use crate::base::time::rfc3339;

/// (rollout namespace, rollout, app namespace, app, hash, kind of mismatch): a rollout's keys
/// are next to each other, and a look visits its own only ([`Settling::end_in`]).
type Key = (String, String, String, String, String, &'static str);


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(GitopsHealthMismatch::default())
}

#[derive(Debug, Default)]
pub(crate) struct GitopsHealthMismatch {
    settling: Settling<Key>,
}

impl Detector for GitopsHealthMismatch {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::GitopsHealthMismatch, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
    }

    fn facts(&self) -> FactsUse {
        FactsUse::Reads
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let cur = track.last()?;
        // Copied only into the keys of an Application that mismatches (this runs on every look).
        let hash = cur.pod_hash.as_deref().unwrap_or_default();
        self.settling.begin(s.now);
        for app in s.world.apps_of(track) {
            let health = app.health.as_deref().unwrap_or("");
            let sync = app.sync.as_deref().unwrap_or("");
            let rollout_degraded = cur.phase.as_deref() == Some("Degraded");
            let by_design = cur.at_pause_step() && !cur.abort && !rollout_degraded;
            let green = health == "Healthy" && sync == "Synced";
            // Asked of a green Application only (a scan of every rollout's facts).
            let not_adopted = if green && !rollout_degraded {
                facts.not_adopted(track, hash)
            } else {
                None
            };
            let kind: &'static str = if by_design && matches!(health, "Suspended" | "Degraded") {
                "red-while-paused"
            } else if green && rollout_degraded {
                "green-while-degraded"
            } else if not_adopted.is_some() {
                "green-while-not-adopted"
            } else {
                continue;
            };
            let key = (
                track.namespace().to_owned(),
                track.name().to_owned(),
                app.namespace.clone(),
                app.name.clone(),
                hash.to_owned(),
                kind,
            );
            let Some(since) = self.settling.holds(&key, s.now) else {
                continue;
            };
            // Paused-and-red is how Argo CD shows a pause: true at once. The others wait for
            // Argo CD's refresh to catch up.
            if kind != "red-while-paused" && !self.settling.settled(s, since, SETTLE_SECONDS) {
                continue;
            }
            self.settling.fire(key, s.now);
            let subject = Subject::new(Kind::Application, &app.namespace, &app.name);
            let app_state = format!(
                "health {health}, sync {sync}{}",
                app.revision
                    .as_ref()
                    .map(|r| format!(" at revision {r}"))
                    .unwrap_or_default()
            );
            let finding = match kind {
                "red-while-paused" => Finding::new(
                    Rule::GitopsHealthMismatch,
                    subject,
                    track.subject(),
                    since.at,
                    format!(
                        "Application {} reads {health} while rollout {} is paused {} by design",
                        app.name,
                        track.name(),
                        if track.is_blue_green() {
                            "before promotion".to_owned()
                        } else {
                            format!("at {}", step_words(track, cur.step_index))
                        }
                    ),
                )
                .with_severity(Severity::Info)
                .explain(format!(
                    "Argo CD maps a paused Rollout to Suspended (older health checks to Degraded). The rollout itself is fine: it waits at {} on {hash} since {}. Trust the rollout, not the app health: do not re-run the pipeline or re-sync because of this colour.",
                    if track.is_blue_green() { "its pause before promotion" } else { "a pause step" },
                    rfc3339(cur.pos.at)
                ))
                .with_evidence([
                    app.evidence(app_state),
                    track.evidence(cur.pos, paused_words(track, cur.step_index)),
                ])
                .remedy(
                    "Nothing to fix; promote when the canary is verified.".to_owned(),
                    vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
                    "Have pipelines wait on the rollout's own state (rollout-forensics wait --for pause), not on the Application's health.".to_owned(),
                )
                .decide(vec![format!("kubectl argo rollouts promote {}", argo(track))]),
                _ => {
                    let (what, evidence_detail) = if kind == "green-while-degraded" {
                        (
                            format!(
                                "rollout {} is Degraded{}",
                                track.name(),
                                cur.message
                                    .as_ref()
                                    .map(|m| format!(" ({m})"))
                                    .unwrap_or_default()
                            ),
                            "phase Degraded".to_owned(),
                        )
                    } else if let Some(n) = not_adopted {
                        (n.what.clone(), n.detail.clone())
                    } else {
                        continue;
                    };
                    Finding::new(
                        Rule::GitopsHealthMismatch,
                        subject,
                        track.subject(),
                        since.at,
                        format!("Application {} reads Healthy and Synced while {what}", app.name),
                    )
                    .explain(format!(
                        "Synced says Git matches the cluster; Healthy says the objects report healthy. Neither says customers reach the release. Since {} the Application has been green while {what}.",
                        rfc3339(since.at)
                    ))
                    .with_evidence([
                        app.evidence(app_state),
                        track.evidence(cur.pos, evidence_detail),
                    ])
                    .remedy(
                        "Do not take the green Application as proof of the release; look at the rollout and its Service's endpoints.".to_owned(),
                        vec![
                            format!("kubectl argo rollouts get rollout {}", argo(track)),
                            format!("rollout-forensics check {} -n {}", track.name(), track.namespace()),
                        ],
                        "Add an adoption check (rollout-forensics check, as a PostSync hook) so the Application's sync fails when the release is not reached.".to_owned(),
                    )
                }
            };
            out.push(finding);
        }
        // Every key of this rollout, and none of another's.
        let ns = track.namespace();
        self.settling.end_in(|| {
            super::rollout_keys(track.name(), |n| -> Key {
                (ns.to_owned(), n, String::new(), String::new(), String::new(), "")
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::testkit::{Kit, template};
    use crate::{Rule, Severity};

    fn gitops(kit: &Kit) -> Vec<&crate::Finding> {
        kit.found
            .iter()
            .filter(|f| f.rule == Rule::GitopsHealthMismatch)
            .collect()
    }

    #[test]
    fn suspended_while_paused_by_design_is_info() {
        let mut kit = Kit::new();
        kit.app("Synced", "Healthy", &[("r1", 0)]);
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.advance(2);
        kit.app("Synced", "Suspended", &[("r1", 0), ("r2", 5)]);
        let f = gitops(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert_eq!(f[0].severity, Severity::Info);
        assert_eq!(f[0].subject.kind, rf_format::Kind::Application);
    }

    /// The Suspended-while-paused case with an Application that does not list the rollout,
    /// the rollout naming it by tracking id or not.
    fn paused_under_an_unlisting_app(tracking_id: bool) -> usize {
        let mut kit = Kit::new();
        if tracking_id {
            kit.rollout["metadata"]["annotations"] = json!({
                "argocd.argoproj.io/tracking-id": "checkout-api:argoproj.io/Rollout:payments/checkout-api"
            });
        }
        kit.app_listing("Synced", "Healthy", &[("r1", 0)], false);
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.advance(2);
        kit.app_listing("Synced", "Suspended", &[("r1", 0), ("r2", 5)], false);
        gitops(&kit).len()
    }

    #[test]
    fn an_app_that_manages_the_rollout_by_tracking_id_is_looked_at_when_it_changes() {
        assert_eq!(paused_under_an_unlisting_app(true), 1);
        assert_eq!(paused_under_an_unlisting_app(false), 0);
    }

    #[test]
    fn healthy_and_synced_while_degraded_is_a_warning_once_settled() {
        let mut kit = Kit::new();
        kit.app("Synced", "Healthy", &[("r1", 0)]);
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.status(|s| {
            s.insert("phase".into(), json!("Degraded"));
            s.insert("message".into(), json!("ProgressDeadlineExceeded"));
            s.remove("pauseConditions");
        });
        assert!(gitops(&kit).is_empty());
        kit.advance(30);
        kit.app("Synced", "Healthy", &[("r1", 0)]);
        let f = gitops(&kit);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert_eq!(f[0].severity, Severity::Warning);
    }

    #[test]
    fn agreeing_states_are_fine() {
        let mut kit = Kit::new();
        kit.app("Synced", "Healthy", &[("r1", 0)]);
        kit.advance(5);
        kit.new_revision("new1", template("app:2", "c1"));
        kit.app("Synced", "Progressing", &[("r1", 0), ("r2", 5)]);
        kit.advance(120);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::GitopsHealthMismatch)
        );
    }

    #[test]
    fn degraded_app_while_the_rollout_is_degraded_is_no_mismatch() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
        });
        kit.app("Synced", "Degraded", &[("r1", 0)]);
        kit.advance(120);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::GitopsHealthMismatch)
        );
    }
}
