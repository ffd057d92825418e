//! The Deployment a Rollout's `workloadRef` names: its template is the Rollout's, its replicas
//! are what the rollouts controller and Argo CD write, and its pods are not simulated (only
//! how many are ready, which the deployment controller reports a few seconds after a scale-up).

use rf_format::Op;
use serde_json::{Value, json};

use crate::objects::{APPS_API, ManagedField, Meta, manager};
use crate::sim::Sim;

/// The Rollout annotation that holds the generation of its `workloadRef` Deployment.
pub(crate) const WORKLOAD_GENERATION: &str = "rollout.argoproj.io/workload-generation";

/// Seconds between a scale-up and the Deployment's pods all being ready.
const READY_AFTER_SECONDS: i64 = 4;

/// A Deployment (`apps/v1`) whose template a Rollout runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Deployment {
    pub meta: Meta,
    pub app: String,
    pub replicas: i32,
    pub ready: i32,
    pub template: Value,
    /// When its pods will all be ready (after a scale-up).
    pub ready_at: Option<i64>,
}

impl Deployment {
    pub(crate) fn to_value(&self) -> Value {
        json!({
            "apiVersion": APPS_API,
            "kind": "Deployment",
            "metadata": self.meta.to_value(),
            "spec": {
                "replicas": self.replicas,
                "selector": { "matchLabels": { "app": self.app } },
                "template": self.template,
                "strategy": { "type": "RollingUpdate" },
            },
            "status": {
                "observedGeneration": self.meta.generation,
                "replicas": self.ready,
                "readyReplicas": self.ready,
                "availableReplicas": self.ready,
                "updatedReplicas": self.ready,
            },
        })
    }
}

/// What a manager's write of a Deployment touched.
fn fields(spec: bool) -> Value {
    if spec {
        json!({ "f:spec": { "f:replicas": {}, "f:template": {} } })
    } else {
        json!({ "f:status": {
            "f:availableReplicas": {}, "f:readyReplicas": {}, "f:replicas": {},
            "f:updatedReplicas": {}
        } })
    }
}

impl Sim {
    /// Records a write of the Deployment by `manager`. A spec write bumps its generation, which
    /// the rollouts controller then notes on the Rollout.
    fn write_deployment(&mut self, manager: &'static str, spec: bool) {
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let now = self.now;
        let Some(d) = self.deployment.as_mut() else {
            return;
        };
        if spec {
            d.meta.generation = Some(d.meta.generation.unwrap_or(0) + 1);
        }
        d.meta.touch(ManagedField {
            manager,
            operation: "Update",
            subresource: (!spec).then_some("status"),
            api_version: APPS_API,
            time: now,
            fields: fields(spec),
        });
        d.meta.resource_version = rv;
        let object = crate::json::to_bytes(&d.to_value());
        let (name, uid) = (d.meta.name.clone(), d.meta.uid.clone());
        let kind = rf_format::api::DEPLOYMENT.newest();
        self.push(at, kind, Op::Modified, name, uid, rv.to_string(), object);
        if spec {
            self.note_workload_generation();
        }
    }

    /// The Deployment as it was when recording began: created with the Rollout, its template
    /// the stable one, scaled to 0 by the rollouts controller once the Rollout's first
    /// revision was Healthy (`scaleDown: onsuccess`; `never` leaves it to a user, whose
    /// `kubectl scale` this then is).
    pub(crate) fn seed_deployment(&mut self, created: i64, settled: i64, template: &Value) {
        let ns = self.config.namespace.clone();
        let name = self.config.rollout.clone();
        let uid = crate::hash::uid(&format!("{ns}/{name}/deployment/{created}"));
        let mut meta = Meta::new(name, ns, uid, created - 3_600);
        meta.generation = Some(3);
        meta.touch(ManagedField {
            manager: manager::ARGOCD,
            operation: "Update",
            subresource: None,
            api_version: APPS_API,
            time: created - 3_600,
            fields: fields(true),
        });
        let scaled_by = match self.config.workload_ref.as_deref() {
            Some("onsuccess" | "progressively") => manager::ROLLOUTS,
            _ => "kubectl-scale",
        };
        meta.touch(ManagedField {
            manager: scaled_by,
            operation: "Update",
            subresource: None,
            api_version: APPS_API,
            time: settled.min(created + 120),
            fields: json!({ "f:spec": { "f:replicas": {} } }),
        });
        self.deployment = Some(Deployment {
            meta,
            app: self.config.app.clone(),
            replicas: 0,
            ready: 0,
            template: template.clone(),
            ready_at: None,
        });
    }

    /// The rollouts controller notes the Deployment's generation on the Rollout
    /// (`rollout.argoproj.io/workload-generation`, a metadata patch: no new generation).
    fn note_workload_generation(&mut self) {
        let Some(generation) = self.deployment.as_ref().and_then(|d| d.meta.generation) else {
            return;
        };
        self.rollout
            .meta
            .annotations
            .insert(WORKLOAD_GENERATION.to_owned(), generation.to_string());
        self.touch_rollout(
            manager::ROLLOUTS,
            "Update",
            None,
            crate::objects::fields::rollouts_metadata(),
        );
        self.write_rollout(Op::Modified);
    }

    /// A write of the Deployment's template (`workloadRef`): a render, by Argo CD.
    pub(crate) fn render_deployment(&mut self, template: &Value) {
        if let Some(d) = self.deployment.as_mut() {
            d.template = template.clone();
        }
        self.write_deployment(manager::ARGOCD, true);
    }

    /// Sets the Deployment's `spec.replicas`, as `manager` writes it: Argo CD syncing the
    /// manifest's `replicas` back, or the rollouts controller scaling it down.
    pub fn scale_deployment(&mut self, replicas: u32, manager: &'static str) {
        let replicas = i32::try_from(replicas).unwrap_or(i32::MAX);
        let now = self.now;
        let Some(d) = self.deployment.as_mut() else {
            return;
        };
        if d.replicas == replicas {
            return;
        }
        d.ready_at = Some(now + READY_AFTER_SECONDS);
        d.replicas = replicas;
        self.write_deployment(manager, true);
    }

    /// The deployment controller: its pods are ready a few seconds after a scale-up, gone at
    /// once after a scale-down.
    pub(crate) fn sync_deployment(&mut self) {
        let now = self.now;
        let Some(d) = self.deployment.as_mut() else {
            return;
        };
        let due = d.replicas < d.ready || d.ready_at.is_some_and(|t| t <= now);
        if !due || d.ready == d.replicas {
            return;
        }
        d.ready = d.replicas;
        d.ready_at = None;
        self.write_deployment(manager::KUBE_CONTROLLER_MANAGER, false);
    }
}
