//! One pass over an object's JSON bytes: its identity (`metadata.name`, `namespace`, `uid`,
//! `resourceVersion`) and, when redacting, the spans of the secrets to replace, without building
//! a tree: the bytes that are not secrets are kept exactly as the API server sent them.
//!
//! It finds what [`crate::redact::redact_value`] (the reference, on a parsed tree) finds: every
//! `env[].value` string, Helm `values`, `valuesObject` and `parameters[].value` under every
//! `helm` object, and the same inside every `kubectl.kubernetes.io/last-applied-configuration`
//! annotation (at any level that has `metadata.annotations`). It reads an object member under
//! each of its keys, so an object with a key twice has both values redacted.
//!
//! It trusts the structure only as far as it checks it: anything it does not expect (not JSON,
//! deeper than [`MAX_DEPTH`], trailing bytes) makes it answer `None`, and the caller falls back
//! to the tree.

use std::borrow::Cow;

use rf_format::json;

use crate::redact::{LAST_APPLIED, digest, is_digest, may_hold_secrets};

/// Deepest nesting followed (serde_json's own limit).
const MAX_DEPTH: usize = 128;

/// The identity fields of an object (empty when absent or not strings).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Identity {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub resource_version: String,
}

/// What one pass found.
#[derive(Debug, Default)]
pub(crate) struct Scanned {
    pub identity: Identity,
    /// The object with its secrets replaced; `None` when it holds none (or when not redacting).
    pub redacted: Option<Vec<u8>>,
}

/// Reads `object`'s identity and, if `redact`, replaces its secrets. `None`: not a JSON object
/// this scanner follows (the caller falls back to a parser).
///
/// An object that cannot hold a secret is read only up to the end of its `metadata`.
pub(crate) fn scan(object: &[u8], redact: bool) -> Option<Scanned> {
    let redact = redact && may_hold_secrets(std::str::from_utf8(object).ok()?);
    let mut s = Scanner {
        b: object,
        i: 0,
        depth: 0,
        redact,
        edits: Vec::new(),
        identity: Identity::default(),
        done: false,
    };
    if s.peek()? != b'{' {
        return None;
    }
    s.object(Obj::Top)?;
    if !s.done && s.peek().is_some() {
        return None;
    }
    let redacted = (!s.edits.is_empty()).then(|| splice(object, &s.edits));
    Some(Scanned {
        identity: s.identity,
        redacted,
    })
}

/// Redacts the JSON document `text` (an object or not): `Some(Some(bytes))` when something
/// changed, `Some(None)` when nothing did, `None` when the scanner does not follow it.
fn redact_document(text: &[u8], depth: usize) -> Option<Option<Vec<u8>>> {
    let mut s = Scanner {
        b: text,
        i: 0,
        depth,
        redact: true,
        edits: Vec::new(),
        identity: Identity::default(),
        done: false,
    };
    s.value(Obj::Plain)?;
    if s.peek().is_some() {
        return None;
    }
    Some((!s.edits.is_empty()).then(|| splice(text, &s.edits)))
}

fn splice(bytes: &[u8], edits: &[Edit]) -> Vec<u8> {
    let extra: usize = edits.iter().map(|e| e.with.len()).sum();
    let mut out = Vec::with_capacity(bytes.len() + extra);
    let mut at = 0;
    for e in edits {
        out.extend_from_slice(&bytes[at..e.start]);
        out.extend_from_slice(&e.with);
        at = e.end;
    }
    out.extend_from_slice(&bytes[at..]);
    out
}

/// Replace `bytes[start..end]` with `with`.
#[derive(Debug)]
struct Edit {
    start: usize,
    end: usize,
    with: Vec<u8>,
}

/// What kind of object is being read: which keys mean something.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Obj {
    /// The object itself: its `metadata` gives the identity.
    Top,
    /// Any object: `env`, `helm` and `metadata` are looked into.
    Plain,
    /// A `metadata` object (of the top object when `top`): `annotations` are looked into.
    Meta { top: bool },
    /// `metadata.annotations`: the last-applied configuration is redacted.
    Annotations,
}

/// A string's span, quotes included.
#[derive(Clone, Copy, Debug)]
struct Str {
    start: usize,
    end: usize,
    escaped: bool,
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    depth: usize,
    redact: bool,
    edits: Vec<Edit>,
    identity: Identity,
    /// The identity is read and nothing is to be redacted: stop reading.
    done: bool,
}

impl<'a> Scanner<'a> {
    fn peek(&mut self) -> Option<u8> {
        self.i = json::ws(self.b, self.i);
        self.b.get(self.i).copied()
    }

    fn expect(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string starting at the next byte.
    fn string(&mut self) -> Option<Str> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i;
        let (close, escaped) = json::string_end(self.b, start + 1).ok()?;
        self.i = close + 1;
        Some(Str {
            start,
            end: self.i,
            escaped,
        })
    }

    /// The text of a string (escapes decoded).
    fn text(&self, s: Str) -> Option<Cow<'a, str>> {
        let b: &'a [u8] = self.b;
        let inner = std::str::from_utf8(b.get(s.start + 1..s.end - 1)?).ok()?;
        if s.escaped {
            json::unescape(inner).ok().map(Cow::Owned)
        } else {
            Some(Cow::Borrowed(inner))
        }
    }

    /// A number, `true`, `false` or `null`.
    fn scalar(&mut self) -> Option<()> {
        self.i = json::scalar_end(self.b, self.i).ok()?;
        Some(())
    }

    /// Any value, looked into as `kind` if it is an object.
    fn value(&mut self, kind: Obj) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(kind),
            b'[' => self.array(),
            b'"' => self.string().map(drop),
            _ => self.scalar(),
        }
    }

    /// Any value, not looked into (inside an env item or a Helm source, as the tree does).
    fn skip(&mut self) -> Option<()> {
        let room = u32::try_from(MAX_DEPTH.saturating_sub(self.depth)).ok()?;
        self.i = json::skip_value(self.b, self.i, room).ok()?.0;
        Some(())
    }

    /// A key: its bytes as written, or decoded when it has escapes.
    fn key(&mut self) -> Option<Cow<'a, [u8]>> {
        let s = self.string()?;
        if s.escaped {
            let text = self.text(s)?;
            Some(Cow::Owned(text.into_owned().into_bytes()))
        } else {
            let b: &'a [u8] = self.b;
            b.get(s.start + 1..s.end - 1).map(Cow::Borrowed)
        }
    }

    /// The members of an object, each handed to `member` with its key; the next byte is `{`.
    fn members(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        self.enter()?;
        self.i += 1;
        if self.peek()? == b'}' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            let key = self.key()?;
            self.expect(b':')?;
            member(self, &key)?;
            if self.done {
                return Some(());
            }
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// The elements of an array, each handed to `element`; the next byte is `[`.
    fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.enter()?;
        self.i += 1;
        if self.peek()? == b']' {
            self.i += 1;
            self.depth -= 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    self.depth -= 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self) -> Option<()> {
        self.elements(|s| s.value(Obj::Plain))
    }

    fn object(&mut self, kind: Obj) -> Option<()> {
        self.members(|s, key| {
            let next = s.peek()?;
            match (key, next) {
                (b"env", b'[') if s.redact => s.env(),
                (b"helm", b'{') if s.redact => s.helm(),
                (b"metadata", b'{') => {
                    s.object(Obj::Meta {
                        top: kind == Obj::Top,
                    })?;
                    s.done = kind == Obj::Top && !s.redact;
                    Some(())
                }
                (b"annotations", b'{') if matches!(kind, Obj::Meta { .. }) => {
                    s.object(Obj::Annotations)
                }
                (_, b'"')
                    if kind == Obj::Annotations && s.redact && key == LAST_APPLIED.as_bytes() =>
                {
                    s.last_applied()
                }
                (b"name" | b"namespace" | b"uid" | b"resourceVersion", b'"')
                    if kind == (Obj::Meta { top: true }) =>
                {
                    let v = s.string()?;
                    let v = s.text(v)?.into_owned();
                    let id = &mut s.identity;
                    match key {
                        b"name" => id.name = v,
                        b"namespace" => id.namespace = v,
                        b"uid" => id.uid = v,
                        _ => id.resource_version = v,
                    }
                    Some(())
                }
                _ if !s.redact && kind == Obj::Top => s.skip(),
                _ => s.value(Obj::Plain),
            }
        })
    }

    /// A string to replace by its digest (unless it is one already).
    fn secret(&mut self) -> Option<()> {
        let s = self.string()?;
        let text = self.text(s)?;
        if !is_digest(&text) {
            let with = format!("\"{}\"", digest(&text)).into_bytes();
            self.edits.push(Edit {
                start: s.start,
                end: s.end,
                with,
            });
        }
        Some(())
    }

    /// An object whose `value` strings are secrets (an env item, a Helm parameter); nothing
    /// else in it is looked into.
    fn valued(&mut self) -> Option<()> {
        if self.peek()? != b'{' {
            return self.skip();
        }
        self.members(|s, key| match (key, s.peek()?) {
            (b"value", b'"') => s.secret(),
            _ => s.skip(),
        })
    }

    fn env(&mut self) -> Option<()> {
        self.elements(Self::valued)
    }

    fn helm(&mut self) -> Option<()> {
        self.members(|s, key| match (key, s.peek()?) {
            (b"values", b'"') => s.secret(),
            (b"parameters", b'[') => s.elements(Self::valued),
            (b"valuesObject", b'n') => s.skip(),
            (b"valuesObject", _) => s.values_object(),
            _ => s.skip(),
        })
    }

    /// `valuesObject`: replaced by `{"redacted":DIGEST}` of its text (as the tree serializes
    /// it), unless it is such an object already.
    fn values_object(&mut self) -> Option<()> {
        let first = self.peek()?;
        let start = self.i;
        let already = first == b'{' && {
            let mut found = false;
            self.members(|s, key| {
                found |= key == b"redacted";
                s.skip()
            })?;
            found
        };
        if !already {
            if first != b'{' {
                self.skip()?;
            }
            let value: serde_json::Value =
                serde_json::from_slice(self.b.get(start..self.i)?).ok()?;
            let with =
                serde_json::to_vec(&serde_json::json!({ "redacted": digest(&value.to_string()) }))
                    .ok()?;
            self.edits.push(Edit {
                start,
                end: self.i,
                with,
            });
        }
        Some(())
    }

    /// The last-applied-configuration annotation: a JSON document in a string, redacted as a
    /// document of its own. Left alone when it is not JSON (as the tree does).
    fn last_applied(&mut self) -> Option<()> {
        let s = self.string()?;
        let text = self.text(s)?;
        let redacted = match redact_document(text.as_bytes(), self.depth) {
            Some(r) => r,
            None => {
                let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) else {
                    return Some(());
                };
                if !crate::redact::redact_value(&mut v) {
                    return Some(());
                }
                serde_json::to_vec(&v).ok()
            }
        };
        if let Some(new) = redacted {
            let new = String::from_utf8(new).ok()?;
            self.edits.push(Edit {
                start: s.start,
                end: s.end,
                with: serde_json::to_vec(&new).ok()?,
            });
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::redact::redact_tree;

    /// A value with every last-applied annotation parsed, so that two redactions that differ only
    /// in how they write that embedded document compare equal.
    fn normalized(v: &Value) -> Value {
        match v {
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, child)| {
                        let child = match child {
                            Value::String(s) if k == LAST_APPLIED => serde_json::from_str(s)
                                .map(|inner: Value| json!({ "parsed": normalized(&inner) }))
                                .unwrap_or_else(|_| child.clone()),
                            _ => normalized(child),
                        };
                        (k.clone(), child)
                    })
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
            other => other.clone(),
        }
    }

    /// The scanner redacts what the tree does, and keeps the rest byte for byte.
    fn check(object: &[u8]) {
        let text = String::from_utf8_lossy(object);
        let scanned = scan(object, true).unwrap_or_else(|| panic!("not followed: {text}"));
        let tree = redact_tree(object);
        assert_eq!(
            scanned.redacted.is_some(),
            tree.is_some(),
            "changed by one and not the other: {text}"
        );
        let (Some(fast), Some(reference)) = (&scanned.redacted, &tree) else {
            return;
        };
        let fast_v: Value = serde_json::from_slice(fast).expect("the scanner writes JSON");
        let reference_v: Value = serde_json::from_slice(reference).unwrap();
        assert_eq!(
            normalized(&fast_v),
            normalized(&reference_v),
            "{}\nvs\n{}",
            String::from_utf8_lossy(fast),
            String::from_utf8_lossy(reference)
        );
        // Redacting again changes nothing.
        assert!(scan(fast, true).unwrap().redacted.is_none());
    }

    fn bytes(v: &Value) -> Vec<u8> {
        serde_json::to_vec(v).unwrap()
    }

    #[test]
    fn identity_comes_from_the_top_metadata_only() {
        let o = br#"{"kind":"Pod","spec":{"template":{"metadata":{"name":"inner"}}},"metadata" : {"labels":{"name":"x"},"name":"web-1","namespace":"pay\u006dents","uid":"u-1","resourceVersion":"42"}}"#;
        let s = scan(o, false).unwrap();
        assert_eq!(
            s.identity,
            Identity {
                name: "web-1".into(),
                namespace: "payments".into(),
                uid: "u-1".into(),
                resource_version: "42".into(),
            }
        );
        assert!(s.redacted.is_none());
        assert_eq!(scan(b"{}", true).unwrap().identity, Identity::default());
        let s = scan(br#"{"metadata":{"name":7,"namespace":null}}"#, true).unwrap();
        assert_eq!(s.identity, Identity::default());
    }

    #[test]
    fn secrets_are_replaced_in_place_and_every_other_byte_is_kept() {
        let o = br#"{ "metadata": {"name": "a"},
  "spec": {"containers": [{"name": "app", "env": [
    {"name": "DB_PASSWORD", "value": "hunter2"},
    {"valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}, "name": "REF"}]}]},
  "z": 1.50e3 }"#;
        let out = scan(o, true).unwrap().redacted.unwrap();
        let expected = String::from_utf8_lossy(o)
            .replace("\"hunter2\"", &format!("\"{}\"", digest("hunter2")));
        assert_eq!(String::from_utf8(out).unwrap(), expected);
        check(o);
    }

    #[test]
    fn the_scanner_redacts_what_the_tree_redacts() {
        let applied = json!({"spec": {"template": {"spec": {"containers": [{"env": [{"name": "K", "value": "topsecret"}]}]}}}});
        let cases = [
            json!({"kind": "Pod", "spec": {"containers": [{"env": [{"name": "A", "value": "s\"e\\c\u{e9}\n"}, {"name": "B"}, {"name": "C", "value": 5}, 3, "x"]}]}}),
            json!({"spec": {"template": {"spec": {"initContainers": [{"env": [{"name": "X", "value": "y"}]}]}}}}),
            json!({"metadata": {"annotations": {LAST_APPLIED: applied.to_string(), "other": "{\"env\":[{\"value\":\"kept\"}]}"}}}),
            json!({"metadata": {"annotations": {LAST_APPLIED: "not json {"}}}),
            json!({"metadata": {"annotations": {LAST_APPLIED: "{\"metadata\":{\"annotations\":{\"kubectl.kubernetes.io/last-applied-configuration\":\"{\\\"env\\\":[{\\\"value\\\":\\\"deep\\\"}]}\"}}}"}}}),
            json!({"spec": {"template": {"metadata": {"annotations": {LAST_APPLIED: applied.to_string()}}}}}),
            json!({"spec": {"source": {"helm": {"values": "password: x1", "parameters": [{"name": "p", "value": "x2"}, 7], "valuesObject": {"password": "x3", "nested": {"b": [1, 2.5, null], "a": true}}}}}}),
            json!({"spec": {"sources": [{"helm": {"valuesObject": "a string"}}, {"helm": {"valuesObject": null}}, {"helm": {"valuesObject": {"redacted": "sha256:abc"}}}, {"helm": {"valuesObject": [1, {"k": "v"}]}}]}}),
            json!({"env": {"value": "an object, not an array: looked into as any object", "env": [{"value": "s"}]}}),
            json!({"helm": "not an object", "x": {"helm": [{"env": [{"value": "s"}]}]}}),
            json!({"env": [{"value": "sha256:0123456789ab"}]}),
            json!({"spec": {"a": [[[{"env": [{"value": ""}]}]]], "b": -0.0, "c": 1e-7, "d": [true, false, null, {}, []]}}),
            json!({}),
        ];
        for case in &cases {
            check(&bytes(case));
            check(serde_json::to_string_pretty(case).unwrap().as_bytes());
        }
    }

    #[test]
    fn escaped_keys_and_repeated_keys_are_redacted() {
        // A key written with escapes is still `env`; a key given twice has both values redacted
        // (a parser keeps the last; the first must not be written in the clear either).
        let o = br#"{"spec":{"\u0065nv":[{"value":"one"}],"env":[{"val\u0075e":"two","value":"three"}]}}"#;
        let out = String::from_utf8(scan(o, true).unwrap().redacted.unwrap()).unwrap();
        for secret in ["one", "two", "three"] {
            assert!(!out.contains(secret), "{secret} in {out}");
        }
    }

    #[test]
    fn what_the_scanner_does_not_follow_falls_back_to_the_tree() {
        for bad in [
            &b"not json"[..],
            b"[1, 2]",
            b"{\"a\": 1} trailing",
            b"{\"a\": }",
            b"{\"a\" 1}",
            b"{\"a\": \"unterminated}",
            b"",
        ] {
            assert!(
                scan(bad, true).is_none(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        let mut deep = String::new();
        for _ in 0..200 {
            deep.push_str("{\"a\":");
        }
        deep.push_str("{\"env\":[{\"value\":\"s\"}]}");
        for _ in 0..200 {
            deep.push('}');
        }
        assert!(scan(deep.as_bytes(), true).is_none());
        // The tree does not follow it either (serde_json's recursion limit): kept as sent.
        assert_eq!(crate::redact::redact_object(deep.as_bytes()), None);
    }

    /// Generated objects: nested objects and arrays whose keys are often the ones that matter,
    /// written compactly and pretty.
    #[test]
    fn generated_objects_agree_with_the_tree() {
        struct Gen(u64);
        impl Gen {
            fn next(&mut self, n: u64) -> u64 {
                self.0 ^= self.0 << 13;
                self.0 ^= self.0 >> 7;
                self.0 ^= self.0 << 17;
                self.0 % n
            }
            fn value(&mut self, depth: u32) -> Value {
                const KEYS: [&str; 12] = [
                    "env",
                    "value",
                    "helm",
                    "values",
                    "valuesObject",
                    "parameters",
                    "metadata",
                    "annotations",
                    LAST_APPLIED,
                    "redacted",
                    "name",
                    "x\"y",
                ];
                match if depth > 5 {
                    self.next(4)
                } else {
                    self.next(7)
                } {
                    0 => Value::Null,
                    1 => json!(self.next(1000) as f64 / 7.0),
                    2 => json!(format!("s{}\\\u{263a}", self.next(50))),
                    3 => json!(format!("sha256:{:012x}", self.next(1 << 40))),
                    4 => Value::Array((0..self.next(4)).map(|_| self.value(depth + 1)).collect()),
                    5 if depth < 7 && self.next(3) == 0 => {
                        // An embedded document, as kubectl writes it.
                        Value::String(self.value(depth + 2).to_string())
                    }
                    _ => Value::Object(
                        (0..self.next(5))
                            .map(|_| {
                                let key = KEYS[self.next(KEYS.len() as u64) as usize];
                                let value = match (key, self.next(3)) {
                                    ("env" | "parameters", 0 | 1) => Value::Array(
                                        (0..self.next(3) + 1)
                                            .map(|_| json!({"name": "n", "value": self.value(6)}))
                                            .collect(),
                                    ),
                                    ("helm", 0 | 1) => json!({
                                        "values": self.value(6),
                                        "valuesObject": self.value(depth + 1),
                                        "parameters": [{"value": self.value(6)}],
                                    }),
                                    _ => self.value(depth + 1),
                                };
                                (key.to_owned(), value)
                            })
                            .collect(),
                    ),
                }
            }
        }
        let mut g = Gen(0x9e37_79b9_7f4a_7c15);
        let mut changed = 0;
        for _ in 0..3000 {
            let v = json!({"metadata": {"name": "n"}, "spec": g.value(0)});
            let compact = bytes(&v);
            check(&compact);
            check(serde_json::to_string_pretty(&v).unwrap().as_bytes());
            changed += usize::from(redact_tree(&compact).is_some());
        }
        assert!(
            changed > 100,
            "only {changed} generated objects held a secret"
        );
    }
}
