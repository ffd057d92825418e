//! Routing and the read verbs: discovery, GET and LIST. WATCH is in `watch.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::ACCEPT;
use hyper::{Method, Request, StatusCode};
use serde_json::{Value, json};

use crate::http::{self, Resp};
use rf_format::Kind;

use crate::options::Pace;
use crate::resource::Resource;
use crate::selector::{FieldSelector, LabelSelector};
use crate::server::Shared;
use crate::table::{self, IncludeObject};
use crate::timeline::{KindTimeline, ObjectKey, Version};
use crate::watch;

/// The Kubernetes version the server claims (kubectl warns beyond one minor of skew).
const MAJOR: &str = "1";
const MINOR: &str = "32";

/// Query parameters of a read.
#[derive(Clone, Debug, Default)]
pub struct Params {
    pub watch: bool,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub limit: usize,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub rv_match: Option<String>,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    pub include: IncludeObject,
    pub initial_events: bool,
    pub table: bool,
}

fn parse_bool(name: &str, v: &str) -> Result<bool, String> {
    match v {
        "" | "true" | "1" | "True" => Ok(true),
        "false" | "0" | "False" => Ok(false),
        _ => Err(format!("invalid {name} {v:?}: expected true or false")),
    }
}

impl Params {
    fn parse(query: &[(String, String)]) -> Result<Params, String> {
        let mut p = Params::default();
        for (k, v) in query {
            match k.as_str() {
                "watch" => p.watch = parse_bool(k, v)?,
                "labelSelector" => {
                    p.labels = LabelSelector::parse(v)
                        .map_err(|e| format!("invalid labelSelector {v:?}: {e}"))?;
                }
                "fieldSelector" => {
                    p.fields = FieldSelector::parse(v)
                        .map_err(|e| format!("invalid fieldSelector {v:?}: {e}"))?;
                }
                "limit" => {
                    p.limit = v
                        .parse::<i64>()
                        .ok()
                        .filter(|n| *n >= 0)
                        .map(|n| usize::try_from(n).unwrap_or(usize::MAX))
                        .ok_or_else(|| {
                            format!("invalid limit {v:?}: expected a non-negative integer")
                        })?;
                }
                "continue" if !v.is_empty() => p.continue_token = Some(v.clone()),
                "resourceVersion" if !v.is_empty() => p.resource_version = Some(v.clone()),
                "resourceVersionMatch" => match v.as_str() {
                    "" => {}
                    "NotOlderThan" | "Exact" => p.rv_match = Some(v.clone()),
                    _ => {
                        return Err(format!(
                            "invalid resourceVersionMatch {v:?}: expected NotOlderThan or Exact"
                        ));
                    }
                },
                "timeoutSeconds" => {
                    let secs = v.parse::<u64>().map_err(|_| {
                        format!("invalid timeoutSeconds {v:?}: expected a non-negative integer")
                    })?;
                    if secs > 0 {
                        p.timeout = Some(Duration::from_secs(secs));
                    }
                }
                "allowWatchBookmarks" => p.bookmarks = parse_bool(k, v)?,
                "sendInitialEvents" => p.initial_events = parse_bool(k, v)?,
                "includeObject" => {
                    p.include = match v.as_str() {
                        "None" => IncludeObject::None,
                        "" | "Metadata" => IncludeObject::Metadata,
                        "Object" => IncludeObject::Object,
                        _ => {
                            return Err(format!(
                                "invalid includeObject {v:?}: expected None, Metadata or Object"
                            ));
                        }
                    };
                }
                _ => {}
            }
        }
        if p.rv_match.is_some() && p.resource_version.is_none() && !p.initial_events {
            return Err("resourceVersionMatch is forbidden unless resourceVersion is set".into());
        }
        Ok(p)
    }

    /// The resourceVersion asked for, when it names a state ("0" and absent do not).
    pub fn rv(&self) -> Result<Option<u64>, String> {
        match self.resource_version.as_deref() {
            None | Some("0") => Ok(None),
            Some(s) => s.parse::<u64>().map(Some).map_err(|_| {
                format!("invalid resourceVersion {s:?}: this server's resourceVersions are decimal integers")
            }),
        }
    }

    /// True when whether an object matches depends on more than its namespace: then a watch
    /// needs an object's version before to tell a change from an entry or an exit.
    pub fn selects(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }

    /// True when an object matches the namespace and selectors.
    pub fn matches(&self, namespace: Option<&str>, v: &Version) -> bool {
        namespace.is_none_or(|ns| &*v.meta.namespace == ns)
            && self.labels.matches(&v.meta.labels)
            && self.fields.matches(&v.meta)
    }
}

/// Answers one request; one that fails inside the server (a version its scratch file no longer
/// reads) is answered 500 with what failed, not with a dropped connection.
pub fn answer(shared: &Arc<Shared>, req: &Request<Incoming>) -> Resp {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| route(shared, req))) {
        Ok(resp) => resp,
        Err(payload) => http::internal_error(&*payload),
    }
}

/// Answers one request.
fn route(shared: &Arc<Shared>, req: &Request<Incoming>) -> Resp {
    let path = req.uri().path();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return method_not_allowed(shared, req.method(), &segs);
    }
    let query = match http::parse_query(req.uri().query()) {
        Ok(q) => q,
        Err(e) => return http::bad_request(&format!("invalid query string: {e}")),
    };
    let mut params = match Params::parse(&query) {
        Ok(p) => p,
        Err(e) => return http::bad_request(&e),
    };
    params.table = req
        .headers()
        .get_all(ACCEPT)
        .iter()
        .any(|v| v.to_str().is_ok_and(|s| s.contains("as=Table")));
    match segs.as_slice() {
        ["version"] => http::json_value(&version()),
        ["healthz" | "livez" | "readyz"] => http::text(StatusCode::OK, "ok"),
        ["api"] => http::json_value(&api_versions(shared)),
        ["apis"] => http::json_value(&group_list(shared)),
        ["apis", g] => match group(shared, g) {
            Some(v) => http::json_value(&v),
            None => http::not_found_path(),
        },
        ["openapi", "v3"] => http::json_value(&json!({"paths": {}})),
        ["api", "v1", "namespaces"] => namespaces(shared, None, &params),
        ["api", "v1", "namespaces", ns] => namespaces(shared, Some(ns), &params),
        ["api", v] => resource_list(shared, "", v),
        ["apis", g, v] => resource_list(shared, g, v),
        ["api", v, rest @ ..] => resource_path(shared, "", v, rest, &params),
        ["apis", g, v, rest @ ..] => resource_path(shared, g, v, rest, &params),
        _ => http::not_found_path(),
    }
}

fn method_not_allowed(shared: &Shared, method: &Method, segs: &[&str]) -> Resp {
    let target = match segs {
        ["api", v, rest @ ..] => target(shared, "", v, rest),
        ["apis", g, v, rest @ ..] => target(shared, g, v, rest),
        _ => None,
    };
    let (what, details) = match target {
        Some((k, name)) => {
            let r = k.resource();
            let what = format!("{} {}", method.as_str().to_lowercase(), r.qualified());
            let mut d = json!({"group": r.group, "kind": r.plural});
            if let (Some(n), Some(m)) = (name, d.as_object_mut()) {
                m.insert("name".into(), json!(n));
            }
            (what, Some(d))
        }
        None => (method.as_str().to_lowercase(), Some(json!({}))),
    };
    http::status(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        &format!(
            "the server does not allow this method on the requested resource ({what}): rollout-forensics serves a recording read-only"
        ),
        details,
    )
}

/// The served kind and object name a path names, if any.
fn target<'a>(
    shared: &'a Shared,
    group: &str,
    version: &str,
    rest: &[&'a str],
) -> Option<(&'a KindTimeline, Option<&'a str>)> {
    let (plural, name) = match rest {
        [plural] => (*plural, None),
        [plural, name] => (*plural, Some(*name)),
        ["namespaces", _, plural] => (*plural, None),
        ["namespaces", _, plural, name, ..] => (*plural, Some(*name)),
        _ => return None,
    };
    let k = shared.timeline.kind(group, plural)?;
    (k.resource().version == version).then_some((k, name))
}

fn version() -> Value {
    json!({
        "major": MAJOR,
        "minor": MINOR,
        "gitVersion": format!("v{MAJOR}.{MINOR}.0"),
        "gitCommit": "rollout-forensics",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": concat!("rollout-forensics ", env!("CARGO_PKG_VERSION")),
        "compiler": "rollout-forensics",
        "platform": "linux/amd64",
    })
}

fn api_versions(shared: &Shared) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": shared.addr.to_string()}
        ],
    })
}

/// Every non-core group and its versions, in kind order.
fn groups(shared: &Shared) -> BTreeMap<&str, Vec<&str>> {
    let mut out: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for k in shared.timeline.kinds() {
        let r = k.resource();
        if r.group.is_empty() {
            continue;
        }
        let versions = out.entry(&r.group).or_default();
        if !versions.contains(&r.version.as_str()) {
            versions.push(&r.version);
        }
    }
    out
}

fn group_value(name: &str, versions: &[&str]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({
        "name": name,
        "versions": vs,
        "preferredVersion": vs.first().cloned().unwrap_or(Value::Null),
    })
}

fn group_list(shared: &Shared) -> Value {
    let groups: Vec<Value> = groups(shared)
        .iter()
        .map(|(name, versions)| group_value(name, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

fn group(shared: &Shared, name: &str) -> Option<Value> {
    let groups = groups(shared);
    let versions = groups.get(name)?;
    let mut v = group_value(name, versions);
    if let Some(m) = v.as_object_mut() {
        m.insert("kind".into(), json!("APIGroup"));
        m.insert("apiVersion".into(), json!("v1"));
    }
    Some(v)
}

/// Kinds that `kubectl argo rollouts get` (and the controllers' clients it is built from)
/// list and watch before they show anything, and that a recording does not hold: without an
/// answer for them the plugin waits forever. Each is served as an empty list, and every
/// answer for it carries a `Warning` header, which kubectl and client-go print, saying that
/// it was not recorded: the list is empty because nothing was kept, not because there were none.
const STAND_INS: [(&str, &str, &str); 3] = [
    ("argoproj.io", "v1alpha1", "AnalysisRun"),
    ("argoproj.io", "v1alpha1", "Experiment"),
    ("apps", "v1", "Deployment"),
];

/// The stand-in of `group/version/plural`, when it is one and the recording has no kind of
/// that name, in a group it serves.
fn stand_in(shared: &Shared, group: &str, version: &str, plural: &str) -> Option<Resource> {
    let served = shared.timeline.kinds().iter().any(|k| {
        let r = k.resource();
        r.group == group && r.version == version
    });
    STAND_INS
        .iter()
        .filter(|(g, v, _)| served && *g == group && *v == version)
        .map(|(g, v, kind)| {
            Resource::for_kind(&Kind::Other {
                group: (*g).to_owned(),
                version: (*v).to_owned(),
                kind: (*kind).to_owned(),
            })
        })
        .find(|r| {
            r.plural == plural
                && !shared
                    .timeline
                    .kinds()
                    .iter()
                    .any(|k| k.resource().plural == r.plural && k.resource().group == r.group)
        })
}

/// Stand-ins of `group/version` for its discovery document.
fn stand_ins<'a>(
    shared: &'a Shared,
    group: &'a str,
    version: &'a str,
) -> impl Iterator<Item = Resource> + 'a {
    STAND_INS.iter().filter_map(move |(g, v, kind)| {
        let plural = Resource::for_kind(&Kind::Other {
            group: (*g).to_owned(),
            version: (*v).to_owned(),
            kind: (*kind).to_owned(),
        })
        .plural;
        stand_in(shared, group, version, &plural)
    })
}

/// The answer for a kind that was not recorded: an empty list, an empty watch, or NotFound,
/// with a `Warning` header that says so.
fn unrecorded(shared: &Arc<Shared>, r: &Resource, name: Option<&str>, p: &Params) -> Resp {
    let mut resp = match (name, p.watch) {
        (_, true) => watch::fixed(shared, r, Vec::new(), p),
        (Some(name), false) => http::status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!(
                "{} \"{name}\" not found: {} were not recorded",
                r.qualified(),
                r.plural
            ),
            Some(json!({"name": name, "group": r.group, "kind": r.plural})),
        ),
        (None, false) => {
            let meta = json!({"resourceVersion": "1"});
            if p.table {
                let now = shared.clock.now(&shared.timeline);
                http::json_bytes(StatusCode::OK, table::table(r, [], &meta, p.include, now))
            } else {
                http::json_value(&json!({
                    "kind": format!("{}List", r.kind_name()),
                    "apiVersion": r.api_version(),
                    "metadata": meta,
                    "items": [],
                }))
            }
        }
    };
    let warning = format!(
        "299 - \"{} were not recorded: this recording says nothing of them\"",
        r.qualified()
    );
    if let Ok(v) = hyper::header::HeaderValue::from_str(&warning) {
        resp.headers_mut().insert("warning", v);
    }
    resp
}

fn resource_list(shared: &Shared, group: &str, version: &str) -> Resp {
    let resources: Vec<Value> = shared
        .timeline
        .kinds()
        .iter()
        .map(KindTimeline::resource)
        .filter(|r| r.group == group && r.version == version)
        .map(|r| {
            let mut v = json!({
                "name": r.plural,
                "singularName": r.singular,
                "namespaced": rf_format::api::well_known(&r.kind).is_none_or(|n| n.namespaced),
                "kind": r.kind_name(),
                "verbs": ["get", "list", "watch"],
            });
            if let Some(m) = v.as_object_mut() {
                if !r.short_names.is_empty() {
                    m.insert("shortNames".into(), json!(r.short_names));
                }
                if matches!(r.plural.as_str(), "pods" | "services" | "replicasets") {
                    m.insert("categories".into(), json!(["all"]));
                }
            }
            v
        })
        .collect();
    let mut resources = resources;
    for r in stand_ins(shared, group, version) {
        resources.push(json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": true,
            "kind": r.kind_name(),
            "verbs": ["get", "list", "watch"],
        }));
    }
    if group.is_empty() && version == "v1" {
        resources.push(json!({
            "name": "namespaces",
            "singularName": "namespace",
            "namespaced": false,
            "kind": "Namespace",
            "verbs": ["get", "list", "watch"],
            "shortNames": ["ns"],
        }));
    }
    let known = !resources.is_empty();
    if !known {
        return http::not_found_path();
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    http::json_value(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

fn resource_path(
    shared: &Arc<Shared>,
    group: &str,
    version: &str,
    rest: &[&str],
    p: &Params,
) -> Resp {
    let (plural, namespace, name) = match rest {
        [plural] => (*plural, None, None),
        ["namespaces", ns, plural] => (*plural, Some(*ns), None),
        ["namespaces", ns, plural, name] => (*plural, Some(*ns), Some(*name)),
        _ => return http::not_found_path(),
    };
    let Some(kind_index) = shared.timeline.kinds().iter().position(|k| {
        let r = k.resource();
        r.group == group && r.version == version && r.plural == plural
    }) else {
        return match stand_in(shared, group, version, plural) {
            Some(r) => unrecorded(shared, &r, name, p),
            None => http::not_found_path(),
        };
    };
    match (name, p.watch) {
        (Some(name), false) => get(shared, kind_index, namespace.unwrap_or_default(), name, p),
        (None, false) => list(shared, kind_index, namespace, p),
        (Some(name), true) => {
            // Watching one object is watching its collection by name.
            let mut fields = p.fields.clone();
            fields.push_name(name);
            let p = Params {
                fields,
                ..p.clone()
            };
            watch::start(shared, kind_index, namespace, &p)
        }
        (None, true) => watch::start(shared, kind_index, namespace, p),
    }
}

fn not_found(k: &KindTimeline, name: &str) -> Resp {
    let r = k.resource();
    http::status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("{} \"{name}\" not found", r.qualified()),
        Some(json!({"name": name, "group": r.group, "kind": r.plural})),
    )
}

fn get(shared: &Shared, kind_index: usize, namespace: &str, name: &str, p: &Params) -> Resp {
    let tl = &shared.timeline;
    let k = &tl.kinds()[kind_index];
    let scope = (kind_index, Some(namespace.to_owned()));
    let position = shared.clock.position(tl, &scope);
    match k.get(position, namespace, name) {
        Some(v) if p.table => {
            let meta = json!({"resourceVersion": v.meta.resource_version});
            http::json_bytes(
                StatusCode::OK,
                table::table(k.resource(), [&*v], &meta, p.include, shared.clock.now(tl)),
            )
        }
        Some(v) => http::json_bytes(StatusCode::OK, v.json.bytes().into_owned()),
        None => not_found(k, name),
    }
}

/// A continue token: the list's position and resourceVersion, and the last key sent.
struct Continue {
    plural: String,
    position: usize,
    rv: u64,
    after: ObjectKey,
}

impl Continue {
    fn encode(&self) -> String {
        http::to_hex(&format!(
            "{}\n{}\n{}\n{}\n{}",
            self.plural, self.position, self.rv, self.after.namespace, self.after.name
        ))
    }

    fn decode(s: &str) -> Option<Continue> {
        let text = http::from_hex(s)?;
        let mut it = text.split('\n');
        let c = Continue {
            plural: it.next()?.to_owned(),
            position: it.next()?.parse().ok()?,
            rv: it.next()?.parse().ok()?,
            after: ObjectKey {
                namespace: it.next()?.to_owned(),
                name: it.next()?.to_owned(),
            },
        };
        it.next().is_none().then_some(c)
    }
}

fn gone(message: &str) -> Resp {
    http::status(StatusCode::GONE, "Expired", message, None)
}

fn too_large(requested: u64, current: u64) -> Resp {
    http::status(
        StatusCode::GATEWAY_TIMEOUT,
        "Timeout",
        &format!("Too large resource version: {requested}, current: {current}"),
        Some(
            json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}),
        ),
    )
}

fn list(shared: &Shared, kind_index: usize, namespace: Option<&str>, p: &Params) -> Resp {
    let tl = &shared.timeline;
    let k = &tl.kinds()[kind_index];
    let r = k.resource();
    let scope = (kind_index, namespace.map(str::to_owned));
    let current = shared.clock.position(tl, &scope);
    let released = shared.clock.released(tl).max(current);
    let requested = match p.rv() {
        Ok(rv) => rv,
        Err(e) => return http::bad_request(&e),
    };
    let (position, rv, after) = if let Some(token) = &p.continue_token {
        let Some(c) = Continue::decode(token).filter(|c| c.plural == r.plural) else {
            return http::bad_request(&format!(
                "invalid continue {token:?}: not a continue token of {}",
                r.qualified()
            ));
        };
        if c.position < tl.base_position() || c.rv < k.base_rv() {
            return gone(
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
            );
        }
        (c.position, c.rv, Some(c.after))
    } else {
        // The newest state a version may name: the cursor's, or under Max the recording's end.
        let newest = if shared.options.pace == Pace::Max {
            tl.len()
        } else {
            released.min(tl.len())
        };
        match (requested, p.rv_match.as_deref()) {
            (None, _) => (current, k.list_rv(current), None),
            (Some(rv), _) if rv > k.list_rv(newest) => {
                return too_large(rv, k.list_rv(current));
            }
            (Some(rv), Some("Exact")) => match k.position_for_rv(rv) {
                Err(old) => {
                    return gone(&format!(
                        "too old resource version: {} ({})",
                        old.requested, old.oldest
                    ));
                }
                Ok(pos) => (pos.min(newest), rv, None),
            },
            (Some(rv), _) if k.list_rv(current) >= rv => (current, k.list_rv(current), None),
            (Some(rv), _) => {
                let pos = k.position_for_rv(rv).unwrap_or(current).min(newest);
                (pos, k.list_rv(pos).max(rv), None)
            }
        }
    };

    let mut items = k
        .list(position, after.as_ref())
        .filter(|(_, v)| p.matches(namespace, v));
    let mut page: Vec<(ObjectKey, Arc<Version>)> = Vec::new();
    let limit = if p.limit == 0 { usize::MAX } else { p.limit };
    for item in items.by_ref() {
        if page.len() == limit {
            page.push(item);
            break;
        }
        page.push(item);
    }
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if page.len() > limit {
        page.pop();
        let remaining = 1 + items.count();
        if let (Some((last, _)), Some(m)) = (page.last(), meta.as_object_mut()) {
            let token = Continue {
                plural: r.plural.clone(),
                position,
                rv,
                after: last.clone(),
            };
            m.insert("continue".into(), json!(token.encode()));
            m.insert("remainingItemCount".into(), json!(remaining));
        }
    }

    if p.table {
        return http::json_bytes(
            StatusCode::OK,
            table::table(
                r,
                page.iter().map(|(_, v)| &**v),
                &meta,
                p.include,
                shared.clock.now(tl),
            ),
        );
    }
    let mut out = Vec::with_capacity(
        64 + page
            .iter()
            .map(|(_, v)| v.json.len_hint() + 1)
            .sum::<usize>(),
    );
    out.extend_from_slice(b"{\"kind\":");
    out.extend_from_slice(crate::json::json_string(&format!("{}List", r.kind_name())).as_bytes());
    out.extend_from_slice(b",\"apiVersion\":");
    out.extend_from_slice(crate::json::json_string(&r.api_version()).as_bytes());
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(&crate::json::to_vec(&meta));
    out.extend_from_slice(b",\"items\":[");
    for (i, (_, v)) in page.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&v.json.bytes());
    }
    out.extend_from_slice(b"]}");
    http::json_bytes(StatusCode::OK, out)
}

/// The recording's namespaces, served as `Namespace` objects that exist throughout (without a
/// creation time: the recording does not know it), so kubectl can check that a namespace exists.
fn namespaces(shared: &Arc<Shared>, name: Option<&str>, p: &Params) -> Resp {
    let r = Resource::for_kind(&Kind::Other {
        group: String::new(),
        version: "v1".into(),
        kind: "Namespace".into(),
    });
    let all: Vec<Version> = shared
        .timeline
        .namespaces()
        .iter()
        .map(|ns| {
            let bytes = crate::json::to_vec(&json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {
                    "name": ns,
                    "resourceVersion": "1",
                    "labels": {"kubernetes.io/metadata.name": ns},
                },
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            }));
            Version {
                meta: crate::json::meta(&bytes).unwrap_or_default(),
                json: crate::Json::whole(&bytes),
                index: 0,
            }
        })
        .collect();
    let now = shared.clock.now(&shared.timeline);
    let meta = json!({"resourceVersion": "1"});
    match name {
        Some(name) => match all.iter().find(|v| &*v.meta.name == name) {
            Some(v) if p.table => {
                http::json_bytes(StatusCode::OK, table::table(&r, [v], &meta, p.include, now))
            }
            Some(v) => http::json_bytes(StatusCode::OK, v.json.bytes().into_owned()),
            None => http::status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("namespaces \"{name}\" not found"),
                Some(json!({"name": name, "kind": "namespaces"})),
            ),
        },
        None => {
            let items: Vec<&Version> = all.iter().filter(|v| p.matches(None, v)).collect();
            if p.watch {
                let initial = if p.rv().ok().flatten().is_some() && !p.initial_events {
                    Vec::new()
                } else {
                    items
                };
                return watch::fixed(shared, &r, initial, p);
            }
            if p.table {
                return http::json_bytes(
                    StatusCode::OK,
                    table::table(&r, items, &meta, p.include, now),
                );
            }
            let mut out = b"{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"},\"items\":[".to_vec();
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(&v.json.bytes());
            }
            out.extend_from_slice(b"]}");
            http::json_bytes(StatusCode::OK, out)
        }
    }
}
