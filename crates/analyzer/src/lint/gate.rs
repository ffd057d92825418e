//! The gate before a sync (`lint --live`): what applying rendered manifests would do to the
//! rollouts the cluster runs now.
//!
//! A rendered Rollout is compared with the live one: a pod template that differs from the live
//! `spec.template` makes a new revision, and where a canary (or a blue-green preview) is in
//! progress, the new revision replaces it at step 0 and its pause is lost. A rendered Service
//! is compared with the live one: a selector that keeps none of the ready pods the live one
//! routes to takes the traffic away from them.
//!
//! The live template and the render are compared as the analyzer compares two revisions
//! ([`template_diff`]), with one more allowance: a field the render leaves out that the live
//! object holds at the value the Rollout CRD defaults it to (a container port's `protocol:
//! TCP`) is no change, since the API server defaults it again at the apply.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{LintFinding, Obj, labels, map_at, named_references, objects, path, pointer, str_at};
use crate::base::HASH_LABEL;
use crate::model::diff::{Change, Path, Segment, only_annotations, template_diff};
use crate::report::finding::{Rule, Severity};

/// The rules the gate checks, in the registry's order.
pub const GATE_RULES: &[Rule] = &[
    Rule::RerenderRestart,
    Rule::PauseLost,
    Rule::ServiceSelectorMismatch,
];

/// The cluster as it is, in the namespaces of the render: each kind's items as the API server
/// lists them.
#[derive(Clone, Debug, Default)]
pub struct Live {
    pub rollouts: Vec<Value>,
    pub replica_sets: Vec<Value>,
    pub services: Vec<Value>,
    pub pods: Vec<Value>,
}

/// What the gate found, and what it compared.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    pub findings: Vec<LintFinding>,
    /// One line per rendered Rollout or Service: what applying it does (`Rollout checkout-api:
    /// paused at step 1 of 74f8d84674; the render changes ...`).
    pub notes: Vec<String>,
}

/// Values the Rollout CRD's schema defaults inside a pod template, by the last key of their
/// path and the key above it: a render that leaves them out changes nothing.
const CRD_DEFAULTS: &[(&str, &str, DefaultValue)] = &[
    ("ports", "protocol", DefaultValue::Str("TCP")),
    ("grpc", "service", DefaultValue::Str("")),
    ("configMapKeyRef", "name", DefaultValue::Str("")),
    ("secretKeyRef", "name", DefaultValue::Str("")),
    ("configMapRef", "name", DefaultValue::Str("")),
    ("secretRef", "name", DefaultValue::Str("")),
    ("imagePullSecrets", "name", DefaultValue::Str("")),
    ("fileKeyRef", "optional", DefaultValue::Bool(false)),
];

#[derive(Clone, Copy, Debug)]
enum DefaultValue {
    Str(&'static str),
    Bool(bool),
}

impl DefaultValue {
    fn is(self, v: &Value) -> bool {
        match self {
            DefaultValue::Str(s) => v.as_str() == Some(s),
            DefaultValue::Bool(b) => v.as_bool() == Some(b),
        }
    }
}

/// The key a segment stands under, for a list item the list's key.
fn key_of(s: &Segment) -> Option<&str> {
    match s {
        Segment::Key(k) => Some(k),
        _ => None,
    }
}

/// True when `c` is a field the render leaves out that the live object holds at its CRD
/// default.
fn defaulted(c: &Change) -> bool {
    let (Some(old), None) = (&c.old, &c.new) else {
        return false;
    };
    let segments = &c.path.0;
    let Some(last) = segments.last().and_then(key_of) else {
        return false;
    };
    // The key above the field, skipping the list item it is in.
    let parent = segments.iter().rev().skip(1).find_map(key_of).unwrap_or("");
    CRD_DEFAULTS
        .iter()
        .any(|(p, k, d)| *p == parent && *k == last && d.is(old))
}

/// The value at `path` in `v`: keys, named items (by `name`) and indices.
fn value_at<'a>(v: &'a Value, path: &Path) -> Option<&'a Value> {
    let mut v = v;
    for s in &path.0 {
        v = match s {
            Segment::Key(k) => v.get(k)?,
            Segment::Index(i) => v.get(i)?,
            Segment::Named(n) => v
                .as_array()?
                .iter()
                .find(|item| item.get("name").and_then(Value::as_str) == Some(n))?,
        };
    }
    (!v.is_null()).then_some(v)
}

/// `path` in a rendered template as the reader's locator takes it (a named item by its index
/// in the render), below `spec.template`.
fn located(template: &Value, p: &Path) -> Vec<String> {
    let mut out = path(&["spec", "template"]);
    let mut v = Some(template);
    for s in &p.0 {
        match s {
            Segment::Key(k) => {
                out.push(k.clone());
                v = v.and_then(|v| v.get(k));
            }
            Segment::Index(i) => {
                out.push(i.to_string());
                v = v.and_then(|v| v.get(i));
            }
            Segment::Named(n) => {
                let at = v.and_then(Value::as_array).and_then(|a| {
                    a.iter()
                        .position(|item| item.get("name").and_then(Value::as_str) == Some(n))
                });
                let Some(i) = at else {
                    // Not in the render (the change removes it): the list is the place.
                    break;
                };
                out.push(i.to_string());
                v = v.and_then(|v| v.get(i));
            }
        }
    }
    out
}

/// A change for a person: a checksum (over 24 letters and digits) cut to its first 12, which
/// tell two apart; any value cut at 80 characters.
fn said(c: &Change) -> String {
    let show = |v: Option<&Value>| {
        let s = Change::show(v);
        let n = s.chars().count();
        if n > 24 && s.chars().all(|c| c.is_ascii_alphanumeric()) {
            format!("{}…", s.chars().take(12).collect::<String>())
        } else if n > 80 {
            format!("{}…", s.chars().take(76).collect::<String>())
        } else {
            s
        }
    };
    format!(
        "{}: {} -> {}",
        c.path,
        show(c.old.as_ref()),
        show(c.new.as_ref())
    )
}

/// A live object of `kind` by namespace and name.
fn by_name<'a>(items: &'a [Value], ns: &str, name: &str) -> Option<&'a Value> {
    items.iter().find(|o| {
        str_at(o, &["metadata", "name"]) == Some(name)
            && str_at(o, &["metadata", "namespace"]).is_none_or(|n| n == ns)
    })
}

/// The ReplicaSet of revision `hash` of Rollout `name`.
fn replica_set<'a>(live: &'a Live, ns: &str, name: &str, hash: &str) -> Option<&'a Value> {
    live.replica_sets.iter().find(|rs| {
        str_at(rs, &["metadata", "namespace"]).is_none_or(|n| n == ns)
            && str_at(rs, &["metadata", "labels", HASH_LABEL]) == Some(hash)
            && rs
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .is_some_and(|owners| {
                    owners.iter().any(|o| {
                        o.get("kind").and_then(Value::as_str) == Some("Rollout")
                            && o.get("name").and_then(Value::as_str) == Some(name)
                    })
                })
    })
}

/// Checks the render `objects` (`namespace` for objects that name none) against `live`.
pub fn gate(objects_: &[Value], namespace: &str, live: &Live) -> Gate {
    let mut g = Gate::default();
    let objs = objects(objects_, namespace);
    for o in &objs {
        match o.kind {
            "Rollout" => rollout(o, live, &mut g),
            "Service" => service(o, live, &mut g),
            _ => {}
        }
    }
    g.findings.sort_by_key(|f| f.object);
    g
}

/// Where a live rollout is: its revision in progress, if one is.
struct Progress<'a> {
    current: &'a str,
    stable: &'a str,
    step: Option<u64>,
    steps: Option<usize>,
    /// Why it is paused, and since when.
    paused: Option<(&'a str, Option<&'a str>)>,
    blue_green: bool,
}

fn progress(live: &Value) -> Option<Progress<'_>> {
    let status = live.get("status")?;
    let current = status.get("currentPodHash")?.as_str()?;
    let stable = status.get("stableRS").and_then(Value::as_str).unwrap_or("");
    if stable.is_empty()
        || current == stable
        || status.get("abort").and_then(Value::as_bool) == Some(true)
    {
        return None;
    }
    let blue_green = live.pointer("/spec/strategy/blueGreen").is_some();
    let pause = status
        .get("pauseConditions")
        .and_then(Value::as_array)
        .and_then(|p| p.first());
    let paused = match pause {
        Some(p) => Some((
            p.get("reason").and_then(Value::as_str).unwrap_or("paused"),
            p.get("startTime").and_then(Value::as_str),
        )),
        None if live.pointer("/spec/paused").and_then(Value::as_bool) == Some(true) => {
            Some(("spec.paused", None))
        }
        None => None,
    };
    Some(Progress {
        current,
        stable,
        step: status.get("currentStepIndex").and_then(Value::as_u64),
        steps: live
            .pointer("/spec/strategy/canary/steps")
            .and_then(Value::as_array)
            .map(Vec::len),
        paused,
        blue_green,
    })
}

impl Progress<'_> {
    /// `paused at step 1 of 74f8d84674 since 2026-12-06T13:00:13Z`, `at step 2 (of 4) of ...`,
    /// `waiting for promotion, preview 74f8d84674 ...`.
    fn words(&self) -> String {
        let at = if self.blue_green {
            format!("its preview {} not promoted yet", self.current)
        } else {
            match (self.step, self.steps) {
                (Some(s), Some(n)) => format!("at step {s} of {n} of {}", self.current),
                (Some(s), None) => format!("at step {s} of {}", self.current),
                _ => format!("rolling out {}", self.current),
            }
        };
        match self.paused {
            Some((_, Some(since))) => format!("paused {at} since {since}"),
            Some((why, None)) => format!("paused ({why}) {at}"),
            None => at,
        }
    }
}

fn rollout(o: &Obj<'_>, live: &Live, g: &mut Gate) {
    let Some(rendered) = o.value.pointer("/spec/template") else {
        return;
    };
    let Some(now) = by_name(&live.rollouts, o.namespace, o.name) else {
        g.notes.push(format!(
            "Rollout {}/{}: not in the cluster; applying it starts its first revision",
            o.namespace, o.name
        ));
        return;
    };
    let Some(template) = now.pointer("/spec/template") else {
        g.notes.push(format!(
            "Rollout {}/{}: the live rollout has no pod template (a workloadRef); not compared",
            o.namespace, o.name
        ));
        return;
    };
    let changes: Vec<Change> = template_diff(template, rendered)
        .into_iter()
        .filter(|c| !defaulted(c))
        .collect();
    let ns = o.namespace;
    let Some(p) = progress(now) else {
        g.notes.push(if changes.is_empty() {
            format!(
                "Rollout {ns}/{}: the render leaves its pod template as it is",
                o.name
            )
        } else {
            format!(
                "Rollout {ns}/{}: no revision in progress; applying the render starts a new one ({} change{})",
                o.name,
                changes.len(),
                if changes.len() == 1 { "" } else { "s" }
            )
        });
        return;
    };
    if changes.is_empty() {
        g.notes.push(format!(
            "Rollout {ns}/{}: {}; the render leaves its pod template as it is",
            o.name,
            p.words()
        ));
        return;
    }
    // A render of the stable revision's template: the controller goes back to it at once.
    if returns_to_stable(live, ns, o.name, &p, &changes) {
        g.notes.push(format!(
            "Rollout {ns}/{}: {}; the render is the stable revision {}'s template: applying it abandons {} and returns to {} without steps",
            o.name,
            p.words(),
            p.stable,
            p.current,
            p.stable
        ));
        return;
    }
    let what = if p.blue_green {
        "the preview"
    } else {
        "the canary"
    };
    let annotations = only_annotations(&changes);
    let list: Vec<String> = changes.iter().take(4).map(said).collect();
    let more = changes.len().saturating_sub(4);
    let diff = format!(
        "{}{}",
        list.join("; "),
        if more > 0 {
            format!("; {more} more")
        } else {
            String::new()
        }
    );
    let lost = if p.paused.is_some() {
        "the pause is lost, and "
    } else {
        ""
    };
    let restart = if p.blue_green {
        format!(
            "applying it replaces the preview {} with a new one: {lost}the new preview must become ready before it can be promoted",
            p.current
        )
    } else {
        format!(
            "applying it restarts the canary at step 0 on a new revision: {lost}the steps {} had passed run again",
            p.current
        )
    };
    let rule = match p.paused {
        Some(_) => Rule::PauseLost,
        None => Rule::RerenderRestart,
    };
    let status = format!("kubectl argo rollouts status {} -n {ns}", o.name);
    let abort = format!("kubectl argo rollouts abort {} -n {ns}", o.name);
    let (message, fix) = if annotations {
        (
            format!(
                "This render changes the pod template of Rollout {}, {}; the change is annotations only ({diff}): {restart}, for the same build",
                o.name,
                p.words()
            ),
            format!(
                "Do not sync this render while {what} is in progress: let {} finish first (`{status}` waits until it is Healthy, and fails if it degrades), then sync it; render the config and the release in one change (resolve the values revision before writing the image tag).",
                o.name
            ),
        )
    } else {
        (
            format!(
                "This render changes the pod template of Rollout {}, {} ({diff}): {restart}",
                o.name,
                p.words()
            ),
            format!(
                "Hold this render until {} is promoted (`{status}` waits until it is Healthy). To replace {what} in progress on purpose, abort it first (`{abort}`: the stable revision takes the traffic back), then sync.",
                o.name
            ),
        )
    };
    g.notes.push(format!(
        "Rollout {ns}/{}: {}; the render changes its pod template",
        o.name,
        p.words()
    ));
    g.findings.push(LintFinding {
        rule,
        severity: Severity::Error,
        object: o.index,
        path: located(rendered, &changes[0].path),
        message,
        fix,
    });
}

/// True when the render is the template of the stable revision: each change of the live
/// template sets the stable ReplicaSet's value, and every way the stable revision differs
/// from the current one is among the changes. ReplicaSets are compared with ReplicaSets (both
/// hold the API server's pod defaults), the render with the live Rollout (neither does).
fn returns_to_stable(
    live: &Live,
    ns: &str,
    name: &str,
    p: &Progress<'_>,
    changes: &[Change],
) -> bool {
    let (Some(stable), Some(current)) = (
        replica_set(live, ns, name, p.stable).and_then(|rs| rs.pointer("/spec/template")),
        replica_set(live, ns, name, p.current).and_then(|rs| rs.pointer("/spec/template")),
    ) else {
        return false;
    };
    changes
        .iter()
        .all(|c| value_at(stable, &c.path) == c.new.as_ref())
        && template_diff(current, stable)
            .iter()
            .all(|d| changes.iter().any(|c| c.path == d.path))
}

/// True when `labels` has every key and value of `selector` (an empty selector selects none,
/// as a Service's does).
fn selects(selector: &BTreeMap<&str, &str>, labels: &BTreeMap<&str, &str>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn ready(pod: &Value) -> bool {
    pod.pointer("/metadata/deletionTimestamp").is_none()
        && pod
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Ready")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
}

/// True when a live rollout names Service `name` in its strategy: the controller keeps its hash
/// key in that Service's selector.
fn named_by_a_rollout(live: &Live, ns: &str, name: &str) -> bool {
    live.rollouts.iter().any(|r| {
        str_at(r, &["metadata", "namespace"]).is_none_or(|n| n == ns)
            && named_references(r)
                .iter()
                .any(|(kind, n, _)| *kind == "Service" && *n == name)
    })
}

fn show(selector: &BTreeMap<&str, &str>) -> String {
    let parts: Vec<String> = selector.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

fn service(o: &Obj<'_>, live: &Live, g: &mut Gate) {
    let ns = o.namespace;
    let Some(now) = by_name(&live.services, ns, o.name) else {
        return;
    };
    let before = labels(map_at(now, &["spec", "selector"]));
    let mut after = labels(map_at(o.value, &["spec", "selector"]));
    // The controller writes its key back into a Service a rollout names.
    if let (None, Some(hash)) = (after.get(HASH_LABEL), before.get(HASH_LABEL))
        && named_by_a_rollout(live, ns, o.name)
    {
        after.insert(HASH_LABEL, hash);
    }
    if after == before {
        return;
    }
    // The labels of each ready pod of the namespace.
    let pods: Vec<BTreeMap<&str, &str>> = live
        .pods
        .iter()
        .filter(|p| str_at(p, &["metadata", "namespace"]).is_none_or(|n| n == ns) && ready(p))
        .map(|p| labels(map_at(p, &["metadata", "labels"])))
        .collect();
    let serving: Vec<&BTreeMap<&str, &str>> = pods.iter().filter(|l| selects(&before, l)).collect();
    if serving.is_empty() || serving.iter().any(|l| selects(&after, l)) {
        return;
    }
    let revisions = |ps: &[&BTreeMap<&str, &str>]| -> String {
        let mut hashes: Vec<&str> = ps
            .iter()
            .filter_map(|l| l.get(HASH_LABEL).copied())
            .collect();
        hashes.sort_unstable();
        hashes.dedup();
        if hashes.is_empty() {
            String::new()
        } else {
            format!(" (revision {})", hashes.join(", "))
        }
    };
    let others: Vec<&BTreeMap<&str, &str>> = pods.iter().filter(|l| selects(&after, l)).collect();
    let then = if others.is_empty() {
        "no ready pod at all".to_owned()
    } else {
        format!(
            "{} other ready pod{}{}",
            others.len(),
            if others.len() == 1 { "" } else { "s" },
            revisions(&others)
        )
    };
    let key = after
        .iter()
        .find(|(k, v)| before.get(*k) != Some(*v))
        .map(|(k, _)| *k)
        .or_else(|| before.keys().find(|k| !after.contains_key(*k)).copied())
        .unwrap_or("");
    let field = if o
        .value
        .pointer(&pointer(&["spec", "selector", key]))
        .is_some()
    {
        path(&["spec", "selector", key])
    } else {
        path(&["spec", "selector"])
    };
    g.notes.push(format!(
        "Service {ns}/{}: the render moves its selector away from the pods that take traffic",
        o.name
    ));
    g.findings.push(LintFinding {
        rule: Rule::ServiceSelectorMismatch,
        severity: Severity::Error,
        object: o.index,
        path: field,
        message: format!(
            "This render moves Service {}'s selector away from the pods that take traffic: it selects {} now, {} ready pod{}{}; the render's {} selects none of them, and {then}",
            o.name,
            show(&before),
            serving.len(),
            if serving.len() == 1 { "" } else { "s" },
            revisions(&serving),
            show(&after),
        ),
        fix: format!(
            "Do not sync this render as it is: keep Service {}'s selector on labels the serving pods carry ({}), or release pods that carry the new labels first.",
            o.name,
            show(&before)
        ),
    });
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::{Live, gate};
    use crate::report::finding::{Rule, Severity};

    const T: &str = "2026-12-06T13:00:13Z";

    fn template(checksum: &str, image: &str, protocol: bool) -> Value {
        let mut port = json!({"containerPort": 8080});
        if protocol {
            port["protocol"] = json!("TCP");
        }
        json!({"metadata": {"labels": {"app": "checkout-api"},
                            "annotations": {"checksum/config": checksum}},
               "spec": {"containers": [{"name": "app", "image": image, "ports": [port]}]}})
    }

    fn rendered(checksum: &str, image: &str) -> Value {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
               "metadata": {"name": "checkout-api"},
               "spec": {"replicas": 3, "template": template(checksum, image, false),
                        "strategy": {"canary": {"stableService": "checkout-api",
                            "steps": [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}]}}}})
    }

    /// A live rollout whose current revision runs `template`, `current` over `stable`, paused
    /// at step 1 when `paused`.
    fn live_rollout(template: Value, current: &str, stable: &str, paused: bool) -> Value {
        let mut r = rendered("", "");
        r["metadata"]["namespace"] = json!("payments");
        r["spec"]["template"] = template;
        r["status"] = json!({"currentPodHash": current, "stableRS": stable,
                             "currentStepIndex": if paused { 1 } else { 3 }});
        if paused {
            r["status"]["pauseConditions"] = json!([{"reason": "CanaryPauseStep", "startTime": T}]);
        }
        r
    }

    /// The cluster with one live rollout (see [`live_rollout`]).
    fn one_rollout(template: Value, current: &str, stable: &str, paused: bool) -> Live {
        Live {
            rollouts: vec![live_rollout(template, current, stable, paused)],
            ..Live::default()
        }
    }

    fn replica_set(hash: &str, template: &Value) -> Value {
        let mut t = template.clone();
        t["metadata"]["labels"]["rollouts-pod-template-hash"] = json!(hash);
        // What the API server defaults in a ReplicaSet's pods and not in a Rollout's.
        t["spec"]["restartPolicy"] = json!("Always");
        t["spec"]["containers"][0]["imagePullPolicy"] = json!("IfNotPresent");
        json!({"kind": "ReplicaSet",
               "metadata": {"name": format!("checkout-api-{hash}"), "namespace": "payments",
                            "labels": {"rollouts-pod-template-hash": hash},
                            "ownerReferences": [{"kind": "Rollout", "name": "checkout-api"}]},
               "spec": {"template": t}})
    }

    const V1: &str = "registry.example/checkout-api:1.0";
    const V2: &str = "registry.example/checkout-api:1.1";

    /// Seed 000's second render: the canary of 1.1 paused at step 1, and a render that changes
    /// only `checksum/config`.
    #[test]
    fn a_checksum_only_render_of_a_paused_canary_is_refused() {
        let live = one_rollout(template("aaa", V2, true), "74f8d84674", "6b9d5c7f4d", true);
        let g = gate(&[rendered("bbb", V2)], "payments", &live);
        assert_eq!(g.findings.len(), 1, "{g:#?}");
        let f = &g.findings[0];
        assert_eq!((f.rule, f.severity), (Rule::PauseLost, Severity::Error));
        assert_eq!(
            f.path,
            [
                "spec",
                "template",
                "metadata",
                "annotations",
                "checksum/config"
            ]
        );
        assert!(
            f.message.contains(&format!(
                "paused at step 1 of 3 of 74f8d84674 since {T}; the change is annotations only (metadata.annotations[\"checksum/config\"]: aaa -> bbb): applying it restarts the canary at step 0"
            )),
            "{}",
            f.message
        );
        assert!(
            f.fix
                .contains("`kubectl argo rollouts status checkout-api -n payments`"),
            "{}",
            f.fix
        );
    }

    /// Seed 000's first render: the rollout is promoted, and a new image starts a canary.
    #[test]
    fn a_new_release_of_a_promoted_rollout_passes() {
        let live = one_rollout(template("aaa", V1, true), "6b9d5c7f4d", "6b9d5c7f4d", false);
        let g = gate(&[rendered("aaa", V2)], "payments", &live);
        assert!(g.findings.is_empty(), "{g:#?}");
        assert!(
            g.notes[0].contains(
                "no revision in progress; applying the render starts a new one (1 change)"
            ),
            "{:?}",
            g.notes
        );
    }

    /// The API server defaults a port's protocol: a render without it is the same template.
    #[test]
    fn the_same_render_again_over_a_paused_canary_passes() {
        let live = one_rollout(template("aaa", V2, true), "74f8d84674", "6b9d5c7f4d", true);
        let g = gate(&[rendered("aaa", V2)], "payments", &live);
        assert!(g.findings.is_empty(), "{g:#?}");
        assert!(g.notes[0].contains("leaves its pod template as it is"));
    }

    #[test]
    fn a_new_image_over_a_canary_in_progress_is_refused_with_the_abort_that_allows_it() {
        let live = one_rollout(template("aaa", V2, true), "74f8d84674", "6b9d5c7f4d", false);
        let g = gate(
            &[rendered("aaa", "registry.example/checkout-api:1.2")],
            "payments",
            &live,
        );
        let f = &g.findings[0];
        assert_eq!(f.rule, Rule::RerenderRestart);
        assert_eq!(
            f.path,
            ["spec", "template", "spec", "containers", "0", "image"]
        );
        assert!(f.message.contains("at step 3 of 3 of 74f8d84674 (spec.containers[name=app].image: registry.example/checkout-api:1.1 -> registry.example/checkout-api:1.2)"), "{}", f.message);
        assert!(
            f.fix
                .contains("`kubectl argo rollouts abort checkout-api -n payments`")
        );
    }

    /// A render of the stable revision (a revert) is a rollback the controller does at once,
    /// not a restart.
    #[test]
    fn a_render_of_the_stable_revision_is_not_a_restart() {
        let (stable, current) = (template("aaa", V1, true), template("bbb", V2, true));
        let live = Live {
            rollouts: vec![live_rollout(
                current.clone(),
                "74f8d84674",
                "6b9d5c7f4d",
                true,
            )],
            replica_sets: vec![
                replica_set("6b9d5c7f4d", &stable),
                replica_set("74f8d84674", &current),
            ],
            ..Live::default()
        };
        let g = gate(&[rendered("aaa", V1)], "payments", &live);
        assert!(g.findings.is_empty(), "{g:#?}");
        assert!(
            g.notes[0].contains("the stable revision 6b9d5c7f4d's template"),
            "{:?}",
            g.notes
        );
        // Half a revert (the image, not the config) is a restart still.
        let g = gate(&[rendered("bbb", V1)], "payments", &live);
        assert_eq!(g.findings.len(), 1, "{g:#?}");
    }

    #[test]
    fn a_blue_green_preview_waiting_for_promotion_loses_its_pause() {
        let mut r = live_rollout(template("aaa", V2, true), "74f8d84674", "6b9d5c7f4d", false);
        r["spec"]["strategy"] = json!({"blueGreen": {"activeService": "checkout-api"}});
        r["status"]["pauseConditions"] = json!([{"reason": "BlueGreenPause", "startTime": T}]);
        let live = Live {
            rollouts: vec![r],
            ..Live::default()
        };
        let mut render = rendered("bbb", V2);
        render["spec"]["strategy"] = json!({"blueGreen": {"activeService": "checkout-api"}});
        let g = gate(&[render], "payments", &live);
        let f = &g.findings[0];
        assert_eq!(f.rule, Rule::PauseLost);
        assert!(
            f.message.contains(&format!(
                "paused its preview 74f8d84674 not promoted yet since {T}"
            )),
            "{}",
            f.message
        );
        assert!(
            f.message
                .contains("replaces the preview 74f8d84674 with a new one: the pause is lost"),
            "{}",
            f.message
        );
    }

    fn pod(name: &str, labels: Value, ready: bool) -> Value {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "payments", "labels": labels},
               "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn service(selector: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": "checkout-api", "namespace": "payments"},
               "spec": {"selector": selector}})
    }

    /// Seed 002 before the sync: a values file pins `version: v3`, which no pod has.
    #[test]
    fn a_selector_that_leaves_the_serving_pods_is_refused() {
        let live = Live {
            services: vec![service(json!({"app": "checkout-api", "version": "v2"}))],
            pods: vec![
                pod(
                    "a",
                    json!({"app": "checkout-api", "version": "v2", "rollouts-pod-template-hash": "74f8d84674"}),
                    true,
                ),
                pod("b", json!({"app": "checkout-api", "version": "v1"}), false),
            ],
            ..Live::default()
        };
        let g = gate(
            &[service(json!({"app": "checkout-api", "version": "v3"}))],
            "payments",
            &live,
        );
        let f = &g.findings[0];
        assert_eq!(
            (f.rule, f.severity),
            (Rule::ServiceSelectorMismatch, Severity::Error)
        );
        assert_eq!(f.path, ["spec", "selector", "version"]);
        assert!(f.message.contains("it selects {app: checkout-api, version: v2} now, 1 ready pod (revision 74f8d84674); the render's {app: checkout-api, version: v3} selects none of them, and no ready pod at all"), "{}", f.message);
        // A selector that keeps the serving pods passes.
        let g = gate(
            &[service(json!({"app": "checkout-api"}))],
            "payments",
            &live,
        );
        assert!(g.findings.is_empty(), "{g:#?}");
    }

    /// A Service a rollout names keeps the controller's key: a render without it moves nothing.
    #[test]
    fn a_render_without_the_controllers_key_keeps_the_serving_pods() {
        let live = Live {
            rollouts: vec![live_rollout(
                template("aaa", V2, true),
                "74f8d84674",
                "74f8d84674",
                false,
            )],
            services: vec![service(
                json!({"app": "checkout-api", "rollouts-pod-template-hash": "74f8d84674"}),
            )],
            pods: vec![pod(
                "a",
                json!({"app": "checkout-api", "rollouts-pod-template-hash": "74f8d84674"}),
                true,
            )],
            ..Live::default()
        };
        let g = gate(
            &[service(json!({"app": "checkout-api"}))],
            "payments",
            &live,
        );
        assert!(g.findings.is_empty(), "{g:#?}");
        // A hash pinned in Git to another revision takes the traffic away.
        let g = gate(
            &[service(
                json!({"app": "checkout-api", "rollouts-pod-template-hash": "6b9d5c7f4d"}),
            )],
            "payments",
            &live,
        );
        assert_eq!(
            g.findings[0].path,
            ["spec", "selector", "rollouts-pod-template-hash"]
        );
    }
}
