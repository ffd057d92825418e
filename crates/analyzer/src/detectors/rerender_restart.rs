//! `rerender-restart` (error): a canary that had progressed restarted at step 0 because
//! `status.currentPodHash` changed.
//!
//! # What it detects
//! `status.currentPodHash` changed while a canary was in progress and had progressed (reached a
//! step past 0 or a pause), and `status.currentStepIndex` dropped back (to 0): the controller saw a
//! new pod template and restarted the canary. Never raised for an abort (the index drops, the hash
//! stays), a steps-only change (`currentStepHash` changes, the hash stays), a rollback to stable
//! (the new hash is `stableRS`: the index jumps to the end), or a new release from a completed
//! rollout. A blue-green rollout has no steps: its preview restarted when a new pod template
//! replaced it while it waited at its pause before promotion (`BlueGreenPause`), not after
//! promotion and not before the pause was reached.
//!
//! # Why it matters
//! A GitOps re-render that changes anything in the pod template, even only a `checksum/config`
//! annotation, creates a new revision. A canary that had reached its pause starts over; the
//! pipeline waiting for that pause times out; re-running it renders twice again.
//!
//! # Example
//! `checkout-api` paused at step 1 on `7b4c9f5d86`; 30 s after the first render a second render
//! of the same release changed `checksum/config`; the status then read `currentPodHash:
//! 5d98c7bf64, currentStepIndex: 0`.
//!
//! # Evidence
//! Where the old revision got to (and paused), both renders with their generations and managers,
//! the new ReplicaSet's creation, the status write that reset the index.
//!
//! # Remedy
//! Do not re-run the pipeline; `kubectl argo rollouts get rollout NAME -n NS`. Render once per
//! release; make the wait reset on a hash change.
//!
//! # Before the sync
//! `lint --live` compares each rendered Rollout's pod template with the live one (fields the
//! API server defaults left out): a render that changes it while a canary is past step 0 (or a
//! blue-green preview waits for promotion) is refused, with the revision in progress, its step,
//! and what the render changes. A render of the stable revision's template (a revert) is the
//! controller's rollback, not a restart, and passes.

use crate::detectors::{
    Detector, argo, hash_change_words, paused_words, revision_word, step_words,
};
use crate::report::finding::{Finding, Rule};
use crate::model::rollout::{RevisionClass, Transition};
use crate::base::time::{human_duration, rfc3339};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(RerenderRestart)
}

#[derive(Debug)]
pub(crate) struct RerenderRestart;

impl Detector for RerenderRestart {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(change) = t.revision else { return };
        if change.class != RevisionClass::Restart {
            return;
        }
        let track = t.track;
        let lost = t.prev.step_index;
        let since = match (&change.render, &change.previous_render) {
            (Some(r), Some(p)) => format!(
                ", {} after the previous render",
                human_duration(r.pos.at.0 - p.pos.at.0)
            ),
            _ => String::new(),
        };
        let blue_green = track.is_blue_green();
        let what = revision_word(track);
        let summary = if blue_green {
            format!(
                "preview restarted: the pre-promotion pause of {} was lost to a new pod template {}{}",
                change.from, change.to, since
            )
        } else {
            format!(
                "canary restarted at step {}: {} of {} was lost to a new pod template {}{}",
                t.cur.step_index,
                step_words(track, lost),
                change.from,
                change.to,
                since
            )
        };
        let paused_note = if t.prev.at_pause_step() {
            format!(", paused at step {lost}")
        } else {
            String::new()
        };
        let mut explanation = if blue_green {
            format!(
                "status.currentPodHash changed {} ({}) -> {} ({}) while the preview waited to be promoted{}: the controller starts a new preview ReplicaSet, and the pause before promotion comes again only once it is ready.",
                change.from,
                track.rs_name(&change.from),
                change.to,
                track.rs_name(&change.to),
                if t.prev.at_pause_step() { " (paused before promotion)" } else { "" },
            )
        } else {
            format!(
                "status.currentPodHash changed {} ({}) -> {} ({}) while the canary was in progress: it had reached step {} of {}{}. The controller reset status.currentStepIndex to {}.",
                change.from,
                track.rs_name(&change.from),
                change.to,
                track.rs_name(&change.to),
                change.old_progress.max_index,
                t.prev.steps_len,
                paused_note,
                t.cur.step_index
            )
        };
        if let Some(r) = &change.render {
            explanation.push_str(&format!(
                " The new template came from {} at {} (generation {}{}).",
                r.deployment.as_ref().map_or_else(
                    || "a spec change".to_owned(),
                    |d| format!("a change of Deployment {d} (the rollout's workloadRef)")
                ),
                rfc3339(r.pos.at),
                r.generation.unwrap_or(0),
                r.by_words()
            ));
        }
        let story = crate::detectors::writer::story(
            change.render.as_ref(),
            change.previous_render.as_ref(),
            what,
            &change.to,
            false,
        );
        if let (Some(r), Some(p)) = (&change.render, &change.previous_render) {
            let gap = r.pos.at.0 - p.pos.at.0;
            explanation.push_str(&format!(
                " The previous template change was {} earlier (generation {}{}{}){}",
                human_duration(gap),
                p.generation.unwrap_or(0),
                p.deployment
                    .as_ref()
                    .map(|d| format!(" of Deployment {d}"))
                    .unwrap_or_default(),
                p.by_words(),
                if story.render_race {
                    ": two renders of one release in quick succession is the re-render race."
                } else {
                    "."
                }
            ));
        }
        if !story.why.is_empty() {
            explanation.push(' ');
            explanation.push_str(&story.why);
        }
        explanation
            .push_str(" This was not an abort, a steps-only change or a rollback to stable.");

        let mut evidence = Vec::new();
        if let Some(at) = change.old_progress.max_at.filter(|_| !blue_green) {
            evidence.push(track.evidence(
                at,
                format!(
                    "{} reached {}",
                    change.from,
                    step_words(track, change.old_progress.max_index)
                ),
            ));
        }
        if let Some((p, at)) = change.old_progress.last_pause() {
            evidence.push(track.evidence(
                at,
                format!("{} on {}", paused_words(track, p), change.from),
            ));
        }
        for (label, r) in [
            ("previous render", &change.previous_render),
            ("render", &change.render),
        ] {
            if let Some(r) = r {
                evidence.push(r.evidence(
                    track,
                    format!(
                        "{label}: pod template changed, generation {}{}",
                        r.generation.unwrap_or(0),
                        r.by_words()
                    ),
                ));
            }
        }
        if let Some(rs) = track.rs_by_hash(&change.to) {
            if let Some(created) = rs.created {
                evidence.push(track.rs_evidence(
                    rs,
                    created,
                    format!("created for revision {}", change.to),
                ));
            }
        }
        evidence.push(track.evidence(
            t.cur.pos,
            hash_change_words(track, t, change),
        ));

        out.push(
            Finding::new(Rule::RerenderRestart, track.subject(), track.subject(), t.cur.pos.at, summary)
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    story.now,
                    vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
                    story.prevent,
                ),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, rules_of, template};

    fn race() -> Kit {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        kit
    }

    #[test]
    fn a_second_render_after_the_pause_restarts_the_canary() {
        let kit = race();
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::RerenderRestart)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        let f = f[0];
        assert!(
            f.summary.contains("h1") && f.summary.contains("h2"),
            "{}",
            f.summary
        );
        assert!(f.summary.contains("step 1"), "{}", f.summary);
        assert!(
            f.summary.contains("after the previous render"),
            "{}",
            f.summary
        );
        assert!(
            f.explanation.contains("checkout-api-h1") && f.explanation.contains("checkout-api-h2")
        );
        assert!(
            f.evidence.iter().any(|e| e.object.name == "checkout-api-h2"
                && e.detail.contains("created for revision h2"))
        );
        assert!(
            f.evidence
                .iter()
                .any(|e| e.detail.contains("currentStepIndex 1 -> 0"))
        );
    }

    #[test]
    fn abort_resets_step_index_without_a_rerender_finding() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("currentStepIndex".into(), json!(0));
            s.insert("phase".into(), json!("Degraded"));
            s.remove("pauseConditions");
        });
        // A later render after the abort is not a restart either.
        kit.new_revision("h2", template("app:3", "c1"));
        assert!(
            !kit.rules().contains(&Rule::RerenderRestart),
            "{:?}",
            kit.rules()
        );
    }

    #[test]
    fn a_steps_only_change_gets_no_rerender_finding() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.spec(|s| {
            s.insert(
                "strategy".into(),
                json!({"canary": {"steps": [{"setWeight": 10}, {"pause": {}}]}}),
            );
        });
        kit.status(|s| {
            s.insert("currentStepHash".into(), json!("steps1"));
            s.insert("currentStepIndex".into(), json!(0));
            s.remove("pauseConditions");
        });
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn a_rollback_to_stable_is_not_a_restart() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.new_revision("stable0", template("app:1", "c0"));
        kit.scale("h1", 0, template("app:2", "c1"));
        let report = kit.finish();
        assert!(rules_of(&report).is_empty(), "{:?}", rules_of(&report));
    }

    #[test]
    fn a_new_release_from_a_healthy_rollout_is_not_a_restart() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c1"));
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn a_render_before_the_canary_progressed_is_not_a_restart() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c1"));
        kit.advance(2);
        kit.new_revision("h2", template("app:2", "c2"));
        assert!(
            !kit.rules().contains(&Rule::RerenderRestart),
            "{:?}",
            kit.rules()
        );
    }
}

#[cfg(test)]
mod coalesced_tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_reset_written_after_the_hash_change_is_still_one_restart() {
        // Sources that coalesce writes (kubectl watch output) can show the new hash with the old
        // index first and the drop to 0 in the next object.
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        let tpl = template("app:2", "c2");
        kit.spec(|s| {
            s.insert("template".into(), tpl.clone());
        });
        kit.replicaset("h2", 0, tpl, rf_format::Op::Added);
        kit.status(|s| {
            s.insert("currentPodHash".into(), json!("h2"));
        });
        assert!(!kit.rules().contains(&Rule::RerenderRestart));
        kit.status(|s| {
            s.insert("currentStepIndex".into(), json!(0));
            s.remove("pauseConditions");
        });
        let rules = kit.rules();
        assert_eq!(
            rules
                .iter()
                .filter(|r| **r == Rule::RerenderRestart)
                .count(),
            1,
            "{rules:?}"
        );
        assert!(rules.contains(&Rule::PauseLost), "{rules:?}");
        assert!(rules.contains(&Rule::ConfigOnlyRerender), "{rules:?}");
    }

    #[test]
    fn a_rollout_recreated_under_the_same_name_starts_a_new_history() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.rollout["metadata"]["uid"] = json!("uid-rollout-2");
        kit.rollout["status"] =
            json!({"currentPodHash": "h2", "currentStepIndex": 0, "phase": "Progressing"});
        kit.status(|_| {});
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }
}
