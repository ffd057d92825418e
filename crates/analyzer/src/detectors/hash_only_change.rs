//! `hash-only-change` (warning): a new pod-template hash for a semantically identical template.
//!
//! # What it detects
//! `status.currentPodHash` changed although the two revisions' pod templates are semantically
//! identical (compared as JSON, the `rollouts-pod-template-hash` label ignored).
//!
//! # Why it matters
//! The stored hash cannot be trusted to mean "the template changed": upgrades of the Argo
//! Rollouts controller changed the hash function (upstream issues #4696, #1356), so every rollout
//! ran a canary with nothing changed, and a pipeline that keys on the hash sees a release nobody
//! made.
//!
//! # Example
//! After a controller upgrade, `checkout-api-6d8f7c9b54` replaced `checkout-api-5f7d9c8b46`
//! with an identical template.
//!
//! # Remedy
//! `kubectl argo rollouts promote NAME -n NS --full` once the templates are checked.
//!
//! # Before the sync
//! `lint` reads a pod-template label or annotation whose key says it is made at render time
//! (`rollme`, a timestamp, a date, `now`): every render makes a new hash of an unchanged release.

use crate::detectors::{Comparisons, Detector, PendingDiff, argo};
use crate::model::diff::Change;
use crate::report::finding::{Finding, Rule, Subject};
use crate::base::At;
use crate::model::rollout::{RolloutTrack, Transition};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(HashOnlyChange::default())
}

#[derive(Debug)]
pub(crate) struct HashOnlyChange(Comparisons);

impl Default for HashOnlyChange {
    fn default() -> Self {
        HashOnlyChange(Comparisons::new(emit))
    }
}

fn emit(
    p: &PendingDiff,
    track: &RolloutTrack,
    changes: Vec<Change>,
    source: &'static str,
    out: &mut Vec<Finding>,
) {
    if !changes.is_empty() {
        return;
    }
    let (from, to) = (&p.change.from, &p.change.to);
    let (rs_a, rs_b) = (track.rs_name(from), track.rs_name(to));
    let mut evidence = Vec::new();
    for hash in [from, to] {
        if let Some(rs) = track.rs_by_hash(hash) {
            let pos = rs.created.unwrap_or(rs.last);
            evidence.push(track.rs_evidence(rs, pos, format!("pod template of revision {hash}")));
        }
    }
    evidence.push(track.evidence(p.pos, format!("currentPodHash {from} -> {to}")));
    out.push(
        Finding::new(
            Rule::HashOnlyChange,
            track.subject(),
            track.subject(),
            p.pos.at,
            format!("new pod-template hash {to} for an identical template (was {from})"),
        )
        .explain(format!(
            "{rs_a} and {rs_b} have semantically identical pod templates ({source} compared, hash label ignored), yet the controller computed a different hash and started a new revision. Controller upgrades have changed the hash function (upstream issues #4696, #1356): nothing about the application changed."
        ))
        .with_evidence(evidence)
        .remedy(
            "Nothing changed in the application: the steps of this canary test nothing new; promote it fully once you have checked the templates match.".to_owned(),
            vec![format!("kubectl argo rollouts get rollout {}", argo(track))],
            "Before upgrading the Argo Rollouts controller, read its release notes for pod-template-hash changes and plan for every rollout to run one no-op canary; do not key pipeline logic on the hash alone.".to_owned(),
        )
        .decide(vec![format!("kubectl argo rollouts promote {} --full", argo(track))]),
    );
}

impl Detector for HashOnlyChange {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(change) = t.revision.filter(|c| !c.deferred) else {
            return;
        };
        self.0.queue(t, change, out);
    }

    fn on_replicaset(&mut self, track: &RolloutTrack, out: &mut Vec<Finding>) {
        self.0.retry(track, out);
    }

    fn on_end(
        &mut self,
        tracks: &[&RolloutTrack],
        _world: &crate::model::world::World,
        _end: At,
        findings: &mut Vec<Finding>,
        _undecided: &mut Vec<(Subject, String)>,
    ) {
        self.0.drain(tracks, findings);
    }
}

#[cfg(test)]
mod tests {
    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_new_hash_for_an_identical_template_is_reported() {
        let mut kit = Kit::new();
        kit.advance(10);
        kit.new_revision("h9", template("app:1", "c0"));
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::HashOnlyChange)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("h9") && f[0].summary.contains("stable0"));
        assert!(f[0].remedy.decisions[0].contains("promote checkout-api -n payments --full"));
        assert!(
            f[0].remedy.commands.iter().all(|c| !c.contains("promote")),
            "{:?}",
            f[0].remedy
        );
    }

    #[test]
    fn a_real_template_change_is_not_hash_only() {
        let mut kit = Kit::new();
        kit.new_revision("h1", template("app:2", "c0"));
        kit.new_revision("h2", template("app:2", "c9"));
        assert!(
            !kit.rules().contains(&Rule::HashOnlyChange),
            "{:?}",
            kit.rules()
        );
    }
}
