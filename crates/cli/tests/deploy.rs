//! deploy/: the alert rules pass promtool's check and their own tests, the PrometheusRule holds
//! the same groups as the rules file, and the flight recorder's manifests agree with each other
//! and with the binary (its arguments parse; its metrics port is the one probed and scraped).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{bin, need, text};
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
    need("promtool", "apt-get install prometheus");
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

/// The linters of tests/lint (actionlint, BuildKit's Dockerfile checks), built from the Go
/// module proxy once per version: the directory that holds them.
fn linters() -> PathBuf {
    let ok = Command::new("go")
        .arg("version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "this test needs Go (the linters are built from the Go module proxy)"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/lint/build.sh");
    let o = Command::new(script).output().unwrap();
    assert!(
        o.status.success(),
        "tests/lint/build.sh: {}",
        text(&o.stderr)
    );
    PathBuf::from(text(&o.stdout).trim())
}

#[test]
fn the_dockerfile_and_the_release_workflow_pass_their_linters() {
    let bin = linters();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new(bin.join("dockerfilelint"))
        .arg(root.join("Dockerfile"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    assert!(
        text(&o.stdout).contains("2 stages, no warning"),
        "{}",
        text(&o.stdout)
    );
    // The linter lints: a stage name in capitals is a warning.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("Dockerfile");
    std::fs::write(&bad, "FROM debian:12 AS Build\nRUN true\n").unwrap();
    let o = Command::new(bin.join("dockerfilelint"))
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stdout).contains("StageNameCasing"),
        "{}",
        text(&o.stdout)
    );

    let workflows: Vec<PathBuf> = std::fs::read_dir(root.join(".github/workflows"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(!workflows.is_empty());
    let o = Command::new(bin.join("actionlint"))
        .args(&workflows)
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}{}", text(&o.stdout), text(&o.stderr));
    // actionlint lints: an undefined matrix property is an error.
    let release = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    let broken = dir.path().join("release.yml");
    std::fs::write(
        &broken,
        release.replace("matrix.target }}", "matrix.targett }}"),
    )
    .unwrap();
    let o = Command::new(bin.join("actionlint"))
        .arg(&broken)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stdout).contains("\"targett\" is not defined"),
        "{}",
        text(&o.stdout)
    );
}

/// deploy/ runs the image the Dockerfile says to build and push, as the user it runs as, and
/// the release workflow builds that Dockerfile and packages what the binary generates.
#[test]
fn deploy_runs_the_image_the_dockerfile_builds() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    let image = dockerfile
        .lines()
        .find_map(|l| {
            l.trim_start_matches("# ")
                .trim()
                .strip_prefix("docker build -t ")
        })
        .and_then(|rest| rest.split_whitespace().next())
        .expect("the Dockerfile says how to build its image");
    assert!(dockerfile.contains(&format!("docker push {image}")));
    assert!(dockerfile.contains("USER 65532:65532"));
    let mut images = 0;
    for file in ["flight-recorder.yaml", "check-postsync.yaml"] {
        for doc in documents(&deploy().join(file)) {
            let spec = &doc["spec"]["template"]["spec"];
            let containers = spec["containers"]
                .as_array()
                .into_iter()
                .chain(spec["initContainers"].as_array())
                .flatten();
            for c in containers {
                assert_eq!(c["image"], image, "{file}: {c}");
                assert!(
                    c["command"].is_null(),
                    "{file}: the image has no shell: {c}"
                );
                images += 1;
            }
            if spec.is_object() {
                assert_eq!(spec["securityContext"]["runAsUser"], 65532, "{file}");
            }
        }
    }
    assert_eq!(images, 3);
    // The PreSync gate is a Helm template (not YAML before it is rendered): its image lines.
    let gate = std::fs::read_to_string(deploy().join("lint-presync.yaml")).unwrap();
    let gate_images: Vec<&str> = gate
        .lines()
        .filter_map(|l| l.trim().strip_prefix("image: "))
        .collect();
    assert_eq!(gate_images, [image], "lint-presync.yaml");
    assert!(gate.contains("runAsUser: 65532") && !gate.contains("command:"));
    let release = std::fs::read_to_string(root.join(".github/workflows/release.yml")).unwrap();
    for needed in [
        "completions \"$shell\"",
        "man --dir",
        "docker/build-push-action",
        "context: .",
    ] {
        assert!(release.contains(needed), "release.yml lacks {needed}");
    }
}
