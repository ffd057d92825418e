//! `config-only-rerender` (warning): the restart's two pod templates differ only in annotations
//! (e.g. `checksum/config`).
//!
//! # What it detects
//! A canary restart (see `rerender-restart`) whose two revisions' pod templates differ only in
//! `metadata.annotations` (the `rollouts-pod-template-hash` label ignored): typically a
//! `checksum/config` annotation that a Helm chart computes from rendered config. Both templates
//! come from the revisions' ReplicaSets, or both from the rollout's spec, never one of each; the
//! finding names each key with its old and new value. A comparison waits for a template not known
//! yet (a ReplicaSet seen after the status that names it); a rollout keeps its 16 latest waiting
//! comparisons, so one whose templates never come (a ReplicaSet deleted before the recording
//! began) is dropped in time. The same holds for `hash-only-change`.
//!
//! # Why it matters
//! The image and the rest of the template did not change: the same release was rendered twice
//! with different config inputs (inline values first, then a values file from a lagging
//! checkout), and the second render restarted the canary. Which writer made the second template
//! decides the remedy: a render race, Stakater Reloader after a ConfigMap change, a value made
//! at every render (`rollme`, a timestamp), or Flux upgrading twice. Image-only releases render identically twice, which is
//! why the race looks intermittent.
//!
//! # Example
//! `checkout-api-7b4c9f5d86` and `checkout-api-5d98c7bf64` differ only in
//! `metadata.annotations["checksum/config"]`: `9a41…` -> `c07e…`.
//!
//! # Remedy
//! Do not roll back; resolve the values revision before the image tag is written.

use crate::detectors::{Comparisons, Detector, PendingDiff};
use crate::model::diff::{Change, only_annotations};
use crate::report::finding::{Finding, Rule, Subject};
use crate::base::At;
use crate::model::rollout::{RevisionClass, RolloutTrack, Transition};


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(ConfigOnlyRerender::default())
}

#[derive(Debug)]
pub(crate) struct ConfigOnlyRerender(Comparisons);

impl Default for ConfigOnlyRerender {
    fn default() -> Self {
        ConfigOnlyRerender(Comparisons::new(emit))
    }
}

fn emit(
    p: &PendingDiff,
    track: &RolloutTrack,
    changes: Vec<Change>,
    source: &'static str,
    out: &mut Vec<Finding>,
) {
    if !only_annotations(&changes) {
        return;
    }
    let (from, to) = (&p.change.from, &p.change.to);
    let (rs_a, rs_b) = (track.rs_name(from), track.rs_name(to));
    let describe = |short: bool| -> Vec<String> {
        let show = |v: Option<&serde_json::Value>| {
            let s = Change::show(v);
            if short && s.chars().count() > 16 {
                format!("{}…", s.chars().take(12).collect::<String>())
            } else {
                s
            }
        };
        changes
            .iter()
            .map(|c| {
                format!(
                    "{}: {} -> {}",
                    c.path
                        .last_key()
                        .map_or_else(|| c.path.to_string(), str::to_owned),
                    show(c.old.as_ref()),
                    show(c.new.as_ref())
                )
            })
            .collect()
    };
    let summary = format!(
        "the re-render changed only pod-template annotations: {}",
        describe(true).join("; ")
    );
    let word = crate::detectors::revision_word(track);
    let paths: Vec<String> = changes.iter().map(|c| c.path.to_string()).collect();
    let story = crate::detectors::writer::story_with(
        p.change.render.as_ref(),
        p.change.previous_render.as_ref(),
        &paths,
        word,
        to,
        false,
    );
    // A checksum annotation changes with what it hashes: the config the pods read differs.
    let checksum = changes.iter().any(|c| {
        c.path
            .last_key()
            .is_some_and(|k| k.starts_with("checksum/") || k.contains("checksum"))
    });
    let cause = if !story.why.is_empty() {
        story.why.clone()
    } else if checksum {
        format!("A checksum annotation changes when the config it hashes does: the {word} restart came from rendering one release twice with different config inputs, and the second revision runs the config of the second render.")
    } else {
        format!("The {word} restart came from rendering one release twice with different annotations.")
    };
    let explanation = format!(
        "The pod templates of {from} ({rs_a}) and {to} ({rs_b}) differ only in metadata.annotations ({source} compared, hash label ignored): {}. Image, env, resources and everything else are identical. {cause}",
        describe(false).join("; ")
    );
    let mut evidence = Vec::new();
    for (hash, rs_name) in [(from, &rs_a), (to, &rs_b)] {
        if let Some(rs) = track.rs_by_hash(hash) {
            let pos = rs.created.unwrap_or(rs.last);
            evidence.push(track.rs_evidence(
                rs,
                pos,
                format!("pod template of revision {hash} ({rs_name})"),
            ));
        }
    }
    evidence.push(track.evidence(p.pos, format!("currentPodHash {from} -> {to}")));
    out.push(
        Finding::new(Rule::ConfigOnlyRerender, track.subject(), track.subject(), p.pos.at, summary)
            .explain(explanation)
            .with_evidence(evidence)
            .remedy(
                if story.render_race {
                    format!("The image and the rest of the pod template did not change: do not roll back on this account. Let the {word} on {to} proceed and do not re-run the pipeline.")
                } else {
                    story.now.clone()
                },
                // The two names in one order whichever way the restart went: a restart and
                // its reverse ask for the same look.
                vec![format!(
                    "kubectl -n {} get rs {} {} -o jsonpath='{{range .items[*]}}{{.metadata.name}}{{\"\\t\"}}{{.spec.template.metadata.annotations}}{{\"\\n\"}}{{end}}'",
                    track.namespace(),
                    (&rs_a).min(&rs_b),
                    (&rs_a).max(&rs_b)
                )],
                if story.render_race {
                    "Resolve the values revision before the image tag is written: render the image tag and every values file from one Git revision (pin the values source to the same commit as the chart and image), so a release renders once.".to_owned()
                } else {
                    story.prevent
                },
            ),
    );
}

impl Detector for ConfigOnlyRerender {
    fn on_transition(&mut self, t: &Transition<'_>, out: &mut Vec<Finding>) {
        let Some(change) = t.revision else { return };
        if change.class != RevisionClass::Restart {
            return;
        }
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
    use rf_format::Op;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_checksum_only_rerender_names_the_annotation_and_both_values() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::ConfigOnlyRerender)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("checksum/config: c1 -> c2"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_rerender_that_changes_the_image_is_not_config_only() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:3", "c2"));
        assert!(kit.rules().contains(&Rule::RerenderRestart));
        assert!(
            !kit.rules().contains(&Rule::ConfigOnlyRerender),
            "{:?}",
            kit.rules()
        );
    }

    #[test]
    fn the_diff_waits_for_a_replicaset_that_arrives_after_the_status() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        // The status names h2 before its ReplicaSet is seen.
        let tpl = template("app:2", "c2");
        kit.spec(|s| {
            s.insert("template".into(), tpl.clone());
        });
        kit.status(|s| {
            s.insert("currentPodHash".into(), serde_json::json!("h2"));
            s.insert("currentStepIndex".into(), serde_json::json!(0));
            s.remove("pauseConditions");
        });
        assert!(!kit.rules().contains(&Rule::ConfigOnlyRerender));
        kit.replicaset("h2", 0, tpl, Op::Added);
        assert!(
            kit.rules().contains(&Rule::ConfigOnlyRerender),
            "{:?}",
            kit.rules()
        );
        let f = kit
            .found
            .iter()
            .find(|f| f.rule == Rule::ConfigOnlyRerender)
            .unwrap();
        let restart = kit
            .found
            .iter()
            .find(|f| f.rule == Rule::RerenderRestart)
            .unwrap();
        assert_eq!(
            f.at, restart.at,
            "the finding is dated at the restart, not when resolved"
        );
    }
}
