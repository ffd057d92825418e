//! `rollout-forensics check [rollout/|deployment/]NAME -n NS [--expect-version LABEL=VALUE]
//! [--expect-image REF@sha256:DIGEST] [--probe URL ...] [-o json] [--save FILE]`: one-shot
//! adoption verification. Lists the rollout (or Deployment), its ReplicaSets and Pods, the
//! namespace's Services, EndpointSlices and routers and the Argo CD Applications, runs every
//! detector on that snapshot, and says whether the current revision is what the Services route
//! to, runs the expected build, and answers at the front door.

mod deployment;
mod image;
mod probe;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use kube::core::Request;
use kube::core::params::ListParams;
use rf_analyzer::{Analyzer, FileEnd, Finding, Options, Severity, TrafficEntry, string_values};
use rf_format::{Header, Kind, Op, Record, Source, Timestamp, Writer};
use serde::Serialize;
use serde_json::Value;

use crate::cluster::client_for;
use crate::exit::Exit;
use crate::timespec::parse_duration;

const HASH_LABEL: &str = "rollouts-pod-template-hash";

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The Rollout to check (`NAME` or `rollout/NAME`), or a Deployment (`deployment/NAME`).
    #[arg(value_name = "ROLLOUT")]
    pub rollout: String,
    /// Its namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// The pod label that names the release, and the value the promoted revision must carry
    /// (e.g. `version=v418`): the current revision must have it, and every Service that routes
    /// to the rollout must have a ready endpoint of a pod with it.
    #[arg(long, value_name = "LABEL=VALUE")]
    pub expect_version: Option<String>,
    /// The build the current revision must run (`REF@sha256:DIGEST`, a tag before the digest
    /// allowed): every ready pod of it runs that digest in its container of that repository,
    /// by the `imageID` the kubelet reports, whatever the tag now points to.
    #[arg(long, value_name = "REF@sha256:DIGEST")]
    pub expect_image: Option<String>,
    /// Send one GET to this URL, the front door customers use: adoption fails on no answer, a
    /// status that is not 2xx, or an answer without `--expect-header` / `--expect-body`.
    #[arg(long, value_name = "URL")]
    pub probe: Option<String>,
    /// A header the probe's answer must carry with this value (e.g. `x-version=v418`), the
    /// value only the new revision returns. Repeatable.
    #[arg(long, value_name = "NAME=VALUE", requires = "probe")]
    pub expect_header: Vec<String>,
    /// Text the probe's answer body must contain (its first MiB is read).
    #[arg(long, value_name = "TEXT", requires = "probe")]
    pub expect_body: Option<String>,
    /// Connect the probe to ADDR for HOST:PORT instead of resolving HOST, as curl's --resolve
    /// (the Host header and TLS name stay HOST). Repeatable.
    #[arg(long, value_name = "HOST:PORT:ADDR", requires = "probe")]
    pub resolve: Vec<String>,
    /// How long the probe waits for its whole answer.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub probe_timeout: String,
    /// Write the snapshot as a recording: the artifact that proves adoption.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Namespace of the Argo CD Applications, listed beside the workload's own (skipped when
    /// not served or not allowed).
    #[arg(long, default_value = "argocd", value_name = "NS")]
    pub app_namespace: String,
    /// While adoption fails, take a new snapshot every 5 s for up to this long (endpoints follow
    /// readiness within seconds; a PostSync hook may run just before).
    #[arg(long, default_value = "0s", value_name = "DURATION")]
    pub retry_for: String,
    /// Output format of the verdict: for a person, or JSON (`adopted`, the `state` taken, the
    /// `failures`, `findings` and `notes`).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = crate::args::Format::Table)]
    pub format: crate::args::Format,
    /// Path to the kubeconfig.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// A label the promoted revision must carry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Expect {
    label: String,
    value: String,
}

fn parse_expect(s: &str) -> Result<Expect> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() && !v.is_empty() => Ok(Expect {
            label: k.trim().to_owned(),
            value: v.to_owned(),
        }),
        _ => bail!("invalid --expect-version {s:?}: expected LABEL=VALUE, e.g. version=v418"),
    }
}

/// What is checked: a Rollout, or a plain Deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    Rollout,
    Deployment,
}

/// `NAME`, `rollout/NAME` or `deployment/NAME` (and kubectl's short and plural forms).
fn parse_target(s: &str) -> Result<(Workload, String)> {
    let (workload, name) = match s.split_once('/') {
        None => (Workload::Rollout, s),
        Some(("rollout" | "rollouts" | "ro", n)) => (Workload::Rollout, n),
        Some(("deployment" | "deployments" | "deploy", n)) => (Workload::Deployment, n),
        Some((k, _)) => bail!(
            "invalid ROLLOUT {s:?}: {k:?} is not a kind check verifies; give NAME or rollout/NAME for a Rollout, deployment/NAME for a Deployment"
        ),
    };
    if name.is_empty() || name.contains('/') {
        bail!("invalid ROLLOUT {s:?}: expected NAME, rollout/NAME or deployment/NAME");
    }
    Ok((workload, name.to_owned()))
}

/// The rules `check` needs.
const CHECK_RBAC: &str = "deploy/check-postsync.yaml";

/// One kind to list.
pub(crate) struct Target {
    pub kind: Kind,
    /// Its namespace; empty: every namespace.
    pub namespace: String,
    pub selector: Option<String>,
    /// Skipped, and said in the notes, when not served or not allowed.
    pub optional: bool,
    /// Where the rules that grant the list are, for the error when it is forbidden.
    pub rbac: &'static str,
}

/// Lists every page of one kind, in the first of its versions the server serves: the kind
/// listed, the list's resourceVersion and the items; `Ok(None)` when an optional kind is not
/// served or not allowed.
pub(crate) async fn list(
    client: &kube::Client,
    t: &Target,
) -> Result<Option<(Kind, String, Vec<Value>)>> {
    let candidates = rf_recorder::Resource::candidates(&t.kind);
    let Some(last) = candidates.len().checked_sub(1) else {
        bail!("no API resource for {}", t.kind.name());
    };
    for (i, resource) in candidates.into_iter().enumerate() {
        match list_as(client, t, &resource, i < last).await? {
            Listing::Items(rv, items) => return Ok(Some((resource.kind, rv, items))),
            Listing::NotServed => {}
            Listing::Skipped => return Ok(None),
        }
    }
    Ok(None)
}

/// What listing one version of a kind gave.
enum Listing {
    Items(String, Vec<Value>),
    /// Not served in this version, and another is left to try.
    NotServed,
    /// An optional kind not served or not allowed.
    Skipped,
}

/// Lists every page of `resource`; `more`: another version of the kind is left to try.
async fn list_as(
    client: &kube::Client,
    t: &Target,
    resource: &rf_recorder::Resource,
    more: bool,
) -> Result<Listing> {
    let path = resource.url_path(Some(t.namespace.as_str()).filter(|ns| !ns.is_empty()));
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut rv;
    loop {
        let mut lp = ListParams::default().limit(500);
        if let Some(tok) = &token {
            lp = lp.continue_token(tok);
        }
        if let Some(sel) = &t.selector {
            lp = lp.labels(sel);
        }
        let req = Request::new(&path)
            .list(&lp)
            .map_err(kube::Error::BuildRequest)?;
        let page: Value = match client.request(req).await {
            Ok(p) => p,
            Err(kube::Error::Api(s)) if more && s.code == 404 => return Ok(Listing::NotServed),
            Err(kube::Error::Api(s)) if t.optional && (s.code == 403 || s.code == 404) => {
                return Ok(Listing::Skipped);
            }
            Err(kube::Error::Api(s)) if s.code == 403 => bail!(
                "forbidden: cannot list {} in {} ({}); this needs get/list on it (see {})",
                resource.qualified(),
                where_(&t.namespace),
                s.message,
                t.rbac
            ),
            Err(kube::Error::Api(s)) if s.code == 404 => bail!(
                "the API server does not serve {} ({}){}",
                resource.qualified(),
                s.message,
                if t.kind == Kind::Rollout {
                    ": is Argo Rollouts installed?"
                } else {
                    ""
                }
            ),
            Err(e) => {
                return Err(anyhow::Error::new(e).context(format!(
                    "cannot list {} in {}",
                    resource.qualified(),
                    where_(&t.namespace)
                )));
            }
        };
        rv = page
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        for mut item in page
            .get("items")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
        {
            if let Some(o) = item.as_object_mut() {
                o.entry("apiVersion")
                    .or_insert_with(|| Value::String(resource.api_version()));
                o.entry("kind")
                    .or_insert_with(|| Value::String(resource.kind.name().to_owned()));
            }
            items.push(item);
        }
        token = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    Ok(Listing::Items(rv, items))
}

/// `namespace NS`, or `every namespace` for the empty one.
pub(crate) fn where_(namespace: &str) -> String {
    if namespace.is_empty() {
        "every namespace".to_owned()
    } else {
        format!("namespace {namespace}")
    }
}

/// The snapshot: records in list order, and what was skipped.
pub(crate) struct Snapshot {
    pub records: Vec<Record>,
    pub taken_at: Timestamp,
    /// The optional kinds not listed (not served or not allowed), each with its namespace.
    pub skipped: Vec<(Kind, String)>,
}

impl Snapshot {
    /// An empty snapshot taken now.
    pub fn now() -> Self {
        Snapshot {
            records: Vec::new(),
            taken_at: rf_recorder::now(),
            skipped: Vec::new(),
        }
    }

    /// What was not listed, one sentence a kind.
    pub fn notes(&self) -> Vec<String> {
        self.skipped
            .iter()
            .map(|(kind, ns)| {
                format!(
                    "{} in {} not listed (not served or not allowed)",
                    kind.name(),
                    where_(ns)
                )
            })
            .collect()
    }

    /// Adds a list of `kind` in `ns` between its markers, each object redacted as the recorder
    /// redacts it.
    pub fn push_list(&mut self, kind: &Kind, ns: &str, items: &[Value], rv: &str) {
        self.push(kind, Op::ListBegin, ns, None, "");
        for item in items {
            self.push(kind, Op::Listed, ns, Some(item), "");
        }
        self.push(kind, Op::ListEnd, ns, None, rv);
    }

    fn push(&mut self, kind: &Kind, op: Op, ns: &str, item: Option<&Value>, rv: &str) {
        let meta = |p: &str| {
            item.and_then(|v| v.pointer(p))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        let object = match item {
            Some(v) => {
                let bytes = serde_json::to_vec(v).unwrap_or_default();
                rf_recorder::redact_object(&bytes).unwrap_or(bytes)
            }
            None => Vec::new(),
        };
        self.records.push(Record {
            seq: self.records.len() as u64 + 1,
            observed_at: self.taken_at,
            kind: kind.clone(),
            op,
            namespace: if item.is_some() {
                meta("/metadata/namespace")
            } else {
                ns.to_owned()
            },
            name: meta("/metadata/name"),
            uid: meta("/metadata/uid"),
            resource_version: if item.is_some() {
                meta("/metadata/resourceVersion")
            } else {
                rv.to_owned()
            },
            actor: None,
            object,
        });
    }

    /// The names of the listed objects of kind `kind` in `ns` (empty: any), nearest to `name`
    /// first.
    pub fn nearest(&self, kind: &str, ns: &str, name: &str) -> Vec<String> {
        let names = self
            .records
            .iter()
            .filter(|r| r.kind.name() == kind && (ns.is_empty() || r.namespace == ns))
            .filter(|r| !r.name.is_empty())
            .map(|r| r.name.clone());
        crate::input::nearest_first(name, names)
    }

    /// The header of a recording of it: the kinds listed, in list order, the `namespaces`
    /// (empty: all), and the note `snapshot`, `by`, so that `analyze` judges it as one list at
    /// one moment.
    pub fn header(
        &self,
        namespaces: &[String],
        by: &str,
        source: &rf_recorder::SourceInfo,
    ) -> Header {
        let mut kinds: Vec<Kind> = Vec::new();
        for r in self.records.iter().filter(|r| r.op == Op::ListEnd) {
            if !kinds.contains(&r.kind) {
                kinds.push(r.kind.clone());
            }
        }
        let mut header = Header::new(
            env!("CARGO_PKG_VERSION"),
            self.taken_at,
            Source {
                context: source.context.clone(),
                server: source.server.clone(),
                namespaces: namespaces.to_vec(),
                label_selector: None,
                kinds,
            },
        );
        header.notes.insert("snapshot".to_owned(), by.to_owned());
        header
    }

    /// Lists each of `targets` in order; an optional one not served or not allowed is a note.
    pub async fn list_all(&mut self, client: &kube::Client, targets: &[Target]) -> Result<()> {
        for t in targets {
            let Some((kind, rv, items)) = list(client, t).await? else {
                self.skipped.push((t.kind.clone(), t.namespace.clone()));
                continue;
            };
            self.push_list(&kind, &t.namespace, &items, &rv);
        }
        Ok(())
    }
}

/// The kinds to list for `workload`, in order; the Deployment's own label selector (from its
/// listing) picks its ReplicaSets and Pods.
fn targets(workload: Workload, ns: &str, app_ns: &str, selector: Option<String>) -> Vec<Target> {
    let at = |kind: Kind, selector: Option<String>, optional: bool| Target {
        kind,
        namespace: ns.to_owned(),
        selector,
        optional,
        rbac: CHECK_RBAC,
    };
    let mut targets = match workload {
        Workload::Rollout => vec![
            at(Kind::Rollout, None, false),
            at(Kind::ReplicaSet, Some(HASH_LABEL.to_owned()), false),
            at(Kind::Pod, Some(HASH_LABEL.to_owned()), true),
        ],
        Workload::Deployment => vec![
            at(Kind::ReplicaSet, selector.clone(), false),
            at(Kind::Pod, selector, true),
        ],
    };
    targets.extend([
        at(Kind::Service, None, true),
        at(Kind::EndpointSlice, None, true),
        at(rf_format::api::INGRESS.newest(), None, true),
        at(rf_format::api::HTTP_ROUTE.newest(), None, true),
        at(rf_format::api::VIRTUAL_SERVICE.newest(), None, true),
    ]);
    // Argo CD's control-plane namespace, and the workload's own (Applications in any
    // namespace keep theirs beside what they deploy).
    for app_ns in app_namespaces(ns, app_ns) {
        targets.push(Target {
            kind: Kind::Application,
            namespace: app_ns.to_owned(),
            selector: None,
            optional: true,
            rbac: CHECK_RBAC,
        });
    }
    targets
}

/// Where to list Argo CD Applications for workloads of namespace `ns`: `app_ns` (Argo CD's
/// control plane), and `ns` itself when it is another one (Argo CD's "Applications in any
/// namespace").
pub(crate) fn app_namespaces<'a>(ns: &'a str, app_ns: &'a str) -> Vec<&'a str> {
    if ns.is_empty() || ns == app_ns {
        vec![app_ns]
    } else {
        vec![app_ns, ns]
    }
}

async fn snapshot(
    client: &kube::Client,
    workload: Workload,
    ns: &str,
    name: &str,
    app_ns: &str,
) -> Result<Snapshot> {
    // A Deployment is listed first: its selector picks what else to list.
    let deployments = match workload {
        Workload::Rollout => None,
        Workload::Deployment => {
            let t = Target {
                kind: rf_format::api::DEPLOYMENT.newest(),
                namespace: ns.to_owned(),
                selector: None,
                optional: false,
                rbac: CHECK_RBAC,
            };
            list(client, &t).await?
        }
    };
    let selector = deployments.as_ref().and_then(|(_, _, items)| {
        let d = items
            .iter()
            .find(|d| d.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?;
        let labels = string_values(d, "/spec/selector/matchLabels");
        (!labels.is_empty()).then(|| {
            labels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",")
        })
    });
    let targets = targets(workload, ns, app_ns, selector);
    let mut snap = Snapshot::now();
    if let Some((kind, rv, items)) = deployments {
        snap.push_list(&kind, ns, &items, &rv);
    }
    snap.list_all(client, &targets).await?;
    Ok(snap)
}

/// What the snapshot shows about the rollout, for a person and for `-o json`.
#[derive(Debug, Default, Serialize)]
struct State {
    /// `Rollout` or `Deployment`.
    kind: &'static str,
    phase: Option<String>,
    /// `canary` or `blueGreen`; a Deployment's `RollingUpdate` or `Recreate`.
    strategy: String,
    step_index: i64,
    step_count: usize,
    current_pod_hash: Option<String>,
    stable_rs: Option<String>,
    /// A blue-green rollout's Services and the selectors its status records.
    #[serde(skip_serializing_if = "Option::is_none")]
    blue_green: Option<BlueGreenState>,
    /// A Deployment's revision and counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    deployment: Option<deployment::DeploymentState>,
    replicasets: Vec<RsState>,
    services: Vec<ServiceState>,
    /// With `--expect-image`: what each ready pod of the current revision runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    images: Vec<image::PodImage>,
    /// Where customers come in: each router path whose backend is one of `services`.
    front_doors: Vec<FrontDoor>,
    applications: Vec<AppState>,
}

/// One router path to a Service that routes to the rollout: the path customers take.
#[derive(Debug, Serialize)]
struct FrontDoor {
    /// `Ingress`, `HTTPRoute` or `VirtualService`.
    router: &'static str,
    name: String,
    /// `*` for any host.
    host: String,
    path: String,
    service: String,
    /// The backend's weight, when the router sets one.
    #[serde(skip_serializing_if = "Option::is_none")]
    weight: Option<i64>,
}

#[derive(Debug, Default, Serialize)]
struct BlueGreenState {
    active_service: Option<String>,
    preview_service: Option<String>,
    /// `status.blueGreen.activeSelector` / `previewSelector`: the hashes the controller put on
    /// those Services' selectors.
    active_selector: Option<String>,
    preview_selector: Option<String>,
    /// The current revision is the stable one: the active Service is meant to route to it.
    promoted: bool,
}

#[derive(Debug, Serialize)]
struct RsState {
    name: String,
    hash: String,
    /// `new` (the current revision), `stable`, or `other`; a Deployment's are `new` or `old`.
    role: &'static str,
    replicas: i64,
    ready: i64,
}

#[derive(Debug, Serialize)]
struct ServiceState {
    name: String,
    /// What the rollout names it (`active`, `preview`, `stable`, `canary`), if it does.
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    selector: BTreeMap<String, String>,
    /// Ready endpoint pods by revision (`""`: not a pod of this rollout).
    endpoints: BTreeMap<String, Vec<String>>,
}

#[derive(Debug, Serialize)]
struct AppState {
    name: String,
    sync: Option<String>,
    health: Option<String>,
}

fn objects<'a>(records: &'a [Record], kind: &'a Kind) -> impl Iterator<Item = Value> + 'a {
    records
        .iter()
        .filter(move |r| r.kind == *kind && r.op == Op::Listed)
        .filter_map(|r| serde_json::from_slice(&r.object).ok())
}

/// What the current revision must be, beyond being routed to.
#[derive(Debug, Default)]
struct Expectations {
    version: Option<Expect>,
    image: Option<image::ExpectImage>,
}

/// Whether the current revision of `state` carries `expect.version` and runs `expect.image`,
/// and the Services route to pods with that label; `rs_labels`: each revision's template
/// labels. What each ready pod runs joins `state.images`.
fn expectations(
    records: &[Record],
    state: &mut State,
    rs_labels: &BTreeMap<String, BTreeMap<String, String>>,
    expect: &Expectations,
    failures: &mut Vec<String>,
) {
    let current = state.current_pod_hash.clone().unwrap_or_default();
    if let Some(e) = &expect.version {
        let has = |hash: &str| rs_labels.get(hash).and_then(|l| l.get(&e.label)) == Some(&e.value);
        if !has(&current) {
            let got = rs_labels
                .get(&current)
                .and_then(|l| l.get(&e.label))
                .map_or("no such label".to_owned(), |v| format!("{v:?}"));
            failures.push(format!(
                "the current revision {current} has {}: {got}, expected {:?}",
                e.label, e.value
            ));
        }
        for s in &state.services {
            let served = s
                .endpoints
                .iter()
                .any(|(h, pods)| !pods.is_empty() && has(h));
            if !served {
                failures.push(format!(
                    "Service {} has no ready endpoint of a pod with {}={}",
                    s.name, e.label, e.value
                ));
            }
        }
    }
    if let Some(e) = &expect.image {
        let rs = state
            .replicasets
            .iter()
            .find(|r| r.role == "new")
            .map(|r| r.name.clone());
        // The revision's own pods (an Experiment's share its hash label, not its ReplicaSet),
        // ready and not being deleted.
        state.images = objects(records, &Kind::Pod)
            .filter(|p| rs.is_some() && owner_names(p).any(|o| Some(o) == rs.as_deref()))
            .filter(|p| p.pointer("/metadata/deletionTimestamp").is_none() && pod_ready(p))
            .map(|p| image::pod_image(&p, e))
            .collect();
        state.images.sort_by(|a, b| a.pod.cmp(&b.pod));
        failures.extend(image::failures(
            &format!("the current revision {current}"),
            &state.images,
            e,
        ));
    }
}

/// The front doors: every path of a router (but the canary Ingress the controller makes for
/// NGINX, and backends of weight 0) to one of `services`, as the analyzer reads it.
fn front_doors(records: &[Record], services: &[ServiceState]) -> Vec<FrontDoor> {
    let mut doors = Vec::new();
    for rec in records
        .iter()
        .filter(|r| matches!(r.op, Op::Listed | Op::Added | Op::Modified))
    {
        for p in rf_analyzer::router_paths(rec) {
            if services.iter().any(|s| s.name == p.service) {
                doors.push(FrontDoor {
                    router: p.kind,
                    name: p.name,
                    host: p.host,
                    path: p.path,
                    service: p.service,
                    weight: p.weight,
                });
            }
        }
    }
    doors
}

/// The Argo CD Applications that manage the `kind` `ns/name`, with their sync and health.
fn applications(records: &[Record], kind: &str, ns: &str, name: &str) -> Vec<AppState> {
    let text = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_owned);
    objects(records, &Kind::Application)
        .filter(|app| {
            app.pointer("/status/resources")
                .and_then(Value::as_array)
                .is_some_and(|r| {
                    r.iter().any(|r| {
                        r.get("kind").and_then(Value::as_str) == Some(kind)
                            && r.get("name").and_then(Value::as_str) == Some(name)
                            && r.get("namespace").and_then(Value::as_str) == Some(ns)
                    })
                })
        })
        .map(|app| AppState {
            name: text(&app, "/metadata/name").unwrap_or_default(),
            sync: text(&app, "/status/sync/status"),
            health: text(&app, "/status/health/status"),
        })
        .collect()
}

/// The names of `object`'s owners.
fn owner_names(object: &Value) -> impl Iterator<Item = &str> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("name").and_then(Value::as_str))
}

/// Whether the pod's Ready condition is True.
fn pod_ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some("Ready")
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        })
}

/// The state of `name` in the snapshot, and why adoption fails, if it does: no Service routes
/// to the rollout, one that does has no ready endpoint of it, or `expect` does not hold.
fn describe(
    records: &[Record],
    traffic: &[TrafficEntry],
    ns: &str,
    name: &str,
    expect: &Expectations,
) -> Option<(State, Vec<String>)> {
    let rollout = objects(records, &Kind::Rollout)
        .find(|r| r.pointer("/metadata/name").and_then(Value::as_str) == Some(name))?;
    let st = |p: &str| {
        rollout
            .pointer(p)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let blue_green = rollout.pointer("/spec/strategy/blueGreen").map(|b| {
        let text = |v: Option<&Value>| {
            v.and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        BlueGreenState {
            active_service: text(b.get("activeService")),
            preview_service: text(b.get("previewService")),
            active_selector: text(rollout.pointer("/status/blueGreen/activeSelector")),
            preview_selector: text(rollout.pointer("/status/blueGreen/previewSelector")),
            promoted: false,
        }
    });
    let canary_services = (
        rollout
            .pointer("/spec/strategy/canary/stableService")
            .and_then(Value::as_str),
        rollout
            .pointer("/spec/strategy/canary/canaryService")
            .and_then(Value::as_str),
    );
    let mut state = State {
        kind: "Rollout",
        phase: st("/status/phase"),
        strategy: if blue_green.is_some() {
            "blueGreen"
        } else {
            "canary"
        }
        .to_owned(),
        step_index: rollout
            .pointer("/status/currentStepIndex")
            .and_then(Value::as_i64)
            .unwrap_or(0),
        step_count: rollout
            .pointer("/spec/strategy/canary/steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
        current_pod_hash: st("/status/currentPodHash"),
        stable_rs: st("/status/stableRS"),
        ..State::default()
    };
    state.blue_green = blue_green.map(|b| BlueGreenState {
        promoted: state.current_pod_hash.is_some() && state.current_pod_hash == state.stable_rs,
        ..b
    });
    let role_of = |service: &str| -> Option<&'static str> {
        match &state.blue_green {
            Some(b) if b.active_service.as_deref() == Some(service) => Some("active"),
            Some(b) if b.preview_service.as_deref() == Some(service) => Some("preview"),
            Some(_) => None,
            None if canary_services.0 == Some(service) => Some("stable"),
            None if canary_services.1 == Some(service) => Some("canary"),
            None => None,
        }
    };
    let mut rs_labels: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for rs in objects(records, &Kind::ReplicaSet) {
        let owned = rs
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|o| {
                o.iter().any(|o| {
                    o.get("kind").and_then(Value::as_str) == Some("Rollout")
                        && o.get("name").and_then(Value::as_str) == Some(name)
                })
            });
        let hash = string_values(&rs, "/metadata/labels")
            .get(HASH_LABEL)
            .cloned()
            .unwrap_or_default();
        let rs_name = rs
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if !owned && rs_name != format!("{name}-{hash}") {
            continue;
        }
        let role = if state.current_pod_hash.as_deref() == Some(hash.as_str()) {
            "new"
        } else if state.stable_rs.as_deref() == Some(hash.as_str()) {
            "stable"
        } else {
            "other"
        };
        rs_labels.insert(
            hash.clone(),
            string_values(&rs, "/spec/template/metadata/labels"),
        );
        state.replicasets.push(RsState {
            name: rs_name,
            hash,
            role,
            replicas: rs
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            ready: rs
                .pointer("/status/readyReplicas")
                .and_then(Value::as_i64)
                .unwrap_or(0),
        });
    }
    // Which Services route to the rollout, and their ready endpoints by revision: the
    // analyzer's own account (its traffic timeline), the last entry of each Service.
    let selectors: BTreeMap<String, BTreeMap<String, String>> = objects(records, &Kind::Service)
        .filter_map(|svc| {
            let name = svc.pointer("/metadata/name")?.as_str()?.to_owned();
            Some((name, string_values(&svc, "/spec/selector")))
        })
        .collect();
    let mut last: BTreeMap<&str, &TrafficEntry> = BTreeMap::new();
    for e in traffic {
        last.insert(e.service.as_str(), e);
    }
    for (service, e) in last {
        let role = role_of(service);
        state.services.push(ServiceState {
            name: service.to_owned(),
            role,
            selector: selectors.get(service).cloned().unwrap_or_default(),
            endpoints: e.endpoints.clone(),
        });
    }
    state.front_doors = front_doors(records, &state.services);
    state.applications = applications(records, "Rollout", ns, name);
    let mut failures = Vec::new();
    let listed = |k: &Kind| records.iter().any(|r| r.kind == *k && r.op == Op::ListEnd);
    if !listed(&Kind::Service) || !listed(&Kind::EndpointSlice) {
        failures.push(
            "cannot verify adoption: Services or EndpointSlices could not be listed".to_owned(),
        );
    } else if state.services.is_empty() {
        failures.push(format!(
            "no Service routes to {ns}/{name}: none is named by it or selects its pods"
        ));
    }
    for s in &state.services {
        if s.endpoints
            .iter()
            .all(|(h, pods)| h.is_empty() || pods.is_empty())
        {
            failures.push(format!(
                "Service {} has no ready endpoint of any pod of {ns}/{name}",
                s.name
            ));
        }
    }
    // Before promotion, a blue-green rollout's new revision is what its preview Service routes
    // to, and nothing else does; that Service holding none of its ready pods is the preview's
    // form of "not adopted" (after promotion, `canary-not-in-endpoints` judges the active one).
    if let (Some(b), Some(current)) = (&state.blue_green, &state.current_pod_hash) {
        let preview = b
            .preview_service
            .as_deref()
            .and_then(|p| state.services.iter().find(|s| s.name == p));
        if let (false, Some(s)) = (b.promoted, preview) {
            if s.endpoints.get(current).is_none_or(Vec::is_empty) {
                failures.push(format!(
                    "the preview Service {} has no ready endpoint of the current revision {current}: what is being previewed is not the new revision",
                    s.name
                ));
            }
        }
    }
    expectations(records, &mut state, &rs_labels, expect, &mut failures);
    Some((state, failures))
}

#[derive(Serialize)]
struct Outcome<'a> {
    rollout: String,
    adopted: bool,
    taken_at: String,
    state: &'a State,
    expect: Option<&'a Expect>,
    #[serde(skip_serializing_if = "Option::is_none")]
    expect_image: Option<&'a image::ExpectImage>,
    /// With `--probe`: what the front door answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    probe: Option<&'a probe::ProbeResult>,
    failures: &'a [String],
    findings: &'a [Finding],
    notes: &'a [String],
    saved: Option<String>,
}

/// Writes the snapshot to `path` through a temporary file, so a failed write leaves nothing
/// that looks complete.
fn save(
    path: &Path,
    snap: &Snapshot,
    ns: &str,
    source: &rf_recorder::SourceInfo,
    probe: Option<&probe::ProbeResult>,
) -> Result<()> {
    // What the front door answered is evidence no listing holds.
    let notes = match probe {
        Some(p) => vec![("probe".to_owned(), serde_json::to_string(p)?)],
        None => Vec::new(),
    };
    save_as(
        path,
        snap,
        &[ns.to_owned()],
        "rollout-forensics check",
        source,
        notes,
    )
}

/// Writes `snap` as a recording at `path` (to a temporary file beside it, renamed when
/// complete): its header names `namespaces` (empty: all) and carries the note `snapshot`,
/// `by`, and `notes`, so that `analyze` judges it as one list at one moment.
pub(crate) fn save_as(
    path: &Path,
    snap: &Snapshot,
    namespaces: &[String],
    by: &str,
    source: &rf_recorder::SourceInfo,
    notes: Vec<(String, String)>,
) -> Result<()> {
    let mut header = snap.header(namespaces, by, source);
    header.notes.extend(notes);
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.partial",
        path.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("check.rfr")
    ));
    let result = (|| -> Result<()> {
        let file = std::fs::File::create(&tmp)
            .with_context(|| format!("cannot write the snapshot to {}", tmp.display()))?;
        let mut w = Writer::new(std::io::BufWriter::new(file), &header)?;
        for r in &snap.records {
            w.write(r)?;
        }
        let mut inner = w.finish_at(snap.taken_at)?;
        inner.flush()?;
        inner.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
            .with_context(|| format!("cannot move the snapshot to {}", path.display()))?;
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("failed to save the snapshot to {}", path.display()))
}

pub fn run(args: &CheckArgs, out: &mut dyn Write) -> Result<Exit> {
    let (workload, name) = parse_target(&args.rollout)?;
    let expect = Expectations {
        version: args
            .expect_version
            .as_deref()
            .map(parse_expect)
            .transpose()?,
        image: image::validate(args.expect_image.as_deref())?,
    };
    let retry_for = Duration::from_nanos(
        u64::try_from(parse_duration(&args.retry_for).context("in --retry-for")?).unwrap_or(0),
    );
    let probe_timeout = Duration::from_nanos(
        u64::try_from(parse_duration(&args.probe_timeout).context("in --probe-timeout")?)
            .unwrap_or(0),
    );
    let probe = args
        .probe
        .as_deref()
        .map(|url| {
            probe::parse(
                url,
                &args.expect_header,
                args.expect_body.as_deref(),
                &args.resolve,
                probe_timeout,
            )
        })
        .transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let begun = Instant::now();
    let (ns, snap, source, probed, (mut adopted, report_findings, state, mut failures)) =
        runtime.block_on(async {
            let (client, source, default_ns) =
                client_for(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
            let ns = args.namespace.clone().unwrap_or(default_ns);
            loop {
                let snap = snapshot(&client, workload, &ns, &name, &args.app_namespace).await?;
                let v = verdict(&snap, workload, &ns, &name, &expect)?;
                let probed = match &probe {
                    Some(p) => Some(p.run().await),
                    None => None,
                };
                let done = v.0 && probed.as_ref().is_none_or(|p| p.failures.is_empty());
                if done || begun.elapsed() + Duration::from_secs(5) > retry_for {
                    return Ok::<_, anyhow::Error>((ns, snap, source, probed, v));
                }
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
        })?;
    if let Some(p) = &probed {
        failures.extend(p.failures.iter().cloned());
        adopted &= p.failures.is_empty();
    }
    let saved = match &args.save {
        Some(path) => {
            save(path, &snap, &ns, &source, probed.as_ref())?;
            Some(path.display().to_string())
        }
        None => None,
    };
    let subject = match workload {
        Workload::Rollout => format!("{ns}/{name}"),
        Workload::Deployment => format!("deployment {ns}/{name}"),
    };
    if args.format == crate::args::Format::Json {
        serde_json::to_writer_pretty(
            &mut *out,
            &Outcome {
                rollout: format!("{ns}/{name}"),
                adopted,
                taken_at: rf_analyzer::rfc3339(snap.taken_at),
                state: &state,
                expect: expect.version.as_ref(),
                expect_image: expect.image.as_ref(),
                probe: probed.as_ref(),
                failures: &failures,
                findings: &report_findings,
                notes: &snap.notes(),
                saved,
            },
        )?;
        writeln!(out)?;
    } else {
        print_table(
            out,
            &subject,
            &state,
            &report_findings,
            &failures,
            &snap.notes(),
            adopted,
            saved.as_deref(),
            probed.as_ref(),
        )?;
    }
    out.flush()?;
    Ok(if adopted { Exit::Ok } else { Exit::Findings })
}

/// The probe's answer, for a person (its failures are among the adoption errors).
fn print_probe(out: &mut dyn Write, p: &probe::ProbeResult) -> std::io::Result<()> {
    let at = p
        .address
        .as_deref()
        .map(|a| format!(" at {a}"))
        .unwrap_or_default();
    match (p.status, &p.error) {
        (Some(status), _) => {
            let headers: Vec<String> = p
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {}", v.as_deref().unwrap_or("(absent)")))
                .collect();
            writeln!(
                out,
                "  probe {}{at}: {status}{}",
                p.url,
                if headers.is_empty() {
                    String::new()
                } else {
                    format!(", {}", headers.join(", "))
                }
            )?;
        }
        (None, Some(e)) => writeln!(out, "  probe {}{at}: no answer: {e}", p.url)?,
        (None, None) => writeln!(out, "  probe {}{at}: no answer", p.url)?,
    }
    Ok(())
}

type Verdict = (bool, Vec<Finding>, State, Vec<String>);

/// Analyzes the snapshot: adopted when no error finding concerns the workload and every
/// expectation holds.
fn verdict(
    snap: &Snapshot,
    workload: Workload,
    ns: &str,
    name: &str,
    expect: &Expectations,
) -> Result<Verdict> {
    let mut analyzer = Analyzer::new(Options {
        rollout: Some((ns.to_owned(), name.to_owned())),
        snapshot: true,
        // The timeline's traffic entries say which Services route to the rollout.
        timelines: true,
        ..Options::default()
    });
    let header = Header::new(env!("CARGO_PKG_VERSION"), snap.taken_at, Source::default());
    analyzer.begin_file("(cluster snapshot)", rf_format::FORMAT_VERSION, &header);
    for r in &snap.records {
        analyzer.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
    }
    analyzer.end_file(FileEnd::Closed, Some(snap.taken_at), None);
    let report = analyzer.finish();
    let described = match workload {
        Workload::Rollout => {
            let traffic = report
                .timelines
                .first()
                .map_or(&[][..], |t| t.traffic.as_slice());
            describe(&snap.records, traffic, ns, name, expect)
        }
        Workload::Deployment => deployment::describe(&snap.records, ns, name, expect),
    };
    let Some((state, failures)) = described else {
        let (word, kind) = match workload {
            Workload::Rollout => ("rollout", "Rollout"),
            Workload::Deployment => ("deployment", "Deployment"),
        };
        let others = snap.nearest(kind, ns, name);
        bail!(
            "{word} {ns}/{name} not found; {}",
            if others.is_empty() {
                format!("namespace {ns} has no {word}s")
            } else {
                format!(
                    "{word}s in {ns}, nearest first: {}",
                    crate::input::listing(&others)
                )
            }
        );
    };
    let adopted =
        failures.is_empty() && report.findings.iter().all(|f| f.severity < Severity::Error);
    Ok((adopted, report.findings, state, failures))
}

#[allow(clippy::too_many_arguments)]
fn print_table(
    out: &mut dyn Write,
    rollout: &str,
    state: &State,
    findings: &[Finding],
    failures: &[String],
    notes: &[String],
    adopted: bool,
    saved: Option<&str>,
    probe: Option<&probe::ProbeResult>,
) -> Result<()> {
    let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "none".to_owned());
    match (&state.deployment, &state.blue_green) {
        (Some(d), _) => writeln!(
            out,
            "{rollout}: {}, {} revision {} on {} ({} of {} updated, {} available, {} pod(s) in all)",
            opt(&state.phase),
            state.strategy,
            d.revision.map_or("none".to_owned(), |r| r.to_string()),
            opt(&state.current_pod_hash),
            d.updated,
            d.replicas,
            d.available,
            d.total
        )?,
        (None, Some(b)) => writeln!(
            out,
            "rollout {rollout}: {}, blue-green {} on {} (stable {}; active Service selects {}, preview {})",
            opt(&state.phase),
            if b.promoted {
                "promoted"
            } else {
                "before promotion"
            },
            opt(&state.current_pod_hash),
            opt(&state.stable_rs),
            opt(&b.active_selector),
            opt(&b.preview_selector)
        )?,
        (None, None) => writeln!(
            out,
            "rollout {rollout}: {} at step {}/{} on {} (stable {})",
            opt(&state.phase),
            state.step_index,
            state.step_count,
            opt(&state.current_pod_hash),
            opt(&state.stable_rs)
        )?,
    }
    for rs in &state.replicasets {
        writeln!(
            out,
            "  rs {:<40} {:<6} {}/{} ready",
            rs.name, rs.role, rs.ready, rs.replicas
        )?;
    }
    for s in &state.services {
        let sel: Vec<String> = s.selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let role = s.role.map(|r| format!(" ({r})")).unwrap_or_default();
        writeln!(
            out,
            "  svc {}{role} selector {{{}}}",
            s.name,
            sel.join(", ")
        )?;
        if s.endpoints.is_empty() {
            writeln!(out, "      no ready endpoints")?;
        }
        for (h, pods) in &s.endpoints {
            let which = if h.is_empty() {
                "(not this rollout)".to_owned()
            } else {
                h.clone()
            };
            writeln!(
                out,
                "      {which}: {} ready endpoint(s): {}",
                pods.len(),
                pods.join(", ")
            )?;
        }
    }
    for d in &state.front_doors {
        writeln!(
            out,
            "  front door {}{} -> {} {} -> svc {}{}",
            d.host,
            d.path,
            d.router.to_ascii_lowercase(),
            d.name,
            d.service,
            d.weight
                .map(|w| format!(" (weight {w})"))
                .unwrap_or_default()
        )?;
    }
    for a in &state.applications {
        writeln!(
            out,
            "  application {}: {}, {}",
            a.name,
            opt(&a.sync),
            opt(&a.health)
        )?;
    }
    for i in &state.images {
        writeln!(
            out,
            "  image {} {}: {}{}",
            i.pod,
            i.container.as_deref().unwrap_or("(no such container)"),
            i.digest.as_deref().unwrap_or("no digest yet"),
            if i.matches { " (expected)" } else { "" }
        )?;
    }
    if let Some(p) = probe {
        print_probe(out, p)?;
    }
    for n in notes {
        writeln!(out, "note: {n}")?;
    }
    for f in findings {
        writeln!(
            out,
            "{} {} {}: {}",
            f.severity, f.rule, f.subject, f.summary
        )?;
        for c in &f.remedy.commands {
            writeln!(out, "    $ {c}")?;
        }
    }
    for f in failures {
        writeln!(out, "error adoption: {f}")?;
    }
    if let Some(p) = saved {
        writeln!(out, "snapshot saved to {p}")?;
    }
    let previewed = state.blue_green.as_ref().filter(|b| !b.promoted);
    if let (true, Some(b)) = (adopted, previewed) {
        writeln!(
            out,
            "adopted so far: the preview Service {} routes to revision {}; the active Service {} stays on {} until promotion",
            opt(&b.preview_service),
            opt(&state.current_pod_hash),
            opt(&b.active_service),
            opt(&b.active_selector)
        )?;
    } else if adopted {
        writeln!(
            out,
            "adopted: the Services route to revision {}",
            opt(&state.current_pod_hash)
        )?;
    } else {
        writeln!(out, "NOT ADOPTED: see the errors above")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Applications in any namespace: the workload's own namespace is listed beside Argo CD's.
    #[test]
    fn applications_are_listed_in_argo_cds_namespace_and_the_workloads() {
        assert_eq!(app_namespaces("payments", "argocd"), ["argocd", "payments"]);
        assert_eq!(app_namespaces("argocd", "argocd"), ["argocd"]);
        let apps: Vec<String> = targets(Workload::Rollout, "payments", "argocd", None)
            .into_iter()
            .filter(|t| t.kind == Kind::Application)
            .map(|t| t.namespace)
            .collect();
        assert_eq!(apps, ["argocd", "payments"]);
    }

    /// A snapshot of `objects`, each kind listed completely, in namespace `bg`.
    fn snapshot_of(objects: &[(Kind, Value)]) -> Snapshot {
        let mut records = Vec::new();
        let mut seq = 0;
        let taken_at = Timestamp::from_unix_seconds(1_780_000_000);
        let mut record = |kind: &Kind, op: Op, item: Option<&Value>| {
            seq += 1;
            let name = item
                .and_then(|v| v.pointer("/metadata/name"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            Record {
                seq,
                observed_at: taken_at,
                kind: kind.clone(),
                op,
                namespace: "bg".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
                resource_version: seq.to_string(),
                actor: None,
                object: item
                    .map(|v| serde_json::to_vec(v).unwrap())
                    .unwrap_or_default(),
            }
        };
        for kind in [
            Kind::Rollout,
            Kind::ReplicaSet,
            Kind::Pod,
            Kind::Service,
            Kind::EndpointSlice,
            rf_format::api::INGRESS.newest(),
        ] {
            records.push(record(&kind, Op::ListBegin, None));
            for (_, v) in objects.iter().filter(|(k, _)| *k == kind) {
                records.push(record(&kind, Op::Listed, Some(v)));
            }
            records.push(record(&kind, Op::ListEnd, None));
        }
        Snapshot {
            records,
            taken_at,
            skipped: Vec::new(),
        }
    }

    /// A blue-green rollout on `current` (stable `stable`), revisions `h1` and `h2` running one
    /// ready pod each, with its active and preview Services selecting `active` and `preview`.
    fn blue_green(current: &str, stable: &str, active: &str, preview: &str) -> Snapshot {
        let meta =
            |name: &str| json!({"name": name, "namespace": "bg", "uid": format!("uid-{name}")});
        let mut objects = vec![(
            Kind::Rollout,
            json!({
                "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "metadata": meta("app"),
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "app"}},
                         "template": {"metadata": {"labels": {"app": "app"}},
                                      "spec": {"containers": [{"name": "app", "image": "app:2"}]}},
                         "strategy": {"blueGreen": {"activeService": "app", "previewService": "app-preview",
                                                    "autoPromotionEnabled": false}}},
                "status": {"currentPodHash": current, "stableRS": stable,
                           "phase": if current == stable { "Healthy" } else { "Paused" },
                           "pauseConditions": if current == stable { json!([]) }
                               else { json!([{"reason": "BlueGreenPause", "startTime": "2026-05-28T20:26:00Z"}]) },
                           "blueGreen": {"activeSelector": active, "previewSelector": preview}}
            }),
        )];
        // Both revisions run; once promoted, the old one waits for its scale-down-deadline.
        for hash in ["h1", "h2"] {
            let name = format!("app-{hash}");
            let labels = json!({"app": "app", "rollouts-pod-template-hash": hash});
            let owner = json!([{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout", "name": "app",
                                "uid": "uid-app", "controller": true}]);
            let mut m = meta(&name);
            m["labels"] = labels.clone();
            m["ownerReferences"] = owner;
            if hash != current && hash != stable {
                m["annotations"] = json!({"scale-down-deadline": "2099-01-01T00:00:00Z"});
            }
            objects.push((
                Kind::ReplicaSet,
                json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": m,
                       "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}},
                       "status": {"replicas": 1, "readyReplicas": 1}}),
            ));
            let mut m = meta(&format!("{name}-a"));
            m["labels"] = labels;
            objects.push((
                Kind::Pod,
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": m,
                       "spec": {"containers": [{"name": "app", "image": "app:2"}]},
                       "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}),
            ));
        }
        for (service, hash) in [("app", active), ("app-preview", preview)] {
            objects.push((
                Kind::Service,
                json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(service),
                       "spec": {"selector": {"app": "app", "rollouts-pod-template-hash": hash}}}),
            ));
            let mut m = meta(&format!("{service}-x"));
            m["labels"] = json!({"kubernetes.io/service-name": service});
            objects.push((
                Kind::EndpointSlice,
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": m,
                       "addressType": "IPv4",
                       "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                                      "targetRef": {"kind": "Pod", "name": format!("app-{hash}-a")}}]}),
            ));
        }
        snapshot_of(&objects)
    }

    /// The verdict on rollout `bg/app` in `snap`, nothing expected.
    fn of_rollout(snap: &Snapshot) -> Verdict {
        verdict(
            snap,
            Workload::Rollout,
            "bg",
            "app",
            &Expectations::default(),
        )
        .unwrap()
    }

    fn table(v: &Verdict) -> String {
        let mut out = Vec::new();
        print_table(&mut out, "bg/app", &v.2, &v.1, &v.3, &[], v.0, None, None).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_blue_green_preview_routed_to_the_new_revision_is_adopted_so_far() {
        let v = of_rollout(&blue_green("h2", "h1", "h1", "h2"));
        let out = table(&v);
        assert!(v.0, "{out}");
        assert!(out.contains("blue-green before promotion on h2"), "{out}");
        assert!(
            out.contains("svc app (active)") && out.contains("svc app-preview (preview)"),
            "{out}"
        );
        assert!(
            out.contains("adopted so far: the preview Service app-preview routes to revision h2; the active Service app stays on h1 until promotion"),
            "{out}"
        );
    }

    #[test]
    fn a_blue_green_preview_left_on_the_old_revision_is_not_adopted() {
        let v = of_rollout(&blue_green("h2", "h1", "h1", "h1"));
        assert!(!v.0, "{}", table(&v));
        assert!(
            v.3.iter().any(|f| f.starts_with(
                "the preview Service app-preview has no ready endpoint of the current revision h2"
            )),
            "{:?}",
            v.3
        );
    }

    #[test]
    fn a_promoted_blue_green_whose_active_service_stayed_behind_is_not_adopted() {
        let v = of_rollout(&blue_green("h2", "h2", "h1", "h2"));
        let out = table(&v);
        assert!(!v.0, "{out}");
        assert!(out.contains("blue-green promoted on h2"), "{out}");
        assert!(out.contains("NOT ADOPTED"), "{out}");
        assert!(
            v.1.iter()
                .any(|f| f.rule == rf_analyzer::Rule::CanaryNotInEndpoints
                    && f.summary
                        .starts_with("Service app sends no traffic to revision h2")),
            "{out}"
        );
        let v = of_rollout(&blue_green("h2", "h2", "h2", "h2"));
        assert!(v.0, "{}", table(&v));
        assert!(table(&v).contains("adopted: the Services route to revision h2"));
    }

    /// Ingress `shop` sending `shop.example.com/` to Service `service`.
    fn with_front_door(snap: Snapshot, service: &str) -> Snapshot {
        let ingress = json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": "shop", "namespace": "bg", "uid": "uid-shop"},
            "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [{"path": "/",
                "pathType": "Prefix", "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}});
        with_router(snap, rf_format::api::INGRESS.newest(), ingress)
    }

    /// `snap` with router `object` of `kind` listed (before the Ingresses' list ends).
    fn with_router(mut snap: Snapshot, kind: rf_format::Kind, object: Value) -> Snapshot {
        let ingresses = rf_format::api::INGRESS.newest();
        let end = snap
            .records
            .iter()
            .position(|r| r.kind == ingresses && r.op == Op::ListEnd)
            .unwrap();
        let mut rec = snap.records[end].clone();
        rec.op = Op::Listed;
        rec.kind = kind;
        rec.name = object["metadata"]["name"].as_str().unwrap().into();
        rec.object = serde_json::to_vec(&object).unwrap();
        snap.records.insert(end, rec);
        snap
    }

    #[test]
    fn check_prints_an_http_route_front_door_with_its_weights() {
        // 90 to the active Service, 10 to the preview Service left on h1, 0 to a third: the
        // path of weight 0 is no front door.
        let route = json!({"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
            "metadata": {"name": "shop", "namespace": "bg", "uid": "uid-route"},
            "spec": {"parentRefs": [{"name": "gw"}], "hostnames": ["shop.example.com"],
                "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/api"}}],
                    "backendRefs": [{"name": "app", "port": 80, "weight": 90},
                                    {"name": "app-preview", "port": 80, "weight": 10}]},
                          {"matches": [{"path": {"type": "PathPrefix", "value": "/old"}}],
                    "backendRefs": [{"name": "app-preview", "port": 80, "weight": 0}]}]}});
        let snap = with_router(
            blue_green("h2", "h2", "h2", "h1"),
            rf_format::api::HTTP_ROUTE.newest(),
            route,
        );
        let v = of_rollout(&snap);
        let out = table(&v);
        assert!(
            out.contains(
                "front door shop.example.com/api -> httproute shop -> svc app (weight 90)"
            ) && out.contains(
                "front door shop.example.com/api -> httproute shop -> svc app-preview (weight 10)"
            ) && !out.contains("/old"),
            "{out}"
        );
        // A tenth of the customers reach only h1 after promotion: not adopted.
        assert!(!v.0, "{out}");
        assert!(
            v.1.iter()
                .any(|f| f.rule == rf_analyzer::Rule::FrontDoorBypass
                    && f.summary.contains("HTTPRoute shop")),
            "{out}"
        );
    }

    #[test]
    fn check_prints_the_front_door_and_fails_when_it_bypasses_the_promoted_revision() {
        // The front door is the active Service: adopted, and the path is printed.
        let snap = with_front_door(blue_green("h2", "h2", "h2", "h2"), "app");
        let v = of_rollout(&snap);
        let out = table(&v);
        assert!(v.0, "{out}");
        assert!(
            out.contains("front door shop.example.com/ -> ingress shop -> svc app"),
            "{out}"
        );
        // The front door is the preview Service, left on the old revision after promotion:
        // customers never reach h2.
        let snap = with_front_door(blue_green("h2", "h2", "h2", "h1"), "app-preview");
        let v = of_rollout(&snap);
        let out = table(&v);
        assert!(!v.0, "{out}");
        assert!(
            v.1.iter()
                .any(|f| f.rule == rf_analyzer::Rule::FrontDoorBypass),
            "{out}"
        );
        assert!(out.contains("NOT ADOPTED"), "{out}");
    }

    #[test]
    fn expect_version_parses_label_and_value() {
        assert_eq!(
            parse_expect("version=v418").unwrap(),
            Expect {
                label: "version".into(),
                value: "v418".into()
            }
        );
        assert!(parse_expect("version").is_err());
        assert!(parse_expect("=v1").is_err());
        assert!(parse_expect("version=").is_err());
    }
}
