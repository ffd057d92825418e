//! Recording a served recording gives back the same history, also when the server closes
//! watches, answers 410 Gone, or stalls a stream. All over real HTTP on loopback.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rf_format::{End, Kind, Op, Reader, Record};
use rf_recorder::{Config, SourceInfo, Summary};
use rf_serve::{Background, Faults, Options, Pace, Timeline};
use serde_json::Value;

/// A `Write` whose bytes the test can read afterwards.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The recording `name` (served whole), and its records of what these tests record: Rollouts,
/// ReplicaSets and Events in namespace payments.
fn source(name: &str) -> (Vec<u8>, Vec<Record>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings")
        .join(format!("{name}.rfr"));
    let bytes = std::fs::read(path).unwrap();
    let records = Reader::new(bytes.as_slice())
        .unwrap()
        .map(Result::unwrap)
        .filter(|r| {
            matches!(r.kind, Kind::Rollout | Kind::ReplicaSet | Kind::Event)
                && r.namespace == "payments"
        })
        .collect();
    (bytes, records)
}

/// Serves `name`, records it with `tune` applied, and returns the recording's records.
fn record(name: &str, faults: Faults, tune: impl FnOnce(&mut Config)) -> (Vec<Record>, Summary) {
    let (bytes, src) = source(name);
    let expected = src.len() as u64;
    let timeline = Arc::new(Timeline::read(bytes.as_slice()).unwrap());
    let server = Background::start(
        timeline,
        Options {
            pace: Pace::Max,
            faults,
            ..Options::default()
        },
    )
    .unwrap();
    let url = server.url();
    let out = Shared::default();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(async {
        let kube_config = kube::Config::new(url.parse().unwrap());
        let client = kube::Client::try_from(kube_config).unwrap();
        let mut config = Config {
            kinds: vec![Kind::Rollout, Kind::ReplicaSet, Kind::Event],
            optional_kinds: Vec::new(),
            namespaces: vec!["payments".to_owned()],
            flush_interval: Duration::from_millis(100),
            ..Config::default()
        };
        tune(&mut config);
        // Stop once at least the source's record count is written and nothing came for 700 ms.
        let done = Arc::new(AtomicBool::new(false));
        let last = Arc::new(AtomicU64::new(0));
        let quiet_since = Arc::new(Mutex::new(Instant::now()));
        let (d, l, q) = (
            Arc::clone(&done),
            Arc::clone(&last),
            Arc::clone(&quiet_since),
        );
        let begun = Instant::now();
        let stop = async move {
            while !done.load(Ordering::Relaxed) && begun.elapsed() < Duration::from_secs(30) {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        rf_recorder::record(
            client,
            &config,
            &SourceInfo::default(),
            out.clone(),
            stop,
            move |p| {
                if p.records != l.swap(p.records, Ordering::Relaxed) {
                    *q.lock().unwrap() = Instant::now();
                } else if p.records >= expected
                    && q.lock().unwrap().elapsed() > Duration::from_millis(700)
                {
                    d.store(true, Ordering::Relaxed);
                }
            },
        )
        .await
        .unwrap()
    });
    server.stop().unwrap();
    let bytes = out.0.lock().unwrap().clone();
    let mut reader = Reader::new(bytes.as_slice()).unwrap();
    let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
    assert_eq!(reader.end(), Some(End::Closed));
    (records, summary)
}

type Key = (String, String, String);

/// Per object, the sequence of (op, state); with `dedup`, consecutive equal states once.
fn histories(records: &[Record], dedup: bool) -> BTreeMap<Key, Vec<Value>> {
    let mut h: BTreeMap<Key, Vec<Value>> = BTreeMap::new();
    for r in records.iter().filter(|r| r.op.has_object()) {
        let mut v: Value = serde_json::from_slice(&r.object).unwrap();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            // A relist after a gap is served at its list's version: compare states, not versions.
            if dedup {
                m.remove("resourceVersion");
            }
        }
        let state = if matches!(r.op, Op::Deleted { .. }) {
            serde_json::json!({"deleted": v})
        } else {
            v
        };
        let list = h
            .entry((
                r.kind.name().to_owned(),
                r.namespace.clone(),
                r.name.clone(),
            ))
            .or_default();
        if !(dedup && list.last() == Some(&state)) {
            list.push(state);
        }
    }
    h
}

/// The findings (rule, subject name), sorted. Served as fast as the recorder reads, every
/// recorded receive time falls within milliseconds: rules that measure the time between records
/// (`double-render`: two renders within 120 s) see renders minutes apart as simultaneous, so
/// they are left out.
fn rules(records: &[Record], header_of: &str) -> Vec<(String, String)> {
    let (bytes, _) = source(header_of);
    let header = Reader::new(bytes.as_slice()).unwrap().header().clone();
    let report = rf_analyzer::analyze(
        &header,
        records.iter().cloned(),
        rf_analyzer::Options::default(),
    );
    let mut r: Vec<(String, String)> = report
        .findings
        .iter()
        .filter(|f| f.rule.id() != "double-render")
        .map(|f| (f.rule.id().to_owned(), f.subject.name.clone()))
        .collect();
    r.sort();
    r
}

#[test]
fn every_committed_recording_records_back_to_the_same_object_states() {
    for name in [
        "rerender-race",
        "rerender-race-reruns",
        "image-only-release",
        "abort",
        "hash-only-change",
    ] {
        let (_, src) = source(name);
        let (got, summary) = record(name, Faults::default(), |_| {});
        assert_eq!(summary.gaps, 0, "{name}");
        assert_eq!(
            histories(&got, false),
            histories(&src, false),
            "{name}: object histories differ"
        );
        assert_eq!(
            rules(&got, name),
            rules(&src, name),
            "{name}: findings differ"
        );
    }
}

#[test]
fn closed_watches_resume_from_their_version_without_a_gap() {
    let (_, src) = source("rerender-race-reruns");
    let (got, summary) = record(
        "rerender-race-reruns",
        Faults {
            close_watch_every: 3,
            ..Faults::default()
        },
        |_| {},
    );
    assert!(summary.resumes > 5, "{summary:?}");
    assert_eq!(summary.gaps, 0);
    assert_eq!(histories(&got, false), histories(&src, false));
}

#[test]
fn a_410_is_a_gap_and_a_relist_and_no_state_is_lost() {
    let (_, src) = source("rerender-race-reruns");
    let (got, summary) = record(
        "rerender-race-reruns",
        Faults {
            gone_every: 4,
            close_watch_every: 5,
            ..Faults::default()
        },
        |_| {},
    );
    assert!(summary.gaps > 0, "{summary:?}");
    let gaps = got
        .iter()
        .filter(|r| matches!(r.op, Op::Gap { .. }))
        .count() as u64;
    assert_eq!(gaps, summary.gaps);
    // Every gap is followed by a relist of its kind.
    for (i, r) in got.iter().enumerate() {
        if matches!(r.op, Op::Gap { .. }) {
            assert!(
                got[i + 1..]
                    .iter()
                    .any(|x| x.op == Op::ListBegin && x.kind == r.kind),
                "gap without relist"
            );
        }
    }
    assert_eq!(histories(&got, true), histories(&src, true));
    assert_eq!(
        rules(&got, "rerender-race-reruns"),
        rules(&src, "rerender-race-reruns")
    );
}

#[test]
fn a_stalled_stream_is_resumed_after_the_idle_timeout() {
    let (_, src) = source("rerender-race");
    let (got, summary) = record(
        "rerender-race",
        Faults {
            stall_after: 5,
            ..Faults::default()
        },
        |c| {
            c.idle_timeout = Duration::from_millis(400);
        },
    );
    assert!(summary.resumes > 0, "{summary:?}");
    assert_eq!(histories(&got, false), histories(&src, false));
}
