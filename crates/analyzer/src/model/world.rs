//! The objects that decide where traffic goes, as last seen: Services, their EndpointSlices,
//! Pods and Argo CD Applications. Rollouts and ReplicaSets live in their
//! [`RolloutTrack`](crate::model::rollout::RolloutTrack)s; how the two meet is
//! [`traffic`](crate::model::traffic).
//!
//! Each object is reduced to the few fields the cross-object detectors compare, so memory follows
//! the number of live objects, not the number of records.

use std::collections::{BTreeMap, BTreeSet};

use crate::base::HashMap;

use rf_format::{Kind, Op, Record, Timestamp};

use crate::base::At;
use crate::base::HASH_LABEL;
use crate::base::Str;
use crate::base::time::parse_rfc3339;
use crate::input::prepare::Parsed;

type Key = (String, String);

/// A Service: its selector.
#[derive(Debug, Clone)]
pub(crate) struct ServiceObj {
    /// `None`: no selector (endpoints managed by hand).
    pub selector: Option<BTreeMap<String, String>>,
    pub pos: At,
}

/// One endpoint of an EndpointSlice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EndpointObj {
    /// `targetRef.name` when it is a Pod.
    pub pod: Option<Str>,
    pub address: Str,
    pub ready: bool,
}

/// An EndpointSlice: the Service it serves and its endpoints.
#[derive(Debug, Clone)]
pub(crate) struct SliceObj {
    pub service: String,
    pub endpoints: Vec<EndpointObj>,
    pub pos: At,
}

/// One container of a Pod: the image asked for and the digest that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PodImage {
    pub container: Str,
    pub image: Str,
    /// `sha256:...` from `status.containerStatuses[].imageID`, once pulled.
    pub digest: Option<String>,
}

/// A Pod: its revision, readiness and images.
#[derive(Debug, Clone)]
pub(crate) struct PodObj {
    pub hash: Option<Str>,
    pub owner: Option<Str>,
    pub ready: bool,
    pub ready_since: Option<Timestamp>,
    pub images: Vec<PodImage>,
    pub pos: At,
}

/// A change of a Deployment's `spec.replicas`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Scale {
    pub pos: At,
    pub from: i64,
    pub to: i64,
    pub actor: Option<Str>,
}

impl Scale {
    /// `, by argocd-controller`, or nothing when the writer is not known.
    pub fn by_words(&self) -> String {
        self.actor
            .as_ref()
            .map(|a| format!(", by {a}"))
            .unwrap_or_default()
    }
}

/// A Deployment: its replicas, its pod template (a rollout's, through `workloadRef`), and when
/// its replicas last went up from none.
#[derive(Debug, Clone)]
pub(crate) struct DeploymentObj {
    pub namespace: String,
    pub name: String,
    /// `spec.replicas` (1 when not set, as the API server defaults it).
    pub replicas: i64,
    /// `status.readyReplicas`.
    pub ready: i64,
    pub generation: Option<i64>,
    /// `spec.template`, as its JSON text.
    pub template: Option<std::sync::Arc<str>>,
    /// The latest change of `spec.replicas` from 0 to more.
    pub scaled_up: Option<Scale>,
    /// The latest change of `spec.replicas` to 0.
    pub scaled_down: Option<Scale>,
    /// How many times `spec.replicas` went from 0 to more while recorded.
    pub scale_ups: usize,
    /// Who wrote its spec last (the record's actor, or the last manager of the main resource).
    pub actor: Option<Str>,
    pub pos: At,
}

impl DeploymentObj {
    /// Its record at `pos`, as evidence showing `detail`.
    pub fn evidence_at(
        &self,
        pos: At,
        detail: impl Into<String>,
    ) -> crate::report::finding::Evidence {
        let kind = rf_format::api::DEPLOYMENT.newest();
        evidence_of(pos, kind, &self.namespace, &self.name, detail)
    }
}

/// One path of an Ingress: the requests for `host` (any host when empty) under `path` go to
/// Service `service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IngressPathObj {
    pub host: Str,
    pub path: Str,
    pub service: Str,
    /// Where its backend's Service name is in the Ingress, as a JSON pointer.
    pub pointer: String,
}

/// An Ingress: where its paths send requests, and its NGINX canary annotations.
#[derive(Debug, Clone)]
pub(crate) struct IngressObj {
    pub namespace: String,
    pub name: String,
    pub paths: Vec<IngressPathObj>,
    /// Every annotation (an Ingress has few): the canary ones are read under the prefix its
    /// rollout names.
    pub annotations: BTreeMap<String, String>,
    /// Who wrote it last (the record's actor, or the last manager of the main resource).
    pub actor: Option<Str>,
    /// Its class: `spec.ingressClassName`, else the `kubernetes.io/ingress.class` annotation.
    pub class: Option<Str>,
    pub pos: At,
}

impl IngressObj {
    /// Its last record, as evidence showing `detail`.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        let kind = rf_format::api::INGRESS.newest();
        evidence_of(self.pos, kind, &self.namespace, &self.name, detail)
    }

    /// Where its paths send requests: `host/path -> Service` for each.
    pub fn routes_words(&self) -> String {
        let words: Vec<String> = self
            .paths
            .iter()
            .map(|p| {
                let host = if p.host.is_empty() { "*" } else { &p.host };
                format!("{host}{} -> Service {}", p.path, p.service)
            })
            .collect();
        words.join(", ")
    }

    /// The value of annotation `prefix/key`.
    pub fn annotation(&self, prefix: &str, key: &str) -> Option<&str> {
        self.annotations
            .get(&format!("{prefix}/{key}"))
            .map(String::as_str)
    }
}

/// One `status.history[]` entry of an Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sync {
    pub revision: String,
    pub deployed_at: Timestamp,
}

/// An Argo CD Application.
#[derive(Debug, Clone)]
pub(crate) struct AppObj {
    pub namespace: String,
    pub name: String,
    pub sync: Option<Str>,
    pub health: Option<Str>,
    pub revision: Option<Str>,
    /// The last few syncs, oldest first.
    pub history: Vec<Sync>,
    /// The Rollouts it manages (`status.resources[]`): (namespace, name).
    pub rollouts: Vec<Key>,
    pub pos: At,
}

/// The record at `pos` of object `kind` `ns`/`name`, as evidence showing `detail`.
fn evidence_of(
    pos: At,
    kind: Kind,
    ns: &str,
    name: &str,
    detail: impl Into<String>,
) -> crate::report::finding::Evidence {
    crate::report::finding::Evidence::of(
        pos,
        crate::report::finding::Subject::new(kind, ns, name),
        detail,
    )
}

impl AppObj {
    /// Its last record, as evidence showing `detail`.
    pub fn evidence(&self, detail: impl Into<String>) -> crate::report::finding::Evidence {
        evidence_of(
            self.pos,
            Kind::Application,
            &self.namespace,
            &self.name,
            detail,
        )
    }

    /// True when this Application manages rollout `ns`/`name`, which names `tracked_by` as its
    /// Application: what [`World::apps_of_rollout`] answers by index (and the tests check it
    /// against).
    #[cfg(test)]
    pub fn manages(&self, ns: &str, name: &str, tracked_by: Option<&str>) -> bool {
        self.rollouts.iter().any(|(n, r)| n == ns && r == name)
            || tracked_by == Some(self.name.as_str())
    }
}

/// What a record changed in the world. One is made at most Service, EndpointSlice and Pod
/// records: its names are held inline when short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Touched {
    /// A Pod whose revision, readiness or images changed (or that appeared or went).
    Pod { namespace: Str, name: Str },
    /// A Service's selector (or the Service appeared or went).
    Service { namespace: Str },
    /// The endpoints of a Service: `service` is the Service the EndpointSlice serves now,
    /// `was` the one it served before when that differs.
    Endpoints {
        namespace: Str,
        service: Option<Str>,
        was: Option<Str>,
    },
    /// An Application.
    App { namespace: Str, name: Str },
    /// An Ingress.
    Ingress { namespace: Str, name: Str },
    /// A Deployment; `template` when its pod template changed (or it appeared with one).
    Deployment {
        namespace: Str,
        name: Str,
        template: bool,
    },
}

/// Syncs kept per Application.
const KEEP_SYNCS: usize = 8;

/// The live objects of one namespace, by name: looked up by `&str`, with no key built per lookup
/// (these run for every endpoint of every Service on every pod change).
#[derive(Debug, Default)]
pub(crate) struct Namespace {
    services: BTreeMap<String, ServiceObj>,
    slices: HashMap<String, SliceObj>,
    /// EndpointSlice names by the Service they serve.
    slices_of: HashMap<String, BTreeSet<String>>,
    pods: HashMap<String, PodObj>,
    /// Pod names by pod-template hash, so a rollout's revision is looked up without scanning
    /// every pod of the namespace.
    pods_by_hash: HashMap<String, BTreeSet<String>>,
    /// Service names by one label of their selector (key, then value): a Service selects a
    /// pod only when the pod has every label of its selector, that one among them, so the
    /// Services that may select a rollout's pods are found from their labels without a walk
    /// over every Service of the namespace.
    by_selector_label: HashMap<String, HashMap<String, BTreeSet<String>>>,
}

impl Namespace {
    /// The Services, by name.
    #[cfg(test)]
    pub fn services(&self) -> impl Iterator<Item = (&str, &ServiceObj)> + '_ {
        self.services.iter().map(|(name, s)| (name.as_str(), s))
    }

    /// True when at least one EndpointSlice of the Service is known: only then can its
    /// endpoints be judged.
    pub fn has_slices(&self, service: &str) -> bool {
        self.slices_of.contains_key(service)
    }

    /// The EndpointSlices of a Service of this namespace.
    pub fn slices_of<'a>(
        &'a self,
        service: &str,
    ) -> impl Iterator<Item = (&'a str, &'a SliceObj)> + 'a {
        self.slices_of
            .get(service)
            .into_iter()
            .flatten()
            .filter_map(move |name| Some((name.as_str(), self.slices.get(name)?)))
    }

    pub fn pod(&self, name: &str) -> Option<&PodObj> {
        self.pods.get(name)
    }

    /// The Service `name`, if recorded.
    pub fn service(&self, name: &str) -> Option<&ServiceObj> {
        self.services.get(name)
    }

    fn is_empty(&self) -> bool {
        self.services.is_empty() && self.slices.is_empty() && self.pods.is_empty()
    }

    fn len(&self) -> usize {
        self.services.len() + self.slices.len() + self.pods.len()
    }

    fn apply_service(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        if deleted {
            if let Some(old) = self.services.remove(rec.name.as_str()) {
                self.unindex_selector(&rec.name, old.selector.as_ref());
            }
        } else {
            let Parsed::Service(v) = parsed else {
                return None;
            };
            let selector = v.spec.selector;
            let old = self.services.get(rec.name.as_str());
            if old.is_some_and(|old| old.selector == selector) {
                return None;
            }
            if let Some(old) = self.services.remove(rec.name.as_str()) {
                self.unindex_selector(&rec.name, old.selector.as_ref());
            }
            self.index_selector(&rec.name, selector.as_ref());
            self.services
                .insert(rec.name.clone(), ServiceObj { selector, pos });
        }
        Some(Touched::Service {
            namespace: Str::new(&rec.namespace),
        })
    }

    /// Indexes Service `name` under one label of `selector`: the one the fewest Services are
    /// indexed under yet (the first such), so that a label every pod of the namespace has
    /// (`team: payments`) is not the one asked for when an `app` label is there.
    fn index_selector(&mut self, name: &str, selector: Option<&BTreeMap<String, String>>) {
        let indexed = |k: &str, v: &str| {
            self.by_selector_label
                .get(k)
                .and_then(|by| by.get(v))
                .map_or(0, BTreeSet::len)
        };
        let Some((k, v)) = selector
            .into_iter()
            .flatten()
            .min_by_key(|(k, v)| indexed(k, v))
        else {
            return;
        };
        self.by_selector_label
            .entry(k.clone())
            .or_default()
            .entry(v.clone())
            .or_default()
            .insert(name.to_owned());
    }

    /// Drops Service `name` from the index, under whichever label of `selector` it was.
    fn unindex_selector(&mut self, name: &str, selector: Option<&BTreeMap<String, String>>) {
        for (k, v) in selector.into_iter().flatten() {
            let Some(by_value) = self.by_selector_label.get_mut(k.as_str()) else {
                continue;
            };
            if let Some(names) = by_value.get_mut(v.as_str()) {
                names.remove(name);
                if names.is_empty() {
                    by_value.remove(v.as_str());
                }
            }
            if by_value.is_empty() {
                self.by_selector_label.remove(k.as_str());
            }
        }
    }

    /// The names of the Services named in `named` and of those whose selector holds one of the
    /// pod labels in `labels`, in name order: the Services that may route to a rollout, found
    /// through its names and its pods' labels rather than by asking every Service of the
    /// namespace (a namespace of many rollouts has as many Services, and this runs at every
    /// look).
    pub fn services_for<'a, 'l>(
        &'a self,
        named: [Option<&str>; 2],
        labels: impl Iterator<Item = &'l BTreeMap<String, String>>,
    ) -> BTreeSet<&'a str> {
        let mut names: BTreeSet<&'a str> = BTreeSet::new();
        for name in named.into_iter().flatten() {
            if let Some((name, _)) = self.services.get_key_value(name) {
                names.insert(name.as_str());
            }
        }
        if !self.by_selector_label.is_empty() {
            for pod_labels in labels {
                for (k, v) in pod_labels {
                    if let Some(found) = self
                        .by_selector_label
                        .get(k.as_str())
                        .and_then(|by| by.get(v.as_str()))
                    {
                        names.extend(found.iter().map(String::as_str));
                    }
                }
            }
        }
        names
    }

    fn apply_slice(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let old = self.slices.remove(rec.name.as_str());
        if let Some(old) = &old {
            unindex(&mut self.slices_of, &old.service, &rec.name);
        }
        let mut now_serves: Option<Str> = None;
        if !deleted {
            let Parsed::Slice(v) = parsed else {
                return None;
            };
            if let Some(service) = v.service().map(str::to_owned) {
                let endpoints = v
                    .endpoints
                    .unwrap_or_default()
                    .into_iter()
                    .map(|e| EndpointObj {
                        pod: e
                            .target_ref
                            .filter(|t| t.kind == "Pod" && !t.name.is_empty())
                            .map(|t| t.name),
                        address: e.addresses.into_iter().next().unwrap_or_default(),
                        ready: e.conditions.ready.unwrap_or(true),
                    })
                    .collect();
                index(&mut self.slices_of, &service, &rec.name);
                let unchanged = old
                    .as_ref()
                    .is_some_and(|o| o.service == service && o.endpoints == endpoints);
                now_serves = Some(Str::new(&service));
                self.slices.insert(
                    rec.name.clone(),
                    SliceObj {
                        service,
                        endpoints,
                        pos,
                    },
                );
                if unchanged {
                    return None;
                }
            }
        }
        let was = old
            .map(|o| o.service)
            .filter(|o| now_serves.as_deref() != Some(o.as_str()))
            .map(|o| Str::new(&o));
        Some(Touched::Endpoints {
            namespace: Str::new(&rec.namespace),
            service: now_serves,
            was,
        })
    }

    fn apply_pod(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        if deleted {
            if let Some(h) = self.pods.remove(rec.name.as_str()).and_then(|p| p.hash) {
                unindex(&mut self.pods_by_hash, &h, &rec.name);
            }
        } else {
            let Parsed::Pod(mut v) = parsed else {
                return None;
            };
            let (ready, since) = v.ready();
            let terminating = v.metadata.deletion_timestamp.is_some();
            let ready = ready && !terminating;
            let old = self.pods.get(rec.name.as_str());
            let ready_since = match old {
                Some(o) if o.ready && ready => o.ready_since,
                _ if ready => Some(
                    since
                        .and_then(parse_rfc3339)
                        .map_or(pos.at, |t| t.min(pos.at)),
                ),
                _ => None,
            };
            // The view is this record's own: its names and images move, not copied.
            let statuses = std::mem::take(&mut v.status.container_statuses);
            let images: Vec<PodImage> = std::mem::take(&mut v.spec.init_containers)
                .into_iter()
                .chain(std::mem::take(&mut v.spec.containers))
                .map(|c| PodImage {
                    digest: statuses
                        .iter()
                        .find(|s| s.name == c.name)
                        .and_then(|s| digest_of(&s.image_id)),
                    container: c.name,
                    image: c.image,
                })
                .collect();
            let hash = v.metadata.labels.remove(HASH_LABEL);
            let owner = v.owner_replicaset().map(Str::new);
            // Indexed by hash once, not again on every record of the pod.
            let old_hash = old.and_then(|o| o.hash.as_deref());
            if old_hash != hash.as_deref() {
                if let Some(h) = old_hash {
                    unindex(&mut self.pods_by_hash, h, &rec.name);
                }
                if let Some(h) = &hash {
                    index(&mut self.pods_by_hash, h, &rec.name);
                }
            }
            let unchanged = old.is_some_and(|o| {
                o.ready == ready && o.hash == hash && o.images == images && o.owner == owner
            });
            let pod = PodObj {
                hash,
                owner,
                ready,
                ready_since,
                images,
                pos,
            };
            match self.pods.get_mut(rec.name.as_str()) {
                Some(old) => *old = pod,
                None => {
                    self.pods.insert(rec.name.clone(), pod);
                }
            }
            if unchanged {
                return None;
            }
        }
        Some(Touched::Pod {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        })
    }
}

/// Removes `name` from the set under `key`, and the set once empty.
fn unindex(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    if let Some(set) = index.get_mut(key) {
        set.remove(name);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

/// Adds `name` to the set under `key`.
fn index(index: &mut HashMap<String, BTreeSet<String>>, key: &str, name: &str) {
    let set = match index.get_mut(key) {
        Some(set) => set,
        None => index.entry(key.to_owned()).or_default(),
    };
    if !set.contains(name) {
        set.insert(name.to_owned());
    }
}

/// The live objects of the kinds the cross-object detectors read.
#[derive(Debug, Default)]
pub(crate) struct World {
    namespaces: HashMap<String, Namespace>,
    apps: BTreeMap<Key, AppObj>,
    /// The Applications that list each Rollout in `status.resources`, by the Rollout's
    /// namespace and name: [`apps_of`](World::apps_of) runs for every change around a rollout
    /// that an Application manages, and scanning every Application's resources there made
    /// `analyze` of a recording with Argo CD 60% slower.
    listing: HashMap<String, HashMap<String, BTreeSet<Key>>>,
    /// The Applications by name (a Rollout's tracking id names its Application, not the
    /// Application's namespace).
    named: HashMap<String, BTreeSet<Key>>,
    deployments: BTreeMap<Key, DeploymentObj>,
    ingresses: BTreeMap<Key, IngressObj>,
}

/// The digest part of an `imageID` (`docker-pullable://repo@sha256:...`, `repo@sha256:...`,
/// or a bare `sha256:...`).
fn digest_of(image_id: &str) -> Option<String> {
    let d = image_id.rsplit('@').next().unwrap_or(image_id);
    let d = d.strip_prefix("docker://").unwrap_or(d);
    d.starts_with("sha256:").then(|| d.to_owned())
}

impl World {
    /// Applies one record of a Service, EndpointSlice, Pod or Application, its object parsed
    /// (nothing for a deletion). Returns what changed.
    pub fn apply(&mut self, rec: &Record, parsed: Parsed, pos: At) -> Option<Touched> {
        let deleted = matches!(rec.op, Op::Deleted { .. });
        match rec.kind {
            Kind::Service | Kind::EndpointSlice | Kind::Pod => {
                let ns = match self.namespaces.get_mut(rec.namespace.as_str()) {
                    Some(ns) => ns,
                    None => self.namespaces.entry(rec.namespace.clone()).or_default(),
                };
                let touched = match rec.kind {
                    Kind::Service => ns.apply_service(rec, parsed, pos, deleted),
                    Kind::EndpointSlice => ns.apply_slice(rec, parsed, pos, deleted),
                    _ => ns.apply_pod(rec, parsed, pos, deleted),
                };
                if ns.is_empty() {
                    self.namespaces.remove(rec.namespace.as_str());
                }
                touched
            }
            Kind::Application => self.apply_app(rec, parsed, pos, deleted),
            _ if rf_format::api::DEPLOYMENT.is(&rec.kind) => {
                self.apply_deployment(rec, parsed, pos, deleted)
            }
            _ if rf_format::api::INGRESS.is(&rec.kind) => {
                self.apply_ingress(rec, parsed, pos, deleted)
            }
            _ => None,
        }
    }

    fn apply_deployment(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        let touched = |template| Touched::Deployment {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
            template,
        };
        let (false, Parsed::Deployment(mut v)) = (deleted, parsed) else {
            // Deleted, or unreadable: it no longer counts.
            return self.deployments.remove(&key).map(|_| touched(false));
        };
        let replicas = v.spec.replicas.unwrap_or(1);
        let ready = v.status.ready_replicas.unwrap_or(0);
        let text = v.spec.template.as_ref().and_then(|t| t.get(&rec.object));
        let actor = rec
            .actor
            .as_deref()
            .map(Str::new)
            .or_else(|| v.metadata.take_last_manager(false));
        let obj = match self.deployments.get_mut(&key) {
            Some(obj) => obj,
            None => self.deployments.entry(key).or_insert(DeploymentObj {
                namespace: rec.namespace.clone(),
                name: rec.name.clone(),
                replicas,
                ready: 0,
                generation: None,
                template: None,
                scaled_up: None,
                scaled_down: None,
                scale_ups: 0,
                actor: None,
                pos,
            }),
        };
        if replicas != obj.replicas {
            let scale = Scale {
                pos,
                from: obj.replicas,
                to: replicas,
                actor: actor.clone(),
            };
            if obj.replicas == 0 {
                obj.scale_ups += 1;
                obj.scaled_up = Some(scale);
            } else if replicas == 0 {
                obj.scaled_down = Some(scale);
            }
        }
        obj.replicas = replicas;
        obj.ready = ready;
        obj.actor = actor;
        obj.generation = v.metadata.generation;
        obj.pos = pos;
        let changed = text.is_some_and(|t| obj.template.as_deref() != Some(t));
        if changed {
            obj.template = text.map(std::sync::Arc::from);
        }
        Some(touched(changed))
    }

    fn apply_ingress(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        let touched = Touched::Ingress {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        };
        let (false, Parsed::Ingress(mut v)) = (deleted, parsed) else {
            // Deleted, or unreadable: it no longer counts.
            return self.ingresses.remove(&key).map(|_| touched);
        };
        let service =
            |b: &crate::input::view::IngressBackend| b.service.as_ref().map(|s| s.name.clone());
        let mut paths = Vec::new();
        if let Some(svc) = v.spec.default_backend.as_ref().and_then(service) {
            paths.push(IngressPathObj {
                host: Str::default(),
                path: Str::default(),
                service: svc,
                pointer: "/spec/defaultBackend/service/name".to_owned(),
            });
        }
        for (r, rule) in v.spec.rules.iter().flatten().enumerate() {
            let host = rule.host.clone().unwrap_or_default();
            for (i, p) in rule.http.iter().flat_map(|h| &h.paths).enumerate() {
                if let Some(svc) = service(&p.backend) {
                    paths.push(IngressPathObj {
                        host: host.clone(),
                        path: p.path.clone().unwrap_or_default(),
                        service: svc,
                        pointer: format!("/spec/rules/{r}/http/paths/{i}/backend/service/name"),
                    });
                }
            }
        }
        let actor = rec.actor.as_deref().map(Str::new).or_else(|| {
            v.metadata
                .managed_fields
                .main
                .take()
                .map(|(_, m)| m)
                .filter(|m| !m.is_empty())
        });
        let class = v.spec.ingress_class_name.clone().or_else(|| {
            v.metadata
                .annotations
                .get("kubernetes.io/ingress.class")
                .map(|c| Str::new(c))
        });
        self.ingresses.insert(
            key,
            IngressObj {
                class,
                namespace: rec.namespace.clone(),
                name: rec.name.clone(),
                paths,
                annotations: std::mem::take(&mut v.metadata.annotations),
                actor,
                pos,
            },
        );
        Some(touched)
    }

    /// The Ingresses of namespace `ns`, by name.
    pub fn ingresses_in<'a>(&'a self, ns: &'a str) -> impl Iterator<Item = &'a IngressObj> + 'a {
        self.ingresses
            .range((ns.to_owned(), String::new())..)
            .take_while(move |((n, _), _)| n == ns)
            .map(|(_, i)| i)
    }

    /// Ingress `ns`/`name`, if it is live.
    pub fn ingress(&self, ns: &str, name: &str) -> Option<&IngressObj> {
        self.ingresses.get(&(ns.to_owned(), name.to_owned()))
    }

    /// Deployment `ns`/`name`, if it is live.
    pub fn deployment(&self, ns: &str, name: &str) -> Option<&DeploymentObj> {
        self.deployments.get(&(ns.to_owned(), name.to_owned()))
    }

    fn apply_app(
        &mut self,
        rec: &Record,
        parsed: Parsed,
        pos: At,
        deleted: bool,
    ) -> Option<Touched> {
        let key = (rec.namespace.clone(), rec.name.clone());
        if deleted {
            self.unindex_app(&key);
            self.apps.remove(&key);
        } else {
            let Parsed::App(v) = parsed else {
                self.unindex_app(&key);
                return None;
            };
            let mut history: Vec<Sync> = v
                .status
                .history
                .iter()
                .filter_map(|h| {
                    Some(Sync {
                        revision: h.revision()?,
                        deployed_at: h.deployed_at.as_deref().and_then(parse_rfc3339)?,
                    })
                })
                .collect();
            history.sort_by_key(|h| h.deployed_at);
            if history.len() > KEEP_SYNCS {
                history.drain(..history.len() - KEEP_SYNCS);
            }
            let rollouts: Vec<Key> = v
                .status
                .resources
                .iter()
                .filter(|r| r.kind == "Rollout")
                .map(|r| (r.namespace.to_string(), r.name.to_string()))
                .collect();
            // Argo CD rewrites an Application's status at every refresh; the rollouts it lists
            // rarely change, and only then is it indexed again.
            if self
                .apps
                .get(&key)
                .is_none_or(|old| old.rollouts != rollouts)
            {
                self.unindex_app(&key);
                for (ns, name) in &rollouts {
                    self.listing
                        .entry(ns.clone())
                        .or_default()
                        .entry(name.clone())
                        .or_default()
                        .insert(key.clone());
                }
                self.named
                    .entry(rec.name.clone())
                    .or_default()
                    .insert(key.clone());
            }
            self.apps.insert(
                key,
                AppObj {
                    namespace: rec.namespace.clone(),
                    name: rec.name.clone(),
                    sync: v.status.sync.status,
                    health: v.status.health.status,
                    revision: v.status.sync.revision,
                    history,
                    rollouts,
                    pos,
                },
            );
        }
        Some(Touched::App {
            namespace: Str::new(&rec.namespace),
            name: Str::new(&rec.name),
        })
    }

    /// The objects of namespace `ns`, when it has any: looked up once for many questions.
    pub fn namespace(&self, ns: &str) -> Option<&Namespace> {
        self.namespaces.get(ns)
    }

    /// The Services of a namespace, by name.
    #[cfg(test)]
    pub fn services_in<'a>(
        &'a self,
        ns: &str,
    ) -> impl Iterator<Item = (&'a str, &'a ServiceObj)> + 'a {
        self.namespaces
            .get(ns)
            .into_iter()
            .flat_map(Namespace::services)
    }

    /// The EndpointSlices of a Service.
    pub fn slices_of<'a>(
        &'a self,
        ns: &str,
        service: &str,
    ) -> impl Iterator<Item = (&'a str, &'a SliceObj)> + 'a {
        self.namespaces
            .get(ns)
            .map(|n| n.slices_of(service))
            .into_iter()
            .flatten()
    }

    pub fn pod(&self, ns: &str, name: &str) -> Option<&PodObj> {
        self.namespaces.get(ns)?.pod(name)
    }

    /// The pods of the namespace labelled with pod-template hash `hash`.
    pub fn pods_of_hash<'a>(
        &'a self,
        ns: &str,
        hash: &str,
    ) -> impl Iterator<Item = (&'a str, &'a PodObj)> + 'a {
        let ns = self.namespaces.get(ns);
        ns.and_then(|n| n.pods_by_hash.get(hash))
            .into_iter()
            .flatten()
            .filter_map(move |name| {
                let pod = ns?.pods.get(name)?;
                Some((name.as_str(), pod))
            })
    }

    /// True when a pod of the namespace is labelled with pod-template hash `hash`.
    pub fn has_pods_of_hash(&self, ns: &str, hash: &str) -> bool {
        self.namespaces
            .get(ns)
            .is_some_and(|n| n.pods_by_hash.contains_key(hash))
    }

    /// Drops the Application `key` (if known) from the indexes of the Applications.
    fn unindex_app(&mut self, key: &Key) {
        let Some(old) = self.apps.get(key) else {
            return;
        };
        for (ns, name) in &old.rollouts {
            if let Some(by_name) = self.listing.get_mut(ns) {
                if let Some(keys) = by_name.get_mut(name) {
                    keys.remove(key);
                    if keys.is_empty() {
                        by_name.remove(name);
                    }
                }
                if by_name.is_empty() {
                    self.listing.remove(ns);
                }
            }
        }
        if let Some(keys) = self.named.get_mut(&key.1) {
            keys.remove(key);
            if keys.is_empty() {
                self.named.remove(&key.1);
            }
        }
    }

    pub fn app(&self, ns: &str, name: &str) -> Option<&AppObj> {
        self.apps.get(&(ns.to_owned(), name.to_owned()))
    }

    /// The Applications that manage rollout `ns`/`name` (the Rollouts of their
    /// `status.resources[]`) or that it names as its own (`tracked_by`, its tracking id or
    /// instance label), by namespace and name.
    pub fn apps_of_rollout<'a>(
        &'a self,
        ns: &str,
        name: &str,
        tracked_by: Option<&str>,
    ) -> impl Iterator<Item = &'a AppObj> + 'a {
        // Most recordings hold no Application: no lookup by the rollout's names then (this
        // runs at every look).
        let any = !self.apps.is_empty();
        let listing = any
            .then(|| self.listing.get(ns))
            .flatten()
            .and_then(|by_name| by_name.get(name));
        let named = tracked_by
            .filter(|_| any)
            .and_then(|app| self.named.get(app));
        let mut keys: Vec<&Key> = listing.into_iter().chain(named).flatten().collect();
        keys.sort_unstable();
        keys.dedup();
        keys.into_iter().filter_map(|key| self.apps.get(key))
    }

    /// Objects held, all kinds.
    pub fn len(&self) -> usize {
        self.namespaces.values().map(Namespace::len).sum::<usize>()
            + self.apps.len()
            + self.deployments.len()
            + self.ingresses.len()
    }
}

/// True when `selector` (non-empty) selects pods with `labels`.
pub(crate) fn selects(
    selector: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::view::ReplicaSetView;
    use crate::model::rollout::RolloutTrack;
    use crate::model::traffic::{
        Route, has_revision, membership, of_revision, revision, route, serves_revision,
    };

    fn track_with(replicasets: &[(&str, Option<&str>)]) -> RolloutTrack {
        let mut track = RolloutTrack::new("ns", "r", false);
        for (i, (name, hash)) in replicasets.iter().enumerate() {
            let mut labels = serde_json::Map::new();
            if let Some(h) = hash {
                labels.insert(HASH_LABEL.to_owned(), (*h).into());
            }
            let view: ReplicaSetView = serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": labels,
                    "ownerReferences": [{"kind": "Rollout", "name": "r", "uid": "u"}]},
                "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}}
            }))
            .unwrap_or_default();
            let pos = At {
                file: 0,
                seq: i as u64,
                at: Timestamp(0),
            };
            track.observe_replicaset(&view, &[], pos, false, true);
        }
        track
    }

    #[test]
    fn serves_revision_says_what_membership_says() {
        // Rollout `r` with revisions h1 and h2 (ReplicaSets r-h1, r-h2); pods named after
        // them or not, labelled with their hash or another or none, owned or not; endpoints in
        // every order, ready or not, across two slices.
        let track = track_with(&[("r-h1", Some("h1")), ("r-h2", Some("h2"))]);
        let pods: [(&str, Option<&str>, Option<&str>); 7] = [
            ("r-h1-a", Some("h1"), Some("r-h1")),
            ("r-h2-b", Some("h2"), Some("r-h2")),
            ("r-h2-c", Some("h1"), Some("r-h1")),
            ("other", Some("h2"), None),
            ("r-h1-d", None, Some("r-h2")),
            ("x-h2-e", None, None),
            ("r-h2-f", Some("h9"), None),
        ];
        let at = At {
            file: 0,
            seq: 0,
            at: Timestamp(0),
        };
        let mut rng = rf_scenarios::SplitMix::new(3);
        let (mut served, mut cases) = (0, 0);
        for _ in 0..2000 {
            let mut ns = Namespace::default();
            for (name, hash, owner) in pods {
                if rng.below(4) > 0 {
                    ns.pods.insert(
                        name.to_owned(),
                        PodObj {
                            hash: hash.map(Str::new),
                            owner: owner.map(Str::new),
                            ready: true,
                            ready_since: None,
                            images: Vec::new(),
                            pos: at,
                        },
                    );
                }
            }
            for slice in ["s1", "s2"] {
                let endpoints = (0..rng.below(5))
                    .map(|_| EndpointObj {
                        pod: (rng.below(8) > 0).then(|| Str::new(pods[rng.below(pods.len())].0)),
                        address: Str::new("10.0.0.1"),
                        ready: rng.below(3) > 0,
                    })
                    .collect();
                ns.slices.insert(
                    slice.to_owned(),
                    SliceObj {
                        service: "svc".to_owned(),
                        endpoints,
                        pos: at,
                    },
                );
                index(&mut ns.slices_of, "svc", slice);
            }
            let mut world = World::default();
            world.namespaces.insert("ns".to_owned(), ns);
            let by = membership(&world, &track, "svc");
            for hash in ["h1", "h2", "h9"] {
                let want = by.get(hash).is_some_and(|pods| !pods.is_empty());
                assert_eq!(
                    serves_revision(&world, &track, "svc", hash),
                    want,
                    "{hash} {by:?}"
                );
                served += usize::from(want);
                cases += 1;
            }
        }
        assert!(
            served > cases / 5 && served < cases * 4 / 5,
            "{served} of {cases}"
        );
    }

    /// Applies a record of `kind` `ns/name` holding `object`, or its deletion (`None`).
    fn apply_object(
        world: &mut World,
        seq: u64,
        kind: Kind,
        (ns, name): (&str, &str),
        object: Option<serde_json::Value>,
    ) {
        let rec = Record {
            seq,
            observed_at: Timestamp(0),
            kind,
            op: if object.is_some() {
                Op::Modified
            } else {
                Op::Deleted { inferred: false }
            },
            namespace: ns.into(),
            name: name.into(),
            uid: String::new(),
            resource_version: seq.to_string(),
            actor: None,
            object: object
                .map(|o| serde_json::to_vec(&o).unwrap_or_default())
                .unwrap_or_default(),
        };
        let parsed = crate::Prepared::of(&rec).0;
        let pos = At {
            file: 0,
            seq,
            at: Timestamp(0),
        };
        world.apply(&rec, parsed, pos);
    }

    /// Applies a Service record of namespace `ns` with `selector` (`None`: no selector);
    /// `deleted` deletes it.
    fn service(
        world: &mut World,
        seq: u64,
        name: &str,
        selector: Option<&[(&str, &str)]>,
        deleted: bool,
    ) {
        let mut spec = serde_json::Map::new();
        if let Some(sel) = selector {
            let sel: serde_json::Map<String, serde_json::Value> = sel
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).into()))
                .collect();
            spec.insert("selector".to_owned(), sel.into());
        }
        let object =
            serde_json::json!({"metadata": {"name": name, "namespace": "ns"}, "spec": spec});
        apply_object(
            world,
            seq,
            Kind::Service,
            ("ns", name),
            (!deleted).then_some(object),
        );
    }

    #[test]
    fn the_services_routing_to_a_rollout_are_the_ones_a_walk_over_every_service_finds() {
        // Services come, change selector and go, with selectors drawn from labels the
        // rollout's pods have and do not have (a label all share, its own `app`, another
        // rollout's, a revision's hash), none, or no selector at all; the rollout names some
        // of them as its canary or stable Service, and its ReplicaSets come and go.
        const LABELS: [(&str, &str); 6] = [
            ("team", "pay"),
            ("app", "r"),
            ("app", "s"),
            (HASH_LABEL, "h1"),
            (HASH_LABEL, "h2"),
            ("tier", "web"),
        ];
        let replicaset = |name: &str, hash: &str, tier: bool| -> ReplicaSetView {
            let mut labels = serde_json::json!({"team": "pay", "app": "r", HASH_LABEL: hash});
            if tier {
                labels["tier"] = "web".into();
            }
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": labels,
                    "ownerReferences": [{"kind": "Rollout", "name": "r", "uid": "u"}]},
                "spec": {"replicas": 1, "template": {"metadata": {"labels": labels}}}
            }))
            .unwrap_or_default()
        };
        let mut rng = rf_scenarios::SplitMix::new(11);
        let mut world = World::default();
        let mut track = RolloutTrack::new("ns", "r", false);
        let (mut routed, mut looks) = (0, 0);
        for seq in 0..3000u64 {
            let name = ["a", "b", "c", "d", "e", "f", "g"][rng.below(7)];
            match rng.below(10) {
                0 => service(&mut world, seq, name, None, true),
                1 => service(&mut world, seq, name, None, false),
                2 => {
                    let (rs, hash) = [("r-h1", "h1"), ("r-h2", "h2")][rng.below(2)];
                    let pos = At {
                        file: 0,
                        seq,
                        at: Timestamp(0),
                    };
                    let view = replicaset(rs, hash, rng.below(2) == 0);
                    track.observe_replicaset(&view, &[], pos, rng.below(3) == 0, false);
                }
                3 => {
                    let pick = |rng: &mut rf_scenarios::SplitMix| {
                        (rng.below(3) > 0).then(|| ["a", "b", "h"][rng.below(3)].to_owned())
                    };
                    track.canary_service = pick(&mut rng);
                    track.stable_service = pick(&mut rng);
                }
                _ => {
                    let selector: Vec<(&str, &str)> = (0..rng.below(4))
                        .map(|_| LABELS[rng.below(LABELS.len())])
                        .collect::<BTreeMap<_, _>>()
                        .into_iter()
                        .collect();
                    service(&mut world, seq, name, Some(&selector), false);
                }
            }
            let walk: Vec<(&str, Route)> = world
                .services_in("ns")
                .filter_map(|(name, svc)| Some((name, route(&track, name, svc)?)))
                .collect();
            let found: Vec<(&str, Route)> = world
                .routing(&track)
                .into_iter()
                .map(|(name, _, why)| (name, why))
                .collect();
            assert_eq!(found, walk, "at {seq}");
            routed += walk.len();
            looks += 1;
        }
        assert!(
            routed > looks && routed < looks * 5,
            "{routed} Services routed over {looks} looks"
        );
    }

    /// Applies an Application record listing `rollouts` (namespace, name); `None` deletes it.
    fn app(world: &mut World, seq: u64, ns: &str, name: &str, rollouts: Option<&[(&str, &str)]>) {
        let resources: Vec<serde_json::Value> = rollouts
            .unwrap_or_default()
            .iter()
            .map(|(ns, n)| serde_json::json!({"kind": "Rollout", "namespace": ns, "name": n}))
            .collect();
        let object = serde_json::json!({"metadata": {"name": name, "namespace": ns},
            "status": {"resources": resources}});
        apply_object(
            world,
            seq,
            Kind::Application,
            (ns, name),
            rollouts.map(|_| object),
        );
    }

    #[test]
    fn the_apps_of_a_rollout_are_the_apps_that_manage_it() {
        let mut world = World::default();
        let mut tracked = RolloutTrack::new("team", "r", false);
        tracked.tracked_by = Some("by-id".into());
        let tracks = [
            RolloutTrack::new("team", "r", false),
            tracked,
            RolloutTrack::new("team", "s", false),
        ];
        let check = |world: &World, step: &str, want: &[&[&str]]| {
            for (track, want) in tracks.iter().zip(want) {
                let got: Vec<&str> = world.apps_of(track).map(|a| a.name.as_str()).collect();
                let scan: Vec<&str> = world
                    .apps
                    .values()
                    .filter(|a| {
                        a.manages(&track.namespace, &track.name, track.tracked_by.as_deref())
                    })
                    .map(|a| a.name.as_str())
                    .collect();
                assert_eq!(got, scan, "{step}: {}", track.name);
                assert_eq!(got, *want, "{step}: {}", track.name);
            }
        };
        app(&mut world, 1, "argocd", "one", Some(&[("team", "r")]));
        app(
            &mut world,
            2,
            "argocd",
            "both",
            Some(&[("team", "s"), ("team", "r")]),
        );
        app(&mut world, 3, "other", "by-id", Some(&[]));
        app(
            &mut world,
            4,
            "argocd",
            "elsewhere",
            Some(&[("team2", "r")]),
        );
        check(
            &world,
            "listed",
            &[&["both", "one"], &["both", "one", "by-id"], &["both"]],
        );
        // An Application that stops listing a Rollout no longer manages it.
        app(&mut world, 5, "argocd", "one", Some(&[("team", "s")]));
        check(
            &world,
            "relisted",
            &[&["both"], &["both", "by-id"], &["both", "one"]],
        );
        // A status refresh that lists the same rollouts: indexed as it was.
        app(&mut world, 5, "argocd", "one", Some(&[("team", "s")]));
        app(
            &mut world,
            5,
            "argocd",
            "both",
            Some(&[("team", "s"), ("team", "r")]),
        );
        check(
            &world,
            "refreshed",
            &[&["both"], &["both", "by-id"], &["both", "one"]],
        );
        // Listing a rollout and naming it by tracking id: once.
        app(&mut world, 6, "other", "by-id", Some(&[("team", "r")]));
        check(
            &world,
            "both ways",
            &[&["both", "by-id"], &["both", "by-id"], &["both", "one"]],
        );
        app(&mut world, 7, "argocd", "both", None);
        app(&mut world, 8, "other", "by-id", None);
        check(&world, "deleted", &[&[], &[], &["one"]]);
        app(&mut world, 9, "argocd", "one", None);
        app(&mut world, 10, "argocd", "elsewhere", None);
        assert!(
            world.listing.is_empty() && world.named.is_empty(),
            "{world:?}"
        );
    }

    #[test]
    fn of_revision_says_what_revision_says() {
        let tracks = [
            track_with(&[("r-h1", Some("h1")), ("r-h2", Some("h2")), ("r-x", None)]),
            track_with(&[("r-h2", Some("h2"))]),
            track_with(&[]),
        ];
        assert!(has_revision(&tracks[0], "h1"), "the fixture has revisions");
        let hashes = [None, Some("h1"), Some("h2"), Some("h3")];
        let owners = [None, Some("r-h1"), Some("r-h2"), Some("r-x"), Some("gone")];
        let names = ["r-h1-abc", "r-h2-x", "r-h2-x-y", "other", "r-x-q"];
        let mut cases = 0;
        let mut true_cases = 0;
        for track in &tracks {
            for name in names {
                for with_pod in [false, true] {
                    for label in hashes {
                        for owner in owners {
                            let pod = PodObj {
                                hash: label.map(Str::new),
                                owner: owner.map(Str::new),
                                ready: true,
                                ready_since: None,
                                images: Vec::new(),
                                pos: At {
                                    file: 0,
                                    seq: 0,
                                    at: Timestamp(0),
                                },
                            };
                            let pod = with_pod.then_some(&pod);
                            for hash in ["h1", "h2", "h3"] {
                                let want = revision(track, name, pod) == Some(hash);
                                let got =
                                    of_revision(track, name, pod, hash, has_revision(track, hash));
                                assert_eq!(
                                    got,
                                    want,
                                    "pod {name} {pod:?}, hash {hash}, replicasets {:?}",
                                    track.replicasets.keys().collect::<Vec<_>>()
                                );
                                cases += 1;
                                true_cases += usize::from(want);
                            }
                        }
                    }
                }
            }
        }
        assert!(
            true_cases > 20 && true_cases < cases / 2,
            "{true_cases} of {cases}"
        );
    }
}
