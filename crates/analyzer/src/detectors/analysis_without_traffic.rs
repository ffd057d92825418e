//! `analysis-without-traffic` (error): an analysis passed on a revision no customer reached.
//!
//! # What it detects
//! An AnalysisRun of a rollout (a step or background analysis of a canary, a post-promotion
//! analysis) that ended Successful, or is still passing when the recording ends, while the
//! revision it measures (its `rollouts-pod-template-hash` label) had no ready pod in any
//! Service that routes to the rollout for the whole span it was watched running. Where an
//! Ingress, HTTPRoute or VirtualService of the namespace sends requests to a Service of the
//! rollout, only those Services count: they are the front door. A blue-green pre-promotion
//! analysis measures the preview, which customers are not meant to reach, and is not judged.
//! A run that passed before the recording began (a list shows it finished) has no span to
//! judge: when the front door reaches none of its revision's pods at the end, the report says in
//! `undecided` that the pass cannot be taken as evidence, and why.
//!
//! # Why it matters
//! The analysis judges the canary by metrics of the canary's pods. When no request reaches
//! them (the front door goes to a Service that selects only the old pods), every measurement
//! of errors or latency is of idle pods: the analysis passes, the rollout promotes, and the
//! first customer request to the new revision comes after every gate is green.
//!
//! # Example
//! AnalysisRun `checkout-api-5d98c7bf64-2-1` (metric `success-rate`, 99.4%) passed on revision
//! `5d98c7bf64` while Ingress `shop` sent every request to `checkout-api-legacy`, whose
//! endpoints were the old revision's pods only.
//!
//! # Remedy
//! Do not take this analysis as evidence of the release. Route the front door through the
//! rollout's Services (or measure what customers reach), then run the analysis again; aborting
//! the rollout is a decision.
//!
//! # Before the sync
//! `lint` finds it where the render shows it: a rollout that analyzes its canary (a background
//! analysis or an analysis step) while an Ingress, HTTPRoute or VirtualService of the render
//! sends customers to a Service of the rollout that promotion does not move (the front door of
//! `front-door-bypass`): no customer request will reach the canary the analysis measures.

use std::collections::{BTreeMap, BTreeSet};

use rf_format::Timestamp;

use crate::base::At;
use crate::base::time::rfc3339;
use crate::detectors::{Detector, Facts, Scene, argo};
use crate::model::analysis::RunObj;
use crate::model::traffic::{membership, serves_revision};
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(AnalysisWithoutTraffic::default())
}

/// What was seen of one run while it ran.
#[derive(Debug)]
struct Watch {
    /// When it was first seen running.
    since: At,
    /// A ready pod of its revision was behind a Service customers reach at some look.
    served: bool,
    fired: bool,
}

#[derive(Debug, Default)]
pub(crate) struct AnalysisWithoutTraffic {
    /// By (namespace, rollout, run).
    watched: BTreeMap<(String, String, String), Watch>,
    /// Runs first seen passed, that ran before the recording: whether the front door reached
    /// their revision's pods at the last look, and what it reached, in words.
    before: BTreeMap<(String, String, String), (String, bool, String)>,
}

/// The Services customers reach of those that route to the rollout: the front door's backends
/// among them when a router of the namespace sends requests to one, else all of them.
fn reached<'a>(s: &'a Scene<'_>) -> (Vec<&'a str>, bool) {
    let ns = s.track.namespace();
    let routing: BTreeSet<&str> = s.routing.iter().map(|(name, _, _)| *name).collect();
    let mut doors: BTreeSet<&str> = BTreeSet::new();
    for router in s.world.routers_in(ns) {
        for b in router.rules.iter().flat_map(|r| r.backends.iter()) {
            if b.namespace == ns && b.weight != Some(0) && routing.contains(b.service.as_str()) {
                doors.insert(b.service.as_str());
            }
        }
    }
    if doors.is_empty() {
        (routing.into_iter().collect(), false)
    } else {
        (doors.into_iter().collect(), true)
    }
}

impl Detector for AnalysisWithoutTraffic {
    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let ns = track.namespace();
        let mut live: BTreeSet<String> = BTreeSet::new();
        // Which Services customers reach is asked only of a rollout that has runs: most
        // looks are at rollouts without any.
        let mut reach: Option<(Vec<&str>, bool)> = None;
        for run in s.world.analysis_runs_of(ns, track.name()) {
            live.insert(run.name.clone());
            let Some(hash) = run.hash.as_deref() else {
                continue;
            };
            if run.kind.as_deref() == Some("PrePromotion") {
                continue;
            }
            let key = (ns.to_owned(), track.name().to_owned(), run.name.clone());
            let (services, front_door) = &*reach.get_or_insert_with(|| reached(s));
            let served_now = services
                .iter()
                .any(|svc| serves_revision(s.world, track, svc, hash));
            let finished = run.finished();
            let watch = match self.watched.get_mut(&key) {
                Some(w) => w,
                // A run first seen finished ran before the recording: nothing shows its span.
                // A pass on pods the front door does not reach now is said to be undecided.
                None if finished => {
                    if run.phase == "Successful" {
                        let reach = if services.is_empty() {
                            "no Service routes to the rollout".to_owned()
                        } else if *front_door {
                            format!(
                                "the front door's Services ({}) reach none of them",
                                services.join(", ")
                            )
                        } else {
                            format!(
                                "its Services ({}) hold none of them",
                                services.join(", ")
                            )
                        };
                        self.before.insert(key, (hash.to_owned(), served_now, reach));
                    }
                    continue;
                }
                None => self.watched.entry(key).or_insert(Watch {
                    since: run.pos,
                    served: false,
                    fired: false,
                }),
            };
            watch.served |= served_now;
            let passing = run.phase == "Successful"
                || (s.end
                    && run.phase == "Running"
                    && run.metrics.iter().any(|m| m.taken > 0)
                    && run
                        .metrics
                        .iter()
                        .all(|m| m.last.iter().all(|x| x.phase == "Successful")));
            if watch.fired || watch.served || !passing {
                continue;
            }
            watch.fired = true;
            out.push(finding(s, run, hash, watch.since, services, *front_door));
        }
        if !self.watched.is_empty() {
            self.watched
                .retain(|(n, r, run), _| !(n == ns && r == track.name()) || live.contains(run));
        }
        if !self.before.is_empty() {
            self.before
                .retain(|(n, r, run), _| !(n == ns && r == track.name()) || live.contains(run));
        }
        None
    }

    fn on_end(
        &mut self,
        _tracks: &[&crate::model::rollout::RolloutTrack],
        _world: &crate::model::world::World,
        _end: At,
        _findings: &mut Vec<Finding>,
        undecided: &mut Vec<(Subject, String)>,
    ) {
        for ((ns, rollout, run), (hash, served, reach)) in &self.before {
            if *served {
                continue;
            }
            undecided.push((
                Subject::new(rf_format::Kind::Rollout, ns, rollout),
                format!(
                    "rollout {ns}/{rollout}: AnalysisRun {run} passed on revision {hash} before the recording began; whether customers reached {hash}'s pods while it measured cannot be told from what the cluster keeps, and now {reach}: do not take that pass as evidence of the release (analysis-without-traffic judges a run it sees running)"
                ),
            ));
        }
    }
}

fn finding(
    s: &Scene<'_>,
    run: &RunObj,
    hash: &str,
    since: At,
    services: &[&str],
    front_door: bool,
) -> Finding {
    let track = s.track;
    let ns = track.namespace();
    let metrics: Vec<String> = run
        .metrics
        .iter()
        .map(|m| {
            let last = m.last.last().map(|x| x.words()).unwrap_or_default();
            format!("{} last {last}", m.words())
        })
        .collect();
    let verdict = if run.phase == "Successful" {
        "passed"
    } else {
        "is passing"
    };
    let behind: Vec<String> = services
        .iter()
        .map(|svc| {
            let by = membership(s.world, track, svc);
            let revs: Vec<String> = by
                .iter()
                .map(|(rev, pods)| {
                    let rev = if rev.is_empty() { "not the rollout's" } else { rev };
                    format!("{rev}: {} pod(s)", pods.len())
                })
                .collect();
            if revs.is_empty() {
                format!("{svc} (no ready endpoint)")
            } else {
                format!("{svc} ({})", revs.join(", "))
            }
        })
        .collect();
    let reach = if services.is_empty() {
        "no Service routes to the rollout".to_owned()
    } else if front_door {
        format!("the front door reaches {}", behind.join(", "))
    } else {
        format!("its Services hold {}", behind.join(", "))
    };
    let subject = Subject::new(rf_format::api::ANALYSIS_RUN.newest(), ns, &run.name);
    let summary = format!(
        "{} {verdict} on revision {hash}, whose pods no customer reached while it measured ({reach}): {}",
        run.words(),
        metrics.join("; ")
    );
    let explanation = format!(
        "The run measured revision {hash} from {} to {}. In all that span none of {hash}'s ready pods was behind a Service customers reach; {reach}. Metrics of pods that take no requests say nothing of how the release serves them: the analysis {verdict} on idle pods.",
        rfc3339(since.at),
        rfc3339(run.pos.at)
    );
    let mut evidence = vec![
        Evidence::of(
            run.pos,
            subject.clone(),
            format!("{} {}", run.name, if run.phase.is_empty() { "Pending" } else { &run.phase }),
        ),
        track.evidence(s.now, format!("revision {hash} measured")),
    ];
    if let Some(n) = s.world.namespace(ns) {
        for svc in services {
            if let Some(obj) = n.service(svc) {
                evidence.push(Evidence::of(
                    obj.pos,
                    Subject::new(rf_format::Kind::Service, ns, svc),
                    format!("no ready pod of {hash}"),
                ));
            }
        }
    }
    let mut commands = vec![
        format!("kubectl -n {ns} get analysisrun {} -o yaml", run.name),
        format!("kubectl argo rollouts get rollout {}", argo(track)),
    ];
    commands.extend(services.iter().map(|svc| {
        format!("kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={svc}")
    }));
    Finding::new(
        Rule::AnalysisWithoutTraffic,
        subject,
        track.subject(),
        run.pos.at,
        summary,
    )
    .explain(explanation)
    .with_evidence(evidence)
    .remedy(
        format!(
            "Do not take {} as evidence of revision {hash}: it measured pods no request reached.",
            run.name
        ),
        commands,
        "Send customers through the Services the rollout moves (or measure what customers reach), then analyse again.".to_owned(),
    )
    .decide(vec![format!("kubectl argo rollouts abort {}", argo(track))])
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use crate::Rule;
    use crate::testkit::{Kit, NAME, digest, template};

    /// A run of revision `new1` in `phase` with `values` measured of metric `success-rate`.
    fn run(kit: &mut Kit, phase: &str, values: &[&str]) {
        let measurements: Vec<Value> = values
            .iter()
            .map(|v| json!({"phase": "Successful", "value": v}))
            .collect();
        kit.analysis_run(
            "checkout-api-new1-2-1",
            json!({
                "metadata": {"labels": {"rollouts-pod-template-hash": "new1", "rollout-type": "Step"},
                    "ownerReferences": [{"kind": "Rollout", "name": NAME, "uid": "uid-checkout-api"}]},
                "spec": {"metrics": [{"name": "success-rate", "successCondition": "result[0] > 0.99",
                    "provider": {"prometheus": {"query": "sum(rate(ok[1m])) / sum(rate(all[1m]))"}}}]},
                "status": {"phase": phase, "metricResults": [{"name": "success-rate", "phase": phase,
                    "count": values.len(), "measurements": measurements}]}
            }),
        );
    }

    /// A canary paused at its analysis: stable `stable0` and canary `new1` pods both behind
    /// Service `checkout-api` (every pod of the rollout); Ingress `shop` sends to `backend`,
    /// and Service `checkout-api-legacy` holds only the stable pod.
    fn canary(backend: Option<&str>) -> Kit {
        let mut kit = Kit::new();
        kit.service(NAME, json!({"app": NAME}));
        kit.service(
            "checkout-api-legacy",
            json!({"app": NAME, "rollouts-pod-template-hash": "stable0"}),
        );
        kit.pod("stable0", "a", true, "app:1", &digest("app:1"));
        kit.slice("checkout-api-legacy", &[("checkout-api-stable0-a", true)]);
        if let Some(b) = backend {
            kit.ingress("shop", b, None, "argocd-controller");
        }
        kit.release_to_pause("new1", template("app:2", "c0"));
        kit.pod("new1", "b", true, "app:2", &digest("app:2"));
        kit.slice(
            NAME,
            &[("checkout-api-stable0-a", true), ("checkout-api-new1-b", true)],
        );
        kit
    }

    #[test]
    fn an_analysis_behind_a_front_door_to_the_old_pods_is_reported() {
        let mut kit = canary(Some("checkout-api-legacy"));
        run(&mut kit, "Running", &[]);
        kit.advance(30);
        run(&mut kit, "Running", &["[0.994]"]);
        kit.advance(30);
        run(&mut kit, "Successful", &["[0.994]", "[0.995]"]);
        let f = kit.of_rule(Rule::AnalysisWithoutTraffic);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.starts_with("AnalysisRun checkout-api-new1-2-1 (Step analysis) passed on revision new1, whose pods no customer reached while it measured (the front door reaches checkout-api-legacy (stable0: 1 pod(s)))"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].summary.contains("metric success-rate (prometheus: sum(rate(ok[1m])) / sum(rate(all[1m]))) last Successful ([0.995])"),
            "{}",
            f[0].summary
        );
        assert!(f[0].remedy.commands.iter().all(|c| !c.contains("abort")));
        assert_eq!(f[0].remedy.decisions, vec!["kubectl argo rollouts abort checkout-api -n payments".to_owned()]);
    }

    #[test]
    fn an_analysis_of_pods_customers_reach_is_no_finding() {
        // The front door is the Service of every pod: the canary takes its share.
        let mut kit = canary(Some(NAME));
        run(&mut kit, "Running", &[]);
        kit.advance(60);
        run(&mut kit, "Successful", &["[0.994]"]);
        assert!(kit.of_rule(Rule::AnalysisWithoutTraffic).is_empty(), "{:?}", kit.rules());

        // No router: the Services of the rollout are what customers reach.
        let mut kit = canary(None);
        run(&mut kit, "Running", &[]);
        kit.advance(60);
        run(&mut kit, "Successful", &["[0.994]"]);
        assert!(kit.of_rule(Rule::AnalysisWithoutTraffic).is_empty(), "{:?}", kit.rules());

        // First seen already finished: its span is before the recording, nothing to judge.
        let mut kit = canary(Some("checkout-api-legacy"));
        run(&mut kit, "Successful", &["[0.994]"]);
        assert!(kit.of_rule(Rule::AnalysisWithoutTraffic).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn an_analysis_still_passing_at_the_end_is_reported_as_passing() {
        let mut kit = canary(Some("checkout-api-legacy"));
        run(&mut kit, "Running", &[]);
        kit.advance(30);
        run(&mut kit, "Running", &["[0.994]"]);
        let report = kit.finish();
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::AnalysisWithoutTraffic)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", report.findings);
        assert!(f[0].summary.contains("is passing on revision new1"), "{}", f[0].summary);
    }
}
