//! `rollout-forensics record` end to end: the real binary records from a real HTTP API server on
//! loopback, either `rollout-forensics serve` replaying a known recording (so the whole history
//! the recorder should capture is known) or a tiny fake server in this file (for answers a
//! recording cannot give, such as 403 Forbidden). Every child process is killed on every path
//! and every wait is bounded.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rf_format::{End, Header, Kind, Op, Reader, Record, Redaction, Source, Timestamp, Writer};

mod common;

use common::{Killed, bin, drain, recording, run_bounded, serve, text, wait_bounded};
use serde_json::{Value, json};

/// `record --kubeconfig K ARGS...`, run to completion.
fn record(home: &Path, kubeconfig: &Path, args: &[&str]) -> Output {
    let mut c = bin(home);
    c.arg("record")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args);
    run_bounded(c)
}

/// Every record of a recording that must read cleanly to its trailer.
fn read_closed(path: &Path) -> (Header, Vec<Record>) {
    let mut r = Reader::new(std::fs::File::open(path).unwrap()).unwrap();
    let records: Vec<Record> = (&mut r).map(Result::unwrap).collect();
    assert_eq!(r.end(), Some(End::Closed), "{} is closed", path.display());
    let trailer = r.trailer().expect("a closed recording has a trailer");
    assert_eq!(trailer.records, records.len() as u64);
    (r.header().clone(), records)
}

/// Per (kind, namespace, name): the sequence of (op, object) of records that carry an object.
type History = BTreeMap<(Kind, String, String), Vec<(&'static str, Value)>>;

fn history(records: &[Record]) -> History {
    let mut h = History::new();
    for r in records.iter().filter(|r| r.op.has_object()) {
        h.entry((r.kind.clone(), r.namespace.clone(), r.name.clone()))
            .or_default()
            .push((r.op.name(), serde_json::from_slice(&r.object).unwrap()));
    }
    h
}

/// 2026-03-14T13:00:00Z.
const T0: Timestamp = Timestamp::from_unix_seconds(1_773_493_200);

/// A closed recording holding one list (in namespace payments) of `objects`, all of `kind`.
fn write_list_recording(path: &Path, kind: Kind, objects: &[Value], redaction: Redaction) {
    write_lists_recording(path, &[(kind, objects)], redaction);
}

/// A closed recording holding one list (in namespace payments) of each kind, of its objects.
fn write_lists_recording(path: &Path, lists: &[(Kind, &[Value])], redaction: Redaction) {
    let mut header = Header::new(
        "record-test",
        T0,
        Source {
            context: Some("record-test".to_owned()),
            server: None,
            namespaces: vec!["payments".to_owned()],
            label_selector: None,
            kinds: lists.iter().map(|(k, _)| k.clone()).collect(),
        },
    );
    header.redaction = redaction;
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    let mut seq = 0;
    let mut put = |w: &mut Writer<std::fs::File>, kind: &Kind, op: Op, object: Option<&Value>| {
        seq += 1;
        let meta = |k: &str| {
            object
                .and_then(|o| o["metadata"][k].as_str())
                .unwrap_or_default()
                .to_owned()
        };
        w.write(&Record {
            seq,
            observed_at: T0.plus_nanos(i64::try_from(seq).unwrap() * 1_000_000),
            kind: kind.clone(),
            op: op.clone(),
            namespace: "payments".to_owned(),
            name: meta("name"),
            uid: meta("uid"),
            resource_version: if op == Op::ListEnd {
                "10".to_owned()
            } else {
                meta("resourceVersion")
            },
            actor: None,
            object: object
                .map(|o| serde_json::to_vec(o).unwrap())
                .unwrap_or_default(),
        })
        .unwrap();
    };
    for (kind, objects) in lists {
        put(&mut w, kind, Op::ListBegin, None);
        for o in *objects {
            put(&mut w, kind, Op::Listed, Some(o));
        }
        put(&mut w, kind, Op::ListEnd, None);
    }
    w.finish().unwrap();
}

fn replica_set() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "checkout-api-7f79d6c7b9",
            "namespace": "payments",
            "uid": "3c1a9f0e-0000-4000-8000-000000000001",
            "resourceVersion": "7",
            "creationTimestamp": "2026-03-14T12:00:00Z",
            "labels": {"app": "checkout-api", "rollouts-pod-template-hash": "7f79d6c7b9"}
        },
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "checkout-api"}},
            "template": {
                "metadata": {"labels": {"app": "checkout-api"}},
                "spec": {"containers": [{"name": "app", "image": "checkout-api:1.0"}]}
            }
        },
        "status": {"replicas": 3, "readyReplicas": 3, "availableReplicas": 3}
    })
}

fn pod_with_a_secret_env_value() -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "checkout-api-7f79d6c7b9-abcde",
            "namespace": "payments",
            "uid": "3c1a9f0e-0000-4000-8000-000000000002",
            "resourceVersion": "8",
            "creationTimestamp": "2026-03-14T12:00:00Z",
            "labels": {"app": "checkout-api"}
        },
        "spec": {
            "containers": [{
                "name": "app",
                "image": "checkout-api:1.0",
                "env": [{"name": "DB_PASSWORD", "value": "hunter2"}]
            }]
        },
        "status": {"phase": "Running"}
    })
}

/// A kubeconfig for an insecure http server, context namespace payments, no credentials.
fn write_kubeconfig(path: &Path, server: &str) {
    std::fs::write(
        path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: test\n  cluster:\n    server: {server}\ncontexts:\n- name: test\n  context:\n    cluster: test\n    user: test\n    namespace: payments\ncurrent-context: test\nusers:\n- name: test\n  user: {{}}\n"
        ),
    )
    .unwrap();
}

#[test]
fn a_served_recording_recorded_again_reads_back_cleanly() {
    let source = recording("rerender-race");
    let s = serve(&source, &["--speed", "max"]);
    let out = s.dir.path().join("again.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "-n",
            "payments",
            "--kinds",
            "rollouts,replicasets,events",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "3s",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("recorded ") && err.contains(" records"),
        "{err}"
    );

    let (header, got) = read_closed(&out);
    assert_eq!(header.source.namespaces, ["payments"]);
    assert_eq!(
        header.source.kinds,
        [Kind::Rollout, Kind::ReplicaSet, Kind::Event]
    );
    for (i, r) in got.iter().enumerate() {
        assert_eq!(r.seq, i as u64 + 1, "seq counts from 1 without holes");
    }
    assert!(
        !got.iter().any(|r| matches!(r.op, Op::Gap { .. })),
        "no gaps"
    );
    let (_, want) = read_closed(&source);
    // Only what was asked for: the recording may hold more kinds and namespaces.
    let want: Vec<Record> = want
        .into_iter()
        .filter(|r| header.source.kinds.contains(&r.kind) && r.namespace == "payments")
        .collect();
    let (got, want) = (history(&got), history(&want));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>(),
        "the same objects"
    );
    for (key, states) in &want {
        assert_eq!(&got[key], states, "the history of {key:?}");
    }
}

#[test]
fn a_recorder_killed_with_sigkill_leaves_every_flushed_record_readable() {
    let s = serve(&recording("rerender-race-reruns"), &["--speed", "60"]);
    let out = s.dir.path().join("killed.rfr");
    let mut child = Killed(
        bin(s.dir.path())
            .arg("record")
            .arg("--kubeconfig")
            .arg(&s.kubeconfig)
            .args([
                "-n",
                "payments",
                "--kinds",
                "rollouts,replicasets,events",
                "--flush-interval",
                "200ms",
                "-o",
                out.to_str().unwrap(),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let err = drain(child.0.stderr.take());
    std::thread::sleep(Duration::from_secs(3));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the recorder is still recording after 3 s"
    );
    child.0.kill().unwrap(); // SIGKILL on unix
    let status = wait_bounded(&mut child, Duration::from_secs(10), "the killed recorder");
    assert!(!status.success());
    let err = text(&err.join().unwrap());

    let mut reader = Reader::new(std::fs::File::open(&out).unwrap())
        .unwrap_or_else(|e| panic!("the header was flushed: {e}; stderr: {err}"));
    let mut records = 0u64;
    let damage = loop {
        match reader.next_record() {
            Ok(Some(_)) => records += 1,
            Ok(None) => break None,
            Err(e) => break Some(e.to_string()),
        }
    };
    assert!(
        records >= 1,
        "the initial lists were flushed; stderr: {err}"
    );
    match &damage {
        None => assert_eq!(reader.end(), Some(End::Unclosed)),
        Some(e) => assert!(e.contains("byte"), "a truncated tail says where: {e}"),
    }

    let path = out.to_str().unwrap();
    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.args(["inspect", path]);
        c
    });
    let (stdout, stderr) = (text(&o.stdout), text(&o.stderr));
    match o.status.code() {
        Some(0) => assert!(
            stdout.contains("unclosed") || stdout.contains("not closed"),
            "{stdout}"
        ),
        Some(2) => assert!(stderr.contains("truncated"), "{stderr}"),
        other => panic!("inspect exited {other:?}: {stdout}{stderr}"),
    }
    assert!(damage.is_some() || o.status.code() == Some(0));

    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.args(["analyze", path, "--partial", "--fail-on", "never"]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn an_unreachable_server_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    write_kubeconfig(&kubeconfig, "http://127.0.0.1:1");
    let out = dir.path().join("out.rfr");
    let started = Instant::now();
    let o = record(
        dir.path(),
        &kubeconfig,
        &["-o", out.to_str().unwrap(), "--duration", "2s"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "gave up within 30 s"
    );
    assert!(err.contains("cannot talk to the API server"), "{err}");
    assert!(
        err.contains("127.0.0.1:1"),
        "the error names the server: {err}"
    );
    assert!(!out.exists(), "no half-made recording is left behind");
}

#[test]
fn a_cluster_without_argo_rollouts_is_recorded_without_rollouts_unless_they_are_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    // A server of the core kinds only, as a cluster without Argo Rollouts serves them.
    let only_rs = dir.path().join("only-rs.rfr");
    write_lists_recording(
        &only_rs,
        &[
            (Kind::ReplicaSet, &[replica_set()][..]),
            (Kind::Service, &[][..]),
            (Kind::EndpointSlice, &[][..]),
            (Kind::Pod, &[][..]),
            (Kind::Event, &[][..]),
        ],
        Redaction::EnvValueDigests,
    );
    let s = serve(&only_rs, &[]);
    let out = s.dir.path().join("out.rfr");
    // Asked for by name, Rollouts must be served: a clear error, and no file.
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--kinds",
            "rollouts,replicasets",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "2s",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("rollouts.argoproj.io"), "{err}");
    assert!(err.contains("Argo Rollouts"), "{err}");
    assert!(!out.exists(), "no half-made recording is left behind");

    // By default, a cluster that does not serve them (plain Deployments) is recorded without
    // them, and the recording says so.
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &["-o", out.to_str().unwrap(), "--duration", "2s"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.contains("not served, skipped") && l.contains("Rollout")),
        "{err}"
    );
    let (header, records) = read_closed(&out);
    assert!(
        header
            .notes
            .get("not-served")
            .is_some_and(|n| n.split(',').any(|k| k == "Rollout")),
        "{:?}",
        header.notes
    );
    assert!(
        records
            .iter()
            .any(|r| r.kind == Kind::ReplicaSet && r.op == Op::Listed)
    );

    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--kinds",
            "replicasets",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "2s",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (_, records) = read_closed(&out);
    let listed: Vec<&Record> = records.iter().filter(|r| r.op == Op::Listed).collect();
    assert_eq!(listed.len(), 1, "{records:?}");
    assert_eq!(listed[0].name, "checkout-api-7f79d6c7b9");
    assert_eq!(listed[0].kind, Kind::ReplicaSet);
}

/// A fake API server on loopback: discovery says rollouts and replicasets are served, every
/// list of them is 403 Forbidden. Stops when dropped.
struct FakeApi {
    url: String,
    paths: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for FakeApi {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

const FORBIDDEN: &str = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"rollouts.argoproj.io is forbidden: User \"x\" cannot list resource","reason":"Forbidden","code":403}"#;

fn fake_answer(path: &str) -> (&'static str, String) {
    match path {
        "/apis/argoproj.io/v1alpha1" => (
            "200 OK",
            json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "argoproj.io/v1alpha1",
                "resources": [{"name": "rollouts", "singularName": "rollout", "namespaced": true,
                               "kind": "Rollout", "verbs": ["get", "list", "watch"]}]
            })
            .to_string(),
        ),
        "/apis/apps/v1" => (
            "200 OK",
            json!({
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": "apps/v1",
                "resources": [{"name": "replicasets", "singularName": "replicaset", "namespaced": true,
                               "kind": "ReplicaSet", "verbs": ["get", "list", "watch"]}]
            })
            .to_string(),
        ),
        p if p.contains("/rollouts") || p.contains("/replicasets") => {
            ("403 Forbidden", FORBIDDEN.to_owned())
        }
        _ => (
            "404 Not Found",
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server could not find the requested resource",
                   "reason": "NotFound", "code": 404})
            .to_string(),
        ),
    }
}

fn fake_handle(mut stream: TcpStream, paths: &Mutex<Vec<String>>) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 64 * 1024 {
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let request = text(&request);
    let target = request.split_whitespace().nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or(target).to_owned();
    let (status, body) = fake_answer(&path);
    paths.lock().unwrap().push(path);
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

fn fake_api() -> FakeApi {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let paths = Arc::new(Mutex::new(Vec::new()));
    let thread = {
        let (stop, paths) = (Arc::clone(&stop), Arc::clone(&paths));
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => fake_handle(stream, &paths),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(_) => return,
                }
            }
        })
    };
    FakeApi {
        url,
        paths,
        stop,
        thread: Some(thread),
    }
}

#[test]
fn forbidden_names_verb_resource_and_rbac_file() {
    let api = fake_api();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    write_kubeconfig(&kubeconfig, &api.url);
    let out = dir.path().join("out.rfr");
    let o = record(
        dir.path(),
        &kubeconfig,
        &[
            "--kinds",
            "rollouts,replicasets",
            "-n",
            "payments",
            "-o",
            out.to_str().unwrap(),
            "--duration",
            "5s",
        ],
    );
    let err = text(&o.stderr);
    let paths = api.paths.lock().unwrap().clone();
    assert_eq!(o.status.code(), Some(2), "{err}\nrequests: {paths:?}");
    for needle in [
        "forbidden",
        "list",
        "rollouts.argoproj.io",
        "in namespace payments",
        "deploy/rbac.yaml",
    ] {
        assert!(err.contains(needle), "missing {needle:?}: {err}");
    }
    assert!(
        paths
            .iter()
            .any(|p| p.ends_with("/namespaces/payments/rollouts")
                || p.ends_with("/namespaces/payments/replicasets")),
        "the recorder listed: {paths:?}"
    );
    assert!(!out.exists(), "no half-made recording is left behind");
}

#[test]
fn an_unwritable_output_is_a_clear_error() {
    let s = serve(&recording("rerender-race"), &[]);
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--kinds",
            "rollouts",
            "-o",
            "/nonexistent-dir/out.rfr",
            "--duration",
            "2s",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("cannot write the recording"), "{err}");
    assert!(err.contains("/nonexistent-dir/out.rfr"), "{err}");
}

#[test]
fn env_values_are_digested_unless_no_redact() {
    let dir = tempfile::tempdir().unwrap();
    let pods = dir.path().join("pods.rfr");
    write_list_recording(
        &pods,
        Kind::Pod,
        &[pod_with_a_secret_env_value()],
        Redaction::Disabled,
    );
    let s = serve(&pods, &[]);
    let objects = |path: &Path| -> (Header, Vec<String>) {
        let (header, records) = read_closed(path);
        let objects: Vec<String> = records
            .iter()
            .filter(|r| r.op.has_object())
            .map(|r| text(&r.object))
            .collect();
        assert_eq!(objects.len(), 1, "the one pod: {records:?}");
        (header, objects)
    };

    let redacted = s.dir.path().join("redacted.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--kinds",
            "pods",
            "-o",
            redacted.to_str().unwrap(),
            "--duration",
            "2s",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (header, objects_redacted) = objects(&redacted);
    assert_eq!(header.redaction, Redaction::EnvValueDigests);
    for object in &objects_redacted {
        assert!(!object.contains("hunter2"), "{object}");
        assert!(object.contains("sha256:"), "{object}");
        let v: Value = serde_json::from_str(object).unwrap();
        let env = &v["spec"]["containers"][0]["env"][0];
        assert_eq!(env["name"], "DB_PASSWORD");
        assert_eq!(env["value"], rf_recorder::digest("hunter2"));
    }

    let plain = s.dir.path().join("plain.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--kinds",
            "pods",
            "--no-redact",
            "-o",
            plain.to_str().unwrap(),
            "--duration",
            "2s",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let (header, objects_plain) = objects(&plain);
    assert_eq!(header.redaction, Redaction::Disabled);
    for object in &objects_plain {
        let v: Value = serde_json::from_str(object).unwrap();
        assert_eq!(v["spec"]["containers"][0]["env"][0]["value"], "hunter2");
    }
}

#[test]
fn bad_flags_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.rfr");
    let out = out.to_str().unwrap();
    let run = |args: &[&str]| {
        let mut c = bin(dir.path());
        c.args(["record", "-o", out]).args(args);
        run_bounded(c)
    };

    let o = run(&["--kinds", "configmaps"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("configmaps"), "{err}");
    for kind in rf_recorder::KIND_NAMES {
        assert!(err.contains(kind), "every known kind is named: {err}");
    }

    let o = run(&["--flush-interval", "0s"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--flush-interval"), "{err}");

    let o = run(&["--duration", "soon"]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("--duration"), "{err}");

    assert!(!Path::new(out).exists(), "nothing was written");
}

#[test]
fn sigint_and_sigterm_close_the_recording_cleanly_with_a_summary() {
    for signal in ["-INT", "-TERM"] {
        let s = serve(&recording("rerender-race"), &["--speed", "1"]);
        let out = s.dir.path().join(format!("stopped{signal}.rfr"));
        let mut child = Killed(
            bin(s.dir.path())
                .arg("record")
                .arg("--kubeconfig")
                .arg(&s.kubeconfig)
                .args([
                    "-n",
                    "payments",
                    "--kinds",
                    "rollouts,replicasets,events",
                    "-o",
                ])
                .arg(&out)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        );
        let err = drain(child.0.stderr.take());
        std::thread::sleep(Duration::from_millis(1500));
        common::signal(&child, signal);
        let status = wait_bounded(&mut child, Duration::from_secs(10), "the stopped recorder");
        let err = text(&err.join().unwrap());
        assert_eq!(status.code(), Some(0), "{signal}: {err}");
        assert!(err.contains("recorded "), "{signal}: the summary: {err}");
        let (_, records) = read_closed(&out);
        assert!(!records.is_empty(), "{signal}");
    }
}

#[test]
fn no_kubeconfig_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.rfr");
    let o = run_bounded({
        let mut c = bin(dir.path());
        c.args(["record", "-o"])
            .arg(&out)
            .args(["--duration", "1s"]);
        c
    });
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("no kubeconfig found"), "{err}");
    assert!(err.contains("--kubeconfig"), "says how to fix it: {err}");
    assert!(!out.exists());
}

#[test]
fn record_live_prints_the_findings_that_analyze_finds_in_the_file() {
    let s = serve(&recording("rerender-race"), &["--speed", "max"]);
    let out = s.dir.path().join("live.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "--live",
            "-n",
            "payments",
            "--kinds",
            "rollouts,replicasets,events",
            "--duration",
            "3s",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // Live lines: "HH:MM:SS SEVERITY rule ns/name: summary; run: command".
    let mut live: Vec<(String, String)> = err
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (_time, sev, rule, subject) = (w.next()?, w.next()?, w.next()?, w.next()?);
            matches!(sev, "ERROR" | "WARNING" | "INFO").then(|| {
                let name = subject
                    .trim_end_matches(':')
                    .rsplit('/')
                    .next()
                    .unwrap_or("");
                (rule.to_owned(), name.to_owned())
            })
        })
        .collect();
    live.sort();
    let analyzed = Command::new(env!("CARGO_BIN_EXE_rollout-forensics"))
        .args(["analyze", out.to_str().unwrap(), "-o", "json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    let mut expected = common::findings(&report);
    expected.sort();
    assert_eq!(live, expected, "{err}");
    let rules: Vec<&str> = live.iter().map(|(r, _)| r.as_str()).collect();
    for rule in [
        "rerender-restart",
        "pause-lost",
        "config-only-rerender",
        "orphaned-replicaset",
    ] {
        assert!(rules.contains(&rule), "{rule} missing live: {err}");
    }
}

/// Seconds since midnight UTC, now.
fn utc_time_of_day() -> f64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    now % 86_400.0
}

#[test]
fn issue_24_live_findings_print_when_they_become_true_not_when_recording_stops() {
    // At speed 20 the race's second render comes about 2 s in and its last record 0.5 s
    // later. double-render then waits (in the recorder's time) up to 30 s for the
    // Application's history to name the render's revision, which it never does here: the
    // served history is dated March, the recorder's clock today. Recording goes on for 45 s:
    // each finding must print within its own wait of its time, before the recorder stops.
    let s = serve(&recording("rerender-race"), &["--speed", "20"]);
    let out = s.dir.path().join("live.rfr");
    let mut child = Killed(
        bin(s.dir.path())
            .arg("record")
            .arg("--kubeconfig")
            .arg(&s.kubeconfig)
            .args([
                "--live",
                "-n",
                "payments",
                "-n",
                "argocd",
                "--duration",
                "45s",
                "-o",
            ])
            .arg(&out)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let stderr = child.0.stderr.take().unwrap();
    let lines = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut got = Vec::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            got.push((utc_time_of_day(), line));
        }
        got
    });
    let started = utc_time_of_day();
    let status = wait_bounded(&mut child, Duration::from_secs(90), "record --live");
    let lines = lines.join().unwrap();
    let all: String = lines.iter().map(|(_, l)| format!("{l}\n")).collect();
    assert_eq!(status.code(), Some(0), "{all}");
    let mut rules = Vec::new();
    for (printed, line) in &lines {
        let mut w = line.trim_start_matches("\r\x1b[K").split_whitespace();
        let (Some(time), Some(sev), Some(rule)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        if !matches!(sev, "ERROR" | "WARNING" | "INFO") {
            continue;
        }
        let hms: Vec<f64> = time.split(':').map(|p| p.parse().unwrap()).collect();
        let at = hms[0] * 3600.0 + hms[1] * 60.0 + hms[2];
        // Whole seconds in the line: up to 1 s more than the real lateness.
        let late = (printed - at).rem_euclid(86_400.0);
        // double-render waits 30 s for the Application's history; every other finding is
        // true when its record arrives, or (the end-of-recording ones) once it is decided.
        let allowed = if rule == "double-render" {
            30.0 + 4.0
        } else {
            4.0
        };
        assert!(
            late <= allowed,
            "{rule} printed {late:.1} s after its time {time} (allowed {allowed} s):\n{all}"
        );
        // An end-of-recording finding (the first render's ReplicaSet left running) is decided
        // once its grace period is over, while recording goes on: a flight recorder never
        // stops, so it must not wait for the close.
        if rule == "double-render" || rule == "orphaned-replicaset" {
            assert!(
                printed - started < 40.0,
                "{rule} printed {:.1} s after the start, at the stop:\n{all}",
                printed - started
            );
        }
        rules.push(rule.to_owned());
    }
    for rule in [
        "rerender-restart",
        "pause-lost",
        "double-render",
        "orphaned-replicaset",
    ] {
        assert!(
            rules.iter().any(|r| r == rule),
            "{rule} missing live:\n{all}"
        );
    }
}

#[test]
fn issue_24_record_warns_of_a_namespace_that_does_not_exist_and_goes_on() {
    let s = serve(&recording("rerender-race"), &["--speed", "max"]);
    let out = s.dir.path().join("typo.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "-n",
            "paymnets",
            "-n",
            "payments",
            "--duration",
            "2s",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning: namespace \"paymnets\" does not exist: nothing is recorded from it until it is created (recording goes on)"),
        "{err}"
    );
    assert!(!err.contains("namespace \"payments\""), "{err}");
    // It says what it records and where, as it starts.
    assert!(
        err.contains(&format!(
            "recording namespaces paymnets, payments to {}; for 2s, or until Ctrl-C",
            out.display()
        )),
        "{err}"
    );
    let (_, records) = read_closed(&out);
    assert!(records.iter().any(|r| r.namespace == "payments"));
    // The report counts each kind's records as the recorder's summary does: the objects'
    // records, not the lists' bookkeeping (kinds listed with nothing in them count 0).
    let per_kind = err
        .lines()
        .find_map(|l| l.trim().strip_prefix("per kind: "))
        .unwrap_or_else(|| panic!("the summary counts per kind: {err}"));
    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.arg("analyze").arg(&out).args(["-o", "json"]);
        c
    });
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let counted: Vec<String> = report["recording"]["by_kind"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    let mut said: Vec<&str> = per_kind.split(", ").collect();
    said.sort_unstable();
    assert_eq!(said, counted, "{err}");
    // Its report says nothing was recorded from the namespace that did not exist.
    let analyze = |file: &Path| {
        let o = run_bounded({
            let mut c = bin(s.dir.path());
            c.arg("analyze").arg(file);
            c
        });
        text(&o.stdout)
    };
    let report = analyze(&out);
    assert!(
        report.contains("nothing was recorded from namespace paymnets: it did not exist or held none of the recorded kinds"),
        "{report}"
    );
    // A recording of that namespace alone holds no evidence, and says so, not "No findings".
    let typo = s.dir.path().join("only-typo.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "-n",
            "paymnets",
            "--duration",
            "1s",
            "-o",
            typo.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let report = analyze(&typo);
    assert!(
        report.contains("No findings, and no evidence: the recording holds no object at all"),
        "{report}"
    );
    assert!(!report.contains("No findings:"), "{report}");
}

#[test]
fn record_without_output_says_to_use_watch() {
    let dir = tempfile::tempdir().unwrap();
    let o = run_bounded({
        let mut c = bin(dir.path());
        c.args(["record", "--duration", "1s"]);
        c
    });
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("watch"), "{}", text(&o.stderr));
}

/// Runs `wait` against a served recording; returns (exit code, stdout).
fn wait_on(name: &str, extra: &[&str]) -> (Option<i32>, String, String) {
    let s = serve(&recording(name), &["--speed", "max"]);
    let mut c = bin(s.dir.path());
    c.args(["wait", "checkout-api", "-n", "payments", "--kubeconfig"])
        .arg(&s.kubeconfig)
        .args(extra);
    let o = run_bounded(c);
    (o.status.code(), text(&o.stdout), text(&o.stderr))
}

#[test]
fn wait_succeeds_resets_on_a_rerender_and_fails_fast_with_distinct_codes() {
    let common = ["--for", "healthy", "--new-revision", "--timeout", "2s"];
    let (code, out, err) = wait_on("image-only-release", &common);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("healthy reached"), "{out}");
    // Its log says what it waits for, and each state it saw, as a pipeline's log shows them.
    assert!(
        err.contains("waiting for payments/checkout-api: healthy on a new revision (not the stable one, or made after the wait started), timeout 2s"),
        "{err}"
    );
    assert!(
        err.contains("payments/checkout-api: Healthy at step") && err.contains("(stable)"),
        "{err}"
    );
    assert!(err.contains("(new)"), "{err}");

    let (code, out, err) = wait_on("rerender-race", &common);
    assert_eq!(code, Some(3), "times out: {out}{err}");
    assert!(
        out.contains("a re-render, not a failure; the timer starts again"),
        "{out}"
    );
    assert!(
        out.contains("last state: Paused at step 1/6"),
        "names the last state: {out}"
    );

    let (code, out, err) = wait_on("abort", &common);
    assert_eq!(code, Some(4), "{out}{err}");
    assert!(out.contains("aborted"), "{out}");

    let mut churn = common.to_vec();
    churn.extend(["--max-restarts", "2", "-o", "json"]);
    let (code, out, err) = wait_on("rerender-race-reruns", &churn);
    assert_eq!(code, Some(6), "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "restart-churn");
    assert_eq!(v["last"]["restarts"], 3);

    let (code, out, err) = wait_on(
        "rerender-race",
        &["--for", "pause", "--new-revision", "--timeout", "2s"],
    );
    assert_eq!(code, Some(0), "a paused canary is success: {out}{err}");
}

#[test]
fn issue_24_wait_on_a_rollout_that_does_not_exist_says_so_at_once() {
    let s = serve(&recording("rerender-race"), &["--speed", "max"]);
    let mut c = bin(s.dir.path());
    c.args(["wait", "checkout-apu", "-n", "payments", "--for", "pause"])
        .args(["--timeout", "5m", "--kubeconfig"])
        .arg(&s.kubeconfig);
    let begun = Instant::now();
    let o = run_bounded(c);
    let took = begun.elapsed();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{}{err}", text(&o.stdout));
    assert_eq!(
        err.trim().lines().last().unwrap_or_default(),
        "error: no rollout payments/checkout-apu: it was not in the list of the namespace's rollouts, and was not created in the 10s after it; rollouts in payments, nearest first: checkout-api"
    );
    assert!(text(&o.stdout).is_empty(), "{}", text(&o.stdout));
    // Its 10 s wait for a creation, not the 5 m timeout.
    assert!(took < Duration::from_secs(40), "took {took:?}");
}

#[test]
fn wait_interrupted_before_an_answer_exits_130_and_says_so() {
    // Served as it ends, paused at step 1, the rollout stays so: a wait for Healthy has no
    // answer until it is stopped.
    let s = serve(&recording("rerender-race"), &[]);
    let mut child = Killed(
        bin(s.dir.path())
            .args(["wait", "checkout-api", "-n", "payments", "--for", "healthy"])
            .args(["--timeout", "5m", "--kubeconfig"])
            .arg(&s.kubeconfig)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let out = drain(child.0.stdout.take());
    let err = drain(child.0.stderr.take());
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the wait ended before it was interrupted"
    );
    common::signal(&child, "-INT");
    let status = wait_bounded(&mut child, Duration::from_secs(10), "the interrupted wait");
    let (out, err) = (text(&out.join().unwrap()), text(&err.join().unwrap()));
    assert_eq!(status.code(), Some(130), "{out}{err}");
    assert!(
        err.contains("wait interrupted before healthy held for checkout-api"),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
}

#[test]
fn wait_records_what_it_watched_when_asked() {
    let s = serve(&recording("abort"), &["--speed", "max"]);
    let evidence = s.dir.path().join("wait.rfr");
    let mut c = bin(s.dir.path());
    c.args([
        "wait",
        "checkout-api",
        "-n",
        "payments",
        "--for",
        "healthy",
        "--new-revision",
    ])
    .args(["--timeout", "2s", "--kubeconfig"])
    .arg(&s.kubeconfig)
    .arg("--record")
    .arg(&evidence);
    let o = run_bounded(c);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stdout));
    let (_, records) = read_closed(&evidence);
    assert!(
        records.iter().any(|r| r.kind == Kind::Rollout),
        "the evidence holds the rollout"
    );
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut n: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn a_flight_recorder_rotates_keeps_the_newest_files_and_analyze_reads_the_directory() {
    let s = serve(&recording("rerender-race-reruns"), &["--speed", "100"]);
    let dir = s.dir.path().join("flight");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "-n",
            "payments",
            "--kinds",
            "rollouts,replicasets,events",
            "--flush-interval",
            "200ms",
            "--rotate",
            "2s",
            "--keep",
            "2",
            "--dir",
            dir.to_str().unwrap(),
            "--duration",
            "7s",
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("files in"),
        "the summary counts the files: {err}"
    );
    // 7 s at 2 s a file: four or five files were written, the two newest are kept.
    let names = names_in(&dir);
    assert_eq!(names.len(), 2, "{names:?}");
    for n in &names {
        assert!(rf_recorder::parse_file_name(n).is_some(), "{n}");
    }
    let files: Vec<(Header, Vec<Record>)> =
        names.iter().map(|n| read_closed(&dir.join(n))).collect();
    for (n, (header, records)) in names.iter().zip(&files) {
        assert!(header.notes.contains_key("leading-lists"), "{n}");
        // Standing alone: a list of each watch first.
        let kinds: Vec<&Kind> = records
            .iter()
            .filter(|r| r.op == Op::ListBegin)
            .map(|r| &r.kind)
            .take(3)
            .collect();
        assert_eq!(
            kinds,
            [&Kind::Rollout, &Kind::ReplicaSet, &Kind::Event],
            "{n}"
        );
        assert_eq!(records[0].op, Op::ListBegin, "{n}");
    }
    let path = dir.to_str().unwrap();
    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.args(["analyze", path, "-o", "json", "--fail-on", "never"]);
        c
    });
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rec = &report["recording"];
    assert_eq!(rec["files"].as_array().unwrap().len(), 2);
    assert_eq!(rec["gaps"], json!([]), "consecutive files leave no gap");
    assert_eq!(rec["complete"], json!(true));
}

/// A closed recording of one rollout listed at `start`, closed at `start + 10 s`.
fn write_quiet_recording(path: &Path, start: Timestamp) {
    let header = Header::new(
        "record-test",
        start,
        Source {
            namespaces: vec!["payments".to_owned()],
            kinds: vec![Kind::Rollout],
            ..Source::default()
        },
    );
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    for (seq, op) in [(1, Op::ListBegin), (2, Op::ListEnd)] {
        w.write(&Record {
            seq,
            observed_at: start,
            kind: Kind::Rollout,
            op,
            namespace: "payments".to_owned(),
            name: String::new(),
            uid: String::new(),
            resource_version: "1".to_owned(),
            actor: None,
            object: Vec::new(),
        })
        .unwrap();
    }
    w.finish_at(start.plus_nanos(10_000_000_000)).unwrap();
}

#[test]
fn analyze_dir_reads_files_in_name_order_and_reports_the_holes_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // 13:00:00 .. 13:00:10, then 13:00:10 (no hole), then 13:05:00 (a hole of 4m40s).
    write_quiet_recording(&d.join("rf-20260314T130000Z.rfr"), T0);
    write_quiet_recording(
        &d.join("rf-20260314T130010Z.rfr"),
        T0.plus_nanos(10_000_000_000),
    );
    write_quiet_recording(
        &d.join("rf-20260314T130500Z.rfr"),
        T0.plus_nanos(300_000_000_000),
    );
    // Being written: skipped unless named.
    write_quiet_recording(
        &d.join("rf-20260314T131000Z.rfr.partial"),
        T0.plus_nanos(600_000_000_000),
    );
    std::fs::write(d.join("README"), "not a recording").unwrap();
    let analyze = |args: &[&str]| {
        let mut c = bin(d);
        c.arg("analyze").args(args).args(["--fail-on", "never"]);
        run_bounded(c)
    };
    let path = d.to_str().unwrap();
    let o = analyze(&[path]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("skipped") && err.contains(".partial"), "{err}");
    assert!(out.contains("1 gap"), "{out}");
    assert!(
        out.contains(
            "nothing was recorded between rf-20260314T130010Z.rfr (until 2026-03-14T13:00:20Z) and rf-20260314T130500Z.rfr (from 2026-03-14T13:05:00Z): 4m40s"
        ),
        "{out}"
    );

    let o = analyze(&[path, "-o", "json"]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rec = &report["recording"];
    let files: Vec<&str> = rec["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 3);
    assert!(files[0].ends_with("rf-20260314T130000Z.rfr"), "{files:?}");
    assert!(files[2].ends_with("rf-20260314T130500Z.rfr"), "{files:?}");
    let gaps = rec["gaps"].as_array().unwrap();
    assert_eq!(gaps.len(), 1, "{gaps:?}");
    assert_eq!(gaps[0]["file"], json!(2));
    assert_eq!(gaps[0]["at"], json!("2026-03-14T13:05:00Z"));
    assert_eq!(rec["complete"], json!(false));

    // Named, the file being written is read too (and is not a duplicate of the directory's).
    let partial = d.join("rf-20260314T131000Z.rfr.partial");
    let first = d.join("rf-20260314T130000Z.rfr");
    let o = analyze(&[
        path,
        partial.to_str().unwrap(),
        first.to_str().unwrap(),
        "-o",
        "json",
    ]);
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["recording"]["files"].as_array().unwrap().len(), 4);
    assert_eq!(report["recording"]["gaps"].as_array().unwrap().len(), 2);

    // An empty directory is an input error.
    let empty = d.join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = analyze(&[empty.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("no recordings"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn rotation_flags_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["record", "--dir", "x"][..], "--rotate"),
        (&["record", "--rotate", "1h", "-o", "x.rfr"][..], "--dir"),
        (
            &["record", "--dir", "x", "--rotate", "500ms"][..],
            "whole number of seconds",
        ),
        (
            &["record", "--dir", "x", "--rotate", "1h", "--keep", "0"][..],
            "--keep",
        ),
        (
            &["record", "--dir", "x", "--rotate", "1h", "-o", "y.rfr"][..],
            "cannot be used",
        ),
    ] {
        let o = run_bounded({
            let mut c = bin(dir.path());
            c.args(args);
            c
        });
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            text(&o.stderr).contains(want),
            "{args:?}: {}",
            text(&o.stderr)
        );
    }
}

/// The cluster as the on-call finds it after the seed incident (its recording served at its
/// end), recorded for a moment and analyzed: no all-clear for the history before the
/// recording, and the restart reconstructed from the Events and ReplicaSets it kept.
#[test]
fn issue_47_a_recording_begun_mid_release_gives_no_all_clear_for_what_came_before() {
    let s = serve(&recording("real/seed-rerender-at-pause"), &[]);
    let out = s.dir.path().join("after.rfr");
    let o = record(
        s.dir.path(),
        &s.kubeconfig,
        &[
            "-n",
            "seed",
            "--duration",
            "2s",
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.arg("analyze").arg(&out);
        c
    });
    let report = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{report}");
    assert!(
        report.contains(
            "before the recording: rollout seed/checkout-api was in the middle of a release"
        ),
        "{report}"
    );
    for want in [
        "error      rerender-restart       canary restarted at step 0 (reconstructed)",
        "error      pause-lost             pause lost (reconstructed)",
        "config-only-rerender",
        "double-render",
        "Reconstructed from what the cluster kept:",
        "Event RolloutStepCompleted \"Rollout step 1/4 completed (setWeight: 20)\" (x2",
        "Cannot be known from it:",
    ] {
        assert!(report.contains(want), "{want}: {report}");
    }
    assert!(!report.contains("No findings"), "{report}");
}

/// `now`: one list of the cluster, the report `analyze` gives, exit 1 on the reconstructed
/// restart; `--save` keeps what was read, and `analyze` of it gives the same findings; a
/// rollout that is not there is an error that names the nearest.
#[test]
fn issue_47_now_explains_the_seed_incident_from_what_the_cluster_kept() {
    let s = serve(&recording("real/seed-rerender-at-pause"), &[]);
    let saved = s.dir.path().join("now.rfr");
    let now = |args: &[&str]| {
        run_bounded({
            let mut c = bin(s.dir.path());
            c.arg("now")
                .arg("--kubeconfig")
                .arg(&s.kubeconfig)
                .args(args);
            c
        })
    };
    let o = now(&[
        "checkout-api",
        "-n",
        "seed",
        "--save",
        saved.to_str().unwrap(),
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let mut rules: Vec<String> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            assert!(
                f["reconstructed"]["from"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty()),
                "{f}"
            );
            f["rule"].as_str().unwrap().to_owned()
        })
        .collect();
    rules.sort();
    assert_eq!(
        rules,
        [
            "config-only-rerender",
            "double-render",
            "pause-lost",
            "rerender-restart"
        ],
        "{report}"
    );
    assert!(
        text(&o.stderr).contains("saved what was read to"),
        "{}",
        text(&o.stderr)
    );
    let o = run_bounded({
        let mut c = bin(s.dir.path());
        c.args(["analyze", "-o", "json"]).arg(&saved);
        c
    });
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let again: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(again["findings"], report["findings"]);
    // Every namespace, the table.
    let o = now(&["-A"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("canary restarted at step 0 (reconstructed)"));
    // A typo: exit 2, and the nearest name.
    let o = now(&["checkout-apx", "-n", "seed"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o.stderr).contains("rollout checkout-apx not found in namespace seed; rollouts there, nearest first: checkout-api"),
        "{}",
        text(&o.stderr)
    );
}
