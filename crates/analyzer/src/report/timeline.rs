//! Per-rollout timelines: one entry per state change, each with the whole state after it.

use rf_format::Timestamp;
use serde::Serialize;

use crate::base::Str;

use crate::report::finding::{Subject, serialize_time};

/// Entries kept per rollout before the timeline is cut (the report says so); keeps memory bounded
/// on day-long recordings of a busy rollout.
pub const MAX_TIMELINE_ENTRIES: usize = 20_000;

/// The role of a ReplicaSet relative to its Rollout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Its hash is `status.currentPodHash`.
    New,
    /// Its hash is `status.stableRS`.
    Stable,
    /// Neither: should be scaled to zero.
    Other,
}

/// One ReplicaSet in a timeline entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplicaSetState {
    /// Its name.
    pub name: Str,
    /// Its pod-template-hash.
    pub hash: Str,
    /// Its role at that moment.
    pub role: Role,
    /// `spec.replicas`.
    pub replicas: i64,
    /// `status.readyReplicas`.
    pub ready: i64,
}

/// One state change of a rollout or one of its ReplicaSets.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimelineEntry {
    /// When it was observed.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// Which recording (index among the files analyzed).
    pub file: u32,
    /// The record's seq.
    pub seq: u64,
    /// `Rollout`, `ReplicaSet`, or `Deployment` (the template of a `workloadRef`): which object
    /// changed.
    pub source: String,
    /// What changed, in words (`step 1 -> 0`, `rs checkout-api-5d98c7bf64 replicas 0 -> 1`).
    pub changes: Vec<String>,
    /// Who made the change, when known (record actor or managedFields manager).
    pub actor: Option<Str>,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// `status.observedGeneration`.
    pub observed_generation: Option<Str>,
    /// `status.currentPodHash`.
    pub pod_hash: Option<Str>,
    /// `status.stableRS`.
    pub stable_rs: Option<Str>,
    /// `status.currentStepIndex` (absent = 0).
    pub step_index: i64,
    /// Number of canary steps.
    pub step_count: usize,
    /// `status.phase`.
    pub phase: Option<Str>,
    /// Reasons of `status.pauseConditions`, plus `spec.paused` when set.
    pub pause: Vec<Str>,
    /// `status.abort`.
    pub abort: bool,
    /// `status.message`.
    pub message: Option<Str>,
    /// The rollout's ReplicaSets that have replicas, or just changed.
    pub replicasets: Vec<ReplicaSetState>,
}

/// Which pods a Service sends traffic to, by revision, after one change of its endpoints.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TrafficEntry {
    /// When it was observed.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// Which recording (index among the files analyzed).
    pub file: u32,
    /// The record's seq (the EndpointSlice, Pod, Service or Rollout record that changed it).
    pub seq: u64,
    /// The Service's name.
    pub service: String,
    /// Ready endpoint pods by pod-template hash (`""` for pods of no known revision of the
    /// rollout), pod names sorted.
    pub endpoints: std::collections::BTreeMap<String, Vec<String>>,
}

/// The timeline of one rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Timeline {
    /// The rollout.
    pub rollout: Subject,
    /// Entries in record order.
    pub entries: Vec<TimelineEntry>,
    /// Endpoint membership of the Services that route to the rollout, one entry per change,
    /// in record order.
    pub traffic: Vec<TrafficEntry>,
    /// True when entries beyond [`MAX_TIMELINE_ENTRIES`] were dropped.
    pub truncated: bool,
}
