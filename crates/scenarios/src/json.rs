//! Compact JSON with object keys in sorted order, independent of serde_json's map features.
//!
//! The bytes of every recorded object and every hashed template come from here, so a build that
//! enables `serde_json/preserve_order` elsewhere in the workspace still produces the same records
//! and the same pod-template hashes.

use serde_json::Value;

/// The compact JSON encoding of `value`, object keys sorted by their UTF-8 bytes.
pub(crate) fn to_bytes(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    write_value(value, &mut out);
    out
}

fn write_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => out.extend_from_slice(n.to_string().as_bytes()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_value(item, out);
            }
            out.push(b'}');
        }
    }
}

fn write_string(s: &str, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\n' => out.extend_from_slice(b"\\n"),
            '\r' => out.extend_from_slice(b"\\r"),
            '\t' => out.extend_from_slice(b"\\t"),
            '\u{08}' => out.extend_from_slice(b"\\b"),
            '\u{0c}' => out.extend_from_slice(b"\\f"),
            c if (c as u32) < 0x20 => {
                out.extend_from_slice(format!("\\u{:04x}", c as u32).as_bytes());
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_and_output_parses_back_to_the_same_value() {
        let value = json!({"b": 1, "a": {"z": [true, null, "x\"\n\u{1}"], "y": -2.5}, "é": "ü"});
        let bytes = to_bytes(&value);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap(),
            r#"{"a":{"y":-2.5,"z":[true,null,"x\"\n\u0001"]},"b":1,"é":"ü"}"#
        );
        let back: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(back, value);
    }
}
