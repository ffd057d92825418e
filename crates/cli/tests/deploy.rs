//! deploy/: the alert rules pass promtool's check and their own tests, the PrometheusRule holds
//! the same groups as the rules file, and the flight recorder's manifests agree with each other
//! and with the binary (its arguments parse; its metrics port is the one probed and scraped).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{bin, text};
use serde_json::Value;

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy")
}

/// The YAML documents of `file`, as JSON values.
fn documents(file: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(file).unwrap();
    text.split("\n---\n")
        .map(|doc| yaml_serde::from_str::<Value>(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

#[test]
fn the_alert_rules_pass_promtool_check_and_their_tests() {
    let ok = Command::new("promtool")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "this test needs promtool: apt-get install prometheus");
    let dir = deploy().join("prometheus");
    for args in [
        &["check", "rules", "rules.yaml"][..],
        &["test", "rules", "rules_test.yaml"][..],
    ] {
        let o = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "promtool {args:?}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
    }
}

#[test]
fn the_prometheus_rule_holds_the_rules_files_groups() {
    let rules = documents(&deploy().join("prometheus/rules.yaml"));
    let monitoring = documents(&deploy().join("monitoring.yaml"));
    let rule = of_kind(&monitoring, "PrometheusRule");
    assert_eq!(rule["spec"]["groups"], rules[0]["groups"]);
    assert!(rules[0]["groups"].as_array().unwrap().len() >= 2);
}

#[test]
fn the_flight_recorders_metrics_port_is_the_one_probed_scraped_and_served() {
    let recorder = documents(&deploy().join("flight-recorder.yaml"));
    let monitoring = documents(&deploy().join("monitoring.yaml"));
    let deployment = of_kind(&recorder, "Deployment");
    let pod = &deployment["spec"]["template"];
    let container = &pod["spec"]["containers"][0];
    let args: Vec<&str> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert!(args.contains(&"--metrics-listen=0.0.0.0:9464"), "{args:?}");
    let port = &container["ports"][0];
    assert_eq!(
        (port["name"].as_str(), port["containerPort"].as_i64()),
        (Some("metrics"), Some(9464))
    );
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    for probe in ["livenessProbe", "readinessProbe"] {
        assert_eq!(container[probe]["httpGet"]["port"], "metrics");
    }
    assert_eq!(pod["metadata"]["annotations"]["prometheus.io/port"], "9464");
    let service = of_kind(&recorder, "Service");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "metrics");
    assert_eq!(service["spec"]["selector"], pod["metadata"]["labels"]);
    let monitor = of_kind(&monitoring, "ServiceMonitor");
    assert_eq!(
        monitor["spec"]["endpoints"][0]["port"],
        service["spec"]["ports"][0]["name"]
    );
    let selects = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .unwrap();
    for (k, v) in selects {
        assert_eq!(&service["metadata"]["labels"][k], v, "{k}");
    }

    // The arguments are the binary's: with a kubeconfig whose server refuses connections, it
    // fails reaching it, not parsing them (and serves its metrics on the asked port first).
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{server}'}}}}]\nusers: [{{name: u, user: {{token: t}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let args: Vec<String> = args
        .iter()
        .map(|a| match *a {
            "--dir=/data" => format!("--dir={}", data.display()),
            "--metrics-listen=0.0.0.0:9464" => "--metrics-listen=127.0.0.1:0".to_owned(),
            other => other.to_owned(),
        })
        .collect();
    let o = bin(dir.path())
        .args(&args)
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .output()
        .unwrap();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("metrics: http://127.0.0.1:") && err.contains(&server[8..]),
        "{err}"
    );
}
