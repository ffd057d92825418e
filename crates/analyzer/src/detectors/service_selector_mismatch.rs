//! `service-selector-mismatch` (error): a Service that routes to the rollout does not select the
//! current revision's pods.
//!
//! # What it detects
//! A Service that routes to the rollout (named as its `canaryService` or `stableService`, a
//! blue-green rollout's `previewService` or `activeService`, or whose selector selects the pods
//! of one of its revisions) has a selector that the pods of the
//! current revision (`status.currentPodHash`) do not satisfy, for at least 10 s. The
//! `rollouts-pod-template-hash` key is left out: the controller manages it on the canary and
//! stable Services. So are the labels of the rollout's `canaryMetadata` and `stableMetadata`
//! (a Service selecting `role: stable` from `stableMetadata`): the controller puts them on the
//! pods of each role, after hashing, and moves them when the role changes. The finding names
//! each key with the Service's value and the pods' value, once per Service and revision.
//!
//! # Why it matters
//! Every gate can be green while no customer reaches the new revision: the rollout is Healthy
//! because its pods exist, Argo CD is Synced because Git matches the cluster, probes pass. Only
//! the Service decides where traffic goes, and it does not select the new pods. After a full
//! promotion it selects nothing at all.
//!
//! # Example
//! Service `checkout-api` selects `version: v417` (pinned in an environment values file) while
//! the rollout stamps `version: v418` on the pods of `5d98c7bf64`: the canary takes no traffic.
//!
//! # Remedy
//! Make the selector match; the finding gives the `kubectl patch` that removes the mismatching keys
//! (Argo CD reverts it unless Git is fixed too). Keep release labels out of Service selectors.
//!
//! # Before the sync
//! `lint` compares each Service that a rendered Rollout names, or that selects its pods by one
//! label at least, with the pod labels the render gives the Rollout's template (the controller's
//! hash key and role labels left out): a `version` pinned in one values file and bumped in another
//! is found before it ships. `lint --live` also compares each rendered Service with the live
//! one: a selector that keeps none of the ready pods it routes to now (the controller's hash key
//! kept where a rollout names the Service) is refused.

use std::collections::BTreeMap;

use rf_format::{Kind, Timestamp};

use crate::detectors::{Detector, Facts, SETTLE_SECONDS, Scene, Settling};
use crate::base::HASH_LABEL;
use crate::report::finding::{Evidence, Finding, Rule, Subject};
use crate::base::time::rfc3339;
use crate::model::traffic::{Route};

type Key = (String, String, String, String);


/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn crate::detectors::Detector> {
    Box::new(ServiceSelectorMismatch::default())
}

#[derive(Debug, Default)]
pub(crate) struct ServiceSelectorMismatch {
    /// (namespace, rollout, service, hash) -> since when it mismatches.
    settling: Settling<Key>,
}

/// A JSON-pointer segment (`/` and `~` escaped).
fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl Detector for ServiceSelectorMismatch {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::ServiceSelectorMismatch, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let cur = track.last()?;
        let hash = cur.pod_hash.as_deref()?;
        let ns = track.namespace();
        // This rollout's keys: the range of them is made only when any key is held.
        let mine = || {
            super::rollout_keys(track.name(), |n| -> Key {
                (ns.to_owned(), n, String::new(), String::new())
            })
        };
        self.settling.begin(s.now);
        let Some(rs) = track
            .rs_by_hash(hash)
            .filter(|rs| !rs.deleted && !rs.pod_labels.is_empty())
        else {
            return self.settling.end_in(mine);
        };
        for &(name, svc, why) in s.routing {
            let Some(selector) = &svc.selector else {
                continue;
            };
            // The controller's labels: the hash, and those of `canaryMetadata` and
            // `stableMetadata`, which it moves from pod to pod with the role.
            let (canary_labels, stable_labels) = track.ephemeral_labels();
            let ephemeral = |k: &str, v: &String| {
                canary_labels.get(k) == Some(v) || stable_labels.get(k) == Some(v)
            };
            let wrong: Vec<(&String, &String, Option<&String>)> = selector
                .iter()
                .filter(|(k, _)| k.as_str() != HASH_LABEL)
                .filter(|(k, v)| !ephemeral(k, v))
                .filter(|(k, v)| rs.pod_labels.get(*k) != Some(*v))
                .map(|(k, v)| (k, v, rs.pod_labels.get(k)))
                .collect();
            if wrong.is_empty() {
                continue;
            }
            let key = (
                ns.to_owned(),
                track.name().to_owned(),
                name.to_owned(),
                hash.to_owned(),
            );
            let Some(since) = self.settling.ripe(s, key, SETTLE_SECONDS) else {
                continue;
            };
            let words: Vec<String> = wrong
                .iter()
                .map(|(k, v, got)| match got {
                    Some(g) => format!("{k}: Service {v:?}, pods {g:?}"),
                    None => format!("{k}: Service {v:?}, pods have no such label"),
                })
                .collect();
            let role = match (why.field(track.is_blue_green()), why) {
                (Some(field), _) => format!("the rollout's {field}"),
                (None, Route::SelectsStable) => {
                    "a Service that selects the rollout's stable pods".to_owned()
                }
                (None, Route::SelectsCanary) => {
                    "a Service that selects the rollout's canary pods".to_owned()
                }
                (None, _) => "a Service that selects the rollout's pods".to_owned(),
            };
            let subject = Subject::new(Kind::Service, ns, name);
            let summary = format!(
                "Service {name} does not select the pods of revision {hash}: {}",
                words.join("; ")
            );
            let explanation = format!(
                "{name} is {role}. Its selector {} is not satisfied by the pod labels of {} (revision {hash}), so it sends them no traffic, whatever the rollout's weight or phase says. The mismatch has held since {}.",
                format_selector(selector),
                rs.name,
                rfc3339(since.at)
            );
            let commands = vec![
                format!("kubectl -n {ns} get svc {name} -o jsonpath='{{.spec.selector}}'"),
                format!("kubectl -n {ns} get pods -l {HASH_LABEL}={hash} --show-labels"),
            ];
            let ops: Vec<String> = wrong
                .iter()
                .map(|(k, _, _)| {
                    format!(
                        "{{\"op\":\"remove\",\"path\":\"/spec/selector/{}\"}}",
                        pointer_segment(k)
                    )
                })
                .collect();
            // It sends the revision traffic: a decision, not a command to paste.
            let patch = format!(
                "kubectl -n {ns} patch svc {name} --type json -p '[{}]'",
                ops.join(",")
            );
            let evidence = [
                Evidence::of(
                    svc.pos,
                    subject.clone(),
                    format!("selector {}", format_selector(selector)),
                ),
                track.rs_evidence(
                    rs,
                    rs.last,
                    format!("pod labels {}", format_selector(&rs.pod_labels)),
                ),
                track.evidence(cur.pos, format!("currentPodHash {hash}")),
            ];
            out.push(
                Finding::new(
                    Rule::ServiceSelectorMismatch,
                    subject,
                    track.subject(),
                    since.at,
                    summary,
                )
                .explain(explanation)
                .with_evidence(evidence)
                .remedy(
                    format!(
                        "{} Make the selector match the labels the rollout stamps (the patch removes the mismatching keys; Argo CD reverts it unless Git is fixed too).",
                        if cur.stable_rs.as_deref() == Some(hash) {
                            format!("Revision {hash} is promoted, but no request through {name} reaches it: that Service's customers are still on other revisions' pods, or on none once those are scaled down.")
                        } else {
                            format!("Do not promote on this canary's metrics: it has served no traffic through {name}.")
                        }
                    ),
                    commands,
                    "Keep release-specific labels (version, build) out of Service selectors: select on the app label and let the rollout's canary/stable Services add the pod-template hash.".to_owned(),
                )
                .decide(vec![patch]),
            );
        }
        self.settling.end_in(mine)
    }
}

pub(crate) fn format_selector(sel: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = sel.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("{{{}}}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, template};

    fn labelled(version: &str) -> serde_json::Value {
        let mut t = template("app:2", "c0");
        t["metadata"]["labels"]["version"] = json!(version);
        t
    }

    /// A release moves the pods to `version: v418` while Service `checkout-api` selects
    /// `v417`, past the settle time.
    fn pinned_to_the_old_version(options: crate::Options) -> Kit {
        let mut kit = Kit::with_options(options);
        kit.replicaset("stable0", 5, labelled("v417"), rf_format::Op::Modified);
        kit.service("checkout-api", json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.advance(SETTLE);
        kit.step(1);
        kit
    }

    #[test]
    fn a_selector_pinned_to_the_old_version_is_reported_with_key_and_values() {
        let kit = pinned_to_the_old_version(crate::Options::default());
        let f: Vec<_> = kit
            .found
            .iter()
            .filter(|f| f.rule == Rule::ServiceSelectorMismatch)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert_eq!(f[0].subject.name, "checkout-api");
        assert!(
            f[0].summary
                .contains("version: Service \"v417\", pods \"v418\""),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].remedy
                .decisions
                .iter()
                .any(|c| c.contains("/spec/selector/version")),
            "the patch sends the revision traffic: a decision"
        );
        assert!(f[0].remedy.commands.iter().all(|c| !c.contains(" patch ")));
    }

    /// For a live caller: the mismatch reported holds until the Service is fixed, then says
    /// it stopped; broken again, it holds again (with no second finding).
    #[test]
    fn a_fixed_selector_is_a_condition_that_stopped_holding() {
        let mut kit = pinned_to_the_old_version(crate::Options {
            conditions: true,
            ..crate::Options::default()
        });
        let holds = |kit: &Kit| -> Vec<bool> {
            kit.changes
                .iter()
                .filter(|c| c.rule == Rule::ServiceSelectorMismatch)
                .map(|c| c.holds)
                .collect()
        };
        assert_eq!(holds(&kit), vec![true], "reported: holds");
        assert_eq!(kit.changes[0].rollout.name, NAME);
        kit.advance(5);
        kit.service("checkout-api", json!({"app": NAME}));
        assert_eq!(holds(&kit), vec![true, false], "fixed: stopped");
        kit.advance(5);
        kit.service("checkout-api", json!({"app": NAME, "version": "v417"}));
        assert_eq!(holds(&kit), vec![true, false, true], "broken again: holds again");
        assert_eq!(kit.of_rule(Rule::ServiceSelectorMismatch).len(), 1);

        // Without the option, nothing is handed over.
        let mut kit = pinned_to_the_old_version(crate::Options::default());
        kit.service("checkout-api", json!({"app": NAME}));
        assert!(kit.changes.is_empty());
    }

    #[test]
    fn a_selector_on_the_app_label_only_is_fine() {
        let mut kit = Kit::new();
        kit.service("checkout-api", json!({"app": NAME}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.advance(60);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::ServiceSelectorMismatch)
        );
    }

    #[test]
    fn the_hash_key_of_a_managed_stable_service_is_ignored() {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["stableService"] = json!("checkout-api-stable");
        });
        kit.service(
            "checkout-api-stable",
            json!({"app": NAME, "rollouts-pod-template-hash": "stable0"}),
        );
        kit.release_to_pause("new1", template("app:2", "c1"));
        kit.advance(60);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::ServiceSelectorMismatch)
        );
    }

    #[test]
    fn an_unrelated_service_is_not_judged() {
        let mut kit = Kit::new();
        kit.service("other", json!({"app": "other-app", "version": "v1"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.advance(60);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::ServiceSelectorMismatch)
        );
    }

    #[test]
    fn a_mismatch_fixed_within_the_settle_time_is_not_reported() {
        let mut kit = Kit::new();
        kit.replicaset("stable0", 5, labelled("v417"), rf_format::Op::Modified);
        kit.service("checkout-api", json!({"app": NAME, "version": "v417"}));
        kit.release_to_pause("new1", labelled("v418"));
        kit.advance(2);
        kit.service("checkout-api", json!({"app": NAME}));
        kit.advance(60);
        kit.step(1);
        let report = kit.finish();
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::ServiceSelectorMismatch)
        );
    }

    const SETTLE: i64 = super::SETTLE_SECONDS;
}
