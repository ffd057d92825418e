//! The rollouts controller's reconcile loop, modelled on Argo Rollouts v1.9/v1.10
//! (`rollout/controller.go`, `sync.go`, `canary.go`, `bluegreen.go`, `service.go`, `pause.go`):
//! one sync per call, writing the objects it changes in the order the real controller does.

use rf_format::Op;

use crate::hash::{steps_hash, uid};
use crate::objects::{
    DESIRED_REPLICAS, HASH_LABEL, Meta, Owner, REVISION, REVISION_HISTORY, ReplicaSet, RsStatus,
    SCALE_DOWN_DEADLINE, fields, manager,
};
use crate::sim::{Sim, template_labels};
use crate::spec::{BlueGreenConfig, Step, replica_set_template, steps_value};
use crate::status::{Condition, PauseCondition, RolloutStatus, calculate_phase, reason};

/// What a sync decided about pauses and aborts (`pauseContext`).
#[derive(Debug, Default, Clone, Copy)]
struct PauseCtx {
    add_pause: bool,
    remove_pause: bool,
    clear_pause: bool,
    remove_abort: bool,
}

impl PauseCtx {
    fn aborted(self, status: &RolloutStatus) -> bool {
        !self.remove_abort && status.abort
    }
}

impl Sim {
    /// One reconcile of the Rollout.
    pub(crate) fn sync_rollout(&mut self) {
        let hash = self.hash_fn.pod_template_hash(&self.rollout.template, None);
        if self.rs(&hash).is_none() {
            // newRolloutContext creates the RS, then reconcile() exits early because the
            // Rollout was modified.
            self.create_desired_replica_set(&hash);
            return;
        }
        if self.rollout.status.observed_generation == self.rollout.generation().to_string()
            && self.check_paused_conditions()
        {
            return;
        }
        self.sync_replica_set_revision(&hash);
        if self.rollout.blue_green.is_some() {
            self.sync_blue_green(&hash);
            return;
        }
        if self.pod_template_or_steps_changed(&hash) {
            self.set_rollout_revision(&hash);
            self.reset_rollout_status(&hash);
            return;
        }
        self.set_rollout_revision(&hash);
        self.reconcile_revision_history_limit(&hash);
        self.reconcile_ephemeral_metadata(&hash);
        self.reconcile_stable_service();
        self.reconcile_canary_service(&hash);
        self.reconcile_nginx(&hash);
        let mut ctx = PauseCtx::default();
        if !self.reconcile_canary_replica_sets(&hash) {
            self.reconcile_canary_pause(&mut ctx);
        }
        self.sync_rollout_status_canary(&hash, ctx);
    }

    /// `reconcileStableAndCanaryService` for a canary's stableService (`ensureSVCTargets` with
    /// availability checked): the stable revision's hash on its selector, once its ReplicaSet
    /// is fully available.
    fn reconcile_stable_service(&mut self) {
        let Some(service) = self.rollout.stable_service.clone() else {
            return;
        };
        let stable = self.rollout.status.stable_rs.clone();
        let available = self
            .rs(&stable)
            .is_some_and(|rs| rs.replicas > 0 && rs.status.available >= rs.replicas);
        if !stable.is_empty() && available {
            self.point_service(&service, &stable);
        }
    }

    /// `reconcileStableAndCanaryService` for a canary's canaryService: the new revision's
    /// hash on its selector, once its ReplicaSet is fully available.
    fn reconcile_canary_service(&mut self, hash: &str) {
        let Some(service) = self.rollout.canary_service.clone() else {
            return;
        };
        let available = self
            .rs(hash)
            .is_some_and(|rs| rs.replicas > 0 && rs.status.available >= rs.replicas);
        if available {
            self.point_service(&service, hash);
        }
    }

    // ---- ReplicaSet creation and revisions ----------------------------------------------

    fn create_desired_replica_set(&mut self, hash: &str) {
        let revision = self
            .replica_sets
            .iter()
            .map(ReplicaSet::revision)
            .max()
            .unwrap_or(0)
            + 1;
        let ns = self.config.namespace.clone();
        let name = format!("{}-{hash}", self.rollout.meta.name);
        let mut meta = Meta::new(
            name.clone(),
            ns.clone(),
            uid(&format!("{ns}/{name}/replicaset/{}", self.now)),
            self.now,
        );
        meta.generation = Some(1);
        meta.labels = template_labels(&self.rollout.template);
        meta.labels.insert(HASH_LABEL.to_owned(), hash.to_owned());
        meta.annotations.insert(
            DESIRED_REPLICAS.to_owned(),
            self.rollout.replicas.to_string(),
        );
        meta.annotations
            .insert(REVISION.to_owned(), revision.to_string());
        meta.owner = Some(Owner::rollout(
            self.rollout.meta.name.clone(),
            self.rollout.meta.uid.clone(),
        ));
        // The role's labels go on the template after the hash is computed: the canary's, or
        // the stable's for a first revision.
        let mut template = replica_set_template(&self.rollout.template, hash);
        let role = self.role_labels(!self.rollout.status.stable_rs.is_empty());
        if role.is_some() {
            Sim::set_role(&mut template, role.as_ref());
        }
        self.replica_sets.push(ReplicaSet {
            meta,
            hash: hash.to_owned(),
            replicas: 0,
            app: self.rollout.app.clone(),
            template,
            status: RsStatus::default(),
            ready_clock: self.now,
        });
        self.touch_replica_set(
            hash,
            manager::ROLLOUTS,
            None,
            fields::rollouts_replica_set(),
        );
        self.write_replica_set(hash, Op::Added);
        self.set_rollout_revision_to(revision);
        self.record_event(
            false,
            "NewReplicaSetCreated",
            format!("Created ReplicaSet {name} (revision {revision})"),
        );
        let now = self.now;
        self.rollout.status.set_condition(Condition::new(
            reason::PROGRESSING,
            "True",
            reason::NEW_RS_CREATED,
            format!("Created new replica set \"{name}\""),
            now,
        ));
        self.touch_rollout(
            manager::ROLLOUTS,
            "Update",
            Some("status"),
            fields::rollouts_status(),
        );
        self.write_rollout(Op::Modified);
    }

    /// `syncReplicaSetRevision`: a reused RS gets revision max(other revisions) + 1, its old
    /// number appended to `revision-history`.
    fn sync_replica_set_revision(&mut self, hash: &str) {
        let new_revision = self
            .replica_sets
            .iter()
            .filter(|rs| rs.hash != hash)
            .map(ReplicaSet::revision)
            .max()
            .unwrap_or(0)
            + 1;
        let Some(rs) = self.rs_mut(hash) else {
            return;
        };
        let old_revision = rs.meta.annotations.get(REVISION).cloned();
        if rs.revision() >= new_revision {
            return;
        }
        rs.meta
            .annotations
            .insert(REVISION.to_owned(), new_revision.to_string());
        if let Some(old) = old_revision {
            let history = match rs.meta.annotations.get(REVISION_HISTORY) {
                Some(h) if !h.is_empty() => format!("{h},{old}"),
                _ => old,
            };
            rs.meta
                .annotations
                .insert(REVISION_HISTORY.to_owned(), history);
        }
        self.controller_writes_replica_set(hash);
    }

    /// The rollouts controller updates ReplicaSet `hash` (its managedFields entry and a
    /// MODIFIED event).
    fn controller_writes_replica_set(&mut self, hash: &str) {
        self.touch_replica_set(
            hash,
            manager::ROLLOUTS,
            None,
            fields::rollouts_replica_set(),
        );
        self.write_replica_set(hash, Op::Modified);
    }

    fn set_rollout_revision(&mut self, hash: &str) {
        if let Some(revision) = self.rs(hash).map(ReplicaSet::revision) {
            self.set_rollout_revision_to(revision);
        }
    }

    /// `setRolloutRevision`: an Update of the Rollout's metadata, then `RolloutUpdated`.
    fn set_rollout_revision_to(&mut self, revision: i64) {
        if self.rollout.revision() == revision {
            return;
        }
        self.rollout
            .meta
            .annotations
            .insert(REVISION.to_owned(), revision.to_string());
        self.touch_rollout(
            manager::ROLLOUTS,
            "Update",
            None,
            fields::rollouts_metadata(),
        );
        self.write_rollout(Op::Modified);
        self.record_event(
            false,
            "RolloutUpdated",
            format!("Rollout updated to revision {revision}"),
        );
    }

    // ---- status ---------------------------------------------------------------------------

    fn current_steps_hash(&self) -> String {
        steps_hash(&steps_value(&self.rollout.steps))
    }

    fn pod_template_or_steps_changed(&self, hash: &str) -> bool {
        let status = &self.rollout.status;
        if self.rollout.blue_green.is_some() {
            // No steps: only the pod template counts.
            return !status.current_pod_hash.is_empty() && status.current_pod_hash != hash;
        }
        status.current_step_hash.is_empty()
            || status.current_step_hash != self.current_steps_hash()
            || (!status.current_pod_hash.is_empty() && status.current_pod_hash != hash)
    }

    /// `calculateBaseStatus` and the common part of `syncRolloutStatusCanary`.
    fn base_status(&self, hash: &str) -> RolloutStatus {
        let old = &self.rollout.status;
        let sum = |f: fn(&ReplicaSet) -> i32| self.replica_sets.iter().map(f).sum::<i32>();
        let replicas = sum(|rs| rs.status.replicas);
        RolloutStatus {
            current_pod_hash: hash.to_owned(),
            replicas,
            updated_replicas: self.rs(hash).map_or(0, |rs| rs.status.replicas),
            ready_replicas: sum(|rs| rs.status.ready),
            available_replicas: sum(|rs| rs.status.available),
            conditions: old.conditions.clone(),
            promote_full: hash != old.stable_rs && old.promote_full,
            hpa_replicas: replicas,
            selector: format!("app={}", self.rollout.app),
            stable_rs: old.stable_rs.clone(),
            current_step_hash: if self.rollout.blue_green.is_some() {
                String::new()
            } else {
                self.current_steps_hash()
            },
            active_selector: old.active_selector.clone(),
            preview_selector: old.preview_selector.clone(),
            weights: self.weights_value(),
            ..RolloutStatus::default()
        }
    }

    /// The pause the controller adds: a canary's pause step, or a blue-green rollout's pause
    /// before promotion.
    fn pause_reason(&self) -> &'static str {
        if self.rollout.blue_green.is_some() {
            reason::BLUE_GREEN_PAUSE
        } else {
            reason::CANARY_PAUSE_STEP
        }
    }

    /// The reset after a template or steps change: pause and abort cleared, index 0 (or
    /// `len(steps)` on a rollback to the stable ReplicaSet).
    fn reset_rollout_status(&mut self, hash: &str) {
        let old_pod_hash = self.rollout.status.current_pod_hash.clone();
        let stable = self.rollout.status.stable_rs.clone();
        let mut status = self.base_status(hash);
        let ctx = PauseCtx {
            clear_pause: true,
            remove_abort: true,
            ..PauseCtx::default()
        };
        status.promote_full = false;
        let len = self.steps_len();
        status.current_step_index = (len > 0).then_some(0);
        if len > 0 && stable == hash {
            self.record_event(
                false,
                "SkipSteps",
                "Rollback to stable ReplicaSets".to_owned(),
            );
            status.current_step_index = Some(len);
        }
        if self.leak && !old_pod_hash.is_empty() && old_pod_hash != hash && old_pod_hash != stable {
            self.replaced.insert(old_pod_hash);
        }
        self.persist_rollout_status(status, ctx, hash);
    }

    /// `syncRolloutStatusCanary` after the ReplicaSets and pauses were reconciled.
    fn sync_rollout_status_canary(&mut self, hash: &str, mut ctx: PauseCtx) {
        let old = self.rollout.status.clone();
        let mut status = self.base_status(hash);
        let len = self.steps_len();
        let old_index = old.current_step_index.unwrap_or(0);
        let mut index = old_index;
        if old.promote_full {
            ctx.clear_pause = true;
            ctx.remove_abort = true;
            if len > 0 {
                index = len;
            }
        }
        if let Some(why) = self.should_full_promote(hash, ctx, old_index) {
            ctx.clear_pause = true;
            ctx.remove_abort = true;
            status.promote_full = false;
            status.current_step_index = (len > 0).then_some(len);
            if status.stable_rs != status.current_pod_hash {
                status.stable_rs = hash.to_owned();
                let revision = self.rollout.revision();
                self.record_event(
                    false,
                    "RolloutCompleted",
                    format!("Rollout completed update to revision {revision} ({hash}): {why}"),
                );
            }
            self.persist_rollout_status(status, ctx, hash);
            return;
        }
        if ctx.aborted(&old) {
            if len > 0 {
                status.current_step_index = Some(if status.stable_rs == status.current_pod_hash {
                    len
                } else {
                    0
                });
            }
            self.persist_rollout_status(status, ctx, hash);
            return;
        }
        if let Some(step) = self.step(index) {
            if self.completed_current_canary_step(hash, step) {
                index += 1;
                self.record_event(
                    false,
                    "RolloutStepCompleted",
                    format!("Rollout step {index}/{len} completed ({})", step.describe()),
                );
                ctx.remove_pause = true;
            }
        }
        status.current_step_index = (len > 0).then_some(index);
        self.persist_rollout_status(status, ctx, hash);
    }

    /// `shouldFullPromote` for a canary: the reason to mark the new RS stable, if any.
    fn should_full_promote(&self, hash: &str, ctx: PauseCtx, index: u32) -> Option<String> {
        let status = &self.rollout.status;
        if status.stable_rs.is_empty() || self.rs(&status.stable_rs).is_none() {
            return Some("Initial deploy".to_owned());
        }
        if ctx.aborted(status) {
            return None;
        }
        if self.rs(hash).map_or(0, |rs| rs.status.available) < self.rollout.replicas {
            return None;
        }
        if status.promote_full {
            return Some("Full promotion requested".to_owned());
        }
        if status.stable_rs == hash {
            return Some("Fast rollback".to_owned());
        }
        let len = self.steps_len();
        (len == 0 || index == len).then(|| format!("Completed all {len} canary steps"))
    }

    /// `completedCurrentCanaryStep`.
    fn completed_current_canary_step(&self, hash: &str, step: Step) -> bool {
        let status = &self.rollout.status;
        match step {
            Step::Pause(duration) => {
                let cond = status.pause_condition(reason::CANARY_PAUSE_STEP);
                match (cond, duration) {
                    (None, _) => status.controller_pause,
                    (Some(cond), Some(secs)) => self.now > cond.start_time + i64::from(secs),
                    (Some(_), None) => false,
                }
            }
            Step::SetWeight(_) => self.at_desired_replica_counts(hash),
        }
    }

    /// `persistRolloutStatus`: pause and abort fields, conditions, phase; a status patch when
    /// anything changed, then the state-change events.
    fn persist_rollout_status(&mut self, mut status: RolloutStatus, ctx: PauseCtx, hash: &str) {
        let old = self.rollout.status.clone();
        let now = self.now;
        status.observed_generation = self.rollout.generation().to_string();
        if ctx.aborted(&old) {
            status.abort = true;
            status.aborted_at = Some(old.aborted_at.unwrap_or(now));
        } else if !ctx.clear_pause {
            let mut conditions: Vec<PauseCondition> = old
                .pause_conditions
                .iter()
                .filter(|p| !(ctx.remove_pause && p.reason == self.pause_reason()))
                .cloned()
                .collect();
            let mut controller_pause = old.controller_pause;
            if ctx.add_pause && old.pause_condition(self.pause_reason()).is_none() {
                conditions.push(PauseCondition {
                    reason: self.pause_reason(),
                    start_time: now,
                });
                controller_pause = true;
            }
            if !conditions.is_empty() {
                status.controller_pause = controller_pause;
                status.pause_conditions = conditions;
            }
        }
        self.calculate_rollout_conditions(&mut status, ctx, hash);
        let (phase, message) = calculate_phase(
            self.rollout.replicas,
            self.rollout.blue_green.is_some(),
            self.routing.is_some(),
            &status,
        );
        status.phase = phase;
        status.message = message;
        if status == old {
            return;
        }
        self.rollout.status = status;
        self.touch_rollout(
            manager::ROLLOUTS,
            "Update",
            Some("status"),
            fields::rollouts_status(),
        );
        self.write_rollout(Op::Modified);
        self.send_state_change_events(&old);
    }

    /// `conditions.RolloutHealthy`.
    fn rollout_healthy(&self, status: &RolloutStatus) -> bool {
        let replicas = self.rollout.replicas;
        let len = self.steps_len();
        let all_steps = len == 0 || status.current_step_index.is_none_or(|i| i == len);
        let current_is_stable =
            !status.stable_rs.is_empty() && status.stable_rs == status.current_pod_hash;
        status.updated_replicas == replicas
            && status.available_replicas == replicas
            && self.rollout.status.observed_generation == self.rollout.generation().to_string()
            && all_steps
            && current_is_stable
            && status.replicas == replicas
    }

    /// `calculateRolloutConditions`.
    fn calculate_rollout_conditions(
        &mut self,
        status: &mut RolloutStatus,
        ctx: PauseCtx,
        hash: &str,
    ) {
        let old = self.rollout.status.clone();
        let now = self.now;
        let revision = self.rollout.revision();
        let rs_name = format!("{}-{hash}", self.rollout.meta.name);
        let paused = !status.pause_conditions.is_empty();
        let aborted = ctx.aborted(&old);
        let healthy = self.rollout_healthy(status);

        let mut became_unhealthy = false;
        if !paused && healthy {
            status.set_condition(Condition::new(
                reason::HEALTHY,
                "True",
                reason::ROLLOUT_HEALTHY,
                "Rollout is healthy",
                now,
            ));
        } else if old.condition(reason::HEALTHY).is_some() {
            became_unhealthy = status.set_condition(Condition::new(
                reason::HEALTHY,
                "False",
                reason::ROLLOUT_HEALTHY,
                "Rollout is not healthy",
                now,
            ));
        }
        if aborted {
            let message = format!("Rollout aborted update to revision {revision}");
            if status.set_condition(Condition::new(
                reason::PROGRESSING,
                "False",
                reason::ROLLOUT_ABORTED,
                message.clone(),
                now,
            )) {
                self.record_event(true, "RolloutAborted", message);
            }
        } else if healthy {
            status.set_condition(Condition::new(
                reason::PROGRESSING,
                "True",
                reason::NEW_RS_AVAILABLE,
                format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
                now,
            ));
        } else if rollout_progressing(&old, status) || became_unhealthy {
            let (why, message) = if status.stable_rs == status.current_pod_hash && became_unhealthy
            {
                (
                    reason::RS_NOT_AVAILABLE,
                    "Rollout does not have minimum availability".to_owned(),
                )
            } else {
                (
                    reason::RS_UPDATED,
                    format!("ReplicaSet \"{rs_name}\" is progressing."),
                )
            };
            let mut condition = Condition::new(reason::PROGRESSING, "True", why, message, now);
            if let Some(current) = old.condition(reason::PROGRESSING) {
                if current.status == "True" {
                    condition.last_transition = current.last_transition;
                }
                status.remove_condition(reason::PROGRESSING);
            }
            status.set_condition(condition);
        }
        let available: i32 = self.replica_sets.iter().map(|rs| rs.status.available).sum();
        status.set_condition(if available >= self.rollout.replicas {
            Condition::new(
                reason::AVAILABLE,
                "True",
                reason::AVAILABLE_REASON,
                "Rollout has minimum availability",
                now,
            )
        } else {
            Condition::new(
                reason::AVAILABLE,
                "False",
                reason::AVAILABLE_REASON,
                "Rollout does not have minimum availability",
                now,
            )
        });
        if !status.stable_rs.is_empty() && status.stable_rs == status.current_pod_hash {
            status.set_condition(Condition::new(
                reason::COMPLETED,
                "True",
                reason::ROLLOUT_COMPLETED,
                reason::ROLLOUT_COMPLETED,
                now,
            ));
        } else if status.set_condition(Condition::new(
            reason::COMPLETED,
            "False",
            reason::ROLLOUT_COMPLETED,
            reason::ROLLOUT_COMPLETED,
            now,
        )) {
            self.record_event(
                false,
                "RolloutNotCompleted",
                format!(
                    "Rollout not completed, started update to revision {revision} ({})",
                    status.current_pod_hash
                ),
            );
        }
    }

    /// `sendStateChangeEvents`.
    fn send_state_change_events(&mut self, old: &RolloutStatus) {
        let was_paused = !old.pause_conditions.is_empty();
        let new = &self.rollout.status;
        let paused = !new.pause_conditions.is_empty();
        if was_paused == paused {
            return;
        }
        if let Some(first) = new.pause_conditions.first() {
            let message = format!("Rollout is paused ({})", first.reason);
            self.record_event(false, "RolloutPaused", message);
        } else if new.aborted_at.is_none() {
            self.record_event(false, "RolloutResumed", "Rollout is resumed".to_owned());
        }
    }

    /// `checkPausedConditions`: keeps the Progressing and Paused conditions in line with the
    /// pause state; when it writes, the sync ends there. Returns whether it wrote.
    fn check_paused_conditions(&mut self) -> bool {
        let old = self.rollout.status.clone();
        let now = self.now;
        let progressing = old.condition(reason::PROGRESSING);
        let progressing_paused = progressing.is_some_and(|c| c.reason == reason::ROLLOUT_PAUSED);
        let abort_condition = progressing.is_some_and(|c| c.reason == reason::ROLLOUT_ABORTED);
        let paused = !old.pause_conditions.is_empty();
        let completed = !old.stable_rs.is_empty() && old.stable_rs == old.current_pod_hash;
        let mut updates = Vec::new();
        if paused != progressing_paused && !abort_condition && !completed {
            updates.push(if paused {
                Condition::new(
                    reason::PROGRESSING,
                    "Unknown",
                    reason::ROLLOUT_PAUSED,
                    "Rollout is paused",
                    now,
                )
            } else {
                Condition::new(
                    reason::PROGRESSING,
                    "Unknown",
                    reason::ROLLOUT_RESUMED,
                    "Rollout is resumed",
                    now,
                )
            });
        }
        if !old.abort && abort_condition {
            updates.push(Condition::new(
                reason::PROGRESSING,
                "Unknown",
                reason::ROLLOUT_RETRY,
                "Retrying Rollout after abort",
                now,
            ));
        }
        let paused_true = old
            .condition(reason::PAUSED)
            .is_some_and(|c| c.status == "True");
        if paused != paused_true && !abort_condition {
            updates.push(Condition::new(
                reason::PAUSED,
                if paused { "True" } else { "False" },
                reason::ROLLOUT_PAUSED,
                "Rollout is paused",
                now,
            ));
        }
        if updates.is_empty() {
            return false;
        }
        let mut status = old.clone();
        for condition in updates {
            status.set_condition(condition);
        }
        status.observed_generation = self.rollout.generation().to_string();
        let (phase, message) = calculate_phase(
            self.rollout.replicas,
            self.rollout.blue_green.is_some(),
            self.routing.is_some(),
            &status,
        );
        status.phase = phase;
        status.message = message;
        if status == old {
            return false;
        }
        self.rollout.status = status;
        self.touch_rollout(
            manager::ROLLOUTS,
            "Update",
            Some("status"),
            fields::rollouts_status(),
        );
        self.write_rollout(Op::Modified);
        true
    }

    // ---- ReplicaSet scaling ---------------------------------------------------------------

    /// The stable RS's hash, when it exists and is not the new RS.
    fn stable_other_than(&self, hash: &str) -> Option<String> {
        let stable = &self.rollout.status.stable_rs;
        (!stable.is_empty() && stable != hash && self.rs(stable).is_some()).then(|| stable.clone())
    }

    /// The canary weight the current step asks for.
    fn current_weight(&self) -> i32 {
        let status = &self.rollout.status;
        if status.abort {
            return 0;
        }
        if status.promote_full {
            return 100;
        }
        let index = status.current_step_index.unwrap_or(0);
        if index >= self.steps_len() {
            return 100;
        }
        (0..=index)
            .rev()
            .find_map(|i| match self.step(i) {
                Some(Step::SetWeight(w)) => Some(i32::try_from(w).unwrap_or(100)),
                _ => None,
            })
            .unwrap_or(0)
    }

    /// Desired replicas of (new RS, stable RS) for a basic canary.
    fn desired_counts(&self, hash: &str) -> (i32, i32) {
        let replicas = self.rollout.replicas;
        if self.stable_other_than(hash).is_none() {
            return (replicas, 0);
        }
        let canary = (replicas * self.current_weight() + 99) / 100;
        if self.routing.is_some() {
            // `CalculateReplicaCountsForTrafficRoutedCanary`: the stable stays fully scaled.
            return (canary, replicas);
        }
        (canary, replicas - canary)
    }

    /// `AtDesiredReplicaCountsForCanary` (ReplicaSets marked with an empty
    /// `scale-down-deadline` are not counted: nothing will ever scale them down).
    pub(crate) fn at_desired_replica_counts(&self, hash: &str) -> bool {
        let (new_desired, stable_desired) = self.desired_counts(hash);
        let Some(new) = self.rs(hash) else {
            return false;
        };
        if new.replicas != new_desired || new.status.available < new_desired {
            return false;
        }
        let stable = self.stable_other_than(hash);
        if let Some(stable) = stable.as_deref().and_then(|h| self.rs(h)) {
            if stable.replicas != stable_desired || stable.status.replicas != stable_desired {
                return false;
            }
        }
        let others: i32 = self
            .replica_sets
            .iter()
            .filter(|rs| rs.hash != hash && Some(&rs.hash) != stable.as_ref() && !rs.leaked())
            .map(|rs| rs.status.available)
            .sum();
        others == 0
    }

    /// The lowest replica count `hash` may go down to now without dropping below the minimum
    /// availability (maxUnavailable 25%), but not below `desired`.
    fn scale_down_target(&self, hash: &str, desired: i32) -> i32 {
        let replicas = self.rollout.replicas;
        let available: i32 = self.replica_sets.iter().map(|rs| rs.status.available).sum();
        let min_available = replicas - replicas / 4;
        let max_scale_down = (available - min_available).max(0);
        let Some(rs) = self.rs(hash) else {
            return desired;
        };
        let unavailable = (rs.replicas - rs.status.available).max(0);
        (rs.replicas - unavailable - max_scale_down).max(desired)
    }

    /// `reconcileCanaryReplicaSets`: at most one ReplicaSet write per sync. Returns whether it
    /// wrote.
    fn reconcile_canary_replica_sets(&mut self, hash: &str) -> bool {
        let (new_desired, stable_desired) = self.desired_counts(hash);
        let stable = self.stable_other_than(hash);
        let new_replicas = self.rs(hash).map_or(0, |rs| rs.replicas);
        if new_replicas < new_desired {
            self.scale_replica_set(hash, new_desired);
            return true;
        }
        if let Some(stable) = stable.as_deref() {
            if self
                .rs(stable)
                .is_some_and(|rs| rs.replicas < stable_desired)
            {
                self.scale_replica_set(stable, stable_desired);
                return true;
            }
        }
        let mut others: Vec<(i64, String)> = self
            .replica_sets
            .iter()
            .filter(|rs| rs.hash != hash && Some(&rs.hash) != stable.as_ref() && rs.replicas > 0)
            .map(|rs| (rs.revision(), rs.hash.clone()))
            .collect();
        others.sort_by(|a, b| b.cmp(a));
        for (_, other) in others {
            if self.rs(&other).is_some_and(ReplicaSet::leaked) {
                continue;
            }
            if self.routing.is_some() {
                // With traffic routing a replaced ReplicaSet waits out scaleDownDelaySeconds
                // (30 s) under a `scale-down-deadline`.
                if self.scale_down_after_deadline(&other, 30) {
                    return true;
                }
                continue;
            }
            if self.leak && self.replaced.remove(&other) {
                self.mark_scale_down_deadline_empty(&other);
                return true;
            }
            let target = self.scale_down_target(&other, 0);
            if self.rs(&other).is_some_and(|rs| target < rs.replicas) {
                self.scale_replica_set(&other, target);
                return true;
            }
        }
        if new_replicas > new_desired {
            let target = self.scale_down_target(hash, new_desired);
            if target < new_replicas {
                self.scale_replica_set(hash, target);
                return true;
            }
        }
        if let Some(stable) = stable.as_deref() {
            let target = self.scale_down_target(stable, stable_desired);
            if self.rs(stable).is_some_and(|rs| target < rs.replicas) {
                self.scale_replica_set(stable, target);
                return true;
            }
        }
        false
    }

    /// `scaleReplicaSetAndRecordEvent`.
    fn scale_replica_set(&mut self, hash: &str, replicas: i32) {
        let rollout_replicas = self.rollout.replicas.to_string();
        let Some(rs) = self.rs_mut(hash) else {
            return;
        };
        let from = rs.replicas;
        rs.replicas = replicas;
        rs.meta.generation = Some(rs.generation() + 1);
        rs.meta
            .annotations
            .insert(DESIRED_REPLICAS.to_owned(), rollout_replicas);
        if replicas == 0 {
            rs.meta.annotations.remove(SCALE_DOWN_DEADLINE);
        }
        let (name, revision) = (rs.meta.name.clone(), rs.revision());
        self.controller_writes_replica_set(hash);
        let direction = if replicas > from { "up" } else { "down" };
        self.record_event(
            false,
            "ScalingReplicaSet",
            format!("Scaled {direction} ReplicaSet {name} (revision {revision}) from {from} to {replicas}"),
        );
    }

    /// The upstream bug: the replaced canary gets `scale-down-deadline: ""`, which no later
    /// sync treats as a deadline, so it is never scaled down.
    fn mark_scale_down_deadline_empty(&mut self, hash: &str) {
        let Some(rs) = self.rs_mut(hash) else {
            return;
        };
        rs.meta
            .annotations
            .insert(SCALE_DOWN_DEADLINE.to_owned(), String::new());
        self.controller_writes_replica_set(hash);
    }

    /// `reconcileRevisionHistoryLimit`: deletes the oldest scaled-down ReplicaSets beyond
    /// `spec.revisionHistoryLimit` (neither new nor stable).
    fn reconcile_revision_history_limit(&mut self, hash: &str) {
        let stable = self.rollout.status.stable_rs.clone();
        let mut cleanable: Vec<(i64, String)> = self
            .replica_sets
            .iter()
            .filter(|rs| rs.hash != hash && rs.hash != stable)
            .map(|rs| (rs.meta.creation, rs.hash.clone()))
            .collect();
        cleanable.sort();
        let limit = usize::try_from(self.rollout.revision_history_limit).unwrap_or(0);
        let excess = cleanable.len().saturating_sub(limit);
        for (_, victim) in cleanable.into_iter().take(excess) {
            let deletable = self.rs(&victim).is_some_and(|rs| {
                rs.status.replicas == 0
                    && rs.replicas == 0
                    && rs.generation() <= rs.status.observed_generation
            });
            if deletable {
                self.delete_replica_set(&victim);
            }
        }
    }

    /// `reconcileCanaryPause`: at a pause step the controller pauses once.
    fn reconcile_canary_pause(&self, ctx: &mut PauseCtx) {
        let status = &self.rollout.status;
        if status.promote_full {
            return;
        }
        let index = status.current_step_index.unwrap_or(0);
        if let Some(Step::Pause(_)) = self.step(index) {
            if status.pause_condition(reason::CANARY_PAUSE_STEP).is_none()
                && !status.controller_pause
            {
                ctx.add_pause = true;
            }
        }
    }
}

impl Sim {
    // ---- blue-green (`rollout/bluegreen.go`, `service.go`) ---------------------------------

    /// One blue-green reconcile after the new ReplicaSet exists: the preview Service follows
    /// the new revision at once; a new template resets the status; then the ReplicaSets, the
    /// pause before promotion, the active Service, and the status.
    fn sync_blue_green(&mut self, hash: &str) {
        let Some(bg) = self.rollout.blue_green.clone() else {
            return;
        };
        self.point_service(&bg.preview_service, hash);
        if self.pod_template_or_steps_changed(hash) {
            self.set_rollout_revision(hash);
            self.reset_rollout_status(hash);
            return;
        }
        self.set_rollout_revision(hash);
        self.reconcile_revision_history_limit(hash);
        let mut ctx = PauseCtx::default();
        if !self.reconcile_blue_green_replica_sets(hash, bg.scale_down_delay()) {
            self.reconcile_blue_green_pause(hash, &mut ctx);
            if !ctx.add_pause && self.rollout.status.pause_conditions.is_empty() {
                self.reconcile_active_service(&bg.active_service, hash);
            }
        }
        self.sync_rollout_status_blue_green(hash, &bg, ctx);
    }

    /// `isReplicaSetReferenced`: the new, stable, active or preview revision.
    fn referenced(&self, rs_hash: &str, new_hash: &str) -> bool {
        let s = &self.rollout.status;
        [
            new_hash,
            &s.stable_rs,
            &s.active_selector,
            &s.preview_selector,
        ]
        .iter()
        .any(|h| !h.is_empty() && *h == rs_hash)
    }

    /// `reconcileBlueGreenReplicaSets`: the new ReplicaSet up to `spec.replicas` (no
    /// `previewReplicaCount`), the active one kept there, and each other one given a
    /// `scale-down-deadline` `delay` seconds away, then scaled to 0 once it passed. At most one
    /// ReplicaSet write per sync; returns whether it wrote.
    fn reconcile_blue_green_replica_sets(&mut self, hash: &str, delay: u32) -> bool {
        let replicas = self.rollout.replicas;
        if self.rs(hash).is_some_and(|rs| rs.replicas < replicas) {
            self.scale_replica_set(hash, replicas);
            return true;
        }
        let active = self.rollout.status.active_selector.clone();
        if active != hash && self.rs(&active).is_some_and(|rs| rs.replicas < replicas) {
            self.scale_replica_set(&active, replicas);
            return true;
        }
        let others: Vec<String> = self
            .replica_sets
            .iter()
            .filter(|rs| rs.replicas > 0 && !self.referenced(&rs.hash, hash))
            .map(|rs| rs.hash.clone())
            .collect();
        for other in others {
            if self.scale_down_after_deadline(&other, delay) {
                return true;
            }
        }
        false
    }

    /// A replaced ReplicaSet `other` under `scaleDownDelaySeconds` (`delay`): first a
    /// `scale-down-deadline` that far ahead, then, once it has passed, scaled to 0. Returns
    /// whether it wrote.
    fn scale_down_after_deadline(&mut self, other: &str, delay: u32) -> bool {
        let now = self.now;
        let deadline = self
            .rs(other)
            .and_then(|rs| rs.meta.annotations.get(SCALE_DOWN_DEADLINE).cloned());
        match deadline.as_deref().and_then(crate::calendar::parse_rfc3339) {
            None => {
                if let Some(rs) = self.rs_mut(other) {
                    rs.meta.annotations.insert(
                        SCALE_DOWN_DEADLINE.to_owned(),
                        crate::calendar::rfc3339(now + i64::from(delay)),
                    );
                }
                self.controller_writes_replica_set(other);
                true
            }
            Some(at) if at <= now => {
                self.scale_replica_set(other, 0);
                true
            }
            Some(_) => false,
        }
    }

    /// `reconcileBlueGreenPause` without auto-promotion: once the new ReplicaSet is fully
    /// available and not yet active, the controller pauses, once (`controllerPause` stays set
    /// after a promotion cleared the condition).
    fn reconcile_blue_green_pause(&self, hash: &str, ctx: &mut PauseCtx) {
        let status = &self.rollout.status;
        if status.abort || status.active_selector == hash || status.active_selector.is_empty() {
            return;
        }
        let ready = self
            .rs(hash)
            .is_some_and(|rs| rs.status.available >= self.rollout.replicas);
        if ready && status.pause_conditions.is_empty() && !status.controller_pause {
            ctx.add_pause = true;
        }
    }

    /// `reconcileActiveService`: once the new ReplicaSet is fully available and nothing holds
    /// the rollout paused, the active Service is switched to it.
    fn reconcile_active_service(&mut self, service: &str, hash: &str) {
        let ready = self
            .rs(hash)
            .is_some_and(|rs| rs.status.available >= self.rollout.replicas);
        if ready {
            self.point_service(service, hash);
        }
    }

    /// `syncRolloutStatusBlueGreen`: the selectors the Services hold, the counts of the active
    /// ReplicaSet, and the promotion once the active Service is on the new revision.
    fn sync_rollout_status_blue_green(
        &mut self,
        hash: &str,
        bg: &BlueGreenConfig,
        mut ctx: PauseCtx,
    ) {
        let mut status = self.base_status(hash);
        status.preview_selector = self.service_hash(&bg.preview_service);
        status.active_selector = self.service_hash(&bg.active_service);
        if let Some(active) = self.rs(&status.active_selector) {
            status.available_replicas = active.status.available;
            status.ready_replicas = active.status.ready;
            status.hpa_replicas = active.status.replicas;
            status.selector = format!(
                "app={},{HASH_LABEL}={}",
                self.rollout.app, status.active_selector
            );
        }
        if status.active_selector == hash && status.stable_rs != hash {
            ctx.clear_pause = true;
            status.stable_rs = hash.to_owned();
            let revision = self.rollout.revision();
            self.record_event(
                false,
                "RolloutCompleted",
                format!("Rollout completed update to revision {revision} ({hash}): Completed blue-green update"),
            );
        }
        self.persist_rollout_status(status, ctx, hash);
    }
}

/// `conditions.RolloutProgressing` for a canary.
fn rollout_progressing(old: &RolloutStatus, new: &RolloutStatus) -> bool {
    let step_changed = match (new.current_step_index, old.current_step_index) {
        (Some(a), Some(b)) => a != b,
        _ => false,
    };
    new.updated_replicas != old.updated_replicas
        || (new.replicas - new.updated_replicas) < (old.replicas - old.updated_replicas)
        || new.ready_replicas > old.ready_replicas
        || new.available_replicas > old.available_replicas
        || new.stable_rs != old.stable_rs
        || step_changed
        || new.current_step_hash != old.current_step_hash
}
