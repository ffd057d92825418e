//! Flight-recorder mode against a real HTTP API server on loopback: a served recording, replayed
//! in time, recorded into a file per second. Every file stands alone (closed, beginning with a
//! list of every watch), and together they hold every served watch event exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rf_format::{End, Header, Kind, Op, Reader, Record, Timestamp};
use rf_recorder::{Config, Hooks, Rotation, SourceInfo};
use rf_serve::{Background, Options, Pace, Timeline};

const NAME: &str = "rerender-race-reruns";

fn source() -> (Vec<u8>, Vec<Record>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings")
        .join(format!("{NAME}.rfr"));
    let bytes = std::fs::read(path).unwrap();
    let records = Reader::new(bytes.as_slice())
        .unwrap()
        .map(Result::unwrap)
        .collect();
    (bytes, records)
}

type Key = (Kind, String, String);

fn key(r: &Record) -> Key {
    (r.kind.clone(), r.namespace.clone(), r.name.clone())
}

struct File {
    path: PathBuf,
    header: Header,
    records: Vec<Record>,
    closed_at: Timestamp,
}

fn read_closed(path: &Path) -> File {
    let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    let records: Vec<Record> = (&mut r).map(Result::unwrap).collect();
    assert_eq!(r.end(), Some(End::Closed), "{} is closed", path.display());
    File {
        path: path.to_owned(),
        header: r.header().clone(),
        closed_at: r.trailer().unwrap().closed_at,
        records,
    }
}

/// Records `NAME` served at 100× into `dir`, a file per second, until every served object state
/// was received and a little more.
fn record_rotating(dir: &Path, watches: &[(Kind, &str)]) -> rf_recorder::Summary {
    let (bytes, src) = source();
    // The served time starts at the end of the initial lists and runs 100 times faster.
    let base = src
        .iter()
        .rfind(|r| r.op == Op::ListEnd)
        .map(|r| r.observed_at)
        .unwrap();
    let last = src.last().unwrap().observed_at;
    let served_for = Duration::from_nanos(u64::try_from((last.0 - base.0) / 100).unwrap());
    let timeline = Arc::new(Timeline::read(bytes.as_slice()).unwrap());
    let server = Background::start(
        timeline,
        Options {
            pace: Pace::Speed(100.0),
            ..Options::default()
        },
    )
    .unwrap();
    let url = server.url();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let summary = runtime.block_on(async {
        let client = kube::Client::try_from(kube::Config::new(url.parse().unwrap())).unwrap();
        let config = Config {
            kinds: watches.iter().map(|(k, _)| k.clone()).collect(),
            optional_kinds: Vec::new(),
            namespaces: vec!["payments".to_owned()],
            flush_interval: Duration::from_millis(200),
            ..Config::default()
        };
        let all_in = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&all_in);
        let begun = Instant::now();
        // Stop 1.5 s (another rotation) after the served time passed the last record; at most
        // 40 s.
        let stop = async move {
            let mut since: Option<Instant> = None;
            while begun.elapsed() < Duration::from_secs(40) {
                if since.is_none() && flag.load(Ordering::Relaxed) {
                    since = Some(Instant::now());
                }
                if since.is_some_and(|s| s.elapsed() > Duration::from_millis(1500)) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        rf_recorder::record_rotating(
            client,
            &config,
            &SourceInfo::default(),
            Rotation {
                dir: dir.to_owned(),
                every: Duration::from_secs(1),
                keep: None,
            },
            stop,
            move |p| {
                if p.elapsed >= served_for {
                    all_in.store(true, Ordering::Relaxed);
                }
            },
            Hooks::default(),
        )
        .await
        .unwrap()
    });
    server.stop().unwrap();
    summary
}

#[test]
fn rotated_files_stand_alone_and_together_hold_every_event_once() {
    let dir = tempfile::tempdir().unwrap();
    let watches = [
        (Kind::Rollout, "payments"),
        (Kind::ReplicaSet, "payments"),
        (Kind::Event, "payments"),
    ];
    let summary = record_rotating(dir.path(), &watches);
    assert_eq!(summary.gaps, 0);

    let paths = rf_recorder::list_files(dir.path()).unwrap();
    assert_eq!(summary.files, paths.len() as u64);
    assert!(paths.len() >= 4, "several files: {paths:?}");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().ends_with(rf_recorder::PARTIAL_SUFFIX))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let files: Vec<File> = paths.iter().map(|p| read_closed(p)).collect();

    // Per object: every state recorded, as (op, resourceVersion): the first file's list, then
    // the watch events of every file. The leading lists of later files are checked, not counted.
    let mut got: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    let mut live: BTreeMap<Key, String> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let name = f.path.display();
        let mut k = 0;
        if i > 0 {
            assert_eq!(f.header.started_at, files[i - 1].closed_at, "{name}");
            assert!(f.header.notes.contains_key("leading-lists"), "{name}");
            let mut listed: BTreeMap<Key, String> = BTreeMap::new();
            for (kind, ns) in &watches {
                let begin = &f.records[k];
                assert_eq!(
                    (begin.op.clone(), &begin.kind, begin.namespace.as_str()),
                    (Op::ListBegin, kind, *ns),
                    "{name}"
                );
                k += 1;
                while f.records[k].op == Op::Listed {
                    let r = &f.records[k];
                    listed.insert(key(r), r.resource_version.clone());
                    k += 1;
                }
                assert_eq!(f.records[k].op, Op::ListEnd, "{name}");
                k += 1;
            }
            assert_eq!(
                listed, live,
                "{name}: the leading lists are the state so far"
            );
        } else {
            // The first file: the real lists, each before its watch's events.
            for (kind, ns) in &watches {
                let end = f
                    .records
                    .iter()
                    .position(|r| r.op == Op::ListEnd && r.kind == *kind)
                    .unwrap_or_else(|| panic!("{name}: no list of {kind:?} in {ns}"));
                assert!(
                    f.records[..end]
                        .iter()
                        .all(|r| r.kind != *kind || !matches!(r.op, Op::Added | Op::Modified)),
                    "{name}: {kind:?} events before its list"
                );
            }
        }
        for r in &f.records[k..] {
            match r.op {
                Op::Listed => assert_eq!(i, 0, "{name}: a list after the start"),
                Op::Added | Op::Modified | Op::Deleted { .. } => {}
                _ => continue,
            }
            got.entry(key(r))
                .or_default()
                .push(r.resource_version.clone());
            if matches!(r.op, Op::Deleted { .. }) {
                live.remove(&key(r));
            } else {
                live.insert(key(r), r.resource_version.clone());
            }
        }
    }

    let (_, src) = source();
    let mut want: BTreeMap<Key, Vec<String>> = BTreeMap::new();
    let watched = |r: &&Record| {
        watches
            .iter()
            .any(|(k, ns)| r.kind == *k && r.namespace == *ns)
    };
    for r in src.iter().filter(|r| r.op.has_object()).filter(watched) {
        want.entry(key(r))
            .or_default()
            .push(r.resource_version.clone());
    }
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    for (k, want) in &want {
        let got = &got[k];
        // The recorder listed a moment after the server started: its list may already hold a
        // later state than the recording's own list. From there on, every version once, in order.
        let from = want
            .iter()
            .position(|rv| *rv == got[0])
            .unwrap_or_else(|| panic!("{k:?}: listed at {} which was never served", got[0]));
        assert_eq!(&want[from..], got.as_slice(), "the history of {k:?}");
    }

    // Read as one history, the files give the findings of the same records read as one file
    // (without the leading lists of the later files).
    let mut analyzer = rf_analyzer::Analyzer::new(rf_analyzer::Options::default());
    let mut one = Vec::new();
    for (i, f) in files.iter().enumerate() {
        analyzer.begin_file(
            &f.path.display().to_string(),
            f.header.format_version,
            &f.header,
        );
        let lead = if i == 0 {
            0
        } else {
            lead_len(&f.records, watches.len())
        };
        for (j, r) in f.records.iter().enumerate() {
            analyzer.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
            if j >= lead {
                one.push(Record {
                    seq: one.len() as u64 + 1,
                    ..r.clone()
                });
            }
        }
        analyzer.end_file(rf_analyzer::FileEnd::Closed, Some(f.closed_at), None);
    }
    let report = analyzer.finish();
    let mut single = rf_analyzer::Analyzer::new(rf_analyzer::Options::default());
    single.begin_file("one", files[0].header.format_version, &files[0].header);
    for r in &one {
        single.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
    }
    let last = files.last().unwrap();
    single.end_file(rf_analyzer::FileEnd::Closed, Some(last.closed_at), None);
    let expected = single.finish();
    let rules = |r: &rf_analyzer::Report| {
        let mut v: Vec<(String, String, Timestamp)> = r
            .findings
            .iter()
            .map(|f| (f.rule.id().to_owned(), f.subject.name.clone(), f.at))
            .collect();
        v.sort();
        v
    };
    assert!(!report.findings.is_empty());
    assert_eq!(rules(&report), rules(&expected));
}

/// How many records the leading lists of a rotated file hold.
fn lead_len(records: &[Record], watches: usize) -> usize {
    let mut ends = 0;
    records
        .iter()
        .take_while(|r| {
            let inside = ends < watches;
            if r.op == Op::ListEnd {
                ends += 1;
            }
            inside
        })
        .count()
}
