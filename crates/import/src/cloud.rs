//! The Kubernetes audit logs of managed clusters, as their clouds export them: each entry is
//! turned into the `audit.k8s.io/v1` Event it records, and [`audit_log`](crate::audit_log)
//! reads those.

use serde_json::{Map, Value, json};

use crate::audit::audit_log;
use crate::build::Imported;
use crate::error::{Error, Result};
use crate::input::{Diagnostic, Input, Text};
use crate::kubectl::documents;

/// Imports GKE's Kubernetes audit logs as `gcloud logging read --format=json` prints them (a
/// JSON array of log entries), or as a log sink writes them (one entry per line). An entry of
/// `protoPayload.serviceName` `k8s.io` records one API request: its `methodName`
/// (`io.k8s.apps.v1.replicasets.create`) gives the verb, its `resourceName`
/// (`apps/v1/namespaces/NS/replicasets/NAME[/SUBRESOURCE]`, the core group as `core`) the
/// object, `authenticationInfo.principalEmail` the user, `request` and `response` the objects
/// (their `@type` dropped), `status.code` (a google.rpc code, 0 or none for success) the
/// outcome and `timestamp` the time. Other entries are counted and skipped. Warnings name the
/// entry (`FILE, entry:N`).
pub fn gke_audit(inputs: Vec<Input>) -> Result<Imported> {
    normalized(inputs, "gke-audit", |doc, out| {
        for entry in entries(doc) {
            out.push(gke_entry(&entry));
        }
    })
}

/// Imports EKS's control-plane audit log as CloudWatch Logs exports it: the JSON of `aws logs
/// filter-log-events` or `aws logs get-log-events` (`{"events": [{"message": "..."}]}`, pages
/// concatenated), an export to S3 (lines of `TIMESTAMP MESSAGE`), or the messages themselves,
/// one per line. Each message is an `audit.k8s.io/v1` Event. Warnings name the message
/// (`FILE, entry:N`).
pub fn eks_audit(inputs: Vec<Input>) -> Result<Imported> {
    normalized(inputs, "eks-audit", |doc, out| {
        let messages: Vec<Value> = match doc {
            Value::Object(mut o) if o.contains_key("events") => match o.remove("events") {
                Some(Value::Array(events)) => events,
                _ => Vec::new(),
            },
            Value::Array(events) => events,
            other => vec![other],
        };
        for m in messages {
            out.push(match &m {
                Value::Object(o) if o.get("kind").and_then(Value::as_str) == Some("Event") => {
                    Some(m.clone())
                }
                Value::Object(o) => o
                    .get("message")
                    .and_then(Value::as_str)
                    .and_then(|s| serde_json::from_str(s).ok()),
                _ => None,
            });
        }
    })
}

/// Reads each input's documents, turns them into audit Events with `convert` (`None` for an
/// entry that is not one), and imports those as an audit log named after the input.
fn normalized(
    inputs: Vec<Input>,
    format: &'static str,
    convert: fn(Value, &mut Vec<Option<Value>>),
) -> Result<Imported> {
    if inputs.is_empty() {
        return Err(Error::NoInput);
    }
    let mut warnings = Vec::new();
    let mut converted = Vec::new();
    for input in inputs {
        let text = Text::read(input, &mut warnings)?;
        let mut out = Vec::new();
        for (_, doc) in docs(&text, &mut warnings) {
            convert(doc, &mut out);
        }
        let skipped = out.iter().filter(|e| e.is_none()).count();
        // One line per entry, blank for an entry skipped: the audit log's line N is entry N.
        let lines: Vec<String> = out
            .into_iter()
            .map(|e| e.map(|e| e.to_string()).unwrap_or_default())
            .collect();
        if skipped == lines.len() {
            return Err(Error::NothingUsable {
                input: text.name.clone(),
                line: 1,
                format,
                detail: "no Kubernetes API audit entry in it".to_owned(),
            });
        }
        if skipped > 0 {
            warnings.push(Diagnostic::new(
                &text.name,
                0,
                format!("{skipped} entr(ies) that record no Kubernetes API request; skipped"),
            ));
        }
        let name = format!("{}, entry", text.name);
        converted.push(Input::new(
            name,
            std::io::Cursor::new(lines.join("\n").into_bytes()),
        ));
    }
    let mut imported = audit_log(converted)?;
    warnings.append(&mut imported.warnings);
    imported.warnings = warnings;
    imported
        .header
        .notes
        .insert("source".to_owned(), format.to_owned());
    Ok(imported)
}

/// The JSON documents of an input: documents as kubectl captures hold them, or lines of
/// `TIMESTAMP JSON` (an S3 export of CloudWatch Logs).
fn docs(text: &Text, warnings: &mut Vec<Diagnostic>) -> Vec<(u64, Value)> {
    let starts_with_json = text
        .bytes
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'{' || *b == b'[');
    if starts_with_json {
        return documents(text, warnings);
    }
    String::from_utf8_lossy(&text.bytes)
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (_, json) = line.split_once(' ')?;
            Some((i as u64 + 1, serde_json::from_str(json.trim()).ok()?))
        })
        .collect()
}

/// The log entries of a document: an array's items, or itself.
fn entries(doc: Value) -> Vec<Value> {
    match doc {
        Value::Array(items) => items,
        other => vec![other],
    }
}

/// The audit Event a GKE log entry records, if it records a Kubernetes API request.
fn gke_entry(entry: &Value) -> Option<Value> {
    let p = &entry["protoPayload"];
    if p["serviceName"] != "k8s.io" {
        return None;
    }
    let method = p["methodName"].as_str()?;
    let verb = method.rsplit('.').next()?;
    let resource = p["resourceName"].as_str()?;
    let segs: Vec<&str> = resource.split('/').collect();
    let (group, version) = (*segs.first()?, *segs.get(1)?);
    let (namespace, rest) = if segs.get(2) == Some(&"namespaces") {
        (*segs.get(3)?, segs.get(4..)?)
    } else {
        ("", segs.get(2..)?)
    };
    let mut object_ref = Map::new();
    object_ref.insert("resource".to_owned(), json!(rest.first()?));
    object_ref.insert("namespace".to_owned(), json!(namespace));
    object_ref.insert(
        "apiGroup".to_owned(),
        json!(if group == "core" { "" } else { group }),
    );
    object_ref.insert("apiVersion".to_owned(), json!(version));
    if let Some(name) = rest.get(1) {
        object_ref.insert("name".to_owned(), json!(name));
    }
    if let Some(sub) = rest.get(2) {
        object_ref.insert("subresource".to_owned(), json!(sub));
    }
    let time = entry["timestamp"].as_str()?;
    let code = match p["status"]["code"].as_i64().unwrap_or(0) {
        0 => 200,
        3 => 422,
        5 => 404,
        6 | 9 | 10 => 409,
        7 => 403,
        16 => 401,
        _ => 500,
    };
    let body = |v: &Value| -> Option<Value> {
        let mut o = v.as_object()?.clone();
        o.remove("@type");
        Some(Value::Object(o))
    };
    let (request, response) = (body(&p["request"]), body(&p["response"]));
    let level = match (&request, &response) {
        (_, Some(_)) => "RequestResponse",
        (Some(_), None) => "Request",
        (None, None) => "Metadata",
    };
    let mut event = json!({
        "apiVersion": "audit.k8s.io/v1",
        "kind": "Event",
        "level": level,
        "auditID": entry["operation"]["id"].as_str().or(entry["insertId"].as_str()).unwrap_or_default(),
        "stage": "ResponseComplete",
        "verb": verb,
        "user": {"username": p["authenticationInfo"]["principalEmail"].as_str().unwrap_or_default()},
        "objectRef": object_ref,
        "responseStatus": {"code": code},
        "requestReceivedTimestamp": time,
        "stageTimestamp": time,
    });
    if let Some(r) = request {
        event["requestObject"] = r;
    }
    if let Some(r) = response {
        event["responseObject"] = r;
    }
    Some(event)
}
