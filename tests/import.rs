//! Importing the simulator's audit logs and kubectl watch captures gives back what the native
//! recordings say: the same findings, and the actors the audit log knows.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use rf_analyzer::{Options, Report, analyze};
use rf_format::Kind;
use rf_import::{Imported, Input};
use rf_scenarios::{Recording, catalog, generate, to_audit_log, to_kubectl_watch};

type Key = (String, String, String);

fn findings(report: &Report) -> BTreeSet<Key> {
    report
        .findings
        .iter()
        .map(|f| {
            (
                f.rule.id().to_owned(),
                f.severity.as_str().to_owned(),
                format!(
                    "{}/{}/{}",
                    f.subject.kind, f.subject.namespace, f.subject.name
                ),
            )
        })
        .collect()
}

fn native(rec: &Recording) -> Report {
    analyze(&rec.header, rec.records.clone(), Options::default())
}

fn imported(imp: &Imported) -> Report {
    analyze(&imp.header, imp.records.clone(), Options::default())
}

fn input(name: &str, text: String) -> Input {
    Input::new(name, std::io::Cursor::new(text.into_bytes()))
}

fn from_audit(rec: &Recording) -> Imported {
    rf_import::audit_log(vec![input("audit.log", to_audit_log(rec))]).unwrap()
}

/// One `kubectl get KIND -w` capture per recorded kind but Events: Rollouts, ReplicaSets and,
/// where the scenario has them, Services, EndpointSlices, Pods and Applications.
fn from_kubectl(rec: &Recording) -> Imported {
    let inputs = rec
        .header
        .source
        .kinds
        .iter()
        .filter(|k| **k != Kind::Event)
        .map(|k| {
            input(
                &format!("{}.json", k.name().to_lowercase()),
                to_kubectl_watch(rec, std::slice::from_ref(k)),
            )
        })
        .collect();
    rf_import::kubectl_watch(inputs).unwrap()
}

#[test]
fn every_scenario_imported_from_its_audit_log_has_the_native_findings() {
    for s in catalog() {
        let rec = generate(s.name).unwrap();
        let imp = from_audit(&rec);
        assert!(imp.warnings.is_empty(), "{}: {:?}", s.name, imp.warnings);
        assert_eq!(
            findings(&imported(&imp)),
            findings(&native(&rec)),
            "scenario {}",
            s.name
        );
    }
}

#[test]
fn every_scenario_imported_from_a_kubectl_capture_has_the_native_findings() {
    for s in catalog() {
        let rec = generate(s.name).unwrap();
        let imp = from_kubectl(&rec);
        assert!(imp.warnings.is_empty(), "{}: {:?}", s.name, imp.warnings);
        assert_eq!(imp.header.notes["times"], "approximate");
        assert_eq!(
            findings(&imported(&imp)),
            findings(&native(&rec)),
            "scenario {}",
            s.name
        );
    }
}

#[test]
fn issue_5_rerender_race_from_both_sources_names_the_four_findings_and_the_render_actor() {
    let rec = generate("rerender-race").unwrap();
    let audit = imported(&from_audit(&rec));
    let kubectl = imported(&from_kubectl(&rec));
    for report in [&audit, &kubectl] {
        let rules: BTreeSet<&str> = report.findings.iter().map(|f| f.rule.id()).collect();
        for rule in [
            "rerender-restart",
            "pause-lost",
            "config-only-rerender",
            "orphaned-replicaset",
        ] {
            assert!(rules.contains(rule), "missing {rule} in {rules:?}");
        }
    }
    let restart = audit
        .findings
        .iter()
        .find(|f| f.rule.id() == "rerender-restart")
        .unwrap();
    let renders: Vec<&str> = restart
        .evidence
        .iter()
        .map(|e| e.detail.as_str())
        .filter(|d| d.contains("render"))
        .collect();
    assert!(!renders.is_empty());
    for detail in renders {
        assert!(
            detail.contains("argocd-application-controller"),
            "render without its actor: {detail}"
        );
    }
}

/// The objects alive at the end of a recording, by kind and name, with their last
/// resourceVersion.
fn live_at_end(records: &[rf_format::Record]) -> BTreeSet<(String, String, String)> {
    let mut live = std::collections::BTreeMap::new();
    for r in records.iter().filter(|r| r.op.has_object()) {
        let key = (r.kind.name().to_owned(), r.name.clone());
        if matches!(r.op, rf_format::Op::Deleted { .. }) {
            live.remove(&key);
        } else {
            live.insert(key, r.resource_version.clone());
        }
    }
    live.into_iter().map(|((k, n), rv)| (k, n, rv)).collect()
}

#[test]
fn pods_services_endpoint_slices_and_applications_survive_both_imports() {
    for s in catalog() {
        let rec = generate(s.name).unwrap();
        let traffic = |records: &[rf_format::Record]| {
            live_at_end(records)
                .into_iter()
                .filter(|(k, ..)| k != "Rollout" && k != "ReplicaSet" && k != "Event")
                .collect::<BTreeSet<_>>()
        };
        let want = traffic(&rec.records);
        assert!(
            want.iter().any(|(k, ..)| k == "Pod")
                && want.iter().any(|(k, ..)| k == "EndpointSlice"),
            "{}: {want:?}",
            s.name
        );
        assert_eq!(
            traffic(&from_audit(&rec).records),
            want,
            "{} (audit)",
            s.name
        );
        assert_eq!(
            traffic(&from_kubectl(&rec).records),
            want,
            "{} (kubectl)",
            s.name
        );
    }
}

/// Objects of kinds the analyzer does not read, as `kubectl get -w -o json` prints them.
fn unread_kinds() -> String {
    let mut out = String::new();
    for (api, kind, name) in [
        ("v1", "ConfigMap", "checkout-api-config"),
        ("batch/v1", "Job", "db-migrate"),
        ("example.com/v1", "Widget", "w"),
    ] {
        out.push_str(
            &serde_json::json!({"type": "ADDED", "object": {"apiVersion": api, "kind": kind,
                "metadata": {"name": name, "namespace": "payments", "uid": format!("uid-{name}"),
                             "resourceVersion": "1", "creationTimestamp": "2026-03-14T12:00:00Z"}}})
            .to_string(),
        );
        out.push('\n');
    }
    out
}

/// The kubectl captures of `rec`'s kinds (but Events) in the reverse of the recorder's order,
/// after a capture of kinds the analyzer does not read.
fn from_kubectl_reordered(rec: &Recording) -> Imported {
    let mut inputs = vec![input("others.json", unread_kinds())];
    inputs.extend(
        rec.header
            .source
            .kinds
            .iter()
            .rev()
            .filter(|k| **k != Kind::Event)
            .map(|k| {
                input(
                    &format!("{}.json", k.name().to_lowercase()),
                    to_kubectl_watch(rec, std::slice::from_ref(k)),
                )
            }),
    );
    rf_import::kubectl_watch(inputs).unwrap()
}

/// A capture with extra kinds and in any file order, and an audit log, give the findings of the
/// native recording, for every scenario and for every recording of the real controller.
#[test]
fn issue_28_captures_with_extra_kinds_in_any_order_have_the_native_findings() {
    let mut recordings: Vec<(String, Recording)> = catalog()
        .iter()
        .map(|s| (s.name.to_owned(), generate(s.name).unwrap()))
        .collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../recordings/real");
    let mut real: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rfr"))
        .collect();
    real.sort();
    for path in real {
        let mut reader = rf_format::Reader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let mut records = Vec::new();
        while let Some(r) = reader.next_record().unwrap() {
            records.push(r);
        }
        // A capture has no gaps: a recording through a forced relist (its inferred deletions
        // have no object) is not one kubectl could have printed.
        if records
            .iter()
            .any(|r| matches!(r.op, rf_format::Op::Gap { .. }))
        {
            continue;
        }
        let closed_at = records.last().map(|r| r.observed_at).unwrap();
        recordings.push((
            format!("real/{}", path.file_name().unwrap().to_string_lossy()),
            Recording {
                header: reader.header().clone(),
                records,
                closed_at,
            },
        ));
    }
    let mut differ = Vec::new();
    for (name, rec) in &recordings {
        let imp = from_kubectl_reordered(rec);
        let words: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        let (others, rest): (Vec<&String>, Vec<&String>) =
            words.iter().partition(|w| w.starts_with("others.json:"));
        assert!(
            others.len() == 3
                && rest
                    .iter()
                    .all(|w| w.contains(": empty: nothing was captured")),
            "{name}: one warning per unread kind, one per empty capture, no other: {words:?}"
        );
        let want = findings(&native(rec));
        let got = findings(&imported(&imp));
        if got != want {
            differ.push(format!("{name}: kubectl import {got:?}, native {want:?}"));
        }
        let got = findings(&imported(&from_audit(rec)));
        if got != want {
            differ.push(format!("{name}: audit import {got:?}, native {want:?}"));
        }
    }
    assert!(differ.is_empty(), "{}", differ.join("\n"));
}

/// An audit event as GKE's Cloud Logging holds it: a LogEntry whose `protoPayload` (an
/// AuditLog of service `k8s.io`) names the method and resource, the user, the request and the
/// response (each with an `@type`).
fn as_gke_entry(event: &serde_json::Value) -> serde_json::Value {
    let r = &event["objectRef"];
    let group = r["apiGroup"]
        .as_str()
        .filter(|g| !g.is_empty())
        .unwrap_or("core");
    let version = r["apiVersion"].as_str().unwrap();
    let resource = r["resource"].as_str().unwrap();
    let sub = r["subresource"].as_str();
    let mut method = format!("io.k8s.{group}.{version}.{resource}");
    let mut name = format!(
        "{group}/{version}/namespaces/{}/{resource}",
        r["namespace"].as_str().unwrap()
    );
    if let Some(n) = r["name"].as_str() {
        name.push_str(&format!("/{n}"));
    }
    if let Some(s) = sub {
        method.push_str(&format!(".{s}"));
        name.push_str(&format!("/{s}"));
    }
    method.push_str(&format!(".{}", event["verb"].as_str().unwrap()));
    let typed = |v: &serde_json::Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.insert("@type".to_owned(), serde_json::json!("k8s.io/Object"));
        }
        v
    };
    let code = event["responseStatus"]["code"].as_u64().unwrap_or(200);
    serde_json::json!({
        "protoPayload": {
            "@type": "type.googleapis.com/google.cloud.audit.AuditLog",
            "serviceName": "k8s.io",
            "methodName": method,
            "resourceName": name,
            "authenticationInfo": {"principalEmail": event["user"]["username"]},
            "request": typed(&event["requestObject"]),
            "response": typed(&event["responseObject"]),
            "status": if code < 400 { serde_json::json!({}) } else { serde_json::json!({"code": 7}) },
        },
        "insertId": event["auditID"],
        "operation": {"id": event["auditID"], "producer": "k8s.io", "first": true, "last": true},
        "resource": {"type": "k8s_cluster", "labels": {"cluster_name": "prod"}},
        "timestamp": event["stageTimestamp"],
        "logName": "projects/p/logs/cloudaudit.googleapis.com%2Factivity",
    })
}

/// What each import gives that the analysis reads: the records and their objects.
fn records_of(imp: &Imported) -> Vec<(Kind, String, String, String, Vec<u8>)> {
    imp.records
        .iter()
        .map(|r| {
            (
                r.kind.clone(),
                r.op.name().to_owned(),
                r.namespace.clone(),
                r.name.clone(),
                r.object.clone(),
            )
        })
        .collect()
}

/// GKE's and EKS's exports of a scenario's audit log import as the log itself does: the
/// same records, hence the same findings. GKE's shape follows its Cloud Audit Logs entries
/// (`gcloud logging read --format=json`); EKS's, CloudWatch Logs' `filter-log-events` JSON
/// (pages concatenated) and an export to S3 (`TIMESTAMP MESSAGE` lines).
#[test]
fn issue_47_gke_and_eks_audit_exports_import_as_the_audit_log_does() {
    for s in catalog() {
        let rec = generate(s.name).unwrap();
        let log = to_audit_log(&rec);
        let events: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let plain = from_audit(&rec);
        // GKE: one JSON array of entries, and a non-Kubernetes entry among them.
        let mut entries: Vec<serde_json::Value> = events.iter().map(as_gke_entry).collect();
        entries.insert(0, serde_json::json!({"protoPayload": {"serviceName": "container.googleapis.com", "methodName": "google.container.v1.ClusterManager.GetCluster"}, "timestamp": "2026-03-14T12:00:00Z"}));
        let gke = rf_import::gke_audit(vec![input(
            "gke.json",
            serde_json::to_string_pretty(&entries).unwrap(),
        )])
        .unwrap();
        assert_eq!(records_of(&gke), records_of(&plain), "{}: GKE", s.name);
        assert_eq!(gke.header.notes["source"], "gke-audit");
        assert!(
            gke.warnings.iter().any(|w| w
                .to_string()
                .contains("1 entr(ies) that record no Kubernetes API request")),
            "{}: {:?}",
            s.name,
            gke.warnings
        );
        // EKS: two pages of filter-log-events, and the same as an S3 export.
        let messages: Vec<serde_json::Value> = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| serde_json::json!({"logStreamName": "kube-apiserver-audit-1", "timestamp": 1_773_493_200_000_i64 + i as i64, "message": l, "ingestionTime": 0, "eventId": i.to_string()}))
            .collect();
        let half = messages.len() / 2;
        let pages = format!(
            "{}\n{}\n",
            serde_json::json!({"events": &messages[..half], "searchedLogStreams": [], "nextToken": "t"}),
            serde_json::json!({"events": &messages[half..], "searchedLogStreams": []})
        );
        let s3: String = log
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| format!("2026-03-14T13:00:00.000Z {l}\n"))
            .collect();
        for (what, text) in [("filter-log-events", pages), ("S3 export", s3)] {
            let eks = rf_import::eks_audit(vec![input("eks.json", text)]).unwrap();
            assert_eq!(
                records_of(&eks),
                records_of(&plain),
                "{}: EKS {what}",
                s.name
            );
            assert_eq!(
                findings(&imported(&eks)),
                findings(&imported(&plain)),
                "{}: EKS {what}",
                s.name
            );
        }
        assert_eq!(
            findings(&imported(&gke)),
            findings(&imported(&plain)),
            "{}",
            s.name
        );
    }
}
