//! The Argo CD Application that manages the Rollout and the Services: every render is one of its
//! automated syncs, and its health follows the Rollout's, as Argo CD's Rollout health check
//! computes it, 2 s later (a refresh triggered by the Rollout's change).

use rf_format::{Kind, Op};
use serde_json::{Value, json};

use crate::calendar::rfc3339;
use crate::hash::{git_sha, uid};
use crate::objects::{ManagedField, Meta, ROLLOUT_API, Rollout, manager};
use crate::sim::Sim;
use crate::status::reason;

/// The annotation Argo CD's annotation-based resource tracking puts on what it manages.
pub(crate) const TRACKING_ID: &str = "argocd.argoproj.io/tracking-id";

/// The namespace of Argo CD and its Applications.
pub(crate) const ARGOCD_NAMESPACE: &str = "argocd";

const REPO_URL: &str = "https://git.example.com/payments/deploy.git";

/// The values repository of a two-source Application (`ref: values`).
const VALUES_URL: &str = "https://git.example.com/payments/values.git";

/// Entries Argo CD keeps in `status.history` (`spec.revisionHistoryLimit` default).
const HISTORY_LIMIT: usize = 10;

/// Seconds after a change of the Rollout's health until the Application shows it.
const HEALTH_LAG: i64 = 2;

/// What a two-source Application deploys: its chart (with the image in the chart source's Helm
/// parameters, which the pipeline sets) and its values repository (`ref: values`, which holds
/// everything else the chart renders), as seed 000's Application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Sources {
    /// The chart repository's revision, then the values repository's.
    pub revisions: [String; 2],
    /// `spec.sources[0].helm.parameters`, in order.
    pub parameters: Vec<(String, String)>,
}

impl Sources {
    fn to_value(&self, app: &str) -> Value {
        let parameters: Vec<Value> = self
            .parameters
            .iter()
            .map(|(name, value)| json!({ "name": name, "value": value }))
            .collect();
        json!([
            {
                "repoURL": REPO_URL,
                "path": format!("charts/{app}"),
                "targetRevision": "main",
                "helm": {
                    "valueFiles": [format!("$values/{app}/values.yaml"), format!("$values/{app}/values-prod.yaml")],
                    "parameters": parameters,
                },
            },
            { "repoURL": VALUES_URL, "targetRevision": "main", "ref": "values" },
        ])
    }
}

/// The Helm parameters a pipeline sets for `image` (`repo:tag@sha256:digest`): its tag and its
/// digest.
pub(crate) fn image_parameters(image: &str) -> Vec<(String, String)> {
    let (reference, digest) = image.split_once('@').unwrap_or((image, ""));
    let name_end = reference.rfind('/').map_or(0, |i| i + 1);
    let tag = reference[name_end..]
        .split_once(':')
        .map_or("latest", |(_, tag)| tag);
    let mut parameters = vec![("image.tag".to_owned(), tag.to_owned())];
    if !digest.is_empty() {
        parameters.push(("image.digest".to_owned(), digest.to_owned()));
    }
    parameters
}

/// One entry of `status.history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryEntry {
    pub id: u32,
    pub revision: String,
    /// What a two-source Application deployed (`revisions` and `sources`, no `revision`).
    pub sources: Option<Sources>,
    pub started: i64,
    pub deployed: i64,
}

/// `status.operationState` of the last sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Operation {
    pub revision: String,
    /// What a two-source Application's sync deploys.
    pub sources: Option<Sources>,
    pub started: i64,
    /// `None` while it runs.
    pub finished: Option<i64>,
}

/// An `argoproj.io/v1alpha1` Application.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Application {
    pub meta: Meta,
    pub app: String,
    pub destination: String,
    pub synced: bool,
    pub revision: String,
    /// Health of the Rollout (and so of the Application: the Services are Healthy) and why.
    pub health: (&'static str, String),
    pub operation: Operation,
    pub history: Vec<HistoryEntry>,
    /// With two sources: what `spec.sources` says now.
    pub sources: Option<Sources>,
    /// Renders so far (with two sources, commits to the values repository): numbers the git
    /// commits.
    pub commits: u32,
    pub reconciled: i64,
    /// The Services it manages, by name.
    pub services: Vec<String>,
    pub images: Vec<String>,
}

impl Application {
    fn source(&self) -> Value {
        json!({
            "repoURL": REPO_URL,
            "path": format!("charts/{}", self.app),
            "targetRevision": "main",
            "helm": { "valueFiles": ["values.yaml", "values-prod.yaml"] },
        })
    }

    fn resources(&self, rollout_name: &str) -> Vec<Value> {
        let ns = &self.destination;
        let mut resources: Vec<Value> = self
            .services
            .iter()
            .map(|s| {
                json!({
                    "version": "v1", "kind": "Service", "namespace": ns, "name": s,
                    "status": "Synced", "health": { "status": "Healthy" },
                })
            })
            .collect();
        let mut health = json!({ "status": self.health.0 });
        if !self.health.1.is_empty() {
            health["message"] = json!(self.health.1);
        }
        resources.push(json!({
            "group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout",
            "namespace": ns, "name": rollout_name, "status": "Synced", "health": health,
        }));
        resources
    }

    /// `revision` and `source` of a one-source Application; `revisions`, `sources` and an empty
    /// `source` of a two-source one (as Argo CD writes them in `history`, `syncResult` and
    /// `sync`).
    fn deployed(
        &self,
        revision: &str,
        sources: Option<&Sources>,
    ) -> serde_json::Map<String, Value> {
        let mut fields = serde_json::Map::new();
        match sources {
            Some(s) => {
                fields.insert("revisions".to_owned(), json!(s.revisions));
                fields.insert("source".to_owned(), json!({ "repoURL": "" }));
                fields.insert("sources".to_owned(), s.to_value(&self.app));
            }
            None => {
                fields.insert("revision".to_owned(), json!(revision));
                fields.insert("source".to_owned(), self.source());
            }
        }
        fields
    }

    pub(crate) fn to_value(&self, rollout_name: &str) -> Value {
        let source = self.source();
        let destination = json!({
            "server": "https://kubernetes.default.svc",
            "namespace": self.destination,
        });
        let op = &self.operation;
        let mut sync = match &op.sources {
            Some(s) => json!({
                "revisions": s.revisions, "sources": s.to_value(&self.app), "prune": true,
            }),
            None => json!({ "revision": op.revision }),
        };
        sync["syncStrategy"] = json!({ "hook": {} });
        let sync_op = json!({
            "sync": sync,
            "initiatedBy": { "automated": true },
            "retry": { "limit": 5 },
        });
        let mut state = json!({
            "operation": sync_op,
            "startedAt": rfc3339(op.started),
        });
        match op.finished {
            Some(finished) => {
                state["phase"] = json!("Succeeded");
                state["message"] = json!("successfully synced (all tasks run)");
                state["finishedAt"] = json!(rfc3339(finished));
                let results: Vec<Value> = self
                    .services
                    .iter()
                    .map(|s| {
                        json!({
                            "group": "", "version": "v1", "kind": "Service",
                            "namespace": self.destination, "name": s, "status": "Synced",
                            "message": format!("service/{s} unchanged"),
                            "hookPhase": "Running", "syncPhase": "Sync",
                        })
                    })
                    .chain(std::iter::once(json!({
                        "group": "argoproj.io", "version": "v1alpha1", "kind": "Rollout",
                        "namespace": self.destination, "name": rollout_name, "status": "Synced",
                        "message": format!("rollout.argoproj.io/{rollout_name} configured"),
                        "hookPhase": "Running", "syncPhase": "Sync",
                    })))
                    .collect();
                let mut result = self.deployed(&op.revision, op.sources.as_ref());
                if op.sources.is_some() {
                    result.insert("revision".to_owned(), json!(""));
                }
                result.insert("resources".to_owned(), json!(results));
                state["syncResult"] = Value::Object(result);
            }
            None => {
                state["phase"] = json!("Running");
                state["message"] = json!("one or more tasks are running");
            }
        }
        let history: Vec<Value> = self
            .history
            .iter()
            .map(|h| {
                let mut entry = self.deployed(&h.revision, h.sources.as_ref());
                entry.insert("id".to_owned(), json!(h.id));
                entry.insert("deployStartedAt".to_owned(), json!(rfc3339(h.started)));
                entry.insert("deployedAt".to_owned(), json!(rfc3339(h.deployed)));
                entry.insert("initiatedBy".to_owned(), json!({ "automated": true }));
                Value::Object(entry)
            })
            .collect();
        let mut v = json!({
            "apiVersion": ROLLOUT_API,
            "kind": "Application",
            "metadata": self.meta.to_value(),
            "spec": {
                "project": self.destination,
                "source": source,
                "destination": destination,
                "syncPolicy": { "automated": { "prune": true, "selfHeal": true } },
            },
            "status": {
                "sync": {
                    "status": if self.synced { "Synced" } else { "OutOfSync" },
                    "revision": self.revision,
                    "comparedTo": { "source": source, "destination": destination },
                },
                "health": { "status": self.health.0 },
                "operationState": state,
                "history": history,
                "resources": self.resources(rollout_name),
                "reconciledAt": rfc3339(self.reconciled),
                "sourceType": "Helm",
                "summary": { "images": self.images },
                "controllerNamespace": ARGOCD_NAMESPACE,
            },
        });
        if let Some(sources) = &self.sources {
            let sources = sources.to_value(&self.app);
            let spec = &mut v["spec"];
            if let Some(spec) = spec.as_object_mut() {
                spec.remove("source");
            }
            spec["sources"] = sources.clone();
            let status = &mut v["status"];
            if let Some(sync) = status["sync"].as_object_mut() {
                sync.remove("revision");
            }
            status["sync"]["revisions"] = json!(self.sources.as_ref().map(|s| &s.revisions));
            status["sync"]["comparedTo"]["source"] = json!({ "repoURL": "" });
            status["sync"]["comparedTo"]["sources"] = sources;
            if let Some(status) = status.as_object_mut() {
                status.remove("sourceType");
            }
            status["sourceTypes"] = json!(["Helm", ""]);
        }
        if op.finished.is_none() {
            v["operation"] = sync_op;
        }
        v
    }
}

/// Argo CD's health of a Rollout (its `health.lua` for argoproj.io/Rollout): Progressing until
/// the spec is observed; Degraded for an abort or a progress deadline; Suspended while paused;
/// Progressing until the replicas are updated and available and all steps are done; else
/// Healthy.
pub(crate) fn rollout_health(rollout: &Rollout) -> (&'static str, String) {
    let status = &rollout.status;
    if status.observed_generation != rollout.generation().to_string() {
        return (
            "Progressing",
            "Waiting for rollout spec update to be observed".to_owned(),
        );
    }
    for c in &status.conditions {
        if c.kind == reason::PROGRESSING
            && (c.reason == reason::ROLLOUT_ABORTED || c.reason == reason::TIMED_OUT)
        {
            return ("Degraded", c.message.clone());
        }
    }
    if !status.pause_conditions.is_empty() {
        return ("Suspended", "Rollout is paused".to_owned());
    }
    let progressing = |m: &str| {
        (
            "Progressing",
            format!("Waiting for roll out to finish: {m}"),
        )
    };
    if status.updated_replicas < rollout.replicas {
        return progressing("More replicas need to be updated");
    }
    if status.available_replicas < status.updated_replicas {
        return progressing("updated replicas are still becoming available");
    }
    if status.replicas > status.updated_replicas {
        return progressing("old replicas are pending termination");
    }
    if status.stable_rs != status.current_pod_hash {
        return (
            "Progressing",
            "Waiting for rollout to finish steps".to_owned(),
        );
    }
    ("Healthy", String::new())
}

fn controller_fields(two_sources: bool) -> Value {
    let source_type = if two_sources {
        "f:sourceTypes"
    } else {
        "f:sourceType"
    };
    json!({ "f:status": {
        ".": {}, "f:controllerNamespace": {}, "f:health": {}, "f:history": {},
        "f:operationState": {}, "f:reconciledAt": {}, "f:resources": {}, source_type: {},
        "f:summary": {}, "f:sync": {}
    } })
}

fn server_fields(two_sources: bool) -> Value {
    let source = if two_sources { "f:sources" } else { "f:source" };
    json!({
        "f:metadata": { "f:finalizers": {} },
        "f:spec": { ".": {}, "f:destination": {}, "f:project": {}, source: {}, "f:syncPolicy": {} }
    })
}

/// The images of a pod template.
pub(crate) fn template_images(template: &Value) -> Vec<String> {
    let mut images: Vec<String> = template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| c["image"].as_str().map(str::to_owned))
        .collect();
    images.sort();
    images.dedup();
    images
}

impl Sim {
    /// The Application as it stands at the start: created with the chart, synced to the stable
    /// release (`released`), Healthy.
    pub(crate) fn seed_application(&mut self, created: i64, released: i64) {
        let app = self.config.app.clone();
        let ns = ARGOCD_NAMESPACE.to_owned();
        let two_sources = self.config.two_source_application;
        let mut meta = Meta::new(
            app.clone(),
            ns.clone(),
            uid(&format!("{ns}/{app}/application/{created}")),
            created - 40,
        );
        meta.generation = Some(1_186);
        meta.finalizers = vec!["resources-finalizer.argocd.argoproj.io"];
        meta.touch(ManagedField {
            manager: manager::ARGOCD_SERVER,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: created - 40,
            fields: server_fields(two_sources),
        });
        meta.touch(ManagedField {
            manager: manager::ARGOCD_APP_CONTROLLER,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: released + 199,
            fields: controller_fields(two_sources),
        });
        let commits = 2;
        let revision = git_sha(&format!("{app}/{commits}"));
        // With two sources, the chart stays at one revision; the first sync deployed the
        // previous image with the first values commit, the release the stable one with the
        // second.
        let sources_at = |commit: u32, image: &str| {
            two_sources.then(|| Sources {
                revisions: [
                    git_sha(&format!("{app}/chart")),
                    git_sha(&format!("{app}/values/{commit}")),
                ],
                parameters: image_parameters(image),
            })
        };
        let current = sources_at(commits, &self.config.image);
        let history = vec![
            HistoryEntry {
                id: 1,
                revision: git_sha(&format!("{app}/1")),
                sources: sources_at(1, &self.config.previous_image),
                started: created - 1,
                deployed: created,
            },
            HistoryEntry {
                id: 2,
                revision: revision.clone(),
                sources: current.clone(),
                started: released - 1,
                deployed: released,
            },
        ];
        self.application = Some(Application {
            meta,
            app,
            destination: self.config.namespace.clone(),
            synced: true,
            revision: revision.clone(),
            health: rollout_health(&self.rollout),
            operation: Operation {
                revision,
                sources: current.clone(),
                started: released - 1,
                finished: Some(released),
            },
            history,
            sources: current,
            commits,
            reconciled: released + 199,
            services: self
                .config
                .services
                .iter()
                .map(|s| s.name.clone())
                .collect(),
            images: template_images(&self.rollout.template),
        });
    }

    /// Argo CD notices a new input: OutOfSync, and the automated sync starts. A one-source
    /// Application's input is a new commit. A two-source one's is what the render changes: a
    /// new `image` is the pipeline setting the chart source's Helm parameters (an update of the
    /// Application by `argocd app set`, through argocd-server), the same revisions; anything
    /// else the chart renders (`values_changed`) is a commit to the values repository.
    pub(crate) fn application_sync_started(&mut self, image: Option<&str>, values_changed: bool) {
        let now = self.now;
        let Some(app) = self.application.as_mut() else {
            return;
        };
        let mut parameters_set = false;
        if let Some(sources) = app.sources.as_mut() {
            if let Some(parameters) = image.map(image_parameters) {
                parameters_set = parameters != sources.parameters;
                sources.parameters = parameters;
            }
            if values_changed {
                app.commits += 1;
                sources.revisions[1] = git_sha(&format!("{}/values/{}", app.app, app.commits));
            }
        } else {
            app.commits += 1;
            app.revision = git_sha(&format!("{}/{}", app.app, app.commits));
        }
        if parameters_set {
            self.write_application(manager::ARGOCD_SERVER, server_fields(true));
        }
        let Some(app) = self.application.as_mut() else {
            return;
        };
        app.synced = false;
        app.reconciled = now;
        app.operation = Operation {
            revision: app.revision.clone(),
            sources: app.sources.clone(),
            started: now,
            finished: None,
        };
        self.write_controller_application();
    }

    /// The sync applied the manifests: Succeeded, Synced, one more history entry.
    pub(crate) fn application_sync_finished(&mut self) {
        let now = self.now;
        let images = crate::argocd::template_images(&self.rollout.template);
        let Some(app) = self.application.as_mut() else {
            return;
        };
        app.synced = true;
        app.operation.finished = Some(now);
        app.images = images;
        let id = app.history.last().map_or(0, |h| h.id) + 1;
        app.history.push(HistoryEntry {
            id,
            revision: app.operation.revision.clone(),
            sources: app.operation.sources.clone(),
            started: app.operation.started,
            deployed: now,
        });
        if app.history.len() > HISTORY_LIMIT {
            let excess = app.history.len() - HISTORY_LIMIT;
            app.history.drain(..excess);
        }
        self.write_controller_application();
    }

    /// The application controller's refresh at the end of a second: the Rollout's health, once
    /// it has held for [`HEALTH_LAG`] seconds, becomes the Application's.
    pub(crate) fn refresh_application(&mut self) {
        let now = self.now;
        let health = rollout_health(&self.rollout);
        let Some(app) = self.application.as_mut() else {
            return;
        };
        if app.health.0 == health.0 {
            app.health = health;
            self.health_seen = None;
            return;
        }
        match self.health_seen {
            Some((seen, since)) if seen == health.0 => {
                if now - since >= HEALTH_LAG {
                    app.health = health;
                    app.reconciled = now;
                    self.health_seen = None;
                    self.write_controller_application();
                }
            }
            _ => self.health_seen = Some((health.0, now)),
        }
    }

    /// The application controller writes the Application's status.
    fn write_controller_application(&mut self) {
        let two_sources = self.config.two_source_application;
        self.write_application(
            manager::ARGOCD_APP_CONTROLLER,
            controller_fields(two_sources),
        );
    }

    /// `writer` updates the Application (the fields it owns: `fields`).
    fn write_application(&mut self, writer: &'static str, fields: Value) {
        let now = self.now;
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let rollout_name = self.rollout.meta.name.clone();
        let Some(app) = self.application.as_mut() else {
            return;
        };
        app.meta.resource_version = rv;
        app.meta.generation = Some(app.meta.generation.unwrap_or(0) + 1);
        app.meta.touch(ManagedField {
            manager: writer,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: now,
            fields,
        });
        let object = crate::json::to_bytes(&app.to_value(&rollout_name));
        let (ns, name, uid) = (
            app.meta.namespace.clone(),
            app.meta.name.clone(),
            app.meta.uid.clone(),
        );
        self.push_in(
            ns,
            at,
            Kind::Application,
            Op::Modified,
            name,
            uid,
            rv.to_string(),
            object,
        );
    }
}
