//! The Rollout's `status`, its conditions, and the phase the controller derives from them.

use serde_json::{Map, Value, json};

use crate::calendar::rfc3339;

/// Condition types and reasons, spelled as the controller spells them.
pub(crate) mod reason {
    pub const PROGRESSING: &str = "Progressing";
    pub const AVAILABLE: &str = "Available";
    pub const PAUSED: &str = "Paused";
    pub const COMPLETED: &str = "Completed";
    pub const HEALTHY: &str = "Healthy";

    pub const NEW_RS_CREATED: &str = "NewReplicaSetCreated";
    pub const RS_UPDATED: &str = "ReplicaSetUpdated";
    pub const RS_NOT_AVAILABLE: &str = "ReplicaSetNotAvailable";
    pub const NEW_RS_AVAILABLE: &str = "NewReplicaSetAvailable";
    pub const ROLLOUT_PAUSED: &str = "RolloutPaused";
    pub const ROLLOUT_RESUMED: &str = "RolloutResumed";
    pub const ROLLOUT_ABORTED: &str = "RolloutAborted";
    pub const ROLLOUT_RETRY: &str = "RolloutRetry";
    pub const TIMED_OUT: &str = "ProgressDeadlineExceeded";
    pub const ROLLOUT_COMPLETED: &str = "RolloutCompleted";
    pub const ROLLOUT_HEALTHY: &str = "RolloutHealthy";
    pub const AVAILABLE_REASON: &str = "AvailableReason";
    pub const CANARY_PAUSE_STEP: &str = "CanaryPauseStep";
    pub const BLUE_GREEN_PAUSE: &str = "BlueGreenPause";
}

/// One entry of `status.conditions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Condition {
    pub kind: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
    pub last_update: i64,
    pub last_transition: i64,
}

impl Condition {
    /// A condition updated and transitioned at `now`.
    pub(crate) fn new(
        kind: &'static str,
        status: &'static str,
        reason: &'static str,
        message: impl Into<String>,
        now: i64,
    ) -> Self {
        Condition {
            kind,
            status,
            reason,
            message: message.into(),
            last_update: now,
            last_transition: now,
        }
    }

    fn to_value(&self) -> Value {
        json!({
            "type": self.kind,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastUpdateTime": rfc3339(self.last_update),
            "lastTransitionTime": rfc3339(self.last_transition),
        })
    }
}

/// One entry of `status.pauseConditions`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PauseCondition {
    pub reason: &'static str,
    pub start_time: i64,
}

/// `status` of a Rollout (the fields a basic canary uses).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RolloutStatus {
    pub abort: bool,
    pub pause_conditions: Vec<PauseCondition>,
    pub controller_pause: bool,
    pub aborted_at: Option<i64>,
    pub current_pod_hash: String,
    pub current_step_hash: String,
    pub replicas: i32,
    pub updated_replicas: i32,
    pub ready_replicas: i32,
    pub available_replicas: i32,
    pub current_step_index: Option<u32>,
    pub observed_generation: String,
    pub conditions: Vec<Condition>,
    pub hpa_replicas: i32,
    pub selector: String,
    pub stable_rs: String,
    pub promote_full: bool,
    pub phase: String,
    pub message: String,
    /// `status.blueGreen.activeSelector` / `previewSelector`: the hashes on those Services.
    pub active_selector: String,
    pub preview_selector: String,
    /// `status.canary.weights`, with traffic routing.
    pub weights: Option<serde_json::Value>,
}

impl RolloutStatus {
    pub(crate) fn condition(&self, kind: &str) -> Option<&Condition> {
        self.conditions.iter().find(|c| c.kind == kind)
    }

    /// `conditions.SetRolloutCondition`: no-op when status and reason are unchanged; keeps the
    /// transition time when only the reason changes; the updated condition moves to the end.
    /// Returns whether anything changed.
    pub(crate) fn set_condition(&mut self, mut condition: Condition) -> bool {
        if let Some(current) = self.condition(condition.kind) {
            if current.status == condition.status && current.reason == condition.reason {
                return false;
            }
            if current.status == condition.status {
                condition.last_transition = current.last_transition;
            }
        }
        self.remove_condition(condition.kind);
        self.conditions.push(condition);
        true
    }

    pub(crate) fn remove_condition(&mut self, kind: &str) {
        self.conditions.retain(|c| c.kind != kind);
    }

    pub(crate) fn pause_condition(&self, reason: &str) -> Option<&PauseCondition> {
        self.pause_conditions.iter().find(|p| p.reason == reason)
    }

    /// `status` as the API server serializes it (Go `omitempty` rules).
    pub(crate) fn to_value(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Value| {
            m.insert(k.to_owned(), v);
        };
        if self.abort {
            put("abort", json!(true));
        }
        if !self.pause_conditions.is_empty() {
            put(
                "pauseConditions",
                Value::Array(
                    self.pause_conditions
                        .iter()
                        .map(|p| json!({"reason": p.reason, "startTime": rfc3339(p.start_time)}))
                        .collect(),
                ),
            );
        }
        if self.controller_pause {
            put("controllerPause", json!(true));
        }
        if let Some(at) = self.aborted_at {
            put("abortedAt", json!(rfc3339(at)));
        }
        for (key, value) in [
            ("currentPodHash", &self.current_pod_hash),
            ("currentStepHash", &self.current_step_hash),
            ("observedGeneration", &self.observed_generation),
            ("selector", &self.selector),
            ("stableRS", &self.stable_rs),
            ("phase", &self.phase),
            ("message", &self.message),
        ] {
            if !value.is_empty() {
                put(key, json!(value));
            }
        }
        for (key, value) in [
            ("replicas", self.replicas),
            ("updatedReplicas", self.updated_replicas),
            ("readyReplicas", self.ready_replicas),
            ("availableReplicas", self.available_replicas),
            ("HPAReplicas", self.hpa_replicas),
        ] {
            if value != 0 {
                put(key, json!(value));
            }
        }
        if let Some(index) = self.current_step_index {
            put("currentStepIndex", json!(index));
        }
        if !self.conditions.is_empty() {
            put(
                "conditions",
                Value::Array(self.conditions.iter().map(Condition::to_value).collect()),
            );
        }
        if self.promote_full {
            put("promoteFull", json!(true));
        }
        put(
            "canary",
            match &self.weights {
                Some(w) => json!({ "weights": w }),
                None => json!({}),
            },
        );
        let mut blue_green = Map::new();
        for (key, value) in [
            ("activeSelector", &self.active_selector),
            ("previewSelector", &self.preview_selector),
        ] {
            if !value.is_empty() {
                blue_green.insert(key.to_owned(), json!(value));
            }
        }
        put("blueGreen", Value::Object(blue_green));
        Value::Object(m)
    }
}

/// `rolloututil.CalculateRolloutPhase` for a basic canary, or for blue-green (`blue_green`):
/// the phase and its message.
/// `delayed_scale_down`: a canary with traffic routing, whose replaced ReplicaSets wait out
/// `scaleDownDelaySeconds` (they do not keep it Progressing).
pub(crate) fn calculate_phase(
    spec_replicas: i32,
    blue_green: bool,
    delayed_scale_down: bool,
    status: &RolloutStatus,
) -> (String, String) {
    for cond in &status.conditions {
        if cond.reason == reason::ROLLOUT_ABORTED || cond.reason == reason::TIMED_OUT {
            return (
                "Degraded".to_owned(),
                format!("{}: {}", cond.reason, cond.message),
            );
        }
    }
    if let Some(pause) = status.pause_conditions.first() {
        return ("Paused".to_owned(), pause.reason.to_owned());
    }
    let progressing = |message: &str| ("Progressing".to_owned(), message.to_owned());
    if status.updated_replicas < spec_replicas {
        return progressing("more replicas need to be updated");
    }
    if status.available_replicas < status.updated_replicas {
        return progressing("updated replicas are still becoming available");
    }
    if blue_green {
        if status.active_selector.is_empty() || status.active_selector != status.current_pod_hash {
            return progressing("active service cutover pending");
        }
        if status.stable_rs.is_empty() || status.stable_rs != status.current_pod_hash {
            return progressing("waiting for analysis to complete");
        }
        return ("Healthy".to_owned(), String::new());
    }
    if !delayed_scale_down && status.replicas > status.updated_replicas {
        return progressing("old replicas are pending termination");
    }
    if status.stable_rs.is_empty() || status.stable_rs != status.current_pod_hash {
        return progressing("waiting for all steps to complete");
    }
    ("Healthy".to_owned(), String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setting_a_condition_with_the_same_status_keeps_its_transition_time() {
        let mut s = RolloutStatus::default();
        assert!(s.set_condition(Condition::new(
            reason::PROGRESSING,
            "True",
            reason::RS_UPDATED,
            "a",
            10
        )));
        assert!(!s.set_condition(Condition::new(
            reason::PROGRESSING,
            "True",
            reason::RS_UPDATED,
            "b",
            20
        )));
        assert!(s.set_condition(Condition::new(
            reason::PROGRESSING,
            "True",
            reason::NEW_RS_CREATED,
            "c",
            30
        )));
        let c = s.condition(reason::PROGRESSING).unwrap();
        assert_eq!((c.last_update, c.last_transition), (30, 10));
    }

    #[test]
    fn zero_and_empty_fields_are_omitted_like_go_omitempty() {
        let s = RolloutStatus {
            current_step_index: Some(0),
            ..RolloutStatus::default()
        };
        let v = s.to_value();
        assert_eq!(v["currentStepIndex"], 0);
        assert!(v.get("pauseConditions").is_none());
        assert!(v.get("replicas").is_none());
        assert!(v.get("abort").is_none());
        assert_eq!(v["canary"], json!({}));
    }

    #[test]
    fn an_abort_condition_makes_the_phase_degraded_before_anything_else() {
        let mut s = RolloutStatus {
            pause_conditions: vec![PauseCondition {
                reason: reason::CANARY_PAUSE_STEP,
                start_time: 0,
            }],
            ..RolloutStatus::default()
        };
        assert_eq!(calculate_phase(5, false, false, &s).0, "Paused");
        s.set_condition(Condition::new(
            reason::PROGRESSING,
            "False",
            reason::ROLLOUT_ABORTED,
            "Rollout aborted update to revision 3",
            0,
        ));
        assert_eq!(
            calculate_phase(5, false, false, &s),
            (
                "Degraded".to_owned(),
                "RolloutAborted: Rollout aborted update to revision 3".to_owned()
            )
        );
    }
}
