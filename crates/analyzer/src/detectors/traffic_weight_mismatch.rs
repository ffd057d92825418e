//! `traffic-weight-mismatch` (error): the router sends the canary another share of requests than
//! the rollout's status says.
//!
//! # What it detects
//! A canary with NGINX traffic routing whose `status.canary.weights.canary.weight` (what the
//! controller believes it set) differs, for at least 10 s, from the `canary-weight` annotation
//! of the canary Ingress the controller makes of each stable Ingress
//! (`<rollout>-<stableIngress>-canary`, annotations under the rollout's `annotationPrefix`,
//! `nginx.ingress.kubernetes.io` by default), or whose canary Ingress is gone or not marked
//! `canary: "true"` (no canary traffic) while the status weight is above 0. A stable Ingress the
//! recording does not hold is not judged. The finding names both sides and who wrote the
//! Ingress last. With Istio (`trafficRouting.istio`) or the Gateway API plugin
//! (`plugins["argoproj-labs/gatewayAPI"]`): each HTTP route the controller sets weights on (the
//! VirtualService routes the rollout names, else its only or first unnamed route; every rule
//! of an HTTPRoute that holds the canary or stable Service) gives the canary, by Service host
//! or DestinationRule subset, another share of its weights than the status weight, for 10 s
//! (an HTTPRoute's weights are relative: 40 of 200 is 20%). TLS and TCP routes are not
//! judged. With any router: a status that gives the canary a weight above 0 for a
//! revision (`weights.canary.podTemplateHash`) that is no longer the current one, also for 10 s
//! (the controller has not moved its routing to the new revision).
//!
//! # Why it matters
//! The rollout reports the split it asked for, and every gate believes it: the canary's
//! analysis judges metrics as if 20% of the requests reached it, a promotion trusts them. The
//! requests go where the Ingress says. A GitOps sync or a script that owns the canary Ingress
//! too (an Ingress kept in Git under the controller's name, a VirtualService or HTTPRoute
//! whose weights Argo CD syncs back to Git's, an annotation tool, a prune) makes the two
//! disagree until the controller writes the weight again.
//!
//! # Example
//! Paused at `setWeight: 20`, the status says canary weight 20; Argo CD syncs an Ingress
//! manifest that sets `nginx.ingress.kubernetes.io/canary-weight: "0"` on
//! `checkout-api-checkout-api-canary`: for 10 minutes the canary receives nothing.
//!
//! # Remedy
//! Let the controller own the canary Ingress and the weights: keep them out of Git (Argo CD's
//! `ignoreDifferences` for a VirtualService's or HTTPRoute's weights) and out of other tools,
//! and make it write the weight again (`kubectl argo rollouts get rollout` shows what it believes).

use rf_format::Timestamp;

use crate::base::time::rfc3339;
use crate::detectors::{Detector, Facts, SETTLE_SECONDS, Scene, Settling, argo};
use crate::model::rollout::{Nginx, Split};
use crate::model::world::{BackendObj, Router, RouterObj, RuleObj};
use crate::report::finding::{Finding, Rule, Subject};

/// The Ingress class the controller watches unless started with other `--nginx-ingress-classes`.
const DEFAULT_NGINX_CLASS: &str = "nginx";

/// (namespace, rollout, canary Ingress or `revision HASH`, status weight, router weight).
type Key = (String, String, String, i64, Option<i64>);

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(TrafficWeightMismatch::default())
}

#[derive(Debug, Default)]
pub(crate) struct TrafficWeightMismatch {
    settling: Settling<Key>,
}

impl TrafficWeightMismatch {
    /// The status gives the canary weight to a revision that is no longer the current one:
    /// the router, whatever it is, still sends that share to the replaced pods.
    fn stale_revision(
        &mut self,
        s: &Scene<'_>,
        cur: &crate::model::rollout::Snapshot,
        weight: i64,
        out: &mut Vec<Finding>,
    ) {
        let track = s.track;
        let ns = track.namespace();
        let (Some(to), Some(current)) = (track.weights_canary_hash(), cur.pod_hash.as_deref())
        else {
            return;
        };
        if weight <= 0 || to == current || cur.stable_rs.as_deref() == Some(to) {
            return;
        }
        let key = (
            ns.to_owned(),
            track.name().to_owned(),
            format!("revision {to}"),
            weight,
            None,
        );
        let Some(since) = self.settling.ripe(s, key, SETTLE_SECONDS) else {
            return;
        };
        let summary = format!(
            "the rollout's status gives weight {weight} to revision {to}, which is no longer its current revision {current}"
        );
        let explanation = format!(
            "status.canary.weights.canary.podTemplateHash says where the controller set the canary's share of the requests: revision {to} ({}), replaced by {current} ({}). Since {} the router has sent {weight} to the replaced pods, not to the revision the steps, pauses and analysis now judge: the controller has not moved its traffic routing to the new revision.",
            track.rs_name(to),
            track.rs_name(current),
            rfc3339(since.at)
        );
        out.push(
            Finding::new(
                Rule::TrafficWeightMismatch,
                track.subject(),
                track.subject(),
                since.at,
                summary,
            )
            .explain(explanation)
            .with_evidence([track.evidence(
                cur.pos,
                format!(
                    "currentPodHash {current}, status.canary.weights.canary {{weight {weight}, podTemplateHash {to}}}"
                ),
            )])
            .remedy(
                "Do not judge the new revision by its metrics: the canary's traffic goes to the replaced one. Look at why the controller does not update its traffic routing (its logs, the router's objects).".to_owned(),
                vec![
                    format!("kubectl argo rollouts get rollout {}", argo(track)),
                    format!("kubectl -n {ns} get rollout {} -o jsonpath='{{.status.canary.weights}}'", track.name()),
                ],
                "Keep the router's objects (Ingress, VirtualService, HTTPRoute) writable by the controller alone, so that it can move the weight with each revision.".to_owned(),
            ),
        );
    }
}

impl TrafficWeightMismatch {
    /// The VirtualServices and HTTPRoutes whose weights the controller sets: the share of the
    /// requests each rule it sets gives the canary, against the status weight.
    fn splits(&mut self, s: &Scene<'_>, weight: i64, out: &mut Vec<Finding>) {
        let track = s.track;
        let ns = track.namespace();
        let splits = track.splits();
        let (canary_service, stable_service) = (track.canary_service(), track.stable_service());
        let is_canary = |b: &BackendObj| {
            Some(b.service.as_str()) == canary_service
                || (b.subset.is_some() && b.subset.as_deref() == splits.canary_subset.as_deref())
        };
        let is_stable = |b: &BackendObj| {
            Some(b.service.as_str()) == stable_service
                || (b.subset.is_some() && b.subset.as_deref() == splits.stable_subset.as_deref())
        };
        for split in &splits.objects {
            let Some(obj) = s.world.router(split.router, &split.namespace, &split.name) else {
                continue;
            };
            for (index, rule) in set_rules(split, obj) {
                if !rule.backends.iter().any(|b| is_canary(b) || is_stable(b)) {
                    continue;
                }
                let (picked, total) = rule.share(obj.router, is_canary);
                if picked * 100 == weight * total || (total == 0 && weight == 0) {
                    continue;
                }
                let routed = if total > 0 {
                    (picked * 100 + total / 2) / total
                } else {
                    0
                };
                let label = match &rule.name {
                    Some(n) => format!("{} {} route {n}", obj.router.word(), obj.name),
                    None => format!("{} {} rule {index}", obj.router.word(), obj.name),
                };
                let key = (
                    ns.to_owned(),
                    track.name().to_owned(),
                    label.clone(),
                    weight,
                    Some(routed),
                );
                let Some(since) = self.settling.ripe(s, key, SETTLE_SECONDS) else {
                    continue;
                };
                let revision = track
                    .weights_canary_hash()
                    .or(track.last().and_then(|c| c.pod_hash.as_deref()))
                    .map(|h| format!(" (revision {h})"))
                    .unwrap_or_default();
                let summary = format!(
                    "the rollout's status gives the canary{revision} weight {weight}, but {label} sends it {routed}% ({picked} of {total}){}",
                    aborted_words(s, routed)
                );
                let writer = obj
                    .actor
                    .as_ref()
                    .map(|a| format!(" It was last written by {a}."))
                    .unwrap_or_default();
                let explanation = format!(
                    "status.canary.weights.canary.weight is what the controller believes it set: {weight}. The requests go where {label} says: {}. The two have disagreed since {}.{writer} Until they agree, the canary's metrics and analysis measure another share of the traffic than the rollout reports.",
                    obj.routes_words(),
                    rfc3339(since.at)
                );
                let mut evidence = Vec::new();
                if let Some(cur) = track.last() {
                    evidence.push(track.evidence(
                        cur.pos,
                        format!("status.canary.weights.canary.weight {weight}"),
                    ));
                }
                evidence.push(obj.evidence(format!(
                    "{label}: canary {picked} of {total}{}",
                    obj.actor
                        .as_ref()
                        .map(|a| format!(", written by {a}"))
                        .unwrap_or_default()
                )));
                let resource = obj.router.resource();
                let subject =
                    Subject::new(obj.router.kind(), &obj.namespace, &obj.name);
                out.push(
                    Finding::new(Rule::TrafficWeightMismatch, subject, track.subject(), since.at, summary)
                        .explain(explanation)
                        .with_evidence(evidence)
                        .remedy(
                            format!("Do not judge the canary by its metrics until the weights agree: find what wrote {} {} and stop it; the controller sets the weights again at its next sync of the rollout.", obj.router.word(), obj.name),
                            vec![
                                format!("kubectl -n {} get {resource} {} -o yaml", obj.namespace, obj.name),
                                format!("kubectl argo rollouts get rollout {}", argo(track)),
                            ],
                            if gitops_writes(s, obj.actor.as_deref()) {
                                format!(
                                    "The weights of {} {} belong to the controller: keep them out of Git (or out of Argo CD's diff with ignoreDifferences), and let no other tool write them.",
                                    obj.router.word(), obj.name
                                )
                            } else {
                                format!(
                                    "The weights of {} {} belong to the controller: let no other tool or person write them{}.",
                                    obj.router.word(),
                                    obj.name,
                                    obj.actor.as_deref().map(|a| format!(" (the last writer was {a})")).unwrap_or_default()
                                )
                            },
                        ),
                );
            }
        }
    }
}

/// True when a GitOps tool is in the recording for this rollout or wrote the router: an
/// Application or Flux object manages the rollout, or the writer is one.
fn gitops_writes(s: &Scene<'_>, actor: Option<&str>) -> bool {
    actor.is_some_and(|a| {
        a.starts_with("argocd") || a == "helm-controller" || a == "kustomize-controller"
    }) || s.world.apps_of(s.track).next().is_some()
        || s.track.flux().is_some()
}

/// What a router's weights mean for an aborted rollout, for the summary: the aborted
/// revision still takes a share.
fn aborted_words(s: &Scene<'_>, routed: i64) -> String {
    match s.track.last().filter(|c| c.abort) {
        Some(c) => format!(
            "; the rollout is aborted, so the controller means the canary{} to take nothing, and it still takes {routed}% of the requests",
            c.pod_hash
                .as_deref()
                .map(|h| format!(" {h}"))
                .unwrap_or_default()
        ),
        None => String::new(),
    }
}

/// The rules of `obj` whose weights the controller sets for `split`: a VirtualService's
/// routes the rollout names, else its only route, else its first unnamed one
/// (rollout/trafficrouting/istio); every rule of an HTTPRoute (the plugin sets the weights of
/// the canary and stable backends wherever they are).
fn set_rules<'a>(split: &Split, obj: &'a RouterObj) -> Vec<(usize, &'a RuleObj)> {
    let all = obj.rules.iter().enumerate();
    match obj.router {
        Router::VirtualService if !split.rules.is_empty() => all
            .filter(|(_, r)| {
                r.name
                    .as_deref()
                    .is_some_and(|n| split.rules.iter().any(|w| w == n))
            })
            .collect(),
        Router::VirtualService if obj.rules.len() == 1 => all.collect(),
        Router::VirtualService => all.filter(|(_, r)| r.name.is_none()).take(1).collect(),
        _ => all.collect(),
    }
}

impl Detector for TrafficWeightMismatch {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::TrafficWeightMismatch, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
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
                (ns.to_owned(), n, String::new(), i64::MIN, None)
            })
        };
        self.settling.begin(s.now);
        let Some(cur) = track.last() else {
            return self.settling.end_in(mine);
        };
        let Some(weight) = cur.canary_weight else {
            return self.settling.end_in(mine);
        };
        self.stale_revision(s, cur, weight, out);
        self.splits(s, weight, out);
        let Some(nginx) = track.nginx() else {
            return self.settling.end_in(mine);
        };
        for stable in &nginx.stable_ingresses {
            if s.world.ingress(ns, stable).is_none() {
                continue;
            }
            let name = Nginx::canary_ingress(track.name(), stable);
            let canary = s.world.ingress(ns, &name);
            // What the router does: the canary Ingress's weight, none without a canary Ingress
            // marked canary (NGINX then sends the canary nothing).
            let routed = canary
                .filter(|c| c.annotation(&nginx.prefix, "canary") == Some("true"))
                .map(|c| {
                    c.annotation(&nginx.prefix, "canary-weight")
                        .and_then(|w| w.trim().parse::<i64>().ok())
                        .unwrap_or(0)
                });
            if routed.unwrap_or(0) == weight {
                continue;
            }
            let key = (
                ns.to_owned(),
                track.name().to_owned(),
                name.clone(),
                weight,
                routed,
            );
            let Some(since) = self.settling.ripe(s, key, SETTLE_SECONDS) else {
                continue;
            };
            let router = match (canary, routed) {
                (Some(_), Some(w)) => format!("its canary Ingress {name} sends it {w}"),
                (Some(_), None) => format!(
                    "its canary Ingress {name} is not marked {}/canary: \"true\", so it sends it nothing",
                    nginx.prefix
                ),
                (None, _) => format!("its canary Ingress {name} does not exist, so it gets nothing"),
            };
            let revision = track
                .weights_canary_hash()
                .or(cur.pod_hash.as_deref())
                .map(|h| format!(" (revision {h})"))
                .unwrap_or_default();
            let summary = format!(
                "the rollout's status gives the canary{revision} weight {weight}, but {router}{}",
                aborted_words(s, routed.unwrap_or(0))
            );
            let writer = canary
                .and_then(|c| c.actor.as_ref())
                .map(|a| format!(" It was last written by {a}."))
                .unwrap_or_default();
            // The controller writes the weight again as soon as an Ingress changes only for
            // the classes it watches (ingress/ingress.go, `--nginx-ingress-classes`).
            let class = canary
                .and_then(|c| c.class.as_deref())
                .filter(|c| *c != DEFAULT_NGINX_CLASS)
                .map(|c| format!(" Its class is {c}: the controller writes the weight again at once only when an Ingress of a class it watches changes (--nginx-ingress-classes, {DEFAULT_NGINX_CLASS} by default), so a write to this one stands until it next syncs the rollout."))
                .unwrap_or_default();
            let explanation = format!(
                "status.canary.weights.canary.weight is what the controller believes it set: {weight}. NGINX routes by the canary Ingress's {}/canary-weight, and the two have disagreed since {}.{writer}{class} Until they agree, the canary's metrics and analysis measure another share of the traffic than the rollout reports.",
                nginx.prefix,
                rfc3339(since.at)
            );
            let mut evidence = vec![track.evidence(
                cur.pos,
                format!("status.canary.weights.canary.weight {weight}"),
            )];
            if let Some(c) = canary {
                evidence.push(c.evidence(format!(
                    "{}/canary-weight {}{}",
                    nginx.prefix,
                    c.annotation(&nginx.prefix, "canary-weight")
                        .unwrap_or("(none)"),
                    c.actor
                        .as_ref()
                        .map(|a| format!(", written by {a}"))
                        .unwrap_or_default()
                )));
            }
            if let Some(st) = s.world.ingress(ns, stable) {
                evidence.push(st.evidence(format!(
                    "stable Ingress: {}",
                    st.routes_words()
                )));
            }
            let subject = Subject::new(rf_format::api::INGRESS.newest(), ns, &name);
            out.push(
                Finding::new(Rule::TrafficWeightMismatch, subject, track.subject(), since.at, summary)
                    .explain(explanation)
                    .with_evidence(evidence)
                    .remedy(
                        "Do not judge the canary by its metrics until the weights agree: find what wrote the canary Ingress and stop it; the controller writes the weight again at its next sync of the rollout.".to_owned(),
                        vec![
                            format!("kubectl -n {ns} get ingress {name} -o yaml"),
                            format!("kubectl argo rollouts get rollout {}", argo(track)),
                        ],
                        if gitops_writes(s, canary.and_then(|c| c.actor.as_deref())) {
                            format!(
                                "The canary Ingress {name} belongs to the controller: keep it out of Git and out of Argo CD's sync and prune, and let no other tool write its {}/canary annotations.",
                                nginx.prefix
                            )
                        } else {
                            format!(
                                "The canary Ingress {name} belongs to the controller: let no other tool or person write its {}/canary annotations{}.",
                                nginx.prefix,
                                canary
                                    .and_then(|c| c.actor.as_deref())
                                    .map(|a| format!(" (the last writer was {a})"))
                                    .unwrap_or_default()
                            )
                        },
                    ),
            );
        }
        self.settling.end_in(mine)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::detectors::SETTLE_SECONDS;
    use crate::testkit::{Kit, NAME, template};

    const CANARY: &str = "checkout-api-checkout-api-canary";

    /// A canary with NGINX routing over Ingress `checkout-api`, released and paused at
    /// setWeight 20, the controller's canary Ingress at `weight`.
    fn routed(weight: &str) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["trafficRouting"] =
                json!({"nginx": {"stableIngress": NAME}});
            s["strategy"]["canary"]["canaryService"] = json!("checkout-api-canary");
            s["strategy"]["canary"]["stableService"] = json!(NAME);
        });
        kit.ingress(NAME, NAME, None, "argocd-controller");
        kit.release_to_pause("new1", template("app:2", "c0"));
        kit.status(|st| {
            st.insert(
                "canary".into(),
                json!({"weights": {"canary": {"weight": 20, "podTemplateHash": "new1",
                                              "serviceName": "checkout-api-canary"},
                                   "stable": {"weight": 80, "podTemplateHash": "stable0"}}}),
            );
        });
        kit.ingress(CANARY, "checkout-api-canary", Some(weight), "rollouts-controller");
        kit
    }

    /// After an abort the status gives the canary 0; a canary Ingress left at 40 by a person's
    /// edit still sends it 40%: said as such, and the prevention names no Git it did not see.
    #[test]
    fn issue_48_a_weight_left_on_an_aborted_canary_says_the_abort_and_the_real_writer() {
        let mut kit = routed("20");
        kit.advance(30);
        kit.ingress(CANARY, "checkout-api-canary", Some("40"), "kubectl-edit");
        kit.status(|st| {
            st.insert("abort".into(), json!(true));
            st.insert("phase".into(), json!("Degraded"));
            st["canary"]["weights"]["canary"]["weight"] = json!(0);
            st["canary"]["weights"]["stable"]["weight"] = json!(100);
        });
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(0);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:#?}", kit.found);
        assert!(
            f[0].summary.contains("the rollout is aborted")
                && f[0].summary.contains("still takes 40% of the requests"),
            "{}",
            f[0].summary
        );
        assert!(!f[0].remedy.prevention.contains("Git"), "{}", f[0].remedy.prevention);
        assert!(f[0].remedy.prevention.contains("kubectl-edit"), "{}", f[0].remedy.prevention);
    }

    #[test]
    fn a_canary_ingress_that_agrees_with_the_status_is_no_finding() {
        let mut kit = routed("20");
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn a_canary_weight_overwritten_by_a_sync_is_reported_with_both_sides() {
        let mut kit = routed("20");
        kit.advance(30);
        kit.ingress(CANARY, "checkout-api-canary", Some("0"), "argocd-controller");
        kit.advance(SETTLE_SECONDS - 1);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "not before it held {SETTLE_SECONDS}s");
        kit.advance(2);
        kit.step(1);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("weight 20")
                && f[0].summary.contains(&format!("{CANARY} sends it 0"))
                && f[0].summary.contains("revision new1"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].explanation.contains("last written by argocd-controller"),
            "{}",
            f[0].explanation
        );
        assert_eq!(f[0].subject.name, CANARY);
    }

    #[test]
    fn a_brief_disagreement_the_controller_mends_is_no_finding() {
        let mut kit = routed("20");
        kit.advance(30);
        kit.ingress(CANARY, "checkout-api-canary", Some("0"), "argocd-controller");
        kit.advance(3);
        kit.ingress(CANARY, "checkout-api-canary", Some("20"), "rollouts-controller");
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn a_weight_left_on_a_replaced_revision_is_reported_and_a_moved_one_is_not() {
        let mut kit = routed("20");
        // A new revision; the controller moves the weight with it within seconds: nothing.
        kit.new_revision("new2", template("app:3", "c0"));
        kit.advance(3);
        kit.status(|st| {
            st["canary"]["weights"]["canary"]["podTemplateHash"] = json!("new2");
        });
        kit.advance(600);
        kit.step(0);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
        // Another revision; the weight stays on the replaced one.
        kit.new_revision("new3", template("app:4", "c0"));
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(0);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary
                .contains("weight 20 to revision new2, which is no longer its current revision new3"),
            "{}",
            f[0].summary
        );
    }

    #[test]
    fn a_canary_ingress_gone_while_the_status_gives_weight_is_reported() {
        let mut kit = routed("20");
        kit.delete_ingress(CANARY);
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(1);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("does not exist"), "{}", f[0].summary);
    }

    /// A canary with `routing` (the rollout's trafficRouting) released and paused at setWeight
    /// 20; then `router` written by the controller with `spec`.
    fn split(routing: serde_json::Value) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["trafficRouting"] = routing;
            s["strategy"]["canary"]["canaryService"] = json!("checkout-api-canary");
            s["strategy"]["canary"]["stableService"] = json!(NAME);
        });
        kit.release_to_pause("new1", template("app:2", "c0"));
        kit.status(|st| {
            st.insert(
                "canary".into(),
                json!({"weights": {"canary": {"weight": 20, "podTemplateHash": "new1"},
                                   "stable": {"weight": 80, "podTemplateHash": "stable0"}}}),
            );
        });
        kit
    }

    /// A VirtualService with an unnamed catch-all route and route `primary` over `hosts`
    /// (destination hosts or subsets) at `weights`.
    fn virtual_service(primary: &[(&str, Option<&str>, i64)]) -> serde_json::Value {
        let route: Vec<serde_json::Value> = primary
            .iter()
            .map(|(host, subset, w)| {
                let mut d = json!({"destination": {"host": host}, "weight": w});
                if let Some(s) = subset {
                    d["destination"]["subset"] = json!(s);
                }
                d
            })
            .collect();
        json!({"hosts": ["shop.example.com"], "gateways": ["shop-gateway"],
               "http": [{"name": "primary", "match": [{"uri": {"prefix": "/api"}}], "route": route},
                        {"route": [{"destination": {"host": NAME}}]}]})
    }

    #[test]
    fn a_virtual_service_route_that_agrees_is_no_finding_and_one_overwritten_is() {
        let routing = json!({"istio": {"virtualService": {"name": NAME, "routes": ["primary"]}}});
        let mut kit = split(routing);
        let canary = "checkout-api-canary.payments.svc.cluster.local";
        kit.router(
            true,
            NAME,
            virtual_service(&[(NAME, None, 80), (canary, None, 20)]),
            "rollouts-controller",
        );
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
        // A sync puts the Git weights back: all to stable.
        kit.router(
            true,
            NAME,
            virtual_service(&[(NAME, None, 100), (canary, None, 0)]),
            "argocd-controller",
        );
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(1);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("weight 20")
                && f[0].summary.contains("VirtualService checkout-api route primary sends it 0% (0 of 100)"),
            "{}",
            f[0].summary
        );
        assert!(f[0].explanation.contains("last written by argocd-controller"), "{}", f[0].explanation);
        assert_eq!(f[0].subject.kind, rf_format::api::VIRTUAL_SERVICE.newest());
    }

    #[test]
    fn a_virtual_service_by_subsets_is_judged_on_its_subsets_and_its_default_route() {
        // No route named: the controller sets the first unnamed one (here the only route).
        let routing = json!({"istio": {
            "virtualService": {"name": format!("{NAME}.payments")},
            "destinationRule": {"name": NAME, "canarySubsetName": "canary", "stableSubsetName": "stable"}}});
        let mut kit = split(routing);
        let spec = |stable: i64, canary: i64| {
            json!({"hosts": [NAME], "http": [{"route": [
                {"destination": {"host": NAME, "subset": "stable"}, "weight": stable},
                {"destination": {"host": NAME, "subset": "canary"}, "weight": canary}]}]})
        };
        kit.router(true, NAME, spec(80, 20), "rollouts-controller");
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
        kit.router(true, NAME, spec(50, 50), "kubectl-edit");
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(1);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("rule 0 sends it 50% (50 of 100)"), "{}", f[0].summary);
    }

    #[test]
    fn an_http_route_of_the_gateway_api_plugin_is_judged_by_its_relative_weights() {
        let routing = json!({"plugins": {"argoproj-labs/gatewayAPI": {"httpRoute": "shop", "namespace": "payments"}}});
        let mut kit = split(routing);
        let spec = |stable: i64, canary: i64| {
            json!({"parentRefs": [{"name": "shop-gateway"}], "hostnames": ["shop.example.com"],
                   "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                              "backendRefs": [{"name": NAME, "port": 80, "weight": stable},
                                              {"name": "checkout-api-canary", "port": 80, "weight": canary}]}]})
        };
        // 40 of 200 is the 20% the status says.
        kit.router(false, "shop", spec(160, 40), "rollouts-controller");
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
        kit.router(false, "shop", spec(1, 0), "argocd-controller");
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(1);
        let f = kit.of_rule(Rule::TrafficWeightMismatch);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(f[0].summary.contains("HTTPRoute shop rule 0 sends it 0% (0 of 1)"), "{}", f[0].summary);
        assert_eq!(f[0].subject.kind, rf_format::api::HTTP_ROUTE.newest());
    }

    #[test]
    fn a_router_the_rollout_does_not_name_is_not_judged() {
        let routing = json!({"istio": {"virtualService": {"name": "other"}}});
        let mut kit = split(routing);
        kit.router(
            true,
            NAME,
            virtual_service(&[(NAME, None, 100), ("checkout-api-canary", None, 0)]),
            "argocd-controller",
        );
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::TrafficWeightMismatch).is_empty(), "{:?}", kit.rules());
    }
}
