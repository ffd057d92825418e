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
