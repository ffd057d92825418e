//! AnalysisRuns: what a rollout's analysis measured, each metric's query, its measurements and
//! the condition it is judged by; for the timeline and the analysis rules. Read by serde alone
//! (AnalysisRuns change at each measurement, seconds apart).

use rf_format::{Record, Timestamp};
use serde_json::Value;

use crate::base::At;
use crate::base::time::parse_rfc3339;
use crate::input::view::AnalysisRunView;

/// Measurements kept per metric: the last ones say why it failed.
const KEEP_MEASUREMENTS: usize = 5;
/// A value longer than this is cut in words.
const VALUE_CHARS: usize = 80;

/// One measurement, as the run reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Measurement {
    pub phase: String,
    pub value: Option<String>,
    pub message: Option<String>,
    pub finished_at: Option<Timestamp>,
    /// The Job a job metric ran for it: (namespace, name); the namespace is the run's when
    /// the provider names none.
    pub job: Option<(Option<String>, String)>,
}

impl Measurement {
    /// `Successful (true)`, `Failed (0.042)`, `Error: connection refused`, `Failed, job J`.
    pub fn words(&self) -> String {
        let mut w = self.phase.clone();
        if let Some(v) = self.value.as_deref().filter(|v| !v.is_empty()) {
            let cut: String = v.chars().take(VALUE_CHARS).collect();
            let more = if cut.len() < v.len() { "…" } else { "" };
            w.push_str(&format!(" ({cut}{more})"));
        }
        if let Some((_, job)) = &self.job {
            w.push_str(&format!(", job {job}"));
        }
        if let Some(m) = self.message.as_deref().filter(|m| !m.is_empty()) {
            w.push_str(&format!(": {m}"));
        }
        w
    }
}

/// One metric of a run: what it asks, how it is judged, what it measured.
#[derive(Debug, Clone, Default)]
pub(crate) struct Metric {
    pub name: String,
    /// The provider and its query, in words (`prometheus: sum(rate(...))`, `web GET URL`).
    pub query: String,
    /// A job metric is judged by its Job's end, not by a condition.
    pub job: bool,
    pub success_condition: Option<String>,
    pub failure_condition: Option<String>,
    pub failure_limit: Option<String>,
    pub phase: String,
    /// Measurements taken in all (the run keeps only its last ones).
    pub taken: usize,
    /// The last [`KEEP_MEASUREMENTS`].
    pub last: Vec<Measurement>,
}

impl Metric {
    /// `metric error-rate (prometheus: ...)`.
    pub fn words(&self) -> String {
        format!("metric {} ({})", self.name, self.query)
    }

    /// The condition it is judged by, in words.
    pub fn condition_words(&self) -> String {
        let mut c = Vec::new();
        if let Some(s) = &self.success_condition {
            c.push(format!("successCondition {s}"));
        }
        if let Some(f) = &self.failure_condition {
            c.push(format!("failureCondition {f}"));
        }
        if let Some(l) = &self.failure_limit {
            c.push(format!("failureLimit {l}"));
        }
        if c.is_empty() && self.job {
            "its Job's end (Complete or Failed)".to_owned()
        } else if c.is_empty() {
            "no condition (a measurement without error succeeds)".to_owned()
        } else {
            c.join(", ")
        }
    }

    /// Its last measurements, newest last.
    pub fn last_words(&self) -> String {
        self.last
            .iter()
            .map(Measurement::words)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// An AnalysisRun as last recorded.
#[derive(Debug, Clone)]
pub(crate) struct RunObj {
    pub name: String,
    /// The rollout that owns it.
    pub rollout: Option<String>,
    /// The revision it measures (its `rollouts-pod-template-hash` label).
    pub hash: Option<String>,
    /// `rollout-type`: `Step`, `Background`, `PrePromotion`, `PostPromotion`.
    pub kind: Option<String>,
    /// Empty while Pending.
    pub phase: String,
    pub message: Option<String>,
    pub metrics: Vec<Metric>,
    /// When it was first recorded, and last.
    pub first: At,
    pub pos: At,
    /// What its last record changed, in words (for the timeline).
    pub changes: Vec<String>,
}

impl RunObj {
    /// Finished: Successful, Failed, Error or Inconclusive.
    pub fn finished(&self) -> bool {
        matches!(
            self.phase.as_str(),
            "Successful" | "Failed" | "Error" | "Inconclusive"
        )
    }

    /// The metrics that decided a Failed, Error or Inconclusive end.
    pub fn deciding(&self) -> impl Iterator<Item = &Metric> {
        let phase = self.phase.clone();
        self.metrics.iter().filter(move |m| {
            m.phase == phase || matches!(m.phase.as_str(), "Failed" | "Error" | "Inconclusive")
        })
    }

    /// `checkout-api-5d98c7bf64-2-1 (Step analysis)`.
    pub fn words(&self) -> String {
        match &self.kind {
            Some(k) => format!("AnalysisRun {} ({k} analysis)", self.name),
            None => format!("AnalysisRun {}", self.name),
        }
    }
}

/// The provider of a metric and what it asks, in words.
fn query_words(provider: Option<&Value>) -> String {
    let Some(Value::Object(p)) = provider else {
        return "no provider".to_owned();
    };
    let Some((name, spec)) = p.iter().next() else {
        return "no provider".to_owned();
    };
    let text = |k: &str| spec.get(k).and_then(Value::as_str).map(str::trim);
    match name.as_str() {
        "web" => {
            let method = text("method").unwrap_or("GET");
            let url = text("url").unwrap_or("?");
            match text("jsonPath") {
                Some(j) => format!("web {method} {url} {j}"),
                None => format!("web {method} {url}"),
            }
        }
        "job" => {
            let containers = spec
                .pointer("/spec/template/spec/containers")
                .and_then(Value::as_array)
                .map(|cs| {
                    cs.iter()
                        .filter_map(|c| c.get("image").and_then(Value::as_str))
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .unwrap_or_default();
            format!("job running {containers}")
        }
        other => match text("query") {
            Some(q) => format!("{other}: {q}"),
            None => other.to_owned(),
        },
    }
}

fn limit_words(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// The run `rec` holds, given what was known of it before (`prev`), with the changes in words.
pub(crate) fn run_obj(rec: &Record, v: AnalysisRunView, prev: Option<&RunObj>, pos: At) -> RunObj {
    let rollout = v
        .metadata
        .owner_references
        .iter()
        .find(|o| o.kind == "Rollout")
        .map(|o| o.name.to_string());
    let time = |t: &Option<String>| t.as_deref().and_then(parse_rfc3339);
    let metrics: Vec<Metric> = v
        .spec
        .metrics
        .iter()
        .map(|m| {
            let result = v.status.metric_results.iter().find(|r| r.name == m.name);
            let measurements = result.map_or(&[][..], |r| r.measurements.as_slice());
            let keep = measurements.len().saturating_sub(KEEP_MEASUREMENTS);
            Metric {
                name: m.name.clone(),
                query: query_words(m.provider.as_ref()),
                job: m.provider.as_ref().is_some_and(|p| p.get("job").is_some()),
                success_condition: m.success_condition.clone(),
                failure_condition: m.failure_condition.clone(),
                failure_limit: limit_words(m.failure_limit.as_ref()),
                phase: result.and_then(|r| r.phase.clone()).unwrap_or_default(),
                taken: result
                    .and_then(|r| r.count)
                    .and_then(|c| usize::try_from(c).ok())
                    .unwrap_or(measurements.len())
                    .max(measurements.len()),
                last: measurements[keep..]
                    .iter()
                    .map(|m| Measurement {
                        phase: m.phase.clone().unwrap_or_default(),
                        value: m.value.clone(),
                        message: m.message.clone(),
                        finished_at: time(&m.finished_at),
                        job: m
                            .metadata
                            .get("job-name")
                            .filter(|n| !n.is_empty())
                            .map(|n| (m.metadata.get("job-namespace").cloned(), n.clone())),
                    })
                    .collect(),
            }
        })
        .collect();
    let mut run = RunObj {
        name: rec.name.clone(),
        rollout,
        hash: v.metadata.labels.get("rollouts-pod-template-hash").cloned(),
        kind: v.metadata.labels.get("rollout-type").cloned(),
        phase: v.status.phase.clone().unwrap_or_default(),
        message: v.status.message.clone().filter(|m| !m.is_empty()),
        metrics,
        first: prev.map_or(pos, |p| p.first),
        pos,
        changes: Vec::new(),
    };
    run.changes = changes(prev, &run);
    run
}

/// What changed from `prev` to `run`, in words.
fn changes(prev: Option<&RunObj>, run: &RunObj) -> Vec<String> {
    let mut c = Vec::new();
    if prev.is_none() {
        let metrics: Vec<String> = run.metrics.iter().map(Metric::words).collect();
        c.push(format!(
            "{} of revision {}: {}",
            run.words(),
            run.hash.as_deref().unwrap_or("?"),
            metrics.join(", ")
        ));
    }
    for m in &run.metrics {
        let was = prev.and_then(|p| p.metrics.iter().find(|o| o.name == m.name));
        let before = was.map_or(0, |o| o.taken);
        // A provider that takes a while (a job, a Kayenta judgement) writes its measurement
        // Running and completes that same measurement later: its end is a change too.
        if let Some(old) = was.and_then(|o| o.last.last()) {
            let newer = m.taken.saturating_sub(before);
            let same = m
                .last
                .len()
                .checked_sub(newer + 1)
                .and_then(|i| m.last.get(i));
            if let Some(now) = same.filter(|now| *now != old) {
                c.push(format!("{} metric {}: {}", run.name, m.name, now.words()));
            }
        }
        if m.taken > before {
            let new = (m.taken - before).min(m.last.len());
            for x in &m.last[m.last.len() - new..] {
                c.push(format!("{} metric {}: {}", run.name, m.name, x.words()));
            }
        }
    }
    let was = prev.map_or("", |p| p.phase.as_str());
    if run.phase != was && !run.phase.is_empty() && !(prev.is_none() && run.phase == "Running") {
        let mut w = format!("{} {}", run.name, run.phase);
        if matches!(run.phase.as_str(), "Failed" | "Error" | "Inconclusive") {
            let why: Vec<String> = run
                .deciding()
                .map(|m| {
                    format!(
                        "{} {} by {}; last {}",
                        m.words(),
                        if m.phase.is_empty() { "?" } else { &m.phase },
                        m.condition_words(),
                        m.last_words()
                    )
                })
                .collect();
            if !why.is_empty() {
                w.push_str(&format!(": {}", why.join(" / ")));
            } else if let Some(msg) = &run.message {
                w.push_str(&format!(": {msg}"));
            }
        }
        c.push(w);
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(object: &Value) -> Record {
        Record {
            seq: 1,
            observed_at: Timestamp(0),
            kind: rf_format::api::ANALYSIS_RUN.newest(),
            op: rf_format::Op::Modified,
            namespace: "payments".into(),
            name: "checkout-api-h2-2-1".into(),
            uid: "u".into(),
            resource_version: "1".into(),
            actor: None,
            object: serde_json::to_vec(object).unwrap(),
        }
    }

    fn run(phase: &str, values: &[(&str, &str)]) -> Value {
        json!({
            "metadata": {"name": "checkout-api-h2-2-1",
                "labels": {"rollouts-pod-template-hash": "h2", "rollout-type": "Step"},
                "ownerReferences": [{"kind": "Rollout", "name": "checkout-api", "uid": "r"}]},
            "spec": {"metrics": [{"name": "error-rate", "failureLimit": 0,
                "successCondition": "result[0] < 0.01",
                "provider": {"prometheus": {"address": "http://prom", "query": "sum(rate(errors[1m]))"}}}]},
            "status": {"phase": phase, "metricResults": [{"name": "error-rate",
                "phase": phase, "count": values.len(),
                "measurements": values.iter().map(|(p, v)| json!({"phase": p, "value": v})).collect::<Vec<_>>()}]}
        })
    }

    fn obj(v: &Value, prev: Option<&RunObj>) -> RunObj {
        let view: AnalysisRunView = serde_json::from_value(v.clone()).unwrap();
        run_obj(
            &rec(v),
            view,
            prev,
            At {
                file: 0,
                seq: 1,
                at: Timestamp(0),
            },
        )
    }

    #[test]
    fn a_run_in_words_from_start_to_failure() {
        let started = obj(&run("Running", &[]), None);
        assert_eq!(started.rollout.as_deref(), Some("checkout-api"));
        assert_eq!(
            started.changes,
            vec![
                "AnalysisRun checkout-api-h2-2-1 (Step analysis) of revision h2: metric error-rate (prometheus: sum(rate(errors[1m])))"
            ]
        );
        let measured = obj(
            &run("Running", &[("Successful", "[0.004]")]),
            Some(&started),
        );
        assert_eq!(
            measured.changes,
            vec!["checkout-api-h2-2-1 metric error-rate: Successful ([0.004])"]
        );
        let failed = obj(
            &run(
                "Failed",
                &[("Successful", "[0.004]"), ("Failed", "[0.042]")],
            ),
            Some(&measured),
        );
        assert_eq!(
            failed.changes,
            vec![
                "checkout-api-h2-2-1 metric error-rate: Failed ([0.042])".to_owned(),
                "checkout-api-h2-2-1 Failed: metric error-rate (prometheus: sum(rate(errors[1m]))) Failed by successCondition result[0] < 0.01, failureLimit 0; last Successful ([0.004]); Failed ([0.042])".to_owned(),
            ]
        );
        assert!(failed.finished());
    }

    #[test]
    fn a_measurement_completed_in_place_is_a_change() {
        // As the real controller writes a job metric: Running, then the same one Successful.
        let started = obj(&run("Running", &[("Running", "")]), None);
        let done = obj(&run("Running", &[("Successful", "")]), Some(&started));
        assert_eq!(
            done.changes,
            vec!["checkout-api-h2-2-1 metric error-rate: Successful"]
        );
        // Past the kept window: the one completed is still found, before the new one.
        let six: Vec<(&str, &str)> = (0..5)
            .map(|_| ("Successful", "1"))
            .chain([("Running", "")])
            .collect();
        let mut seven = six.clone();
        seven[5] = ("Successful", "2");
        seven.push(("Running", ""));
        let before = obj(&run("Running", &six), None);
        let after = obj(&run("Running", &seven), Some(&before));
        assert_eq!(
            after.changes,
            vec![
                "checkout-api-h2-2-1 metric error-rate: Successful (2)",
                "checkout-api-h2-2-1 metric error-rate: Running"
            ]
        );
        // Nothing changed, nothing said.
        let again = obj(&run("Running", &seven), Some(&after));
        assert!(again.changes.is_empty(), "{:?}", again.changes);
    }

    #[test]
    fn providers_in_words() {
        assert_eq!(
            query_words(Some(
                &json!({"web": {"url": "http://m/ok", "jsonPath": "{$.ok}"}})
            )),
            "web GET http://m/ok {$.ok}"
        );
        assert_eq!(
            query_words(Some(
                &json!({"job": {"spec": {"template": {"spec": {"containers": [{"image": "curl:8"}]}}}}})
            )),
            "job running curl:8"
        );
        assert_eq!(
            query_words(Some(&json!({"datadog": {"query": " avg:x "}}))),
            "datadog: avg:x"
        );
        assert_eq!(query_words(None), "no provider");
    }
}
