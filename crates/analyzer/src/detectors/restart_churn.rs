//! `restart-churn` (warning): two or more restarts of the same rollout within the recording.
//!
//! # What it detects
//! The same rollout's canary restarted (see `rerender-restart`) two or more times within the
//! analysis. The finding appears at the second restart and, at the end, counts all of them and
//! names the first and the 15 latest (a rollout restarting all day is not a page of evidence).
//!
//! # Why it matters
//! Re-running a pipeline whose release renders twice re-triggers the race every time: each run
//! restarts the canary, churns production pods and can leave another ReplicaSet running.
//!
//! # Example
//! `checkout-api` restarted at 13:03:26, 13:09:01 and 13:14:36: three pipeline runs, three
//! double renders.
//!
//! # Remedy
//! Stop re-running the pipeline; render once per release.

use crate::detectors::{Detector, argo};
use crate::report::finding::{Finding, Rule, Subject};
use crate::base::At;
use crate::model::rollout::{RevisionClass, RolloutTrack, Transition};
use crate::base::time::{human_duration, rfc3339};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(RestartChurn)
}

#[derive(Debug)]
pub(crate) struct RestartChurn;

/// The finding's summary, explanation and evidence: every restart counted, the ones kept
/// ([`KEEP_RESTARTS`](crate::model::rollout::KEEP_RESTARTS): the first and the latest) named.
fn describe(track: &RolloutTrack) -> (String, String, Vec<crate::report::finding::Evidence>) {
    let kept = track.restarts();
    let total = track.restarts_total().max(kept.len());
    let (Some(first), Some(last)) = (kept.first(), kept.last()) else {
        return (String::new(), String::new(), Vec::new());
    };
    let summary = format!(
        "the canary restarted {total} times in {}",
        human_duration(last.pos.at.0 - first.pos.at.0)
    );
    let mut times: Vec<String> = kept.iter().map(|r| rfc3339(r.pos.at)).collect();
    let omitted = total - kept.len();
    if omitted > 0 && times.len() > 1 {
        times.insert(1, format!("{omitted} more not listed"));
    }
    let explanation = format!(
        "Restarts at {}. Each began the canary again at step 0 on a new pod template.",
        times.join(", ")
    );
    let evidence = kept
        .iter()
        .map(|r| track.evidence(r.pos, format!("restart: {} -> {}", r.from, r.to)))
        .collect();
    (summary, explanation, evidence)
}

impl Detector for RestartChurn {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(change) = t.revision else { return };
        if change.class != RevisionClass::Restart || t.track.restarts_total() != 2 {
            return;
        }
        let track = t.track;
        let (summary, explanation, evidence) = describe(track);
        let story = crate::detectors::writer::story(
            change.render.as_ref(),
            change.previous_render.as_ref(),
            crate::detectors::revision_word(track),
            &change.to,
            false,
        );
        let explanation = if story.why.is_empty() {
            explanation
        } else {
            format!("{explanation} {}", story.why)
        };
        out.push(
            Finding::new(Rule::RestartChurn, track.subject(), track.subject(), t.cur.pos.at, summary)
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    if story.render_race {
                        "Stop re-running the pipeline: each run re-renders and restarts the canary again. Let the current canary finish, or abort it and do one clean full run once the renders are fixed.".to_owned()
                    } else {
                        story.now
                    },
                    vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
                    if story.render_race {
                        "Render once per release (image tag and values from one Git revision) and make the pipeline's wait reset on a pod-template-hash change instead of timing out.".to_owned()
                    } else {
                        story.prevent
                    },
                ),
        );
    }

    fn on_end(
        &mut self,
        tracks: &[&RolloutTrack],
        _world: &crate::model::world::World,
        _end: At,
        findings: &mut Vec<Finding>,
        _undecided: &mut Vec<(Subject, String)>,
    ) {
        for track in tracks {
            if track.restarts_total() <= 2 {
                continue;
            }
            let subject = track.subject();
            if let Some(f) = findings
                .iter_mut()
                .find(|f| f.rule == Rule::RestartChurn && f.subject == subject)
            {
                let (summary, explanation, evidence) = describe(track);
                // The row stands at the second restart: what was true then comes first.
                f.summary = format!(
                    "the canary restarted twice by {}; by the end of the analysis, {}",
                    rfc3339(f.at),
                    summary.trim_start_matches("the canary ")
                );
                f.explanation = explanation;
                f.evidence = evidence;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::model::rollout::KEEP_RESTARTS;
    use crate::testkit::{Kit, template};

    fn restarts(n: usize) -> Kit {
        let mut kit = Kit::new();
        kit.release_to_pause("h0", template("app:2", "c0x"));
        for i in 1..=n {
            kit.advance(30);
            let hash = format!("h{i}");
            let tpl = template("app:2", &format!("c{i}"));
            kit.new_revision(&hash, tpl.clone());
            kit.scale(&hash, 1, tpl);
            kit.step(1);
            kit.pause();
        }
        kit
    }

    /// The report's `restart-churn` findings: one.
    fn churn(kit: Kit) -> Vec<crate::Finding> {
        let f: Vec<_> = kit
            .finish()
            .findings
            .into_iter()
            .filter(|f| f.rule == Rule::RestartChurn)
            .collect();
        assert_eq!(f.len(), 1, "{f:#?}");
        f
    }

    #[test]
    fn one_restart_is_not_churn() {
        let kit = restarts(1);
        assert!(!kit.rules().contains(&Rule::RestartChurn));
    }

    #[test]
    fn three_restarts_give_one_churn_finding_that_counts_all_of_them() {
        let kit = restarts(3);
        assert_eq!(
            kit.rules()
                .iter()
                .filter(|r| **r == Rule::RestartChurn)
                .count(),
            1
        );
        let f = churn(kit);
        assert!(
            f[0].summary.contains("restarted 3 times"),
            "{}",
            f[0].summary
        );
        // The row stands at the second restart: it says what was true then, first.
        assert!(
            f[0].summary.starts_with(&format!(
                "the canary restarted twice by {}; by the end of the analysis, restarted 3 times",
                crate::base::time::rfc3339(f[0].at)
            )),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].evidence.len(), 3);
    }

    #[test]
    fn a_rollout_restarting_all_day_counts_every_restart_and_names_the_first_and_latest() {
        let n = KEEP_RESTARTS + 10;
        let f = churn(restarts(n));
        // The first restart (h0 -> h1, 30 s in) to the last (30 s apart each).
        let span = crate::base::time::human_duration((n as i64 - 1) * 30 * 1_000_000_000);
        assert!(
            f[0].summary
                .contains(&format!("restarted {n} times in {span}")),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].explanation.contains(", 10 more not listed, "),
            "{}",
            f[0].explanation
        );
        let named: Vec<&str> = f[0].evidence.iter().map(|e| e.detail.as_str()).collect();
        assert_eq!(named.len(), KEEP_RESTARTS);
        assert_eq!(named[0], "restart: h0 -> h1");
        assert_eq!(
            named[1],
            format!(
                "restart: h{} -> h{}",
                n - KEEP_RESTARTS + 1,
                n - KEEP_RESTARTS + 2
            )
        );
        assert_eq!(
            named[KEEP_RESTARTS - 1],
            format!("restart: h{} -> h{n}", n - 1)
        );
    }
}
