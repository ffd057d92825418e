//! `record --metrics-listen`: a real Prometheus scrapes a recorder that records a served
//! recording, and its PromQL answer holds the findings `analyze` finds in what was recorded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{Killed, bin, need, recording, serve, signal, text, wait_bounded};
use serde_json::Value;

/// One HTTP/1.0 GET on loopback: (status, body).
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut all = String::new();
    s.read_to_string(&mut all).unwrap();
    let status = all
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = all
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Starts `record ... --metrics-listen 127.0.0.1:0` of `kubeconfig`: the recorder, and the
/// address its metrics are served on (from the line it prints).
fn recorder(home: &Path, kubeconfig: &Path, out: &Path) -> (Killed, String) {
    let mut child = Killed(
        bin(home)
            .args(["record", "-n", "payments", "--kubeconfig"])
            .arg(kubeconfig)
            .arg("-o")
            .arg(out)
            .args(["--metrics-listen", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some(rest) = line.strip_prefix("metrics: http://") {
                let _ = tx.send(rest.split('/').next().unwrap_or_default().to_owned());
            }
        }
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the recorder says where its metrics are served");
    (child, addr)
}

/// The (rule, namespace, name, kind, severity) of each finding of a `analyze -o json` report.
fn analyzed(file: &Path) -> Vec<(String, String, String, String, String)> {
    let o = bin(file.parent().unwrap())
        .args(["analyze", "-o", "json"])
        .arg(file)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut found: Vec<_> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let s = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                s(&f["rule"]),
                s(&f["rollout"]["namespace"]),
                s(&f["rollout"]["name"]),
                s(&f["rollout"]["kind"]),
                s(&f["severity"]),
            )
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

#[test]
fn prometheus_scrapes_the_findings_that_analyze_finds() {
    need("prometheus", "apt-get install prometheus");
    let s = serve(&recording("moved-tag"), &["--speed", "max"]);
    let home = s.dir.path();
    let out = home.join("recorded.rfr");
    let (mut rec, addr) = recorder(home, &s.kubeconfig, &out);

    // Prometheus, scraping it every second.
    let prom_dir = tempfile::tempdir().unwrap();
    let config = prom_dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global: {{scrape_interval: 1s, evaluation_interval: 1s}}\nscrape_configs:\n- job_name: rollout-forensics\n  static_configs: [{{targets: ['{addr}']}}]\n"
        ),
    )
    .unwrap();
    let prom_addr = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(prom_dir.path().join("prometheus.log")).unwrap();
    let _prom = Killed(
        Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                prom_dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={prom_addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap(),
    );
    // The findings, as Prometheus has them, once it has them all (the served recording plays
    // at full speed: both findings come within seconds).
    let query =
        "/api/v1/query?query=rollout_forensics_findings_total%7Bjob%3D%22rollout-forensics%22%7D";
    let started = Instant::now();
    let series = loop {
        let answer = TcpStream::connect(&prom_addr)
            .ok()
            .map(|_| get(&prom_addr, query));
        if let Some((200, body)) = &answer {
            let v: Value = serde_json::from_str(body).unwrap();
            let result = v["data"]["result"].as_array().cloned().unwrap_or_default();
            if result.len() >= 2 {
                break result;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "Prometheus has no findings after 60 s: {answer:?}\n{}",
            std::fs::read_to_string(prom_dir.path().join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    // The recorder is ready (its lists done, no gap) and healthy, and says so to Prometheus.
    assert_eq!(get(&addr, "/readyz"), (200, "ready\n".to_owned()));
    assert_eq!(get(&addr, "/healthz").0, 200);
    assert_eq!(get(&addr, "/nothing").0, 404);
    let metrics = get(&addr, "/metrics").1;
    for name in [
        "rollout_forensics_events_recorded_total{kind=\"Rollout\"}",
        "rollout_forensics_written_bytes_total",
        "rollout_forensics_watch_restarts_total",
        "rollout_forensics_newest_event_timestamp_seconds",
        "rollout_forensics_write_lag_seconds_count",
        "rollout_forensics_finding_active{",
    ] {
        assert!(metrics.contains(name), "{name} missing:\n{metrics}");
    }
    assert!(
        metrics.ends_with("# EOF\n"),
        "OpenMetrics text ends with # EOF"
    );
    // Every metric the shipped alert rules ask for is served.
    let rules = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/prometheus/rules.yaml"),
    )
    .unwrap();
    let mut asked: Vec<&str> = rules
        .match_indices("rollout_forensics_")
        .map(|(i, _)| {
            let rest = &rules[i..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect();
    asked.sort_unstable();
    asked.dedup();
    assert!(asked.len() >= 4, "{asked:?}");
    for name in asked {
        assert!(
            metrics.lines().any(|l| l.starts_with(name)),
            "the rules ask for {name}, not served:\n{metrics}"
        );
    }

    signal(&rec, "-INT");
    let status = wait_bounded(&mut rec, Duration::from_secs(20), "the recorder");
    assert!(status.success());
    let mut scraped: Vec<_> = series
        .iter()
        .map(|r| {
            let m = &r["metric"];
            let s = |k: &str| m[k].as_str().unwrap_or_default().to_owned();
            assert_eq!(r["value"][1], "1", "each finding counted once: {r}");
            (
                s("rule"),
                s("namespace"),
                s("name"),
                s("kind"),
                s("severity"),
            )
        })
        .collect();
    scraped.sort();
    assert_eq!(scraped, analyzed(&out));
    // No label a pod or a hash would multiply.
    for r in &series {
        let labels: Vec<&str> = r["metric"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            labels,
            [
                "__name__",
                "instance",
                "job",
                "kind",
                "name",
                "namespace",
                "rule",
                "severity"
            ]
        );
    }
}

/// A port in use is an error before anything is recorded, and nothing is written.
#[test]
fn a_metrics_port_in_use_is_an_error_at_once() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never.rfr");
    let o = bin(dir.path())
        .args(["record", "-n", "payments", "-o"])
        .arg(&out)
        .args(["--metrics-listen", &addr])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("--metrics-listen {addr}: cannot listen there")),
        "{err}"
    );
    assert!(!out.exists());
    // Not an address at all: clap says so.
    let o = bin(dir.path())
        .args(["watch", "--metrics-listen", "localhost"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("invalid value 'localhost' for '--metrics-listen <ADDR>'"),
        "{}",
        text(&o.stderr)
    );
}

/// A Service that takes traffic with no ready endpoint is an active condition while it holds:
/// the recorder of the stale-role-labels end state (the stable role's Service lost every pod)
/// serves `finding_active{rule="no-ready-endpoints"} 1`, and `/metrics` alone tells it.
#[test]
fn issue_48_a_service_without_ready_endpoints_is_an_active_condition() {
    let s = serve(&recording("stale-role-labels"), &[]);
    let home = s.dir.path();
    let out = home.join("recorded.rfr");
    let (mut rec, addr) = recorder(home, &s.kubeconfig, &out);
    let started = Instant::now();
    let line = loop {
        let metrics = get(&addr, "/metrics").1;
        if let Some(l) = metrics.lines().find(|l| {
            l.starts_with("rollout_forensics_finding_active{")
                && l.contains("rule=\"no-ready-endpoints\"")
        }) {
            break l.to_owned();
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "no no-ready-endpoints series after 60 s:\n{metrics}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(line.ends_with(" 1"), "{line}");
    assert!(line.contains("name=\"checkout-api\""), "{line}");
    signal(&rec, "-INT");
    let status = wait_bounded(&mut rec, Duration::from_secs(20), "the recorder");
    assert!(status.success());
}
