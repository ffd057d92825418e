//! `orphaned-replicaset` (error): a ReplicaSet of a rollout, neither current nor stable, still
//! running at the end.
//!
//! # What it detects
//! At the end of the analysis (the last record, or `--at`), a ReplicaSet of a rollout that is
//! neither the current (`status.currentPodHash`) nor the stable (`status.stableRS`) revision
//! still has replicas, has no `scale-down-deadline` still in the future, and either has been in
//! that state for at least 30 s or saw the current revision complete a step after it
//! (the controller reconciled and left it up). Where the controller keeps a replaced
//! ReplicaSet up on purpose, the rule waits as long: a blue-green rollout's old ReplicaSets and
//! the previous stable of a canary with traffic routing stay up for `scaleDownDelaySeconds`
//! (30 s unless set) after they were replaced, until their `scale-down-deadline`; a blue-green
//! rollout with `scaleDownDelaySeconds: 0` keeps them by design, and is not reported.
//! A ReplicaSet is the rollout's when its controlling
//! ownerReference names the rollout, or, released from it (no owner), when it carries the
//! `rollouts-pod-template-hash` label and is named `<rollout>-<hash>`.
//!
//! # Why it matters
//! Its pods keep running and, with a plain canary, keep serving: Services that select the app
//! label send them traffic. The re-render race leaves one behind per pipeline run; an empty or
//! expired `scale-down-deadline` is reported upstream to leave old ReplicaSets running.
//!
//! # Example
//! `checkout-api-7b4c9f5d86` (the first render) still runs 1 pod at the end of the recording,
//! with `scale-down-deadline: ""`, while the rollout is on `5d98c7bf64` and stable on `68f6c5dd9b`.
//!
//! # Remedy
//! Exactly `kubectl -n NS scale rs NAME --replicas=0`; let an abort converge and do one clean full
//! run instead of re-running the pipeline. Except where its pods are the only ready endpoints of
//! a Service that routes to the rollout (a selector left on, or put back to, its revision):
//! scaling it down then takes that Service's traffic away, so no scale command is given. The
//! finding says what must happen first (the Service's selector back on the stable or current
//! revision, and its endpoints holding those pods) and gives the commands that show it.

use rf_format::Kind;

use crate::detectors::Detector;
use crate::report::finding::{Finding, Rule, Subject};
use crate::base::At;
use crate::model::rollout::{RolloutTrack, RsTrack, ScaleDown};
use crate::model::traffic::membership;
use crate::model::world::World;
use crate::base::time::{human_duration, parse_rfc3339, rfc3339};
use crate::base::Str;

/// How long a ReplicaSet may stay up after it stopped being current or stable before it counts
/// as orphaned: the controller scales it down within a few syncs.
pub(crate) const GRACE_SECONDS: i64 = 30;


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(OrphanedReplicaSet {
        snapshot,
        live: std::collections::BTreeSet::new(),
    })
}

#[derive(Debug)]
pub(crate) struct OrphanedReplicaSet {
    /// The records are one snapshot: a ReplicaSet up now counts without waiting.
    pub snapshot: bool,
    /// (namespace, ReplicaSet) reported by a live check and orphaned since: not reported again
    /// (a live recorder looks every few seconds, and once more at its end).
    live: std::collections::BTreeSet<(String, String)>,
}

fn belongs(track: &RolloutTrack, rs: &RsTrack) -> bool {
    match &rs.owner_uid {
        Some(uid) => track.uid().is_empty() || *uid == track.uid(),
        None => rs
            .hash
            .as_ref()
            .is_some_and(|h| rs.name == format!("{}-{h}", track.name())),
    }
}

/// What [`check`] found of a ReplicaSet that may be an orphan.
enum Verdict {
    /// An orphan.
    Orphan(Box<Finding>),
    /// It would be, had the analysis gone on for the grace period: it says so.
    TooSoon(String),
}

/// `None`: not an orphan.
/// The Services that route to `track` whose ready endpoints are all pods of revision `hash`
/// (at least one): a ReplicaSet of that revision scaled down leaves them nothing to send
/// traffic to.
fn served_only_by<'w>(world: &'w World, track: &RolloutTrack, hash: &str) -> Vec<(&'w str, At)> {
    world
        .routing(track)
        .into_iter()
        .filter(|(name, _, _)| {
            let by = membership(world, track, name);
            by.get(hash).is_some_and(|pods| !pods.is_empty())
                && by.iter().all(|(rev, pods)| rev == hash || pods.is_empty())
        })
        .map(|(name, svc, _)| (name, svc.pos))
        .collect()
}

fn check(
    track: &RolloutTrack,
    world: &World,
    rs: &RsTrack,
    end: At,
    snapshot: bool,
) -> Option<Verdict> {
    let last = track.last()?;
    let hash = rs.hash.as_deref()?;
    if rs.deleted
        || last.pod_hash.as_deref() == Some(hash)
        || last.stable_rs.as_deref() == Some(hash)
        || !belongs(track, rs)
    {
        return None;
    }
    let replicas = rs.replicas.max(rs.status_replicas);
    if replicas <= 0 {
        return None;
    }
    // Since its revision was replaced, or since it was first seen as neither (whichever is
    // earlier: in a source that interleaves kinds loosely, its records can come late).
    let since = match (rs.other_since, track.superseded_at(hash)) {
        (Some(a), Some(b)) => Some(if (b.file, b.seq) < (a.file, a.seq) {
            *b
        } else {
            a
        }),
        (a, b) => a.or(b.copied()),
    }?;
    // How long the controller itself keeps it up (`scaleDownDelaySeconds`): a blue-green
    // rollout's old ReplicaSets, and the previous stable of a canary with traffic routing
    // (an intermediate canary replaced mid-update goes at once).
    let delay = match track.scale_down() {
        ScaleDown::Immediate => None,
        _ if !track.is_blue_green() && !rs.was_stable => None,
        ScaleDown::Kept => return None,
        ScaleDown::After(seconds) => Some(seconds),
    };
    // Without a deadline on record, the controller's own is `delay` after it was replaced.
    let kept_for = match (&rs.deadline, delay) {
        (None, Some(seconds)) => seconds,
        _ => 0,
    };
    let waited =
        snapshot || end.at.0 - since.at.0 >= (kept_for + GRACE_SECONDS) * 1_000_000_000;
    // The controller completed a step of the current revision after this RS stopped being
    // current: it reconciled, and left it up. Decides where times are compressed or unknown
    // (an import without receive times, a recording of a replay at full speed); not while the
    // controller may still be keeping it for its delay.
    let after = |p: &At| (p.file, p.seq) > (since.file, since.seq);
    let moved_on = kept_for == 0 && last
        .pod_hash
        .as_ref()
        .and_then(|h| track.progress(h))
        .is_some_and(|p| {
            p.max_at.as_ref().is_some_and(after) && p.max_index > 0 || p.pauses.values().any(after)
        });
    let deadline_note = match rs.deadline.as_deref() {
        None => String::new(),
        Some("") => {
            "; its scale-down-deadline annotation is empty, which the controller never acts on"
                .to_owned()
        }
        Some(d) => match parse_rfc3339(d) {
            Some(t) if t > end.at => return None,
            Some(t) => format!(
                "; its scale-down-deadline {d} passed {} before the end",
                human_duration(end.at.0 - t.0)
            ),
            None => format!("; its scale-down-deadline {d:?} is not a time"),
        },
    };
    if !waited && !moved_on {
        let wait = match kept_for {
            0 => format!("{GRACE_SECONDS}s"),
            d => format!("the rollout's scaleDownDelaySeconds ({d}s) and {GRACE_SECONDS}s more"),
        };
        return Some(Verdict::TooSoon(format!(
            "{} could not be decided for ReplicaSet {}/{}: it still runs {replicas} pod(s) and has been neither current nor stable for {} when the analysis ends at {}; the rule waits {wait} for the controller to scale it down (record longer, or take a snapshot with `check`)",
            Rule::OrphanedReplicaSet,
            track.namespace(),
            rs.name,
            human_duration(end.at.0 - since.at.0),
            rfc3339(end.at)
        )));
    }
    let owner_note = if rs.owner_uid.is_none() {
        "; it has no ownerReference to the rollout: nothing manages it"
    } else {
        ""
    };
    let subject = Subject::new(Kind::ReplicaSet, track.namespace(), &rs.name);
    let opt = |o: &Option<Str>| o.as_deref().unwrap_or("none").to_owned();
    let summary = format!(
        "ReplicaSet {} still runs {replicas} pod(s) although it is neither the current ({}) nor the stable ({}) revision",
        rs.name,
        opt(&last.pod_hash),
        opt(&last.stable_rs)
    );
    let explanation = format!(
        "It has been neither current nor stable since {} ({} before the end of the analysis at {}) and was not scaled down{deadline_note}{owner_note}. Its pods keep running, and a Service that selects the rollout's app label keeps sending them traffic.",
        rfc3339(since.at),
        human_duration(end.at.0 - since.at.0),
        rfc3339(end.at)
    );
    let mut evidence = Vec::new();
    if let Some(created) = rs.created {
        evidence.push(track.rs_evidence(rs, created, format!("created for revision {hash}")));
    }
    evidence.push(track.evidence(since, format!("{hash} is no longer current or stable")));
    evidence.push(track.rs_evidence(
        rs,
        rs.last,
        format!(
            "last seen: spec.replicas {}, ready {}{}",
            rs.replicas,
            rs.ready,
            rs.deadline
                .as_ref()
                .map(|d| format!(", scale-down-deadline {d:?}"))
                .unwrap_or_default()
        ),
    ));
    let prevention = "Do not re-run a pipeline whose canary a re-render restarted: each run can leave another ReplicaSet behind. Render once per release.".to_owned();
    let serving = served_only_by(world, track, hash);
    let finding = Finding::new(Rule::OrphanedReplicaSet, subject, track.subject(), end.at, summary);
    if serving.is_empty() {
        return Some(Verdict::Orphan(Box::new(
            finding.explain(explanation).with_evidence(evidence).remedy(
                "Scale it down now. If the rollout was aborted, let the abort converge, then do one clean full run of the pipeline instead of re-running it.".to_owned(),
                vec![format!("kubectl -n {} scale rs {} --replicas=0", track.namespace(), rs.name)],
                prevention,
            ),
        )));
    }
    // Its pods are all that some Service sends traffic to: scaling it down now is an outage.
    let ns = track.namespace();
    let names: Vec<&str> = serving.iter().map(|(name, _)| *name).collect();
    let names = names.join(", ");
    let target = match (last.stable_rs.as_deref(), last.pod_hash.as_deref()) {
        (Some(stable), _) => format!("the stable revision {stable}"),
        (None, Some(current)) => format!("the current revision {current}"),
        (None, None) => "a revision of the rollout that runs".to_owned(),
    };
    for (name, pos) in &serving {
        evidence.push(crate::report::finding::Evidence::of(
            *pos,
            Subject::new(Kind::Service, ns, name),
            format!("every ready endpoint of Service {name} is a pod of {hash}"),
        ));
    }
    let mut commands = Vec::new();
    for (name, _) in &serving {
        commands.push(format!(
            "kubectl -n {ns} get svc {name} -o jsonpath='{{.spec.selector}}'"
        ));
        commands.push(format!(
            "kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={name}"
        ));
    }
    Some(Verdict::Orphan(Box::new(
        finding
            .explain(format!(
                "{explanation} Its pods are the only ready endpoints of Service {names}, which routes to the rollout: scaling it down now would leave {names} with no endpoint, an outage."
            ))
            .with_evidence(evidence)
            .remedy(
                format!(
                    "Do not scale it down yet: it is all that {names} sends traffic to. First put the selector of {names} back on {target} and wait until its endpoints list those pods (the commands below show both); only then scale {} down.",
                    rs.name
                ),
                commands,
                prevention,
            ),
    )))
}

impl Detector for OrphanedReplicaSet {
    fn on_end(
        &mut self,
        tracks: &[&RolloutTrack],
        world: &World,
        end: At,
        findings: &mut Vec<Finding>,
        undecided: &mut Vec<(Subject, String)>,
    ) {
        for track in tracks {
            for rs in track.replicasets().values() {
                match check(track, world, rs, end, self.snapshot) {
                    None => {}
                    Some(Verdict::Orphan(_))
                        if self
                            .live
                            .contains(&(track.namespace().to_owned(), rs.name.to_string())) => {}
                    Some(Verdict::Orphan(f)) => findings.push(*f),
                    Some(Verdict::TooSoon(note)) => undecided.push((track.subject(), note)),
                }
            }
        }
    }

    fn on_live(
        &mut self,
        tracks: &[&RolloutTrack],
        world: &World,
        now: At,
        findings: &mut Vec<Finding>,
    ) {
        for track in tracks {
            for rs in track.replicasets().values() {
                let key = (track.namespace().to_owned(), rs.name.to_string());
                match check(track, world, rs, now, self.snapshot) {
                    Some(Verdict::Orphan(f)) => {
                        if self.live.insert(key) {
                            findings.push(*f);
                        }
                    }
                    // Scaled down, deleted, current again: a later orphaning is news.
                    _ => {
                        self.live.remove(&key);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, template};

    fn race(keep_h1: i64, annotate: Option<&str>) -> Kit {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(30);
        kit.new_revision("h2", template("app:2", "c2"));
        if keep_h1 == 0 {
            kit.scale("h1", 0, template("app:2", "c1"));
        }
        if let Some(deadline) = annotate {
            let mut tpl = template("app:2", "c1");
            tpl["metadata"]["labels"]["rollouts-pod-template-hash"] = json!("h1");
            // Re-send h1 with a deadline annotation.
            kit.replicaset_with_deadline("h1", keep_h1, tpl, deadline);
        }
        kit
    }

    /// A live recorder (which never ends) reports the orphan once its grace period is over,
    /// once, and not again at its end; scaled down and left running again, it is news again.
    #[test]
    fn a_live_recorder_reports_an_orphan_once_when_its_grace_is_over() {
        let mut kit = race(1, Some(""));
        kit.advance(10);
        kit.live();
        assert!(kit.of_rule(Rule::OrphanedReplicaSet).is_empty(), "within its grace period");
        kit.advance(40);
        kit.live();
        kit.advance(5);
        kit.live();
        assert_eq!(kit.of_rule(Rule::OrphanedReplicaSet).len(), 1, "{:?}", kit.rules());
        kit.advance(5);
        let report = kit.finish();
        let at_end: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::OrphanedReplicaSet)
            .collect();
        assert_eq!(at_end.len(), 1, "the live one, not a second at the end");

        let mut kit = race(1, Some(""));
        kit.advance(60);
        kit.live();
        kit.scale("h1", 0, template("app:2", "c1"));
        kit.advance(1);
        kit.live();
        kit.scale("h1", 1, template("app:2", "c1"));
        kit.advance(60);
        kit.live();
        assert_eq!(kit.of_rule(Rule::OrphanedReplicaSet).len(), 2, "{:?}", kit.rules());
    }

    #[test]
    fn a_replaced_canary_left_running_is_orphaned_with_its_scale_command() {
        let mut kit = race(1, Some(""));
        kit.advance(120);
        kit.step(1);
        let report = kit.finish();
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::OrphanedReplicaSet)
            .collect();
        assert_eq!(f.len(), 1, "{:?}", report.findings);
        assert_eq!(f[0].subject.name, "checkout-api-h1");
        assert_eq!(
            f[0].remedy.commands,
            vec!["kubectl -n payments scale rs checkout-api-h1 --replicas=0"]
        );
        assert!(
            f[0].explanation
                .contains("scale-down-deadline annotation is empty")
        );
        assert!(f[0].remedy.summary.contains("one clean full run"));
    }

    /// The orphan of [`race`], with a Service selecting `selector` whose ready endpoints are
    /// `pods` (revision, suffix).
    fn served(selector: serde_json::Value, pods: &[(&str, &str)]) -> crate::Finding {
        let mut kit = race(1, Some(""));
        kit.service("checkout-api-active", selector);
        for (hash, suffix) in pods {
            kit.pod(hash, suffix, true, "app:2", "sha256:aa");
        }
        let names: Vec<String> = pods
            .iter()
            .map(|(h, s)| format!("checkout-api-{h}-{s}"))
            .collect();
        let endpoints: Vec<(&str, bool)> = names.iter().map(|n| (n.as_str(), true)).collect();
        kit.slice("checkout-api-active", &endpoints);
        kit.advance(120);
        kit.step(1);
        let report = kit.finish();
        let mut orphans = report
            .findings
            .into_iter()
            .filter(|f| f.rule == Rule::OrphanedReplicaSet);
        let f = orphans.next().expect("the orphan");
        assert!(orphans.next().is_none());
        f
    }

    #[test]
    fn an_orphan_that_is_all_a_service_sends_traffic_to_is_not_scaled_down() {
        let f = served(
            json!({"app": "checkout-api", "rollouts-pod-template-hash": "h1"}),
            &[("h1", "a1")],
        );
        let all = format!("{:?}", f.remedy);
        assert!(!all.contains("scale rs"), "{all}");
        assert!(f.remedy.summary.starts_with("Do not scale it down yet"), "{all}");
        assert!(
            f.remedy.summary.contains("back on the stable revision stable0"),
            "{all}"
        );
        assert_eq!(
            f.remedy.commands,
            vec![
                "kubectl -n payments get svc checkout-api-active -o jsonpath='{.spec.selector}'",
                "kubectl -n payments get endpointslices -l kubernetes.io/service-name=checkout-api-active"
            ]
        );
        assert!(f.explanation.contains("only ready endpoints of Service checkout-api-active"));
        assert!(f.evidence.iter().any(|e| e.object.name == "checkout-api-active"));
    }

    #[test]
    fn an_orphan_beside_other_endpoints_of_its_service_is_scaled_down() {
        let f = served(
            json!({"app": "checkout-api"}),
            &[("h1", "a1"), ("stable0", "b1")],
        );
        assert_eq!(
            f.remedy.commands,
            vec!["kubectl -n payments scale rs checkout-api-h1 --replicas=0"]
        );
    }

    #[test]
    fn a_replaced_canary_scaled_to_zero_is_not_orphaned() {
        let mut kit = race(0, None);
        kit.advance(120);
        kit.step(1);
        assert!(
            kit.finish()
                .findings
                .iter()
                .all(|f| f.rule != Rule::OrphanedReplicaSet)
        );
    }

    #[test]
    fn a_scale_down_deadline_in_the_future_is_pending_not_orphaned() {
        let mut kit = race(1, Some("2030-01-01T00:00:00Z"));
        kit.advance(120);
        kit.step(1);
        assert!(
            kit.finish()
                .findings
                .iter()
                .all(|f| f.rule != Rule::OrphanedReplicaSet)
        );
    }

    #[test]
    fn an_old_replicaset_within_the_grace_period_is_not_orphaned_yet() {
        let mut kit = race(1, None);
        kit.advance(5);
        // The controller writes again, but the new canary has not completed a step yet.
        kit.status(|s| {
            s.insert("message".into(), json!("more replicas need to be updated"));
        });
        assert!(
            kit.finish()
                .findings
                .iter()
                .all(|f| f.rule != Rule::OrphanedReplicaSet)
        );
    }
}

#[cfg(test)]
mod compressed_time_tests {
    use crate::Rule;
    use crate::testkit::{Kit, template};

    #[test]
    fn a_replaced_canary_left_up_while_the_new_one_progressed_is_orphaned_without_waiting() {
        let mut kit = Kit::new();
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.new_revision("h2", template("app:2", "c2"));
        kit.scale("h2", 1, template("app:2", "c2"));
        kit.step(1);
        kit.pause();
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .any(|f| f.rule == Rule::OrphanedReplicaSet),
            "{:?}",
            report.findings
        );
    }
}

#[cfg(test)]
mod blue_green_tests {
    use serde_json::json;

    use crate::Rule;
    use crate::detectors::pause_lost::blue_green_tests::preview;
    use crate::testkit::{Kit, template};

    /// `preview` promoted, with `scaleDownDelaySeconds` set to `delay` (or not), and the old
    /// active `stable0` still up `after` seconds later (the controller's writes in between).
    fn promoted(delay: Option<i64>, after: i64) -> Kit {
        let mut kit = preview();
        if let Some(delay) = delay {
            kit.spec(|s| {
                s["strategy"]["blueGreen"]["scaleDownDelaySeconds"] = json!(delay);
            });
        }
        kit.pause_before_promotion();
        kit.advance(30);
        kit.promote_blue_green("h1");
        kit.advance(after);
        kit.status(|s| {
            s.insert("message".into(), json!("reconciled"));
        });
        kit
    }

    fn orphans(kit: Kit) -> Vec<crate::Finding> {
        let report = kit.finish();
        report
            .findings
            .into_iter()
            .filter(|f| f.rule == Rule::OrphanedReplicaSet)
            .collect()
    }

    #[test]
    fn the_old_active_inside_the_default_delay_is_not_orphaned() {
        let report = promoted(None, 20).finish();
        assert!(
            report.findings.iter().all(|f| f.rule != Rule::OrphanedReplicaSet),
            "{:?}",
            report.findings
        );
        // It says why it could not decide, and how long it waits.
        assert!(
            report.recording.undecided.iter().any(|w| w.contains("checkout-api-stable0")
                && w.contains("scaleDownDelaySeconds (30s)")),
            "{:?}",
            report.recording.undecided
        );
    }

    #[test]
    fn the_old_active_past_the_default_delay_is_orphaned() {
        let found = orphans(promoted(None, 90));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].subject.name, "checkout-api-stable0");
    }

    #[test]
    fn the_old_active_inside_a_long_delay_is_not_orphaned() {
        assert_eq!(orphans(promoted(Some(600), 120)), vec![]);
        assert_eq!(orphans(promoted(Some(600), 700)).len(), 1);
    }

    #[test]
    fn a_zero_delay_keeps_old_replicasets_by_design() {
        assert_eq!(orphans(promoted(Some(0), 7200)), vec![]);
    }

    #[test]
    fn the_old_active_past_its_scale_down_deadline_is_orphaned() {
        let mut kit = promoted(Some(600), 10);
        kit.replicaset_with_deadline("stable0", 5, template("app:1", "c0"), "2026-03-14T13:01:00Z");
        kit.advance(40);
        kit.status(|s| {
            s.insert("message".into(), json!("reconciled again"));
        });
        let found = orphans(kit);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].explanation.contains("scale-down-deadline 2026-03-14T13:01:00Z passed"));
    }

    #[test]
    fn a_replaced_canary_of_a_routed_canary_goes_at_once_its_previous_stable_waits() {
        // A canary with traffic routing: the intermediate revision h1, replaced by h2
        // mid-update, is scaled down at once; the stable is kept after promotion.
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["trafficRouting"] = json!({"nginx": {"stableIngress": "web"}});
        });
        kit.release_to_pause("h1", template("app:2", "c1"));
        kit.advance(40);
        kit.new_revision("h2", template("app:2", "c2"));
        kit.scale("h2", 1, template("app:2", "c2"));
        kit.advance(40);
        kit.step(1);
        let found = orphans(kit);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].subject.name, "checkout-api-h1");
    }
}
