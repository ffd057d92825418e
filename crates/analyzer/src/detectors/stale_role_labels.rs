//! `stale-role-labels` (warning): pods keep the labels of a role their ReplicaSet no longer has,
//! and a Service selects them by those labels.
//!
//! # What it detects
//! A rollout with `canaryMetadata` or `stableMetadata` labels: pods of one of its live
//! ReplicaSets whose values of those labels differ from the ReplicaSet's pod template (the
//! controller moved the role there, and its relabelling of the pods did not reach them), for
//! at least 30 s, while a Service of the rollout selects them by a label they should no longer
//! have (`role: canary` on pods of the promoted, stable revision). The finding names the pods,
//! the labels each has and should have, and the Service.
//!
//! # Why it matters
//! The controller puts each role's labels first on the ReplicaSet's template, then on its
//! running pods, one patch per pod. A pod it does not reach (the controller restarted, a patch
//! failed past its retries, a webhook refused it) keeps the old role's labels: the Service of
//! the canary role keeps sending its share of the requests to pods that are the stable release
//! now (or the reverse), and the canary's metrics, analysis and header routes measure pods of
//! another revision than they say.
//!
//! # Example
//! `checkout-api` is promoted: ReplicaSet `checkout-api-5d98c7bf64` now has `role: stable` in
//! its template, but two of its pods still carry `role: canary`, and Service
//! `checkout-api-canary` (selector `app: checkout-api, role: canary`) lists them.
//!
//! # Remedy
//! Let the controller sync the rollout again (it relabels the pods at each sync), or relabel the
//! pods as their ReplicaSet's template says (a decision: it moves them between Services).

use std::collections::BTreeMap;

use rf_format::Timestamp;

use crate::base::HASH_LABEL;
use crate::base::time::rfc3339;
use crate::detectors::{Detector, Facts, Scene, Settling, argo};
use crate::model::world::selects;
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// How long the labels must disagree: the controller relabels the pods right after the
/// ReplicaSet, one patch each, retried with backoff.
pub(crate) const HOLD_SECONDS: i64 = 30;

/// (namespace, rollout, Service, revision).
type Key = (String, String, String, String);

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(StaleRoleLabels::default())
}

#[derive(Debug, Default)]
pub(crate) struct StaleRoleLabels {
    settling: Settling<Key>,
}

/// A pod whose role labels disagree with its ReplicaSet's template: its name, and each label
/// as (key, the pod's value, the template's value).
type Stale = (String, Vec<(String, Option<String>, Option<String>)>);

impl Detector for StaleRoleLabels {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::StaleRoleLabels, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut Facts,
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
        self.settling.begin(s.now);
        let (canary, stable) = track.ephemeral_labels();
        if canary.is_empty() && stable.is_empty() {
            return self.settling.end_in(mine);
        }
        let keys: std::collections::BTreeSet<&String> = canary.keys().chain(stable.keys()).collect();
        for rs in track.replicasets().values() {
            let Some(hash) = rs.hash.as_deref() else {
                continue;
            };
            if rs.deleted || rs.pod_labels.is_empty() {
                continue;
            }
            // The pods of this revision whose role labels are not the template's.
            let mut stale: Vec<(Stale, BTreeMap<String, String>)> = Vec::new();
            for (name, pod) in s
                .world
                .pods_of_hash(ns, hash)
                .filter(|(_, p)| !crate::model::traffic::foreign(track, p))
            {
                let labels = pod.labels();
                let wrong: Vec<(String, Option<String>, Option<String>)> = keys
                    .iter()
                    .filter_map(|k| {
                        let has = labels.get(k.as_str());
                        let want = rs.pod_labels.get(k.as_str());
                        (has != want).then(|| ((*k).clone(), has.cloned(), want.cloned()))
                    })
                    .collect();
                if wrong.is_empty() {
                    continue;
                }
                let mut labels = labels.clone();
                labels.insert(HASH_LABEL.to_owned(), hash.to_owned());
                stale.push(((name.to_owned(), wrong), labels));
            }
            if stale.is_empty() {
                continue;
            }
            stale.sort_by(|a, b| a.0.0.cmp(&b.0.0));
            // Any Service of the namespace: one that selects only by the stale labels routes
            // to none of the ReplicaSets' templates, so it is not among the rollout's.
            let Some(n) = s.world.namespace(ns) else {
                continue;
            };
            for (service, svc) in n.services() {
                let Some(selector) = svc.selector.as_ref() else {
                    continue;
                };
                // The pods it selects by a label they should no longer have.
                let by_stale: Vec<&Stale> = stale
                    .iter()
                    .filter(|((_, wrong), labels)| {
                        selects(selector, labels)
                            && wrong.iter().any(|(k, has, _)| {
                                has.is_some() && selector.get(k) == has.as_ref()
                            })
                    })
                    .map(|(p, _)| p)
                    .collect();
                if by_stale.is_empty() {
                    continue;
                }
                let key = (
                    ns.to_owned(),
                    track.name().to_owned(),
                    service.to_owned(),
                    hash.to_owned(),
                );
                let Some(since) = self.settling.ripe(s, key, HOLD_SECONDS) else {
                    continue;
                };
                out.push(finding(s, service, svc, rs, hash, &by_stale, since.at));
            }
        }
        self.settling.end_in(mine)
    }
}

/// The finding for Service `service`, which selects `pods` of revision `hash` by labels of a
/// role their ReplicaSet `rs` no longer has.
fn finding(
    s: &Scene<'_>,
    service: &str,
    svc: &crate::model::world::ServiceObj,
    rs: &crate::model::rollout::RsTrack,
    hash: &str,
    pods: &[&Stale],
    since: Timestamp,
) -> Finding {
    let track = s.track;
    let ns = track.namespace();
    let show = |v: &Option<String>| v.as_deref().unwrap_or("(none)").to_owned();
    let labels_words = |wrong: &[(String, Option<String>, Option<String>)]| {
        wrong
            .iter()
            .map(|(k, has, want)| format!("{k}: {} (template: {})", show(has), show(want)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let names: Vec<&str> = pods.iter().map(|(n, _)| n.as_str()).collect();
    let shown = names.iter().take(5).copied().collect::<Vec<_>>().join(", ");
    let more = if names.len() > 5 {
        format!(" and {} more", names.len() - 5)
    } else {
        String::new()
    };
    let role = if track.last().and_then(|c| c.stable_rs.as_deref()) == Some(hash) {
        "stable"
    } else if track.last().and_then(|c| c.pod_hash.as_deref()) == Some(hash) {
        "canary"
    } else {
        "replaced"
    };
    let selector = crate::detectors::service_selector_mismatch::format_selector(
        svc.selector.as_ref().unwrap_or(&BTreeMap::new()),
    );
    let summary = format!(
        "{} pod(s) of revision {hash} ({role}) keep labels of another role ({}), and Service {service} selects them by those: {shown}{more}",
        names.len(),
        labels_words(&pods[0].1)
    );
    let explanation = format!(
        "The controller puts each role's labels (canaryMetadata, stableMetadata) on the ReplicaSet's template and then on each of its running pods. ReplicaSet {} has the labels of its role now, but these pods still have the old ones: {}. Service {service} (selector {selector}) selects them by those labels, so it sends its requests to pods of revision {hash}, the {role} one, which it is not meant to reach. It has held since {}.",
        rs.name,
        pods.iter()
            .map(|(n, wrong)| format!("{n} ({})", labels_words(wrong)))
            .collect::<Vec<_>>()
            .join("; "),
        rfc3339(since)
    );
    let mut evidence = vec![Evidence::of(
        svc.pos,
        Subject::new(rf_format::Kind::Service, ns, service),
        format!("selector {selector}"),
    )];
    if let Some(p) = s.world.pod(ns, &pods[0].0) {
        evidence.push(Evidence::of(
            p.pos,
            Subject::new(rf_format::Kind::Pod, ns, &pods[0].0),
            format!("labels {}", labels_words(&pods[0].1)),
        ));
    }
    if let Some(cur) = track.last() {
        evidence.push(track.evidence(
            cur.pos,
            format!(
                "currentPodHash {}, stableRS {}",
                cur.pod_hash.as_deref().unwrap_or("-"),
                cur.stable_rs.as_deref().unwrap_or("-")
            ),
        ));
    }
    let relabel: Vec<String> = pods[0]
        .1
        .iter()
        .map(|(k, _, want)| match want {
            Some(v) => format!("{k}={v}"),
            None => format!("{k}-"),
        })
        .collect();
    Finding::new(
        Rule::StaleRoleLabels,
        Subject::new(rf_format::Kind::Service, ns, service),
        track.subject(),
        since,
        summary,
    )
    .explain(explanation)
    .with_evidence(evidence)
    .remedy(
        format!(
            "Service {service} reaches pods of the wrong role: do not trust what it measures until the labels agree. The controller relabels the pods when it syncs the rollout again; see why it did not (its logs, a webhook on pods)."
        ),
        vec![
            format!(
                "kubectl -n {ns} get pods -l {HASH_LABEL}={hash} -L {}",
                pods[0]
                    .1
                    .iter()
                    .map(|(k, _, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            format!("kubectl argo rollouts get rollout {}", argo(track)),
        ],
        "Keep pods writable by the controller (no webhook or policy that refuses its label patches), so that each role's labels follow the role.".to_owned(),
    )
    .decide(vec![format!(
        "kubectl -n {ns} label pod {} {} --overwrite",
        names.join(" "),
        relabel.join(" ")
    )])
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::HOLD_SECONDS;
    use crate::Rule;
    use crate::testkit::{Kit, NAME, digest, pinned, template};

    /// Promoted `new1` with `canaryMetadata` `role: canary` and `stableMetadata` `role:
    /// stable`: the controller moved `role: stable` onto `new1`'s template; its pods carry
    /// `pod_role`. Services `checkout-api-canary` (`role: canary`) and `checkout-api` (`app`).
    fn promoted(pod_role: &str) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["stableMetadata"] = json!({"labels": {"role": "stable"}});
            s["strategy"]["canary"]["canaryMetadata"] = json!({"labels": {"role": "canary"}});
        });
        let role = |image: &str, role: &str| {
            let mut t = template(image, "c0");
            t["metadata"]["labels"]["role"] = json!(role);
            t
        };
        kit.service("checkout-api-canary", json!({"app": NAME, "role": "canary"}));
        kit.service(NAME, json!({"app": NAME}));
        kit.new_revision("new1", role("app:2", "canary"));
        kit.scale("new1", 2, role("app:2", "stable"));
        for i in 0..2 {
            kit.pod_labelled(
                "new1",
                &format!("n{i}"),
                &pinned("app:2"),
                &digest("app:2"),
                json!({"role": pod_role}),
            );
        }
        kit.status(|st| {
            st.insert("stableRS".into(), json!("new1"));
            st.insert("currentStepIndex".into(), json!(4));
            st.insert("phase".into(), json!("Healthy"));
        });
        kit
    }

    #[test]
    fn pods_relabelled_as_their_template_says_are_no_finding() {
        let mut kit = promoted("stable");
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::StaleRoleLabels).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn pods_keeping_the_canary_label_behind_the_canary_service_are_reported() {
        let mut kit = promoted("canary");
        kit.advance(HOLD_SECONDS - 1);
        kit.step(4);
        assert!(kit.of_rule(Rule::StaleRoleLabels).is_empty(), "not before {HOLD_SECONDS}s");
        kit.advance(2);
        kit.step(4);
        let f = kit.of_rule(Rule::StaleRoleLabels);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert_eq!(f[0].subject.name, "checkout-api-canary");
        assert!(
            f[0].summary.starts_with("2 pod(s) of revision new1 (stable)")
                && f[0].summary.contains("role: canary (template: stable)")
                && f[0].summary.contains("checkout-api-new1-n0, checkout-api-new1-n1"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].remedy.commands.iter().all(|c| !c.contains(" label pod")),
            "relabelling moves pods between Services: a decision"
        );
        assert!(
            f[0].remedy.decisions[0].ends_with("role=stable --overwrite"),
            "{:?}",
            f[0].remedy.decisions
        );
    }

    #[test]
    fn the_controller_relabelling_within_the_hold_is_no_finding() {
        let mut kit = promoted("canary");
        kit.advance(3);
        for i in 0..2 {
            kit.pod_labelled(
                "new1",
                &format!("n{i}"),
                &pinned("app:2"),
                &digest("app:2"),
                json!({"role": "stable"}),
            );
        }
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::StaleRoleLabels).is_empty(), "{:?}", kit.rules());
    }
}
