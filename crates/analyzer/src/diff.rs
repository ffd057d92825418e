//! Semantic diff of pod templates.
//!
//! The stored pod-template-hash cannot be trusted to mean "the template changed" (controller
//! upgrades changed the hash function), so templates are compared as JSON values: maps without
//! regard to key order, lists of named items (containers, env, ports, volumes) by name, `null`
//! equal to absent, and the `rollouts-pod-template-hash` label ignored.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

/// The label every ReplicaSet of a Rollout carries on its pod template; never a difference.
pub const HASH_LABEL: &str = "rollouts-pod-template-hash";

/// One segment of a path into a template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Segment {
    /// A map key.
    Key(String),
    /// An item of a list of named items, by its `name`.
    Named(String),
    /// An item of a list, by position.
    Index(usize),
}

/// A path into a template, e.g. `metadata.annotations["checksum/config"]` or
/// `spec.containers[name=app].image`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Path(pub Vec<Segment>);

impl Path {
    /// True when the path starts with these map keys.
    pub fn starts_with(&self, keys: &[&str]) -> bool {
        keys.len() <= self.0.len()
            && keys
                .iter()
                .zip(&self.0)
                .all(|(k, s)| matches!(s, Segment::Key(key) if key == k))
    }

    /// The last map key of the path, if it ends in one.
    pub fn last_key(&self) -> Option<&str> {
        match self.0.last() {
            Some(Segment::Key(k)) => Some(k),
            _ => None,
        }
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Segment::Key(k) if is_plain(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Key(k) => write!(f, "[{}]", Value::String(k.clone()))?,
                Segment::Named(n) => write!(f, "[name={n}]")?,
                Segment::Index(idx) => write!(f, "[{idx}]")?,
            }
        }
        Ok(())
    }
}

impl Serialize for Path {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

fn is_plain(k: &str) -> bool {
    !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// One difference between two templates.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change {
    /// Where.
    pub path: Path,
    /// The value in the first template; `None` when absent there.
    pub old: Option<Value>,
    /// The value in the second template; `None` when absent there.
    pub new: Option<Value>,
}

impl Change {
    /// The value as a short string for a person: strings unquoted, others as JSON.
    pub fn show(v: Option<&Value>) -> String {
        match v {
            None => "(absent)".to_owned(),
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
        }
    }
}

/// The differences between pod templates `a` and `b`, ignoring the pod-template-hash label.
///
/// The label is skipped where the walk meets it rather than removed from copies of both
/// templates first: nothing is cloned but the values a [`Change`] reports.
pub fn template_diff(a: &Value, b: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    diff_value(&mut Path::default(), Some(a), Some(b), &mut out);
    out
}

/// The string values of the object at `pointer` in `v` (labels, annotations, a selector):
/// other values are not ones a selector can match; a missing or non-object value reads as
/// empty.
pub fn string_values(v: &Value, pointer: &str) -> BTreeMap<String, String> {
    v.pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

/// True when every change is to a pod-template annotation.
pub fn only_annotations(changes: &[Change]) -> bool {
    !changes.is_empty()
        && changes
            .iter()
            .all(|c| c.path.starts_with(&["metadata", "annotations"]))
}

/// Where the hash label sits, as map keys from the template's root.
const LABELS: [&str; 2] = ["metadata", "labels"];

/// True when `path` is exactly `metadata.labels`: the map whose hash label is skipped.
fn at_labels(path: &Path) -> bool {
    path.0.len() == LABELS.len() && path.starts_with(&LABELS)
}

/// `v` (found at `path`) as reported in a [`Change`]: without the hash label when the labels
/// map lies within it.
fn reported(path: &Path, v: &Value) -> Value {
    let mut v = v.clone();
    if path.0.len() <= LABELS.len() && path.starts_with(&LABELS[..path.0.len()]) {
        let mut at = Some(&mut v);
        for key in &LABELS[path.0.len()..] {
            at = at.and_then(|x| x.get_mut(*key));
        }
        if let Some(labels) = at.and_then(Value::as_object_mut) {
            labels.remove(HASH_LABEL);
        }
    }
    v
}

fn diff_value(path: &mut Path, a: Option<&Value>, b: Option<&Value>, out: &mut Vec<Change>) {
    // Equal values hold no change (the hash label aside, which is never one): most of two
    // templates is the same, and this comparison allocates nothing.
    if a == b {
        return;
    }
    let a = a.filter(|v| !v.is_null());
    let b = b.filter(|v| !v.is_null());
    match (a, b) {
        (None, None) => {}
        (Some(Value::Object(x)), Some(Value::Object(y))) => diff_map(path, x, y, out),
        // A map on one side only: name each key it holds, so `annotations` appearing whole
        // still reads as annotation changes.
        (Some(Value::Object(x)), None) => diff_map(path, x, &Map::new(), out),
        (None, Some(Value::Object(y))) => diff_map(path, &Map::new(), y, out),
        (Some(Value::Array(x)), Some(Value::Array(y))) => diff_array(path, x, y, out),
        (Some(x), Some(y)) if x == y => {}
        _ => out.push(Change {
            path: path.clone(),
            old: a.map(|v| reported(path, v)),
            new: b.map(|v| reported(path, v)),
        }),
    }
}

fn diff_map(
    path: &mut Path,
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    out: &mut Vec<Change>,
) {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    let labels = at_labels(path);
    for key in keys {
        if labels && key == HASH_LABEL {
            continue;
        }
        path.0.push(Segment::Key(key.clone()));
        diff_value(path, a.get(key), b.get(key), out);
        path.0.pop();
    }
}

fn item_name(v: &Value) -> Option<&str> {
    v.get("name").and_then(Value::as_str)
}

/// The names of a list's items, when every item has a distinct `name`.
fn names_of(xs: &[Value]) -> Option<Vec<&str>> {
    let names: Vec<&str> = xs.iter().map(item_name).collect::<Option<_>>()?;
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    (sorted.len() == names.len()).then_some(names)
}

fn diff_array(path: &mut Path, a: &[Value], b: &[Value], out: &mut Vec<Change>) {
    if let (Some(na), Some(nb)) = (names_of(a), names_of(b)) {
        let mut names: Vec<&str> = na.iter().chain(nb.iter()).copied().collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let x = na.iter().position(|n| *n == name).map(|i| &a[i]);
            let y = nb.iter().position(|n| *n == name).map(|i| &b[i]);
            path.0.push(Segment::Named(name.to_owned()));
            diff_value(path, x, y, out);
            path.0.pop();
        }
        return;
    }
    for i in 0..a.len().max(b.len()) {
        path.0.push(Segment::Index(i));
        diff_value(path, a.get(i), b.get(i), out);
        path.0.pop();
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn template(image: &str, checksum: &str, hash: &str) -> Value {
        json!({
            "metadata": {
                "labels": {"app": "checkout-api", "rollouts-pod-template-hash": hash},
                "annotations": {"checksum/config": checksum},
                "creationTimestamp": null
            },
            "spec": {"containers": [
                {"name": "app", "image": image, "env": [{"name": "A", "value": "1"}]},
                {"name": "sidecar", "image": "envoy:1"}
            ]}
        })
    }

    #[test]
    fn the_hash_label_is_never_a_difference() {
        let d = template_diff(
            &template("a:1", "x", "5d98c7bf64"),
            &template("a:1", "x", "7b4c9f5d86"),
        );
        assert!(d.is_empty(), "{d:?}");
    }

    #[test]
    fn a_checksum_change_is_an_annotation_only_change_with_its_key_and_values() {
        let d = template_diff(&template("a:1", "x", "h1"), &template("a:1", "y", "h2"));
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].path.to_string(),
            r#"metadata.annotations["checksum/config"]"#
        );
        assert_eq!(d[0].path.last_key(), Some("checksum/config"));
        assert_eq!(Change::show(d[0].old.as_ref()), "x");
        assert_eq!(Change::show(d[0].new.as_ref()), "y");
        assert!(only_annotations(&d));
    }

    #[test]
    fn an_image_change_is_not_annotation_only_and_names_the_container() {
        let d = template_diff(&template("a:1", "x", "h"), &template("a:2", "y", "h"));
        assert!(!only_annotations(&d));
        let paths: Vec<String> = d.iter().map(|c| c.path.to_string()).collect();
        assert!(
            paths.contains(&"spec.containers[name=app].image".to_owned()),
            "{paths:?}"
        );
    }

    #[test]
    fn reordered_named_items_are_equal_and_null_equals_absent() {
        let a = json!({"spec": {"containers": [{"name": "a"}, {"name": "b", "x": null}]}});
        let b = json!({"spec": {"containers": [{"name": "b"}, {"name": "a"}]}});
        assert!(template_diff(&a, &b).is_empty());
    }

    #[test]
    fn an_empty_diff_is_not_annotation_only() {
        assert!(!only_annotations(&[]));
    }

    #[test]
    fn the_hash_label_is_left_out_of_values_reported_whole() {
        let labelled = json!({"metadata": {"labels": {"app": "a", (HASH_LABEL): "h2"}}});
        // `metadata` or `labels` not a map on one side: the other side is reported whole,
        // without the hash label.
        for odd in [
            json!({"metadata": "x"}),
            json!({"metadata": {"labels": "x"}}),
        ] {
            for (a, b) in [(&odd, &labelled), (&labelled, &odd)] {
                let d = template_diff(a, b);
                assert_eq!(d.len(), 1, "{d:?}");
                let shown = format!("{:?} {:?}", d[0].old, d[0].new);
                assert!(shown.contains("\"app\""), "{shown}");
                assert!(!shown.contains(HASH_LABEL), "{shown}");
            }
        }
        // The labels map on one side only: each label is a change, the hash label none.
        let d = template_diff(&json!({"metadata": {}}), &labelled);
        let paths: Vec<String> = d.iter().map(|c| c.path.to_string()).collect();
        assert_eq!(paths, ["metadata.labels.app"]);
    }

    #[test]
    fn added_and_removed_keys_show_as_absent() {
        let a = json!({"metadata": {"annotations": {"k": "v"}}});
        let b = json!({"metadata": {}});
        let d = template_diff(&a, &b);
        assert_eq!(d.len(), 1);
        assert_eq!(Change::show(d[0].new.as_ref()), "(absent)");
        assert_eq!(d[0].path.to_string(), "metadata.annotations.k");
    }
}
