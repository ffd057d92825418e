//! `rollout-forensics check` end to end, against `rollout-forensics serve` on loopback serving
//! the end state of committed recordings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{bin, recording, run_bounded, serve, text};
use rf_format::{End, Kind, Op, Reader};
use serde_json::Value;

fn check(kubeconfig: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = bin(home);
    c.arg("check")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args);
    run_bounded(c)
}

#[test]
fn check_fails_at_the_end_of_adoption_selector_drift_and_saves_its_evidence() {
    let s = serve(&recording("adoption-selector-drift"), &[]);
    let saved = s.dir.path().join("adoption.rfr");
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("service-selector-mismatch"), "{stdout}");
    assert!(stdout.contains("canary-not-in-endpoints"), "{stdout}");
    assert!(stdout.contains("NOT ADOPTED"), "{stdout}");

    // The snapshot is a complete recording of every kind listed, and analyzes alone.
    let mut reader = Reader::new(std::fs::File::open(&saved).unwrap()).unwrap();
    let mut records = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        records.push(r);
    }
    assert_eq!(reader.end(), Some(End::Closed));
    for kind in [
        Kind::Rollout,
        Kind::ReplicaSet,
        Kind::Pod,
        Kind::Service,
        Kind::EndpointSlice,
    ] {
        assert!(
            records
                .iter()
                .any(|r| r.kind == kind && r.op == Op::ListEnd),
            "{kind:?} listed in the snapshot"
        );
    }
    let mut c = bin(s.dir.path());
    c.arg("analyze").arg(&saved).args(["-o", "json"]);
    let analyzed = run_bounded(c);
    let report: Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    // The saved snapshot proves the same on its own (its header says it is one snapshot).
    assert_eq!(analyzed.status.code(), Some(1));
    assert!(rules.contains(&"canary-not-in-endpoints"), "{rules:?}");
    assert!(rules.contains(&"service-selector-mismatch"), "{rules:?}");
}

#[test]
fn check_json_names_the_endpoints_by_revision() {
    let s = serve(&recording("adoption-selector-drift"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["adopted"], false);
    let current = v["state"]["current_pod_hash"].as_str().unwrap().to_owned();
    let svc = &v["state"]["services"][0];
    assert_eq!(svc["name"], "checkout-api");
    assert!(svc["endpoints"].get(&current).is_none(), "{svc}");
    assert!(!svc["endpoints"].as_object().unwrap().is_empty(), "{svc}");
}

#[test]
fn check_passes_at_the_end_of_image_only_release() {
    let s = serve(&recording("image-only-release"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("adopted"), "{stdout}");

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-version",
            "app=checkout-api",
            "-o",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // The wrong release label: the current revision does not carry it.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-version",
            "app=something-else",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("expected \"something-else\""), "{stdout}");
}

#[test]
fn check_of_a_missing_rollout_or_a_bad_flag_is_an_input_error() {
    let s = serve(&recording("image-only-release"), &[]);
    let out = check(&s.kubeconfig, s.dir.path(), &["nope", "-n", "payments"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("rollout payments/nope not found"),
        "{}",
        text(&out.stderr)
    );

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments", "--expect-version", "v418"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("LABEL=VALUE"),
        "{}",
        text(&out.stderr)
    );

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--save",
            "/nonexistent-dir/x.rfr",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new("/nonexistent-dir/x.rfr").exists());
}
