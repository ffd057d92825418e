//! The detectors: one file per rule, each documented under the same headings (what it detects,
//! why it matters, example).

use std::fmt::Debug;

use crate::finding::Finding;
use crate::rollout::{At, RolloutTrack, Transition};

mod config_only_rerender;
mod hash_only_change;
mod manual_step_jump;
mod orphaned_replicaset;
mod pause_lost;
mod rerender_restart;
mod restart_churn;

/// A detector sees every rollout transition, every change of a rollout's ReplicaSets, and the
/// end of the analysis; it pushes what it finds.
pub(crate) trait Detector: Debug + Send {
    /// A rollout's state changed.
    fn on_transition(&mut self, _t: &Transition<'_>, _out: &mut Vec<Finding>) {}
    /// One of the rollout's ReplicaSets changed.
    fn on_replicaset(&mut self, _track: &RolloutTrack, _out: &mut Vec<Finding>) {}
    /// The analysis ends at `end` (the last record, or `--at`). `findings` holds every finding
    /// so far; a detector may amend its own.
    fn on_end(&mut self, _tracks: &[&RolloutTrack], _end: At, _findings: &mut Vec<Finding>) {}
}

/// One instance of every detector, in rule order.
pub(crate) fn all() -> Vec<Box<dyn Detector>> {
    vec![
        Box::new(rerender_restart::RerenderRestart),
        Box::new(pause_lost::PauseLost),
        Box::new(config_only_rerender::ConfigOnlyRerender::default()),
        Box::new(hash_only_change::HashOnlyChange::default()),
        Box::new(orphaned_replicaset::OrphanedReplicaSet),
        Box::new(manual_step_jump::ManualStepJump),
        Box::new(restart_churn::RestartChurn),
    ]
}

/// A revision change whose templates are compared once both are known (the new ReplicaSet can
/// arrive after the status that names its hash).
#[derive(Debug, Clone)]
pub(crate) struct PendingDiff {
    pub namespace: String,
    pub rollout: String,
    pub change: crate::rollout::RevisionChange,
    pub pos: At,
}

impl PendingDiff {
    pub fn of(track: &RolloutTrack, change: &crate::rollout::RevisionChange, pos: At) -> Self {
        PendingDiff {
            namespace: track.namespace.clone(),
            rollout: track.name.clone(),
            change: change.clone(),
            pos,
        }
    }

    pub fn is_for(&self, track: &RolloutTrack) -> bool {
        self.namespace == track.namespace && self.rollout == track.name
    }

    /// The template differences, when both templates are known.
    pub fn resolve(
        &self,
        track: &RolloutTrack,
    ) -> Option<(Vec<crate::diff::Change>, &'static str)> {
        let (a, b, source) = track.comparable_templates(&self.change.from, &self.change.to)?;
        Some((crate::diff::template_diff(&a, &b), source))
    }
}

/// Turns a resolved comparison into findings.
pub(crate) type EmitFn =
    fn(&PendingDiff, &RolloutTrack, Vec<crate::diff::Change>, &'static str, &mut Vec<Finding>);

/// Template comparisons waiting for both templates, shared by the detectors that compare the
/// two revisions of a change.
#[derive(Debug)]
pub(crate) struct Comparisons {
    pending: Vec<PendingDiff>,
    emit: EmitFn,
}

impl Comparisons {
    pub fn new(emit: EmitFn) -> Self {
        Comparisons {
            pending: Vec::new(),
            emit,
        }
    }

    /// Compares the templates of `change` now, or as soon as both are known.
    pub fn queue(
        &mut self,
        t: &Transition<'_>,
        change: &crate::rollout::RevisionChange,
        out: &mut Vec<Finding>,
    ) {
        self.pending
            .push(PendingDiff::of(t.track, change, t.cur.pos));
        self.drain(&[t.track], out);
    }

    /// A ReplicaSet of `track` changed: its template may complete a comparison.
    pub fn retry(&mut self, track: &RolloutTrack, out: &mut Vec<Finding>) {
        if self.pending.iter().any(|p| p.is_for(track)) {
            self.drain(&[track], out);
        }
    }

    /// Runs every comparison whose templates are known, keeping the others.
    pub fn drain(&mut self, tracks: &[&RolloutTrack], out: &mut Vec<Finding>) {
        let emit = self.emit;
        self.pending.retain(|p| {
            let Some(track) = tracks.iter().find(|t| p.is_for(t)) else {
                return true;
            };
            match p.resolve(track) {
                Some((changes, source)) => {
                    emit(p, track, changes, source, out);
                    false
                }
                None => true,
            }
        });
    }
}

/// `name` (namespace `ns`) as `kubectl argo rollouts` arguments.
pub(crate) fn argo(track: &RolloutTrack) -> String {
    format!("{} -n {}", track.name, track.namespace)
}

/// "step 1 (pause (until promoted))" for a step index of `track`.
pub(crate) fn step_words(track: &RolloutTrack, index: i64) -> String {
    let what = usize::try_from(index)
        .ok()
        .and_then(|i| track.steps.get(i))
        .map(|s| format!(" ({})", s.describe()))
        .unwrap_or_default();
    format!("step {index}{what}")
}
