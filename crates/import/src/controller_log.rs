//! The Argo Rollouts controller's logs: every Event it emits is also a log line.

use serde_json::{Map, Value, json};

use crate::build::{Imported, parse_time};
use crate::error::{Error, Result};
use crate::events::one_list;
use crate::input::{Diagnostic, Input, Text};

/// Imports the Argo Rollouts controller's logs (`kubectl logs -n argo-rollouts
/// deploy/argo-rollouts`, with or without `--timestamps` and `--prefix`), in its text format
/// (logfmt: `time="..." level=info msg="..." event_reason=... namespace=... rollout=...`) or its
/// JSON format (`--logformat json`). The controller logs each Event it emits with its reason in
/// `event_reason`; each such line becomes that Event, once (a log line is one occurrence, where
/// the API server folds repeats into one Event with a count), and they are listed as
/// [`events`](crate::events) lists exported Events: what `analyze` reconstructs from. Its time is
/// the line's `time` (whole seconds), or the runtime's timestamp `--timestamps` puts in front
/// (to the nanosecond). Other lines are counted, not read; an input with no Event line is an
/// error.
pub fn controller_log(inputs: Vec<Input>) -> Result<Imported> {
    if inputs.is_empty() {
        return Err(Error::NoInput);
    }
    let mut warnings = Vec::new();
    let mut events = Vec::new();
    for input in inputs {
        let text = Text::read(input, &mut warnings)?;
        let before = events.len();
        let mut unreadable: Option<(u64, u64)> = None;
        for (i, raw) in String::from_utf8_lossy(&text.bytes).lines().enumerate() {
            let line = i as u64 + 1;
            let Some(fields) = fields(raw) else {
                if !raw.trim().is_empty() {
                    let u = unreadable.get_or_insert((0, line));
                    u.0 += 1;
                }
                continue;
            };
            let get = |k: &str| fields.get(k).and_then(Value::as_str).unwrap_or_default();
            let (reason, namespace, rollout) =
                (get("event_reason"), get("namespace"), get("rollout"));
            if reason.is_empty() || rollout.is_empty() {
                continue;
            }
            let time = fields
                .get("stamp")
                .and_then(Value::as_str)
                .and_then(parse_time)
                .map(|t| (t, true))
                .or_else(|| parse_time(get("time")).map(|t| (t, false)));
            let Some((at, exact)) = time else {
                warnings.push(Diagnostic::new(
                    &text.name,
                    line,
                    "an Event line with no time it can read; skipped".to_owned(),
                ));
                continue;
            };
            let stamp = if exact {
                fields["stamp"].clone()
            } else {
                Value::String(get("time").to_owned())
            };
            let mut event = json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {
                    // ROLLOUT.log-LINE-INPUT: analyze orders one log's lines of one second by
                    // their line (not the recorder's OBJECT.HEX naming: the time is the line's).
                    "name": format!("{rollout}.log-{line}-{}", text.name.replace(['/', ' '], "_")),
                    "namespace": namespace,
                    "uid": format!("controller-log:{}:{line}", text.name),
                },
                "involvedObject": {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "Rollout",
                    "name": rollout,
                    "namespace": namespace,
                },
                "reason": reason,
                "message": get("msg"),
                "type": if get("level") == "warning" { "Warning" } else { "Normal" },
                "count": 1,
                "source": {"component": "rollouts-controller"},
            });
            if exact {
                event["eventTime"] = stamp;
            } else {
                event["firstTimestamp"] = stamp.clone();
                event["lastTimestamp"] = stamp;
            }
            events.push((event, at));
        }
        if let Some((n, first)) = unreadable {
            warnings.push(Diagnostic::new(
                &text.name,
                first,
                format!("{n} line(s) neither logfmt nor JSON; skipped"),
            ));
        }
        if events.len() == before {
            return Err(Error::NothingUsable {
                input: text.name.clone(),
                line: 1,
                format: "controller-log",
                detail: "no line with an event_reason, namespace and rollout: is this the Argo Rollouts controller's log?".to_owned(),
            });
        }
    }
    Ok(one_list(
        events,
        "import:controller-log",
        &[
            ("source", "controller-log"),
            (
                "times",
                "the log lines' (whole seconds unless --timestamps)",
            ),
        ],
        warnings,
    ))
}

/// A log line's fields: JSON, or logfmt; `stamp` is the timestamp `kubectl logs --timestamps`
/// puts in front, when there is one. `None` for a line that is neither.
fn fields(raw: &str) -> Option<Map<String, Value>> {
    let mut line = raw.trim();
    // `kubectl logs --prefix`: `[pod/NAME/CONTAINER] `.
    if line.starts_with('[') {
        if let Some((_, rest)) = line.split_once("] ") {
            line = rest.trim_start();
        }
    }
    let mut stamp = None;
    if let Some((first, rest)) = line.split_once(' ') {
        if !first.contains('=') && !first.starts_with('{') && parse_time(first).is_some() {
            stamp = Some(first.to_owned());
            line = rest.trim_start();
        }
    }
    let mut map = if line.starts_with('{') {
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => m,
            _ => return None,
        }
    } else {
        logfmt(line)?
    };
    if let Some(s) = stamp {
        map.insert("stamp".to_owned(), Value::String(s));
    }
    Some(map)
}

/// `key=value key="quoted \"value\""`, as logrus's text formatter writes it.
fn logfmt(line: &str) -> Option<Map<String, Value>> {
    let mut map = Map::new();
    let mut rest = line;
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let key = key.trim();
        if key.is_empty() || key.contains(' ') || key.contains('"') {
            return None;
        }
        let (value, after) = if let Some(quoted) = after.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = None;
            while let Some((i, c)) = chars.next() {
                match c {
                    '\\' => match chars.next() {
                        Some((_, 'n')) => value.push('\n'),
                        Some((_, 't')) => value.push('\t'),
                        Some((_, e)) => value.push(e),
                        None => return None,
                    },
                    '"' => {
                        end = Some(i + 1);
                        break;
                    }
                    _ => value.push(c),
                }
            }
            (value, &quoted[end?..])
        } else {
            let end = after.find(' ').unwrap_or(after.len());
            (after[..end].to_owned(), &after[end..])
        };
        map.insert(key.to_owned(), Value::String(value));
        rest = after.trim_start();
    }
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::listed;

    fn import(text: &str) -> Result<Imported> {
        controller_log(vec![Input::new(
            "controller.log",
            std::io::Cursor::new(text.to_owned()),
        )])
    }

    /// Lines as the real controller (1.10.2) wrote them in the real-cluster suite.
    const TEXT: &str = r#"time="2026-12-06T04:26:57Z" level=info msg="Start processing" resource=seed/checkout-api
time="2026-12-06T04:27:05Z" level=info msg="Pod template change detected (new: 774f4b6fd4, old: 7d4c9cb965)" namespace=seed rollout=checkout-api
time="2026-12-06T04:27:05Z" level=info msg="Rollout updated to revision 2" event_reason=RolloutUpdated namespace=seed rollout=checkout-api
time="2026-12-06T04:27:13Z" level=info msg="Rollout step 1/4 completed (setWeight: 20)" event_reason=RolloutStepCompleted namespace=seed rollout=checkout-api
time="2026-12-06T04:27:13Z" level=info msg="Patched: {\"status\":{\"controllerPause\":true}}" namespace=seed rollout=checkout-api
not a log line at all
"#;

    #[test]
    fn the_controllers_event_lines_become_its_events_once_each() {
        let imported = import(TEXT).unwrap();
        let events = listed(&imported);
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0]["reason"], "RolloutUpdated");
        assert_eq!(events[0]["message"], "Rollout updated to revision 2");
        assert_eq!(events[0]["involvedObject"]["kind"], "Rollout");
        assert_eq!(events[0]["involvedObject"]["name"], "checkout-api");
        assert_eq!(events[0]["metadata"]["namespace"], "seed");
        assert_eq!(events[1]["firstTimestamp"], "2026-12-06T04:27:13Z");
        assert!(
            imported
                .warnings
                .iter()
                .any(|w| w.to_string()
                    == "controller.log:6: 1 line(s) neither logfmt nor JSON; skipped"),
            "{:?}",
            imported.warnings
        );
    }

    #[test]
    fn json_lines_and_kubectl_timestamps_and_prefixes_are_read() {
        let text = concat!(
            "[pod/argo-rollouts-5f/argo-rollouts] 2026-12-06T04:27:13.123456789Z ",
            r#"{"event_reason":"RolloutPaused","level":"info","msg":"Rollout is paused (CanaryPauseStep)","namespace":"seed","rollout":"checkout-api","time":"2026-12-06T04:27:13Z"}"#,
            "\n"
        );
        let imported = import(text).unwrap();
        let events = listed(&imported);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0]["reason"], "RolloutPaused");
        // The runtime's timestamp, to the nanosecond.
        assert_eq!(events[0]["eventTime"], "2026-12-06T04:27:13.123456789Z");
        assert!(events[0].get("firstTimestamp").is_none());
    }

    #[test]
    fn a_log_without_event_lines_is_an_error() {
        match import("time=\"2026-12-06T04:26:57Z\" level=info msg=\"Start processing\"\n") {
            Err(Error::NothingUsable {
                format: "controller-log",
                ..
            }) => {}
            other => panic!("{other:?}"),
        }
    }
}
