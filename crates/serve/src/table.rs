//! `Table` responses (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`): the columns
//! kubectl prints for each kind, with ages measured to the served "now".

use rf_format::{Kind, Timestamp};
use serde_json::{Value, json};

use crate::json::{self, Meta};
use crate::resource::Resource;
use crate::timeline::Version;

/// What each row carries in its `object` field (`includeObject`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum IncludeObject {
    /// Nothing.
    None,
    /// A `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

struct Column {
    name: &'static str,
    ty: &'static str,
    priority: u8,
    description: &'static str,
}

const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column {
        name,
        ty,
        priority: 0,
        description,
    }
}

const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Column {
    Column {
        name,
        ty,
        priority: 1,
        description,
    }
}

const NAME: Column = col("Name", "string", "Name must be unique within a namespace.");
const AGE: Column = col(
    "Age",
    "string",
    "Time since creation, measured to the replayed moment.",
);

fn columns(kind: &Kind) -> Vec<Column> {
    match kind {
        Kind::Rollout => vec![
            NAME,
            col("Desired", "integer", "Number of desired pods"),
            col("Current", "integer", "Total number of non-terminated pods"),
            col("Up-to-date", "integer", "Total number of updated pods"),
            col("Available", "integer", "Total number of available pods"),
            AGE,
        ],
        Kind::ReplicaSet => vec![
            NAME,
            col("Desired", "integer", "Number of desired pods."),
            col("Current", "integer", "Number of actual replicas."),
            col("Ready", "integer", "Number of ready replicas."),
            AGE,
            wide(
                "Containers",
                "string",
                "Names of each container in the template.",
            ),
            wide(
                "Images",
                "string",
                "Images referenced by each container in the template.",
            ),
            wide("Selector", "string", "Label query over pods."),
        ],
        Kind::Pod => vec![
            NAME,
            col("Ready", "string", "Ready containers of all containers."),
            col(
                "Status",
                "string",
                "The aggregate status of the containers.",
            ),
            col("Restarts", "string", "The number of container restarts."),
            AGE,
            wide("IP", "string", "The pod's IP address."),
            wide("Node", "string", "The node the pod is scheduled to."),
        ],
        Kind::Service => vec![
            NAME,
            col("Type", "string", "How the service is exposed."),
            col("Cluster-IP", "string", "The service's cluster IP."),
            col("External-IP", "string", "External IPs of the service."),
            col("Port(s)", "string", "Ports the service exposes."),
            AGE,
            wide("Selector", "string", "Pods the service routes to."),
        ],
        Kind::EndpointSlice => vec![
            NAME,
            col("AddressType", "string", "Type of the addresses."),
            col("Ports", "string", "Ports of the endpoints."),
            col("Endpoints", "string", "Addresses of the endpoints."),
            AGE,
        ],
        Kind::Event => vec![
            col("Last Seen", "string", "Time since the event last occurred."),
            col("Type", "string", "Type of the event."),
            col("Reason", "string", "Why the event happened."),
            col("Object", "string", "The object the event is about."),
            col("Message", "string", "What happened."),
        ],
        Kind::Application => vec![
            NAME,
            col("Sync Status", "string", "Sync status"),
            col("Health Status", "string", "Health status"),
            AGE,
            wide("Revision", "string", "Revision"),
        ],
        Kind::Other { .. } => vec![NAME, AGE],
    }
}

/// kubectl's `HumanDuration`: `45s`, `3m20s`, `15m`, `5h30m`, `2d4h`, `1y20d`.
pub fn human_duration(nanos: i64) -> String {
    let secs = nanos / 1_000_000_000;
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    if secs < 0 {
        return "0s".to_owned();
    }
    if secs < 60 * 2 {
        return format!("{secs}s");
    }
    let minutes = secs / 60;
    if minutes < 10 {
        let s = secs % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses an RFC 3339 time.
pub fn parse_time(s: &str) -> Option<Timestamp> {
    let t = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    t.timestamp_nanos_opt().map(Timestamp)
}

fn age_since(s: Option<&str>, now: Timestamp) -> String {
    match s.and_then(parse_time) {
        Some(t) => human_duration(now.as_unix_nanos().saturating_sub(t.as_unix_nanos())),
        None => "<unknown>".to_owned(),
    }
}

fn int(v: &Value, path: &[&str]) -> Value {
    json!(get(v, path).and_then(Value::as_i64).unwrap_or(0))
}

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn text(v: &Value, path: &[&str]) -> String {
    match get(v, path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn or_none(s: String) -> String {
    if s.is_empty() { "<none>".to_owned() } else { s }
}

fn array<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn join(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(",")
}

fn selector_string(v: &Value) -> String {
    v.as_object()
        .map(|m| {
            join(m.iter().map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            }))
        })
        .unwrap_or_default()
}

fn pod_status(o: &Value) -> String {
    if get(o, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null()) {
        return "Terminating".to_owned();
    }
    let mut reason = text(o, &["status", "reason"]);
    if reason.is_empty() {
        reason = text(o, &["status", "phase"]);
    }
    for cs in array(o, &["status", "containerStatuses"]) {
        let waiting = text(cs, &["state", "waiting", "reason"]);
        if !waiting.is_empty() {
            return waiting;
        }
        let terminated = text(cs, &["state", "terminated", "reason"]);
        if !terminated.is_empty() {
            reason = terminated;
        }
    }
    or_none(reason)
}

fn service_ports(o: &Value) -> String {
    let ports = array(o, &["spec", "ports"]);
    if ports.is_empty() {
        return "<none>".to_owned();
    }
    join(ports.iter().map(|p| {
        let port = text(p, &["port"]);
        let proto = or_default(text(p, &["protocol"]), "TCP");
        match get(p, &["nodePort"]).and_then(Value::as_i64) {
            Some(np) => format!("{port}:{np}/{proto}"),
            None => format!("{port}/{proto}"),
        }
    }))
}

fn or_default(s: String, d: &str) -> String {
    if s.is_empty() { d.to_owned() } else { s }
}

fn external_ip(o: &Value) -> String {
    let ingress: Vec<String> = array(o, &["status", "loadBalancer", "ingress"])
        .iter()
        .map(|i| {
            let ip = text(i, &["ip"]);
            if ip.is_empty() {
                text(i, &["hostname"])
            } else {
                ip
            }
        })
        .collect();
    let external: Vec<String> = array(o, &["spec", "externalIPs"])
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let all: Vec<String> = ingress.into_iter().chain(external).collect();
    if !all.is_empty() {
        return all.join(",");
    }
    match text(o, &["spec", "type"]).as_str() {
        "LoadBalancer" => "<pending>".to_owned(),
        "ExternalName" => text(o, &["spec", "externalName"]),
        _ => "<none>".to_owned(),
    }
}

fn endpoints(o: &Value) -> String {
    let addrs: Vec<String> = array(o, &["endpoints"])
        .iter()
        .flat_map(|e| array(e, &["addresses"]).iter())
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    if addrs.is_empty() {
        return "<unset>".to_owned();
    }
    let shown = addrs.iter().take(3).cloned().collect::<Vec<_>>().join(",");
    if addrs.len() > 3 {
        format!("{shown} + {} more...", addrs.len() - 3)
    } else {
        shown
    }
}

fn event_last_seen(o: &Value, now: Timestamp) -> String {
    let last = [
        text(o, &["lastTimestamp"]),
        text(o, &["eventTime"]),
        text(o, &["series", "lastObservedTime"]),
        text(o, &["firstTimestamp"]),
        text(o, &["metadata", "creationTimestamp"]),
    ]
    .into_iter()
    .find(|s| !s.is_empty());
    let seen = age_since(last.as_deref(), now);
    let count = get(o, &["count"]).and_then(Value::as_i64).unwrap_or(0);
    let first = text(o, &["firstTimestamp"]);
    if count > 1 && !first.is_empty() {
        format!("{seen} (x{count} over {})", age_since(Some(&first), now))
    } else {
        seen
    }
}

/// The row cells of one object.
fn cells(kind: &Kind, o: &Value, meta: &Meta, now: Timestamp) -> Vec<Value> {
    let name = json!(meta.name);
    let age = json!(age_since(meta.creation_timestamp.as_deref(), now));
    match kind {
        Kind::Rollout => vec![
            name,
            int(o, &["spec", "replicas"]),
            int(o, &["status", "replicas"]),
            int(o, &["status", "updatedReplicas"]),
            int(o, &["status", "availableReplicas"]),
            age,
        ],
        Kind::ReplicaSet => {
            let containers = array(o, &["spec", "template", "spec", "containers"]);
            vec![
                name,
                int(o, &["spec", "replicas"]),
                int(o, &["status", "replicas"]),
                int(o, &["status", "readyReplicas"]),
                age,
                json!(join(containers.iter().map(|c| text(c, &["name"])))),
                json!(join(containers.iter().map(|c| text(c, &["image"])))),
                json!(or_none(selector_string(
                    get(o, &["spec", "selector", "matchLabels"]).unwrap_or(&Value::Null)
                ))),
            ]
        }
        Kind::Pod => {
            let statuses = array(o, &["status", "containerStatuses"]);
            let total = array(o, &["spec", "containers"]).len().max(statuses.len());
            let ready = statuses
                .iter()
                .filter(|c| get(c, &["ready"]).and_then(Value::as_bool) == Some(true))
                .count();
            let restarts: i64 = statuses
                .iter()
                .filter_map(|c| get(c, &["restartCount"]).and_then(Value::as_i64))
                .sum();
            vec![
                name,
                json!(format!("{ready}/{total}")),
                json!(pod_status(o)),
                json!(restarts.to_string()),
                age,
                json!(or_none(text(o, &["status", "podIP"]))),
                json!(or_none(text(o, &["spec", "nodeName"]))),
            ]
        }
        Kind::Service => vec![
            name,
            json!(or_default(text(o, &["spec", "type"]), "ClusterIP")),
            json!(or_none(text(o, &["spec", "clusterIP"]))),
            json!(external_ip(o)),
            json!(service_ports(o)),
            age,
            json!(or_none(selector_string(
                get(o, &["spec", "selector"]).unwrap_or(&Value::Null)
            ))),
        ],
        Kind::EndpointSlice => {
            let ports = array(o, &["ports"]);
            let ports = if ports.is_empty() {
                "<unset>".to_owned()
            } else {
                join(ports.iter().map(|p| text(p, &["port"])))
            };
            vec![
                name,
                json!(text(o, &["addressType"])),
                json!(ports),
                json!(endpoints(o)),
                age,
            ]
        }
        Kind::Event => {
            let kind = text(o, &["involvedObject", "kind"]).to_lowercase();
            let obj_name = text(o, &["involvedObject", "name"]);
            vec![
                json!(event_last_seen(o, now)),
                json!(text(o, &["type"])),
                json!(text(o, &["reason"])),
                json!(format!("{kind}/{obj_name}")),
                json!(text(o, &["message"]).trim()),
            ]
        }
        Kind::Application => vec![
            name,
            json!(text(o, &["status", "sync", "status"])),
            json!(text(o, &["status", "health", "status"])),
            age,
            json!(text(o, &["status", "sync", "revision"])),
        ],
        Kind::Other { .. } => vec![name, age],
    }
}

/// The `columnDefinitions` of a kind's table.
fn column_definitions(kind: &Kind) -> Value {
    Value::Array(
        columns(kind)
            .into_iter()
            .map(|c| {
                json!({
                    "name": c.name,
                    "type": c.ty,
                    "format": if c.name == "Name" { "name" } else { "" },
                    "description": c.description,
                    "priority": c.priority,
                })
            })
            .collect(),
    )
}

fn write_row(
    out: &mut Vec<u8>,
    resource: &Resource,
    v: &Version,
    include: IncludeObject,
    now: Timestamp,
) {
    // Rebuilt once (a kept version may be a delta) for the cells and the object.
    let bytes = v.json.bytes();
    let o: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let cells = cells(&resource.kind, &o, &v.meta, now);
    out.extend_from_slice(b"{\"cells\":");
    out.extend_from_slice(&json::to_vec(&cells));
    match include {
        IncludeObject::None => {}
        IncludeObject::Object => {
            out.extend_from_slice(b",\"object\":");
            out.extend_from_slice(&bytes);
        }
        IncludeObject::Metadata => {
            out.extend_from_slice(
                b",\"object\":{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":",
            );
            match json::raw_metadata(&bytes) {
                Some(m) => out.extend_from_slice(m.get().as_bytes()),
                None => out.extend_from_slice(b"{}"),
            }
            out.push(b'}');
        }
    }
    out.push(b'}');
}

/// A `Table` of `rows`, with `list_meta` as its metadata.
pub fn table<'a>(
    resource: &Resource,
    rows: impl IntoIterator<Item = &'a Version>,
    list_meta: &Value,
    include: IncludeObject,
    now: Timestamp,
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":");
    out.extend_from_slice(&json::to_vec(list_meta));
    out.extend_from_slice(b",\"columnDefinitions\":");
    out.extend_from_slice(&json::to_vec(&column_definitions(&resource.kind)));
    out.extend_from_slice(b",\"rows\":[");
    for (i, v) in rows.into_iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_row(&mut out, resource, v, include, now);
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        let s = 1_000_000_000i64;
        assert_eq!(human_duration(-5 * s), "<invalid>");
        assert_eq!(human_duration(-s / 2), "0s");
        assert_eq!(human_duration(45 * s), "45s");
        assert_eq!(human_duration(119 * s), "119s");
        assert_eq!(human_duration(200 * s), "3m20s");
        assert_eq!(human_duration(360 * s), "6m");
        assert_eq!(human_duration(15 * 60 * s), "15m");
        assert_eq!(human_duration(330 * 60 * s), "5h30m");
        assert_eq!(human_duration(20 * 3600 * s), "20h");
        assert_eq!(human_duration(52 * 3600 * s), "2d4h");
        assert_eq!(human_duration(30 * 86400 * s), "30d");
        assert_eq!(human_duration(385 * 2 * 86400 * s), "2y40d");
    }

    #[test]
    fn a_replicaset_row_has_desired_current_ready_and_age() {
        let json = br#"{"metadata":{"name":"web-1","namespace":"n","creationTimestamp":"2026-03-14T13:00:00Z"},"spec":{"replicas":5,"template":{"spec":{"containers":[{"name":"app","image":"img:1"}]}}},"status":{"replicas":5,"readyReplicas":3}}"#;
        let v = Version {
            json: crate::Json::whole(json),
            meta: json::meta(json).unwrap(),
            index: 0,
        };
        let now = parse_time("2026-03-14T13:06:00Z").unwrap();
        let r = Resource::for_kind(&Kind::ReplicaSet);
        let t: Value = serde_json::from_slice(&table(
            &r,
            [&v],
            &json!({"resourceVersion": "9"}),
            IncludeObject::Metadata,
            now,
        ))
        .unwrap();
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["columnDefinitions"][1]["name"], "Desired");
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["web-1", 5, 5, 3, "6m", "app", "img:1", "<none>"])
        );
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["rows"][0]["object"]["metadata"]["name"], "web-1");
    }

    #[test]
    fn an_event_row_names_its_object_and_repeats() {
        let json = br#"{"metadata":{"name":"e"},"type":"Normal","reason":"RolloutPaused","message":"paused ","involvedObject":{"kind":"Rollout","name":"checkout-api"},"count":2,"firstTimestamp":"2026-03-14T13:00:00Z","lastTimestamp":"2026-03-14T13:05:00Z"}"#;
        let o: Value = serde_json::from_slice(json).unwrap();
        let now = parse_time("2026-03-14T13:06:00Z").unwrap();
        let c = cells(&Kind::Event, &o, &json::meta(json).unwrap(), now);
        assert_eq!(
            c,
            [
                json!("60s (x2 over 6m)"),
                json!("Normal"),
                json!("RolloutPaused"),
                json!("rollout/checkout-api"),
                json!("paused")
            ]
        );
    }
}
