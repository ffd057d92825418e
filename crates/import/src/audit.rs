//! Kubernetes API server audit logs (`audit.k8s.io/v1` Event JSON lines).

use std::collections::HashMap;

use rf_format::{Kind, Op, Timestamp};
use serde_json::Value;

use crate::build::{Builder, Imported, ObjectMeta, parse_time};
use crate::error::{Error, Result};
use crate::input::{Diagnostic, Input, Text};
use crate::patch::{json_patch, merge_patch};

/// Imports audit logs (plain or gzip JSON lines), several merged by `stageTimestamp`.
///
/// Kept: `ResponseComplete` `create`, `update`, `patch` and `delete` requests with a code below
/// 400 on the recorded kinds (subresources `status` and `scale` included). Skipped silently:
/// other stages, verbs (`get`, `list`, `watch`), failed requests and other resources. Skipped
/// with a warning: lines that are not JSON or not an `audit.k8s.io/v1` Event, events without a
/// `stageTimestamp`, patches that do not apply. An event earlier than the one before it in the
/// same input is kept in time order, with a warning. An input that is empty, or in which not one
/// line is an audit event, is an error.
pub fn audit_log(inputs: Vec<Input>) -> Result<Imported> {
    if inputs.is_empty() {
        return Err(Error::NoInput);
    }
    let mut warnings = Vec::new();
    let mut writes = Vec::new();
    let mut first_input = None;
    // The log's last event, of any kind: what it proves holds until then.
    let mut log_end: Option<Timestamp> = None;
    for input in inputs {
        let text = Text::read(input, &mut warnings)?;
        first_input.get_or_insert_with(|| text.name.clone());
        read_input(&text, &mut writes, &mut log_end, &mut warnings)?;
    }
    // Stable: equal times keep input, then line order.
    writes.sort_by_key(|w: &Write| w.at);
    let mut state = State::default();
    let mut builder = Builder::default();
    for w in writes {
        state.apply(w, &mut builder, &mut warnings);
    }
    if builder.is_empty() {
        return Err(Error::NothingUsable {
            input: first_input.unwrap_or_default(),
            line: 1,
            format: "audit-log",
            detail: "no completed create, update, patch or delete of a recorded kind".to_owned(),
        });
    }
    let mut imported = builder.finish("import:audit-log", &[("source", "audit-log")], warnings);
    // The recording ends where the log does, not at its last write of a recorded kind.
    if let Some(end) = log_end {
        imported.closed_at = imported.closed_at.max(end);
    }
    Ok(imported)
}

/// One completed write, before ordering.
struct Write {
    at: Timestamp,
    source: String,
    line: u64,
    verb: String,
    kind: Kind,
    subresource: String,
    namespace: String,
    name: String,
    actor: Option<String>,
    request: Option<Value>,
    response: Option<Value>,
}

fn read_input(
    text: &Text,
    writes: &mut Vec<Write>,
    log_end: &mut Option<Timestamp>,
    warnings: &mut Vec<Diagnostic>,
) -> Result<()> {
    let mut events = 0u64;
    let mut first_rejection: Option<(u64, String)> = None;
    let mut last: Option<Timestamp> = None;
    let mut warn = |line: u64, message: String, warnings: &mut Vec<Diagnostic>| {
        if first_rejection.is_none() {
            first_rejection = Some((line, message.clone()));
        }
        warnings.push(Diagnostic::new(&text.name, line, message));
    };
    for (line, bytes) in text.lines() {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let mut event: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => {
                let msg = e.to_string();
                let msg = msg.rfind(" at line ").map_or(msg.as_str(), |p| &msg[..p]);
                warn(line, format!("invalid JSON: {msg}; line skipped"), warnings);
                continue;
            }
        };
        let api_version = event["apiVersion"].as_str().unwrap_or_default();
        if api_version != "audit.k8s.io/v1" || event["kind"] != "Event" {
            warn(
                line,
                format!(
                    "not an audit.k8s.io/v1 Event (apiVersion {api_version:?}, kind {}); line skipped",
                    event["kind"]
                ),
                warnings,
            );
            continue;
        }
        events += 1;
        if let Some(t) = ["stageTimestamp", "requestReceivedTimestamp"]
            .iter()
            .find_map(|k| event[*k].as_str().and_then(parse_time))
        {
            *log_end = Some(log_end.map_or(t, |e| e.max(t)));
        }
        let verb = event["verb"].as_str().unwrap_or_default().to_owned();
        let code = event["responseStatus"]["code"].as_u64().unwrap_or(200);
        if event["stage"] != "ResponseComplete"
            || !matches!(verb.as_str(), "create" | "update" | "patch" | "delete")
            || code >= 400
        {
            continue;
        }
        let r = &event["objectRef"];
        let s = |k: &str| r[k].as_str().unwrap_or_default().to_owned();
        let Some(kind) = kind_of(&s("resource"), &s("apiGroup"), &s("apiVersion")) else {
            continue;
        };
        let subresource = s("subresource");
        if !matches!(subresource.as_str(), "" | "status" | "scale") {
            continue;
        }
        let Some(at) = event["stageTimestamp"].as_str().and_then(parse_time) else {
            warn(
                line,
                "audit event without a valid stageTimestamp; skipped".to_owned(),
                warnings,
            );
            continue;
        };
        if let Some(prev) = last.filter(|p| at < *p) {
            warnings.push(Diagnostic::new(
                &text.name,
                line,
                format!(
                    "event out of order: stageTimestamp {} is {} ms before the previous event's; placed by its time",
                    event["stageTimestamp"].as_str().unwrap_or_default(),
                    (prev.0 - at.0) / 1_000_000
                ),
            ));
        }
        last = Some(last.map_or(at, |p| p.max(at)));
        let take = |event: &mut Value, k: &str| match event.get_mut(k).map(Value::take) {
            Some(Value::Null) | None => None,
            Some(v) => Some(v),
        };
        writes.push(Write {
            at,
            source: text.name.clone(),
            line,
            actor: actor(&event["user"], &event["impersonatedUser"]),
            verb,
            kind,
            subresource,
            namespace: s("namespace"),
            name: s("name"),
            request: take(&mut event, "requestObject"),
            response: take(&mut event, "responseObject"),
        });
    }
    if events == 0 {
        let (line, detail) = first_rejection.unwrap_or((1, "no audit event in it".to_owned()));
        return Err(Error::NothingUsable {
            input: text.name.clone(),
            line,
            format: "audit-log",
            detail,
        });
    }
    Ok(())
}

/// The user behind a request: `alice`, or `alice (as bob)` when alice impersonated bob.
fn actor(user: &Value, impersonated: &Value) -> Option<String> {
    let user = user["username"].as_str().filter(|u| !u.is_empty());
    let as_user = impersonated["username"].as_str().filter(|u| !u.is_empty());
    match (user, as_user) {
        (Some(u), Some(a)) => Some(format!("{u} (as {a})")),
        (Some(u), None) => Some(u.to_owned()),
        (None, Some(a)) => Some(format!("(as {a})")),
        (None, None) => None,
    }
}

/// The recorded kind of an audit `objectRef` resource: one the analyzer reads, or one of the
/// well-known kinds a recorder records beside them (in the version the event names).
fn kind_of(resource: &str, group: &str, version: &str) -> Option<Kind> {
    Some(match (group, resource) {
        ("argoproj.io", "rollouts") => Kind::Rollout,
        ("argoproj.io", "applications") => Kind::Application,
        ("apps" | "extensions", "replicasets") => Kind::ReplicaSet,
        ("", "services") => Kind::Service,
        ("", "pods") => Kind::Pod,
        ("discovery.k8s.io", "endpointslices") => Kind::EndpointSlice,
        ("", "events") | ("events.k8s.io", "events") => Kind::Event,
        _ => {
            let names = rf_format::api::WELL_KNOWN
                .iter()
                .find(|n| n.group == group && n.plural == resource)?;
            let version = names.versions.iter().find(|v| **v == version)?;
            names.kind_in(version)
        }
    })
}

/// The last known state of every object, by kind, namespace and name.
#[derive(Default)]
struct State {
    objects: HashMap<(Kind, String, String), Value>,
}

impl State {
    fn apply(&mut self, w: Write, builder: &mut Builder, warnings: &mut Vec<Diagnostic>) {
        let is_object = |v: &Value| v["kind"].as_str() == Some(w.kind.name());
        let name = if w.name.is_empty() {
            w.response
                .as_ref()
                .or(w.request.as_ref())
                .and_then(|v| v["metadata"]["name"].as_str())
                .unwrap_or_default()
                .to_owned()
        } else {
            w.name.clone()
        };
        let key = (w.kind.clone(), w.namespace.clone(), name.clone());
        let base = self.objects.get(&key);
        let gap = |builder: &mut Builder, why: String| {
            let meta = ObjectMeta {
                namespace: w.namespace.clone(),
                name: name.clone(),
                ..ObjectMeta::default()
            };
            builder.push(
                w.at,
                0,
                w.kind.clone(),
                Op::Gap {
                    reason: format!(
                        "audit log: {} {}{} {}/{}{}: {why}",
                        w.verb,
                        w.kind,
                        if w.subresource.is_empty() {
                            String::new()
                        } else {
                            format!("/{}", w.subresource)
                        },
                        w.namespace,
                        name,
                        w.actor
                            .as_ref()
                            .map(|a| format!(" by {a}"))
                            .unwrap_or_default()
                    ),
                },
                &meta,
                w.actor.clone(),
                None,
            );
        };
        if w.verb == "delete" {
            let last = w
                .response
                .as_ref()
                .filter(|v| is_object(v))
                .or(base)
                .cloned();
            self.objects.remove(&key);
            match last {
                Some(object) => builder.push(
                    w.at,
                    0,
                    w.kind.clone(),
                    Op::Deleted { inferred: false },
                    &ObjectMeta::of(&object),
                    w.actor.clone(),
                    Some(&object),
                ),
                None => gap(builder, "deleted; its last state is unknown".to_owned()),
            }
            return;
        }
        let new = if let Some(resp) = w.response.as_ref().filter(|v| is_object(v)) {
            resp.clone()
        } else if w.subresource == "scale" {
            let scale = w.response.as_ref().or(w.request.as_ref());
            let replicas = scale.and_then(|s| s["spec"]["replicas"].as_i64());
            match (base, replicas) {
                (Some(base), Some(n)) => {
                    let mut v = base.clone();
                    v["spec"]["replicas"] = Value::from(n);
                    v
                }
                _ => {
                    return gap(
                        builder,
                        "a scale without a known base state or replica count".to_owned(),
                    );
                }
            }
        } else if let Some(req) = &w.request {
            let mut next = match (w.verb.as_str(), base) {
                ("patch", None) => {
                    return gap(
                        builder,
                        "a patch (audit level Request) of an object whose state is not known yet"
                            .to_owned(),
                    );
                }
                ("patch", Some(base)) => {
                    let mut v = base.clone();
                    match req {
                        Value::Array(ops) => {
                            if let Err(e) = json_patch(&mut v, ops) {
                                warnings.push(Diagnostic::new(
                                    &w.source,
                                    w.line,
                                    format!("{e}; recorded as a gap"),
                                ));
                                return gap(builder, format!("the patch does not apply: {e}"));
                            }
                        }
                        patch => {
                            if has_directive(patch) {
                                warnings.push(Diagnostic::new(
                                    &w.source,
                                    w.line,
                                    "strategic merge patch directives ($patch, $retainKeys, ...) are applied as plain merge patch fields; the state may be inexact",
                                ));
                            }
                            merge_patch(&mut v, patch);
                        }
                    }
                    v
                }
                (_, Some(base)) if w.subresource == "status" && is_object(req) => {
                    let mut v = base.clone();
                    v["status"] = req["status"].clone();
                    v
                }
                _ if is_object(req) => req.clone(),
                _ => {
                    return gap(
                        builder,
                        "the request carries no object of the kind".to_owned(),
                    );
                }
            };
            // Request level: the server's changes are not in the log; bump the generation on a
            // spec change as the server would.
            if let Some(base) = base {
                if base["spec"] != next["spec"] {
                    let generation = base["metadata"]["generation"].as_i64().unwrap_or(0);
                    next["metadata"]["generation"] = Value::from(generation + 1);
                }
            }
            next
        } else {
            return gap(
                builder,
                "the audit level (Metadata) records no object; the state after it is unknown"
                    .to_owned(),
            );
        };
        let op = if w.verb == "create" || base.is_none() {
            Op::Added
        } else {
            Op::Modified
        };
        let mut meta = ObjectMeta::of(&new);
        if meta.name.is_empty() {
            meta.name = name;
            meta.namespace = w.namespace.clone();
        }
        builder.push(
            w.at,
            0,
            w.kind.clone(),
            op,
            &meta,
            w.actor.clone(),
            Some(&new),
        );
        self.objects.insert(key, new);
    }
}

/// True when a patch holds strategic merge patch directives (`$patch`, `$retainKeys`, ...).
fn has_directive(v: &Value) -> bool {
    match v {
        Value::Object(map) => map
            .iter()
            .any(|(k, v)| k.starts_with('$') || has_directive(v)),
        Value::Array(items) => items.iter().any(has_directive),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rollout(rv: u64, index: u64) -> Value {
        json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": "checkout-api", "namespace": "shop", "uid": "u1", "resourceVersion": rv.to_string(), "generation": 2},
            "spec": {"replicas": 5},
            "status": {"currentStepIndex": index, "phase": "Paused"}
        })
    }

    fn ev(verb: &str, second: u32, extra: Value) -> Value {
        let mut e = json!({
            "apiVersion": "audit.k8s.io/v1", "kind": "Event", "level": "RequestResponse",
            "stage": "ResponseComplete", "verb": verb,
            "user": {"username": "system:serviceaccount:argo-rollouts:argo-rollouts"},
            "objectRef": {"resource": "rollouts", "namespace": "shop", "name": "checkout-api", "apiGroup": "argoproj.io", "apiVersion": "v1alpha1"},
            "responseStatus": {"code": 200},
            "stageTimestamp": format!("2026-03-14T13:00:{second:02}.000000Z"),
        });
        merge_patch(&mut e, &extra);
        e
    }

    fn import(lines: &[Value]) -> Result<Imported> {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        audit_log(vec![Input::new(
            "audit.log",
            std::io::Cursor::new(text.into_bytes()),
        )])
    }

    fn ops(imp: &Imported) -> Vec<&'static str> {
        imp.records.iter().map(|r| r.op.name()).collect()
    }

    fn object(imp: &Imported, i: usize) -> Value {
        serde_json::from_slice(&imp.records[i].object).unwrap()
    }

    #[test]
    fn watch_list_get_failures_and_unfinished_stages_are_skipped() {
        let imp = import(&[
            ev(
                "create",
                0,
                json!({"responseStatus": {"code": 201}, "responseObject": rollout(1, 0)}),
            ),
            ev("watch", 1, json!({})),
            ev("list", 2, json!({})),
            ev("get", 3, json!({})),
            ev(
                "update",
                4,
                json!({"responseStatus": {"code": 409}, "responseObject": rollout(2, 1)}),
            ),
            ev(
                "update",
                5,
                json!({"stage": "RequestReceived", "responseObject": rollout(2, 1)}),
            ),
            ev("update", 6, json!({"responseObject": rollout(3, 2)})),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["added", "modified"]);
        assert_eq!(imp.records[1].resource_version, "3");
        assert_eq!(imp.header.notes["source"], "audit-log");
        assert!(imp.warnings.is_empty(), "{:?}", imp.warnings);
    }

    #[test]
    fn the_first_write_of_an_object_not_seen_before_is_added_with_its_actor() {
        let imp = import(&[ev("update", 0, json!({"responseObject": rollout(2, 1)}))]).unwrap();
        assert_eq!(ops(&imp), ["added"]);
        assert_eq!(
            imp.records[0].actor.as_deref(),
            Some("system:serviceaccount:argo-rollouts:argo-rollouts")
        );
    }

    #[test]
    fn a_patch_without_response_object_is_applied_to_the_last_state() {
        let imp = import(&[
            ev("create", 0, json!({"responseObject": rollout(1, 0)})),
            ev("patch", 1, json!({"level": "Request", "user": {"username": "alice"}, "objectRef": {"subresource": "status"}, "requestObject": {"status": {"currentStepIndex": 2}}})),
            ev("patch", 2, json!({"level": "Request", "requestObject": [{"op": "replace", "path": "/spec/replicas", "value": 7}]})),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["added", "modified", "modified"]);
        assert_eq!(
            object(&imp, 1)["status"],
            json!({"currentStepIndex": 2, "phase": "Paused"})
        );
        assert_eq!(imp.records[1].actor.as_deref(), Some("alice"));
        let last = object(&imp, 2);
        assert_eq!(last["spec"]["replicas"], 7);
        assert_eq!(
            last["metadata"]["generation"], 3,
            "a spec change bumps the generation"
        );
    }

    #[test]
    fn a_patch_with_no_base_state_and_a_metadata_level_write_are_gaps() {
        let imp = import(&[
            ev(
                "patch",
                0,
                json!({"level": "Request", "requestObject": {"status": {"currentStepIndex": 2}}}),
            ),
            ev("update", 1, json!({"level": "Metadata"})),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["gap", "gap"]);
        let reason = |i: usize| match &imp.records[i].op {
            Op::Gap { reason } => reason.clone(),
            _ => unreachable!(),
        };
        assert!(reason(0).contains("not known yet"), "{}", reason(0));
        assert!(reason(1).contains("Metadata"), "{}", reason(1));
        assert_eq!(imp.records[0].name, "checkout-api");
    }

    #[test]
    fn an_impersonated_request_names_both_users() {
        let imp = import(&[ev(
            "update",
            0,
            json!({"user": {"username": "alice"}, "impersonatedUser": {"username": "bob"}, "responseObject": rollout(2, 1)}),
        )])
        .unwrap();
        assert_eq!(imp.records[0].actor.as_deref(), Some("alice (as bob)"));
    }

    #[test]
    fn broken_lines_unknown_api_versions_and_events_out_of_order_are_warnings_with_lines() {
        let text = format!(
            "{}\n{{\"apiVersion\": \"audit.k8s.io/v1\", \"kind\n{}\n{}\n{}\n",
            ev("create", 5, json!({"responseObject": rollout(1, 0)})),
            ev(
                "update",
                6,
                json!({"apiVersion": "audit.k8s.io/v1beta1", "responseObject": rollout(2, 1)})
            ),
            ev("update", 9, json!({"responseObject": rollout(4, 3)})),
            ev("update", 7, json!({"responseObject": rollout(3, 2)})),
        );
        let imp = audit_log(vec![Input::new(
            "a.log",
            std::io::Cursor::new(text.into_bytes()),
        )])
        .unwrap();
        assert_eq!(ops(&imp), ["added", "modified", "modified"]);
        assert_eq!(
            imp.records[1].resource_version, "3",
            "ordered by stageTimestamp"
        );
        let w: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 3, "{w:?}");
        assert!(w[0].starts_with("a.log:2: invalid JSON"), "{w:?}");
        assert!(
            w[1].starts_with("a.log:3: not an audit.k8s.io/v1 Event"),
            "{w:?}"
        );
        assert!(w[2].starts_with("a.log:5: event out of order"), "{w:?}");
    }

    #[test]
    fn an_input_without_audit_events_is_an_error() {
        let err = import(&[json!({"hello": "world"})]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("audit.log:1: no usable audit-log event"),
            "{err}"
        );
        let err = import(&[ev("get", 0, json!({}))]).unwrap_err();
        assert!(err.to_string().contains("no completed create"), "{err}");
    }

    #[test]
    fn a_delete_keeps_the_last_state_and_a_scale_sets_the_replicas() {
        let scale =
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 0}});
        let imp = import(&[
            ev("create", 0, json!({"responseObject": rollout(1, 0)})),
            ev(
                "update",
                1,
                json!({"objectRef": {"subresource": "scale"}, "responseObject": scale}),
            ),
            ev(
                "delete",
                2,
                json!({"responseObject": {"kind": "Status", "status": "Success"}}),
            ),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["added", "modified", "deleted"]);
        assert_eq!(object(&imp, 1)["spec"]["replicas"], 0);
        assert_eq!(object(&imp, 2)["spec"]["replicas"], 0);
    }

    #[test]
    fn issue_28_the_recording_ends_at_the_logs_last_event_whatever_it_is_about() {
        // A write of a recorded kind at :00, then only a read of a ConfigMap at :59: the log
        // proves the state held until :59.
        let imp = import(&[
            ev(
                "create",
                0,
                json!({"responseStatus": {"code": 201}, "responseObject": rollout(1, 0)}),
            ),
            ev(
                "get",
                59,
                json!({"objectRef": {"resource": "configmaps", "apiGroup": "", "apiVersion": "v1"}}),
            ),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["added"]);
        assert_eq!(imp.closed_at, parse_time("2026-03-14T13:00:59Z").unwrap());
    }
}
