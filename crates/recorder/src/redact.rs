//! Keeping secrets out of recordings: every `env[].value` (in pods, pod templates, and the
//! `kubectl.kubernetes.io/last-applied-configuration` copy of them) and every Helm value of an
//! Argo CD Application is replaced by `sha256:` and the first 12 hex digits of its SHA-256, so a
//! diff still shows that a value changed, and never what it was.
//!
//! The recorder redacts in one pass over the bytes ([`crate::scan`]), which keeps every other
//! byte as sent; the tree walk here ([`redact_value`]) is the reference it is tested against and
//! its fallback for JSON it does not follow.

use serde_json::Value;
use sha2::{Digest, Sha256};

pub(crate) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The digest a secret value is replaced with.
pub fn digest(value: &str) -> String {
    let hash = Sha256::digest(value.as_bytes());
    let hex: String = hash.iter().take(6).map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// True for a value that is already a digest (recording a recording must not digest twice).
pub(crate) fn is_digest(s: &str) -> bool {
    s.strip_prefix("sha256:")
        .is_some_and(|h| !h.is_empty() && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True when `object` may hold a secret: every secret is under a key written `"env"` or
/// `"helm"`, or inside the last-applied annotation, unless keys are written with `\u` escapes.
pub(crate) fn may_hold_secrets(object: &str) -> bool {
    object.contains("\"env\"")
        || object.contains("\"helm\"")
        || object.contains("last-applied-configuration")
        || object.contains("\\u")
}

/// The object with secrets replaced, or `None` when it holds none (keep the bytes as sent).
/// Every byte that is not a secret is kept as it was.
pub fn redact_object(object: &[u8]) -> Option<Vec<u8>> {
    match crate::scan::scan(object, true) {
        Some(scanned) => scanned.redacted,
        None => redact_tree(object),
    }
}

/// [`redact_object`] on a parsed tree (re-serialized when something changed): the reference.
pub(crate) fn redact_tree(object: &[u8]) -> Option<Vec<u8>> {
    if !may_hold_secrets(std::str::from_utf8(object).ok()?) {
        return None;
    }
    let mut value: Value = serde_json::from_slice(object).ok()?;
    if redact_value(&mut value) {
        serde_json::to_vec(&value).ok()
    } else {
        None
    }
}

/// Redacts in place; true when something changed.
pub fn redact_value(v: &mut Value) -> bool {
    let mut changed = false;
    match v {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                changed |= match (key.as_str(), &mut *child) {
                    ("env", Value::Array(items)) => redact_env(items),
                    ("helm", Value::Object(_)) => redact_helm(child),
                    _ => redact_value(child),
                };
            }
            if let Some(Value::Object(annotations)) = map
                .get_mut("metadata")
                .and_then(|m| m.get_mut("annotations"))
            {
                if let Some(Value::String(text)) = annotations.get_mut(LAST_APPLIED) {
                    if let Ok(mut applied) = serde_json::from_str::<Value>(text) {
                        if redact_value(&mut applied) {
                            if let Ok(s) = serde_json::to_string(&applied) {
                                *text = s;
                                changed = true;
                            }
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                changed |= redact_value(item);
            }
        }
        _ => {}
    }
    changed
}

fn redact_string(s: &mut String) -> bool {
    if is_digest(s) {
        return false;
    }
    *s = digest(s);
    true
}

fn redact_env(items: &mut [Value]) -> bool {
    let mut changed = false;
    for item in items {
        if let Some(Value::String(s)) = item.get_mut("value") {
            changed |= redact_string(s);
        }
    }
    changed
}

fn redact_helm(helm: &mut Value) -> bool {
    let mut changed = false;
    if let Some(Value::String(s)) = helm.get_mut("values") {
        changed |= redact_string(s);
    }
    if let Some(obj) = helm.get_mut("valuesObject") {
        if !obj.is_null() && obj.get("redacted").is_none() {
            let text = obj.to_string();
            *obj = serde_json::json!({ "redacted": digest(&text) });
            changed = true;
        }
    }
    if let Some(Value::Array(params)) = helm.get_mut("parameters") {
        for p in params {
            if let Some(Value::String(s)) = p.get_mut("value") {
                changed |= redact_string(s);
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn env_values_in_pods_and_templates_become_digests() {
        let pod = json!({"kind": "Pod", "spec": {"containers": [{"name": "app", "env": [
            {"name": "DB_PASSWORD", "value": "hunter2"},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "db", "key": "pw"}}}
        ]}]}});
        let out = redact_object(&serde_json::to_vec(&pod).unwrap()).expect("redacted");
        let text = String::from_utf8(out).unwrap();
        assert!(!text.contains("hunter2"));
        assert!(text.contains(&digest("hunter2")));
        assert!(text.contains("secretKeyRef"), "references are kept");
        let rs = json!({"spec": {"template": {"spec": {"initContainers": [{"env": [{"name": "X", "value": "y"}]}]}}}});
        assert!(
            !String::from_utf8(redact_object(&serde_json::to_vec(&rs).unwrap()).unwrap())
                .unwrap()
                .contains("\"y\"")
        );
    }

    #[test]
    fn a_digest_keeps_showing_that_a_value_changed() {
        assert_ne!(digest("a"), digest("b"));
        assert_eq!(digest("a"), digest("a"));
        assert_eq!(digest("a").len(), "sha256:".len() + 12);
    }

    #[test]
    fn redaction_is_idempotent_and_leaves_clean_objects_alone() {
        let pod = json!({"spec": {"containers": [{"env": [{"name": "A", "value": "secret"}]}]}});
        let once = redact_object(&serde_json::to_vec(&pod).unwrap()).unwrap();
        assert_eq!(redact_object(&once), None, "a digest is not digested again");
        let clean = br#"{"kind":"Service","spec":{"selector":{"app":"x"}}}"#;
        assert_eq!(redact_object(clean), None);
    }

    #[test]
    fn last_applied_configuration_and_helm_values_are_redacted() {
        let applied = json!({"spec": {"template": {"spec": {"containers": [{"env": [{"name": "K", "value": "topsecret"}]}]}}}});
        let ro = json!({"metadata": {"annotations": {LAST_APPLIED: applied.to_string()}}});
        let out =
            String::from_utf8(redact_object(&serde_json::to_vec(&ro).unwrap()).unwrap()).unwrap();
        assert!(!out.contains("topsecret"), "{out}");
        let app = json!({"spec": {"source": {"helm": {"values": "password: x1", "parameters": [{"name": "p", "value": "x2"}], "valuesObject": {"password": "x3"}}}}});
        let out =
            String::from_utf8(redact_object(&serde_json::to_vec(&app).unwrap()).unwrap()).unwrap();
        for s in ["x1", "x2", "x3"] {
            assert!(!out.contains(s), "{s} in {out}");
        }
    }
}
