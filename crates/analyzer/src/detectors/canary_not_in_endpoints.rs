//! `canary-not-in-endpoints` (error): the rollout says its revision takes traffic, but the
//! Service's EndpointSlices hold none of its ready pods.
//!
//! # What it detects
//! The rollout says its current revision takes traffic (a canary weight above 0, a step past
//! the first `setWeight`, or Healthy after promotion), pods of that revision are Ready, and yet
//! for at least 10 s the EndpointSlices (`kubernetes.io/service-name`) of the Service that should
//! send it traffic hold no ready address of any of its pods. The Service is the `canaryService`
//! (the `stableService` once promoted) when the rollout names them (for a blue-green rollout,
//! once promoted, its `activeService`), else every Service that
//! selects the rollout's pods, except that one selecting by a label of the rollout's
//! `stableMetadata` is meant for the stable pods only (judged once promoted), and one selecting
//! by a label of its `canaryMetadata` for the canary pods only. A pod's revision comes from its hash label, else its owner
//! ReplicaSet, else its name. Not raised after an abort. A Service none of whose EndpointSlices
//! was recorded is not judged, nor one with no ready endpoint at all (`no-ready-endpoints`
//! reports that outage).
//!
//! # Why it matters
//! This is adoption, not application: the canary's metrics, the analysis and the promotion all
//! assume customers reached the new pods. They did not.
//!
//! # Example
//! At setWeight 20 the slice of `checkout-api` lists four pods of `68f6c5dd9b` (stable) and none
//! of `5d98c7bf64`, whose pod is Ready.
//!
//! # Evidence
//! The endpoint pods by revision, the ready pods of the revision, and the commands (`kubectl get
//! endpointslices -l kubernetes.io/service-name=...`) that show it.
//!
//! # Remedy
//! Do not promote on the canary's metrics; fix what keeps its pods out of the Service.

use std::collections::BTreeMap;

use rf_format::{Kind, Timestamp};

use crate::detectors::{Detector, Facts, FactsUse, SETTLE_SECONDS, Scene, Settling};
use crate::base::HASH_LABEL;
use crate::report::finding::{Evidence, Finding, Rule, Subject};
use crate::base::At;
use crate::model::rollout::RolloutTrack;
use crate::base::time::rfc3339;
use crate::model::Step;
use crate::model::traffic::{Route, has_revision, membership, of_revision, serves_revision};
use crate::model::world::{PodObj, World};

type Key = (String, String, String, String);


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(CanaryNotInEndpoints::default())
}

#[derive(Debug, Default)]
pub(crate) struct CanaryNotInEndpoints {
    settling: Settling<Key>,
}

/// Why the rollout says its current revision takes traffic.
#[derive(Debug, Clone, Copy)]
enum Why {
    /// Promoted, and Healthy on it.
    Healthy,
    /// `status.canary.weights.canary.weight`.
    Weight(i64),
    /// At step `index` of `steps`, past the first `setWeight` (`weight`, step `first`).
    PastStep {
        index: i64,
        steps: usize,
        first: usize,
        weight: i64,
    },
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::Healthy => f.write_str("the rollout is Healthy on it"),
            Why::Weight(w) => write!(f, "status.canary.weights.canary.weight is {w}"),
            Why::PastStep {
                index,
                steps,
                first,
                weight,
            } => write!(
                f,
                "the rollout is at step {index} of {steps}, past setWeight {weight} (step {first})"
            ),
        }
    }
}

/// Why the rollout says its current revision takes traffic, if it does (this runs on every
/// look: it says why without writing it out).
fn takes_traffic(track: &RolloutTrack) -> Option<Why> {
    let cur = track.last()?;
    let hash = cur.pod_hash.as_deref()?;
    if cur.abort {
        return None;
    }
    let promoted = cur.stable_rs.as_deref() == Some(hash);
    if promoted {
        return (cur.phase.as_deref() == Some("Healthy")).then_some(Why::Healthy);
    }
    if let Some(w) = cur.canary_weight.filter(|w| *w > 0) {
        return Some(Why::Weight(w));
    }
    let (first, weight) = track.steps().iter().enumerate().find_map(|(i, s)| match s {
        Step::SetWeight(w) if *w > 0 => Some((i, *w)),
        _ => None,
    })?;
    (cur.step_index > i64::try_from(first).ok()?).then_some(Why::PastStep {
        index: cur.step_index,
        steps: track.steps().len(),
        first,
        weight,
    })
}

/// The ready pods of revision `hash`.
fn ready_of<'a>(
    world: &'a World,
    track: &'a RolloutTrack,
    hash: &'a str,
) -> impl Iterator<Item = (&'a str, &'a PodObj)> + 'a {
    let has_hash = has_revision(track, hash);
    world
        .pods_of_hash(track.namespace(), hash)
        .filter(move |(name, pod)| pod.ready && of_revision(track, name, Some(pod), hash, has_hash))
}

/// When the first ready pod of revision `hash` became ready, if one is (the ReplicaSet's
/// count decides when no pod of the rollout was recorded at all).
fn ready_since(world: &World, track: &RolloutTrack, hash: &str) -> Option<At> {
    let mut since: Option<At> = None;
    let mut any_ready = false;
    for (_, pod) in ready_of(world, track, hash) {
        any_ready = true;
        if let Some(t) = pod.ready_since {
            let at = At { at: t, ..pod.pos };
            if since.is_none_or(|s| at.at < s.at) {
                since = Some(at);
            }
        }
    }
    if any_ready || pods_recorded(world, track) {
        return since;
    }
    track
        .rs_by_hash(hash)
        .filter(|rs| !rs.deleted && rs.ready > 0)
        .map(|rs| At {
            at: rs.ready_since.unwrap_or(rs.last.at),
            ..rs.last
        })
}

/// True when a pod of any revision of the rollout was recorded.
fn pods_recorded(world: &World, track: &RolloutTrack) -> bool {
    track
        .replicasets()
        .values()
        .filter_map(|rs| rs.hash.as_deref())
        .any(|h| world.has_pods_of_hash(track.namespace(), h))
}

/// The names of the ready pods of revision `hash`, sorted: for the finding's words.
fn ready_pods(world: &World, track: &RolloutTrack, hash: &str) -> Vec<String> {
    let mut names: Vec<String> = ready_of(world, track, hash)
        .map(|(name, _)| name.to_owned())
        .collect();
    names.sort();
    names
}

fn describe(by: &BTreeMap<String, Vec<String>>, track: &RolloutTrack) -> String {
    if by.is_empty() {
        return "no ready endpoints".to_owned();
    }
    let cur = track.last();
    let role = |h: &str| {
        if cur.and_then(|c| c.stable_rs.as_deref()) == Some(h) {
            " (stable)"
        } else if h.is_empty() {
            ""
        } else {
            " (other)"
        }
    };
    by.iter()
        .map(|(h, pods)| {
            let which = if h.is_empty() {
                "not of this rollout".to_owned()
            } else {
                format!("of {h}{}", role(h))
            };
            format!("{} pod(s) {which}: {}", pods.len(), pods.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

impl Detector for CanaryNotInEndpoints {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::CanaryNotInEndpoints, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
    }

    fn facts(&self) -> FactsUse {
        FactsUse::Writes
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let ns = track.namespace();
        // This rollout's keys: the range of them is made only when any key is held.
        let mine = || {
            super::rollout_keys(track.name(), |n| -> Key {
                (ns.to_owned(), n, String::new(), String::new())
            })
        };
        let cur = track.last()?;
        self.settling.begin(s.now);
        let (Some(hash), Some(why)) = (cur.pod_hash.as_deref(), takes_traffic(track)) else {
            self.settling.end_in(mine);
            facts.adopted_by(Rule::CanaryNotInEndpoints, track);
            return None;
        };
        let promoted = cur.stable_rs.as_deref() == Some(hash);
        let named = track.canary_service().is_some() || track.stable_service().is_some();
        let n = s.world.namespace(ns);
        let services = s
            .routing
            .iter()
            .filter(|(name, _, _)| n.is_some_and(|n| n.has_slices(name)))
            .map(|(name, _, why)| (*name, *why))
            .filter(|(_, why)| match why {
                Route::Canary => !promoted,
                Route::Stable => promoted,
                Route::Selects => !named,
                // By the rollout's ephemeral metadata: for its role only.
                Route::SelectsCanary => !named && !promoted,
                Route::SelectsStable => !named && promoted,
            });
        // This runs at every record that touches the rollout, and almost always the Service
        // serves the revision: that is asked first, and stops at the first such endpoint. The
        // revision's ready pods are looked at only for a Service that does not, once.
        let mut ready: Option<Option<At>> = None;
        for (service, _) in services {
            if serves_revision(s.world, track, service, hash) {
                continue;
            }
            // No ready endpoint at all: an outage, `no-ready-endpoints`'s to report.
            if !s
                .world
                .slices_of(ns, service)
                .any(|(_, slice)| slice.endpoints.iter().any(|e| e.ready))
            {
                continue;
            }
            let Some(ready_since) = *ready.get_or_insert_with(|| ready_since(s.world, track, hash))
            else {
                continue;
            };
            let key = (
                ns.to_owned(),
                track.name().to_owned(),
                service.to_owned(),
                hash.to_owned(),
            );
            facts.not_adopted_by(Rule::CanaryNotInEndpoints, track, hash, || {
                (
                    format!(
                        "no Service sends traffic to revision {hash} of rollout {}",
                        track.name()
                    ),
                    format!("revision {hash} not in the endpoints of its Service"),
                )
            });
            let Some(first) = self.settling.holds(&key, s.now) else {
                continue;
            };
            let since = if ready_since.at > first.at {
                ready_since
            } else {
                first
            };
            if !self.settling.settled(s, since, SETTLE_SECONDS) {
                continue;
            }
            self.settling.fire(key, s.now);
            let ready = ready_pods(s.world, track, hash);
            let by = membership(s.world, track, service);
            let subject = Subject::new(Kind::Service, ns, service);
            let ready_words = if ready.is_empty() {
                "its ReplicaSet reports ready pods".to_owned()
            } else {
                format!("{} pod(s) Ready: {}", ready.len(), ready.join(", "))
            };
            let summary = format!(
                "Service {service} sends no traffic to revision {hash} although {why}: its endpoints hold none of its pods ({ready_words})"
            );
            let explanation = format!(
                "Endpoints of {service} at {}: {}. The rollout's revision {hash} had had ready pods since {} and the Service had none of them. Whatever the weight, phase or GitOps status said, no customer request through {service} reached {hash}.",
                rfc3339(s.now.at),
                describe(&by, track),
                rfc3339(ready_since.at)
            );
            let mut evidence: Vec<Evidence> = s
                .world
                .slices_of(ns, service)
                .map(|(name, slice)| {
                    Evidence::of(
                        slice.pos,
                        Subject::new(Kind::EndpointSlice, ns, name),
                        format!("endpoints of {service}: {}", describe(&by, track)),
                    )
                })
                .collect();
            if let Some(p) = ready.first().and_then(|n| s.world.pod(ns, n)) {
                evidence.push(Evidence::of(
                    p.pos,
                    Subject::new(Kind::Pod, ns, &ready[0]),
                    format!("pod of {hash}, Ready"),
                ));
            }
            evidence.push(track.evidence(cur.pos, why.to_string()));
            out.push(
                Finding::new(
                    Rule::CanaryNotInEndpoints,
                    subject,
                    track.subject(),
                    since.at,
                    summary,
                )
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    if promoted {
                        format!("The rollout is promoted and reads as done, but {service} still sends its traffic to other pods: find why it does not select {hash}'s pods (selector, labels, readiness) and fix it; until then the release has not reached the customers of {service}.")
                    } else {
                        format!("Do not promote: the canary has taken no traffic through {service}, so its metrics and analysis prove nothing. Find why the Service does not select its pods (selector, labels, readiness), fix it, then restart the canary's evaluation.")
                    },
                    vec![
                        format!("kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={service} -o wide"),
                        format!("kubectl -n {ns} get pods -l {HASH_LABEL}={hash} -o wide --show-labels"),
                        format!("kubectl -n {ns} get svc {service} -o jsonpath='{{.spec.selector}}'"),
                    ],
                    "Gate promotion on adoption: check that the Service's endpoints include the new revision (rollout-forensics check) before the first pause ends.".to_owned(),
                ),
            );
        }
        if self.settling.none_seen() {
            facts.adopted_by(Rule::CanaryNotInEndpoints, track);
        }
        self.settling.end_in(mine)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, digest, pinned, template};

    fn setup(selector: serde_json::Value) -> Kit {
        let mut kit = Kit::new();
        let mut stable = template("app:1", "c0");
        stable["metadata"]["labels"]["version"] = json!("v417");
        kit.replicaset("stable0", 5, stable, rf_format::Op::Modified);
        kit.service("checkout-api", selector);
        for i in 0..2 {
            kit.pod(
                "stable0",
                &format!("s{i}"),
                true,
                &pinned("app:1"),
                &digest("app:1"),
            );
        }
        kit.slice(
            "checkout-api",
            &[
                ("checkout-api-stable0-s0", true),
                ("checkout-api-stable0-s1", true),
            ],
        );
        kit
    }

    fn labelled(version: &str) -> serde_json::Value {
        let mut t = template("app:2", "c1");
        t["metadata"]["labels"]["version"] = json!(version);
        t
    }

    fn found(kit: &Kit) -> usize {
        kit.found
            .iter()
            .filter(|f| f.rule == Rule::CanaryNotInEndpoints)
            .count()
    }

    #[test]
    fn a_ready_canary_missing_from_the_endpoints_is_reported_after_settling() {
        let mut kit = setup(json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        assert_eq!(found(&kit), 0, "not before the settle time");
        kit.advance(super::SETTLE_SECONDS + 1);
        kit.step(1);
        assert_eq!(found(&kit), 1, "{:#?}", kit.found);
        let f = kit
            .found
            .iter()
            .find(|f| f.rule == Rule::CanaryNotInEndpoints)
            .unwrap();
        assert_eq!(f.subject.name, "checkout-api");
        assert!(
            f.explanation.contains("checkout-api-stable0-s0"),
            "{}",
            f.explanation
        );
        assert!(f.remedy.commands[0].contains("kubernetes.io/service-name=checkout-api"));
    }

    #[test]
    fn it_fires_at_the_end_when_nothing_else_happens() {
        let mut kit = setup(json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        assert_eq!(
            report
                .findings
                .iter()
                .filter(|f| f.rule == Rule::CanaryNotInEndpoints)
                .count(),
            1
        );
    }

    #[test]
    fn an_adopted_canary_is_fine() {
        let mut kit = setup(json!({"app": NAME}));
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        kit.advance(1);
        kit.slice(
            "checkout-api",
            &[
                ("checkout-api-stable0-s0", true),
                ("checkout-api-stable0-s1", true),
                ("checkout-api-new1-c0", true),
            ],
        );
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints)
        );
    }

    #[test]
    fn an_unready_canary_or_one_before_its_first_weight_is_not_judged() {
        let mut kit = setup(json!({"app": NAME, "version": "v417"}));
        kit.advance(5);
        kit.new_revision("new1", labelled("v418"));
        // step 0 (setWeight 20) not yet complete, and the pod is not ready.
        kit.pod("new1", "c0", false, &pinned("app:2"), &digest("app:2"));
        kit.advance(600);
        kit.step(0);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints)
        );
    }

    #[test]
    fn a_canary_whose_pods_are_gone_is_not_judged() {
        let mut kit = setup(json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        kit.advance(2);
        kit.delete_pod("new1", "c0");
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints)
        );
    }

    #[test]
    fn without_pods_the_replicaset_ready_count_decides() {
        let mut kit = Kit::new();
        let mut stable = template("app:1", "c0");
        stable["metadata"]["labels"]["version"] = json!("v417");
        kit.replicaset("stable0", 5, stable, rf_format::Op::Modified);
        kit.service("checkout-api", json!({"app": NAME, "version": "v417"}));
        kit.slice("checkout-api", &[("checkout-api-stable0-s0", true)]);
        kit.release_to_pause("new1", labelled("v418"));
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::CanaryNotInEndpoints)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        assert!(
            f[0].explanation.contains("checkout-api-stable0-s0"),
            "{}",
            f[0].explanation
        );
    }

    #[test]
    fn a_service_without_recorded_slices_is_not_judged() {
        let mut kit = Kit::new();
        kit.service("checkout-api", json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints)
        );
    }

    #[test]
    fn after_an_abort_nothing_is_expected_of_the_canary() {
        let mut kit = setup(json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
        });
        kit.advance(600);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints)
        );
    }
}

#[cfg(test)]
mod ephemeral_metadata_tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, digest, pinned, template};

    /// A canary with `stableMetadata` `role: stable` and `canaryMetadata` `role: canary` (on
    /// each revision's ReplicaSet template, as the controller merges them), a Service for the
    /// stable pods (`role: stable`) and one for all of them (`app`), whose endpoints hold the
    /// canary's pod when `canary_in_app` is true. Paused at step 1, past the settle time.
    fn paused(canary_in_app: bool) -> Vec<crate::Finding> {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["stableMetadata"] = json!({"labels": {"role": "stable"}});
            s["strategy"]["canary"]["canaryMetadata"] = json!({"labels": {"role": "canary"}});
        });
        let role = |image: &str, checksum: &str, role: &str| {
            let mut t = template(image, checksum);
            t["metadata"]["labels"]["role"] = json!(role);
            t
        };
        kit.replicaset("stable0", 5, role("app:1", "c0", "stable"), rf_format::Op::Modified);
        for i in 0..2 {
            kit.pod("stable0", &format!("s{i}"), true, &pinned("app:1"), &digest("app:1"));
        }
        let stable = [("checkout-api-stable0-s0", true), ("checkout-api-stable0-s1", true)];
        kit.service("checkout-api-stable", json!({"app": NAME, "role": "stable"}));
        kit.slice("checkout-api-stable", &stable);
        kit.service("checkout-api", json!({"app": NAME}));
        kit.slice("checkout-api", &stable);
        kit.release_to_pause("new1", role("app:2", "c1", "canary"));
        kit.pod("new1", "c0", true, &pinned("app:2"), &digest("app:2"));
        if canary_in_app {
            let mut all = stable.to_vec();
            all.push(("checkout-api-new1-c0", true));
            kit.slice("checkout-api", &all);
        }
        kit.advance(super::SETTLE_SECONDS + 1);
        kit.step(1);
        kit.advance(60);
        kit.step(1);
        kit.finish().findings
    }

    #[test]
    fn a_service_for_the_stable_pods_by_stable_metadata_is_no_missing_canary() {
        let findings = paused(true);
        assert!(
            findings.iter().all(|f| f.rule != Rule::CanaryNotInEndpoints
                && f.rule != Rule::ServiceSelectorMismatch),
            "{findings:#?}"
        );
    }

    #[test]
    fn the_canary_missing_from_the_service_of_every_pod_is_still_found() {
        let findings = paused(false);
        let missing: Vec<&str> = findings
            .iter()
            .filter(|f| f.rule == Rule::CanaryNotInEndpoints)
            .map(|f| f.subject.name.as_str())
            .collect();
        assert_eq!(missing, ["checkout-api"], "{findings:#?}");
        assert!(findings.iter().all(|f| f.rule != Rule::ServiceSelectorMismatch));
    }
}

#[cfg(test)]
mod blue_green_tests {
    use serde_json::json;

    use crate::Rule;
    use crate::detectors::pause_lost::blue_green_tests::preview;
    use crate::testkit::{Kit, NAME, digest, pinned};

    /// `h1` promoted, its pods ready, the active Service `checkout-api` selecting revision
    /// `selected` and listing its pods.
    fn promoted(selected: &str) -> Kit {
        let mut kit = preview();
        kit.pause_before_promotion();
        kit.advance(30);
        kit.promote_blue_green("h1");
        for i in 0..2 {
            kit.pod("h1", &format!("n{i}"), true, &pinned("app:2"), &digest("app:2"));
            kit.pod("stable0", &format!("s{i}"), true, &pinned("app:1"), &digest("app:1"));
        }
        kit.service(NAME, json!({"app": NAME, "rollouts-pod-template-hash": selected}));
        let prefix = if selected == "h1" { 'n' } else { 's' };
        let names: Vec<String> = (0..2).map(|i| format!("{NAME}-{selected}-{prefix}{i}")).collect();
        let pods: Vec<(&str, bool)> = names.iter().map(|p| (p.as_str(), true)).collect();
        kit.slice(NAME, &pods);
        kit.advance(super::SETTLE_SECONDS + 1);
        kit.promote_blue_green("h1");
        kit
    }

    #[test]
    fn an_active_service_left_on_the_old_revision_after_promotion_is_not_adopted() {
        let findings = promoted("stable0").finish().findings;
        let missing: Vec<&str> = findings
            .iter()
            .filter(|f| f.rule == Rule::CanaryNotInEndpoints)
            .map(|f| f.subject.name.as_str())
            .collect();
        assert_eq!(missing, [NAME], "{findings:#?}");
    }

    #[test]
    fn the_active_service_is_the_one_judged_and_named_after_promotion() {
        // Named as activeService, the Service routes to the rollout even though its selector
        // (a version label no revision carries) selects none of its pods.
        let mut kit = preview();
        kit.pause_before_promotion();
        kit.advance(30);
        kit.promote_blue_green("h1");
        kit.service(NAME, json!({"app": NAME, "version": "v1"}));
        kit.advance(super::SETTLE_SECONDS + 1);
        kit.promote_blue_green("h1");
        let findings = kit.finish().findings;
        let mismatch = findings
            .iter()
            .find(|f| f.rule == Rule::ServiceSelectorMismatch)
            .unwrap_or_else(|| panic!("{findings:#?}"));
        assert!(
            mismatch.explanation.contains("the rollout's activeService"),
            "{}",
            mismatch.explanation
        );
    }

    #[test]
    fn an_active_service_switched_to_the_promoted_revision_is_fine() {
        let findings = promoted("h1").finish().findings;
        assert!(
            findings.iter().all(|f| f.rule != Rule::CanaryNotInEndpoints
                && f.rule != Rule::ServiceSelectorMismatch),
            "{findings:#?}"
        );
    }
}
