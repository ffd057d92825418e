//! End-to-end tests of the binary: stdout, stderr and exit codes on the committed recordings and
//! on broken input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"));
    c.env_remove("NO_COLOR");
    c
}

fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings")
        .join(format!("{name}.rfr"))
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn analyze(name: &str, extra: &[&str]) -> Output {
    let path = recording(name);
    let mut args = vec!["analyze", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn analyze_rerender_race_names_restart_pause_checksum_and_orphan_and_exits_1() {
    let o = analyze("rerender-race", &[]);
    let out = stdout(&o);
    assert_eq!(
        o.status.code(),
        Some(1),
        "stdout:\n{out}\nstderr:\n{}",
        stderr(&o)
    );
    for needle in [
        "rerender-restart",
        "pause-lost",
        "config-only-rerender",
        "checksum/config",
        "orphaned-replicaset",
        "scale rs checkout-api-",
        "--replicas=0",
        "WHAT TO RUN NOW",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}

#[test]
fn analyze_image_only_release_has_no_findings_and_exits_0() {
    let o = analyze("image-only-release", &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).contains("No findings"));
}

#[test]
fn analyze_json_has_the_documented_shape() {
    let o = analyze("rerender-race", &["-o", "json", "--timelines"]);
    assert_eq!(o.status.code(), Some(1));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["schema_version"], 1);
    assert!(v["recording"]["records"].as_u64().unwrap() > 0);
    let findings = v["findings"].as_array().expect("findings is an array");
    assert!(!findings.is_empty());
    for f in findings {
        for key in [
            "rule", "severity", "subject", "at", "summary", "evidence", "remedy",
        ] {
            assert!(!f[key].is_null(), "finding without {key}: {f}");
        }
        assert!(f["evidence"].is_array());
        assert!(f["remedy"]["commands"].is_array());
        assert!(f["at"].as_str().unwrap().ends_with('Z'));
        // The subject may be the Argo CD Application (namespace argocd); the rollout it
        // concerns is always the one in payments.
        assert_eq!(f["rollout"]["namespace"], "payments");
        assert_eq!(f["rollout"]["kind"], "Rollout");
    }
    assert!(!v["timelines"].as_array().unwrap().is_empty());
}

#[test]
fn fail_on_controls_the_exit_code() {
    assert_eq!(
        analyze("rerender-race", &["--fail-on", "never"])
            .status
            .code(),
        Some(0)
    );
    // hash-only-change yields only a warning: exit 0 by default, 1 with --fail-on warning.
    assert_eq!(analyze("hash-only-change", &[]).status.code(), Some(0));
    assert_eq!(
        analyze("hash-only-change", &["--fail-on", "warning"])
            .status
            .code(),
        Some(1)
    );
}

#[test]
fn rollout_filter_and_time_window_limit_the_findings() {
    let o = analyze(
        "rerender-race",
        &["-o", "json", "--rollout", "payments/checkout-api"],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let findings = v["findings"].as_array().unwrap();
    assert!(!findings.is_empty());
    assert!(
        findings
            .iter()
            .all(|f| f["rollout"]["name"] == "checkout-api"),
        "{v}"
    );
    assert_eq!(o.status.code(), Some(1));
    // At +20s the second render has not happened: no restart yet.
    let o = analyze("rerender-race", &["-o", "json", "--at", "+20s"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["rule"] != "rerender-restart"),
        "{v}"
    );
    // The tables' own time forms: a time of day on the recording's date, a date and time
    // without a zone, read as UTC.
    let rfc = analyze(
        "rerender-race",
        &["-o", "json", "--at", "2026-03-14T13:00:40Z"],
    );
    assert_eq!(rfc.status.code(), Some(1), "{}", stderr(&rfc));
    for at in ["13:00:40", "2026-03-14 13:00:40"] {
        let o = analyze("rerender-race", &["-o", "json", "--at", at]);
        assert_eq!(o.status.code(), Some(1), "{at}: {}", stderr(&o));
        assert_eq!(o.stdout, rfc.stdout, "{at}");
    }
    let o = analyze("rerender-race", &["--at", "13:70"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a time of day on the recording's date"),
        "{}",
        stderr(&o)
    );
    let o = analyze("rerender-race", &["--rollout", "payments/checkout-api/x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("NAMESPACE/NAME"));
    // NAME with -n, as wait and check take it, or NAME alone: the same report.
    let whole = analyze(
        "rerender-race",
        &["--rollout", "payments/checkout-api", "-o", "json"],
    );
    for args in [
        &["--rollout", "checkout-api", "-n", "payments"][..],
        &["--rollout", "checkout-api"][..],
    ] {
        let o = analyze("rerender-race", &[args, &["-o", "json"][..]].concat());
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert_eq!(o.stdout, whole.stdout, "{args:?}");
    }
    let o = analyze(
        "rerender-race",
        &["--rollout", "payments/checkout-api", "-n", "shop"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("but -n says shop"), "{}", stderr(&o));
    let o = analyze("rerender-race", &["--rollout", "chekout-api"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("no rollout chekout-api in the recording; its rollouts, nearest first: payments/checkout-api"),
        "{}",
        stderr(&o)
    );
    let o = analyze("rerender-race", &["--since", "yesterday"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("RFC 3339"), "{}", stderr(&o));
}

#[test]
fn a_missing_file_is_an_input_error() {
    let o = run(&["analyze", "no/such/recording.rfr"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("failed to open recording no/such/recording.rfr"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn a_file_that_is_not_gzip_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("notes.txt");
    std::fs::write(&p, "kubectl get rollouts\n").unwrap();
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("not gzip-compressed"), "{}", stderr(&o));
}

#[test]
fn an_empty_file_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("empty.rfr");
    std::fs::write(&p, b"").unwrap();
    let o = run(&["inspect", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("empty"), "{}", stderr(&o));
}

#[test]
fn gzip_without_the_magic_is_an_input_error() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("other.gz");
    let data = flate2_like_gzip(b"{\"kind\":\"Rollout\"}\n");
    std::fs::File::create(&p).unwrap().write_all(&data).unwrap();
    let o = run(&["analyze", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("magic"), "{}", stderr(&o));
}

/// A minimal gzip member (stored block) so this test needs no compression crate.
fn flate2_like_gzip(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.push(1); // final stored block
    let len = data.len() as u16;
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&crc32(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn a_truncated_recording_reports_what_it_read_then_exits_2_unless_partial() {
    let bytes = std::fs::read(recording("rerender-race")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cut.rfr");
    // Cut inside the last third: most records are complete, the tail is not.
    std::fs::write(&p, &bytes[..bytes.len() * 2 / 3 + 7]).unwrap();
    let o = run(&["analyze", p.to_str().unwrap(), "-o", "json"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("truncated") || err.contains("corrupt"),
        "{err}"
    );
    assert!(err.contains("byte"), "the error says where: {err}");
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).expect("the report of the readable part");
    assert_eq!(v["recording"]["complete"], false);
    assert!(v["recording"]["records"].as_u64().unwrap() > 10);

    let o = run(&[
        "analyze",
        p.to_str().unwrap(),
        "--partial",
        "--fail-on",
        "never",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("warning"));
}

#[test]
fn inspect_shows_header_counts_and_integrity() {
    let path = recording("rerender-race");
    let o = run(&["inspect", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for needle in [
        "format version   2",
        "Rollout",
        "ReplicaSet",
        "modified",
        "integrity        closed",
        "gaps: none",
    ] {
        assert!(out.contains(needle), "missing {needle:?} in:\n{out}");
    }
}

#[test]
fn timeline_shows_the_step_reset() {
    let path = recording("rerender-race");
    let o = run(&["timeline", path.to_str().unwrap(), "--brief"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("step 1 -> 0"), "{out}");
    assert!(out.contains("payments/checkout-api"));
}

#[test]
fn diff_of_the_two_renders_shows_only_the_checksum() {
    let path = recording("rerender-race");
    let o = analyze("rerender-race", &["-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let config = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "config-only-rerender")
        .expect("a config-only finding");
    // Its evidence names the two ReplicaSets, old first.
    let rs: Vec<&str> = config["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["object"]["kind"] == "ReplicaSet")
        .map(|e| e["object"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(rs.len(), 2, "{config}");
    let (old, new) = (rs[0], rs[1]);
    let o = run(&["diff", path.to_str().unwrap(), old, new, "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let d: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(d["only_annotations"], true, "{d}");
    assert!(
        d["changes"][0]["path"]
            .as_str()
            .unwrap()
            .contains("checksum/config")
    );
    let o = run(&["diff", path.to_str().unwrap(), old, "nosuchrs"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no ReplicaSet named or hashed \"nosuchrs\""));
}

#[test]
fn simulate_writes_a_recording_equal_to_the_committed_one() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("race.rfr");
    let o = run(&["simulate", "rerender-race", "-o", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let a = run(&["analyze", p.to_str().unwrap(), "-o", "json"]);
    let b = analyze("rerender-race", &["-o", "json"]);
    let strip = |o: &Output| {
        let mut v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["recording"]["files"][0]["name"] = serde_json::Value::Null;
        v
    };
    assert_eq!(strip(&a), strip(&b));
    assert!(!dir.path().join("race.rfr.tmp").exists());
    let o = run(&["simulate", "no-such-scenario", "-o", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("rerender-race"),
        "lists the known ones: {}",
        stderr(&o)
    );
}

#[test]
fn simulate_scale_writes_the_same_file_to_a_path_and_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("scale.rfr");
    let args = [
        "simulate",
        "scale",
        "--rollouts",
        "3",
        "--events",
        "3000",
        "--seed",
        "5",
    ];
    let o = run(&[&args[..], &["-o", p.to_str().unwrap()]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let written = std::fs::read(&p).unwrap();
    assert!(stderr(&o).contains("records) to"), "{}", stderr(&o));
    assert!(!dir.path().join("scale.rfr.tmp").exists());
    let o = run(&[&args[..], &["-o", "-"]].concat());
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(o.stdout, written);
    // A complete recording that analyzes.
    let o = run(&["inspect", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("closed cleanly"), "{}", stdout(&o));
    let o = run(&["simulate", "scale", "-o", "/nonexistent-dir/x.rfr"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("failed to create"), "{}", stderr(&o));
}

#[test]
fn simulate_to_an_unwritable_place_leaves_no_file() {
    let o = run(&["simulate", "abort", "-o", "/nonexistent-dir/x.rfr"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("failed to create"), "{}", stderr(&o));
}

#[test]
fn usage_errors_exit_2_and_help_exits_0() {
    assert_eq!(run(&["analyze"]).status.code(), Some(2));
    assert_eq!(run(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(run(&["--help"]).status.code(), Some(0));
    assert_eq!(run(&["analyze", "--help"]).status.code(), Some(0));
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    use std::process::Stdio;
    let path = recording("rerender-race-reruns");
    let mut child = bin()
        .args(["timeline", path.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).is_empty(), "{}", stderr(&o));
}

#[test]
fn inspect_jsonl_prints_every_record_as_one_json_line() {
    let file = recording("rerender-race");
    let o = run(&["inspect", file.to_str().unwrap(), "--jsonl"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: serde_json::Value =
        serde_json::from_slice(&run(&["inspect", file.to_str().unwrap(), "-o", "json"]).stdout)
            .unwrap();
    assert_eq!(lines.len() as u64, summary["records"].as_u64().unwrap());
    let seqs: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    let rollout = lines
        .iter()
        .find(|l| l["kind"] == "Rollout" && l["op"] == "listed")
        .unwrap();
    assert_eq!(rollout["object"]["kind"], "Rollout");
    assert!(rollout["object"]["status"]["currentPodHash"].is_string());
    assert!(
        lines
            .iter()
            .any(|l| l["op"] == "list-end" && l["object"].is_null())
    );
}

#[test]
fn many_files_are_summed_up_by_their_first_and_last_name() {
    let dir = tempfile::tempdir().unwrap();
    for (i, name) in [
        "abort",
        "steps-change",
        "manual-step-jump",
        "hash-only-change",
    ]
    .iter()
    .enumerate()
    {
        std::fs::copy(recording(name), dir.path().join(format!("rf-{i}.rfr"))).unwrap();
    }
    let o = run(&["inspect", dir.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o).lines().next().unwrap().to_owned();
    assert!(first.starts_with("4 files: "), "{first}");
    assert!(
        first.contains("rf-0.rfr") && first.contains("rf-3.rfr"),
        "{first}"
    );
    assert!(!first.contains("rf-1.rfr"), "{first}");
    assert!(stdout(&o).contains("4 closed cleanly"), "{}", stdout(&o));
}

#[test]
fn convert_writes_version_1_and_back_with_the_same_records() {
    let dir = tempfile::tempdir().unwrap();
    let src = recording("rerender-race");
    let v1 = dir.path().join("v1.rfr");
    let v2 = dir.path().join("v2.rfr");
    let o = run(&[
        "convert",
        src.to_str().unwrap(),
        "-o",
        v1.to_str().unwrap(),
        "--format-version",
        "1",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stderr(&o).contains("(format version 1)"), "{}", stderr(&o));
    let o = run(&["convert", v1.to_str().unwrap(), "-o", v2.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let inspect = |p: &Path| stdout(&run(&["inspect", p.to_str().unwrap()]));
    assert!(
        inspect(&v1).contains("format version   1"),
        "{}",
        inspect(&v1)
    );
    assert!(inspect(&v2).contains("format version   2"));
    let jsonl = |p: &Path| stdout(&run(&["inspect", p.to_str().unwrap(), "--jsonl"]));
    assert_eq!(jsonl(&v1), jsonl(&src));
    assert_eq!(jsonl(&v2), jsonl(&src));
    // The same close time: the orphan is measured to the same moment.
    let json = |p: &Path| stdout(&run(&["inspect", p.to_str().unwrap(), "-o", "json"]));
    let closed = |s: String| {
        serde_json::from_str::<serde_json::Value>(&s).unwrap()["files"][0]["closed_at"].clone()
    };
    assert!(closed(json(&src)).is_string());
    assert_eq!(closed(json(&v1)), closed(json(&src)));
    // Deltas make version 2 the smaller file.
    assert!(std::fs::metadata(&v2).unwrap().len() < std::fs::metadata(&v1).unwrap().len());
}

#[test]
fn convert_splits_a_recording_into_a_flight_recorder_s_files_that_read_as_one_history() {
    let dir = tempfile::tempdir().unwrap();
    let src = recording("rerender-race");
    let out = dir.path().join("split");
    let split = |out: &Path| {
        run(&[
            "convert",
            src.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--records-per-file",
            "7",
        ])
    };
    let o = split(&out);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let jsonl = |p: &Path| stdout(&run(&["inspect", p.to_str().unwrap(), "--jsonl"]));
    let records = jsonl(&src).lines().count();
    assert!(records > 14, "{records}");
    let files = std::fs::read_dir(&out).unwrap().count();
    assert_eq!(files, records.div_ceil(7));
    // The same records, in the same order, and no time between the files.
    assert_eq!(jsonl(&out), jsonl(&src));
    let summary = stdout(&run(&["inspect", out.to_str().unwrap()]));
    assert!(summary.contains("no gaps"), "{summary}");
    assert!(
        summary.contains(&format!("{files} closed cleanly")),
        "{summary}"
    );
    // The same findings as the one file.
    let findings = |p: &Path| {
        let o = run(&["analyze", p.to_str().unwrap(), "-o", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let kinds: Vec<String> = v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| format!("{} {} {}", f["rule"], f["at"], f["summary"]))
            .collect();
        kinds
    };
    assert!(!findings(&src).is_empty());
    assert_eq!(findings(&out), findings(&src));
    // Into a directory that already holds recordings: refused, nothing added.
    let o = split(&out);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("already holds recordings"),
        "{}",
        stderr(&o)
    );
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), files);
    // A damaged recording: exit 2 and no files left.
    let bytes = std::fs::read(&src).unwrap();
    let damaged = dir.path().join("damaged.rfr");
    std::fs::write(&damaged, &bytes[..bytes.len() - 20]).unwrap();
    let out = dir.path().join("damaged-split");
    let o = run(&[
        "convert",
        damaged.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--records-per-file",
        "7",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert_eq!(std::fs::read_dir(&out).unwrap().count(), 0);
}

#[test]
fn convert_of_a_damaged_recording_exits_2_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(recording("rerender-race")).unwrap();
    let damaged = dir.path().join("damaged.rfr");
    // Cut inside the last gzip member: the records before the cut read, then the damage.
    std::fs::write(&damaged, &bytes[..bytes.len() - 20]).unwrap();
    let out = dir.path().join("out.rfr");
    let o = run(&[
        "convert",
        damaged.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("damaged.rfr"), "{}", stderr(&o));
    assert!(!out.exists());
    assert!(!dir.path().join("out.rfr.tmp").exists());
}
