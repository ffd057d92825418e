//! The few things the server reads from or changes in an object's JSON, without reordering or
//! reformatting anything else.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The metadata fields selectors and tables need. The server keeps every version of every
/// object, and most keep their name, namespace, uid, creation time and labels: those are shared
/// between the versions of an object that have the same.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// `metadata.name`.
    #[serde(default)]
    pub name: Arc<str>,
    /// `metadata.namespace`; empty when absent.
    #[serde(default)]
    pub namespace: Arc<str>,
    /// `metadata.uid`; empty when absent.
    #[serde(default)]
    pub uid: Arc<str>,
    /// `metadata.resourceVersion` as written in the object; empty when absent.
    #[serde(default)]
    pub resource_version: String,
    /// `metadata.labels`.
    #[serde(default, deserialize_with = "shared")]
    pub labels: Arc<BTreeMap<String, String>>,
    /// `metadata.creationTimestamp` (RFC 3339), when present.
    #[serde(default)]
    pub creation_timestamp: Option<Arc<str>>,
}

impl Meta {
    /// Shares with `earlier` (the object's version before) whatever of it is the same.
    pub fn share_with(&mut self, earlier: &Meta) {
        fn share<T: ?Sized + PartialEq>(mine: &mut Arc<T>, theirs: &Arc<T>) {
            if !Arc::ptr_eq(mine, theirs) && **mine == **theirs {
                *mine = Arc::clone(theirs);
            }
        }
        share(&mut self.name, &earlier.name);
        share(&mut self.namespace, &earlier.namespace);
        share(&mut self.uid, &earlier.uid);
        share(&mut self.labels, &earlier.labels);
        if let (Some(mine), Some(theirs)) =
            (&mut self.creation_timestamp, &earlier.creation_timestamp)
        {
            share(mine, theirs);
        }
    }
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn shared<'de, D, T>(d: D) -> Result<Arc<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    null_as_default(d).map(Arc::new)
}

#[derive(Deserialize)]
struct WithMeta {
    metadata: Meta,
}

/// Reads an object's metadata. Fails on anything that is not a JSON object with a `metadata`
/// object.
pub fn meta(object: &[u8]) -> Result<Meta, String> {
    serde_json::from_slice::<WithMeta>(object)
        .map(|w| w.metadata)
        .map_err(|e| format!("not a Kubernetes object: {e}"))
}

/// An object's `metadata`, verbatim.
pub fn raw_metadata(object: &[u8]) -> Option<Box<RawValue>> {
    #[derive(Deserialize)]
    struct Raw {
        metadata: Box<RawValue>,
    }
    serde_json::from_slice::<Raw>(object)
        .ok()
        .map(|r| r.metadata)
}

/// A JSON object as its members in their original order, values verbatim.
struct Members(Vec<(String, Box<RawValue>)>);

impl<'de> Deserialize<'de> for Members {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = map.next_entry::<String, Box<RawValue>>()? {
                    out.push((k, v));
                }
                Ok(Members(out))
            }
        }
        d.deserialize_map(V)
    }
}

impl Members {
    fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_string(out, k);
            out.push(b':');
            out.extend_from_slice(v.get().as_bytes());
        }
        out.push(b'}');
    }

    fn set(&mut self, key: &str, value: Box<RawValue>) {
        match self.0.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }
}

/// Appends `s` as a JSON string.
pub fn write_json_string(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `s` as a JSON string.
pub fn json_string(s: &str) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    write_json_string(&mut out, s);
    String::from_utf8(out).unwrap_or_default()
}

/// The object with `metadata.resourceVersion` set to `rv`; every other member keeps its place and
/// its bytes.
pub fn with_resource_version(object: &[u8], rv: &str) -> Result<Vec<u8>, String> {
    let mut top: Members =
        serde_json::from_slice(object).map_err(|e| format!("not a JSON object: {e}"))?;
    let rv_raw = RawValue::from_string(json_string(rv)).map_err(|e| e.to_string())?;
    let mut meta = match top.0.iter().find(|(k, _)| k == "metadata") {
        Some((_, m)) => serde_json::from_str::<Members>(m.get())
            .map_err(|e| format!("metadata is not an object: {e}"))?,
        None => Members(Vec::new()),
    };
    meta.set("resourceVersion", rv_raw);
    let mut meta_bytes = Vec::new();
    meta.write(&mut meta_bytes);
    let meta_raw = RawValue::from_string(String::from_utf8(meta_bytes).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    top.set("metadata", meta_raw);
    let mut out = Vec::with_capacity(object.len() + 16);
    top.write(&mut out);
    Ok(out)
}

/// Serializes `value` to JSON bytes (cannot fail for the value types used here).
pub fn to_vec<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewriting_the_resource_version_keeps_member_order_and_bytes() {
        let obj = br#"{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7","labels":{"z":"1","a":"2"}},"spec":{"b": 1, "a": 2}}"#;
        let out = with_resource_version(obj, "42").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"kind":"Pod","metadata":{"name":"a","resourceVersion":"42","labels":{"z":"1","a":"2"}},"spec":{"b": 1, "a": 2}}"#
        );
    }

    #[test]
    fn rewriting_adds_a_missing_resource_version() {
        let out = with_resource_version(br#"{"metadata":{"name":"a"}}"#, "3").unwrap();
        assert_eq!(out, br#"{"metadata":{"name":"a","resourceVersion":"3"}}"#);
        assert!(with_resource_version(b"[1]", "3").is_err());
    }

    #[test]
    fn a_version_shares_what_it_has_of_the_one_before() {
        let before = meta(br#"{"metadata":{"name":"a","namespace":"n","uid":"u1","creationTimestamp":"2026-03-14T13:00:00Z","labels":{"app":"web"},"resourceVersion":"1"}}"#).unwrap();
        let mut next = meta(br#"{"metadata":{"name":"a","namespace":"n","uid":"u2","creationTimestamp":"2026-03-14T13:00:00Z","labels":{"app":"web"},"resourceVersion":"2"}}"#).unwrap();
        let read = next.clone();
        next.share_with(&before);
        assert!(Arc::ptr_eq(&next.name, &before.name));
        assert!(Arc::ptr_eq(&next.namespace, &before.namespace));
        assert!(Arc::ptr_eq(&next.labels, &before.labels));
        assert!(Arc::ptr_eq(
            next.creation_timestamp.as_ref().unwrap(),
            before.creation_timestamp.as_ref().unwrap()
        ));
        // A new uid (the object was recreated) is its own; nothing read changes.
        assert!(!Arc::ptr_eq(&next.uid, &before.uid));
        assert_eq!(next, read);
    }

    #[test]
    fn meta_reads_labels_and_tolerates_nulls() {
        let m = meta(br#"{"metadata":{"name":"a","namespace":"n","labels":null}}"#).unwrap();
        assert_eq!(&*m.name, "a");
        assert_eq!(&*m.namespace, "n");
        assert!(m.labels.is_empty());
        assert!(meta(b"{}").is_err());
        assert!(meta(b"not json").is_err());
    }
}
