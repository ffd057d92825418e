//! Semantic diff of pod templates.
//!
//! The stored pod-template-hash cannot be trusted to mean "the template changed" (controller
//! upgrades changed the hash function), so templates are compared as JSON values: maps without
//! regard to key order, lists of named items (containers, env, ports, volumes) by name, `null`
//! equal to absent, and the `rollouts-pod-template-hash` label ignored.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::base::HASH_LABEL;
use crate::input::skim::Structure;

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

/// [`template_diff`] of two templates given as JSON text known to be JSON (a template is kept
/// only when it parsed): the same changes; `None` only if a value within does not parse.
///
/// Both texts are walked together, one level at a time, and the walk goes down only where
/// they differ: two templates of one rollout are the same but for a few values (a checksum
/// annotation, an image), and building both whole, every key and string allocated, was most of
/// what comparing them cost. Wherever the texts are not two objects or two arrays, the values
/// there are built and compared by [`template_diff`]'s own rules.
pub(crate) fn diff_json(a: &str, b: &str) -> Option<Vec<Change>> {
    let (a, b) = (trimmed(a), trimmed(b));
    let mut out = Vec::new();
    if a == b {
        return Some(out);
    }
    let sides = Sides([Structure::of(a), Structure::of(b)]);
    diff_raw(&sides, &mut Path::default(), Some(a), Some(b), &mut out)?;
    Some(out)
}

/// The two texts a comparison walks, with their [`Structure`] where it was found: the members
/// and items of each level are read through it, not by scanning the level again.
pub(crate) struct Sides<'t>([Option<Structure<'t>>; 2]);

impl<'t> Sides<'t> {
    /// One text, to read levels of.
    pub fn of(text: &'t str) -> Self {
        Sides([Structure::of(text), None])
    }

    /// [`members`] of `text`, a value within one of the two texts.
    pub fn members(&self, text: &'t str) -> Option<Members<'t>> {
        match self.0.iter().flatten().find_map(|s| s.members(text)) {
            Some(written) => Some(sorted(written)),
            None => members(text),
        }
    }

    /// [`items`] of `text`, a value within one of the two texts.
    pub fn items(&self, text: &'t str) -> Option<Vec<&'t str>> {
        self.0
            .iter()
            .flatten()
            .find_map(|s| s.items(text))
            .or_else(|| items(text))
    }
}

/// [`diff_json`] of any text: `None` when one is not JSON.
#[cfg(test)]
fn template_diff_text(a: &str, b: &str) -> Option<Vec<Change>> {
    diff_json(whole(a)?, whole(b)?)
}

/// `text` without JSON whitespace around it.
pub(crate) fn trimmed(text: &str) -> &str {
    text.trim_matches([' ', '\t', '\n', '\r'])
}

/// `text` without the whitespace around it, when it is one JSON value (checked whole, as
/// building its [`Value`] would).
#[cfg(test)]
fn whole(text: &str) -> Option<&str> {
    crate::input::skim::is_json(text).then(|| trimmed(text))
}

/// The first byte of a value's text: `{`, `[`, `"`, `n`, ...
pub(crate) fn opener(v: &str) -> u8 {
    v.bytes().next().unwrap_or(0)
}

/// The members of an object's text, their values as text, sorted by key; the last of a
/// repeated key wins, as in a [`Value`].
pub(crate) fn members(text: &str) -> Option<Members<'_>> {
    let Some(written) = crate::input::skim::raw_members(text) else {
        // An escaped key: serde unescapes it.
        let built: BTreeMap<String, &RawValue> = serde_json::from_str(text).ok()?;
        return Some(
            built
                .into_iter()
                .map(|(k, v)| (Cow::Owned(k), v.get()))
                .collect(),
        );
    };
    Some(sorted(written))
}

/// Members as written, sorted by key; the last of a repeated key wins.
fn sorted<'t>(written: Vec<(&'t str, &'t str)>) -> Members<'t> {
    let mut sorted: Vec<(Cow<'t, str>, &'t str)> = written
        .into_iter()
        .rev()
        .map(|(k, v)| (Cow::Borrowed(k), v))
        .collect();
    // Stable, from the last written: of a repeated key, the one written last comes first.
    sorted.sort_by(|x, y| x.0.cmp(&y.0));
    sorted.dedup_by(|later, kept| later.0 == kept.0);
    sorted
}

pub(crate) fn member<'t>(members: &[(Cow<'_, str>, &'t str)], key: &str) -> Option<&'t str> {
    members
        .binary_search_by(|(k, _)| k.as_ref().cmp(key))
        .ok()
        .map(|i| members[i].1)
}

/// The text of each item of an array's text.
pub(crate) fn items(text: &str) -> Option<Vec<&str>> {
    match crate::input::skim::raw_items(text) {
        Some(items) => Some(items),
        None => {
            let built: Vec<&RawValue> = serde_json::from_str(text).ok()?;
            Some(built.into_iter().map(RawValue::get).collect())
        }
    }
}

/// The string whose JSON text is `text`, unescaped.
pub(crate) fn string(text: &str) -> Option<Cow<'_, str>> {
    crate::input::skim::raw_string(text).or_else(|| serde_json::from_str(text).ok().map(Cow::Owned))
}

fn value(text: &str) -> Option<Value> {
    serde_json::from_str(text).ok()
}

/// Two values' text that hold no change: the same text, or `null` and absent in any mix (the
/// walk would find nothing there, and need not build a path to look).
fn unchanged(a: Option<&str>, b: Option<&str>) -> bool {
    a == b || (a.is_none_or(|v| v == "null") && b.is_none_or(|v| v == "null"))
}

/// [`diff_value`] over values as text. `None` when a value does not parse, which cannot happen
/// within text checked whole.
fn diff_raw<'t>(
    sides: &Sides<'t>,
    path: &mut Path,
    a: Option<&'t str>,
    b: Option<&'t str>,
    out: &mut Vec<Change>,
) -> Option<()> {
    let (a, b) = (a.filter(|v| *v != "null"), b.filter(|v| *v != "null"));
    match (a, b) {
        (None, None) => return Some(()),
        (Some(x), Some(y)) if x == y => return Some(()),
        (Some(x), Some(y)) if opener(x) == b'{' && opener(y) == b'{' => {
            return diff_members(sides, path, &sides.members(x)?, &sides.members(y)?, out);
        }
        (Some(x), Some(y)) if opener(x) == b'[' && opener(y) == b'[' => {
            let (x, y) = (sides.items(x)?, sides.items(y)?);
            if let (Some(nx), Some(ny)) = (raw_names_of(sides, &x)?, raw_names_of(sides, &y)?) {
                let mut names: Vec<&str> = nx.iter().chain(&ny).map(|(n, _)| n.as_ref()).collect();
                names.sort_unstable();
                names.dedup();
                for name in names {
                    let (a, b) = (named(&nx, name), named(&ny, name));
                    if unchanged(a.map(|(t, _)| t), b.map(|(t, _)| t)) {
                        continue;
                    }
                    path.0.push(Segment::Named(name.to_owned()));
                    // Named items are objects, their members read already.
                    let done = match (a, b) {
                        (Some((tx, mx)), Some((ty, my))) if tx != ty => {
                            diff_members(sides, path, mx, my, out)
                        }
                        (a, b) => diff_raw(sides, path, a.map(|(t, _)| t), b.map(|(t, _)| t), out),
                    };
                    path.0.pop();
                    done?;
                }
            } else {
                for i in 0..x.len().max(y.len()) {
                    path.0.push(Segment::Index(i));
                    let done = diff_raw(sides, path, x.get(i).copied(), y.get(i).copied(), out);
                    path.0.pop();
                    done?;
                }
            }
            return Some(());
        }
        _ => {}
    }
    // Not two objects or two arrays: by the rules of the built values.
    let x = match a {
        Some(a) => Some(value(a)?),
        None => None,
    };
    let y = match b {
        Some(b) => Some(value(b)?),
        None => None,
    };
    diff_value(path, x.as_ref(), y.as_ref(), out);
    Some(())
}

/// [`diff_map`] over two objects' members ([`members`]).
fn diff_members<'t>(
    sides: &Sides<'t>,
    path: &mut Path,
    x: &Members<'t>,
    y: &Members<'t>,
    out: &mut Vec<Change>,
) -> Option<()> {
    let labels = at_labels(path);
    let mut keys: Vec<&str> = x.iter().chain(y).map(|(k, _)| k.as_ref()).collect();
    keys.sort_unstable();
    keys.dedup();
    for key in keys {
        if labels && key == HASH_LABEL {
            continue;
        }
        let (a, b) = (member(x, key), member(y, key));
        if unchanged(a, b) {
            continue;
        }
        path.0.push(Segment::Key(key.to_owned()));
        let done = diff_raw(sides, path, a, b, out);
        path.0.pop();
        done?;
    }
    Some(())
}

/// An object's members as [`members`] reads them.
type Members<'t> = Vec<(Cow<'t, str>, &'t str)>;

/// A named item: its name, and its text and members.
type Named<'t> = (Cow<'t, str>, (&'t str, Members<'t>));

/// The text and members of the item named `name`.
fn named<'n, 't>(items: &'n [Named<'t>], name: &str) -> Option<(&'t str, &'n Members<'t>)> {
    items
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, (text, members))| (*text, members))
}

/// [`item_name`] of an item's text: its `name` member when that is a string, with the item's
/// members.
fn raw_item_name<'t>(sides: &Sides<'t>, text: &'t str) -> Option<Option<Named<'t>>> {
    if opener(text) != b'{' {
        return Some(None);
    }
    let members = sides.members(text)?;
    let Some(name) = member(&members, "name").filter(|n| opener(n) == b'"') else {
        return Some(None);
    };
    Some(Some((string(name)?, (text, members))))
}

/// [`names_of`] of items' text: `Some(None)` when they are not all distinctly named.
fn raw_names_of<'t>(sides: &Sides<'t>, xs: &[&'t str]) -> Option<Option<Vec<Named<'t>>>> {
    let mut names = Vec::with_capacity(xs.len());
    for x in xs {
        match raw_item_name(sides, x)? {
            Some(n) => names.push(n),
            None => return Some(None),
        }
    }
    let mut sorted: Vec<&str> = names.iter().map(|(n, _)| n.as_ref()).collect();
    sorted.sort_unstable();
    sorted.dedup();
    Some((sorted.len() == names.len()).then_some(names))
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
    fn an_empty_map_equals_absent() {
        // The real Argo Rollouts controller writes `resources: {}` into a container after a
        // render and takes it out again: the same pod template, the same hash.
        let a = json!({"spec": {"containers": [{"name": "app", "image": "i"}]}});
        let b = json!({"spec": {"containers": [{"name": "app", "image": "i", "resources": {}}]}});
        assert!(template_diff(&a, &b).is_empty());
        assert!(template_diff(&b, &a).is_empty());
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

    /// The project's deterministic generator, with a percentage.
    type Rng = rf_scenarios::SplitMix;

    fn chance(rng: &mut Rng, percent: usize) -> bool {
        rng.below(100) < percent
    }

    /// `v` as JSON text the way no serializer writes it but a parser reads it: members in any
    /// order, some keys escaped, some repeated (an earlier decoy that the last one overrides),
    /// whitespace here and there.
    fn write(v: &Value, rng: &mut Rng, out: &mut String) {
        let space = |rng: &mut Rng, out: &mut String| {
            if chance(rng, 10) {
                out.push_str(if chance(rng, 50) { " " } else { "\n  " });
            }
        };
        match v {
            Value::Object(m) => {
                let mut members: Vec<(&String, &Value)> = m.iter().collect();
                if chance(rng, 50) {
                    for i in (1..members.len()).rev() {
                        members.swap(i, rng.below(i + 1));
                    }
                }
                out.push('{');
                let mut first = true;
                for (k, v) in members {
                    let decoy = chance(rng, 3);
                    for value in [decoy.then_some(&Value::Null), Some(v)]
                        .into_iter()
                        .flatten()
                    {
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        space(rng, out);
                        let key = serde_json::to_string(k).unwrap();
                        match key.as_bytes().get(1) {
                            Some(c) if c.is_ascii_alphanumeric() && chance(rng, 5) => {
                                out.push_str(&format!("\"\\u{:04x}{}", c, &key[2..]));
                            }
                            _ => out.push_str(&key),
                        }
                        space(rng, out);
                        out.push(':');
                        write(value, rng, out);
                    }
                }
                space(rng, out);
                out.push('}');
            }
            Value::Array(xs) => {
                out.push('[');
                for (i, x) in xs.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    space(rng, out);
                    write(x, rng, out);
                }
                out.push(']');
            }
            scalar => {
                space(rng, out);
                out.push_str(&scalar.to_string());
            }
        }
    }

    fn base() -> Value {
        json!({
            "metadata": {
                "labels": {"app": "web", (HASH_LABEL): "5d98c7bf64", "tier": "api"},
                "annotations": {"checksum/config": "abc", "prometheus.io/port": "9090"},
                "creationTimestamp": null
            },
            "spec": {
                "containers": [
                    {"name": "app", "image": "web:1", "ports": [{"name": "http", "containerPort": 8080}],
                     "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}],
                     "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}},
                    {"name": "sidecar", "image": "envoy:1", "args": ["--a", "--b"]}
                ],
                "initContainers": [{"name": "init", "image": "busybox:1"}],
                "volumes": [{"name": "config", "configMap": {"name": "web-config"}}],
                "terminationGracePeriodSeconds": 30,
                "tolerations": [{"key": "k", "operator": "Exists"}, {"key": "j", "effect": "NoSchedule"}]
            }
        })
    }

    /// Some node of `v`, reached by a random walk.
    fn somewhere<'v>(v: &'v mut Value, rng: &mut Rng) -> &'v mut Value {
        let mut pointer = String::new();
        let mut at = &*v;
        for _ in 0..rng.below(6) {
            match at {
                Value::Object(m) if !m.is_empty() => {
                    let (k, next) = m.iter().nth(rng.below(m.len())).unwrap();
                    pointer.push('/');
                    pointer.push_str(&k.replace('~', "~0").replace('/', "~1"));
                    at = next;
                }
                Value::Array(xs) if !xs.is_empty() => {
                    let i = rng.below(xs.len());
                    pointer.push_str(&format!("/{i}"));
                    at = &xs[i];
                }
                _ => break,
            }
        }
        v.pointer_mut(&pointer).expect("the walk's own path")
    }

    fn mutate(v: &mut Value, rng: &mut Rng) {
        let node = somewhere(v, rng);
        match (rng.below(10), node) {
            (0, n) => *n = Value::Null,
            (1, n) => *n = json!("changed"),
            (2, n) => *n = json!(1.5),
            (3, Value::Object(m)) if !m.is_empty() => {
                let k = m.keys().nth(rng.below(m.len())).cloned().unwrap();
                m.remove(&k);
            }
            (4, Value::Object(m)) => {
                m.insert("added".into(), json!({"name": "x", "v": [1, 2]}));
            }
            (5, Value::Array(xs)) if xs.len() > 1 => {
                let last = xs.len() - 1;
                xs.swap(0, last);
            }
            (6, Value::Array(xs)) => xs.push(json!({"name": "app"})),
            (7, Value::Object(m)) => {
                m.insert("name".into(), json!(7));
            }
            (8, n) => *n = json!([]),
            (_, n) => *n = json!({}),
        }
    }

    /// [`base`] with up to `most - 1` mutations.
    fn mutated(rng: &mut Rng, most: usize) -> Value {
        let mut v = base();
        for _ in 0..rng.below(most) {
            mutate(&mut v, rng);
        }
        v
    }

    #[test]
    fn the_text_walk_finds_what_the_built_values_show() {
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut compared = 0;
        for round in 0..4000 {
            let a = mutated(&mut rng, 3);
            let mut b = a.clone();
            if let Some(Value::Object(labels)) = b.pointer_mut("/metadata/labels") {
                if chance(&mut rng, 50) {
                    labels.insert(HASH_LABEL.into(), json!(format!("h{round}")));
                }
            }
            for _ in 0..rng.below(4) {
                mutate(&mut b, &mut rng);
            }
            let (mut ta, mut tb) = (String::new(), String::new());
            write(&a, &mut rng, &mut ta);
            write(&b, &mut rng, &mut tb);
            let va: Value = serde_json::from_str(&ta).expect("written JSON parses");
            let vb: Value = serde_json::from_str(&tb).expect("written JSON parses");
            assert_eq!((&va, &vb), (&a, &b), "{ta}\n{tb}");
            assert_eq!(
                template_diff_text(&ta, &tb),
                Some(template_diff(&va, &vb)),
                "{ta}\n{tb}"
            );
            compared += usize::from(va != vb);
        }
        // Most pairs differ: the walk went down somewhere.
        assert!(compared > 3000, "{compared}");
    }

    /// Every object and array within `text` (a value's text, within the whole), depth first.
    fn parts<'t>(text: &'t str, out: &mut Vec<&'t str>) {
        match opener(text) {
            b'{' => {
                out.push(text);
                for (_, v) in members(text).expect("an object") {
                    parts(v, out);
                }
            }
            b'[' => {
                out.push(text);
                for v in items(text).expect("an array") {
                    parts(v, out);
                }
            }
            _ => {}
        }
    }

    #[test]
    fn the_structure_reads_every_level_as_a_scan_does() {
        let mut rng = Rng::new(7);
        let mut read = 0;
        for _ in 0..1000 {
            let v = mutated(&mut rng, 6);
            let mut text = String::new();
            write(&v, &mut rng, &mut text);
            let text = trimmed(&text);
            let sides = Sides([Structure::of(text), None]);
            assert!(sides.0[0].is_some(), "{text}");
            let mut all = Vec::new();
            parts(text, &mut all);
            for part in all {
                match opener(part) {
                    b'{' => assert_eq!(sides.members(part), members(part), "{part}"),
                    _ => assert_eq!(sides.items(part), items(part), "{part}"),
                }
                read += 1;
            }
            // A slice of another text is read by scanning it.
            let copy = text.to_owned();
            assert_eq!(sides.members(&copy), members(&copy));
        }
        assert!(read > 10_000, "{read}");
        // Brackets or strings that do not match up: no structure.
        for bad in ["{", "[}", r#"{"a":"}"#, "]", r#"{"a":[1}]"#] {
            assert!(Structure::of(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn text_that_is_not_json_is_no_comparison() {
        let good = r#"{"a":1}"#;
        for bad in ["{", r#"{"a":1} x"#, r#"{"a":01}"#, "", r#"{"a":"\x"}"#] {
            assert_eq!(template_diff_text(good, bad), None, "{bad}");
            assert_eq!(template_diff_text(bad, good), None, "{bad}");
        }
        assert_eq!(template_diff_text(good, good), Some(Vec::new()));
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
