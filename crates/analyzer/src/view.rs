//! Small typed views of the objects detectors read, parsed leniently from the recorded JSON.
//!
//! Only the fields a detector needs are parsed; unknown fields are skipped. Fields the API has
//! written in more than one type over the years (`status.observedGeneration`: a decimal string
//! since Argo Rollouts v1.0, a hash before) are read as strings whatever their JSON type.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::time::parse_rfc3339;

/// Reads a string, a number or a bool as a string; `null` as `None`.
fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(match v {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
    })
}

/// Reads an integer, or a string of decimal digits, as an integer.
fn lenient_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(match v {
        Some(serde_json::Value::Number(n)) => n.as_i64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    })
}

/// `metadata` of any object.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Meta {
    pub name: String,
    pub namespace: String,
    pub uid: String,
    #[serde(deserialize_with = "lenient_int")]
    pub generation: Option<i64>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub owner_references: Vec<OwnerRef>,
    pub managed_fields: Vec<ManagedField>,
    pub creation_timestamp: Option<String>,
    pub deletion_timestamp: Option<String>,
}

impl Meta {
    /// The manager that wrote last, by `managedFields[].time`: the one that wrote the
    /// subresource when `status` is true, the main resource otherwise.
    pub fn last_manager(&self, status: bool) -> Option<&str> {
        self.managed_fields
            .iter()
            .filter(|m| (m.subresource.as_deref() == Some("status")) == status)
            .filter_map(|m| Some((m.time.as_deref().and_then(parse_rfc3339)?, m)))
            .max_by_key(|(t, _)| *t)
            .map(|(_, m)| m.manager.as_str())
            .filter(|m| !m.is_empty())
    }
}

/// One `metadata.ownerReferences[]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct OwnerRef {
    pub kind: String,
    pub name: String,
    pub uid: String,
    pub controller: Option<bool>,
}

/// One `metadata.managedFields[]` entry.
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ManagedField {
    pub manager: String,
    pub subresource: Option<String>,
    pub time: Option<String>,
}

/// A canary step, reduced to what the state machine needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    SetWeight(i64),
    /// `pause: {}` (no duration: waits for a promote) or `pause: {duration: ...}`.
    Pause {
        indefinite: bool,
    },
    Other(String),
}

impl Step {
    pub fn is_pause(&self) -> bool {
        matches!(self, Step::Pause { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Step::SetWeight(w) => format!("setWeight {w}"),
            Step::Pause { indefinite: true } => "pause until promoted".to_owned(),
            Step::Pause { indefinite: false } => "timed pause".to_owned(),
            Step::Other(k) => k.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for Step {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        let Some(map) = v.as_object() else {
            return Ok(Step::Other("unknown".to_owned()));
        };
        if let Some(w) = map.get("setWeight") {
            return Ok(Step::SetWeight(
                w.as_i64()
                    .or_else(|| w.as_str().and_then(|s| s.parse().ok()))
                    .unwrap_or(0),
            ));
        }
        if let Some(p) = map.get("pause") {
            let duration = p.get("duration").filter(|d| !d.is_null());
            return Ok(Step::Pause {
                indefinite: duration.is_none(),
            });
        }
        Ok(Step::Other(
            map.keys()
                .next()
                .cloned()
                .unwrap_or_else(|| "empty".to_owned()),
        ))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Canary {
    pub steps: Option<Vec<Step>>,
    pub traffic_routing: Option<serde::de::IgnoredAny>,
    pub canary_service: Option<String>,
    pub stable_service: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Strategy {
    pub canary: Option<Canary>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RolloutSpec {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    pub paused: Option<bool>,
    pub template: Option<Box<RawValue>>,
    pub strategy: Strategy,
    #[serde(deserialize_with = "lenient_int")]
    pub revision_history_limit: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PauseCondition {
    pub reason: String,
    pub start_time: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct WeightDest {
    #[serde(deserialize_with = "lenient_int")]
    pub weight: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Weights {
    pub canary: Option<WeightDest>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct CanaryStatus {
    /// Legacy (< v0.8) place of the stable hash.
    #[serde(rename = "stableRS")]
    pub stable_rs: Option<String>,
    pub weights: Option<Weights>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RolloutStatus {
    #[serde(deserialize_with = "lenient_string")]
    pub observed_generation: Option<String>,
    pub current_pod_hash: Option<String>,
    pub current_step_hash: Option<String>,
    #[serde(deserialize_with = "lenient_int")]
    pub current_step_index: Option<i64>,
    #[serde(rename = "stableRS")]
    pub stable_rs: Option<String>,
    pub phase: Option<String>,
    pub message: Option<String>,
    pub pause_conditions: Option<Vec<PauseCondition>>,
    pub controller_pause: Option<bool>,
    pub abort: Option<bool>,
    pub promote_full: Option<bool>,
    pub conditions: Option<Vec<Condition>>,
    pub canary: Option<CanaryStatus>,
}

/// An `argoproj.io/v1alpha1` Rollout.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct RolloutView {
    pub metadata: Meta,
    pub spec: RolloutSpec,
    pub status: RolloutStatus,
}

impl RolloutView {
    pub fn steps(&self) -> &[Step] {
        self.spec
            .strategy
            .canary
            .as_ref()
            .and_then(|c| c.steps.as_deref())
            .unwrap_or(&[])
    }

    pub fn stable_rs(&self) -> Option<&str> {
        self.status
            .stable_rs
            .as_deref()
            .or_else(|| {
                self.status
                    .canary
                    .as_ref()
                    .and_then(|c| c.stable_rs.as_deref())
            })
            .filter(|s| !s.is_empty())
    }

    pub fn progressing_reason(&self) -> Option<&str> {
        self.status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == "Progressing")
            .and_then(|c| c.reason.as_deref())
    }

    pub fn canary_weight(&self) -> Option<i64> {
        self.status
            .canary
            .as_ref()?
            .weights
            .as_ref()?
            .canary
            .as_ref()?
            .weight
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RsSpec {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    /// Kept unparsed: the state machine parses it only when it changed.
    pub template: Option<Box<RawValue>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct RsStatus {
    #[serde(deserialize_with = "lenient_int")]
    pub replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub ready_replicas: Option<i64>,
    #[serde(deserialize_with = "lenient_int")]
    pub available_replicas: Option<i64>,
}

/// An `apps/v1` ReplicaSet.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ReplicaSetView {
    pub metadata: Meta,
    pub spec: RsSpec,
    pub status: RsStatus,
}

impl ReplicaSetView {
    /// The pod-template-hash label, if any.
    pub fn hash(&self) -> Option<&str> {
        self.metadata
            .labels
            .get(crate::diff::HASH_LABEL)
            .map(String::as_str)
    }

    /// The Rollout controlling this RS: (name, uid).
    pub fn rollout_owner(&self) -> Option<(&str, &str)> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "Rollout" && o.controller != Some(false))
            .map(|o| (o.name.as_str(), o.uid.as_str()))
    }

    pub fn scale_down_deadline(&self) -> Option<&str> {
        self.metadata
            .annotations
            .get("scale-down-deadline")
            .map(String::as_str)
    }
}

/// A `v1` Service: only its selector matters here.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ServiceView {
    pub metadata: Meta,
    pub spec: ServiceSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ServiceSpec {
    /// `None` (no selector: endpoints managed by hand) differs from an empty map.
    pub selector: Option<BTreeMap<String, String>>,
}

/// A `discovery.k8s.io/v1` EndpointSlice.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EndpointSliceView {
    pub metadata: Meta,
    pub endpoints: Option<Vec<Endpoint>>,
}

impl EndpointSliceView {
    /// The Service it belongs to (`kubernetes.io/service-name`).
    pub fn service(&self) -> Option<&str> {
        self.metadata
            .labels
            .get("kubernetes.io/service-name")
            .map(String::as_str)
            .filter(|s| !s.is_empty())
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct Endpoint {
    pub addresses: Vec<String>,
    pub conditions: EndpointConditions,
    pub target_ref: Option<TargetRef>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct EndpointConditions {
    /// Absent means ready (the API's documented default).
    pub ready: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct TargetRef {
    pub kind: String,
    pub name: String,
}

/// A `v1` Pod: its revision, readiness and the images it runs.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct PodView {
    pub metadata: Meta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodSpec {
    pub containers: Vec<Container>,
    pub init_containers: Vec<Container>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Container {
    pub name: String,
    pub image: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodStatus {
    pub conditions: Vec<PodCondition>,
    pub container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct PodCondition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub last_transition_time: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct ContainerStatus {
    pub name: String,
    pub image: String,
    #[serde(rename = "imageID")]
    pub image_id: String,
}

impl PodView {
    /// `Ready` is True, and since when (the condition's lastTransitionTime).
    pub fn ready(&self) -> (bool, Option<&str>) {
        self.status
            .conditions
            .iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| (c.status == "True", c.last_transition_time.as_deref()))
            .unwrap_or((false, None))
    }

    /// The ReplicaSet controlling it.
    pub fn owner_replicaset(&self) -> Option<&str> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.kind == "ReplicaSet" && o.controller != Some(false))
            .map(|o| o.name.as_str())
    }
}

/// An Argo CD `Application`.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct ApplicationView {
    pub metadata: Meta,
    pub status: AppStatus,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppStatus {
    pub sync: AppSync,
    pub health: AppHealth,
    pub history: Vec<AppHistory>,
    pub resources: Vec<AppResource>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppSync {
    pub status: Option<String>,
    #[serde(deserialize_with = "lenient_string")]
    pub revision: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppHealth {
    pub status: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub(crate) struct AppHistory {
    #[serde(deserialize_with = "lenient_string")]
    pub revision: Option<String>,
    pub revisions: Option<Vec<String>>,
    pub deployed_at: Option<String>,
    #[serde(deserialize_with = "lenient_int")]
    pub id: Option<i64>,
}

impl AppHistory {
    /// The revision deployed (multi-source apps list several: joined).
    pub fn revision(&self) -> Option<String> {
        self.revision
            .clone()
            .filter(|r| !r.is_empty())
            .or_else(|| self.revisions.as_ref().map(|r| r.join("+")))
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct AppResource {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}
