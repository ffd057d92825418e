//! `rollout-forensics serve` against a client no one here wrote: kubectl. Each test starts the
//! real binary on loopback, reads its URL from stdout, and runs kubectl with the kubeconfig it
//! wrote. Tests that need kubectl fail, saying how to install it, when /usr/bin/kubectl is absent.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rf_format::{Kind, Reader, Record};
use serde_json::Value;

const KUBECTL: &str = "/usr/bin/kubectl";

fn recording() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings/rerender-race.rfr")
}

fn records() -> (Vec<Record>, rf_format::Timestamp) {
    let mut r = Reader::new(std::fs::File::open(recording()).unwrap()).unwrap();
    let records: Vec<Record> = (&mut r).map(Result::unwrap).collect();
    (records, r.trailer().unwrap().closed_at)
}

/// The final state of each object of `kind`: name -> object.
fn final_objects(kind: &Kind) -> BTreeMap<String, Value> {
    records()
        .0
        .into_iter()
        .filter(|r| &r.kind == kind && r.op.has_object())
        .map(|r| (r.name, serde_json::from_slice(&r.object).unwrap()))
        .collect()
}

/// kubectl is a tool these tests need: without it they fail, saying how to install it.
fn require_kubectl() {
    assert!(
        Path::new(KUBECTL).exists(),
        "{KUBECTL} is not installed: apt-get install kubernetes-client (.ci/run does)"
    );
}

/// A running `serve`; killed when dropped.
struct Served {
    child: Child,
    url: String,
    kubeconfig: PathBuf,
    dir: tempfile::TempDir,
    stderr: mpsc::Receiver<String>,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(extra: &[&str]) -> Served {
    serve_path(&recording(), extra)
}

fn serve_path(path: &Path, extra: &[&str]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .arg("serve")
        .arg(path)
        .args(extra)
        .arg("--kubeconfig-out")
        .arg(&kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = tx.send(line);
    });
    let (etx, erx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut all = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut all);
        let _ = etx.send(all);
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("serve prints its URL within 30 s")
        .trim()
        .to_owned();
    assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
    Served {
        child,
        url,
        kubeconfig,
        dir,
        stderr: erx,
    }
}

impl Served {
    fn kubectl(&self) -> Command {
        let mut c = Command::new(KUBECTL);
        c.env("HOME", self.dir.path())
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .arg("--request-timeout=20s")
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl to completion (killed after 30 s).
    fn run(&self, args: &[&str]) -> Output {
        let mut child = self
            .kubectl()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        child.wait_with_output().unwrap()
    }

    /// Stops it with SIGINT, as Ctrl-C does; returns its exit code and stderr.
    fn interrupt(mut self) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-INT", &pid])
                .status()
                .unwrap()
                .success()
        );
        let started = Instant::now();
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "serve stops within 10 s of SIGINT"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        let stderr = self
            .stderr
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default();
        (code, stderr)
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn at_end() -> String {
    rf_analyzer::rfc3339(records().1)
}

#[test]
fn kubectl_get_rollouts_all_namespaces_json_is_the_recorded_final_state() {
    require_kubectl();
    let s = serve(&["--at", &at_end()]);
    let o = s.run(&["get", "rollouts.argoproj.io", "-A", "-o", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let items = list["items"].as_array().unwrap();
    let want = final_objects(&Kind::Rollout);
    assert_eq!(items.len(), want.len());
    for item in items {
        let name = item["metadata"]["name"].as_str().unwrap();
        let mut recorded = want[name].clone();
        assert_eq!(item["metadata"]["uid"], recorded["metadata"]["uid"]);
        assert_eq!(
            item["status"]["currentPodHash"],
            recorded["status"]["currentPodHash"]
        );
        // kubectl hides managedFields unless --show-managed-fields.
        recorded["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(item, &recorded, "{name} is served as recorded");
    }
}

#[test]
fn kubectl_get_rs_prints_a_table_with_one_row_per_replicaset() {
    require_kubectl();
    let s = serve(&["--at", &at_end()]);
    let o = s.run(&["get", "rs", "-n", "payments"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let mut lines = out.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "DESIRED", "CURRENT", "READY", "AGE"]);
    let want = final_objects(&Kind::ReplicaSet);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows.len(), want.len(), "{out}");
    for row in rows {
        let recorded = &want[row[0]];
        assert_eq!(row[1], recorded["spec"]["replicas"].to_string(), "{out}");
        assert_eq!(
            row[3],
            recorded["status"]["readyReplicas"]
                .as_i64()
                .unwrap_or(0)
                .to_string(),
            "{out}"
        );
    }
    // Ages are measured to the served moment: render 2's ReplicaSet, created at +36 s, is
    // 5m24s old at +6 min.
    assert!(out.contains("5m24s"), "{out}");
}

#[test]
fn kubectl_watch_at_speed_max_prints_each_replicaset_state_in_recorded_order() {
    require_kubectl();
    let (records, _) = records();
    let mut want: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.kind == Kind::ReplicaSet && r.op.has_object())
    {
        want.entry(r.name.clone())
            .or_default()
            .push(r.resource_version.clone());
    }
    let expected: usize = want.values().map(Vec::len).sum();

    let s = serve(&["--speed", "max"]);
    let mut child = s
        .kubectl()
        .args(["get", "rs", "-n", "payments", "-w", "-o", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let started = Instant::now();
    let mut out = Vec::new();
    let mut objects: Vec<Value> = Vec::new();
    while objects.len() < expected && started.elapsed() < Duration::from_secs(30) {
        if let Ok(chunk) = rx.recv_timeout(Duration::from_millis(200)) {
            out.extend_from_slice(&chunk);
            objects = serde_json::Deserializer::from_slice(&out)
                .into_iter::<Value>()
                .map_while(Result::ok)
                .collect();
        }
    }
    // Nothing more comes after the last recorded state.
    std::thread::sleep(Duration::from_millis(500));
    while let Ok(chunk) = rx.try_recv() {
        out.extend_from_slice(&chunk);
    }
    let _ = child.kill();
    let _ = child.wait();
    let objects: Vec<Value> = serde_json::Deserializer::from_slice(&out)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect();
    let mut got: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for o in &objects {
        got.entry(o["metadata"]["name"].as_str().unwrap().to_owned())
            .or_default()
            .push(
                o["metadata"]["resourceVersion"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            );
    }
    assert_eq!(got, want, "kubectl printed:\n{}", text(&out));
}

#[test]
fn kubectl_writes_are_refused_with_method_not_allowed() {
    require_kubectl();
    let s = serve(&[]);
    let manifest = s.dir.path().join("rs.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata:\n  name: new\n  namespace: payments\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: i}]}\n",
    )
    .unwrap();
    let manifest = manifest.to_str().unwrap();
    let before = text(&s.run(&["get", "rs", "-n", "payments", "-o", "name"]).stdout);
    let rs = before
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("replicaset.apps/"))
        .expect("the recording has ReplicaSets")
        .to_owned();
    // The server publishes no schemas, so kubectl's client-side validation is turned off to
    // reach the write itself (with it on, kubectl refuses before writing).
    for args in [
        vec!["apply", "--validate=false", "-f", manifest],
        vec!["delete", "rs", &rs, "-n", "payments"],
        vec!["scale", "rs", &rs, "-n", "payments", "--replicas=0"],
        vec![
            "annotate",
            "rollout",
            "checkout-api",
            "-n",
            "payments",
            "x=y",
        ],
    ] {
        let o = s.run(&args);
        let err = text(&o.stderr);
        assert!(!o.status.success(), "{args:?} succeeded");
        assert!(
            err.contains("MethodNotAllowed") || err.contains("405"),
            "{args:?}: {err}"
        );
    }
    let o = s.run(&["apply", "-f", manifest]);
    assert!(!o.status.success());
    // Nothing changed.
    let o = s.run(&["get", "rs", "-n", "payments", "-o", "name"]);
    assert_eq!(text(&o.stdout), before);
}

#[test]
fn kubectl_get_a_missing_object_names_it() {
    require_kubectl();
    let s = serve(&[]);
    let o = s.run(&["get", "rs", "nope"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains("replicasets.apps \"nope\" not found"),
        "{}",
        text(&o.stderr)
    );
    // A kind no recording holds is not served ...
    let o = s.run(&["get", "statefulsets"]);
    assert!(!o.status.success(), "statefulsets were not recorded");
    // ... but for the three `kubectl argo rollouts get` waits for, an empty list, and a
    // warning kubectl prints that they were not recorded.
    let o = s.run(&["get", "deployments", "-n", "payments"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("Warning: deployments.apps were not recorded"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn serve_prints_its_url_writes_a_kubeconfig_and_stops_on_sigint_with_exit_0() {
    let s = serve(&[]);
    let config = std::fs::read_to_string(&s.kubeconfig).unwrap();
    assert!(
        config.contains(&format!("server: \"{}\"", s.url)),
        "{config}"
    );
    assert!(config.contains("current-context: \"rollout-forensics-replay\""));
    assert!(config.contains("namespace: \"payments\""));
    let kubeconfig = s.kubeconfig.clone();
    let (code, stderr) = s.interrupt();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("serving "), "{stderr}");
    assert!(stderr.contains("state at 2026-03-14T13:06:00Z"), "{stderr}");
    assert!(stderr.contains("kubeconfig: "), "{stderr}");
    // kubectl takes no flag before a plugin's name: the plugin's form sets KUBECONFIG.
    assert!(
        stderr.contains(&format!(
            "with the Argo Rollouts plugin: KUBECONFIG={} kubectl argo rollouts get rollout checkout-api -n payments",
            kubeconfig.display()
        )),
        "{stderr}"
    );
    // Where its scratch file is, and what it holds.
    assert!(stderr.contains("scratch file in "), "{stderr}");
    assert!(stderr.contains(" (unlinked): "), "{stderr}");
    assert!(stderr.contains(", rows "), "{stderr}");
}

#[test]
fn serve_writes_a_default_kubeconfig_in_a_temporary_directory_and_removes_it() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .arg("serve")
        .arg(recording())
        .args(["--speed", "10"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("http://127.0.0.1:"));
    let path = std::env::temp_dir()
        .join(format!("rollout-forensics-serve-{}", child.id()))
        .join("rerender-race.rfr.kubeconfig");
    assert!(path.exists(), "{}", path.display());
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(started.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains(&path.display().to_string()), "{stderr}");
    assert!(stderr.contains("speed 10"), "{stderr}");
    assert!(!path.exists());
}

#[test]
fn serve_refuses_bad_flags_with_exit_2() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
            .arg("serve")
            .arg(recording())
            .args(args)
            .output()
            .unwrap()
    };
    let o = run(&["--speed", "fast"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--speed"), "{}", text(&o.stderr));
    let o = run(&["--speed", "max", "--at", "+1m"]);
    assert_eq!(o.status.code(), Some(2));
    let o = run(&["--at", "yesterday"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("--at"), "{}", text(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["serve", "/nonexistent.rfr"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}

/// The bundled recording split into `files` recordings in a new directory, as a flight recorder
/// that rotates writes them: each file with the header of the whole but its own start, each
/// closed at its last record (the last at the recording's close).
fn split_into(files: usize) -> tempfile::TempDir {
    let mut reader = Reader::new(std::fs::File::open(recording()).unwrap()).unwrap();
    let header = reader.header().clone();
    let records: Vec<Record> = (&mut reader).map(Result::unwrap).collect();
    let closed_at = reader.trailer().unwrap().closed_at;
    let dir = tempfile::tempdir().unwrap();
    let per_file = records.len().div_ceil(files);
    for (i, chunk) in records.chunks(per_file).enumerate() {
        let mut h = header.clone();
        if i > 0 {
            h.started_at = chunk[0].observed_at;
        }
        let path = dir.path().join(format!("recorder-{i:03}.rfr"));
        let mut w = rf_format::Writer::new(std::fs::File::create(path).unwrap(), &h).unwrap();
        for r in chunk {
            w.write(r).unwrap();
        }
        let last = chunk.last().unwrap().observed_at;
        let end = if (i + 1) * per_file >= records.len() {
            closed_at
        } else {
            last
        };
        w.finish_at(end).unwrap();
    }
    dir
}

#[test]
fn serve_dir_serves_a_flight_recorder_s_files_byte_for_byte_as_the_one_recording_they_split() {
    require_kubectl();
    let dir = split_into(3);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    let (records, _) = records();
    // Mid-recording (in the second file) and at the end.
    let mid = rf_analyzer::rfc3339(records[records.len() / 2].observed_at);
    for at in [mid, at_end()] {
        let one = serve(&["--at", &at]);
        let split = serve_path(dir.path(), &["--at", &at]);
        for path in [
            "/apis/argoproj.io/v1alpha1/rollouts",
            "/apis/apps/v1/namespaces/payments/replicasets",
            "/apis/apps/v1/replicasets?limit=2",
            "/api/v1/pods?labelSelector=app%3Dcheckout-api",
            "/api/v1/namespaces",
            "/apis/apps/v1/replicasets?watch=1&resourceVersion=0&timeoutSeconds=1",
            "/apis/apps/v1/replicasets?watch=1&resourceVersion=1&timeoutSeconds=1",
        ] {
            let want = one.run(&["get", "--raw", path]);
            let got = split.run(&["get", "--raw", path]);
            assert!(want.status.success(), "{path}: {}", text(&want.stderr));
            assert!(got.status.success(), "{path}: {}", text(&got.stderr));
            assert!(want.stdout.len() > 40, "{path}: {}", text(&want.stdout));
            assert!(
                want.stdout == got.stdout,
                "{path} at {at}:\n{}\n{}",
                text(&want.stdout),
                text(&got.stdout)
            );
        }
        // A paged list's continue token from one serves the next page from the other.
        let page: Value = serde_json::from_slice(
            &one.run(&["get", "--raw", "/apis/apps/v1/replicasets?limit=1"])
                .stdout,
        )
        .unwrap();
        let token = page["metadata"]["continue"].as_str().unwrap().to_owned();
        let next = format!("/apis/apps/v1/replicasets?limit=1&continue={token}");
        assert_eq!(
            one.run(&["get", "--raw", &next]).stdout,
            split.run(&["get", "--raw", &next]).stdout
        );
    }
}

#[test]
fn serve_dir_refuses_files_that_are_not_one_history() {
    let dir = split_into(2);
    // The second file again, as if recorded over the first.
    let files: Vec<PathBuf> = {
        let mut f: Vec<PathBuf> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        f.sort();
        f
    };
    let mut h = Reader::new(std::fs::File::open(&files[1]).unwrap())
        .unwrap()
        .header()
        .clone();
    h.started_at = Reader::new(std::fs::File::open(&files[0]).unwrap())
        .unwrap()
        .header()
        .started_at;
    let w = rf_format::Writer::new(
        std::fs::File::create(dir.path().join("recorder-002.rfr")).unwrap(),
        &h,
    )
    .unwrap();
    w.finish_at(h.started_at).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["serve"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("are not one history"),
        "{}",
        text(&o.stderr)
    );
}

/// The postmortem author's evidence: `kubectl get events -A -o json` of the cluster the seed
/// incident left, imported with `--from events` and analyzed. The Events alone explain the
/// restart and the lost pause, marked as reconstructed.
#[test]
fn issue_47_kubectl_events_exported_and_imported_explain_the_seed_incident() {
    require_kubectl();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../recordings/real/seed-rerender-at-pause.rfr");
    let s = serve_path(&seed, &[]);
    let o = s.run(&["get", "events", "-A", "-o", "json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let export = s.dir.path().join("events.json");
    std::fs::write(&export, &o.stdout).unwrap();
    let imported = s.dir.path().join("events.rfr");
    let o = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["import", "--from", "events"])
        .arg(&export)
        .arg("-o")
        .arg(&imported)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o.stderr));
    let o = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["analyze", "-o", "json"])
        .arg(&imported)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
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
    // The wrong importer for the file says which one to use.
    let o = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["import", "--from", "audit-log"])
        .arg(&export)
        .arg("-o")
        .arg(s.dir.path().join("x.rfr"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("--from events"),
        "{}",
        text(&o.stderr)
    );
}
