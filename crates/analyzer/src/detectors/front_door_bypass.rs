//! `front-door-bypass` (error): an Ingress, HTTPRoute or VirtualService sends customers to a
//! Service the rollout does not move, which holds none of the promoted revision's pods.
//!
//! # What it detects
//! A rollout that names its `stableService` (a blue-green one, its `activeService`) is promoted (Healthy, its current revision the
//! stable one, with ready pods), and a router of its namespace (an Ingress, a Gateway API
//! HTTPRoute, an Istio VirtualService) sends a host and path to another Service of the
//! rollout (its canary or preview Service, or one that selects its pods), with a weight above
//! 0, whose EndpointSlices have held no ready pod of the current revision for at least 10 s.
//! The canary Ingress the controller makes for NGINX (annotated `canary: "true"`) is not a
//! front door. The finding follows the path customers take: host and path, backend Service,
//! its endpoints by revision.
//!
//! # Why it matters
//! The rollout moves only the Services it names: the controller puts the new revision's hash
//! on its stable and canary Services, and every gate (analysis, promotion, health) judges the
//! pods behind them. Customers come in through the router. When the router's backend is a
//! Service that still selects the old pods (a copy made before the rollout, a selector pinned
//! to a version), every check is green and every request still reaches the old revision.
//!
//! # Example
//! Rollout `payments/checkout-api` promotes `5d98c7bf64` behind its stableService
//! `checkout-api`; Ingress `shop` sends `shop.example.com/` to Service `checkout-api-legacy`,
//! which selects `version: v417`: its endpoints are the old pods, and only those.
//!
//! # Remedy
//! Point the router at the rollout's stableService (a decision: it moves every customer), or
//! name the Service the router uses as the rollout's `stableService`.
//!
//! # Before the sync
//! `lint` follows each rendered Ingress, HTTPRoute and VirtualService (except those the rollout
//! names in its `trafficRouting`) to its backend Services: one that is a Service of the rollout
//! (its canary or preview Service, or one selecting its pods) other than its `stableService`
//! (`activeService`) is a front door that promotion will not move.

use rf_format::Timestamp;

use crate::base::time::rfc3339;
use crate::detectors::{Detector, Facts, FactsUse, SETTLE_SECONDS, Scene, Settling, argo};
use crate::model::traffic::{Route, membership, serves_revision};
use crate::report::finding::{Evidence, Finding, Rule, Subject};

/// (namespace, rollout, Ingress, host and path, Service, revision).
type Key = (String, String, String, String, String, String);

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one
/// snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(FrontDoorBypass::default())
}

#[derive(Debug, Default)]
pub(crate) struct FrontDoorBypass {
    settling: Settling<Key>,
}

impl Detector for FrontDoorBypass {
    fn take_changes(&mut self, out: &mut Vec<crate::report::finding::ConditionChange>) {
        self.settling
            .take_changes(Rule::FrontDoorBypass, |k: &Key| (k.0.as_str(), k.1.as_str()), out);
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
        // Said again below for as long as it holds.
        facts.adopted_by(Rule::FrontDoorBypass, track);
        let ns = track.namespace();
        // This rollout's keys: the range of them is made only when any key is held.
        let mine = || {
            super::rollout_keys(track.name(), |n| -> Key {
                (ns.to_owned(), n, String::new(), String::new(), String::new(), String::new())
            })
        };
        self.settling.begin(s.now);
        let (Some(stable_service), Some(cur)) = (track.stable_service(), track.last()) else {
            return self.settling.end_in(mine);
        };
        let Some(hash) = cur.pod_hash.as_deref() else {
            return self.settling.end_in(mine);
        };
        let role = Route::Stable
            .field(track.is_blue_green())
            .unwrap_or("stableService");
        let promoted = cur.phase.as_deref() == Some("Healthy")
            && cur.stable_rs.as_deref() == Some(hash)
            && track
                .rs_by_hash(hash)
                .is_some_and(|rs| !rs.deleted && rs.ready > 0);
        if !promoted {
            return self.settling.end_in(mine);
        }
        let Some(n) = s.world.namespace(ns) else {
            return self.settling.end_in(mine);
        };
        for router in s.world.routers_in(ns) {
            if router.is_nginx_canary() {
                continue;
            }
            for (rule, path) in router
                .rules
                .iter()
                .flat_map(|r| r.backends.iter().map(move |b| (r, b)))
            {
                let service = path.service.as_str();
                // The stableService is `canary-not-in-endpoints`'s to judge once promoted; a
                // backend of weight 0 or of another namespace takes none of these requests.
                if service == stable_service || path.weight == Some(0) || path.namespace != ns {
                    continue;
                }
                // A Service of the rollout (its canary or preview Service, or one that selects
                // its pods), whose endpoints are known.
                if !s
                    .routing
                    .iter()
                    .any(|(name, _, why)| *name == service && !matches!(why, Route::Stable))
                    || !n.has_slices(service)
                    || serves_revision(s.world, track, service, hash)
                {
                    continue;
                }
                let host_path = rule.match_words().join(", ");
                facts.not_adopted_by(Rule::FrontDoorBypass, track, hash, || {
                    let words = router.words();
                    (
                        format!(
                            "{words} sends {host_path} to Service {service}, which holds none of revision {hash}'s pods"
                        ),
                        format!("revision {hash} not behind {words} -> Service {service}"),
                    )
                });
                let key = (
                    ns.to_owned(),
                    track.name().to_owned(),
                    router.words(),
                    host_path.clone(),
                    service.to_owned(),
                    hash.to_owned(),
                );
                let Some(since) = self.settling.ripe(s, key, SETTLE_SECONDS) else {
                    continue;
                };
                let by = membership(s.world, track, service);
                let behind: Vec<String> = by
                    .iter()
                    .map(|(rev, pods)| {
                        let rev = if rev.is_empty() {
                            "no revision of the rollout"
                        } else {
                            rev
                        };
                        format!("{rev}: {} pod(s)", pods.len())
                    })
                    .collect();
                let behind = if behind.is_empty() {
                    "no ready endpoint".to_owned()
                } else {
                    behind.join(", ")
                };
                let ing = &router.name;
                let words = router.words();
                let resource = router.router.resource();
                let summary = format!(
                    "{words} sends {host_path} to Service {service}, not to the rollout's {role} {stable_service}: none of revision {hash}'s ready pods are behind it ({behind})"
                );
                let explanation = format!(
                    "The rollout promoted {hash} and its {role} {stable_service} selects it, but customers come in through {words}: {host_path} -> Service {service} -> {behind}. The controller moves only the Services the rollout names, so every gate judged pods this path never reaches. It has held since {}.",
                    rfc3339(since.at)
                );
                let mut evidence = vec![
                    router.evidence(format!("{host_path} -> Service {service}")),
                    track.evidence(
                        cur.pos,
                        format!("Healthy on {hash}, {role} {stable_service}"),
                    ),
                ];
                if let Some(svc) = n.service(service) {
                    evidence.push(Evidence::of(
                        svc.pos,
                        Subject::new(rf_format::Kind::Service, ns, service),
                        format!(
                            "selector {}",
                            svc.selector
                                .as_ref()
                                .map(crate::detectors::service_selector_mismatch::format_selector)
                                .unwrap_or_default()
                        ),
                    ));
                }
                out.push(
                    Finding::new(
                        Rule::FrontDoorBypass,
                        Subject::new(router.router.kind(), ns, ing),
                        track.subject(),
                        since.at,
                        summary,
                    )
                    .explain(explanation)
                    .with_evidence(evidence)
                    .remedy(
                        if by.is_empty() {
                            format!(
                                "Customers of {host_path} reach no pod at all: Service {service} has no ready endpoint. Decide which Service the front door should use."
                            )
                        } else {
                            format!(
                                "Customers of {host_path} do not reach the release ({behind}): do not call it done. Decide which Service the front door should use."
                            )
                        },
                        vec![
                            format!("kubectl -n {ns} get {resource} {ing} -o yaml"),
                            format!(
                                "kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={service}"
                            ),
                            format!("kubectl argo rollouts get rollout {}", argo(track)),
                        ],
                        format!(
                            "Route the front door through the Services the rollout moves: make {words}'s backend {stable_service}, or name {service} as the rollout's {role}."
                        ),
                    )
                    .decide(vec![format!(
                        "kubectl -n {ns} patch {resource} {ing} --type json -p '[{{\"op\":\"replace\",\"path\":\"{}\",\"value\":\"{stable_service}\"}}]'",
                        path.pointer
                    )]),
                );
            }
        }
        self.settling.end_in(mine)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::detectors::SETTLE_SECONDS;
    use crate::testkit::{Kit, NAME, digest, template};

    /// A rollout with stableService `checkout-api`, Ingress `shop` sending its host to
    /// `backend`, promoted to `new1`; Service `checkout-api-legacy` pinned to `stable0`.
    fn promoted(backend: &str) -> Kit {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["stableService"] = json!(NAME);
            s["strategy"]["canary"]["canaryService"] = json!("checkout-api-canary");
        });
        kit.service(NAME, json!({"app": NAME}));
        kit.service(
            "checkout-api-legacy",
            json!({"app": NAME, "rollouts-pod-template-hash": "stable0"}),
        );
        kit.pod("stable0", "a", true, "app:1", &digest("app:1"));
        kit.slice("checkout-api-legacy", &[("checkout-api-stable0-a", true)]);
        kit.ingress("shop", backend, None, "argocd-controller");
        kit.new_revision("new1", template("app:2", "c0"));
        kit.scale("new1", 5, template("app:2", "c0"));
        kit.pod("new1", "b", true, "app:2", &digest("app:2"));
        kit.slice(NAME, &[("checkout-api-new1-b", true)]);
        kit.status(|st| {
            st.insert("stableRS".into(), json!("new1"));
            st.insert("currentStepIndex".into(), json!(4));
            st.insert("phase".into(), json!("Healthy"));
        });
        kit
    }

    #[test]
    fn an_ingress_to_a_service_of_the_old_pods_is_reported_with_the_path() {
        let mut kit = promoted("checkout-api-legacy");
        kit.advance(SETTLE_SECONDS - 1);
        kit.step(4);
        assert!(kit.of_rule(Rule::FrontDoorBypass).is_empty(), "not before it held {SETTLE_SECONDS}s");
        kit.advance(2);
        kit.step(4);
        let f = kit.of_rule(Rule::FrontDoorBypass);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary.contains("Ingress shop sends shop.example.com/ to Service checkout-api-legacy")
                && f[0].summary.contains("stableService checkout-api")
                && f[0].summary.contains("revision new1")
                && f[0].summary.contains("stable0: 1 pod(s)"),
            "{}",
            f[0].summary
        );
        assert!(
            f[0].remedy.commands.iter().all(|c| !c.contains("patch")),
            "moving the front door is a decision: {:?}",
            f[0].remedy.commands
        );
        assert!(
            f[0].remedy.decisions[0].contains(
                r#""path":"/spec/rules/0/http/paths/0/backend/service/name","value":"checkout-api""#
            ),
            "{:?}",
            f[0].remedy.decisions
        );
        assert!(
            f[0].remedy.summary.contains("do not reach the release (stable0: 1 pod(s))"),
            "{}",
            f[0].remedy.summary
        );
    }

    /// Seed 002: Argo CD reads the Application Healthy and Synced the whole time; the green is
    /// named with the path customers take, not as a Service's endpoints.
    #[test]
    fn a_green_application_over_the_bypass_is_named_with_the_front_door() {
        let mut kit = promoted("checkout-api-legacy");
        kit.app("Synced", "Healthy", &[("r1", 0), ("r2", 5)]);
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(4);
        kit.app("Synced", "Healthy", &[("r1", 0), ("r2", 5)]);
        let green = kit.of_rule(Rule::GitopsHealthMismatch);
        assert_eq!(green.len(), 1, "{:?}", kit.rules());
        assert_eq!(green[0].severity, crate::Severity::Warning);
        assert!(
            green[0].summary.contains("reads Healthy and Synced while Ingress shop sends shop.example.com/ to Service checkout-api-legacy, which holds none of revision new1's pods"),
            "{}",
            green[0].summary
        );
        // Once the front door goes to the stableService, the green is true again.
        let mut kit = promoted(NAME);
        kit.app("Synced", "Healthy", &[("r1", 0), ("r2", 5)]);
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(4);
        kit.app("Synced", "Healthy", &[("r1", 0), ("r2", 5)]);
        assert!(kit.of_rule(Rule::GitopsHealthMismatch).is_empty(), "{:?}", kit.rules());
    }

    #[test]
    fn an_ingress_to_the_stable_service_or_before_promotion_is_no_finding() {
        let mut kit = promoted(NAME);
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::FrontDoorBypass).is_empty(), "{:?}", kit.rules());

        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["stableService"] = json!(NAME);
        });
        kit.service(
            "checkout-api-legacy",
            json!({"app": NAME, "rollouts-pod-template-hash": "stable0"}),
        );
        kit.pod("stable0", "a", true, "app:1", &digest("app:1"));
        kit.slice("checkout-api-legacy", &[("checkout-api-stable0-a", true)]);
        kit.ingress("shop", "checkout-api-legacy", None, "argocd-controller");
        // Paused at step 1: the old revision is still the stable one, which the Service holds.
        kit.release_to_pause("new1", template("app:2", "c0"));
        kit.advance(600);
        kit.step(1);
        assert!(kit.of_rule(Rule::FrontDoorBypass).is_empty(), "{:?}", kit.rules());
    }

    /// An HTTPRoute `shop` whose rule splits `/` between the stableService and the pinned
    /// legacy Service at `legacy` weight.
    fn http_route(kit: &mut Kit, legacy: i64) {
        kit.router(
            false,
            "shop",
            json!({"parentRefs": [{"name": "shop-gateway"}], "hostnames": ["shop.example.com"],
                   "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
                              "backendRefs": [{"name": NAME, "port": 80, "weight": 100 - legacy},
                                              {"name": "checkout-api-legacy", "port": 80, "weight": legacy}]}]}),
            "argocd-controller",
        );
    }

    #[test]
    fn an_http_route_to_a_service_of_the_old_pods_is_reported_and_one_of_weight_0_is_not() {
        // The Ingress goes to the stable Service; the HTTPRoute gives the legacy Service 0.
        let mut kit = promoted(NAME);
        http_route(&mut kit, 0);
        kit.advance(600);
        kit.step(4);
        assert!(kit.of_rule(Rule::FrontDoorBypass).is_empty(), "{:?}", kit.rules());
        // Half the requests go to the legacy Service.
        http_route(&mut kit, 50);
        kit.advance(SETTLE_SECONDS + 1);
        kit.step(4);
        let f = kit.of_rule(Rule::FrontDoorBypass);
        assert_eq!(f.len(), 1, "{:?}", kit.rules());
        assert!(
            f[0].summary
                .contains("HTTPRoute shop sends shop.example.com/ to Service checkout-api-legacy"),
            "{}",
            f[0].summary
        );
        assert_eq!(f[0].subject.kind, rf_format::api::HTTP_ROUTE.newest());
        assert!(
            f[0].remedy.decisions[0].contains("patch httproute shop")
                && f[0].remedy.decisions[0].contains(r#""path":"/spec/rules/0/backendRefs/1/name""#),
            "{:?}",
            f[0].remedy.decisions
        );
    }
}
