//! Label selectors and the field selectors the server supports (`metadata.name`,
//! `metadata.namespace`).

use std::collections::BTreeMap;

use crate::json::Meta;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector`: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<Requirement>);

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn check_key(key: &str, term: &str) -> Result<String, String> {
    let valid = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if valid {
        Ok(key.to_owned())
    } else {
        Err(format!("invalid label key {key:?} in {term:?}"))
    }
}

fn parse_set(rest: &str, term: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesized set of values in {term:?}"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
        .collect())
}

impl LabelSelector {
    /// Parses `a=b,c!=d,e in (x,y),f notin (z),g,!h`. An empty string selects everything.
    pub fn parse(s: &str) -> Result<LabelSelector, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for term in split_terms(s) {
            let t = term.trim();
            if t.is_empty() {
                return Err(format!("empty requirement in {s:?}"));
            }
            if let Some(key) = t.strip_prefix('!') {
                reqs.push(Requirement::NotExists(check_key(key.trim(), t)?));
            } else if let Some((key, rest)) = t.split_once(" notin ") {
                reqs.push(Requirement::NotIn(
                    check_key(key.trim(), t)?,
                    parse_set(rest, t)?,
                ));
            } else if let Some((key, rest)) = t.split_once(" in ") {
                reqs.push(Requirement::In(
                    check_key(key.trim(), t)?,
                    parse_set(rest, t)?,
                ));
            } else if let Some((key, value)) = t.split_once("!=") {
                reqs.push(Requirement::NotEquals(
                    check_key(key.trim(), t)?,
                    value.trim().to_owned(),
                ));
            } else if let Some((key, value)) = t.split_once("==").or_else(|| t.split_once('=')) {
                reqs.push(Requirement::Equals(
                    check_key(key.trim(), t)?,
                    value.trim().to_owned(),
                ));
            } else {
                reqs.push(Requirement::Exists(check_key(t, t)?));
            }
        }
        Ok(LabelSelector(reqs))
    }

    /// True when it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `labels` match every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::NotExists(k) => !labels.contains_key(k),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
}

/// A parsed `fieldSelector` on `metadata.name` and `metadata.namespace`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(Field, bool, String)>);

impl FieldSelector {
    /// Parses `metadata.name=x,metadata.namespace!=y`. Other fields are refused.
    pub fn parse(s: &str) -> Result<FieldSelector, String> {
        let mut out = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(out));
        }
        for term in s.split(',') {
            let t = term.trim();
            let (field, equal, value) = if let Some((f, v)) = t.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = t.split_once("==").or_else(|| t.split_once('=')) {
                (f, true, v)
            } else {
                return Err(format!(
                    "invalid field selector term {t:?}: expected FIELD=VALUE"
                ));
            };
            let field = match field.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other => {
                    return Err(format!(
                        "field label not supported: {other} (only metadata.name and metadata.namespace)"
                    ));
                }
            };
            out.push((field, equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(out))
    }

    /// Adds the term `metadata.name=name`.
    pub fn push_name(&mut self, name: &str) {
        self.0.push((Field::Name, true, name.to_owned()));
    }

    /// True when it selects everything.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// True when `meta` matches every requirement.
    pub fn matches(&self, meta: &Meta) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = match field {
                Field::Name => &*meta.name,
                Field::Namespace => &*meta.namespace,
            };
            (actual == value.as_str()) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selectors_support_equality_sets_and_existence() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let yes = [
            "",
            "app=web",
            "app==web",
            "app!=db",
            "app in (web, db)",
            "tier notin (back)",
            "app,tier",
            "!missing",
            "app=web,tier in (front)",
        ];
        for s in yes {
            assert!(LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
        let no = ["app=db", "app notin (web)", "missing", "!app", "x in (y)"];
        for s in no {
            assert!(!LabelSelector::parse(s).unwrap().matches(&l), "{s}");
        }
    }

    #[test]
    fn bad_label_selectors_say_why() {
        assert!(LabelSelector::parse("a in x").is_err());
        assert!(LabelSelector::parse("a=b,,c").is_err());
        assert!(LabelSelector::parse("bad key=1").is_err());
    }

    #[test]
    fn field_selectors_cover_name_and_namespace_only() {
        let m = Meta {
            name: "a".into(),
            namespace: "n".into(),
            ..Meta::default()
        };
        assert!(FieldSelector::parse("metadata.name=a").unwrap().matches(&m));
        assert!(
            FieldSelector::parse("metadata.namespace==n,metadata.name!=b")
                .unwrap()
                .matches(&m)
        );
        assert!(!FieldSelector::parse("metadata.name=b").unwrap().matches(&m));
        let e = FieldSelector::parse("status.phase=Running").unwrap_err();
        assert!(e.contains("not supported"), "{e}");
    }
}
