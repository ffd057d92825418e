//! `kubectl get KIND -w -o json [--output-watch-events]` captures.

use std::collections::HashSet;

use rf_format::{Kind, Op, Timestamp};
use serde_json::Value;

use crate::build::{Builder, Imported, ObjectMeta, parse_time, recorded_kind};
use crate::error::{Error, Result};
use crate::input::{Diagnostic, Input, Text};

/// Imports kubectl watch captures, one input per `kubectl get -w` (one per kind, say), merged.
///
/// Each input is a sequence of JSON documents, pretty or compact or one per line: watch events
/// (`{"type": "ADDED", "object": {...}}`), bare objects, or `List`s of objects. A document that
/// is not valid JSON, is of an unknown apiVersion or has no time is skipped with a warning;
/// reading resumes at the next line that starts with `{`. An object of a kind rollout-forensics
/// does not read (an AnalysisRun, a ConfigMap, a Job, another CRD) is skipped, with one warning
/// per kind. An input that is empty, or in which not one document could be used (nor skipped
/// for its kind), is an error, and so is a capture of only kinds that are not read.
pub fn kubectl_watch(inputs: Vec<Input>) -> Result<Imported> {
    if inputs.is_empty() {
        return Err(Error::NoInput);
    }
    let mut warnings = Vec::new();
    let mut builder = Builder::default();
    let mut shared = Shared::default();
    let mut first_input = None;
    let mut managed_fields = false;
    let several = inputs.len() > 1;
    let mut empty = Vec::new();
    let count = inputs.len();
    for input in inputs {
        // A capture of a kind with no objects is an empty file: among others, it says so and
        // is skipped; alone, or when every file is empty, there is nothing to import.
        let text = match Text::read(input, &mut warnings) {
            Err(Error::Empty { input }) if several => {
                warnings.push(Diagnostic::new(
                    &input,
                    1,
                    "empty: nothing was captured in it (a kind with no objects); skipped"
                        .to_owned(),
                ));
                empty.push(input);
                if empty.len() == count {
                    return Err(Error::Empty {
                        input: empty.swap_remove(0),
                    });
                }
                continue;
            }
            other => other?,
        };
        first_input.get_or_insert_with(|| text.name.clone());
        let mut stream = Stream {
            text: &text,
            last: None,
            last_kind: None,
            tiebreak: 0,
            used: 0,
            unread: 0,
            managed_fields: false,
            first_rejection: None,
        };
        for (line, doc) in documents(&text, &mut warnings) {
            stream.document(line, doc, &mut builder, &mut shared, &mut warnings);
        }
        managed_fields |= stream.managed_fields;
        if stream.used == 0 && stream.unread == 0 {
            let (line, detail) = stream
                .first_rejection
                .unwrap_or((1, "no JSON document in it".to_owned()));
            return Err(Error::NothingUsable {
                input: text.name.clone(),
                line,
                format: "kubectl-watch",
                detail,
            });
        }
    }
    let unread = shared.unread;
    unread.warn(&mut warnings);
    let first_input = first_input.unwrap_or_default();
    if builder.is_empty() {
        return Err(Error::NothingUsable {
            input: first_input,
            line: 1,
            format: "kubectl-watch",
            detail: format!(
                "only kinds rollout-forensics does not read: {}",
                unread.kinds()
            ),
        });
    }
    if !managed_fields {
        warnings.push(Diagnostic::new(
            &first_input,
            1,
            "no object has metadata.managedFields (kubectl hides them since 1.21): who made each change is not known, and a change that touches no other timestamp is dated by the event before it; capture with `kubectl get ... -w -o json --show-managed-fields`".to_owned(),
        ));
    }
    builder.raise_times_in_resource_version_order();
    Ok(builder.finish(
        "import:kubectl-watch",
        &[("times", "approximate"), ("source", "kubectl-watch")],
        warnings,
    ))
}

/// The JSON documents of an input with the line each starts on. Invalid JSON is reported and
/// skipped up to the next line that starts with `{`.
pub(crate) fn documents(text: &Text, warnings: &mut Vec<Diagnostic>) -> Vec<(u64, Value)> {
    let mut docs = Vec::new();
    let mut start = 0;
    while start < text.bytes.len() {
        let slice = &text.bytes[start..];
        let mut stream = serde_json::Deserializer::from_slice(slice).into_iter::<Value>();
        loop {
            let before = stream.byte_offset();
            let doc_start = start
                + before
                + slice[before..]
                    .iter()
                    .position(|b| !b.is_ascii_whitespace())
                    .unwrap_or(slice.len() - before);
            match stream.next() {
                None => return docs,
                Some(Ok(v)) => docs.push((text.line_of(doc_start), v)),
                Some(Err(e)) => {
                    let line = text.line_of(doc_start);
                    let error_line = text.line_of(start) + e.line().saturating_sub(1) as u64;
                    let mut message = format!("invalid JSON: {}", strip_position(&e));
                    if error_line != line {
                        message.push_str(&format!(" (at line {error_line})"));
                    }
                    message.push_str("; document skipped");
                    warnings.push(Diagnostic::new(&text.name, line, message));
                    start = next_document_start(text, line);
                    break;
                }
            }
        }
    }
    docs
}

/// serde_json's message without its ` at line L column C` suffix (positions are reported in
/// the diagnostic's own terms).
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(p) => s[..p].to_owned(),
        None => s,
    }
}

/// The offset of the first line after `line` that starts with `{`: the next document in both
/// pretty (kubectl indents everything inside a document) and line-per-document output.
fn next_document_start(text: &Text, line: u64) -> usize {
    let mut l = line + 1;
    loop {
        let offset = text.line_start(l);
        if offset >= text.bytes.len() || text.bytes[offset] == b'{' {
            return offset;
        }
        l += 1;
    }
}

/// What the inputs share: the objects seen (by uid or name), the kinds skipped.
#[derive(Default)]
struct Shared {
    seen: HashSet<String>,
    unread: Unread,
}

/// The objects skipped because rollout-forensics does not read their kind: per apiVersion and
/// kind, how many and where the first was.
#[derive(Default)]
struct Unread {
    kinds: std::collections::BTreeMap<(String, String), (u64, String, u64)>,
}

impl Unread {
    fn add(&mut self, api_version: &str, kind: &str, input: &str, line: u64) {
        self.kinds
            .entry((api_version.to_owned(), kind.to_owned()))
            .or_insert_with(|| (0, input.to_owned(), line))
            .0 += 1;
    }

    /// One warning per kind.
    fn warn(&self, warnings: &mut Vec<Diagnostic>) {
        for ((api_version, kind), (n, input, line)) in &self.kinds {
            warnings.push(Diagnostic::new(
                input,
                *line,
                format!(
                    "{n} object(s) of kind {kind} ({api_version}), which rollout-forensics does not read; skipped"
                ),
            ));
        }
    }

    /// The kinds, for an error.
    fn kinds(&self) -> String {
        let kinds: Vec<String> = self
            .kinds
            .keys()
            .map(|(api_version, kind)| format!("{kind} ({api_version})"))
            .collect();
        kinds.join(", ")
    }
}

struct Stream<'t> {
    text: &'t Text,
    /// The time of the stream's last event: times never go backwards within a stream.
    last: Option<Timestamp>,
    last_kind: Option<Kind>,
    /// The highest resourceVersion so far: orders equal times across inputs.
    tiebreak: u64,
    used: u64,
    /// Objects skipped for their kind.
    unread: u64,
    /// An object with `metadata.managedFields` was seen.
    managed_fields: bool,
    first_rejection: Option<(u64, String)>,
}

impl Stream<'_> {
    fn reject(&mut self, line: u64, message: String, warnings: &mut Vec<Diagnostic>) {
        if self.first_rejection.is_none() {
            self.first_rejection = Some((line, message.clone()));
        }
        warnings.push(Diagnostic::new(&self.text.name, line, message));
    }

    fn document(
        &mut self,
        line: u64,
        doc: Value,
        builder: &mut Builder,
        shared: &mut Shared,
        warnings: &mut Vec<Diagnostic>,
    ) {
        let (event_type, object) = match doc {
            Value::Object(mut map) if map.contains_key("type") && map.contains_key("object") => {
                let t = map
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned();
                (Some(t), map.remove("object").unwrap_or_default())
            }
            v @ Value::Object(_) => (None, v),
            _ => {
                return self.reject(
                    line,
                    "not a JSON object; document skipped".to_owned(),
                    warnings,
                );
            }
        };
        match event_type.as_deref() {
            None if object["items"].is_array()
                && object["kind"].as_str().is_some_and(|k| k.ends_with("List")) =>
            {
                if let Value::Array(items) = object["items"].clone() {
                    for item in items {
                        self.object(line, None, item, builder, shared, warnings);
                    }
                }
            }
            None => self.object(line, None, object, builder, shared, warnings),
            Some("BOOKMARK") => {}
            Some("ERROR") => {
                let message = object["message"]
                    .as_str()
                    .unwrap_or("watch error")
                    .to_owned();
                warnings.push(Diagnostic::new(
                    &self.text.name,
                    line,
                    format!("the watch reported an error: {message}; recorded as a gap"),
                ));
                if let (Some(kind), Some(at)) = (self.last_kind.clone(), self.last) {
                    builder.push(
                        at,
                        self.tiebreak,
                        kind,
                        Op::Gap {
                            reason: format!("kubectl watch error: {message}"),
                        },
                        &ObjectMeta::default(),
                        None,
                        None,
                    );
                }
            }
            Some(t @ ("ADDED" | "MODIFIED" | "DELETED")) => {
                let t = t.to_owned();
                self.object(line, Some(&t), object, builder, shared, warnings);
            }
            Some(other) => self.reject(
                line,
                format!("unknown watch event type {other:?}; skipped"),
                warnings,
            ),
        }
    }

    fn object(
        &mut self,
        line: u64,
        event_type: Option<&str>,
        object: Value,
        builder: &mut Builder,
        shared: &mut Shared,
        warnings: &mut Vec<Diagnostic>,
    ) {
        let kind = match recorded_kind(&object) {
            Ok(k) => k,
            Err(crate::build::NotRecorded::Unread { api_version, kind }) => {
                self.unread += 1;
                return shared
                    .unread
                    .add(&api_version, &kind, &self.text.name, line);
            }
            Err(e) => return self.reject(line, format!("{e}; skipped"), warnings),
        };
        self.managed_fields |= object["metadata"]["managedFields"]
            .as_array()
            .is_some_and(|m| !m.is_empty());
        let meta = ObjectMeta::of(&object);
        if meta.name.is_empty() {
            return self.reject(
                line,
                "object without metadata.name; skipped".to_owned(),
                warnings,
            );
        }
        let at = match (object_time(&object), self.last) {
            (Some(t), Some(last)) => t.max(last),
            (Some(t), None) => t,
            (None, Some(last)) => last,
            (None, None) => {
                return self.reject(
                    line,
                    "object carries no timestamp to date it by; skipped".to_owned(),
                    warnings,
                );
            }
        };
        self.last = Some(at);
        self.last_kind = Some(kind.clone());
        self.used += 1;
        let key = if meta.uid.is_empty() {
            format!("{kind}/{}/{}", meta.namespace, meta.name)
        } else {
            meta.uid.clone()
        };
        let op = if event_type == Some("DELETED") {
            shared.seen.remove(&key);
            Op::Deleted { inferred: false }
        } else if shared.seen.insert(key) {
            Op::Added
        } else {
            Op::Modified
        };
        // Across inputs, equal times are ordered by resourceVersion; within one, by position.
        if let Ok(rv) = meta.resource_version.parse::<u64>() {
            self.tiebreak = self.tiebreak.max(rv);
        }
        let tiebreak = self.tiebreak;
        builder.push(at, tiebreak, kind, op, &meta, None, Some(&object));
    }
}

/// The latest time an object carries: `managedFields[].time`, condition `lastUpdateTime` and
/// `lastTransitionTime`, pause condition `startTime`, creation and deletion timestamps (and an
/// Event's `lastTimestamp`/`eventTime`). A `deletionTimestamp` lies in the future by
/// `deletionGracePeriodSeconds` (the API server sets it to request time + grace period): the
/// request time is used.
pub(crate) fn object_time(object: &Value) -> Option<Timestamp> {
    let mut times = Vec::new();
    let meta = &object["metadata"];
    times.push(&meta["creationTimestamp"]);
    let grace = meta["deletionGracePeriodSeconds"].as_i64().unwrap_or(0);
    let deletion_requested = meta["deletionTimestamp"]
        .as_str()
        .and_then(parse_time)
        .map(|t| Timestamp(t.0 - grace.saturating_mul(1_000_000_000)));
    for m in meta["managedFields"].as_array().into_iter().flatten() {
        times.push(&m["time"]);
    }
    let status = &object["status"];
    for c in status["conditions"].as_array().into_iter().flatten() {
        times.push(&c["lastUpdateTime"]);
        times.push(&c["lastTransitionTime"]);
    }
    for p in status["pauseConditions"].as_array().into_iter().flatten() {
        times.push(&p["startTime"]);
    }
    times.push(&object["lastTimestamp"]);
    times.push(&object["eventTime"]);
    times
        .into_iter()
        .filter_map(|v| v.as_str().and_then(parse_time))
        .chain(deletion_requested)
        .max()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rollout(uid: &str, rv: u64, managed: &str, index: u64) -> Value {
        json!({
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Rollout",
            "metadata": {
                "name": "checkout-api", "namespace": "shop", "uid": uid,
                "resourceVersion": rv.to_string(), "generation": 2,
                "creationTimestamp": "2026-03-14T12:00:00Z",
                "managedFields": [{"manager": "rollouts-controller", "time": managed}]
            },
            "status": {"currentStepIndex": index}
        })
    }

    fn import(inputs: Vec<(&str, String)>) -> Result<Imported> {
        kubectl_watch(
            inputs
                .into_iter()
                .map(|(n, s)| Input::new(n, std::io::Cursor::new(s.into_bytes())))
                .collect(),
        )
    }

    fn ops(imported: &Imported) -> Vec<&'static str> {
        imported.records.iter().map(|r| r.op.name()).collect()
    }

    #[test]
    fn pretty_watch_events_become_records_with_the_watch_types() {
        let mut s = String::new();
        for (t, v) in [
            ("ADDED", rollout("u1", 10, "2026-03-14T13:00:00Z", 0)),
            ("MODIFIED", rollout("u1", 11, "2026-03-14T13:00:05Z", 1)),
            ("DELETED", rollout("u1", 12, "2026-03-14T13:00:06Z", 1)),
        ] {
            s.push_str(&serde_json::to_string_pretty(&json!({"type": t, "object": v})).unwrap());
            s.push('\n');
        }
        let imp = import(vec![("ro.json", s)]).unwrap();
        assert_eq!(ops(&imp), ["added", "modified", "deleted"]);
        assert_eq!(imp.records[1].resource_version, "11");
        assert_eq!(
            imp.records[1].observed_at,
            parse_time("2026-03-14T13:00:05Z").unwrap()
        );
        assert_eq!(imp.header.notes["times"], "approximate");
        assert_eq!(
            imp.header.source.context.as_deref(),
            Some("import:kubectl-watch")
        );
        assert_eq!(imp.header.source.namespaces, ["shop"]);
        assert_eq!(imp.closed_at, imp.records[2].observed_at);
        assert!(imp.warnings.is_empty());
        assert_eq!(
            imp.records.iter().map(|r| r.seq).collect::<Vec<_>>(),
            [1, 2, 3]
        );
    }

    #[test]
    fn compact_concatenated_and_json_lines_are_read_alike() {
        let a = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        let b = rollout("u1", 11, "2026-03-14T13:00:05Z", 1);
        let concatenated = format!("{a}{b}");
        let lines = format!("{a}\n{b}\n");
        for s in [concatenated, lines] {
            let imp = import(vec![("x", s)]).unwrap();
            assert_eq!(ops(&imp), ["added", "modified"]);
        }
    }

    #[test]
    fn bare_objects_are_added_on_the_first_sight_of_a_uid_and_modified_after() {
        let s = format!(
            "{}\n{}\n{}\n",
            rollout("u1", 10, "2026-03-14T13:00:00Z", 0),
            rollout("u2", 11, "2026-03-14T13:00:01Z", 0),
            rollout("u1", 12, "2026-03-14T13:00:02Z", 1),
        );
        let imp = import(vec![("x", s)]).unwrap();
        assert_eq!(ops(&imp), ["added", "added", "modified"]);
    }

    #[test]
    fn the_time_is_the_latest_object_timestamp_and_never_goes_backwards() {
        let mut late = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        late["status"]["conditions"] = json!([{"type": "Progressing", "lastUpdateTime": "2026-03-14T13:00:30Z", "lastTransitionTime": "2026-03-14T13:00:20Z"}]);
        late["status"]["pauseConditions"] =
            json!([{"reason": "CanaryPauseStep", "startTime": "2026-03-14T13:00:40Z"}]);
        let earlier = rollout("u1", 11, "2026-03-14T13:00:10Z", 1);
        let imp = import(vec![("x", format!("{late}\n{earlier}\n"))]).unwrap();
        let t = parse_time("2026-03-14T13:00:40Z").unwrap();
        assert_eq!(imp.records[0].observed_at, t);
        assert_eq!(
            imp.records[1].observed_at, t,
            "never before the previous event"
        );
    }

    #[test]
    fn a_deletion_is_never_placed_before_a_write_with_a_lower_resource_version() {
        // The ReplicaSet's last write was at :05; it was deleted (rv 30) after the rollout's
        // write at :20 (rv 20).
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {
            "name": "rs", "namespace": "shop", "uid": "r1", "resourceVersion": "30",
            "creationTimestamp": "2026-03-14T13:00:00Z",
            "managedFields": [{"manager": "kube-controller-manager", "time": "2026-03-14T13:00:05Z"}]
        }});
        let deleted = json!({"type": "DELETED", "object": rs});
        let ro = rollout("u1", 20, "2026-03-14T13:00:20Z", 6);
        let imp = import(vec![("rs", deleted.to_string()), ("ro", ro.to_string())]).unwrap();
        assert_eq!(ops(&imp), ["added", "deleted"]);
        assert_eq!(imp.records[0].kind, Kind::Rollout);
        assert_eq!(
            imp.records[1].observed_at,
            parse_time("2026-03-14T13:00:20Z").unwrap()
        );
    }

    #[test]
    fn a_pod_being_deleted_is_dated_by_the_request_not_the_end_of_its_grace_period() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": "p", "namespace": "shop", "uid": "p1", "resourceVersion": "9",
            "creationTimestamp": "2026-03-14T13:00:00Z",
            "deletionTimestamp": "2026-03-14T13:00:40Z", "deletionGracePeriodSeconds": 30,
            "managedFields": [{"manager": "kubelet", "time": "2026-03-14T13:00:05Z"}]
        }});
        assert_eq!(object_time(&pod), parse_time("2026-03-14T13:00:10Z"));
    }

    #[test]
    fn events_of_two_inputs_at_the_same_time_are_ordered_by_resource_version() {
        let rs = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs", "namespace": "shop", "uid": "r1", "resourceVersion": "9", "creationTimestamp": "2026-03-14T13:00:00Z"}});
        let ro = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        let imp = import(vec![("ro", ro.to_string()), ("rs", rs.to_string())]).unwrap();
        assert_eq!(imp.records[0].kind, Kind::ReplicaSet);
        assert_eq!(imp.records[1].kind, Kind::Rollout);
    }

    #[test]
    fn a_broken_document_and_an_unknown_api_version_are_skipped_with_file_and_line() {
        let good = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        let mut unknown = rollout("u1", 11, "2026-03-14T13:00:01Z", 0);
        unknown["apiVersion"] = json!("argoproj.io/v9");
        let s = format!(
            "{good}\n{{\"type\": \"MODIFIED\", \"object\": {{\"kind\": \n{unknown}\n{}\n",
            rollout("u1", 12, "2026-03-14T13:00:02Z", 1)
        );
        let imp = import(vec![("cap.json", s)]).unwrap();
        assert_eq!(ops(&imp), ["added", "modified"]);
        let w: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("cap.json:2: invalid JSON"), "{w:?}");
        assert!(w[1].starts_with("cap.json:3: unknown apiVersion"), "{w:?}");
    }

    #[test]
    fn a_pretty_document_cut_in_the_middle_is_skipped_up_to_the_next_document() {
        let a =
            serde_json::to_string_pretty(&rollout("u1", 10, "2026-03-14T13:00:00Z", 0)).unwrap();
        let b =
            serde_json::to_string_pretty(&rollout("u1", 11, "2026-03-14T13:00:01Z", 1)).unwrap();
        let cut = &a[..a.len() / 2];
        let imp = import(vec![("p", format!("{cut}\n{a}\n{b}\n"))]).unwrap();
        assert_eq!(ops(&imp), ["added", "modified"]);
        assert_eq!(imp.warnings.len(), 1);
        assert_eq!(imp.warnings[0].line, 1);
    }

    #[test]
    fn an_input_without_one_usable_document_is_an_error_naming_it() {
        let err = import(vec![("junk.txt", "hello world\n".to_owned())]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("junk.txt:1: no usable kubectl-watch event"),
            "{err}"
        );
        let err = import(vec![("empty.json", String::new())]).unwrap_err();
        assert_eq!(err.to_string(), "empty.json: the input is empty");
    }

    #[test]
    fn secrets_in_env_values_are_redacted() {
        let mut v = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        v["spec"] = json!({"template": {"spec": {"containers": [{"name": "app", "env": [{"name": "PASSWORD", "value": "hunter2"}]}]}}});
        let imp = import(vec![("x", v.to_string())]).unwrap();
        let text = String::from_utf8(imp.records[0].object.clone()).unwrap();
        assert!(
            !text.contains("hunter2") && text.contains("sha256:"),
            "{text}"
        );
    }

    /// An object of kind `kind` in `api_version`, named `name`.
    fn other(api_version: &str, kind: &str, name: &str) -> Value {
        json!({"apiVersion": api_version, "kind": kind,
               "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"),
                            "resourceVersion": "9", "creationTimestamp": "2026-03-14T12:00:00Z"}})
    }

    #[test]
    fn issue_28_kinds_not_read_are_skipped_with_one_warning_each_and_never_fail_the_import() {
        let others = format!(
            "{}\n{}\n{}\n",
            other("batch/v1", "Job", "j1"),
            other("batch/v1", "Job", "j2"),
            other("v1", "ConfigMap", "values"),
        );
        let rollouts = format!("{}\n", rollout("u1", 10, "2026-03-14T13:00:00Z", 0));
        let imp = import(vec![("others.json", others.clone()), ("ro.json", rollouts)]).unwrap();
        assert_eq!(ops(&imp), ["added"]);
        let words: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(words.len(), 2, "{words:?}");
        assert!(
            words[0].starts_with("others.json:1: 2 object(s) of kind Job (batch/v1)")
                && words[1].starts_with("others.json:3: 1 object(s) of kind ConfigMap (v1)"),
            "{words:?}"
        );
        // Only such kinds: nothing to import, and the error says which kinds.
        let e = import(vec![("others.json", others)])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "only kinds rollout-forensics does not read: Job (batch/v1), ConfigMap (v1)"
            ),
            "{e}"
        );
        // AnalysisRuns are read: kept, without a warning of their kind.
        let runs = format!("{}\n", other("argoproj.io/v1alpha1", "AnalysisRun", "r1"));
        let imp = import(vec![("runs.json", runs)]).unwrap();
        assert!(
            imp.warnings.iter().all(|w| !w.message.contains("of kind")),
            "{:?}",
            imp.warnings
        );
        assert_eq!(imp.records[0].kind, rf_format::api::ANALYSIS_RUN.newest());
    }

    #[test]
    fn issue_28_an_empty_capture_among_others_is_a_warning_and_alone_an_error() {
        let rollouts = format!("{}\n", rollout("u1", 10, "2026-03-14T13:00:00Z", 0));
        let imp = import(vec![
            ("experiments.json", String::new()),
            ("ro.json", rollouts),
        ])
        .unwrap();
        assert_eq!(ops(&imp), ["added"]);
        let words: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(
            words,
            vec![
                "experiments.json:1: empty: nothing was captured in it (a kind with no objects); skipped"
            ]
        );
        let e = import(vec![("a.json", String::new()), ("b.json", "\n".to_owned())]).unwrap_err();
        assert_eq!(e.to_string(), "a.json: the input is empty");
    }

    #[test]
    fn issue_28_a_capture_without_managed_fields_is_warned_once() {
        let mut a = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        let mut b = rollout("u1", 11, "2026-03-14T13:00:05Z", 1);
        for v in [&mut a, &mut b] {
            v["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
        }
        let imp = import(vec![("ro.json", format!("{a}\n{b}\n"))]).unwrap();
        let words: Vec<String> = imp.warnings.iter().map(ToString::to_string).collect();
        assert_eq!(words.len(), 1, "{words:?}");
        assert!(words[0].contains("--show-managed-fields"), "{words:?}");
        // With them, no warning.
        let a = rollout("u1", 10, "2026-03-14T13:00:00Z", 0);
        let imp = import(vec![("ro.json", format!("{a}\n"))]).unwrap();
        assert!(imp.warnings.is_empty());
    }
}
