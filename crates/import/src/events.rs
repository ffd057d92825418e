//! Exports of Kubernetes Events: what the cluster kept of what its controllers did.

use std::collections::BTreeMap;

use rf_format::{Kind, Op, Timestamp};
use serde_json::Value;

use crate::build::{Builder, Imported, ObjectMeta, parse_time};
use crate::error::{Error, Result};
use crate::input::{Diagnostic, Input, Text};
use crate::kubectl::documents;

/// Imports exported Events as one list of them, as a recorder starting when the last of them
/// happened would have listed them: `analyze` reads such a list as the history before the
/// recording, and reconstructs from it (docs/import.md).
///
/// Each input is a sequence of JSON documents, pretty or compact or one per line:
/// `kubectl get events -A -o json` (a `List`), `kubectl get events -w -o json` (bare Events,
/// or watch events with `--output-watch-events`), the JSON lines of an event exporter
/// (kubernetes-event-exporter writes each Event as a line, its `involvedObject` enriched with
/// labels; a log store may wrap it as `{"event": {...}}`). Core `v1` and `events.k8s.io/v1`
/// Events are read; an Event seen again (by uid, else by namespace and name) keeps its latest
/// version (the highest count, then the latest time). A document that is not an Event is skipped
/// with a warning, one per shape; an input with no Event is an error.
pub fn events(inputs: Vec<Input>) -> Result<Imported> {
    if inputs.is_empty() {
        return Err(Error::NoInput);
    }
    let mut warnings = Vec::new();
    let mut latest: BTreeMap<String, (Value, Timestamp, i64)> = BTreeMap::new();
    let mut skipped: BTreeMap<&'static str, (u64, String, u64)> = BTreeMap::new();
    for input in inputs {
        let text = Text::read(input, &mut warnings)?;
        let before = latest.len();
        let mut first_rejection = None;
        for (line, doc) in documents(&text, &mut warnings) {
            let mut found = Vec::new();
            collect(doc, &mut found);
            if found.is_empty() {
                first_rejection.get_or_insert(line);
                skipped
                    .entry("a document that holds no Event")
                    .or_insert_with(|| (0, text.name.clone(), line))
                    .0 += 1;
            }
            for event in found {
                let Some(at) = last_time(&event) else {
                    warnings.push(Diagnostic::new(
                        &text.name,
                        line,
                        "an Event with no time (no lastTimestamp, eventTime, firstTimestamp or creationTimestamp); skipped".to_owned(),
                    ));
                    continue;
                };
                let count = count(&event);
                let meta = ObjectMeta::of(&event);
                let key = if meta.uid.is_empty() {
                    format!("{}/{}", meta.namespace, meta.name)
                } else {
                    meta.uid.clone()
                };
                let newer = latest
                    .get(&key)
                    .is_none_or(|(_, t, c)| (count, at) >= (*c, *t));
                if newer {
                    latest.insert(key, (event, at, count));
                }
            }
        }
        if latest.len() == before && !text.bytes.is_empty() {
            return Err(Error::NothingUsable {
                input: text.name.clone(),
                line: first_rejection.unwrap_or(1),
                format: "events",
                detail: "no Event in it".to_owned(),
            });
        }
    }
    for (what, (n, input, line)) in &skipped {
        warnings.push(Diagnostic::new(
            input,
            *line,
            format!("{n} document(s): {what}; skipped"),
        ));
    }
    let events: Vec<(Value, Timestamp)> = latest.into_values().map(|(v, t, _)| (v, t)).collect();
    Ok(one_list(
        events,
        "import:events",
        &[("source", "events"), ("times", "the Events' own")],
        warnings,
    ))
}

/// Events as one list at the time of the last: ListBegin, the Events oldest first, ListEnd.
pub(crate) fn one_list(
    mut events: Vec<(Value, Timestamp)>,
    context: &str,
    notes: &[(&str, &str)],
    warnings: Vec<Diagnostic>,
) -> Imported {
    let at = events.iter().map(|(_, t)| *t).max().unwrap_or(Timestamp(0));
    let mut builder = Builder::default();
    let marker = ObjectMeta {
        namespace: String::new(),
        name: String::new(),
        uid: String::new(),
        resource_version: String::new(),
    };
    builder.push(at, 0, Kind::Event, Op::ListBegin, &marker, None, None);
    // Stable: Events of one time keep their input order.
    events.sort_by_key(|(_, t)| *t);
    let n = events.len() as u64;
    for (i, (event, _)) in events.iter().enumerate() {
        let meta = ObjectMeta::of(event);
        builder.push(
            at,
            i as u64 + 1,
            Kind::Event,
            Op::Listed,
            &meta,
            None,
            Some(event),
        );
    }
    builder.push(at, n + 1, Kind::Event, Op::ListEnd, &marker, None, None);
    builder.finish(context, notes, warnings)
}

/// The Events in a document: itself, a `List`'s items, a watch event's object, an exporter's
/// `{"event": {...}}`.
fn collect(doc: Value, out: &mut Vec<Value>) {
    match doc {
        Value::Object(mut o) => {
            if let Some(Value::Array(items)) = o.remove("items") {
                for item in items {
                    collect(item, out);
                }
                return;
            }
            if o.contains_key("type") && o.contains_key("object") && o.len() == 2 {
                if let Some(object) = o.remove("object") {
                    collect(object, out);
                }
                return;
            }
            if let Some(inner @ Value::Object(_)) = o.remove("event") {
                collect(inner, out);
                return;
            }
            let about = o.contains_key("involvedObject") || o.contains_key("regarding");
            let kind_ok = o
                .get("kind")
                .and_then(Value::as_str)
                .is_none_or(|k| k == "Event");
            if about && kind_ok && o.contains_key("reason") {
                let core = o.contains_key("involvedObject");
                o.entry("apiVersion").or_insert_with(|| {
                    Value::String(if core { "v1" } else { "events.k8s.io/v1" }.to_owned())
                });
                o.entry("kind")
                    .or_insert_with(|| Value::String("Event".to_owned()));
                out.push(Value::Object(o));
            }
        }
        Value::Array(items) => {
            for item in items {
                collect(item, out);
            }
        }
        _ => {}
    }
}

/// When it last happened.
fn last_time(event: &Value) -> Option<Timestamp> {
    [
        "/lastTimestamp",
        "/deprecatedLastTimestamp",
        "/series/lastObservedTime",
        "/eventTime",
        "/firstTimestamp",
        "/deprecatedFirstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| {
        event
            .pointer(p)
            .and_then(Value::as_str)
            .and_then(parse_time)
    })
}

fn count(event: &Value) -> i64 {
    ["/count", "/deprecatedCount", "/series/count"]
        .iter()
        .find_map(|p| event.pointer(p).and_then(Value::as_i64))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::build::listed;

    fn event(uid: &str, count: i64, last: &str) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("checkout-api.{uid}"), "namespace": "shop", "uid": uid},
            "involvedObject": {"kind": "Rollout", "name": "checkout-api", "namespace": "shop"},
            "reason": "RolloutPaused", "message": "Rollout is paused (CanaryPauseStep)",
            "count": count, "firstTimestamp": "2026-05-01T10:00:00Z", "lastTimestamp": last
        })
    }

    fn import(text: &str) -> Result<Imported> {
        events(vec![Input::new(
            "export.json",
            std::io::Cursor::new(text.to_owned()),
        )])
    }

    #[test]
    fn every_export_shape_becomes_one_list_of_the_latest_version_of_each_event() {
        let a1 = event("a", 1, "2026-05-01T10:00:00Z");
        let a2 = event("a", 2, "2026-05-01T10:00:30Z");
        let b = event("b", 1, "2026-05-01T10:00:10Z");
        // kubectl get events -o json: a List; -w -o json: bare objects, or watch events; an
        // exporter's lines, wrapped or not.
        let list = json!({"apiVersion": "v1", "kind": "List", "items": [a1, b]}).to_string();
        let watch = format!(
            "{}\n{}\n",
            json!({"type": "ADDED", "object": b}),
            json!({"type": "MODIFIED", "object": a2})
        );
        let exporter = format!("{}\n{}\n", json!({"event": a1}), a2);
        for text in [
            format!("{list}\n{watch}"),
            exporter.clone() + &b.to_string(),
        ] {
            let imported = import(&text).unwrap();
            let ops: Vec<Op> = imported.records.iter().map(|r| r.op.clone()).collect();
            assert_eq!(
                ops,
                [Op::ListBegin, Op::Listed, Op::Listed, Op::ListEnd],
                "{text}"
            );
            let events = listed(&imported);
            // Oldest last first; `a` at its latest count.
            assert_eq!(events[0]["metadata"]["uid"], "b");
            assert_eq!(events[1]["count"], 2);
            // The list is at the time of the last Event.
            assert_eq!(
                imported.records[0].observed_at,
                parse_time("2026-05-01T10:00:30Z").unwrap()
            );
        }
    }

    #[test]
    fn an_events_k8s_io_event_without_kind_is_read() {
        let e = json!({
            "metadata": {"name": "r.17", "namespace": "shop", "uid": "u"},
            "regarding": {"kind": "Rollout", "name": "r", "namespace": "shop"},
            "reason": "RolloutResumed", "note": "Rollout is resumed",
            "eventTime": "2026-05-01T10:00:00.123456Z",
            "series": {"count": 3, "lastObservedTime": "2026-05-01T10:05:00.000001Z"}
        });
        let imported = import(&e.to_string()).unwrap();
        let events = listed(&imported);
        assert_eq!(events[0]["apiVersion"], "events.k8s.io/v1");
        assert_eq!(events[0]["kind"], "Event");
        assert_eq!(
            imported.records[0].observed_at,
            parse_time("2026-05-01T10:05:00.000001Z").unwrap()
        );
    }

    #[test]
    fn an_input_with_no_event_is_an_error_and_other_documents_are_skipped() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}});
        match import(&pod.to_string()) {
            Err(Error::NothingUsable {
                format: "events", ..
            }) => {}
            other => panic!("{other:?}"),
        }
        let text = format!("{pod}\n{}\n", event("a", 1, "2026-05-01T10:00:00Z"));
        let imported = import(&text).unwrap();
        assert_eq!(listed(&imported).len(), 1);
        assert!(
            imported.warnings.iter().any(|w| w
                .to_string()
                .contains("export.json:1: 1 document(s): a document that holds no Event; skipped")),
            "{:?}",
            imported.warnings
        );
    }
}
