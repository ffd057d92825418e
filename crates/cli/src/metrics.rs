//! `record --metrics-listen ADDR` and `watch --metrics-listen ADDR`: what the recorder finds
//! and how it records, for the Prometheus a team already runs. `/metrics` (OpenMetrics text),
//! `/healthz` (the process answers) and `/readyz` (every initial list done, no kind in a gap).
//!
//! Labels are the rollout's `namespace` and `name` (they join with the Argo Rollouts
//! controller's `rollout_info{namespace,name}`), its `kind` (`Rollout` or `Deployment`), the
//! `rule` and the `severity`: never a pod, a ReplicaSet or a hash, so the series a cluster
//! makes stay as many as its rollouts times the rules.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::{Method, Request, Response, StatusCode};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use rf_analyzer::Finding;
use rf_format::{Header, Op, Record, Timestamp};

/// One series of a finding: the rollout it concerns, the rule, the severity.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct FindingLabels {
    pub namespace: String,
    pub name: String,
    pub kind: String,
    pub rule: String,
    pub severity: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GapLabels {
    kind: String,
    reason: String,
}

/// Which lists are done and which kinds are in a gap, for `/readyz`.
#[derive(Debug, Default)]
struct Readiness {
    /// (kind, namespace) the recorder lists and watches: each must have listed once.
    expected: BTreeSet<(String, String)>,
    listed: BTreeSet<(String, String)>,
    /// Lists begun and not ended, and targets whose watch is in a gap until it relists.
    open: BTreeSet<(String, String)>,
    in_gap: BTreeSet<(String, String)>,
    begun: bool,
}

impl Readiness {
    /// Why it is not ready; none when it is.
    fn why_not(&self) -> Option<String> {
        if !self.begun {
            return Some("recording has not begun".to_owned());
        }
        let names = |set: &mut dyn Iterator<Item = &(String, String)>| {
            set.map(|(k, ns)| {
                if ns.is_empty() {
                    k.clone()
                } else {
                    format!("{k} in {ns}")
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
        };
        if !self.in_gap.is_empty() {
            return Some(format!("in a gap: {}", names(&mut self.in_gap.iter())));
        }
        let mut unlisted = self.expected.difference(&self.listed).peekable();
        if unlisted.peek().is_some() {
            return Some(format!("initial list not done: {}", names(&mut unlisted)));
        }
        if !self.open.is_empty() {
            return Some(format!("listing: {}", names(&mut self.open.iter())));
        }
        None
    }
}

/// The recorder's metrics, shared by the recorder's writer (which updates them) and the HTTP
/// server (which encodes them).
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    findings: Family<FindingLabels, Counter>,
    active: Family<FindingLabels, Gauge>,
    events: Family<KindLabels, Counter>,
    gaps: Family<GapLabels, Counter>,
    relists: Family<KindLabels, Counter>,
    resumes: Counter,
    bytes: Counter,
    rotations: Counter,
    newest: Gauge<f64, AtomicU64>,
    lag: Histogram,
    in_gap: Gauge,
    readiness: Mutex<Readiness>,
    /// What the writer last reported of the counters it keeps itself.
    reported: Mutex<(u64, u64, u64)>,
    /// Per rollout (namespace, name, kind): the generation of its spec last recorded, and the
    /// findings active on it with the generation they were made at.
    live: Mutex<BTreeMap<(String, String, String), Live>>,
    /// Per rollout and rule whose findings are conditions the analyzer follows (a Service's
    /// selector, the canary in the endpoints): the conditions holding now, and the series of
    /// that rollout and rule (one per severity seen).
    conditions: Mutex<BTreeMap<(String, String, String), Held>>,
}

#[derive(Debug, Default)]
struct Held {
    holding: BTreeSet<String>,
    series: BTreeSet<FindingLabels>,
}

/// A rollout's spec generation last recorded, and its active findings.
#[derive(Debug, Default)]
struct Live {
    generation: Option<i64>,
    /// The generation each active finding was made at (none when no record was seen yet).
    active: BTreeMap<FindingLabels, Option<i64>>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("rollout_forensics");
        let findings = Family::<FindingLabels, Counter>::default();
        registry.register(
            "findings",
            "Findings made while recording, by the rollout they concern, rule and severity",
            findings.clone(),
        );
        let active = Family::<FindingLabels, Gauge>::default();
        registry.register(
            "finding_active",
            "1 while the condition a finding reported holds (a Service's selector, the canary in the endpoints, a router's weight: until the analyzer sees it end); for a finding of an event (a restart, a render), until the rollout's spec changes again (a new generation) or the rollout is deleted",
            active.clone(),
        );
        let events = Family::<KindLabels, Counter>::default();
        registry.register(
            "events_recorded",
            "Watch events and listed objects written, by kind",
            events.clone(),
        );
        let gaps = Family::<GapLabels, Counter>::default();
        registry.register(
            "gaps",
            "Gaps the recorder stated (events it could not see), by kind and reason",
            gaps.clone(),
        );
        let relists = Family::<KindLabels, Counter>::default();
        registry.register(
            "relists",
            "Lists after the first, by kind (each follows a gap)",
            relists.clone(),
        );
        let resumes = Counter::default();
        registry.register(
            "watch_restarts",
            "Watches resumed after the server closed or broke them, without loss",
            resumes.clone(),
        );
        let bytes = Counter::default();
        registry.register("written_bytes", "Compressed bytes written", bytes.clone());
        let rotations = Counter::default();
        registry.register(
            "rotations",
            "Files the flight recorder closed and started anew",
            rotations.clone(),
        );
        let newest = Gauge::<f64, AtomicU64>::default();
        registry.register(
            "newest_event_timestamp_seconds",
            "When the newest record written was received (Unix seconds)",
            newest.clone(),
        );
        let lag = Histogram::new(exponential_buckets(0.001, 4.0, 10));
        registry.register(
            "write_lag_seconds",
            "From an event's receipt to its record being written",
            lag.clone(),
        );
        let in_gap = Gauge::default();
        registry.register(
            "targets_in_gap",
            "Kinds (per namespace) whose watch is in a gap now: events there are not seen until the relist ends",
            in_gap.clone(),
        );
        Metrics {
            registry,
            in_gap,
            findings,
            active,
            events,
            gaps,
            relists,
            resumes,
            bytes,
            rotations,
            newest,
            lag,
            readiness: Mutex::new(Readiness::default()),
            reported: Mutex::new((0, 0, 1)),
            live: Mutex::new(BTreeMap::new()),
            conditions: Mutex::new(BTreeMap::new()),
        }
    }

    /// The recording begins: the lists it must make before it is ready.
    pub fn begin(&self, header: &Header) {
        let Ok(mut r) = self.readiness.lock() else {
            return;
        };
        let all_namespaces = [String::new()];
        let namespaces: &[String] = if header.source.namespaces.is_empty() {
            &all_namespaces
        } else {
            &header.source.namespaces
        };
        for kind in &header.source.kinds {
            let namespaced = rf_format::api::well_known(kind).is_none_or(|names| names.namespaced);
            if namespaced {
                for ns in namespaces {
                    r.expected.insert((kind.name().to_owned(), ns.clone()));
                }
            } else {
                r.expected.insert((kind.name().to_owned(), String::new()));
            }
        }
        r.begun = true;
    }

    /// A record was written, `now` (its receipt is `record.observed_at`).
    pub fn record(&self, record: &Record, now: Timestamp) {
        let kind = record.kind.name().to_owned();
        let target = (kind.clone(), record.namespace.clone());
        match &record.op {
            Op::Added | Op::Modified | Op::Deleted { .. } | Op::Listed => {
                self.events.get_or_create(&KindLabels { kind }).inc();
                self.newest.set(seconds(record.observed_at));
                let lag = (now.0 - record.observed_at.0).max(0);
                #[allow(clippy::cast_precision_loss)]
                self.lag.observe(lag as f64 / 1e9);
                self.follow_revision(record);
            }
            Op::ListBegin => {
                if let Ok(mut r) = self.readiness.lock() {
                    if r.listed.contains(&target) {
                        self.relists.get_or_create(&KindLabels { kind }).inc();
                    }
                    r.open.insert(target);
                }
            }
            Op::ListEnd => {
                if let Ok(mut r) = self.readiness.lock() {
                    r.open.remove(&target);
                    r.in_gap.remove(&target);
                    r.listed.insert(target);
                    self.in_gap
                        .set(i64::try_from(r.in_gap.len()).unwrap_or(i64::MAX));
                }
            }
            Op::Gap { reason } => {
                self.gaps
                    .get_or_create(&GapLabels {
                        kind,
                        reason: gap_reason(reason).to_owned(),
                    })
                    .inc();
                if let Ok(mut r) = self.readiness.lock() {
                    r.in_gap.insert(target);
                    self.in_gap
                        .set(i64::try_from(r.in_gap.len()).unwrap_or(i64::MAX));
                }
            }
        }
    }

    /// What the writer counts itself, as of now: bytes written, watches resumed, files.
    pub fn progress(&self, bytes: u64, resumes: u64, files: u64) {
        let Ok(mut last) = self.reported.lock() else {
            return;
        };
        self.bytes.inc_by(bytes.saturating_sub(last.0));
        self.resumes.inc_by(resumes.saturating_sub(last.1));
        self.rotations.inc_by(files.saturating_sub(last.2));
        *last = (bytes.max(last.0), resumes.max(last.1), files.max(last.2));
    }

    /// Findings made: counted, and active.
    pub fn findings<'a>(&self, findings: impl IntoIterator<Item = &'a Finding>) {
        let (Ok(mut held), Ok(mut live)) = (self.conditions.lock(), self.live.lock()) else {
            return;
        };
        for f in findings {
            let labels = FindingLabels {
                namespace: f.rollout.namespace.clone(),
                name: f.rollout.name.clone(),
                kind: f.rollout.kind.name().to_owned(),
                rule: f.rule.id().to_owned(),
                severity: f.severity.as_str().to_owned(),
            };
            self.findings.get_or_create(&labels).inc();
            self.active.get_or_create(&labels).set(1);
            let condition = (
                labels.namespace.clone(),
                labels.name.clone(),
                labels.rule.clone(),
            );
            if let Some(h) = held.get_mut(&condition) {
                h.series.insert(labels);
                continue;
            }
            let key = (
                labels.namespace.clone(),
                labels.name.clone(),
                labels.kind.clone(),
            );
            let entry = live.entry(key).or_default();
            let at = entry.generation;
            entry.active.insert(labels, at);
        }
    }

    /// Reported conditions that stopped holding, or hold again: a rule whose findings come
    /// with them is followed by them from then on, not by the rollout's generation.
    pub fn conditions(&self, changes: &[rf_analyzer::ConditionChange]) {
        let (Ok(mut held), Ok(mut live)) = (self.conditions.lock(), self.live.lock()) else {
            return;
        };
        for c in changes {
            let rule = c.rule.id();
            let rollout = (
                c.rollout.namespace.clone(),
                c.rollout.name.clone(),
                c.rollout.kind.name().to_owned(),
            );
            let h = held
                .entry((rollout.0.clone(), rollout.1.clone(), rule.to_owned()))
                .or_default();
            // The series of this rule on this rollout leave the generation's care.
            if let Some(l) = live.get_mut(&rollout) {
                let mine: Vec<FindingLabels> = l
                    .active
                    .keys()
                    .filter(|k| k.rule == rule)
                    .cloned()
                    .collect();
                for k in mine {
                    l.active.remove(&k);
                    h.series.insert(k);
                }
            }
            if c.holds {
                h.holding.insert(c.condition.clone());
            } else {
                h.holding.remove(&c.condition);
            }
            let value = i64::from(!h.holding.is_empty());
            for s in &h.series {
                self.active.get_or_create(s).set(value);
            }
        }
    }

    /// A Rollout's or Deployment's record: its findings made at an older generation of its
    /// spec, or all of them when it is deleted, are no longer active.
    fn follow_revision(&self, record: &Record) {
        let kind = record.kind.name();
        if kind != "Rollout" && !rf_format::api::DEPLOYMENT.is(&record.kind) {
            return;
        }
        let Ok(mut live) = self.live.lock() else {
            return;
        };
        let key = (
            record.namespace.clone(),
            record.name.clone(),
            kind.to_owned(),
        );
        if matches!(record.op, Op::Deleted { .. }) {
            if let Some(gone) = live.remove(&key) {
                for l in gone.active.into_keys() {
                    self.active.get_or_create(&l).set(0);
                }
            }
            return;
        }
        let Some(generation) = generation_of(&record.object) else {
            return;
        };
        let entry = live.entry(key).or_default();
        entry.generation = Some(generation);
        entry.active.retain(|labels, at| match at {
            Some(made) if *made < generation => {
                self.active.get_or_create(labels).set(0);
                false
            }
            Some(_) => true,
            // Made before any record of it was seen: it is about this generation.
            None => {
                *at = Some(generation);
                true
            }
        });
    }

    /// `/readyz`: none when ready, else why not.
    pub fn not_ready(&self) -> Option<String> {
        self.readiness
            .lock()
            .map_or_else(|_| Some("poisoned".to_owned()), |r| r.why_not())
    }

    /// The OpenMetrics text of every metric.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if prometheus_client::encoding::text::encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}

fn seconds(t: Timestamp) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let s = t.0 as f64 / 1e9;
    s
}

/// A gap's reason as a label: `expired` for a watch whose version the server no longer has
/// (410 Gone), `other` for the rest (the text itself would make a series per resourceVersion).
fn gap_reason(reason: &str) -> &'static str {
    let r = reason.to_ascii_lowercase();
    if r.contains("410") || r.contains("gone") || r.contains("expired") || r.contains("too old") {
        "expired"
    } else {
        "other"
    }
}

/// `metadata.generation` of an object: which version of its spec it is.
fn generation_of(object: &[u8]) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Obj {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    struct Meta {
        generation: Option<i64>,
    }
    serde_json::from_slice::<Obj>(object)
        .ok()?
        .metadata
        .generation
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until the runtime ends.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let metrics = Arc::clone(&metrics);
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let answer = respond(&metrics, req.method(), req.uri().path());
                async move { Ok::<_, Infallible>(answer) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .await;
        });
    }
}

fn respond(metrics: &Metrics, method: &Method, path: &str) -> Response<Full<Bytes>> {
    let answer = |status: StatusCode, kind: &'static str, body: String| {
        let mut r = Response::new(Full::new(Bytes::from(body)));
        *r.status_mut() = status;
        r.headers_mut().insert(
            hyper::header::CONTENT_TYPE,
            hyper::header::HeaderValue::from_static(kind),
        );
        r
    };
    const TEXT: &str = "text/plain; charset=utf-8";
    if method != Method::GET && method != Method::HEAD {
        return answer(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "only GET\n".to_owned(),
        );
    }
    match path {
        "/metrics" => answer(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics.encode(),
        ),
        "/healthz" => answer(StatusCode::OK, TEXT, "ok\n".to_owned()),
        "/readyz" => match metrics.not_ready() {
            None => answer(StatusCode::OK, TEXT, "ready\n".to_owned()),
            Some(why) => answer(StatusCode::SERVICE_UNAVAILABLE, TEXT, format!("{why}\n")),
        },
        _ => answer(
            StatusCode::NOT_FOUND,
            TEXT,
            "not found: /metrics, /healthz and /readyz are served\n".to_owned(),
        ),
    }
}

/// Binds `addr` now, so that a port in use is an error before recording begins.
pub fn bind(addr: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    use anyhow::Context;
    let listener = std::net::TcpListener::bind(addr)
        .with_context(|| format!("--metrics-listen {addr}: cannot listen there"))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rf_format::{Kind, Source};

    fn rec(kind: Kind, op: Op, ns: &str, name: &str, object: &serde_json::Value) -> Record {
        Record {
            seq: 1,
            observed_at: Timestamp(1_000_000_000),
            kind,
            op,
            namespace: ns.to_owned(),
            name: name.to_owned(),
            uid: String::new(),
            resource_version: "1".to_owned(),
            actor: None,
            object: serde_json::to_vec(object).unwrap_or_default(),
        }
    }

    fn header(kinds: Vec<Kind>, namespaces: &[&str]) -> Header {
        Header::new(
            "test",
            Timestamp(0),
            Source {
                namespaces: namespaces.iter().map(|s| (*s).to_owned()).collect(),
                kinds,
                ..Source::default()
            },
        )
    }

    #[test]
    fn ready_once_every_kind_listed_in_every_namespace_and_not_in_a_gap() {
        let m = Metrics::new();
        assert_eq!(m.not_ready().as_deref(), Some("recording has not begun"));
        m.begin(&header(vec![Kind::Rollout, Kind::Pod], &["a", "b"]));
        let marker = |kind: Kind, op: Op, ns: &str| rec(kind, op, ns, "", &serde_json::Value::Null);
        for (kind, ns) in [(Kind::Rollout, "a"), (Kind::Rollout, "b"), (Kind::Pod, "a")] {
            m.record(&marker(kind.clone(), Op::ListBegin, ns), Timestamp(0));
            m.record(&marker(kind, Op::ListEnd, ns), Timestamp(0));
        }
        assert_eq!(
            m.not_ready().as_deref(),
            Some("initial list not done: Pod in b")
        );
        m.record(&marker(Kind::Pod, Op::ListBegin, "b"), Timestamp(0));
        assert_eq!(
            m.not_ready().as_deref(),
            Some("initial list not done: Pod in b")
        );
        m.record(&marker(Kind::Pod, Op::ListEnd, "b"), Timestamp(0));
        assert_eq!(m.not_ready(), None);
        // A gap: not ready until the relist after it ends; the relist is counted.
        let gap = Op::Gap {
            reason: "watch of pods expired (410 Gone): relisting".to_owned(),
        };
        m.record(&marker(Kind::Pod, gap, "a"), Timestamp(0));
        assert_eq!(m.not_ready().as_deref(), Some("in a gap: Pod in a"));
        assert!(m.encode().contains("rollout_forensics_targets_in_gap 1"));
        m.record(&marker(Kind::Pod, Op::ListBegin, "a"), Timestamp(0));
        m.record(&marker(Kind::Pod, Op::ListEnd, "a"), Timestamp(0));
        assert_eq!(m.not_ready(), None);
        let text = m.encode();
        assert!(
            text.contains("rollout_forensics_targets_in_gap 0"),
            "{text}"
        );
        assert!(
            text.contains("rollout_forensics_gaps_total{kind=\"Pod\",reason=\"expired\"} 1")
                && text.contains("rollout_forensics_relists_total{kind=\"Pod\"} 1"),
            "{text}"
        );
    }

    #[test]
    fn gap_reasons_are_few_labels_not_texts() {
        assert_eq!(
            gap_reason("410 Gone: too old resource version: 12 (40)"),
            "expired"
        );
        assert_eq!(gap_reason("the watch's version expired"), "expired");
        assert_eq!(gap_reason("recorder restarted"), "other");
    }

    #[test]
    fn a_finding_is_active_until_the_rollouts_spec_changes_again_or_it_is_deleted() {
        let m = Metrics::new();
        let rollout = |generation: i64| serde_json::json!({"metadata": {"generation": generation}});
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "web", &rollout(4)),
            Timestamp(0),
        );
        let Some(recording) = rf_scenarios::generate("moved-tag") else {
            panic!("the moved-tag scenario");
        };
        let report = rf_analyzer::analyze(
            &recording.header,
            recording.records,
            rf_analyzer::Options::default(),
        );
        let mut found: Vec<Finding> = report.findings;
        assert!(!found.is_empty());
        for f in &mut found {
            f.rollout.namespace = "shop".to_owned();
            f.rollout.name = "web".to_owned();
        }
        m.findings(&found);
        let active = |m: &Metrics| {
            m.encode()
                .lines()
                .filter(|l| l.starts_with("rollout_forensics_finding_active{") && l.ends_with(" 1"))
                .count()
        };
        let n = active(&m);
        assert!(n > 0);
        // Status writes at the same generation: still active.
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "web", &rollout(4)),
            Timestamp(0),
        );
        assert_eq!(active(&m), n);
        // Another rollout's new render changes nothing here.
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "api", &rollout(9)),
            Timestamp(0),
        );
        assert_eq!(active(&m), n);
        // A new render of this one: no longer active, still counted.
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "web", &rollout(5)),
            Timestamp(0),
        );
        assert_eq!(active(&m), 0);
        assert!(
            m.encode()
                .contains("rollout_forensics_findings_total{namespace=\"shop\",name=\"web\"")
        );
        // Deleted: its findings end with it.
        m.findings(&found);
        assert_eq!(active(&m), n);
        m.record(
            &rec(
                Kind::Rollout,
                Op::Deleted { inferred: false },
                "shop",
                "web",
                &rollout(5),
            ),
            Timestamp(0),
        );
        assert_eq!(active(&m), 0);
    }

    /// A finding of a condition the analyzer follows is active while it holds: cleared when it
    /// stops, not by a new render, and set again when it holds again.
    #[test]
    fn a_condition_is_active_while_it_holds() {
        let m = Metrics::new();
        let rollout = |generation: i64| serde_json::json!({"metadata": {"generation": generation}});
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "web", &rollout(4)),
            Timestamp(0),
        );
        let subject = rf_analyzer::Subject::new(Kind::Rollout, "shop", "web");
        let Some(recording) = rf_scenarios::generate("adoption-selector-drift") else {
            panic!("the adoption-selector-drift scenario");
        };
        let mut a = rf_analyzer::Analyzer::new(rf_analyzer::Options::default());
        a.begin_file("memory", rf_format::FORMAT_VERSION, &recording.header);
        for r in &recording.records {
            a.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
        }
        a.end_file(
            rf_analyzer::FileEnd::Closed,
            Some(recording.closed_at),
            None,
        );
        let report = a.finish();
        let Some(mut finding) = report
            .findings
            .into_iter()
            .find(|f| f.rule == rf_analyzer::Rule::ServiceSelectorMismatch)
        else {
            panic!("the scenario's selector mismatch");
        };
        finding.rollout = subject.clone();
        let change = |holds: bool| rf_analyzer::ConditionChange {
            rule: rf_analyzer::Rule::ServiceSelectorMismatch,
            rollout: subject.clone(),
            condition: "checkout-api".to_owned(),
            holds,
            at: Timestamp(0),
        };
        let active = |m: &Metrics| {
            m.encode()
                .lines()
                .find(|l| {
                    l.starts_with("rollout_forensics_finding_active{")
                        && l.contains("rule=\"service-selector-mismatch\"")
                })
                .map(|l| l.ends_with(" 1"))
        };
        m.findings(std::slice::from_ref(&finding));
        m.conditions(&[change(true)]);
        assert_eq!(active(&m), Some(true));
        // A new render: the condition still holds, so it stays active.
        m.record(
            &rec(Kind::Rollout, Op::Modified, "shop", "web", &rollout(5)),
            Timestamp(0),
        );
        assert_eq!(active(&m), Some(true));
        m.conditions(&[change(false)]);
        assert_eq!(active(&m), Some(false));
        m.conditions(&[change(true)]);
        assert_eq!(active(&m), Some(true));
    }

    #[test]
    fn written_bytes_restarts_and_rotations_follow_the_writers_counts() {
        let m = Metrics::new();
        m.progress(100, 0, 1);
        m.progress(250, 2, 3);
        let text = m.encode();
        assert!(
            text.contains("rollout_forensics_written_bytes_total 250")
                && text.contains("rollout_forensics_watch_restarts_total 2")
                && text.contains("rollout_forensics_rotations_total 2"),
            "{text}"
        );
    }
}
