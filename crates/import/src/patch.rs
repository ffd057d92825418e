//! Applying the patches an audit log at `Request` level carries: JSON merge patch (RFC 7386) and
//! JSON patch (RFC 6902). A strategic merge patch is applied as a merge patch (see the crate
//! docs for what that gets wrong).

use serde_json::Value;

/// Applies an RFC 7386 JSON merge patch to `target` in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(map) = target {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(key);
            } else {
                merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Applies an RFC 6902 JSON patch (an array of operations) to `target`. On the first failing
/// operation `target` is left unchanged and the error says which operation failed and why.
pub fn json_patch(target: &mut Value, patch: &[Value]) -> Result<(), String> {
    let mut doc = target.clone();
    for (i, op) in patch.iter().enumerate() {
        apply_op(&mut doc, op).map_err(|e| format!("JSON patch operation {i}: {e}"))?;
    }
    *target = doc;
    Ok(())
}

fn apply_op(doc: &mut Value, op: &Value) -> Result<(), String> {
    let field = |name: &str| -> Result<&str, String> {
        op.get(name)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("missing \"{name}\""))
    };
    let path = field("path")?;
    match field("op")? {
        "add" => add(doc, path, value_of(op)?.clone()),
        "remove" => remove(doc, path).map(|_| ()),
        "replace" => {
            let slot = pointer_mut(doc, path)?;
            *slot = value_of(op)?.clone();
            Ok(())
        }
        "move" => {
            let from = field("from")?;
            if path.starts_with(from) && path[from.len()..].starts_with('/') {
                return Err(format!("cannot move {from} into its own child {path}"));
            }
            let value = remove(doc, from)?;
            add(doc, path, value)
        }
        "copy" => {
            let value = doc
                .pointer(field("from")?)
                .cloned()
                .ok_or_else(|| format!("no value at {}", field("from").unwrap_or_default()))?;
            add(doc, path, value)
        }
        "test" => {
            let found = doc.pointer(path);
            if found == Some(value_of(op)?) {
                Ok(())
            } else {
                Err(format!("test failed at {path}"))
            }
        }
        other => Err(format!("unknown op {other:?}")),
    }
}

fn value_of(op: &Value) -> Result<&Value, String> {
    op.get("value")
        .ok_or_else(|| "missing \"value\"".to_owned())
}

/// Splits a JSON pointer into its parent pointer and its unescaped last token.
fn split(path: &str) -> Result<(&str, String), String> {
    let Some(pos) = path.rfind('/') else {
        return Err(format!("invalid JSON pointer {path:?}"));
    };
    let token = path[pos + 1..].replace("~1", "/").replace("~0", "~");
    Ok((&path[..pos], token))
}

fn pointer_mut<'a>(doc: &'a mut Value, path: &str) -> Result<&'a mut Value, String> {
    doc.pointer_mut(path)
        .ok_or_else(|| format!("no value at {path}"))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, token) = split(path)?;
    match pointer_mut(doc, parent)? {
        Value::Object(map) => {
            map.insert(token, value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if token == "-" {
                items.len()
            } else {
                array_index(&token, items.len() + 1)?
            };
            items.insert(index, value);
            Ok(())
        }
        _ => Err(format!("parent of {path} is not a container")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, token) = split(path)?;
    match pointer_mut(doc, parent)? {
        Value::Object(map) => map
            .remove(&token)
            .ok_or_else(|| format!("no value at {path}")),
        Value::Array(items) => {
            let index = array_index(&token, items.len())?;
            Ok(items.remove(index))
        }
        _ => Err(format!("parent of {path} is not a container")),
    }
}

fn array_index(token: &str, len: usize) -> Result<usize, String> {
    let valid = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    match token.parse::<usize>() {
        Ok(i) if valid && i < len => Ok(i),
        _ => Err(format!("array index {token:?} out of range")),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_follows_the_rfc_7386_examples() {
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (mut target, patch, want) in cases {
            merge_patch(&mut target, &patch);
            assert_eq!(target, want, "patch {patch}");
        }
    }

    #[test]
    fn merge_patch_of_a_rollout_status_changes_only_the_named_fields() {
        let mut rollout =
            json!({"spec": {"replicas": 5}, "status": {"currentStepIndex": 0, "phase": "Paused"}});
        merge_patch(&mut rollout, &json!({"status": {"currentStepIndex": 2}}));
        assert_eq!(
            rollout,
            json!({"spec": {"replicas": 5}, "status": {"currentStepIndex": 2, "phase": "Paused"}})
        );
    }

    #[test]
    fn json_patch_applies_add_remove_replace_move_copy_and_test() {
        let mut doc = json!({"a": {"b": [1, 2]}, "c": "x"});
        let patch = json!([
            {"op": "test", "path": "/c", "value": "x"},
            {"op": "add", "path": "/a/b/1", "value": 9},
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "replace", "path": "/c", "value": "y"},
            {"op": "copy", "from": "/c", "path": "/d"},
            {"op": "move", "from": "/d", "path": "/a/e"},
            {"op": "remove", "path": "/a/b/0"},
            {"op": "add", "path": "/f~1g", "value": true},
        ]);
        json_patch(&mut doc, patch.as_array().unwrap()).unwrap();
        assert_eq!(
            doc,
            json!({"a": {"b": [9, 2, 3], "e": "y"}, "c": "y", "f/g": true})
        );
    }

    #[test]
    fn a_failing_json_patch_leaves_the_document_unchanged_and_names_the_operation() {
        let mut doc = json!({"a": 1});
        let patch = json!([
            {"op": "replace", "path": "/a", "value": 2},
            {"op": "test", "path": "/a", "value": 3},
        ]);
        let err = json_patch(&mut doc, patch.as_array().unwrap()).unwrap_err();
        assert!(err.contains("operation 1"), "{err}");
        assert_eq!(doc, json!({"a": 1}));
        for bad in [
            json!([{"op": "remove", "path": "/missing"}]),
            json!([{"op": "add", "path": "/a/b", "value": 1}]),
            json!([{"op": "frobnicate", "path": "/a"}]),
            json!([{"op": "add", "path": "/x/01", "value": 1}]),
        ] {
            assert!(
                json_patch(&mut doc, bad.as_array().unwrap()).is_err(),
                "{bad}"
            );
        }
    }
}
