//! The simulated API objects (Rollout, ReplicaSet, Event) and their JSON as a watch serves it.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::calendar::rfc3339;
use crate::spec::{BlueGreenConfig, Step, steps_value};
use crate::status::RolloutStatus;

pub(crate) const HASH_LABEL: &str = "rollouts-pod-template-hash";
pub(crate) const REVISION: &str = "rollout.argoproj.io/revision";
pub(crate) const REVISION_HISTORY: &str = "rollout.argoproj.io/revision-history";
pub(crate) const DESIRED_REPLICAS: &str = "rollout.argoproj.io/desired-replicas";
pub(crate) const SCALE_DOWN_DEADLINE: &str = "scale-down-deadline";

pub(crate) const ROLLOUT_API: &str = "argoproj.io/v1alpha1";
pub(crate) const APPS_API: &str = "apps/v1";

/// The field managers that write the simulated objects.
pub(crate) mod manager {
    pub const ARGOCD: &str = "argocd-controller";
    pub const ROLLOUTS: &str = "rollouts-controller";
    pub const KUBECTL_ROLLOUTS: &str = "kubectl-argo-rollouts";
    pub const KUBECTL_PATCH: &str = "kubectl-patch";
    pub const KUBE_CONTROLLER_MANAGER: &str = "kube-controller-manager";
    pub const KUBE_SCHEDULER: &str = "kube-scheduler";
    pub const KUBELET: &str = "kubelet";
    pub const ARGOCD_SERVER: &str = "argocd-server";
    pub const ARGOCD_APP_CONTROLLER: &str = "argocd-application-controller";
    pub const HELM_CONTROLLER: &str = "helm-controller";
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ManagedField {
    pub manager: &'static str,
    pub operation: &'static str,
    pub subresource: Option<&'static str>,
    pub api_version: &'static str,
    pub time: i64,
    pub fields: Value,
}

impl ManagedField {
    fn to_value(&self) -> Value {
        let mut v = json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": rfc3339(self.time),
            "fieldsType": "FieldsV1",
            "fieldsV1": self.fields,
        });
        if let (Some(sub), Some(map)) = (self.subresource, v.as_object_mut()) {
            map.insert("subresource".to_owned(), json!(sub));
        }
        v
    }
}

/// The controller owner of an object (`ownerReferences[0]`, `controller: true`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    pub api_version: &'static str,
    pub kind: &'static str,
    pub name: String,
    pub uid: String,
}

impl Owner {
    /// The Rollout as the owner of its ReplicaSets.
    pub(crate) fn rollout(name: String, uid: String) -> Self {
        Owner {
            api_version: ROLLOUT_API,
            kind: "Rollout",
            name,
            uid,
        }
    }
}

/// `metadata` of a simulated object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Meta {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub resource_version: u64,
    pub generation: Option<i64>,
    pub creation: i64,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner: Option<Owner>,
    pub managed: Vec<ManagedField>,
    /// `metadata.generateName` (pods, EndpointSlices).
    pub generate_name: Option<String>,
    /// `metadata.deletionTimestamp` and `deletionGracePeriodSeconds` of an object being deleted.
    pub deletion: Option<(i64, i64)>,
    /// `metadata.finalizers`.
    pub finalizers: Vec<&'static str>,
}

impl Meta {
    pub(crate) fn new(name: String, namespace: String, uid: String, creation: i64) -> Self {
        Meta {
            name,
            namespace,
            uid,
            resource_version: 0,
            generation: None,
            creation,
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            owner: None,
            managed: Vec::new(),
            generate_name: None,
            deletion: None,
            finalizers: Vec::new(),
        }
    }

    /// Records a write by a field manager: its entry's time (and fields) are updated, or the
    /// entry is appended, as the API server does.
    pub(crate) fn touch(&mut self, entry: ManagedField) {
        match self.managed.iter_mut().find(|m| {
            m.manager == entry.manager
                && m.operation == entry.operation
                && m.subresource == entry.subresource
        }) {
            Some(existing) => *existing = entry,
            None => self.managed.push(entry),
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".to_owned(), json!(self.name));
        if let Some(prefix) = &self.generate_name {
            m.insert("generateName".to_owned(), json!(prefix));
        }
        if let Some((at, grace)) = self.deletion {
            m.insert("deletionTimestamp".to_owned(), json!(rfc3339(at)));
            m.insert("deletionGracePeriodSeconds".to_owned(), json!(grace));
        }
        if !self.finalizers.is_empty() {
            m.insert("finalizers".to_owned(), json!(self.finalizers));
        }
        m.insert("namespace".to_owned(), json!(self.namespace));
        m.insert("uid".to_owned(), json!(self.uid));
        m.insert(
            "resourceVersion".to_owned(),
            json!(self.resource_version.to_string()),
        );
        if let Some(generation) = self.generation {
            m.insert("generation".to_owned(), json!(generation));
        }
        m.insert(
            "creationTimestamp".to_owned(),
            json!(rfc3339(self.creation)),
        );
        if !self.labels.is_empty() {
            m.insert("labels".to_owned(), string_map(&self.labels));
        }
        if !self.annotations.is_empty() {
            m.insert("annotations".to_owned(), string_map(&self.annotations));
        }
        if let Some(owner) = &self.owner {
            m.insert(
                "ownerReferences".to_owned(),
                json!([{
                    "apiVersion": owner.api_version,
                    "kind": owner.kind,
                    "name": owner.name,
                    "uid": owner.uid,
                    "controller": true,
                    "blockOwnerDeletion": true,
                }]),
            );
        }
        if !self.managed.is_empty() {
            m.insert(
                "managedFields".to_owned(),
                Value::Array(self.managed.iter().map(ManagedField::to_value).collect()),
            );
        }
        Value::Object(m)
    }
}

pub(crate) fn string_map(map: &BTreeMap<String, String>) -> Value {
    Value::Object(
        map.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// A Rollout (`argoproj.io/v1alpha1`), basic canary strategy.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rollout {
    pub meta: Meta,
    pub replicas: i32,
    pub revision_history_limit: i32,
    pub app: String,
    pub template: Value,
    pub steps: Vec<Step>,
    /// `spec.strategy.blueGreen`, instead of a canary with `steps`.
    pub blue_green: Option<BlueGreenConfig>,
    /// `spec.workloadRef.scaleDown` of a Rollout that takes its template from the Deployment
    /// of its name: its own spec then has no template (`template` is the Deployment's).
    pub workload_ref: Option<String>,
    /// A canary's `spec.strategy.canary.stableService` and `canaryService`.
    pub stable_service: Option<String>,
    pub canary_service: Option<String>,
    /// `trafficRouting.nginx.stableIngress`.
    pub nginx: Option<String>,
    /// `canaryMetadata` `role: canary`, `stableMetadata` `role: stable`.
    pub role_labels: bool,
    pub status: RolloutStatus,
}

impl Rollout {
    pub(crate) fn generation(&self) -> i64 {
        self.meta.generation.unwrap_or(0)
    }

    /// `metadata.annotations["rollout.argoproj.io/revision"]`, 0 when absent.
    pub(crate) fn revision(&self) -> i64 {
        revision_of(&self.meta.annotations)
    }

    fn strategy_value(&self) -> Value {
        match &self.blue_green {
            Some(b) => {
                let mut bg = json!({
                    "activeService": b.active_service,
                    "previewService": b.preview_service,
                    "autoPromotionEnabled": false,
                });
                if let Some(delay) = b.scale_down_delay_seconds {
                    bg["scaleDownDelaySeconds"] = json!(delay);
                }
                json!({ "blueGreen": bg })
            }
            None => {
                let mut canary = json!({ "steps": steps_value(&self.steps) });
                if let Some(svc) = &self.stable_service {
                    canary["stableService"] = json!(svc);
                }
                if let Some(svc) = &self.canary_service {
                    canary["canaryService"] = json!(svc);
                }
                if self.role_labels {
                    canary["canaryMetadata"] = json!({ "labels": { "role": "canary" } });
                    canary["stableMetadata"] = json!({ "labels": { "role": "stable" } });
                }
                if let Some(ingress) = &self.nginx {
                    canary["trafficRouting"] = json!({ "nginx": { "stableIngress": ingress } });
                }
                json!({ "canary": canary })
            }
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut v = json!({
            "apiVersion": ROLLOUT_API,
            "kind": "Rollout",
            "metadata": self.meta.to_value(),
            "spec": {
                "replicas": self.replicas,
                "revisionHistoryLimit": self.revision_history_limit,
                "selector": { "matchLabels": { "app": self.app } },
                "template": self.template,
                "strategy": self.strategy_value(),
            },
            "status": self.status.to_value(),
        });
        if let (Some(scale_down), Some(spec)) = (&self.workload_ref, v["spec"].as_object_mut()) {
            spec.remove("template");
            spec.insert(
                "workloadRef".to_owned(),
                json!({"apiVersion": APPS_API, "kind": "Deployment", "name": self.meta.name,
                       "scaleDown": scale_down}),
            );
        }
        v
    }
}

/// `status` of a ReplicaSet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RsStatus {
    pub replicas: i32,
    pub fully_labeled: i32,
    pub ready: i32,
    pub available: i32,
    pub observed_generation: i64,
}

/// A ReplicaSet (`apps/v1`) owned by the Rollout.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReplicaSet {
    pub meta: Meta,
    pub hash: String,
    pub replicas: i32,
    pub app: String,
    pub template: Value,
    pub status: RsStatus,
    /// The simulated second the last pod became ready (or pods were last added).
    pub ready_clock: i64,
}

impl ReplicaSet {
    pub(crate) fn generation(&self) -> i64 {
        self.meta.generation.unwrap_or(0)
    }

    pub(crate) fn revision(&self) -> i64 {
        revision_of(&self.meta.annotations)
    }

    /// True when the `scale-down-deadline` annotation is present and empty: the upstream bug's
    /// marker of an RS nobody will scale down.
    pub(crate) fn leaked(&self) -> bool {
        self.meta
            .annotations
            .get(SCALE_DOWN_DEADLINE)
            .is_some_and(String::is_empty)
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut status = Map::new();
        status.insert("replicas".to_owned(), json!(self.status.replicas));
        for (key, value) in [
            ("fullyLabeledReplicas", self.status.fully_labeled),
            ("readyReplicas", self.status.ready),
            ("availableReplicas", self.status.available),
        ] {
            if value != 0 {
                status.insert(key.to_owned(), json!(value));
            }
        }
        if self.status.observed_generation != 0 {
            status.insert(
                "observedGeneration".to_owned(),
                json!(self.status.observed_generation),
            );
        }
        json!({
            "apiVersion": APPS_API,
            "kind": "ReplicaSet",
            "metadata": self.meta.to_value(),
            "spec": {
                "replicas": self.replicas,
                "selector": { "matchLabels": { "app": self.app, HASH_LABEL: self.hash } },
                "template": self.template,
            },
            "status": Value::Object(status),
        })
    }
}

fn revision_of(annotations: &BTreeMap<String, String>) -> i64 {
    annotations
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// A core `v1` Event about the Rollout, as the controller's event recorder writes it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    pub meta: Meta,
    pub rollout_name: String,
    pub rollout_uid: String,
    pub rollout_rv: u64,
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
    pub first: i64,
    pub last: i64,
    pub count: u32,
}

impl Event {
    pub(crate) fn to_value(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": self.meta.to_value(),
            "involvedObject": {
                "apiVersion": ROLLOUT_API,
                "kind": "Rollout",
                "name": self.rollout_name,
                "namespace": self.meta.namespace,
                "uid": self.rollout_uid,
                "resourceVersion": self.rollout_rv.to_string(),
            },
            "reason": self.reason,
            "message": self.message,
            "source": { "component": manager::ROLLOUTS },
            "firstTimestamp": rfc3339(self.first),
            "lastTimestamp": rfc3339(self.last),
            "count": self.count,
            "type": if self.warning { "Warning" } else { "Normal" },
            "eventTime": null,
            "reportingComponent": manager::ROLLOUTS,
            "reportingInstance": "",
        })
    }
}

/// The small `fieldsV1` sets of each manager's entry.
pub(crate) mod fields {
    use serde_json::{Value, json};

    pub(crate) fn argocd_rollout() -> Value {
        json!({
            "f:metadata": { "f:labels": {
                "f:app.kubernetes.io/instance": {}, "f:app.kubernetes.io/managed-by": {},
                "f:app.kubernetes.io/name": {}, "f:helm.sh/chart": {}
            } },
            "f:spec": {
                "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
                "f:strategy": { "f:canary": { "f:steps": {} } }, "f:template": {}
            }
        })
    }

    pub(crate) fn rollouts_metadata() -> Value {
        json!({ "f:metadata": { "f:annotations": {
            ".": {}, "f:rollout.argoproj.io/revision": {}
        } } })
    }

    pub(crate) fn rollouts_status() -> Value {
        json!({ "f:status": {
            ".": {}, "f:HPAReplicas": {}, "f:availableReplicas": {}, "f:blueGreen": {},
            "f:canary": {}, "f:conditions": {}, "f:currentPodHash": {}, "f:currentStepHash": {},
            "f:currentStepIndex": {}, "f:observedGeneration": {}, "f:phase": {},
            "f:readyReplicas": {}, "f:replicas": {}, "f:selector": {}, "f:stableRS": {},
            "f:updatedReplicas": {}
        } })
    }

    pub(crate) fn kubectl_rollouts(abort: bool) -> Value {
        if abort {
            json!({ "f:status": { "f:abort": {} } })
        } else {
            json!({ "f:status": {} })
        }
    }

    pub(crate) fn kubectl_patch() -> Value {
        json!({ "f:status": { "f:currentStepIndex": {} } })
    }

    pub(crate) fn rollouts_replica_set() -> Value {
        json!({
            "f:metadata": {
                "f:annotations": { ".": {}, "f:rollout.argoproj.io/desired-replicas": {},
                                   "f:rollout.argoproj.io/revision": {} },
                "f:labels": { ".": {}, "f:app": {}, "f:rollouts-pod-template-hash": {} },
                "f:ownerReferences": { ".": {} }
            },
            "f:spec": { "f:replicas": {}, "f:selector": {}, "f:template": {} }
        })
    }

    pub(crate) fn replica_set_status() -> Value {
        json!({ "f:status": {
            "f:availableReplicas": {}, "f:fullyLabeledReplicas": {},
            "f:observedGeneration": {}, "f:readyReplicas": {}, "f:replicas": {}
        } })
    }
}
