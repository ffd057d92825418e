//! `lint`: the rules that can be checked on rendered manifests before anything reaches the
//! cluster (`helm template ... | rollout-forensics lint -`), from the cross-object knowledge the
//! analyzer has of rollouts, their Services and the routers in front of them.
//!
//! A lint finding names the object (by its index in the input, which the reader maps to a file,
//! line and column) and the field (a path in the object, located by the reader where it can),
//! with the rule, its severity, what is wrong and the fix. The rules are the analyzer's own,
//! where the same failure is found live: [`LINT_RULES`].

use std::collections::{BTreeMap, HashMap, HashSet};

use serde::Serialize;
use serde_json::Value;

use crate::base::HASH_LABEL;
use crate::detectors::writer::per_render_key;
use crate::report::finding::{Rule, Severity};

/// The rules `lint` checks, in the registry's order.
pub const LINT_RULES: &[Rule] = &[
    Rule::HashOnlyChange,
    Rule::ServiceSelectorMismatch,
    Rule::DoubleRender,
    Rule::ImageNotPinned,
    Rule::NoRollbackHistory,
    Rule::FrontDoorBypass,
    Rule::SelectorFight,
    Rule::AnalysisWithoutTraffic,
    Rule::RolloutStopped,
];

/// One finding of `lint`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LintFinding {
    pub rule: Rule,
    pub severity: Severity,
    /// The object, by its index in the input.
    #[serde(skip)]
    pub object: usize,
    /// The field, as a path in the object (`spec`, `selector`, `version`; an index for an item
    /// of a list); empty: the object.
    #[serde(skip)]
    pub path: Vec<String>,
    /// What is wrong.
    pub message: String,
    /// What to change.
    pub fix: String,
}

/// An object of the input: its kind, namespace and name, and the object.
struct Obj<'a> {
    index: usize,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    value: &'a Value,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_str()
}

fn map_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a serde_json::Map<String, Value>> {
    let mut v = v;
    for p in path {
        v = v.get(p)?;
    }
    v.as_object()
}

/// The string values of a map of labels.
fn labels(m: Option<&serde_json::Map<String, Value>>) -> BTreeMap<&str, &str> {
    m.into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
        .collect()
}

fn path(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| (*p).to_owned()).collect()
}

/// Lints `objects` (Kubernetes objects as JSON, Lists already flattened; an object without
/// `kind` is left alone), `namespace` the one objects without `metadata.namespace` are in.
pub fn lint(objects_: &[Value], namespace: &str) -> Vec<LintFinding> {
    lint_against(objects_, namespace, None)
}

/// [`lint`], with the Services of the cluster (`live`, as `lint --live` lists them) where a
/// rollout's references are looked for: a Service missing from the render and the cluster is
/// an error, one the cluster holds is no finding.
pub fn lint_against(
    objects_: &[Value],
    namespace: &str,
    live: Option<&[Value]>,
) -> Vec<LintFinding> {
    let objs = objects(objects_, namespace);
    let index = Index::of(&objs);
    // What the input holds, by (kind, namespace, name); a cluster-scoped kind in namespace "".
    let held: HashSet<(&str, &str, &str)> = objs
        .iter()
        .map(|o| match o.kind {
            "ClusterAnalysisTemplate" => (o.kind, "", o.name),
            _ => (o.kind, o.namespace, o.name),
        })
        .collect();
    let mut out = Vec::new();
    for o in &objs {
        match o.kind {
            "Rollout" => {
                workload(o, &mut out);
                rollout_services(o, &objs, &index, &mut out);
                references(o, &held, live, &mut out);
            }
            "Deployment" | "StatefulSet" | "DaemonSet" => workload(o, &mut out),
            "Service" => hash_in_selector(o, &mut out),
            "Application" => {
                moving_values(o, &mut out);
                self_heal_over_pinned_hash(o, &objs, &mut out);
            }
            _ => {}
        }
    }
    renders_compared(&objs, &mut out);
    out.sort_by_key(|f| f.object);
    out
}

/// The Services, routers and AnalysisTemplates a rollout names that the input does not hold:
/// the controller refuses a rollout whose references are missing (`InvalidSpec`, Degraded). A
/// render may leave out what another release owns, so these are warnings; `lint --live` looks
/// for the Services in the cluster.
fn references(
    r: &Obj<'_>,
    held: &HashSet<(&str, &str, &str)>,
    live: Option<&[Value]>,
    out: &mut Vec<LintFinding>,
) {
    for (kind, name, at) in named_references(r.value) {
        let ns = match kind {
            "ClusterAnalysisTemplate" => "",
            _ => r.namespace,
        };
        let found = held.contains(&(kind, ns, name));
        if found {
            continue;
        }
        // The cluster's Services, with `--live`.
        let in_cluster = match (kind, live) {
            ("Service", Some(services)) => Some(services.iter().any(|s| {
                str_at(s, &["metadata", "name"]) == Some(name)
                    && str_at(s, &["metadata", "namespace"]).is_none_or(|n| n == r.namespace)
            })),
            _ => None,
        };
        let (severity, said) = match in_cluster {
            Some(true) => continue,
            Some(false) => (
                Severity::Error,
                "which neither this render nor the cluster holds: the controller will refuse the rollout (InvalidSpec) and it goes Degraded",
            ),
            None => (
                Severity::Warning,
                "which this render does not hold: unless it is in the cluster already, the controller refuses the rollout (InvalidSpec) and it goes Degraded",
            ),
        };
        out.push(LintFinding {
            rule: Rule::RolloutStopped,
            severity,
            object: r.index,
            path: at.clone(),
            message: format!(
                "Rollout {} names {kind} {name} ({}), {said}",
                r.name,
                at.join(".")
            ),
            fix: format!(
                "Render {kind} {name} with the rollout, or make sure it exists in namespace {} before the sync (`lint --live` checks Services against the cluster).",
                r.namespace
            ),
        });
    }
}

/// What a rollout names by name: (kind, name, the path of the name).
pub(crate) fn named_references(rollout: &Value) -> Vec<(&'static str, &str, Vec<String>)> {
    let mut out = Vec::new();
    let Some(strategy) = rollout.pointer("/spec/strategy") else {
        return out;
    };
    for (part, fields) in [
        ("canary", ["stableService", "canaryService"]),
        ("blueGreen", ["activeService", "previewService"]),
    ] {
        let named = strategy.get(part).map(|s| names(s, fields));
        for (n, f) in named.into_iter().flatten() {
            out.push(("Service", n, path(&["spec", "strategy", part, f])));
        }
    }
    // The routers its traffic routing names: (kind, the path below trafficRouting).
    for (kind, below) in [
        ("Ingress", &["nginx", "stableIngress"][..]),
        ("Ingress", &["alb", "ingress"][..]),
        ("VirtualService", &["istio", "virtualService", "name"][..]),
        ("DestinationRule", &["istio", "destinationRule", "name"][..]),
        (
            "HTTPRoute",
            &["plugins", "argoproj-labs/gatewayAPI", "httpRoute"][..],
        ),
    ] {
        let mut at = vec!["spec", "strategy", "canary", "trafficRouting"];
        at.extend_from_slice(below);
        let Some(n) = rollout.pointer(&pointer(&at)).and_then(Value::as_str) else {
            continue;
        };
        // A VirtualService as `name` or `name.namespace` (an Ingress's name may hold dots).
        let n = match kind {
            "VirtualService" => n.split('.').next().unwrap_or(n),
            _ => n,
        };
        out.push((kind, n, path(&at)));
    }
    // The Gateway API plugin's list of routes.
    let routes = strategy
        .pointer("/canary/trafficRouting/plugins/argoproj-labs~1gatewayAPI/httpRoutes")
        .and_then(Value::as_array);
    for (i, r) in routes.into_iter().flatten().enumerate() {
        if let Some(n) = r.get("name").and_then(Value::as_str) {
            out.push((
                "HTTPRoute",
                n,
                path(&[
                    "spec",
                    "strategy",
                    "canary",
                    "trafficRouting",
                    "plugins",
                    "argoproj-labs/gatewayAPI",
                    "httpRoutes",
                    &i.to_string(),
                    "name",
                ]),
            ));
        }
    }
    for (a, at) in analyses(rollout) {
        let templates = a.get("templates").and_then(Value::as_array);
        for (j, t) in templates.into_iter().flatten().enumerate() {
            let Some(n) = t.get("templateName").and_then(Value::as_str) else {
                continue;
            };
            let cluster = t.get("clusterScope").and_then(Value::as_bool) == Some(true);
            let mut p = at.clone();
            p.extend(path(&["templates", &j.to_string(), "templateName"]));
            out.push((
                if cluster {
                    "ClusterAnalysisTemplate"
                } else {
                    "AnalysisTemplate"
                },
                n,
                p,
            ));
        }
    }
    out
}

/// The JSON pointer of a path of keys (`/` and `~` in a key escaped).
fn pointer(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("/{}", k.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// A rollout's analyses, with the path of each: its canary's background analysis, then each
/// step's, then a blue-green rollout's before and after promotion.
fn analyses(rollout: &Value) -> Vec<(&Value, Vec<String>)> {
    let mut out = Vec::new();
    let Some(strategy) = rollout.pointer("/spec/strategy") else {
        return out;
    };
    if let Some(a) = strategy.pointer("/canary/analysis") {
        out.push((a, path(&["spec", "strategy", "canary", "analysis"])));
    }
    let steps = strategy.pointer("/canary/steps").and_then(Value::as_array);
    for (i, step) in steps.into_iter().flatten().enumerate() {
        if let Some(a) = step.get("analysis") {
            out.push((
                a,
                path(&[
                    "spec",
                    "strategy",
                    "canary",
                    "steps",
                    &i.to_string(),
                    "analysis",
                ]),
            ));
        }
    }
    for field in ["prePromotionAnalysis", "postPromotionAnalysis"] {
        if let Some(a) = strategy.get("blueGreen").and_then(|b| b.get(field)) {
            out.push((a, path(&["spec", "strategy", "blueGreen", field])));
        }
    }
    out
}

/// The path of the rollout's first analysis of its canary (background or at a step), if it
/// runs one.
fn canary_analysis(r: &Value) -> Option<Vec<String>> {
    analyses(r)
        .into_iter()
        .map(|(_, at)| at)
        .find(|at| at.get(2).is_some_and(|p| p == "canary"))
}

/// An Application that self-heals, beside a Service of its destination namespace whose
/// selector pins the controller's key: each promotion becomes a fight.
fn self_heal_over_pinned_hash(app: &Obj<'_>, objs: &[Obj<'_>], out: &mut Vec<LintFinding>) {
    if app
        .value
        .pointer("/spec/syncPolicy/automated/selfHeal")
        .and_then(Value::as_bool)
        != Some(true)
    {
        return;
    }
    let destination = app
        .value
        .pointer("/spec/destination/namespace")
        .and_then(Value::as_str)
        .unwrap_or(app.namespace);
    for s in objs
        .iter()
        .filter(|o| o.kind == "Service" && o.namespace == destination)
    {
        let Some(hash) = pinned_hash(s) else {
            continue;
        };
        out.push(LintFinding {
            rule: Rule::SelectorFight,
            severity: Severity::Warning,
            object: app.index,
            path: path(&["spec", "syncPolicy", "automated", "selfHeal"]),
            message: format!(
                "Application {} self-heals, and Service {} of its namespace {destination} pins {HASH_LABEL}: {hash}: at each promotion the controller moves the key, Argo CD writes {hash} back, and the two take turns until the self-heal backs off",
                app.name, s.name
            ),
            fix: format!(
                "Take {HASH_LABEL} out of Service {}'s selector in Git (the controller adds it); or ignore the field in the Application (`ignoreDifferences` of /spec/selector with `RespectIgnoreDifferences=true`).",
                s.name
            ),
        });
    }
}

/// The same workload rendered more than once in the input (two renders of one release, given
/// as two inputs): pod-template annotations or labels that differ between them are made at
/// render time, and every sync makes a new revision of an unchanged release.
fn renders_compared(objs: &[Obj<'_>], out: &mut Vec<LintFinding>) {
    let mut first: HashMap<(&str, &str, &str), &Obj<'_>> = HashMap::new();
    for o in objs {
        if !matches!(
            o.kind,
            "Rollout" | "Deployment" | "StatefulSet" | "DaemonSet"
        ) {
            continue;
        }
        let Some(template) = o.value.pointer("/spec/template") else {
            continue;
        };
        let Some(before) = first.get(&(o.kind, o.namespace, o.name)) else {
            first.insert((o.kind, o.namespace, o.name), o);
            continue;
        };
        let Some(was) = before.value.pointer("/spec/template") else {
            continue;
        };
        let changes = crate::model::diff::template_diff(was, template);
        let only_meta = !changes.is_empty()
            && changes.iter().all(|c| {
                c.path.starts_with(&["metadata", "annotations"])
                    || c.path.starts_with(&["metadata", "labels"])
            });
        if !only_meta {
            continue;
        }
        for c in &changes {
            let (Some(part), Some(key)) = (
                c.path.0.get(1).and_then(|s| match s {
                    crate::model::diff::Segment::Key(k) => Some(k.as_str()),
                    _ => None,
                }),
                c.path.last_key(),
            ) else {
                continue;
            };
            out.push(LintFinding {
                rule: Rule::HashOnlyChange,
                severity: Severity::Warning,
                object: o.index,
                path: path(&["spec", "template", "metadata", part, key]),
                message: format!(
                    "{} {} is rendered twice in the input and the renders differ only in the pod template's {part} {key} ({} -> {}): a value made at render time, so every sync of the same release makes a new revision (and restarts a canary in progress)",
                    o.kind,
                    o.name,
                    crate::model::diff::Change::show(c.old.as_ref()),
                    crate::model::diff::Change::show(c.new.as_ref())
                ),
                fix: format!(
                    "Derive {key} from what the release is (a checksum of its config, the image digest), not from the time or a random value."
                ),
            });
        }
    }
}

/// The objects of the input with a kind, `namespace` for those that name none.
fn objects<'a>(objects: &'a [Value], namespace: &'a str) -> Vec<Obj<'a>> {
    objects
        .iter()
        .enumerate()
        .filter_map(|(index, value)| {
            Some(Obj {
                index,
                kind: value.get("kind")?.as_str()?,
                namespace: str_at(value, &["metadata", "namespace"]).unwrap_or(namespace),
                name: str_at(value, &["metadata", "name"]).unwrap_or(""),
                value,
            })
        })
        .collect()
}

/// A label selector's string values, by key.
type Selector<'a> = BTreeMap<&'a str, &'a str>;

/// A router's backend: the router's index in the objects, and the path of the backend's name.
type Backend = (usize, Vec<String>);

/// The Services and routers of the input, looked up by each rollout (a render of thousands of
/// objects is read in one pass, not once per rollout).
struct Index<'a> {
    /// By (namespace, name): the object's index in `objs` and its selector.
    services: HashMap<(&'a str, &'a str), (usize, Selector<'a>)>,
    /// The Services selecting by one (namespace, key, value), by name.
    by_label: HashMap<(&'a str, &'a str, &'a str), Vec<&'a str>>,
    /// The routers sending to a (namespace, Service): the router's index in `objs` and the
    /// path of the backend's name.
    by_backend: HashMap<(&'a str, String), Vec<Backend>>,
}

impl<'a> Index<'a> {
    fn of(objs: &[Obj<'a>]) -> Self {
        let mut index = Index {
            services: HashMap::new(),
            by_label: HashMap::new(),
            by_backend: HashMap::new(),
        };
        for (i, o) in objs.iter().enumerate() {
            match o.kind {
                "Service" => {
                    let selector = labels(map_at(o.value, &["spec", "selector"]));
                    for (k, v) in &selector {
                        index
                            .by_label
                            .entry((o.namespace, k, v))
                            .or_default()
                            .push(o.name);
                    }
                    index.services.insert((o.namespace, o.name), (i, selector));
                }
                "Ingress" | "HTTPRoute" | "VirtualService" => {
                    for (backend, at) in backends(o) {
                        index
                            .by_backend
                            .entry((o.namespace, backend))
                            .or_default()
                            .push((i, at));
                    }
                }
                _ => {}
            }
        }
        index
    }
}

/// What any workload's pod template shows: images by tag, no rollback history, values made
/// at render time.
fn workload(o: &Obj<'_>, out: &mut Vec<LintFinding>) {
    let Some(template) = o.value.pointer("/spec/template") else {
        return;
    };
    for list in ["initContainers", "containers"] {
        let containers = template
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array);
        for (i, c) in containers.into_iter().flatten().enumerate() {
            let Some(image) = c.get("image").and_then(Value::as_str) else {
                continue;
            };
            if image.contains("@sha256:") {
                continue;
            }
            let name = c.get("name").and_then(Value::as_str).unwrap_or("");
            out.push(LintFinding {
                rule: Rule::ImageNotPinned,
                severity: Severity::Warning,
                object: o.index,
                path: path(&["spec", "template", "spec", list, &i.to_string(), "image"]),
                message: format!(
                    "{} {}: container {name} runs {image} by tag: the tag can move under a verified release, and two pods of one revision can run different builds",
                    o.kind, o.name
                ),
                fix: format!(
                    "Pin the image by digest ({image}@sha256:...), as the pipeline that built it knows it."
                ),
            });
        }
    }
    if matches!(o.kind, "Rollout" | "Deployment")
        && o.value
            .pointer("/spec/revisionHistoryLimit")
            .and_then(Value::as_i64)
            == Some(0)
    {
        out.push(LintFinding {
            rule: Rule::NoRollbackHistory,
            severity: Severity::Warning,
            object: o.index,
            path: path(&["spec", "revisionHistoryLimit"]),
            message: format!(
                "{} {} keeps no old ReplicaSet (revisionHistoryLimit: 0): there is nothing to roll back to, and the previous revision is gone before the new one is proven",
                o.kind, o.name
            ),
            fix: "Keep a few revisions (revisionHistoryLimit: 3 or more).".to_owned(),
        });
    }
    for part in ["annotations", "labels"] {
        for key in labels(map_at(template, &["metadata", part])).keys() {
            let Some(key) = per_render_key(&format!("annotations.{key}")) else {
                continue;
            };
            out.push(LintFinding {
                rule: Rule::HashOnlyChange,
                severity: Severity::Warning,
                object: o.index,
                path: path(&["spec", "template", "metadata", part, &key]),
                message: format!(
                    "{} {}: the pod template's {part} {key} looks made at render time (a random string, a time): every render makes a new pod-template hash, and a render of an unchanged release restarts it",
                    o.kind, o.name
                ),
                fix: format!(
                    "Take {key} out of the pod template, or derive it from what the release is (a checksum of its config, the image digest)."
                ),
            });
        }
    }
}

/// The `rollouts-pod-template-hash` a Service's selector pins in the manifests.
fn pinned_hash<'a>(service: &Obj<'a>) -> Option<&'a str> {
    service
        .value
        .pointer("/spec/selector")?
        .get(HASH_LABEL)?
        .as_str()
}

/// A Service whose selector in the manifests carries the controller's key.
fn hash_in_selector(o: &Obj<'_>, out: &mut Vec<LintFinding>) {
    let Some(hash) = pinned_hash(o) else {
        return;
    };
    out.push(LintFinding {
        rule: Rule::SelectorFight,
        severity: Severity::Warning,
        object: o.index,
        path: path(&["spec", "selector", HASH_LABEL]),
        message: format!(
            "Service {} selects {HASH_LABEL}: {hash} in the manifests: the Argo Rollouts controller owns that key and moves it at each promotion, so every sync of these manifests (a GitOps self-heal) points the Service back at {hash}",
            o.name
        ),
        fix: format!(
            "Leave {HASH_LABEL} out of the selector: the controller adds it to the Services a rollout names."
        ),
    });
}

/// A multi-source Application whose values come from a source at a moving revision (a branch,
/// `HEAD`) beside inline Helm parameters or values that pin the release: the pipeline's write
/// of the image and the values commit reach the cluster as two renders.
fn moving_values(o: &Obj<'_>, out: &mut Vec<LintFinding>) {
    let Some(sources) = o.value.pointer("/spec/sources").and_then(Value::as_array) else {
        return;
    };
    let inline = sources.iter().any(|s| {
        s.pointer("/helm/parameters")
            .and_then(Value::as_array)
            .is_some_and(|p| !p.is_empty())
            || s.pointer("/helm/values").is_some()
            || s.pointer("/helm/valuesObject").is_some()
    });
    if !inline {
        return;
    }
    for (i, s) in sources.iter().enumerate() {
        if s.get("ref").and_then(Value::as_str).is_none() {
            continue;
        }
        let revision = s
            .get("targetRevision")
            .and_then(Value::as_str)
            .unwrap_or("HEAD");
        if !moving(revision) {
            continue;
        }
        let repo = s.get("repoURL").and_then(Value::as_str).unwrap_or("");
        out.push(LintFinding {
            rule: Rule::DoubleRender,
            severity: Severity::Warning,
            object: o.index,
            path: path(&["spec", "sources", &i.to_string(), "targetRevision"]),
            message: format!(
                "Application {}: the values source {repo} follows {revision}, resolved at each refresh, while the release is pinned inline (Helm parameters or values): a pipeline that writes both reaches the cluster in two renders, and the second restarts a canary paused by the first",
                o.name
            ),
            fix: "Pin the values source to the commit the release was tested with (targetRevision: <sha>), written in the same change as the image, so one sync renders both.".to_owned(),
        });
    }
}

/// A `targetRevision` that moves: a branch or `HEAD`, not a commit SHA nor a version tag.
fn moving(revision: &str) -> bool {
    let sha = revision.len() >= 7 && revision.bytes().all(|b| b.is_ascii_hexdigit());
    let version = revision
        .trim_start_matches('v')
        .split('.')
        .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    !(sha || version)
}

/// The Services a strategy names, by the field that names them.
fn names<'a>(strategy: &'a Value, fields: [&'static str; 2]) -> Vec<(&'a str, &'static str)> {
    fields
        .into_iter()
        .filter_map(|f| Some((strategy.get(f)?.as_str()?, f)))
        .collect()
}

/// The Services a rollout names, and the routers in front of them.
fn rollout_services(r: &Obj<'_>, objs: &[Obj<'_>], index: &Index<'_>, out: &mut Vec<LintFinding>) {
    let strategy = r.value.pointer("/spec/strategy");
    let canary = strategy.and_then(|s| s.get("canary"));
    let blue_green = strategy.and_then(|s| s.get("blueGreen"));
    let (front, named) = match (canary, blue_green) {
        (Some(c), _) => (
            c.get("stableService").and_then(Value::as_str),
            names(c, ["stableService", "canaryService"]),
        ),
        (None, Some(b)) => (
            b.get("activeService").and_then(Value::as_str),
            names(b, ["activeService", "previewService"]),
        ),
        _ => (None, Vec::new()),
    };
    let Some(template) = r.value.pointer("/spec/template") else {
        return;
    };
    let pods = labels(map_at(template, &["metadata", "labels"]));
    // The labels the controller puts on each role's pods after hashing.
    let ephemeral: Vec<BTreeMap<&str, &str>> = [
        "canaryMetadata",
        "stableMetadata",
        "activeMetadata",
        "previewMetadata",
    ]
    .iter()
    .filter_map(|m| {
        Some(labels(
            canary.or(blue_green)?.get(*m)?.get("labels")?.as_object(),
        ))
    })
    .collect();
    // The Services that route to the rollout: named by it, or selecting its pods by one label
    // at least; in the input's order.
    let mut candidates: BTreeMap<usize, &Selector<'_>> = BTreeMap::new();
    for name in named.iter().map(|(n, _)| *n).chain(
        pods.iter()
            .filter(|(k, _)| **k != HASH_LABEL)
            .filter_map(|(k, v)| index.by_label.get(&(r.namespace, *k, *v)))
            .flatten()
            .copied(),
    ) {
        if let Some((i, selector)) = index.services.get(&(r.namespace, name)) {
            candidates.insert(*i, selector);
        }
    }
    let mut routes: Vec<(&str, String)> = Vec::new();
    for (i, selector) in candidates {
        let s = &objs[i];
        let role = named
            .iter()
            .find(|(n, _)| *n == s.name)
            .map(|(_, role)| *role);
        let words = match role {
            Some(role) => format!("the {role} of Rollout {}", r.name),
            None => format!("a Service of Rollout {}'s pods", r.name),
        };
        routes.push((s.name, words.clone()));
        let wrong: Vec<(&str, &str, Option<&str>)> = selector
            .iter()
            .filter(|(k, _)| **k != HASH_LABEL)
            .filter(|(k, v)| !ephemeral.iter().any(|e| e.get(*k) == Some(*v)))
            .filter(|(k, v)| pods.get(*k) != Some(*v))
            .map(|(k, v)| (*k, *v, pods.get(k).copied()))
            .collect();
        let Some((key, _, _)) = wrong.first() else {
            continue;
        };
        let said: Vec<String> = wrong
            .iter()
            .map(|(k, v, pod)| match pod {
                Some(p) => format!("{k}: {v} where the pods have {k}: {p}"),
                None => format!("{k}: {v}, a label the pods do not have"),
            })
            .collect();
        out.push(LintFinding {
            rule: Rule::ServiceSelectorMismatch,
            severity: Severity::Error,
            object: s.index,
            path: path(&["spec", "selector", key]),
            message: format!(
                "Service {} ({words}) will not select the pods this render makes: it selects {}",
                s.name,
                said.join("; ")
            ),
            fix: "Select on labels the pods keep across releases (the app's), not a release label pinned in a values file; or render both from the same value.".to_owned(),
        });
    }
    // The front doors: a router that sends customers to a Service of the rollout other than
    // the one promotion moves.
    let Some(front) = front else {
        return;
    };
    // Routers the rollout names in its trafficRouting are its own to set.
    let routing = canary.and_then(|c| c.get("trafficRouting"));
    let managed = |kind: &str, name: &str| -> bool {
        let Some(t) = routing else { return false };
        match kind {
            "Ingress" => {
                t.pointer("/nginx/stableIngress").and_then(Value::as_str) == Some(name)
                    || t.pointer("/nginx/stableIngresses")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|i| i.as_str() == Some(name)))
                    || t.pointer("/alb/ingress").and_then(Value::as_str) == Some(name)
            }
            "VirtualService" => {
                t.pointer("/istio/virtualService/name")
                    .and_then(Value::as_str)
                    == Some(name)
                    || t.pointer("/istio/virtualServices")
                        .and_then(Value::as_array)
                        .is_some_and(|a| {
                            a.iter()
                                .any(|v| v.get("name").and_then(Value::as_str) == Some(name))
                        })
            }
            "HTTPRoute" => t
                .pointer("/plugins")
                .is_some_and(|p| p.to_string().contains(&format!("\"{name}\""))),
            _ => false,
        }
    };
    let mut doors: Vec<(usize, &Vec<String>, &str, &String)> = Vec::new();
    for (backend, words) in &routes {
        if *backend == front {
            continue;
        }
        for (i, at) in index
            .by_backend
            .get(&(r.namespace, (*backend).to_owned()))
            .into_iter()
            .flatten()
        {
            let o = &objs[*i];
            if !managed(o.kind, o.name) {
                doors.push((*i, at, backend, words));
            }
        }
    }
    doors.sort_by_key(|d| d.0);
    // An analysis of the canary measures pods the front door does not send customers to.
    if let (Some((i, _, backend, _)), Some(at)) = (doors.first(), canary_analysis(r.value)) {
        let o = &objs[*i];
        out.push(LintFinding {
            rule: Rule::AnalysisWithoutTraffic,
            severity: Severity::Error,
            object: r.index,
            path: at,
            message: format!(
                "Rollout {} analyzes its canary, but {} {} sends customers to Service {backend}, which promotion does not move: no customer request reaches the canary, and its analysis can pass on pods no one used",
                r.name, o.kind, o.name
            ),
            fix: format!(
                "Route the front door through {front} (or the rollout's traffic router), or measure what the front door's customers reach."
            ),
        });
    }
    for (i, at, backend, words) in doors {
        let o = &objs[i];
        out.push(LintFinding {
            rule: Rule::FrontDoorBypass,
            severity: Severity::Error,
            object: o.index,
            path: at.clone(),
            message: format!(
                "{} {} sends customers to Service {backend} ({words}), not to the Service the rollout moves, {front}: promotion will not move this traffic",
                o.kind, o.name
            ),
            fix: format!(
                "Route the front door to {front}, or name {backend} in the rollout's strategy."
            ),
        });
    }
}

/// The Services a router sends requests to, with the path of each backend's name.
fn backends(o: &Obj<'_>) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let arr = |v: Option<&Value>| v.and_then(Value::as_array).cloned().unwrap_or_default();
    match o.kind {
        "Ingress" => {
            if let Some(n) = o
                .value
                .pointer("/spec/defaultBackend/service/name")
                .and_then(Value::as_str)
            {
                out.push((
                    n.to_owned(),
                    path(&["spec", "defaultBackend", "service", "name"]),
                ));
            }
            for (i, rule) in arr(o.value.pointer("/spec/rules")).iter().enumerate() {
                for (j, p) in arr(rule.pointer("/http/paths")).iter().enumerate() {
                    if let Some(n) = p.pointer("/backend/service/name").and_then(Value::as_str) {
                        out.push((
                            n.to_owned(),
                            path(&[
                                "spec",
                                "rules",
                                &i.to_string(),
                                "http",
                                "paths",
                                &j.to_string(),
                                "backend",
                                "service",
                                "name",
                            ]),
                        ));
                    }
                }
            }
        }
        "HTTPRoute" => {
            for (i, rule) in arr(o.value.pointer("/spec/rules")).iter().enumerate() {
                for (j, b) in arr(rule.get("backendRefs")).iter().enumerate() {
                    let service = b
                        .get("kind")
                        .and_then(Value::as_str)
                        .is_none_or(|k| k == "Service");
                    let weight = b.get("weight").and_then(Value::as_i64);
                    if let (true, Some(n), false) = (
                        service,
                        b.get("name").and_then(Value::as_str),
                        weight == Some(0),
                    ) {
                        out.push((
                            n.to_owned(),
                            path(&[
                                "spec",
                                "rules",
                                &i.to_string(),
                                "backendRefs",
                                &j.to_string(),
                                "name",
                            ]),
                        ));
                    }
                }
            }
        }
        "VirtualService" => {
            for (i, h) in arr(o.value.pointer("/spec/http")).iter().enumerate() {
                for (j, r) in arr(h.get("route")).iter().enumerate() {
                    if r.get("weight").and_then(Value::as_i64) == Some(0) {
                        continue;
                    }
                    if let Some(host) = r.pointer("/destination/host").and_then(Value::as_str) {
                        // A short name, or `name.namespace.svc...`.
                        let name = host.split('.').next().unwrap_or(host);
                        out.push((
                            name.to_owned(),
                            path(&[
                                "spec",
                                "http",
                                &i.to_string(),
                                "route",
                                &j.to_string(),
                                "destination",
                                "host",
                            ]),
                        ));
                    }
                }
            }
        }
        _ => {}
    }
    out
}

pub mod gate;
pub mod manifests;

#[cfg(test)]
mod tests;
