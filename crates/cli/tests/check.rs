//! `rollout-forensics check` end to end, against `rollout-forensics serve` on loopback serving
//! the end state of committed recordings.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{bin, recording, run_bounded, serve, text};
use rf_format::{End, Kind, Op, Reader};
use serde_json::Value;

fn check(kubeconfig: &Path, home: &Path, args: &[&str]) -> std::process::Output {
    let mut c = bin(home);
    c.arg("check")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args);
    run_bounded(c)
}

#[test]
fn check_fails_at_the_end_of_adoption_selector_drift_and_saves_its_evidence() {
    let s = serve(&recording("adoption-selector-drift"), &[]);
    let saved = s.dir.path().join("adoption.rfr");
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("service-selector-mismatch"), "{stdout}");
    assert!(stdout.contains("canary-not-in-endpoints"), "{stdout}");
    assert!(stdout.contains("NOT ADOPTED"), "{stdout}");

    // The snapshot is a complete recording of every kind listed, and analyzes alone.
    let mut reader = Reader::new(std::fs::File::open(&saved).unwrap()).unwrap();
    let mut records = Vec::new();
    while let Some(r) = reader.next_record().unwrap() {
        records.push(r);
    }
    assert_eq!(reader.end(), Some(End::Closed));
    for kind in [
        Kind::Rollout,
        Kind::ReplicaSet,
        Kind::Pod,
        Kind::Service,
        Kind::EndpointSlice,
    ] {
        assert!(
            records
                .iter()
                .any(|r| r.kind == kind && r.op == Op::ListEnd),
            "{kind:?} listed in the snapshot"
        );
    }
    let mut c = bin(s.dir.path());
    c.arg("analyze").arg(&saved).args(["-o", "json"]);
    let analyzed = run_bounded(c);
    let report: Value = serde_json::from_slice(&analyzed.stdout).unwrap();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    // The saved snapshot proves the same on its own (its header says it is one snapshot).
    assert_eq!(analyzed.status.code(), Some(1));
    assert!(rules.contains(&"canary-not-in-endpoints"), "{rules:?}");
    assert!(rules.contains(&"service-selector-mismatch"), "{rules:?}");
}

/// The Service of the stable role left with no ready endpoint (its pods lack the role label)
/// while it takes traffic: `check` fails on the outage, with the window's start.
#[test]
fn issue_48_check_fails_on_a_service_that_takes_traffic_with_no_ready_endpoint() {
    let s = serve(&recording("stale-role-labels"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["adopted"], false);
    let outage: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "no-ready-endpoints")
        .collect();
    assert_eq!(outage.len(), 1, "{v}");
    assert_eq!(outage[0]["subject"]["name"], "checkout-api-stable");
    assert!(outage[0]["window"]["start"].is_string(), "{}", outage[0]);
}

#[test]
fn check_json_names_the_endpoints_by_revision() {
    let s = serve(&recording("adoption-selector-drift"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["adopted"], false);
    let current = v["state"]["current_pod_hash"].as_str().unwrap().to_owned();
    let svc = &v["state"]["services"][0];
    assert_eq!(svc["name"], "checkout-api");
    assert!(svc["endpoints"].get(&current).is_none(), "{svc}");
    assert!(!svc["endpoints"].as_object().unwrap().is_empty(), "{svc}");
}

#[test]
fn check_passes_at_the_end_of_image_only_release() {
    let s = serve(&recording("image-only-release"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments"],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains("adopted"), "{stdout}");

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-version",
            "app=checkout-api",
            "-o",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));

    // The wrong release label: the current revision does not carry it.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-version",
            "app=something-else",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("expected \"something-else\""), "{stdout}");
}

#[test]
fn check_of_a_missing_rollout_or_a_bad_flag_is_an_input_error() {
    let s = serve(&recording("image-only-release"), &[]);
    let out = check(&s.kubeconfig, s.dir.path(), &["nope", "-n", "payments"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("rollout payments/nope not found"),
        "{}",
        text(&out.stderr)
    );
    // A typo is answered with the names there are, nearest first.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["chekout-api", "-n", "payments"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains(
            "rollout payments/chekout-api not found; rollouts in payments, nearest first: checkout-api"
        ),
        "{}",
        text(&out.stderr)
    );

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["checkout-api", "-n", "payments", "--expect-version", "v418"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("LABEL=VALUE"),
        "{}",
        text(&out.stderr)
    );

    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--save",
            "/nonexistent-dir/x.rfr",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(!Path::new("/nonexistent-dir/x.rfr").exists());
}

const NEW_BUILD: &str = "registry.example.com/payments/checkout-api@sha256:ca205c097454920bdcc2145a6048c2745a64def52186e72d0dbc4356b3ab0d4e";
const OTHER_BUILD: &str = "registry.example.com/payments/checkout-api@sha256:a03e43e53accf5efc25193896e1594b0baee0339da8e0aeded63741f5614f286";

#[test]
fn check_expect_image_passes_when_every_ready_pod_runs_the_digest() {
    let s = serve(&recording("image-only-release"), &[]);
    let tagged = NEW_BUILD.replace("@", ":1.42.0@");
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-image",
            &tagged,
            "-o",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stdout));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let images = v["state"]["images"].as_array().unwrap();
    assert_eq!(images.len(), 5, "{images:?}");
    assert!(images.iter().all(|i| i["matches"] == true), "{images:?}");
    assert_eq!(
        v["expect_image"]["repository"],
        "registry.example.com/payments/checkout-api"
    );

    // Another build expected: every pod is named with what it runs.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-image",
            OTHER_BUILD,
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout
            .lines()
            .filter(|l| l.starts_with("error adoption: pod checkout-api-b5d7bdbbc-")
                && l.contains("container checkout-api runs registry.example.com/payments/checkout-api@sha256:ca205c"))
            .count(),
        5,
        "{stdout}"
    );

    // A reference without a digest is refused before anything is listed.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-image",
            "registry.example.com/payments/checkout-api:1.42.0",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("REF@sha256:DIGEST"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn check_expect_image_names_the_pods_a_moved_tag_left_on_another_build() {
    // The tag moved while the revision scaled up: two pods run one build, three another.
    let s = serve(&recording("moved-tag"), &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--expect-image",
            NEW_BUILD,
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let wrong: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("runs registry.example.com/payments/checkout-api@sha256:a03e43"))
        .collect();
    assert_eq!(wrong.len(), 3, "{stdout}");
    for pod in ["4rrjk", "k2dnl", "qklkt"] {
        assert!(
            wrong
                .iter()
                .any(|l| l.contains(&format!("checkout-api-7ff96d7d7b-{pod}"))),
            "{stdout}"
        );
    }
    assert!(stdout.contains("NOT ADOPTED"), "{stdout}");
}

/// An HTTP server on loopback answering every request with `answer(request head)`; its port.
/// It serves until the test process ends.
fn http_server(answer: fn(&str) -> String) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = stream.write_all(answer(&head).as_bytes());
        }
    });
    port
}

/// A response with `status`, extra header lines and `body`.
fn response(status: &str, headers: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// Answers as the front door would: 421 unless the request came for shop.example.com (so
/// `--resolve` is proven to keep the Host header).
fn for_shop(head: &str, ok: String) -> String {
    let host = head
        .lines()
        .find_map(|l| {
            l.strip_prefix("host: ")
                .or_else(|| l.strip_prefix("Host: "))
        })
        .unwrap_or_default();
    if host.starts_with("shop.example.com:") && head.starts_with("GET /api/version HTTP/1.1") {
        ok
    } else {
        response("421 Misdirected Request", "", &format!("not for {host}"))
    }
}

#[test]
fn check_probe_fails_on_an_error_or_the_old_revision_and_passes_on_the_new() {
    let s = serve(&recording("image-only-release"), &[]);
    let broken = http_server(|h| {
        for_shop(
            h,
            response("500 Internal Server Error", "", "upstream connect error"),
        )
    });
    let old = http_server(|h| {
        for_shop(
            h,
            response(
                "200 OK",
                "x-version: 1.41.0\r\n",
                "{\"version\":\"1.41.0\"}",
            ),
        )
    });
    let new = http_server(|h| {
        for_shop(
            h,
            response(
                "200 OK",
                "x-version: 1.42.0\r\n",
                "{\"version\":\"1.42.0\"}",
            ),
        )
    });
    let probe = |port: u16, extra: &[&str]| {
        let url = format!("http://shop.example.com:{port}/api/version");
        let resolve = format!("shop.example.com:{port}:127.0.0.1");
        let mut args = vec![
            "checkout-api",
            "-n",
            "payments",
            "--probe",
            &url,
            "--resolve",
            &resolve,
        ];
        args.extend_from_slice(extra);
        check(&s.kubeconfig, s.dir.path(), &args)
    };

    let out = probe(broken, &["--expect-header", "x-version=1.42.0"]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains(&format!("error adoption: the probe of http://shop.example.com:{broken}/api/version answered 500, not a 2xx status (body: \"upstream connect error\")")), "{stdout}");
    assert!(stdout.contains("NOT ADOPTED"), "{stdout}");

    let out = probe(old, &["--expect-header", "x-version=1.42.0"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("answered x-version: 1.41.0, expected 1.42.0"),
        "{stdout}"
    );
    let out = probe(old, &["--expect-body", "\"version\":\"1.42.0\""]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("answered a body without \"\\\"version\\\":\\\"1.42.0\\\"\""),
        "{stdout}"
    );

    let saved = s.dir.path().join("adopted.rfr");
    let out = probe(
        new,
        &[
            "--expect-header",
            "x-version=1.42.0",
            "--expect-body",
            "1.42.0",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.contains(&format!("probe http://shop.example.com:{new}/api/version at 127.0.0.1:{new}: 200, x-version: 1.42.0")), "{stdout}");
    // The answer is part of the saved evidence.
    let reader = Reader::new(std::fs::File::open(&saved).unwrap()).unwrap();
    let note: Value = serde_json::from_str(&reader.header().notes["probe"]).unwrap();
    assert_eq!(note["status"], 200);
    assert_eq!(
        note["headers"][0],
        serde_json::json!(["x-version", "1.42.0"])
    );

    // And in -o json.
    let out = probe(new, &["--expect-header", "x-version=1.42.0", "-o", "json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["adopted"].clone(), v["probe"]["status"].clone()),
        (Value::Bool(true), Value::from(200))
    );

    // Without --resolve the name does not resolve here: the failure says so, never a pass.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &[
            "checkout-api",
            "-n",
            "payments",
            "--probe",
            "http://shop.example.invalid/",
            "--probe-timeout",
            "5s",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("got no answer"), "{stdout}");

    // A probe that never answers is cut at --probe-timeout.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let out = probe(port, &["--probe-timeout", "1s"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains("no answer within 1s (--probe-timeout)"),
        "{stdout}"
    );
    drop(silent);

    // Flags of the probe without a probe, or a malformed one, are input errors.
    for args in [
        &["checkout-api", "-n", "payments", "--expect-header", "x=1"][..],
        &[
            "checkout-api",
            "-n",
            "payments",
            "--probe",
            "shop.example.com/",
        ][..],
        &[
            "checkout-api",
            "-n",
            "payments",
            "--probe",
            "http://a/",
            "--resolve",
            "b:80:127.0.0.1",
        ][..],
    ] {
        let out = check(&s.kubeconfig, s.dir.path(), args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

/// A closed one-snapshot recording of Deployment `web` in namespace `shop`: revision 1 on
/// ReplicaSet `web-6d4b` and revision 2 on `web-7f9c`, with `new_pods` pods of revision 2
/// (running `digests` in turn) and `old_pods` of revision 1, all ready behind Service `web`.
fn deployment_recording(path: &Path, new_pods: usize, old_pods: usize, digests: &[&str]) {
    use rf_format::{Header, Record, Source, Timestamp, Writer};
    use serde_json::json;
    let t0 = Timestamp::from_unix_seconds(1_780_000_000);
    let labels = |hash: &str| json!({"app": "web", "pod-template-hash": hash});
    let template = |image: &str| {
        json!({"metadata": {"labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": image}]}})
    };
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web", "generation": 2},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": template("registry.example.com/shop/web:2"),
                 "strategy": {"type": "RollingUpdate"}},
        "status": {"observedGeneration": 2, "replicas": new_pods + old_pods, "updatedReplicas": new_pods,
                   "readyReplicas": new_pods + old_pods, "availableReplicas": new_pods + old_pods,
                   "conditions": [{"type": "Progressing", "status": "True",
                                   "reason": if old_pods == 0 { "NewReplicaSetAvailable" } else { "ReplicaSetUpdated" }}]}});
    let rs = |hash: &str, revision: &str, replicas: usize| {
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": format!("web-{hash}"), "namespace": "shop", "uid": format!("uid-{hash}"),
                         "labels": labels(hash),
                         "annotations": {"deployment.kubernetes.io/revision": revision},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                              "uid": "uid-web", "controller": true}]},
            "spec": {"replicas": replicas, "template": template("registry.example.com/shop/web:2")},
            "status": {"replicas": replicas, "readyReplicas": replicas}})
    };
    let pod = |hash: &str, i: usize, digest: &str| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("web-{hash}-{i}"), "namespace": "shop", "uid": format!("uid-{hash}-{i}"),
                         "labels": labels(hash),
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": format!("web-{hash}"),
                                              "uid": format!("uid-{hash}"), "controller": true}]},
            "spec": {"containers": [{"name": "web", "image": "registry.example.com/shop/web:2"}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                       "containerStatuses": [{"name": "web", "image": "registry.example.com/shop/web:2",
                                              "imageID": format!("registry.example.com/shop/web@{digest}"), "ready": true}]}})
    };
    let mut pods = Vec::new();
    for i in 0..new_pods {
        pods.push(pod("7f9c", i, digests[i % digests.len()]));
    }
    for i in 0..old_pods {
        pods.push(pod("6d4b", i, digests[0]));
    }
    let endpoints: Vec<Value> = pods
        .iter()
        .map(|p| {
            json!({"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                        "targetRef": {"kind": "Pod", "name": p["metadata"]["name"]}})
        })
        .collect();
    let lists: Vec<(Kind, Vec<Value>)> = vec![
        (rf_format::api::DEPLOYMENT.newest(), vec![deployment]),
        (
            Kind::ReplicaSet,
            vec![rs("6d4b", "1", old_pods), rs("7f9c", "2", new_pods)],
        ),
        (Kind::Pod, pods),
        (
            Kind::Service,
            vec![json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "web", "namespace": "shop", "uid": "uid-svc"},
            "spec": {"selector": {"app": "web"}}})],
        ),
        (
            Kind::EndpointSlice,
            vec![
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "web-x", "namespace": "shop", "uid": "uid-slice",
                         "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "endpoints": endpoints}),
            ],
        ),
    ];
    let header = Header::new(
        "check-test",
        t0,
        Source {
            context: None,
            server: None,
            namespaces: vec!["shop".to_owned()],
            label_selector: None,
            kinds: lists.iter().map(|(k, _)| k.clone()).collect(),
        },
    );
    let mut w = Writer::new(std::fs::File::create(path).unwrap(), &header).unwrap();
    let mut seq = 0u64;
    for (kind, objects) in &lists {
        let mut put = |op: Op, o: Option<&Value>| {
            seq += 1;
            let meta = |k: &str| {
                o.and_then(|o| o["metadata"][k].as_str())
                    .unwrap_or_default()
                    .to_owned()
            };
            w.write(&Record {
                seq,
                observed_at: t0,
                kind: kind.clone(),
                op,
                namespace: "shop".to_owned(),
                name: meta("name"),
                uid: meta("uid"),
                resource_version: seq.to_string(),
                actor: None,
                object: o
                    .map(|o| serde_json::to_vec(o).unwrap())
                    .unwrap_or_default(),
            })
            .unwrap();
        };
        put(Op::ListBegin, None);
        for o in objects {
            put(Op::Listed, Some(o));
        }
        put(Op::ListEnd, None);
    }
    w.finish_at(t0).unwrap();
}

const WEB_NEW: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const WEB_MOVED: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

#[test]
fn check_verifies_a_plain_deployment_and_its_build() {
    let dir = tempfile::tempdir().unwrap();
    let done = dir.path().join("done.rfr");
    deployment_recording(&done, 3, 0, &[WEB_NEW]);
    let s = serve(&done, &[]);
    let expect = format!("registry.example.com/shop/web:2@{WEB_NEW}");
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["deployment/web", "-n", "shop", "--expect-image", &expect],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.starts_with("deployment shop/web: NewReplicaSetAvailable, RollingUpdate revision 2 on 7f9c (3 of 3 updated, 3 available, 3 pod(s) in all)"),
        "{stdout}"
    );
    assert!(stdout.contains("7f9c: 3 ready endpoint(s)"), "{stdout}");
    assert!(
        stdout.contains("adopted: the Services route to revision 7f9c"),
        "{stdout}"
    );

    // The tag moved under one pod of the same revision.
    let moved = dir.path().join("moved.rfr");
    deployment_recording(&moved, 3, 0, &[WEB_NEW, WEB_NEW, WEB_MOVED]);
    let s = serve(&moved, &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["deploy/web", "-n", "shop", "--expect-image", &expect],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("error adoption: pod web-7f9c-2 of the current revision 7f9c: container web runs registry.example.com/shop/web@{WEB_MOVED}, not {WEB_NEW}")),
        "{stdout}"
    );

    // Half way through the rolling update: old pods still serve, so not adopted yet.
    let rolling = dir.path().join("rolling.rfr");
    deployment_recording(&rolling, 1, 2, &[WEB_NEW]);
    let s = serve(&rolling, &[]);
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["deployment/web", "-n", "shop", "-o", "json"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["state"]["kind"], "Deployment");
    assert_eq!(v["state"]["deployment"]["revision"], 2);
    assert!(
        v["failures"][0].as_str().unwrap().starts_with(
            "Deployment shop/web has not finished rolling out revision 2: 1 of 3 pod(s) updated"
        ),
        "{}",
        v["failures"]
    );
    let endpoints = &v["state"]["services"][0]["endpoints"];
    assert_eq!(
        (
            endpoints["7f9c"].as_array().unwrap().len(),
            endpoints["6d4b"].as_array().unwrap().len()
        ),
        (1, 2)
    );

    // Unknown kinds and missing Deployments are input errors.
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["statefulset/web", "-n", "shop"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("deployment/NAME"),
        "{}",
        text(&out.stderr)
    );
    let out = check(
        &s.kubeconfig,
        s.dir.path(),
        &["deployment/nope", "-n", "shop"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("deployment shop/nope not found"),
        "{}",
        text(&out.stderr)
    );
}
