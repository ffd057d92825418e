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

/// Entries Argo CD keeps in `status.history` (`spec.revisionHistoryLimit` default).
const HISTORY_LIMIT: usize = 10;

/// Seconds after a change of the Rollout's health until the Application shows it.
const HEALTH_LAG: i64 = 2;

/// One entry of `status.history`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryEntry {
    pub id: u32,
    pub revision: String,
    pub started: i64,
    pub deployed: i64,
}

/// `status.operationState` of the last sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Operation {
    pub revision: String,
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
    /// Renders so far: numbers the git commits.
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

    pub(crate) fn to_value(&self, rollout_name: &str) -> Value {
        let source = self.source();
        let destination = json!({
            "server": "https://kubernetes.default.svc",
            "namespace": self.destination,
        });
        let op = &self.operation;
        let sync_op = json!({
            "sync": { "revision": op.revision, "syncStrategy": { "hook": {} } },
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
                state["syncResult"] = json!({
                    "revision": op.revision,
                    "source": source,
                    "resources": results,
                });
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
                json!({
                    "id": h.id,
                    "revision": h.revision,
                    "deployStartedAt": rfc3339(h.started),
                    "deployedAt": rfc3339(h.deployed),
                    "source": source,
                    "initiatedBy": { "automated": true },
                })
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

fn controller_fields() -> Value {
    json!({ "f:status": {
        ".": {}, "f:controllerNamespace": {}, "f:health": {}, "f:history": {},
        "f:operationState": {}, "f:reconciledAt": {}, "f:resources": {}, "f:sourceType": {},
        "f:summary": {}, "f:sync": {}
    } })
}

fn server_fields() -> Value {
    json!({
        "f:metadata": { "f:finalizers": {} },
        "f:spec": { ".": {}, "f:destination": {}, "f:project": {}, "f:source": {}, "f:syncPolicy": {} }
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
            fields: server_fields(),
        });
        meta.touch(ManagedField {
            manager: manager::ARGOCD_APP_CONTROLLER,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: released + 199,
            fields: controller_fields(),
        });
        let commits = 2;
        let revision = git_sha(&format!("{app}/{commits}"));
        let history = vec![
            HistoryEntry {
                id: 1,
                revision: git_sha(&format!("{app}/1")),
                started: created - 1,
                deployed: created,
            },
            HistoryEntry {
                id: 2,
                revision: revision.clone(),
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
                started: released - 1,
                finished: Some(released),
            },
            history,
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

    /// Argo CD notices a new commit: OutOfSync, and the automated sync starts.
    pub(crate) fn application_sync_started(&mut self) {
        let now = self.now;
        let Some(app) = self.application.as_mut() else {
            return;
        };
        app.commits += 1;
        let revision = git_sha(&format!("{}/{}", app.app, app.commits));
        app.synced = false;
        app.revision = revision.clone();
        app.reconciled = now;
        app.operation = Operation {
            revision,
            started: now,
            finished: None,
        };
        self.write_application();
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
            started: app.operation.started,
            deployed: now,
        });
        if app.history.len() > HISTORY_LIMIT {
            let excess = app.history.len() - HISTORY_LIMIT;
            app.history.drain(..excess);
        }
        self.write_application();
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
                    self.write_application();
                }
            }
            _ => self.health_seen = Some((health.0, now)),
        }
    }

    fn write_application(&mut self) {
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
            manager: manager::ARGOCD_APP_CONTROLLER,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: now,
            fields: controller_fields(),
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
