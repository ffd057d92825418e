//! A simulated incident as the sources that exist before anyone records: what
//! `kubectl get KIND -w -o json --output-watch-events` prints, and the API server's audit log at
//! `RequestResponse` level. `rf-import` turns both back into recordings.

use std::collections::HashMap;

use rf_format::{Kind, Op, Timestamp};
use serde_json::{Value, json};

use crate::calendar;
use crate::recording::Recording;

/// What `kubectl get <kind> -w -o json --output-watch-events` would have printed for the
/// `kinds` of `recording` (one `kubectl` per kind merged into one text; call once per kind for
/// one capture per kind): pretty JSON documents `{"type": ..., "object": ...}`, concatenated.
/// Listed objects are `ADDED`; list markers and gaps are not shown by kubectl.
pub fn to_kubectl_watch(recording: &Recording, kinds: &[Kind]) -> String {
    let mut out = String::new();
    for r in recording.records.iter().filter(|r| kinds.contains(&r.kind)) {
        let t = match r.op {
            Op::Added | Op::Listed => "ADDED",
            Op::Modified => "MODIFIED",
            Op::Deleted { .. } => "DELETED",
            Op::ListBegin | Op::ListEnd | Op::Gap { .. } => continue,
        };
        let mut object: Value = serde_json::from_slice(&r.object).unwrap_or(Value::Null);
        // A listed item has no apiVersion and kind of its own; kubectl prints them.
        if let Some(o) = object.as_object_mut() {
            o.entry("apiVersion")
                .or_insert_with(|| Value::String(r.kind.api_version()));
            o.entry("kind")
                .or_insert_with(|| Value::String(r.kind.name().to_owned()));
        }
        let doc = json!({"type": t, "object": object});
        out.push_str(&serde_json::to_string_pretty(&doc).unwrap_or_default());
        out.push('\n');
    }
    out
}

/// The audit user of a field manager's write of `object` (of `kind`).
fn user_of(manager: &str, kind: &Kind, object: &Value) -> String {
    let user = match (manager, kind) {
        ("argocd-controller" | "argocd-application-controller", _) => {
            "system:serviceaccount:argocd:argocd-application-controller"
        }
        ("argocd-server", _) => "system:serviceaccount:argocd:argocd-server",
        ("rollouts-controller", _) => "system:serviceaccount:argo-rollouts:argo-rollouts",
        ("kube-controller-manager", Kind::EndpointSlice) => {
            "system:serviceaccount:kube-system:endpointslice-controller"
        }
        ("kube-controller-manager" | "replicaset-controller", _) => {
            "system:serviceaccount:kube-system:replicaset-controller"
        }
        ("kube-scheduler", _) => "system:kube-scheduler",
        ("kubelet", _) => {
            let node = object["spec"]["nodeName"].as_str().unwrap_or_default();
            return format!("system:node:{node}");
        }
        (m, _) if m.starts_with("kubectl") => "alice@example.com",
        _ => "system:unknown",
    };
    user.to_owned()
}

/// The `managedFields` entry of the write that produced `object`: the one whose time changed
/// since `previous` (the latest of them), or the latest entry.
fn writer<'a>(object: &'a Value, previous: Option<&Value>) -> Option<&'a Value> {
    let entries = object["metadata"]["managedFields"].as_array()?;
    let before: Vec<&Value> = previous
        .and_then(|p| p["metadata"]["managedFields"].as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let latest = |it: &mut dyn Iterator<Item = &'a Value>| {
        it.max_by(|a, b| a["time"].as_str().cmp(&b["time"].as_str()))
    };
    let changed = latest(&mut entries.iter().filter(|e| {
        !before.iter().any(|b| {
            b["manager"] == e["manager"]
                && b["subresource"] == e["subresource"]
                && b["time"] == e["time"]
        })
    }));
    changed.or_else(|| latest(&mut entries.iter()))
}

/// `2026-03-14T13:02:56.120000Z`: audit timestamps have microseconds.
fn micro_time(t: Timestamp) -> String {
    let nanos = t.as_unix_nanos();
    let secs = nanos.div_euclid(1_000_000_000);
    let micros = nanos.rem_euclid(1_000_000_000) / 1_000;
    let s = calendar::rfc3339(secs);
    format!("{}.{micros:06}Z", s.trim_end_matches('Z'))
}

fn resource_of(kind: &Kind) -> (&'static str, &'static str, &'static str) {
    if let Some(names) = rf_format::api::well_known(kind) {
        let version = names
            .versions
            .iter()
            .find(|v| matches!(kind, Kind::Other { version, .. } if version == *v))
            .unwrap_or(&names.versions[0]);
        return (names.plural, names.group, version);
    }
    match kind {
        Kind::Rollout => ("rollouts", "argoproj.io", "v1alpha1"),
        Kind::Application => ("applications", "argoproj.io", "v1alpha1"),
        Kind::ReplicaSet => ("replicasets", "apps", "v1"),
        Kind::EndpointSlice => ("endpointslices", "discovery.k8s.io", "v1"),
        Kind::Service => ("services", "", "v1"),
        Kind::Pod => ("pods", "", "v1"),
        Kind::Event | Kind::Other { .. } => ("events", "", "v1"),
    }
}

/// One audit event line.
#[allow(clippy::too_many_arguments)]
fn event(
    id: usize,
    at: Timestamp,
    verb: &str,
    user: &str,
    object_ref: Value,
    code: u16,
    object: Option<&Value>,
) -> String {
    let mut e = json!({
        "kind": "Event",
        "apiVersion": "audit.k8s.io/v1",
        "level": "RequestResponse",
        "auditID": format!("00000000-0000-4000-8000-{id:012}"),
        "stage": "ResponseComplete",
        "requestURI": request_uri(&object_ref, verb),
        "verb": verb,
        "user": {"username": user, "groups": ["system:authenticated"]},
        "sourceIPs": ["10.0.0.12"],
        "userAgent": "rf-scenarios",
        "objectRef": object_ref,
        "responseStatus": {"metadata": {}, "code": code},
        "requestReceivedTimestamp": micro_time(at),
        "stageTimestamp": micro_time(at),
    });
    if let (Some(o), Some(map)) = (object, e.as_object_mut()) {
        map.insert("requestObject".to_owned(), o.clone());
        map.insert("responseObject".to_owned(), o.clone());
    }
    serde_json::to_string(&e).unwrap_or_default()
}

fn request_uri(r: &Value, verb: &str) -> String {
    let group = r["apiGroup"].as_str().unwrap_or_default();
    let version = r["apiVersion"].as_str().unwrap_or_default();
    let prefix = if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    };
    let ns = r["namespace"].as_str().unwrap_or_default();
    let resource = r["resource"].as_str().unwrap_or_default();
    let mut uri = format!("{prefix}/namespaces/{ns}/{resource}");
    if verb != "create" && verb != "list" && verb != "watch" {
        if let Some(name) = r["name"].as_str() {
            uri.push('/');
            uri.push_str(name);
        }
    }
    if let Some(sub) = r["subresource"].as_str() {
        uri.push('/');
        uri.push_str(sub);
    }
    if verb == "watch" {
        uri.push_str("?watch=true");
    }
    uri
}

/// The API server's audit log of `recording` at `RequestResponse` level: `audit.k8s.io/v1`
/// Event JSON lines, one per `Added`/`Listed` (create, 201), `Modified` (update, or patch for
/// `kubectl-patch`/`kubectl-argo-rollouts`; subresource `status` when the writer's managed
/// fields entry is the status subresource's; 200) and `Deleted` (delete), with the user derived
/// from the writer's field manager (every Argo CD render is
/// `system:serviceaccount:argocd:argocd-application-controller`). A few `list`, `watch` and
/// `get` requests, which carry no objects, are mixed in as a real log has them.
pub fn to_audit_log(recording: &Recording) -> String {
    let mut out = String::new();
    let mut last: HashMap<(Kind, String, String), Value> = HashMap::new();
    let mut id = 0;
    let line = |out: &mut String, s: String| {
        out.push_str(&s);
        out.push('\n');
    };
    let start = recording.header.started_at;
    let namespace = recording
        .header
        .source
        .namespaces
        .first()
        .cloned()
        .unwrap_or_default();
    // The controllers' informers list and watch what they manage.
    let watchers = [
        (Kind::Rollout, "rollouts-controller"),
        (Kind::ReplicaSet, "rollouts-controller"),
        (Kind::Pod, "kube-controller-manager"),
        (Kind::EndpointSlice, "kube-controller-manager"),
        (Kind::Application, "argocd-application-controller"),
    ];
    for (kind, manager) in watchers {
        if !recording.header.source.kinds.contains(&kind) {
            continue;
        }
        let (resource, group, version) = resource_of(&kind);
        let user = user_of(manager, &kind, &Value::Null);
        let namespace = if kind == Kind::Application {
            crate::argocd::ARGOCD_NAMESPACE
        } else {
            namespace.as_str()
        };
        for verb in ["list", "watch"] {
            id += 1;
            let r = json!({"resource": resource, "namespace": namespace, "apiGroup": group, "apiVersion": version});
            line(&mut out, event(id, start, verb, &user, r, 200, None));
        }
    }
    for r in &recording.records {
        let verb_code = match r.op {
            Op::Added | Op::Listed => ("create", 201),
            Op::Modified => ("update", 200),
            Op::Deleted { .. } => ("delete", 200),
            Op::ListBegin | Op::ListEnd | Op::Gap { .. } => continue,
        };
        let Ok(object) = serde_json::from_slice::<Value>(&r.object) else {
            continue;
        };
        let key = (r.kind.clone(), r.namespace.clone(), r.name.clone());
        let previous = last.get(&key);
        let w = writer(&object, previous);
        let manager = w
            .and_then(|w| w["manager"].as_str())
            .unwrap_or_else(|| object["reportingComponent"].as_str().unwrap_or_default());
        let user = user_of(manager, &r.kind, &object);
        let mut verb = verb_code.0;
        if verb == "update" && manager.starts_with("kubectl-") {
            verb = "patch";
        }
        let (resource, group, version) = resource_of(&r.kind);
        let mut object_ref = json!({
            "resource": resource,
            "namespace": r.namespace,
            "name": r.name,
            "uid": r.uid,
            "apiGroup": group,
            "apiVersion": version,
            "resourceVersion": r.resource_version,
        });
        let same_generation = previous
            .is_some_and(|p| p["metadata"]["generation"] == object["metadata"]["generation"]);
        if verb_code.0 == "update"
            && same_generation
            && w.is_some_and(|w| w["subresource"] == "status")
        {
            object_ref["subresource"] = json!("status");
        }
        id += 1;
        line(
            &mut out,
            event(
                id,
                r.observed_at,
                verb,
                &user,
                object_ref,
                verb_code.1,
                Some(&object),
            ),
        );
        if r.kind == Kind::Rollout && verb == "patch" {
            // The CLI reads the rollout back after patching it.
            id += 1;
            let get_ref = json!({"resource": resource, "namespace": r.namespace, "name": r.name, "apiGroup": group, "apiVersion": version});
            line(
                &mut out,
                event(id, r.observed_at, "get", &user, get_ref, 200, None),
            );
        }
        if matches!(r.op, Op::Deleted { .. }) {
            last.remove(&key);
        } else {
            last.insert(key, object);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_render_of_the_rerender_race_is_an_update_by_argo_cd() {
        let rec = crate::generate("rerender-race").unwrap();
        let log = to_audit_log(&rec);
        let renders = log
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|e| {
                e["verb"] == "update"
                    && e["objectRef"]["resource"] == "rollouts"
                    && e["objectRef"]["subresource"].is_null()
                    && e["user"]["username"]
                        == "system:serviceaccount:argocd:argocd-application-controller"
            })
            .count();
        assert!(renders >= 2, "{renders}");
        assert!(log.lines().any(|l| l.contains("\"verb\":\"watch\"")));
        assert!(log.contains("\"subresource\":\"status\""));
        assert!(log.contains(".000000Z") || log.contains("Z\""));
    }

    #[test]
    fn the_kubectl_capture_has_one_document_per_object_event_of_the_kinds() {
        let rec = crate::generate("abort").unwrap();
        let text = to_kubectl_watch(&rec, &[Kind::Rollout]);
        let docs: Vec<Value> = serde_json::Deserializer::from_str(&text)
            .into_iter::<Value>()
            .map(Result::unwrap)
            .collect();
        let want = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::Rollout && r.op.has_object())
            .count();
        assert_eq!(docs.len(), want);
        assert_eq!(docs[0]["type"], "ADDED");
        assert!(text.starts_with("{\n  "));
    }

    #[test]
    fn audit_times_have_microseconds() {
        assert_eq!(
            micro_time(Timestamp(1_773_493_200_120_000_000)),
            "2026-03-14T13:00:00.120000Z"
        );
    }
}
