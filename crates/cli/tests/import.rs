//! `rollout-forensics import`: the binary on simulated audit logs and kubectl captures, and on
//! broken input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use rf_format::Kind;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn analyze_has_the_four_rules(out: &Path) {
    let o = run(&["analyze", path(out)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    for rule in [
        "rerender-restart",
        "pause-lost",
        "config-only-rerender",
        "orphaned-replicaset",
    ] {
        assert!(stdout.contains(rule), "missing {rule} in:\n{stdout}");
    }
}

#[test]
fn an_imported_audit_log_analyzes_to_the_four_findings_of_the_rerender_race() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("rerender-race").unwrap();
    let log = dir.path().join("audit.log");
    std::fs::write(&log, rf_scenarios::to_audit_log(&rec)).unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "import",
        "--from",
        "audit-log",
        path(&log),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("0 warnings"), "{}", stderr(&o));
    analyze_has_the_four_rules(&out);
    let o = run(&["analyze", path(&out)]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("argocd-application-controller"));
}

#[test]
fn an_imported_kubectl_capture_analyzes_to_the_four_findings_of_the_rerender_race() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("rerender-race").unwrap();
    let ro = dir.path().join("rollouts.json");
    let rs = dir.path().join("replicasets.json");
    std::fs::write(&ro, rf_scenarios::to_kubectl_watch(&rec, &[Kind::Rollout])).unwrap();
    std::fs::write(
        &rs,
        rf_scenarios::to_kubectl_watch(&rec, &[Kind::ReplicaSet]),
    )
    .unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "import",
        "--from",
        "kubectl-watch",
        path(&ro),
        path(&rs),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("times approximate"), "{}", stderr(&o));
    analyze_has_the_four_rules(&out);
}

#[test]
fn a_broken_line_is_a_warning_with_file_and_line_and_the_good_lines_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("rerender-race").unwrap();
    let mut lines: Vec<String> = rf_scenarios::to_audit_log(&rec)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.insert(
        6,
        "{\"apiVersion\": \"audit.k8s.io/v1\", \"kind\": \"Ev".to_owned(),
    );
    let log = dir.path().join("audit.log");
    std::fs::write(&log, lines.join("\n")).unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "import",
        "--from",
        "audit-log",
        path(&log),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let want = format!("warning: {}:7: invalid JSON", log.display());
    assert!(stderr(&o).contains(&want), "{}", stderr(&o));
    analyze_has_the_four_rules(&out);
}

#[test]
fn an_empty_file_exits_2_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.json");
    std::fs::write(&empty, "").unwrap();
    let out = dir.path().join("out.rfr");
    for from in ["kubectl-watch", "audit-log"] {
        let o = run(&["import", "--from", from, path(&empty), "-o", path(&out)]);
        assert_eq!(o.status.code(), Some(2));
        assert!(
            stderr(&o).contains(&format!("{}: the input is empty", empty.display())),
            "{}",
            stderr(&o)
        );
        assert!(!out.exists());
    }
}

#[test]
fn a_truncated_gzip_audit_log_keeps_the_records_before_the_cut_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("rerender-race").unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(rf_scenarios::to_audit_log(&rec).as_bytes())
        .unwrap();
    let bytes = gz.finish().unwrap();
    let log = dir.path().join("audit.log.gz");
    std::fs::write(&log, &bytes[..bytes.len() / 2]).unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "import",
        "--from",
        "audit-log",
        path(&log),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("gzip stream is truncated"),
        "{}",
        stderr(&o)
    );
    let o = run(&["inspect", path(&out)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn stdin_is_read_for_a_dash() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("rerender-race").unwrap();
    let out = dir.path().join("out.rfr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["import", "--from", "audit-log", "-", "-o", path(&out)])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(rf_scenarios::to_audit_log(&rec).as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    analyze_has_the_four_rules(&out);
}

#[test]
fn an_unknown_source_exits_2() {
    let o = run(&["import", "--from", "nonsense", "x", "-o", "y"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("nonsense"), "{}", stderr(&o));
}

/// Objects as an older cluster and controller serve them: a Rollout of Argo Rollouts before
/// v1.0 (no `status.phase`, the stable hash in `status.canary.stableRS`), `extensions/v1beta1`
/// ReplicaSets and a `discovery.k8s.io/v1beta1` EndpointSlice. The release `h2` is promoted,
/// yet the Service's only ready endpoint is a pod of the old `h1`, whose ReplicaSet still runs
/// (the Rollout's status counts only the new pods: it was written before).
fn pre_v1_capture() -> String {
    use serde_json::json;
    let owner = json!([{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "web",
                        "uid": "u-ro", "controller": true}]);
    let rollout = |rv: &str, time: &str| {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
               "metadata": {"name": "web", "namespace": "shop", "uid": "u-ro", "resourceVersion": rv,
                            "generation": 4, "creationTimestamp": "2026-03-14T12:00:00Z",
                            "managedFields": [{"manager": "rollouts-controller", "time": time}]},
               "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                        "template": {"metadata": {"labels": {"app": "web"}},
                                     "spec": {"containers": [{"name": "web", "image": "web:2"}]}},
                        "strategy": {"canary": {"steps": [{"setWeight": 50}, {"pause": {}}]}}},
               "status": {"observedGeneration": "4", "currentPodHash": "h2", "currentStepIndex": 2,
                          "canary": {"stableRS": "h2"}, "replicas": 2, "updatedReplicas": 2,
                          "availableReplicas": 2, "readyReplicas": 2}})
    };
    let rs = |hash: &str, replicas: i64| {
        json!({"apiVersion": "extensions/v1beta1", "kind": "ReplicaSet",
               "metadata": {"name": format!("web-{hash}"), "namespace": "shop", "uid": format!("u-{hash}"),
                            "resourceVersion": "11", "creationTimestamp": "2026-03-14T12:00:00Z",
                            "labels": {"app": "web", "rollouts-pod-template-hash": hash},
                            "ownerReferences": owner},
               "spec": {"replicas": replicas,
                        "template": {"metadata": {"labels": {"app": "web", "rollouts-pod-template-hash": hash}},
                                     "spec": {"containers": [{"name": "web", "image": "web:2"}]}}},
               "status": {"replicas": replicas, "readyReplicas": replicas}})
    };
    let pod = |hash: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": format!("web-{hash}-a"), "namespace": "shop", "uid": format!("u-p-{hash}"),
                            "resourceVersion": "12", "creationTimestamp": "2026-03-14T12:00:00Z",
                            "labels": {"app": "web", "rollouts-pod-template-hash": hash}},
               "spec": {"containers": [{"name": "web", "image": "web:2"}]},
               "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True",
                          "lastTransitionTime": "2026-03-14T12:00:00Z"}]}})
    };
    let service = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop", "uid": "u-svc", "resourceVersion": "13",
                     "creationTimestamp": "2026-03-14T12:00:00Z"},
        "spec": {"selector": {"app": "web", "rollouts-pod-template-hash": "h1"}}});
    let slice = json!({"apiVersion": "discovery.k8s.io/v1beta1", "kind": "EndpointSlice",
        "metadata": {"name": "web-x", "namespace": "shop", "uid": "u-es", "resourceVersion": "14",
                     "creationTimestamp": "2026-03-14T12:00:00Z",
                     "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.0.0.9"], "conditions": {"ready": true},
                       "topology": {"kubernetes.io/hostname": "n1"},
                       "targetRef": {"kind": "Pod", "name": "web-h1-a"}}]});
    [
        rollout("10", "2026-03-14T12:00:00Z"),
        rs("h1", 1),
        rs("h2", 2),
        pod("h1"),
        pod("h2"),
        service,
        slice,
        rollout("20", "2026-03-14T12:02:00Z"),
    ]
    .iter()
    .map(|v| format!("{v}\n"))
    .collect()
}

#[test]
fn older_api_versions_and_a_pre_v1_rollout_status_are_read_as_the_current_ones() {
    let dir = tempfile::tempdir().unwrap();
    let capture = dir.path().join("capture.json");
    std::fs::write(&capture, pre_v1_capture()).unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "import",
        "--from",
        "kubectl-watch",
        path(&capture),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("0 warnings"), "{}", stderr(&o));
    let o = run(&["analyze", "-o", "json", path(&out)]);
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<(&str, &str)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["summary"].as_str().unwrap()))
        .collect();
    // The derived phase is Healthy: the promoted revision takes no traffic.
    assert!(
        found
            .iter()
            .any(|(rule, summary)| *rule == "canary-not-in-endpoints"
                && summary.contains("although the rollout is Healthy on it")),
        "{found:?}"
    );
    // The old ReplicaSet is read, and is all the Service routes to: no scale-down command.
    let orphan = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "orphaned-replicaset")
        .unwrap_or_else(|| panic!("{found:?}"));
    assert_eq!(orphan["subject"]["name"], "web-h1");
    assert!(
        !orphan["remedy"].to_string().contains("--replicas=0"),
        "{}",
        orphan["remedy"]
    );
}

/// An audit log proves the state until its last line, whatever that line is about: a Service
/// that selects none of the new revision's pods from its first seconds, then only a read of a
/// ConfigMap 15 minutes later, is `service-selector-mismatch`; cut at the last write, it held
/// too briefly to say.
#[test]
fn issue_28_an_audit_log_is_judged_until_its_last_line() {
    let dir = tempfile::tempdir().unwrap();
    let rec = rf_scenarios::generate("adoption-selector-drift").unwrap();
    let start = rec.records[0].observed_at.0;
    let at = |line: &str| -> i64 {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = v["stageTimestamp"].as_str().unwrap();
        rf_analyzer::parse_rfc3339(t).unwrap().0
    };
    // The writes of the first 12 s: the release and its new ReplicaSet.
    let log = rf_scenarios::to_audit_log(&rec);
    let early: Vec<&str> = log
        .lines()
        .filter(|l| at(l) <= start + 12_000_000_000)
        .collect();
    let read = serde_json::json!({
        "apiVersion": "audit.k8s.io/v1", "kind": "Event", "level": "Metadata",
        "stage": "ResponseComplete", "verb": "get", "user": {"username": "alice"},
        "objectRef": {"resource": "configmaps", "namespace": "payments", "name": "values", "apiVersion": "v1"},
        "responseStatus": {"code": 200},
        "stageTimestamp": rf_analyzer::rfc3339(rf_format::Timestamp(start + 900_000_000_000)),
    });
    let rules_of = |lines: Vec<String>, name: &str| {
        let file = dir.path().join(format!("{name}.log"));
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        let out = dir.path().join(format!("{name}.rfr"));
        let o = run(&[
            "import",
            "--from",
            "audit-log",
            path(&file),
            "-o",
            path(&out),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let o = run(&["analyze", path(&out), "-o", "json"]);
        let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    let cut: Vec<String> = early.iter().map(|l| (*l).to_owned()).collect();
    assert!(
        !rules_of(cut.clone(), "cut").contains(&"service-selector-mismatch".to_owned()),
        "a mismatch of a few seconds is not judged"
    );
    let mut whole = cut;
    whole.push(read.to_string());
    let rules = rules_of(whole, "whole");
    assert!(
        rules.contains(&"service-selector-mismatch".to_owned()),
        "{rules:?}"
    );
}

/// The real controller's log of the seed incident (text format, as it wrote it in the
/// real-cluster suite), imported: the Events it logged explain the restart and the lost pause,
/// reconstructed, with each time from its line.
#[test]
fn issue_47_the_real_controllers_log_explains_the_seed_incident() {
    let log = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings/real/seed-rerender-at-pause.controller.log.gz");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("log.rfr");
    let o = run(&[
        "import",
        "--from",
        "controller-log",
        path(&log),
        "-o",
        path(&out),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("wrote 21 records (21 Event)"),
        "{}",
        stderr(&o)
    );
    let o = run(&["analyze", "-o", "json", path(&out)]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let found: Vec<(&str, bool)> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["rule"].as_str().unwrap(), f["reconstructed"].is_object()))
        .collect();
    assert_eq!(
        found,
        [("rerender-restart", true), ("pause-lost", true)],
        "{report}"
    );
    // An Events export is not a log, and a log is not an Events export.
    let o = run(&["import", "--from", "events", path(&log), "-o", path(&out)]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--from controller-log"),
        "{}",
        stderr(&o)
    );
}
