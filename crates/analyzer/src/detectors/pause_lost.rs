//! `pause-lost` (error): a canary pause step that was reached, then lost to a restart at step 0.
//!
//! # What it detects
//! A canary pause step was reached (a `CanaryPauseStep` pause condition was seen for the
//! revision) and then lost: a new pod template restarted the canary at step 0. For a blue-green
//! rollout, the pause before promotion (`BlueGreenPause`) of a preview that a new pod template
//! replaced: the new preview pauses again only once its ReplicaSet is ready.
//!
//! # Why it matters
//! A pipeline step that waits for that pause (a poll for `phase: Paused` at step N, or
//! `kubectl argo rollouts status`) times out although the rollout had reached it: the pause is
//! gone and comes back only after the earlier steps run again on the new revision. The wait should
//! reset its timer when the pod-template hash changes.
//!
//! # Example
//! Paused at step 1 on `7b4c9f5d86` since 13:02:56; at 13:03:26 `currentPodHash: 5d98c7bf64`,
//! `currentStepIndex: 0`, `pauseConditions` removed.
//!
//! # Remedy
//! Watch it reach the pause again (`kubectl argo rollouts get rollout NAME -n NS --watch`); make
//! the wait's timer restart when `status.currentPodHash` changes.
//!
//! # Before the sync
//! `lint --live` refuses a render that changes the pod template of a rollout paused now (at a
//! canary step, or a preview before promotion), naming the pause, since when, and the change:
//! an Argo CD PreSync hook (deploy/lint-presync.yaml) stops the sync before the restart.

use crate::detectors::{
    Detector, argo, hash_change_words, pause_words, paused_words, revision_word, step_words,
};
use crate::report::finding::{Finding, Rule};
use crate::model::rollout::{RevisionClass, Transition};
use crate::base::time::{human_duration, rfc3339};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(PauseLost)
}

#[derive(Debug)]
pub(crate) struct PauseLost;

impl Detector for PauseLost {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(change) = t.revision else { return };
        if change.class != RevisionClass::Restart {
            return;
        }
        let Some((pause, reached)) = change.old_progress.last_pause() else {
            return;
        };
        let track = t.track;
        let still_paused = t.prev.at_pause_step() && t.prev.step_index == pause;
        let summary = format!(
            "{} was lost: {} had {} it since {} ({}) when a new pod template restarted the {}",
            pause_words(track, pause),
            change.from,
            if still_paused {
                "been paused at"
            } else {
                "reached"
            },
            rfc3339(reached.at),
            human_duration(t.cur.pos.at.0 - reached.at.0),
            revision_word(track)
        );
        let redo = match pause {
            _ if track.is_blue_green() => "once the new preview ReplicaSet is ready".to_owned(),
            0 => "at once".to_owned(),
            1 => "once step 0 has run anew".to_owned(),
            p => format!("once steps 0 to {} have run anew", p - 1),
        };
        let explanation = format!(
            "A pipeline step waiting for this pause would time out although the rollout had reached it: after the reset the rollout pauses at {} again only {redo} on {}. A wait should reset its timer when status.currentPodHash changes.",
            step_words(track, pause),
            change.to
        );
        out.push(
            Finding::new(Rule::PauseLost, track.subject(), track.subject(), t.cur.pos.at, summary)
                .explain(explanation)
                .with_evidence([
                    track.evidence(reached, format!("{} on {}", paused_words(track, pause), change.from)),
                    track.evidence(
                        t.cur.pos,
                        format!("pause conditions cleared; {}", hash_change_words(track, t, change)),
                    ),
                ])
                .remedy(
                    format!(
                        "Do not time out and re-run: watch the rollout reach {} again on {}, then continue the release as planned.",
                        pause_words(track, pause),
                        change.to
                    ),
                    vec![format!("kubectl argo rollouts get rollout {} --watch", argo(track))],
                    {
                        let story = crate::detectors::writer::story(
                            change.render.as_ref(),
                            change.previous_render.as_ref(),
                            revision_word(track),
                            &change.to,
                            false,
                        );
                        if story.render_race {
                            "Make the pipeline's wait follow the pod-template hash: restart its timer when status.currentPodHash changes (rollout-forensics wait does), and render once per release.".to_owned()
                        } else {
                            format!("Make the pipeline's wait follow the pod-template hash: restart its timer when status.currentPodHash changes (rollout-forensics wait does). {}", story.prevent)
                        }
                    },
                ),
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_restart_while_paused_loses_the_pause() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::PauseLost)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("pause at step 1"), "{}", f[0].summary);
        assert!(
            f[0].explanation.contains("time out"),
            "{}",
            f[0].explanation
        );
        assert!(f[0].remedy.prevention.contains("currentPodHash"));
    }

    #[test]
    fn a_restart_before_any_pause_was_reached_loses_no_pause() {
        let mut kit = Kit::new();
        kit.advance(5);
        kit.new_revision("h1", template("app:2", "c1"));
        kit.scale("h1", 1, template("app:2", "c1"));
        kit.step(1); // reached the pause step, but the controller has not paused yet
        kit.advance(3);
        kit.new_revision("h2", template("app:2", "c2"));
        assert!(
            kit.rules().contains(&Rule::RerenderRestart),
            "{:?}",
            kit.rules()
        );
        assert!(!kit.rules().contains(&Rule::PauseLost), "{:?}", kit.rules());
    }
}

#[cfg(test)]
pub(crate) mod blue_green_tests {
    use crate::Rule;
    use crate::testkit::{Kit, template};

    /// A blue-green rollout, Healthy on `stable0`, then `h1` released as its preview.
    pub(crate) fn preview() -> Kit {
        let mut kit = Kit::new();
        kit.blue_green();
        kit.advance(5);
        kit.new_revision("h1", template("app:2", "c1"));
        kit.status(|s| {
            s.remove("currentStepIndex");
        });
        kit.advance(5);
        kit.scale("h1", 5, template("app:2", "c1"));
        kit
    }

    #[test]
    fn a_new_template_at_the_pre_promotion_pause_loses_it() {
        let mut kit = preview();
        kit.pause_before_promotion();
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        let rules = kit.rules();
        for rule in [Rule::PauseLost, Rule::RerenderRestart, Rule::ConfigOnlyRerender] {
            assert!(rules.contains(&rule), "{rule} in {rules:?}");
        }
        let lost = kit.found.iter().find(|f| f.rule == Rule::PauseLost).unwrap();
        assert!(lost.summary.starts_with("the pre-promotion pause was lost"), "{}", lost.summary);
        assert!(lost.summary.ends_with("restarted the preview"), "{}", lost.summary);
        let restart = kit.found.iter().find(|f| f.rule == Rule::RerenderRestart).unwrap();
        assert!(restart.summary.starts_with("preview restarted"), "{}", restart.summary);
        assert!(!format!("{restart:?}").contains("step 0"), "{restart:?}");
    }

    #[test]
    fn a_new_template_before_the_preview_paused_restarts_nothing() {
        let mut kit = preview();
        kit.advance(3);
        kit.new_revision("h2", template("app:2", "c2"));
        let rules = kit.rules();
        assert!(!rules.contains(&Rule::PauseLost) && !rules.contains(&Rule::RerenderRestart), "{rules:?}");
    }

    #[test]
    fn a_release_after_promotion_restarts_nothing() {
        let mut kit = preview();
        kit.pause_before_promotion();
        kit.advance(30);
        kit.promote_blue_green("h1");
        kit.advance(60);
        kit.new_revision("h2", template("app:3", "c1"));
        let rules = kit.rules();
        assert!(!rules.contains(&Rule::PauseLost) && !rules.contains(&Rule::RerenderRestart), "{rules:?}");
    }
}
