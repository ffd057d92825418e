//! Every answer the binary gives is true or says why not: closed pipes, names and times that
//! are not in the recording, input of the wrong kind. Each test runs the real binary and checks
//! its stdout, stderr and exit code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"));
    c.env_remove("NO_COLOR");
    c
}

use common::{recording, text};

fn rec(name: &str) -> String {
    recording(name).to_str().unwrap().to_owned()
}

fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    text(&o.stdout)
}

fn stderr(o: &Output) -> String {
    text(&o.stderr)
}

/// Runs with stdout a pipe whose reading end is closed at once (`| head` that read nothing).
fn with_closed_stdout(args: &[&str]) -> Output {
    let mut child = bin()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn issue_24_a_closed_pipe_keeps_the_exit_code_of_the_findings() {
    let reruns = rec("rerender-race-reruns");
    for round in 0..10 {
        for format in ["table", "markdown", "json", "html"] {
            let o = with_closed_stdout(&["analyze", &reruns, "-o", format]);
            assert_eq!(
                o.status.code(),
                Some(1),
                "round {round}, -o {format}: error findings exit 1 whatever the pipe did; stderr: {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).is_empty(),
                "no word about the pipe: {}",
                stderr(&o)
            );
        }
    }
    let clean = rec("image-only-release");
    let o = with_closed_stdout(&["analyze", &clean]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}

#[test]
fn issue_24_a_rollout_that_is_not_there_is_an_error_that_lists_the_ones_there_are() {
    let race = rec("rerender-race");
    for command in ["analyze", "timeline"] {
        let o = run(&[command, &race, "--rollout", "payments/checkout-apu"]);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", stdout(&o));
        assert_eq!(
            stderr(&o).trim(),
            "error: no rollout payments/checkout-apu in the recording; its rollouts, nearest first: payments/checkout-api",
            "{command}"
        );
        assert!(!stdout(&o).contains("No findings"), "{}", stdout(&o));
        assert!(!stdout(&o).contains("No rollouts"), "{}", stdout(&o));
    }
    let expect = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(expect.path(), r#"{"schema_version":1,"findings":[]}"#).unwrap();
    let o = run(&[
        "verify",
        &race,
        "--expect",
        expect.path().to_str().unwrap(),
        "--rollout",
        "payments/nope",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("no rollout payments/nope"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_24_diff_with_an_unknown_or_the_same_replicaset_says_so() {
    let race = rec("rerender-race");
    let o = run(&[
        "diff",
        &race,
        "checkout-api-74f8d8467",
        "checkout-api-b47468b46",
    ]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains("no ReplicaSet named or hashed \"checkout-api-74f8d8467\"")
            && err.contains("its ReplicaSets, nearest first: checkout-api-74f8d84674, "),
        "{err}"
    );
    let o = run(&["diff", &race, "checkout-api-74f8d84674", "74f8d84674"]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stdout(&o).is_empty(),
        "no 'hash change' claim: {}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("name the same ReplicaSet, payments/checkout-api-74f8d84674"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_24_times_outside_the_recording_are_errors_that_give_its_span() {
    let race = rec("rerender-race");
    let span = "the recording spans 2026-03-14T13:00:00Z .. 2026-03-14T13:06:00Z";
    for command in ["analyze", "timeline"] {
        let o = run(&[command, &race, "--at", "2026-03-14T12:59:00Z"]);
        assert_eq!(o.status.code(), Some(2), "{command}");
        assert_eq!(
            stderr(&o).trim(),
            "error: --at 2026-03-14T12:59:00Z is before the recording starts at 2026-03-14T13:00:00Z: nothing was recorded yet"
        );
        // The documented form with a space, and a time past the end.
        let o = run(&[command, &race, "--until", "+2h"]);
        assert_eq!(o.status.code(), Some(2), "{command}: {}", stdout(&o));
        assert!(
            stderr(&o).contains("--until 2026-03-14T15:00:00Z is after the recording ends")
                && stderr(&o).contains(span),
            "{}",
            stderr(&o)
        );
        let o = run(&[command, &race, "--since", "+3m", "--until", "+1m"]);
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(
            stderr(&o).trim(),
            "error: --since 2026-03-14T13:03:00Z is after --until 2026-03-14T13:01:00Z: the window holds no time"
        );
        let o = run(&[command, &race, "--since", "+1h"]);
        assert_eq!(o.status.code(), Some(2));
        assert!(stderr(&o).contains(span), "{}", stderr(&o));
    }
    // Inside the span, relative to the end, with a space: the state a minute before the end.
    let o = run(&["analyze", &race, "--at", "-1m", "-o", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["recording"]["ended_at"], "2026-03-14T13:05:00Z");
    // Before the start, --since only filters: all findings, and a note that says so.
    let o = run(&["analyze", &race, "--since", "2026-03-14T12:00:00Z"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("every finding is shown"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_24_serve_refuses_a_moment_the_recording_never_reached() {
    let race = rec("rerender-race");
    for at in ["+2h", "2026-03-14T12:00:00Z"] {
        let home = tempfile::tempdir().unwrap();
        let o = bin()
            .env("HOME", home.path())
            .args(["serve", &race, "--at", at])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{at}: {}", stderr(&o));
        assert!(
            stderr(&o).contains(
                "is outside the recording, which spans 2026-03-14T13:00:00Z .. 2026-03-14T13:06:00Z"
            ),
            "{}",
            stderr(&o)
        );
        assert!(stdout(&o).is_empty(), "no URL: {}", stdout(&o));
    }
}

/// Every bundled recording.
fn all_recordings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rfr"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    files
}

#[test]
fn issue_24_what_to_run_now_is_safe_to_paste_and_says_each_command_once() {
    let moves_traffic = [
        "argo rollouts promote",
        "argo rollouts abort",
        "argo rollouts retry",
        "argo rollouts undo",
        "rollout undo",
        " patch ",
        "argocd app sync",
    ];
    let mut decisions_seen = 0;
    for file in all_recordings() {
        let o = run(&["analyze", file.to_str().unwrap()]);
        let out = stdout(&o);
        let Some((body, run_now)) = out.split_once("WHAT TO RUN NOW\n") else {
            assert!(out.contains("No findings"), "{}: {out}", file.display());
            continue;
        };
        let mut lines: Vec<&str> = run_now.lines().filter(|l| l.contains("$ ")).collect();
        for l in &lines {
            for m in moves_traffic {
                assert!(!l.contains(m), "{}: {l:?} moves traffic", file.display());
            }
        }
        let n = lines.len();
        let command = |l: &&str| l.split("   # ").next().unwrap().to_owned();
        lines.sort_by_key(command);
        lines.dedup_by_key(|l| command(l));
        assert_eq!(
            n,
            lines.len(),
            "{}: a command twice:\n{run_now}",
            file.display()
        );
        if body.contains("Decide (moves traffic or changes the release):") {
            decisions_seen += 1;
        }
        // The same holds for the JSON report's commands.
        let o = run(&["analyze", file.to_str().unwrap(), "-o", "json"]);
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        for f in v["findings"].as_array().unwrap() {
            for c in f["remedy"]["commands"].as_array().unwrap() {
                for m in moves_traffic {
                    assert!(!c.as_str().unwrap().contains(m), "{c} in {f}");
                }
            }
        }
    }
    // promote (gitops-health-mismatch, hash-only-change), abort and retry (manual-step-jump),
    // the Service patch (service-selector-mismatch): under their findings.
    assert!(decisions_seen >= 3, "{decisions_seen}");
    let o = run(&["analyze", &rec("rerender-race"), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let info = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "gitops-health-mismatch")
        .unwrap();
    assert_eq!(
        info["remedy"]["decisions"][0],
        "kubectl argo rollouts promote checkout-api -n payments"
    );
}

#[test]
fn issue_24_import_refuses_what_is_not_a_capture_and_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.rfr");
    let out = out.to_str().unwrap();
    let abort = rec("abort");
    let o = run(&["import", "--from", "kubectl-watch", &abort, "-o", out]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o).trim(),
        format!(
            "error: {abort} is already a recording: analyze it (rollout-forensics analyze {abort})"
        )
    );
    let binary = dir.path().join("core.bin");
    std::fs::write(
        &binary,
        (0..4096u32)
            .map(|i| (i * 7919 % 251) as u8)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let o = run(&[
        "import",
        "--from",
        "kubectl-watch",
        binary.to_str().unwrap(),
        "-o",
        out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("core.bin is binary data"),
        "{}",
        stderr(&o)
    );
    let text = dir.path().join("notes.txt.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, b"this is not json\nnor this\n").unwrap();
    std::fs::write(&text, gz.finish().unwrap()).unwrap();
    let o = run(&[
        "import",
        "--from",
        "audit-log",
        text.to_str().unwrap(),
        "-o",
        out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("notes.txt.gz is gzip of text that is not JSON"),
        "{}",
        stderr(&o)
    );
    // A capture given as an audit log: the right --from is named.
    let capture = dir.path().join("rollouts.json");
    std::fs::write(
        &capture,
        r#"{"type":"ADDED","object":{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"name":"a","namespace":"p"}}}"#,
    )
    .unwrap();
    let o = run(&[
        "import",
        "--from",
        "audit-log",
        capture.to_str().unwrap(),
        "-o",
        out,
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("--from kubectl-watch"),
        "{}",
        stderr(&o)
    );
    assert!(!Path::new(out).exists(), "nothing written");
    // analyze of the capture says what it is and how to import it.
    let o = run(&["analyze", capture.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let c = capture.to_str().unwrap();
    assert!(
        stderr(&o).contains(&format!(
            "it looks like a kubectl watch capture (Kubernetes objects as JSON): import it first: rollout-forensics import --from kubectl-watch {c} -o "
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_24_files_that_are_not_one_history_are_an_error_unless_each() {
    let all = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings");
    let all = all.to_str().unwrap();
    let o = run(&["analyze", all]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
    assert!(
        stderr(&o).contains(
            "are not one history: the first was recorded from context rf-scenarios/abort"
        ),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("--each"), "{}", stderr(&o));
    // One source, overlapping spans: the same recording twice under two names.
    let dir = tempfile::tempdir().unwrap();
    for name in ["a.rfr", "b.rfr"] {
        std::fs::copy(recording("rerender-race"), dir.path().join(name)).unwrap();
    }
    let o = run(&["timeline", dir.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        stderr(&o).contains("b.rfr starts at 2026-03-14T13:00:00Z, before ")
            && stderr(&o).contains("a.rfr ended at 2026-03-14T13:06:00Z"),
        "{}",
        stderr(&o)
    );
    // timeline has no --each: it does not suggest one.
    assert!(
        !stderr(&o).contains("--each") && stderr(&o).contains("run timeline once per file"),
        "{}",
        stderr(&o)
    );
    let o = run(&["timeline", all]);
    assert_eq!(o.status.code(), Some(2), "{}", stdout(&o));
    assert!(
        !stderr(&o).contains("--each") && stderr(&o).contains("run timeline once per file"),
        "{}",
        stderr(&o)
    );
    // --each: one report per file, the worst exit code.
    let o = run(&["analyze", all, "--each", "-o", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let reports: Vec<serde_json::Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(reports.len(), all_recordings().len());
    for r in &reports {
        assert_eq!(r["recording"]["files"].as_array().unwrap().len(), 1);
        assert!(
            r["recording"]["warnings"].as_array().unwrap().is_empty(),
            "{r}"
        );
    }
    let o = run(&["serve", all]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("are not one history"), "{}", stderr(&o));
}

#[test]
fn issue_24_tables_fit_the_width_without_a_line_between_rows() {
    let race = rec("rerender-race");
    // Off a terminal: 100 columns; only commands (kept whole, to paste) are longer.
    let o = run(&["analyze", &race]);
    let out = stdout(&o);
    for line in out.lines() {
        let n = line.chars().count();
        assert!(
            n <= 100 || line.trim_start().starts_with("$ "),
            "{n} columns: {line:?}"
        );
        assert!(!line.ends_with(' '), "padded: {line:?}");
    }
    // Above the header, under it and under the last row: none between the seven rows.
    let rules = out
        .lines()
        .filter(|l| l.starts_with('─') || l.starts_with('═'))
        .count();
    assert_eq!(rules, 3, "{out}");
    let o = run(&["timeline", &race]);
    let out = stdout(&o);
    assert!(out.lines().all(|l| l.chars().count() <= 100), "{out}");
    let rules = out
        .lines()
        .filter(|l| l.starts_with('─') || l.starts_with('═'))
        .count();
    assert_eq!(rules, 3, "{out}");
}

#[test]
fn issue_24_on_a_terminal_the_report_fits_its_width() {
    // `script` gives the binary a terminal; COLUMNS says how wide it is.
    let Ok(script) = which("script") else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must have script (util-linux)"
        );
        panic!("script (util-linux) is needed for this test");
    };
    let race = rec("rerender-race");
    let cmd = format!(
        "COLUMNS=80 NO_COLOR=1 {} analyze {race}",
        env!("CARGO_BIN_EXE_rollout-forensics")
    );
    let o = Command::new(script)
        .args(["-qec", &cmd, "/dev/null"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let out = stdout(&o).replace('\r', "");
    assert!(out.contains("WHAT HAPPENED"), "{out}");
    for line in out.lines() {
        let n = line.chars().count();
        assert!(
            n <= 80 || line.trim_start().starts_with("$ "),
            "{n}: {line:?}"
        );
    }
    assert!(
        out.lines().any(|l| l.chars().count() > 70),
        "uses the width: {out}"
    );
}

/// The path of a program on PATH.
fn which(name: &str) -> Result<PathBuf, ()> {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|p| p.is_file())
        })
        .ok_or(())
}

#[test]
fn issue_24_timeline_brief_is_one_line_per_change() {
    let o = run(&["timeline", &rec("rerender-race"), "--brief"]);
    assert_eq!(o.status.code(), Some(0));
    let out = stdout(&o);
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|w| w.parse::<u64>().is_ok())
        })
        .collect();
    let o = run(&["timeline", &rec("rerender-race"), "-o", "json", "--brief"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        rows.len(),
        v[0]["entries"].as_array().unwrap().len(),
        "{out}"
    );
    assert!(
        rows.iter().any(|l| l.contains(
            "74f8d84674  0/6    Progressing              pod hash 5c5c8c44fd -> 74f8d84674; step 6 -> 0"
        )),
        "{out}"
    );
    assert!(!out.contains('─'), "no table: {out}");
}

#[test]
fn issue_24_each_command_s_help_describes_that_command() {
    let help = |args: &[&str]| stdout(&run(args));
    for command in ["timeline", "diff", "inspect", "wait", "check"] {
        let h = help(&[command, "--help"]);
        assert!(!h.contains("summary, proof, what to run"), "{command}: {h}");
        assert!(!h.contains("The report as JSON"), "{command}: {h}");
    }
    let h = help(&["timeline", "--help"]);
    assert!(h.contains("Only changes at or after T"), "{h}");
    assert!(!h.contains("findings"), "{h}");
    let h = help(&["watch", "--help"]);
    for flag in ["--dir", "--rotate", "--keep", "--live"] {
        assert!(!h.contains(flag), "watch --help lists {flag}: {h}");
    }
    assert!(h.contains("Also write what is watched to FILE"), "{h}");
    let o = run(&["watch", "--dir", "/tmp", "--rotate", "1m"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("watch does not keep a flight recorder"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn issue_24_smaller_answers_say_each_thing_once_and_fully() {
    // A missing kubeconfig: its cause once.
    let home = tempfile::tempdir().unwrap();
    let o = bin()
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .args(["record", "-o", "/dev/null", "--duration", "1s"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("does not exist").count(), 1, "{err}");
    assert!(
        err.contains("set KUBECONFIG, pass --kubeconfig PATH"),
        "{err}"
    );
    let o = bin()
        .env("HOME", home.path())
        .args([
            "record",
            "-o",
            "/dev/null",
            "--kubeconfig",
            "/nonexistent/kc",
        ])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
    // simulate: every scenario named, aligned.
    let o = run(&["simulate", "nope", "-o", "/dev/null"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(", scale (simulate --list"),
        "{}",
        stderr(&o)
    );
    let list = stdout(&run(&["simulate", "--list"]));
    let starts: Vec<usize> = list
        .lines()
        .map(|l| l.find(char::is_uppercase).unwrap())
        .collect();
    assert!(starts.iter().all(|s| *s == starts[0]), "{list}");
    assert!(list.lines().any(|l| l.starts_with("scale ")), "{list}");
    // restart-churn at the second restart says what was true then.
    let o = run(&["analyze", &rec("rerender-race-reruns"), "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let churn = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "restart-churn")
        .unwrap();
    assert_eq!(churn["at"], "2026-03-14T13:05:06.003Z");
    assert!(
        churn["summary"]
            .as_str()
            .unwrap()
            .starts_with("the canary restarted twice by 2026-03-14T13:05:06.003Z; by the end of the analysis, restarted 5 times"),
        "{churn}"
    );
}

#[test]
fn issue_24_a_recording_that_ends_before_a_rule_can_fire_says_so() {
    // Three seconds after the first render's ReplicaSet stopped being current: too soon for
    // orphaned-replicaset's 30 s, which the report says instead of nothing.
    let race = rec("rerender-race");
    let o = run(&["analyze", &race, "--at", "2026-03-14T13:00:40Z"]);
    let out = stdout(&o);
    assert!(
        out.contains("not decided: orphaned-replicaset could not be decided for ReplicaSet")
            && out.contains("payments/checkout-api-74f8d84674"),
        "{out}"
    );
    let o = run(&[
        "analyze",
        &race,
        "--at",
        "2026-03-14T13:00:40Z",
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let undecided = v["recording"]["undecided"].as_array().unwrap();
    assert_eq!(undecided.len(), 1, "{v}");
    assert!(
        undecided[0]
            .as_str()
            .unwrap()
            .contains("for 3s when the analysis ends at 2026-03-14T13:00:40Z; the rule waits 30s"),
        "{undecided:?}"
    );
    // At the end it is decided: a finding, and nothing undecided.
    let o = run(&["analyze", &race, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v["recording"]["undecided"].as_array().unwrap().is_empty());
}

#[test]
fn the_readme_shows_the_real_output_of_its_first_command() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let start = readme.find("## Example\n\n```\n").unwrap();
    let block = &readme[start..]["## Example\n\n```\n".len()..];
    let block = &block[..block.find("\n```").unwrap()];
    // The README's first command, as it runs it, from the project's root.
    let first = readme
        .lines()
        .find_map(|l| l.strip_prefix("cargo run --release -- analyze "))
        .expect("the README's first command");
    assert!(
        first.starts_with("recordings/real/"),
        "the example is a recording the real controller wrote: {first}"
    );
    let o = bin()
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args(["analyze", first])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    let lines: Vec<&str> = out.lines().collect();
    // Each line of the README's block is the next line of the output; `…` leaves some out.
    let mut at = 0;
    let mut skipping = false;
    for want in block.lines() {
        if want == "…" {
            skipping = true;
            continue;
        }
        if skipping {
            at += lines[at..]
                .iter()
                .position(|l| *l == want)
                .unwrap_or_else(|| panic!("README line not in the output: {want:?}\n{out}"));
            skipping = false;
        }
        assert_eq!(
            lines.get(at),
            Some(&want),
            "README differs from the output:\n{out}"
        );
        at += 1;
    }
    assert_eq!(at, lines.len(), "the README's block stops early:\n{out}");
}

#[test]
fn a_first_release_written_by_the_real_controller_is_no_manual_step_jump() {
    // The real Argo Rollouts controller (1.10) makes a new rollout's first revision stable and
    // sets currentStepIndex 0 -> len(steps) in one status write; it is not a skipped pause.
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings/real/first-release-then-pause.rfr");
    let o = run(&["analyze", path.to_str().unwrap(), "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rules: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, ["image-not-pinned", "image-not-pinned"], "{v}");
    // The pause the new image reached is on its timeline.
    let o = run(&["timeline", path.to_str().unwrap(), "--brief"]);
    assert!(
        stdout(&o).contains("Paused (CanaryPauseStep)"),
        "{}",
        stdout(&o)
    );
}
