//! The few things the server reads from or changes in an object's JSON, without reordering or
//! reformatting anything else.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::wire::{Take, put_str, put_u32};

/// The metadata fields selectors and tables need. The server keeps it on disk (encoded), once
/// per run of an object's versions that have the same.
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
    /// Appends it, but for its resourceVersion, as [`Meta::decode`] reads it.
    pub fn encode(&self, out: &mut Vec<u8>) {
        put_str(out, &self.name);
        put_str(out, &self.namespace);
        put_str(out, &self.uid);
        match &self.creation_timestamp {
            Some(t) => {
                out.push(1);
                put_str(out, t);
            }
            None => out.push(0),
        }
        put_u32(out, self.labels.len() as u32);
        for (k, v) in self.labels.iter() {
            put_str(out, k);
            put_str(out, v);
        }
    }

    /// The metadata [`Meta::encode`] wrote into `bytes` (with an empty resourceVersion); `None`
    /// for bytes it did not write.
    pub fn decode(bytes: &[u8]) -> Option<Meta> {
        let mut b = Take(bytes);
        let name = Arc::from(b.str()?);
        let namespace = Arc::from(b.str()?);
        let uid = Arc::from(b.str()?);
        let creation_timestamp = match b.bytes(1)? {
            [1] => Some(Arc::from(b.str()?)),
            _ => None,
        };
        let mut labels = BTreeMap::new();
        for _ in 0..b.u32()? {
            let k = b.str()?.to_owned();
            labels.insert(k, b.str()?.to_owned());
        }
        b.is_empty().then(|| Meta {
            name,
            namespace,
            uid,
            resource_version: String::new(),
            labels: Arc::new(labels),
            creation_timestamp,
        })
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
    metadata: MapOf<Meta>,
}

/// A `T` read from a JSON object only (serde would also take a struct from an array).
struct MapOf<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for MapOf<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = MapOf<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<MapOf<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MapOf)
            }
        }
        d.deserialize_map(V(std::marker::PhantomData))
    }
}

/// Reads an object's metadata. Fails on anything that is not a JSON object with a `metadata`
/// object: so [`with_resource_version`] can set the resourceVersion of any object it reads.
pub fn meta(object: &[u8]) -> Result<Meta, String> {
    meta_like(object, None)
}

/// [`meta`], sharing with `like` (the object's version before, most often the same but for its
/// resourceVersion) the strings and labels that are the same: no allocation for them, and
/// comparing the two is then mostly comparing pointers.
pub fn meta_like(object: &[u8], like: Option<&Meta>) -> Result<Meta, String> {
    if let Some(meta) = skimmed_meta(object, like) {
        return Ok(meta);
    }
    serde_json::from_slice::<MapOf<WithMeta>>(object)
        .map(|w| w.0.metadata.0)
        .map_err(|e| format!("not a Kubernetes object: {e}"))
}

/// [`meta`] without serde, for the objects it reads as serde reads them: every other member is
/// passed over (checked against the grammar, not built), where serde visits every value of
/// every member. Indexing a recording reads each version's metadata, and serde's visit was half
/// of the indexing thread's time. `None` for anything else (a key with an escape, a field
/// twice, a field that is not a string, text that is not JSON, nesting deeper than it follows):
/// serde then decides, so the answer is serde's either way.
fn skimmed_meta(b: &[u8], like: Option<&Meta>) -> Option<Meta> {
    use rf_format::json::{skip_value, ws};
    // Nesting left for a member's value, below serde's limit of 128 open containers.
    const ROOM: u32 = 100;
    let mut metadata = None;
    let end = skim_members(b, ws(b, 0), |key, escaped, at| {
        if escaped {
            return None;
        }
        if key != b"metadata" {
            return Some(skip_value(b, at, ROOM).ok()?.0);
        }
        if metadata.is_some() {
            return None;
        }
        let (meta, end) = skim_metadata(b, at, ROOM - 1, like)?;
        metadata = Some(meta);
        Some(end)
    })?;
    (ws(b, end) == b.len()).then_some(())?;
    metadata
}

/// The fields [`Meta`] holds of the metadata object at `at` (those equal to `like`'s shared with
/// it), and where it ends.
fn skim_metadata(b: &[u8], at: usize, room: u32, like: Option<&Meta>) -> Option<(Meta, usize)> {
    use rf_format::json::{literal_end, skip_value};
    // `like`'s string when it is the same text, a new one otherwise.
    let shared = |text: &str, same: Option<&Arc<str>>| match same {
        Some(same) if **same == *text => Arc::clone(same),
        _ => Arc::from(text),
    };
    // `like`'s first `n` labels, as a map of the object's own.
    let first_labels = |n: usize| -> BTreeMap<String, String> {
        let labels = like.map(|l| l.labels.iter().take(n));
        labels
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    let mut m = Meta::default();
    // Which fields were read (serde refuses one twice).
    let mut seen = 0u8;
    let mut once = |bit: u8| {
        let first = seen & bit == 0;
        seen |= bit;
        first.then_some(())
    };
    let end = skim_members(b, at, |key, escaped, at| match key {
        _ if escaped => None,
        b"name" | b"namespace" | b"uid" | b"resourceVersion" => {
            let (text, end) = skim_string(b, at)?;
            match key {
                b"name" => {
                    once(1)?;
                    m.name = shared(&text, like.map(|l| &l.name));
                }
                b"namespace" => {
                    once(2)?;
                    m.namespace = shared(&text, like.map(|l| &l.namespace));
                }
                b"uid" => {
                    once(4)?;
                    m.uid = shared(&text, like.map(|l| &l.uid));
                }
                _ => {
                    once(8)?;
                    m.resource_version = text.into_owned();
                }
            }
            Some(end)
        }
        b"creationTimestamp" => {
            once(16)?;
            if b.get(at) == Some(&b'n') {
                return literal_end(b, at, b"null").ok();
            }
            let (text, end) = skim_string(b, at)?;
            m.creation_timestamp = Some(shared(
                &text,
                like.and_then(|l| l.creation_timestamp.as_ref()),
            ));
            Some(end)
        }
        b"labels" => {
            once(32)?;
            if b.get(at) == Some(&b'n') {
                return literal_end(b, at, b"null").ok();
            }
            // While they are `like`'s labels in its order, nothing is built: `like`'s map is
            // shared. At the first that is not, the map is built from the ones before (`like`'s
            // first, the same) and the rest.
            let mut same = like.map(|l| l.labels.iter());
            let mut matched = 0usize;
            let mut labels: Option<BTreeMap<String, String>> = None;
            let end = skim_members(b, at, |key, escaped, at| {
                let (value, end) = skim_string(b, at)?;
                let key = key_text(key, escaped)?;
                if labels.is_none() {
                    match same.as_mut().and_then(|s| s.next()) {
                        Some((k, v)) if *k == key && *v == value => {
                            matched += 1;
                            return Some(end);
                        }
                        _ => labels = Some(first_labels(matched)),
                    }
                }
                labels
                    .get_or_insert_default()
                    .insert(key.into_owned(), value.into_owned());
                Some(end)
            })?;
            m.labels = match (labels, like) {
                (Some(labels), _) => Arc::new(labels),
                // Every label was `like`'s, in order: all of them, if none is left.
                (None, Some(l)) if matched == l.labels.len() => Arc::clone(&l.labels),
                (None, _) => Arc::new(first_labels(matched)),
            };
            Some(end)
        }
        _ => Some(skip_value(b, at, room).ok()?.0),
    })?;
    Some((m, end))
}

/// A label's key: its text, escapes decoded.
fn key_text(key: &[u8], escaped: bool) -> Option<std::borrow::Cow<'_, str>> {
    let text = std::str::from_utf8(key).ok()?;
    if escaped {
        return rf_format::json::unescape(text)
            .ok()
            .map(std::borrow::Cow::Owned);
    }
    Some(std::borrow::Cow::Borrowed(text))
}

/// The members of the object at `i`: calls `member` with each key's text (between its quotes,
/// escapes left as they are), whether it has an escape, and where its value starts (after any
/// whitespace); `member` returns where the value ends. Where the object ends.
fn skim_members<'b>(
    b: &'b [u8],
    i: usize,
    mut member: impl FnMut(&'b [u8], bool, usize) -> Option<usize>,
) -> Option<usize> {
    use rf_format::json::{string_end, ws};
    if b.get(i) != Some(&b'{') {
        return None;
    }
    let mut i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let (close, escaped) = string_end(b, i + 1).ok()?;
        let key = &b[i + 1..close];
        i = ws(b, close + 1);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, member(key, escaped, ws(b, i + 1))?);
        match b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The text of the string at `i` (a quote), escapes decoded, and where it ends.
fn skim_string(b: &[u8], i: usize) -> Option<(std::borrow::Cow<'_, str>, usize)> {
    use rf_format::json::{string_end, unescape};
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let (close, escaped) = string_end(b, i + 1).ok()?;
    let text = std::str::from_utf8(&b[i + 1..close]).ok()?;
    let text = if escaped {
        std::borrow::Cow::Owned(unescape(text).ok()?)
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    Some((text, close + 1))
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
    // The API server's layout: the version's bytes replaced where they are, the same bytes as
    // below without parsing every member (serve rewrites every version in counter mode).
    if let Some(span) = compact_rv_span(object) {
        let mut out = Vec::with_capacity(object.len() + rv.len());
        out.extend_from_slice(&object[..span.start]);
        write_json_string(&mut out, rv);
        out.extend_from_slice(&object[span.end..]);
        return Ok(out);
    }
    rewritten_resource_version(object, rv)
}

/// Where the string of the first `metadata.resourceVersion` of the first `metadata` is (quotes
/// included), when the object is written as the API server writes it: no whitespace between the
/// tokens of the object and of its metadata, and no escape in their keys. Those are what
/// [`rewritten_resource_version`] would write again differently (it drops such whitespace and
/// writes keys unescaped), so for any other object: `None`, and that one decides. The object
/// is otherwise taken as valid JSON (serve has read it with serde).
fn compact_rv_span(b: &[u8]) -> Option<std::ops::Range<usize>> {
    use rf_format::json;
    /// The end of the string starting at `i` (a quote), past its closing quote.
    fn string_end(b: &[u8], i: usize) -> Option<usize> {
        Some(json::string_end(b, i + 1).ok()?.0 + 1)
    }
    /// The end of the value starting at `i` (its first byte: whitespace there is not compact).
    fn value_end(b: &[u8], i: usize) -> Option<usize> {
        if json::ws(b, i) != i {
            return None;
        }
        Some(json::skip_value(b, i, 128).ok()?.0)
    }
    /// The members of the object starting at `i`, compact, keys unescaped: calls `member` with
    /// each key and where its value starts (it returns where the value ends); the end of the
    /// object.
    fn members(
        b: &[u8],
        i: usize,
        mut member: impl FnMut(&[u8], usize) -> Option<usize>,
    ) -> Option<usize> {
        if b.get(i) != Some(&b'{') {
            return None;
        }
        let mut i = i + 1;
        if b.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        loop {
            if b.get(i) != Some(&b'"') {
                return None;
            }
            let key_end = string_end(b, i)?;
            let key = &b[i + 1..key_end - 1];
            if key.contains(&b'\\') || b.get(key_end) != Some(&b':') {
                return None;
            }
            i = member(key, key_end + 1)?;
            match b.get(i)? {
                b',' => i += 1,
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }
    // The first resourceVersion of the first metadata, whatever its value.
    let mut first: Option<std::ops::Range<usize>> = None;
    let mut metadata_seen = false;
    let end = members(b, 0, |key, at| {
        if key != b"metadata" || metadata_seen {
            return value_end(b, at);
        }
        metadata_seen = true;
        members(b, at, |key, at| {
            let end = value_end(b, at)?;
            if key == b"resourceVersion" && first.is_none() {
                first = Some(at..end);
            }
            Some(end)
        })
    })?;
    // The whole text is the object (nothing after it, as the writer below leaves nothing).
    (end == b.len()).then_some(())?;
    // A version that is not a string is replaced by one there too; left to the other.
    first.filter(|span| b.get(span.start) == Some(&b'"'))
}

/// [`with_resource_version`] by parsing: the object's members and its metadata's, written
/// again with the version set (added when missing).
fn rewritten_resource_version(object: &[u8], rv: &str) -> Result<Vec<u8>, String> {
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
    fn metadata_is_read_from_objects_only_so_every_object_read_can_be_rewritten() {
        let object = br#"{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7"}}"#;
        assert_eq!(&*meta(object).unwrap().name, "a");
        assert!(with_resource_version(object, "9").is_ok());
        // serde would read these as structs; they are not Kubernetes objects.
        for not_one in [
            &br#"[{"name":"a"}]"#[..],
            br#"{"metadata":["a","ns","uid","7"]}"#,
            br#"{"metadata":null}"#,
            br#"{"kind":"Pod"}"#,
        ] {
            assert!(
                meta(not_one).is_err(),
                "{}",
                String::from_utf8_lossy(not_one)
            );
        }
    }

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
    fn metadata_reads_back_as_it_was_encoded_but_for_its_resource_version() {
        let cases: &[&[u8]] = &[
            br#"{"metadata":{"name":"a","namespace":"n","uid":"u1","creationTimestamp":"2026-03-14T13:00:00Z","labels":{"app":"web","pod-template-hash":"7d9f"},"resourceVersion":"1"}}"#,
            br#"{"metadata":{"name":"\u00e9t\u00e9"}}"#,
            br#"{"metadata":{}}"#,
        ];
        for obj in cases {
            let m = meta(obj).unwrap();
            let mut bytes = b"".to_vec();
            m.encode(&mut bytes);
            let back = Meta::decode(&bytes).unwrap();
            assert_eq!(
                back,
                Meta {
                    resource_version: String::new(),
                    ..m.clone()
                }
            );
            // Cut short or with a byte more, it is not read as metadata.
            assert!(Meta::decode(&bytes[..bytes.len() - 1]).is_none());
            bytes.push(0);
            assert!(Meta::decode(&bytes).is_none());
        }
    }

    #[test]
    fn the_version_is_rewritten_in_place_as_the_parsing_rewriter_writes_it() {
        let cases: &[&[u8]] = &[
            br#"{"kind":"Pod","metadata":{"name":"a","resourceVersion":"7","labels":{"z":"1"}},"spec":{"b": 1, "a": [2, {"c":"}]"}]}}"#,
            br#"{"metadata":{"resourceVersion":"7"}}"#,
            br#"{"metadata":{"name":"a"}}"#,
            br#"{"metadata":{"resourceVersion":7,"resourceVersion":"8"}}"#,
            br#"{"metadata":{"resourceVersion":"7","resourceVersion":"8"},"metadata":{"resourceVersion":"9"}}"#,
            br#"{"spec":{"metadata":{"resourceVersion":"1"}},"metadata":{"resourceVersion":"2"}}"#,
            br#"{"a":""metadata":{"resourceVersion":"1"}","metadata":{"resourceVersion":"2"}}"#,
            br#"{"metadata":{"resourceVersion":"7"} }"#,
            br#"{"metadata": {"resourceVersion":"7"}}"#,
            br#"{"metadata":{"resourceVersion" :"7"}}"#,
            br#"{"metadata":{"resourceVersion":"7" ,"name":"a"}}"#,
            br#" {"metadata":{"resourceVersion":"7"}}"#,
            br#"{"metadata":{"resourceVersion":"7"}} "#,
            br#"{"metadat\u0061":{"resourceVersion":"7"}}"#,
            br#"{"metadata":{"resource\u0056ersion":"7"}}"#,
            br#"{"metadata":{"resourceVersion":"7\"x"},"n":-1.5e3,"t":true,"z":null}"#,
            br#"{"metadata":null}"#,
            br#"{}"#,
            b"[1]",
        ];
        for case in cases {
            let fast = with_resource_version(case, "42");
            let slow = rewritten_resource_version(case, "42");
            assert_eq!(fast, slow, "{}", String::from_utf8_lossy(case));
        }
        // The API server's layout takes the fast path.
        let span = compact_rv_span(cases[0]).expect("the fast path");
        assert_eq!(&cases[0][span], br#""7""#);
        assert_eq!(compact_rv_span(cases[7]), None);
    }

    /// serde's reading of metadata, the one [`skimmed_meta`] must give.
    fn serde_meta(object: &[u8]) -> Option<Meta> {
        serde_json::from_slice::<MapOf<WithMeta>>(object)
            .ok()
            .map(|w| w.0.metadata.0)
    }

    #[test]
    fn metadata_is_skimmed_as_serde_reads_it_or_left_to_serde() {
        let skimmed: &[&[u8]] = &[
            br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"n","uid":"u","resourceVersion":"7","creationTimestamp":"2026-03-14T13:00:00Z","labels":{"app":"web","pod-template-hash":"7d9f"},"managedFields":[{"a":[1,2.5e-3,{"b":null}]}]},"spec":{"x":"}{\"]"},"status":{}}"#,
            br#" { "metadata" : { "name" : "a" , "labels" : { } } , "spec" : [ ] } "#,
            br#"{"spec":{"metadata":{"name":"inner"}},"metadata":{"name":"outer"}}"#,
            br#"{"metadata":{"name":"\u00e9t\u00e9\n","labels":{"k\"ey":"v\\al","k":"1","k":"2"}}}"#,
            br#"{"metadata":{"labels":null,"creationTimestamp":null}}"#,
            br#"{"metadata":{}}"#,
        ];
        for object in skimmed {
            let fast = skimmed_meta(object, None);
            assert!(fast.is_some(), "{}", String::from_utf8_lossy(object));
            assert_eq!(
                fast,
                serde_meta(object),
                "{}",
                String::from_utf8_lossy(object)
            );
        }
        let left_to_serde: &[&[u8]] = &[
            br#"{"metadat\u0061":{"name":"a"}}"#,
            br#"{"metadata":{"nam\u0065":"a"}}"#,
            br#"{"metadata":{"name":"a","name":"b"}}"#,
            br#"{"metadata":{"name":"a"},"metadata":{"name":"b"}}"#,
            br#"{"metadata":{"name":null}}"#,
            br#"{"metadata":{"name":7}}"#,
            br#"{"metadata":{"labels":{"a":null}}}"#,
            br#"{"metadata":{"creationTimestamp":1}}"#,
            br#"{"metadata":null}"#,
            br#"{"metadata":[]}"#,
            br#"{"metadata":{}} x"#,
            br#"{"metadata":{},"spec":{"a":01}}"#,
            br#"{"metadata":{},"spec":{"a":1,}}"#,
            br#"{"metadata":{"name":"\ud800"}}"#,
            b"{\"metadata\":{\"name\":\"\xff\"}}",
            br#"{"kind":"Pod"}"#,
            b"[]",
        ];
        for object in left_to_serde {
            assert_eq!(
                skimmed_meta(object, None),
                None,
                "{}",
                String::from_utf8_lossy(object)
            );
        }
        // Nesting past what the skim follows is serde's to refuse or read.
        let deep = |n: usize| {
            let mut o = br#"{"metadata":{},"spec":"#.to_vec();
            o.extend(std::iter::repeat_n(b'[', n));
            o.extend(std::iter::repeat_n(b']', n));
            o.push(b'}');
            o
        };
        assert!(skimmed_meta(&deep(90), None).is_some());
        assert_eq!(skimmed_meta(&deep(120), None), None);
        assert!(serde_meta(&deep(120)).is_some());
    }

    #[test]
    fn metadata_skimmed_from_damaged_objects_is_serde_s_or_none() {
        let object = br#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9f","namespace":"prod","uid":"u-1","resourceVersion":"42","creationTimestamp":"2026-03-14T13:00:00Z","labels":{"app":"web","pod-template-hash":"7d9f"},"annotations":{"a":"x\"y"}},"spec":{"containers":[{"name":"c","image":"web:1","ports":[{"containerPort":8080}]}],"n":-1.5e3,"t":true,"f":false,"z":null},"status":{"phase":"Running"}}"#;
        let alphabet = br#"{}[]:,"\ ntfu0-.eE9a"#;
        // A small deterministic generator: the same damage on every run.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut skimmed, mut refused) = (0, 0);
        for _ in 0..20_000 {
            let mut damaged = object.to_vec();
            for _ in 0..1 + next(3) {
                let at = next(damaged.len());
                match next(3) {
                    0 => {
                        damaged.remove(at);
                    }
                    1 => damaged.insert(at, alphabet[next(alphabet.len())]),
                    _ => damaged[at] = alphabet[next(alphabet.len())],
                }
            }
            let like = meta(object).unwrap();
            assert_eq!(
                meta_like(&damaged, Some(&like)).ok(),
                serde_meta(&damaged),
                "{}",
                String::from_utf8_lossy(&damaged)
            );
            match skimmed_meta(&damaged, None) {
                Some(m) => {
                    skimmed += 1;
                    assert_eq!(
                        Some(m),
                        serde_meta(&damaged),
                        "{}",
                        String::from_utf8_lossy(&damaged)
                    );
                }
                None => refused += 1,
            }
        }
        // Both ways are taken: damage the skim passes over, and damage it refuses.
        assert!(
            skimmed > 1_000 && refused > 1_000,
            "{skimmed} skimmed, {refused} refused"
        );
    }

    #[test]
    fn metadata_read_against_a_version_before_is_the_same_and_shares_what_is_the_same() {
        let object = |rv: &str, labels: &str| {
            format!(
                r#"{{"kind":"Pod","metadata":{{"name":"web-1","namespace":"prod","uid":"u-1","resourceVersion":"{rv}","creationTimestamp":"2026-03-14T13:00:00Z","labels":{labels}}},"spec":{{}}}}"#
            )
            .into_bytes()
        };
        let labelings = [
            r#"{"app":"web","pod-template-hash":"7d9f","tier":"front"}"#,
            r#"{"app":"web","pod-template-hash":"7d9f"}"#,
            r#"{"app":"web","pod-template-hash":"8e0a","tier":"front"}"#,
            r#"{"app":"web","pod-template-hash":"7d9f","tier":"front","zone":"a"}"#,
            r#"{"tier":"front","app":"web","pod-template-hash":"7d9f"}"#,
            r#"{"app":"web","app":"api","pod-template-hash":"7d9f","tier":"front"}"#,
            r#"{"a\u0070p":"web"}"#,
            r#"{}"#,
            r#"null"#,
        ];
        let mut likes: Vec<Meta> = labelings
            .iter()
            .map(|l| meta(&object("1", l)).unwrap())
            .collect();
        likes.push(Meta::default());
        likes
            .push(meta(br#"{"metadata":{"name":"other","namespace":"dev","uid":"u-2"}}"#).unwrap());
        for labels in labelings {
            let now = object("2", labels);
            let alone = meta(&now).unwrap();
            for like in &likes {
                let read = meta_like(&now, Some(like)).unwrap();
                assert_eq!(read, alone, "{labels} against {like:?}");
            }
        }
        // The same but for its resourceVersion: every string and the labels are shared.
        let before = meta(&object("1", labelings[0])).unwrap();
        let after = meta_like(&object("2", labelings[0]), Some(&before)).unwrap();
        assert!(Arc::ptr_eq(&after.name, &before.name) && Arc::ptr_eq(&after.uid, &before.uid));
        assert!(Arc::ptr_eq(&after.labels, &before.labels));
        assert_eq!(after.resource_version, "2");
        // A label changed: the strings are still shared, the labels are the object's own.
        let changed = meta_like(&object("3", labelings[2]), Some(&before)).unwrap();
        assert!(Arc::ptr_eq(&changed.namespace, &before.namespace));
        assert!(!Arc::ptr_eq(&changed.labels, &before.labels));
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
