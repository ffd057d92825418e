//! `analysis-failed` (warning): an analysis failed, errored or was inconclusive; the finding
//! names the metric, its last measurements and the condition it was judged by.
//!
//! # What it detects
//! An AnalysisRun of a rollout that ended Failed, Error or Inconclusive while it was recorded.
//! The finding names each metric that decided it, its provider and query, the condition
//! (`successCondition`, `failureCondition`, `failureLimit`) and its last measurements, and what
//! the rollout did then (aborted, paused on an inconclusive run). A job metric is judged by its
//! Job's end: the finding names the Job, and how to read its pods' logs.
//!
//! # Why it matters
//! A Failed analysis aborts the rollout; an Inconclusive one pauses it until someone promotes
//! or aborts. The rollout's status says only "aborted"; which metric failed, on what values and
//! against which condition is in the AnalysisRun, which the controller deletes past its
//! history limit. The on-call engineer needs it in the report, before deciding to retry.
//!
//! # Example
//! AnalysisRun `checkout-api-5d98c7bf64-2-1` Failed: metric `error-rate` (prometheus:
//! `sum(rate(http_errors[1m]))`) assessed Failed by `successCondition result[0] < 0.01`,
//! `failureLimit 0`; last `Failed ([0.042])`. The rollout aborted.
//!
//! # Remedy
//! Look at what the metric measured; retrying or promoting past it is a decision.

use std::collections::BTreeSet;

use rf_format::Timestamp;

use crate::detectors::{Detector, Facts, Scene, argo};
use crate::model::analysis::RunObj;
use crate::model::rollout::RolloutTrack;
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(AnalysisFailed::default())
}

/// How long after a run failed the rollout is given to show its abort before the finding says
/// it did not.
const ABORT_SECONDS: i64 = 10;

#[derive(Debug, Default)]
pub(crate) struct AnalysisFailed {
    /// (namespace, run) of the runs seen unfinished, and of those reported.
    running: BTreeSet<(String, String)>,
    fired: BTreeSet<(String, String)>,
}

impl Detector for AnalysisFailed {
    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let ns = track.namespace();
        let mut again: Option<Timestamp> = None;
        for run in s.world.analysis_runs_of(ns, track.name()) {
            let key = (ns.to_owned(), run.name.clone());
            if !run.finished() {
                self.running.insert(key);
                continue;
            }
            // Seen ending, or (a snapshot) seen ended: what `check` is asked about now.
            let failed = matches!(run.phase.as_str(), "Failed" | "Error" | "Inconclusive");
            if !failed || self.fired.contains(&key) || !(s.snapshot || self.running.contains(&key))
            {
                continue;
            }
            // The controller aborts the rollout after the run fails: its status shows it a
            // record later. Wait for it, a while.
            let aborted = track.last().is_some_and(|c| c.abort);
            let due = Scene::due(run.pos, ABORT_SECONDS);
            if run.phase != "Inconclusive" && !aborted && !s.end && !s.snapshot && s.now.at < due {
                again = Some(again.map_or(due, |a| a.min(due)));
                continue;
            }
            self.running.remove(&key);
            let deciding: Vec<String> = run
                .deciding()
                .map(|m| {
                    format!(
                        "{} assessed {} by {}; last {}",
                        m.words(),
                        if m.phase.is_empty() { "?" } else { &m.phase },
                        m.condition_words(),
                        if m.last.is_empty() {
                            "no measurement".to_owned()
                        } else {
                            m.last_words()
                        }
                    )
                })
                .collect();
            let why = if deciding.is_empty() {
                run.message.clone().unwrap_or_else(|| "no metric says why".to_owned())
            } else {
                deciding.join(" / ")
            };
            let then = match run.phase.as_str() {
                "Inconclusive" => "an inconclusive run pauses the rollout until it is promoted or aborted".to_owned(),
                _ if aborted => "the rollout aborted".to_owned(),
                _ => format!("the rollout had not aborted {ABORT_SECONDS} s later"),
            };
            let subject = Subject::new(rf_format::api::ANALYSIS_RUN.newest(), ns, &run.name);
            let summary = format!(
                "{} of revision {} ended {}: {why}; {then}",
                run.words(),
                run.hash.as_deref().unwrap_or("?"),
                run.phase
            );
            let mut finding = Finding::new(
                Rule::AnalysisFailed,
                subject.clone(),
                track.subject(),
                run.pos.at,
                summary,
            )
            .explain(format!(
                "The AnalysisRun holds the measurements; the rollout's status names only the outcome{}.",
                run.message
                    .as_deref()
                    .map(|m| format!(" (\"{m}\")"))
                    .unwrap_or_default()
            ))
            .with_evidence([Evidence::of(run.pos, subject, format!("{} {}", run.name, run.phase))])
            .remedy(
                "Look at what the metric measured before retrying the release.".to_owned(),
                look(ns, run, track),
                "Fix what the metric found, or the metric, and release again.".to_owned(),
            );
            finding = finding.decide(vec![if run.phase == "Inconclusive" {
                format!("kubectl argo rollouts promote {}", argo(track))
            } else {
                format!("kubectl argo rollouts retry rollout {}", argo(track))
            }]);
            self.fired.insert(key);
            out.push(finding);
        }
        // Forget the runs of this rollout that are gone.
        let live: BTreeSet<String> = s
            .world
            .analysis_runs_of(ns, track.name())
            .map(|r| r.name.clone())
            .collect();
        let of_track = |(n, run): &(String, String)| n != ns || live.contains(run) || s.world.analysis_run(n, run).is_some_and(|r| r.rollout.as_deref() != Some(track.name()));
        self.running.retain(of_track);
        self.fired.retain(of_track);
        again
    }
}

/// What to run to see what the run measured: the run, the rollout, and the Job of each
/// deciding job metric (its pods' logs say why it failed; the controller deletes old Jobs).
fn look(ns: &str, run: &RunObj, track: &RolloutTrack) -> Vec<String> {
    let mut cmds = vec![format!("kubectl -n {ns} get analysisrun {} -o yaml", run.name)];
    let jobs: BTreeSet<(&str, &str)> = run
        .deciding()
        .filter_map(|m| m.last.last()?.job.as_ref())
        .map(|(jns, name)| (jns.as_deref().unwrap_or(ns), name.as_str()))
        .collect();
    for (jns, name) in jobs {
        cmds.push(format!("kubectl -n {jns} describe job {name}"));
        cmds.push(format!("kubectl -n {jns} logs job/{name} --all-containers"));
    }
    cmds.push(format!("kubectl argo rollouts get rollout {}", argo(track)));
    cmds
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, template};

    fn run(kit: &mut Kit, phase: &str, measurements: serde_json::Value) {
        kit.analysis_run(
            "checkout-api-new1-2-1",
            json!({
                "metadata": {"labels": {"rollouts-pod-template-hash": "new1", "rollout-type": "Step"},
                    "ownerReferences": [{"kind": "Rollout", "name": NAME, "uid": "uid-checkout-api"}]},
                "spec": {"metrics": [{"name": "error-rate", "successCondition": "result[0] < 0.01", "failureLimit": 0,
                    "provider": {"prometheus": {"query": "sum(rate(http_errors[1m]))"}}}]},
                "status": {"phase": phase, "message": if phase == "Failed" { "Metric \"error-rate\" assessed Failed due to failed (1) > failureLimit (0)" } else { "" },
                    "metricResults": [{"name": "error-rate", "phase": phase,
                    "count": measurements.as_array().unwrap().len(), "measurements": measurements}]}
            }),
        );
    }

    #[test]
    fn a_failed_analysis_names_the_metric_its_values_and_condition() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        run(&mut kit, "Running", json!([]));
        kit.advance(30);
        run(&mut kit, "Failed", json!([{"phase": "Successful", "value": "[0.004]"}, {"phase": "Failed", "value": "[0.042]"}]));
        assert!(kit.of_rule(Rule::AnalysisFailed).is_empty(), "waits for the abort");
        kit.advance(1);
        kit.status(|st| {
            st.insert("abort".into(), json!(true));
            st.insert("phase".into(), json!("Degraded"));
        });
        let f = kit.of_rule(Rule::AnalysisFailed);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert_eq!(
            f[0].summary,
            "AnalysisRun checkout-api-new1-2-1 (Step analysis) of revision new1 ended Failed: metric error-rate (prometheus: sum(rate(http_errors[1m]))) assessed Failed by successCondition result[0] < 0.01, failureLimit 0; last Successful ([0.004]); Failed ([0.042]); the rollout aborted"
        );
        assert_eq!(f[0].remedy.decisions, vec!["kubectl argo rollouts retry rollout checkout-api -n payments".to_owned()]);
    }

    #[test]
    fn a_failed_analysis_the_rollout_did_not_abort_on_says_so() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        run(&mut kit, "Running", json!([]));
        run(&mut kit, "Failed", json!([{"phase": "Failed", "value": "[0.042]"}]));
        kit.advance(super::ABORT_SECONDS + 1);
        kit.step(1);
        let f = kit.of_rule(Rule::AnalysisFailed);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.ends_with("the rollout had not aborted 10 s later"), "{}", f[0].summary);
    }

    #[test]
    fn an_inconclusive_analysis_says_the_rollout_waits_for_a_decision() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        run(&mut kit, "Running", json!([]));
        run(&mut kit, "Inconclusive", json!([{"phase": "Inconclusive", "value": "[0.02]"}]));
        let f = kit.of_rule(Rule::AnalysisFailed);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("ended Inconclusive: metric error-rate (prometheus: sum(rate(http_errors[1m]))) assessed Inconclusive")
                && f[0].summary.contains("last Inconclusive ([0.02])")
                && f[0].summary.ends_with("an inconclusive run pauses the rollout until it is promoted or aborted"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].remedy.decisions, vec!["kubectl argo rollouts promote checkout-api -n payments".to_owned()]);
    }

    #[test]
    fn a_failed_job_metric_names_its_job_and_how_to_read_it() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        let job = |phase: &str, measurements: serde_json::Value| {
            json!({
                "metadata": {"labels": {"rollouts-pod-template-hash": "new1", "rollout-type": "Step"},
                    "ownerReferences": [{"kind": "Rollout", "name": NAME, "uid": "uid-checkout-api"}]},
                "spec": {"metrics": [{"name": "smoke", "provider": {"job": {"spec": {"template": {"spec": {
                    "containers": [{"name": "smoke", "image": "registry.example/smoke:3"}]}}}}}}]},
                "status": {"phase": phase, "metricResults": [{"name": "smoke", "phase": phase,
                    "count": 1, "measurements": measurements}]}
            })
        };
        let meta = json!({"job-name": "0e5a.smoke.1", "job-namespace": "payments"});
        kit.analysis_run("checkout-api-new1-2-1", job("Running", json!([{"phase": "Running", "metadata": meta}])));
        kit.analysis_run("checkout-api-new1-2-1", job("Failed", json!([{"phase": "Failed", "metadata": meta}])));
        kit.advance(1);
        kit.status(|st| {
            st.insert("abort".into(), json!(true));
        });
        let f = kit.of_rule(Rule::AnalysisFailed);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains(
                "metric smoke (job running registry.example/smoke:3) assessed Failed by its Job's end (Complete or Failed); last Failed, job 0e5a.smoke.1"
            ),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].remedy.commands.contains(&"kubectl -n payments logs job/0e5a.smoke.1 --all-containers".to_owned())
                && f[0].remedy.commands.contains(&"kubectl -n payments describe job 0e5a.smoke.1".to_owned()),
            "{:?}",
            f[0].remedy.commands
        );
    }

    #[test]
    fn a_successful_analysis_or_one_seen_only_ended_is_no_finding() {
        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        run(&mut kit, "Running", json!([]));
        run(&mut kit, "Successful", json!([{"phase": "Successful", "value": "[0.004]"}]));
        assert!(kit.of_rule(Rule::AnalysisFailed).is_empty());

        let mut kit = Kit::new();
        kit.release_to_pause("new1", template("app:2", "c0"));
        run(&mut kit, "Failed", json!([{"phase": "Failed", "value": "[0.042]"}]));
        assert!(kit.of_rule(Rule::AnalysisFailed).is_empty(), "ended before the recording began");
    }
}
