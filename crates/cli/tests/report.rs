//! Reports (`analyze -o yaml|markdown|html`) and regression fixtures (`verify`), run through
//! the real binary on the committed recordings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

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

fn committed_recordings() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings");
    let mut all: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rfr"))
        .collect();
    all.sort();
    assert!(!all.is_empty());
    all
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

fn analyze(path: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["analyze", path.to_str().unwrap()];
    args.extend_from_slice(extra);
    run(&args)
}

fn json_report(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["-o", "json"];
    args.extend_from_slice(extra);
    let o = analyze(path, &args);
    serde_json::from_slice(&o.stdout).expect("analyze -o json prints JSON")
}

const HOSTILE: &str = "<script>alert(1)</script>";

/// rerender-race with the rollout (and everything named after it) renamed to [`HOSTILE`]:
/// recordings hold user data, and reports must never inject it raw.
fn hostile_recording(dir: &Path) -> PathBuf {
    let src = File::open(recording("rerender-race")).unwrap();
    let mut reader = rf_format::Reader::new(BufReader::new(src)).unwrap();
    let header = reader.header().clone();
    let path = dir.join("hostile.rfr");
    let mut writer = rf_format::Writer::new(File::create(&path).unwrap(), &header).unwrap();
    while let Some(mut rec) = reader.next_record().unwrap() {
        rec.name = rec.name.replace("checkout-api", HOSTILE);
        let object = String::from_utf8(rec.object.clone()).unwrap();
        rec.object = object.replace("checkout-api", HOSTILE).into_bytes();
        writer.write(&rec).unwrap();
    }
    let closed_at = reader.trailer().map(|t| t.closed_at).unwrap();
    writer.finish_at(closed_at).unwrap();
    path
}

// ---------------------------------------------------------------------------------- yaml

#[test]
fn yaml_parses_back_to_the_same_value_as_json() {
    for name in ["rerender-race", "image-only-release"] {
        let path = recording(name);
        let json = json_report(&path, &["--timelines"]);
        let o = analyze(&path, &["-o", "yaml", "--timelines"]);
        assert!(o.status.code() == Some(0) || o.status.code() == Some(1));
        let yaml: serde_json::Value =
            yaml_serde::from_slice(&o.stdout).expect("analyze -o yaml prints YAML");
        assert_eq!(yaml, json, "{name}: YAML and JSON differ");
    }
}

// ------------------------------------------------------------------------------ markdown

#[test]
fn markdown_is_a_postmortem_with_summary_timeline_proof_and_commands() {
    let o = analyze(&recording("rerender-race"), &["-o", "markdown"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let md = stdout(&o);
    for needle in [
        "# Incident report: payments/checkout-api",
        "## Summary",
        "- **Span:** 2026-03-14T13:00:00Z .. 2026-03-14T13:06:00Z (6m00s)",
        "- **Gaps:** none",
        "- **Complete:** yes",
        "- **Findings:** 3 errors",
        "## Timeline: payments/checkout-api",
        "| time | # | what changed | step | pod hash | phase | replicasets (ready/replicas) |",
        "step 1 -> 0",
        "## Findings",
        "**Proof.**",
        "| time | # | object | detail |",
        "```sh\nkubectl -n payments scale rs checkout-api-",
    ] {
        assert!(md.contains(needle), "missing {needle:?} in:\n{md}");
    }
    // Every table row has as many cells as its header.
    for block in md.split("\n\n") {
        let rows: Vec<&str> = block.lines().filter(|l| l.starts_with('|')).collect();
        if let Some(header) = rows.first() {
            let cells = |l: &str| l.replace("\\|", "").matches('|').count();
            for r in &rows {
                assert_eq!(cells(r), cells(header), "row {r:?} under {header:?}");
            }
        }
    }
}

#[test]
fn markdown_escapes_names_from_the_recording() {
    let dir = tempfile::tempdir().unwrap();
    let path = hostile_recording(dir.path());
    let o = analyze(&path, &["-o", "markdown"]);
    let md = stdout(&o);
    assert!(
        md.contains("payments/\\<script>alert(1)\\</script>"),
        "{md}"
    );
    assert!(!md.contains("/<script>"), "{md}");
}

// ---------------------------------------------------------------------------------- html

/// The values of every `attr="..."` in `page`.
fn attribute_values<'a>(page: &'a str, attr: &str) -> Vec<&'a str> {
    let needle = format!(" {attr}=\"");
    page.match_indices(&needle)
        .map(|(i, _)| {
            let rest = &page[i + needle.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect()
}

fn assert_self_contained(page: &str) {
    for attr in [
        "src",
        "href",
        "xlink:href",
        "action",
        "srcset",
        "poster",
        "data",
    ] {
        for v in attribute_values(page, attr) {
            assert!(v.starts_with('#'), "{attr}={v:?} loads something");
        }
    }
    for needle in [
        "<link", "<iframe", "<img", "<object", "<embed", "@import", "url(",
    ] {
        assert!(!page.contains(needle), "{needle} in the page");
    }
    let lower = page.to_ascii_lowercase();
    for needle in ["src=\"http", "href=\"http", "src=\"//", "href=\"//"] {
        assert!(!lower.contains(needle), "{needle} in the page");
    }
}

fn html_of(path: &Path, dir: &Path) -> (Output, String) {
    let out = dir.join("report.html");
    let o = analyze(path, &["-o", "html", "--write", out.to_str().unwrap()]);
    let page = std::fs::read_to_string(&out).unwrap_or_default();
    (o, page)
}

#[test]
fn html_has_a_chart_per_rollout_a_marker_per_finding_and_loads_nothing() {
    let dir = tempfile::tempdir().unwrap();
    for path in committed_recordings() {
        let json = json_report(&path, &["--timelines"]);
        let (o, page) = html_of(&path, dir.path());
        assert!(
            o.status.code() == Some(0) || o.status.code() == Some(1),
            "{}: {}",
            path.display(),
            stderr(&o)
        );
        let findings = json["findings"].as_array().unwrap().len();
        let timelines = json["timelines"].as_array().unwrap().len();
        assert!(page.starts_with("<!DOCTYPE html>"));
        assert!(page.trim_end().ends_with("</html>"));
        assert_eq!(
            page.matches("<svg").count(),
            timelines,
            "{}",
            path.display()
        );
        assert_eq!(page.matches("</svg>").count(), timelines);
        assert_eq!(
            page.matches(r#"class="mk""#).count(),
            findings,
            "{}: one marker per finding",
            path.display()
        );
        assert_eq!(page.matches(r#"<article class="finding"#).count(), findings);
        for i in 1..=findings {
            assert!(page.contains(&format!(r#"id="f{i}""#)));
            assert!(page.contains(&format!(r##"href="#f{i}""##)));
        }
        assert_eq!(page.matches("<script>").count(), 1);
        assert_self_contained(&page);
    }
}

#[test]
fn html_shows_the_restart_the_new_hash_and_the_orphan() {
    let dir = tempfile::tempdir().unwrap();
    let (o, page) = html_of(&recording("rerender-race"), dir.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("wrote the report to"));
    for needle in [
        "current pod hash",
        "canary step",
        "rerender-restart",
        "orphaned-replicaset",
        "other: still 1 pod(s) at the end",
        "quiet",
        "What to run now",
        "--replicas=0",
    ] {
        assert!(page.contains(needle), "missing {needle:?}");
    }
}

#[test]
fn html_escapes_a_hostile_rollout_name() {
    let dir = tempfile::tempdir().unwrap();
    let path = hostile_recording(dir.path());
    let (o, page) = html_of(&path, dir.path());
    assert!(o.status.code() == Some(1), "{}", stderr(&o));
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!page.contains(HOSTILE));
    assert_eq!(page.matches("<script>").count(), 1, "only the page's own");
    assert_self_contained(&page);
}

#[test]
fn html_goes_to_stdout_without_write() {
    let o = analyze(&recording("image-only-release"), &["-o", "html"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("<!DOCTYPE html>"));
}

#[test]
fn a_report_that_cannot_be_written_leaves_no_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("missing-dir").join("report.html");
    let o = analyze(
        &recording("rerender-race"),
        &["-o", "html", "--write", target.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("report.html"), "{}", stderr(&o));
    assert!(!target.exists());
    // An input error writes nothing either, not even an empty report.
    let target = dir.path().join("report.html");
    let o = run(&[
        "analyze",
        dir.path().join("nope.rfr").to_str().unwrap(),
        "-o",
        "html",
        "--write",
        target.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(!target.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn html_of_a_busy_recording_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let rec = dir.path().join("scale.rfr");
    let o = run(&[
        "simulate",
        "scale",
        "--rollouts",
        "2",
        "--events",
        "6000",
        "-o",
        rec.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let json = json_report(&rec, &["--timelines"]);
    let entries: usize = json["timelines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["entries"].as_array().unwrap().len())
        .sum();
    let (o, page) = html_of(&rec, dir.path());
    assert!(o.status.code() == Some(0) || o.status.code() == Some(1));
    // Far less than the JSON of the same timelines, and bounded per chart.
    let json_len = serde_json::to_string(&json).unwrap().len();
    assert!(
        page.len() < 2_000_000,
        "{} bytes for {entries} entries",
        page.len()
    );
    assert!(page.len() < json_len, "{} >= {json_len}", page.len());
    assert!(!page.contains("NaN"));
}

/// Runs `cmd` for at most `limit`; `None` when it could not start or did not finish.
fn output_within(mut cmd: Command, limit: Duration) -> Option<Output> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .stdin(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The page in a real browser engine: it parses into the same chart and markers (and the
/// script runs without breaking it). Chromium is a tool this test needs: without it, it fails,
/// saying how to install it (.ci/run does).
#[test]
fn html_renders_in_headless_chromium() {
    let Some(browser) = ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success())
        })
    else {
        panic!(
            "no Chromium (chromium, chromium-browser or google-chrome): apt-get install chromium"
        );
    };
    let dir = tempfile::tempdir().unwrap();
    let (_, page) = html_of(&recording("rerender-race"), dir.path());
    let markers = page.matches(r#"class="mk""#).count();
    let file = dir.path().join("report.html");
    let profile = dir.path().join("profile");
    let shot = dir.path().join("shot.png");
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--virtual-time-budget=2000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg("--dump-dom")
    .arg(format!("file://{}", file.display()));
    let o = output_within(cmd, Duration::from_secs(90))
        .unwrap_or_else(|| panic!("{browser} --dump-dom did not end within 90 s"));
    let dom = stdout(&o);
    assert!(
        !dom.is_empty(),
        "{browser} --dump-dom printed nothing: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        dom.matches("<svg").count(),
        1,
        "the parsed page has the chart"
    );
    assert_eq!(dom.matches(r#"class="mk""#).count(), markers);
    assert!(dom.contains(r#"id="details-0""#));
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1400,1000",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .arg(format!("--screenshot={}", shot.display()))
    .arg(format!("file://{}", file.display()));
    output_within(cmd, Duration::from_secs(90))
        .unwrap_or_else(|| panic!("{browser} --screenshot did not end within 90 s"));
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(png.starts_with(b"\x89PNG"), "a screenshot was taken");
    assert!(png.len() > 20_000, "the screenshot is not blank");
}

// -------------------------------------------------------------------------------- verify

fn write_json(dir: &Path, name: &str, v: &serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
    p
}

fn verify(rec: &Path, expect: &Path) -> Output {
    run(&[
        "verify",
        rec.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
    ])
}

#[test]
fn every_committed_recording_verifies_against_its_own_analysis() {
    let dir = tempfile::tempdir().unwrap();
    for rec in committed_recordings() {
        let json = json_report(&rec, &[]);
        let n = json["findings"].as_array().unwrap().len();
        let expect = write_json(dir.path(), "expect.json", &json);
        let o = verify(&rec, &expect);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}{}",
            rec.display(),
            stdout(&o),
            stderr(&o)
        );
        assert_eq!(stdout(&o), format!("ok: {n} findings as expected\n"));
    }
}

#[test]
fn verify_ignores_messages_times_evidence_and_unknown_fields() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording("rerender-race");
    let mut json = json_report(&rec, &[]);
    for f in json["findings"].as_array_mut().unwrap() {
        f["summary"] = "reworded".into();
        f["at"] = "2000-01-01T00:00:00Z".into();
        f["evidence"] = serde_json::json!([]);
        f["remedy"] = serde_json::json!({"commands": ["echo"]});
        f["added_later"] = serde_json::json!({"x": 1});
    }
    json["recording"] = serde_json::json!({});
    json["future_field"] = serde_json::json!([1, 2]);
    let expect = write_json(dir.path(), "expect.json", &json);
    let o = verify(&rec, &expect);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
}

/// The expectation of rerender-race, changed by `edit`, verified against the recording.
fn verify_edited(edit: impl FnOnce(&mut Vec<serde_json::Value>)) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording("rerender-race");
    let mut json = json_report(&rec, &[]);
    edit(json["findings"].as_array_mut().unwrap());
    let expect = write_json(dir.path(), "expect.json", &json);
    verify(&rec, &expect)
}

fn find(findings: &[serde_json::Value], rule: &str) -> usize {
    findings
        .iter()
        .position(|f| f["rule"] == rule)
        .unwrap_or_else(|| panic!("no {rule} finding"))
}

#[test]
fn verify_names_a_missing_finding_and_exits_1() {
    let o = verify_edited(|f| {
        let i = find(f, "pause-lost");
        let dup = f[i].clone();
        f.push(dup);
    });
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("- missing     1 × error pause-lost Rollout payments/checkout-api"),
        "{out}"
    );
    assert!(out.contains("1 missing, 0 unexpected"), "{out}");
    assert!(!out.lines().any(|l| l.starts_with("+ ")), "{out}");
}

#[test]
fn verify_names_an_unexpected_finding_and_exits_1() {
    let o = verify_edited(|f| {
        let i = find(f, "orphaned-replicaset");
        f.remove(i);
    });
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains(
            "+ unexpected  1 × error orphaned-replicaset ReplicaSet payments/checkout-api-"
        ),
        "{out}"
    );
    assert!(out.contains("0 missing, 1 unexpected"), "{out}");
}

#[test]
fn verify_shows_a_changed_severity_and_exits_1() {
    let o = verify_edited(|f| {
        let i = find(f, "rerender-restart");
        f[i]["severity"] = "warning".into();
    });
    assert_eq!(o.status.code(), Some(1));
    let out = stdout(&o);
    assert!(
        out.contains("- missing     1 × warning rerender-restart Rollout payments/checkout-api"),
        "{out}"
    );
    assert!(
        out.contains("+ unexpected  1 × error rerender-restart Rollout payments/checkout-api"),
        "{out}"
    );
    assert!(out.contains("changed severity: warning -> error"), "{out}");
}

#[test]
fn verify_rejects_an_expectation_that_is_not_a_report_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording("rerender-race");
    let cases: [(&str, &str, &str); 5] = [
        ("not-json.json", "{\"findings\": [", "not JSON"),
        ("array.json", "[1, 2]", "not a rollout-forensics report"),
        (
            "inspect.json",
            "{\"files\": [], \"records\": 3}",
            "no schema_version",
        ),
        (
            "future.json",
            "{\"schema_version\": 99, \"findings\": []}",
            "schema_version 99",
        ),
        (
            "bad-finding.json",
            "{\"schema_version\": 1, \"findings\": [{\"rule\": 3}]}",
            "not a rollout-forensics report",
        ),
    ];
    for (name, content, why) in cases {
        let p = dir.path().join(name);
        std::fs::write(&p, content).unwrap();
        let o = verify(&rec, &p);
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stdout(&o));
        let err = stderr(&o);
        assert!(err.contains(name), "{name}: the file is named in {err:?}");
        assert!(err.contains(why), "{name}: {why:?} not in {err:?}");
        assert!(stdout(&o).is_empty());
    }
    let o = verify(&rec, &dir.path().join("absent.json"));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("absent.json"));
}

#[test]
fn verify_takes_the_analyze_input_flags() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recording("rerender-race");
    // Until +20s, the race has not happened: the expectation of that window verifies, and the
    // full expectation does not.
    let early = json_report(&rec, &["--until", "+20s"]);
    let expect = write_json(dir.path(), "early.json", &early);
    let o = run(&[
        "verify",
        rec.to_str().unwrap(),
        "--expect",
        expect.to_str().unwrap(),
        "--until",
        "+20s",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    let o = verify(&rec, &expect);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).lines().any(|l| l.starts_with("+ unexpected")));
}

/// `-o jsonl`: one line per finding of the JSON report, in its order, each with the
/// recording's cluster, context and files; a recording without findings gives no line.
#[test]
fn jsonl_is_the_json_reports_findings_one_per_line_with_where_they_were_recorded() {
    let run = |format: &str, file: &Path| {
        let o = bin()
            .args(["analyze", "-o", format, "--fail-on", "never"])
            .arg(file)
            .output()
            .unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let mut lines_seen = 0;
    for file in committed_recordings() {
        let report: serde_json::Value = serde_json::from_slice(&run("json", &file)).unwrap();
        let jsonl = String::from_utf8(run("jsonl", &file)).unwrap();
        let findings = report["findings"].as_array().unwrap();
        assert_eq!(jsonl.lines().count(), findings.len(), "{}", file.display());
        let files = &report["recording"]["files"];
        for (line, finding) in jsonl.lines().zip(findings) {
            let mut v: serde_json::Value = serde_json::from_str(line).unwrap();
            let o = v.as_object_mut().unwrap();
            assert_eq!(o.remove("cluster").unwrap(), files[0]["server"]);
            assert_eq!(o.remove("context").unwrap(), files[0]["context"]);
            assert_eq!(
                o.remove("recording").unwrap(),
                serde_json::json!([file.to_str().unwrap()])
            );
            assert_eq!(&v, finding);
            lines_seen += 1;
        }
    }
    assert!(lines_seen > 20, "{lines_seen} findings in all");
}

/// A re-render the rollout was promoted past: every report says where it ended, marks the
/// findings whose advice it moved past, and leaves their commands out of what to run now.
#[test]
fn issue_46_findings_the_rollout_moved_past_say_so_in_every_format() {
    let path = recording("real/blue-green-rerender-while-paused");
    let o = analyze(&path, &[]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(
        table.contains("AT THE END (04:08:58)\n  Rollout bluegreen/checkout-api: Healthy on b586d989d\n    rs checkout-api-b586d989d stable (current) 3/3 ready"),
        "{table}"
    );
    assert!(
        table.contains("Nothing to run: resolved at 04:08:36: promoted, Healthy on b586d989d."),
        "{table}"
    );
    let now = &table[table.find("WHAT TO RUN NOW").unwrap()..];
    for rule in [
        "# rerender-restart",
        "# pause-lost",
        "# double-render",
        "# config-only-rerender",
    ] {
        assert!(!now.contains(rule), "{rule} in {now}");
    }
    assert!(!now.contains("--watch"), "{now}");

    let md = stdout(&analyze(&path, &["-o", "markdown"]));
    assert!(md.contains("## At the end (04:08:58)"), "{md}");
    assert!(
        md.contains("| bluegreen/checkout-api | Healthy on b586d989d | checkout-api-b586d989d stable (current) 3/3 ready |"),
        "{md}"
    );
    assert!(
        md.contains(
            "**Now.** Nothing to run: resolved at 04:08:36: promoted, Healthy on b586d989d."
        ),
        "{md}"
    );

    let v = json_report(&path, &[]);
    let restart = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "rerender-restart")
        .unwrap();
    assert_eq!(restart["resolved"]["how"], "promoted, Healthy on b586d989d");
    assert_eq!(v["rollouts"][0]["stable_rs"], "b586d989d");
    assert_eq!(v["rollouts"][0]["phase"], "Healthy");

    let html = stdout(&analyze(&path, &["-o", "html"]));
    assert!(html.contains("Nothing to run: resolved at"), "{html}");
    let run = &html[html.find("What to run now").unwrap_or(0)..html.find("</header>").unwrap()];
    assert!(!run.contains("rerender-restart"), "{run}");
}
