//! `rollout-forensics lint` end to end: rendered manifests from files, directories and stdin,
//! each finding at its file, line and column, the three formats, and the inputs it refuses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::{bin, run_bounded, text};
use serde_json::Value;

/// The render of the shop chart that docs and the README show (seed incident 002's front door).
fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/examples/shop-render.yaml")
}

fn lint(home: &Path, args: &[&str]) -> Output {
    let mut c = bin(home);
    c.arg("lint").args(args);
    run_bounded(c)
}

fn lint_stdin(home: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut c = bin(home);
    c.arg("lint")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_example_render_is_found_wrong_at_its_lines() {
    let home = tempfile::tempdir().unwrap();
    let file = example();
    let out = lint(home.path(), &[file.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    for line in [
        "shop-render.yaml:25:5  error  service-selector-mismatch  Service checkout-api-legacy (shop/templates/legacy-service.yaml)",
        "shop-render.yaml:42:13  error  front-door-bypass  Ingress shop (shop/templates/ingress.yaml)",
        "shop-render.yaml:67:9  warning  image-not-pinned  Rollout checkout-api (shop/templates/rollout.yaml)",
        "3 findings (2 errors, 1 warning) in 4 objects of 1 input",
    ] {
        assert!(stdout.contains(line), "{line:?} in\n{stdout}");
    }
    // Warnings only fail when asked; never, never.
    let rendered = std::fs::read(&file).unwrap();
    let out = lint_stdin(home.path(), &["-", "--fail-on", "never"], &rendered);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn json_and_sarif_name_each_finding_where_it_is() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let charts = dir.path().join("charts/shop");
    std::fs::create_dir_all(&charts).unwrap();
    std::fs::copy(example(), charts.join("render.yaml")).unwrap();
    std::fs::write(charts.join("README.txt"), "not a manifest").unwrap();
    let out = lint(home.path(), &[dir.path().to_str().unwrap(), "-o", "json"]);
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["objects"], 4);
    let found = report["findings"].as_array().unwrap();
    assert_eq!(found.len(), 3, "{report}");
    assert_eq!(found[0]["rule"], "service-selector-mismatch");
    assert_eq!(found[0]["field"], "spec.selector.version");
    assert_eq!(
        (found[0]["line"].as_u64(), found[0]["column"].as_u64()),
        (Some(25), Some(5))
    );
    assert_eq!(found[1]["name"], "shop");

    let out = lint(
        home.path(),
        &[
            dir.path().to_str().unwrap(),
            "-o",
            "sarif",
            "--root",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    let run = &sarif["runs"][0];
    let rules = sarif_rules(&sarif);
    let results = run["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        let index = r["ruleIndex"].as_u64().unwrap() as usize;
        assert_eq!(rules[index], r["ruleId"], "{r}");
        let location = &r["locations"][0]["physicalLocation"];
        assert_eq!(
            location["artifactLocation"]["uri"], "charts/shop/render.yaml",
            "relative to --root: {r}"
        );
        assert!(location["region"]["startLine"].as_u64().unwrap() > 1);
    }
    assert!(
        run["tool"]["driver"]["rules"][0]["helpUri"]
            .as_str()
            .unwrap()
            .contains("docs/rules.md#"),
        "{run}"
    );
}

#[test]
fn a_clean_render_and_a_list_give_nothing_to_fix() {
    let home = tempfile::tempdir().unwrap();
    let list = r#"{"apiVersion": "v1", "kind": "List", "items": [
      {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
       "spec": {"selector": {"app": "web"}}},
      {"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": {"name": "web"},
       "spec": {"template": {"metadata": {"labels": {"app": "web"}},
         "spec": {"containers": [{"name": "web", "image": "web:1@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}]}},
        "strategy": {"canary": {"stableService": "web"}}}}]}"#;
    let out = lint_stdin(home.path(), &["-"], list.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).starts_with("no finding in 2 objects of 1 input; rules checked: "),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn what_is_not_rendered_manifests_is_an_error_that_says_where() {
    let home = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, body: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let broken = write(
        "broken.yaml",
        b"apiVersion: v1\nkind: Service\nmetadata: {name: [a\n",
    );
    let no_kind = write("values.yaml", b"---\nimage:\n  tag: \"1.1\"\n");
    let scalar = write("scalar.yaml", b"---\njust text\n");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let gz = write("x.rfr", &[0x1f, 0x8b, 0x08, 0, 0, 0]);
    for (args, words) in [
        (
            vec![broken.clone()],
            format!("{broken}:4:1: not YAML or JSON"),
        ),
        (
            vec![no_kind.clone()],
            format!("{no_kind}:2:1: an object without apiVersion and kind"),
        ),
        (
            vec![scalar.clone()],
            format!("{scalar}:2:1: a document that is not an object"),
        ),
        (
            vec![empty.to_str().unwrap().to_owned()],
            "a directory with no *.yaml".to_owned(),
        ),
        (vec![gz.clone()], format!("{gz}: cannot read it as text")),
        (
            vec!["no/such/file.yaml".to_owned()],
            "no/such/file.yaml: cannot read it".to_owned(),
        ),
        (
            vec!["-o".to_owned(), "xml".to_owned(), gz.clone()],
            "invalid value 'xml'".to_owned(),
        ),
    ] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = lint(home.path(), &args);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&words), "{words:?} in {stderr}");
        assert!(
            out.stdout.is_empty(),
            "no partial output: {}",
            text(&out.stdout)
        );
    }
    // A later document's error is at the input's line.
    let out = lint_stdin(
        home.path(),
        &["-"],
        b"apiVersion: v1\nkind: Service\n---\na: [b\n",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("-:5:1: not YAML or JSON"),
        "{}",
        text(&out.stderr)
    );
    // Comments and empty documents alone: no object at all.
    let out = lint_stdin(home.path(), &["-"], b"---\n# nothing\n---\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("no Kubernetes object in -"));
}

/// `-o sarif` as Microsoft's SARIF Multitool validates it (tests/sarif/install.sh installs it
/// from the npm registry): no error, warning or note of its rules.
#[test]
fn sarif_passes_microsofts_validator() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/sarif/install.sh");
    let o = std::process::Command::new(script).output().unwrap();
    assert!(
        o.status.success(),
        "tests/sarif/install.sh (needs npm): {}",
        text(&o.stderr)
    );
    let multitool = PathBuf::from(text(&o.stdout).trim());
    let home = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = lint(
        home.path(),
        &[
            example().to_str().unwrap(),
            "-o",
            "sarif",
            "--root",
            root.to_str().unwrap(),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let log = home.path().join("lint.sarif");
    std::fs::write(&log, &out.stdout).unwrap();
    let validate = |log: &Path, name: &str| -> Vec<Value> {
        let checked = home.path().join(name);
        let mut c = std::process::Command::new(&multitool);
        c.arg("validate")
            .arg(log)
            .arg("--output")
            .arg(&checked)
            // Its .NET runtime is bundled; no globalization libraries needed.
            .env("DOTNET_SYSTEM_GLOBALIZATION_INVARIANT", "1");
        let v = run_bounded(c);
        assert!(v.status.success(), "{}{}", text(&v.stdout), text(&v.stderr));
        let report: Value = serde_json::from_slice(&std::fs::read(&checked).unwrap()).unwrap();
        report["runs"][0]["results"].as_array().unwrap().clone()
    };
    let results = validate(&log, "validation.sarif");
    assert!(results.is_empty(), "the validator's findings: {results:#?}");
    // The validator reads what it is given: the same log with a broken help URI is refused.
    let mut broken: Value = serde_json::from_slice(&out.stdout).unwrap();
    broken["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] = Value::from("a b:/c d");
    let bad = home.path().join("broken.sarif");
    std::fs::write(&bad, broken.to_string()).unwrap();
    let results = validate(&bad, "broken-validation.sarif");
    assert!(
        results.iter().any(|r| r["level"] == "error"),
        "{results:#?}"
    );
}

/// The last Rollout object of the real recording `gate-refused-render-applied-anyway`, whose
/// canary ends paused at step 1, as a render would have it (no status, no server metadata), and
/// the revision it is paused on.
fn rollout_at_the_end(file: &Path) -> (Value, String) {
    let mut reader = rf_format::Reader::new(std::fs::File::open(file).unwrap()).unwrap();
    let mut last = None;
    while let Some(r) = reader.next_record().unwrap() {
        if r.kind == rf_format::Kind::Rollout && !r.object.is_empty() {
            last = Some(r.object);
        }
    }
    let live: Value = serde_json::from_slice(&last.unwrap()).unwrap();
    assert_eq!(live["status"]["currentStepIndex"], 1, "{live}");
    assert!(live["status"]["pauseConditions"].is_array(), "{live}");
    let render = serde_json::json!({
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Rollout",
        "metadata": {"name": live["metadata"]["name"], "namespace": live["metadata"]["namespace"]},
        "spec": live["spec"],
    });
    let hash = live["status"]["currentPodHash"]
        .as_str()
        .unwrap()
        .to_owned();
    (render, hash)
}

/// The ids of the rules a SARIF log's run describes, in its order.
fn sarif_rules(sarif: &Value) -> Vec<&str> {
    sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect()
}

/// `lint --live` against `serve` of a real recording's end: the same template passes, a
/// checksum-only render of the paused canary is refused (exit 1) with the revision, the step
/// and the change, in each format; the live options without `--live`, and a cluster that does
/// not answer, are errors (exit 2).
#[test]
fn the_gate_refuses_a_checksum_only_render_of_the_paused_canary_it_is_served() {
    let fixture = common::recording("real/gate-refused-render-applied-anyway");
    let s = common::serve(&fixture, &[]);
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // A copy: the server's own goes with it.
    let kubeconfig = home.join("kubeconfig");
    std::fs::copy(&s.kubeconfig, &kubeconfig).unwrap();
    let kubeconfig = kubeconfig.to_str().unwrap();
    let (same, hash) = rollout_at_the_end(&fixture);
    let write = |name: &str, v: &Value| {
        let p = dir.path().join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(v).unwrap()).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let unchanged = write("same.json", &same);
    let out = lint(home, &["--live", "--kubeconfig", kubeconfig, &unchanged]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains(&format!(
            "against the cluster:\n    Rollout gate/checkout-api: paused at step 1 of 4 of {hash} since "
        )) && stdout.contains("; the render leaves its pod template as it is"),
        "{stdout}"
    );

    let mut changed = same.clone();
    changed["spec"]["template"]["metadata"]["annotations"]["checksum/config"] =
        Value::from("a-new-config");
    let changed = write("changed.json", &changed);
    let out = lint(home, &["--live", "--kubeconfig", kubeconfig, &changed]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("error  pause-lost  Rollout checkout-api")
            && stdout.contains(&format!("paused at step 1 of 4 of {hash} since "))
            && stdout.contains(
                "the change is annotations only (metadata.annotations[\"checksum/config\"]: "
            )
            && stdout.contains("-> a-new-config)")
            && stdout.contains("`kubectl argo rollouts status checkout-api -n gate`"),
        "{stdout}"
    );
    let out = lint(
        home,
        &[
            "--live",
            "--kubeconfig",
            kubeconfig,
            "-o",
            "sarif",
            &changed,
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let sarif: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = &sarif["runs"][0];
    let rules = sarif_rules(&sarif);
    assert!(
        rules.contains(&"pause-lost") && rules.contains(&"rerender-restart"),
        "{rules:?}"
    );
    let result = &run["results"][0];
    assert_eq!(result["ruleId"], "pause-lost");
    assert_eq!(
        rules[result["ruleIndex"].as_u64().unwrap() as usize],
        "pause-lost"
    );

    // The live options alone, and a cluster that is not there.
    let out = lint(home, &["--kubeconfig", kubeconfig, &changed]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--live"),
        "{}",
        text(&out.stderr)
    );
    drop(s);
    let out = lint(home, &["--live", "--kubeconfig", kubeconfig, &changed]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("cannot list rollouts.argoproj.io in namespace gate"),
        "{}",
        text(&out.stderr)
    );
}
