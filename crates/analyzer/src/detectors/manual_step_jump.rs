//! `manual-step-jump` (warning): `currentStepIndex` moved past a pause that was never reached (a
//! status patch).
//!
//! # What it detects
//! `status.currentStepIndex` moved forward, with the pod-template hash unchanged and no
//! `promoteFull`, past a pause step that was never reached (no `CanaryPauseStep` condition was
//! seen at that index for the revision). The controller never skips an unprocessed pause; a
//! status patch does (the status subresource is not validated and does not bump `generation`).
//! Not raised across a recording gap, where the pause may have come and gone unseen.
//!
//! # Why it matters
//! The checks planned at that pause (manual verification, a pipeline gate) did not happen, and
//! a later reset can surprise whoever jumped.
//!
//! # Example
//! `currentStepIndex` 0 -> 2 by manager `kubectl-patch`, skipping the `pause: {}` at step 1.
//!
//! # Remedy
//! Abort and retry if the skipped checks matter; advance with `promote`, never by patching
//! `status.currentStepIndex`.

use crate::detectors::{Detector, argo, step_words};
use crate::report::finding::{Finding, Rule};
use crate::model::rollout::Transition;


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(ManualStepJump)
}

#[derive(Debug)]
pub(crate) struct ManualStepJump;

impl Detector for ManualStepJump {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(jump) = t.jump else { return };
        let track = t.track;
        let skipped: Vec<String> = jump
            .skipped_pauses
            .iter()
            .map(|&k| step_words(track, k))
            .collect();
        let by = t
            .cur
            .actor
            .as_ref()
            .map(|a| format!(" by {a}"))
            .unwrap_or_default();
        let generation_note = if t.prev.generation == t.cur.generation {
            "metadata.generation did not change, so this was a status write, not a spec change"
        } else {
            "metadata.generation changed at the same time"
        };
        out.push(
            Finding::new(
                Rule::ManualStepJump,
                track.subject(),
                track.subject(),
                t.cur.pos.at,
                format!(
                    "currentStepIndex jumped {} -> {} past {} that was never reached{by}",
                    jump.from,
                    jump.to,
                    skipped.join(", ")
                ),
            )
            .explain(format!(
                "No CanaryPauseStep condition was ever seen at {} for revision {}; {generation_note}. The controller does not skip an unprocessed pause: status.currentStepIndex was patched. Whatever was planned at that pause did not happen.",
                skipped.join(", "),
                t.cur.pod_hash.as_deref().unwrap_or("-")
            ))
            .with_evidence([
                track.evidence(t.prev.pos, format!("currentStepIndex {}", jump.from)),
                track.evidence(t.cur.pos, format!("currentStepIndex {} -> {}{by}", jump.from, jump.to)),
            ])
            .remedy(
                "If the skipped pause guarded a check that matters, run the steps again: abort, then retry.".to_owned(),
                vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
                "Advance canaries with `kubectl argo rollouts promote` (one step) or `promote --full`, never by patching status.currentStepIndex; grant patch on rollouts/status to the controller only.".to_owned(),
            )
            .decide(vec![
                format!("kubectl argo rollouts abort {}", argo(track)),
                format!("kubectl argo rollouts retry rollout {}", argo(track)),
            ]),
        );
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_patched_index_past_an_unreached_pause_is_reported_with_its_actor() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c1"));
        kit.advance(3);
        kit.set_managed("kubectl-patch", true);
        kit.step(2);
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::ManualStepJump)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("0 -> 2"), "{}", f[0].summary);
        assert!(f[0].summary.contains("step 1"), "{}", f[0].summary);
        assert!(f[0].summary.contains("kubectl-patch"), "{}", f[0].summary);
    }

    #[test]
    fn a_promote_from_a_reached_pause_is_not_a_jump() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.unpause_to(2);
        kit.step(3);
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn promote_full_is_not_a_jump() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c1"));
        kit.status(|s| {
            s.insert("promoteFull".into(), json!(true));
            s.insert("currentStepIndex".into(), json!(4));
        });
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn a_jump_across_a_recording_gap_is_not_reported() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c1"));
        kit.gap();
        kit.step(2);
        assert!(kit.rules().is_empty(), "{:?}", kit.rules());
    }
}
