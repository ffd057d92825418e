//! The analyzer streams: what it holds follows the live objects, not the number of records.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rf_analyzer::{Analyzer, Options};
use rf_format::{Kind, Op, Record, Timestamp};

/// A record of pod `i` changing for the `n`-th time.
fn pod_event(seq: u64, i: u64, n: u64) -> Record {
    let name = format!("checkout-api-5d98c7bf64-{i:05}");
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "payments", "uid": format!("uid-{i}"),
                     "resourceVersion": seq.to_string(), "labels": {"app": "checkout-api"}},
        "status": {"phase": "Running", "restartCount": n}
    });
    Record {
        seq,
        observed_at: Timestamp::from_unix_seconds(1_773_493_200).plus_nanos(seq as i64 * 1_000_000),
        kind: Kind::Pod,
        op: if n == 0 { Op::Added } else { Op::Modified },
        namespace: "payments".to_owned(),
        name,
        uid: format!("uid-{i}"),
        resource_version: seq.to_string(),
        actor: None,
        object: serde_json::to_vec(&object).unwrap(),
    }
}

#[test]
fn retained_state_does_not_grow_with_events_over_the_same_objects() {
    let live = 200;
    let mut seq = 0;
    let mut analyzer = Analyzer::new(Options::default());
    let scenario = rf_scenarios::generate("rerender-race-reruns").unwrap();
    analyzer.begin_file("x", 1, &scenario.header);
    for r in &scenario.records {
        seq = r.seq;
        analyzer.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
    }
    let mut push_round = |analyzer: &mut Analyzer, n: u64| {
        for i in 0..live {
            seq += 1;
            let r = pod_event(seq, i, n);
            analyzer.push(&r, rf_analyzer::Prepared::of(&r), &mut rf_analyzer::Discard);
        }
    };
    for n in 0..10 {
        push_round(&mut analyzer, n);
    }
    let after_2k = analyzer.retained();
    for n in 10..500 {
        push_round(&mut analyzer, n);
    }
    let after_100k = analyzer.retained();
    assert_eq!(
        after_2k, after_100k,
        "nothing retained grows with 98,000 more events"
    );
}

#[test]
fn retained_replicasets_follow_live_ones_not_the_number_of_releases() {
    let recording = rf_scenarios::scale(&rf_scenarios::ScaleConfig {
        rollouts: 1,
        events: 20_000,
        seed: 3,
        applications: false,
        ..rf_scenarios::ScaleConfig::default()
    });
    let mut analyzer = Analyzer::new(Options::default());
    analyzer.begin_file("x", 1, &recording.header);
    let mut most = 0;
    for r in &recording.records {
        analyzer.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
        most = most.max(analyzer.retained().replicasets);
    }
    let releases = recording
        .records
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
        .count();
    assert!(releases > 50, "{releases} releases");
    // revisionHistoryLimit 3 + current + stable + the 4 newest deleted ones.
    assert!(
        most <= 10,
        "{most} ReplicaSets retained after {releases} releases"
    );
}
