use serde_json::{Value, json};

use super::{LintFinding, lint, lint_against};
use crate::report::finding::Rule;

fn rollout(strategy: Value, labels: Value, image: &str) -> Value {
    json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
           "metadata": {"name": "checkout-api"},
           "spec": {"replicas": 3, "revisionHistoryLimit": 3,
                    "selector": {"matchLabels": {"app": "checkout-api"}},
                    "template": {"metadata": {"labels": labels,
                                              "annotations": {"checksum/config": "abc"}},
                                 "spec": {"containers": [{"name": "app", "image": image}]}},
                    "strategy": strategy}})
}

fn service(name: &str, selector: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
           "spec": {"selector": selector, "ports": [{"port": 80}]}})
}

fn ingress(name: &str, backend: &str) -> Value {
    json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": name},
           "spec": {"rules": [{"host": "shop.example.com", "http": {"paths": [
               {"path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": backend, "port": {"number": 80}}}}]}}]}})
}

const PINNED: &str = "registry.example/checkout-api:1.1@sha256:0101010101010101010101010101010101010101010101010101010101010101";

fn rules(found: &[LintFinding]) -> Vec<Rule> {
    found.iter().map(|f| f.rule).collect()
}

/// Seed 002's render: the legacy Service pins `version: v1` from a stale values file, the
/// rollout's pods are `v2`, and the Ingress sends customers to the legacy Service.
#[test]
fn seed_002_the_pinned_version_and_the_front_door_are_found_before_the_sync() {
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        service(
            "checkout-api-legacy",
            json!({"app": "checkout-api", "version": "v1"}),
        ),
        ingress("shop", "checkout-api-legacy"),
        rollout(
            json!({"canary": {"stableService": "checkout-api", "steps": [{"setWeight": 20}]}}),
            json!({"app": "checkout-api", "version": "v2"}),
            PINNED,
        ),
    ];
    let found = lint(&objects, "payments");
    assert_eq!(
        rules(&found),
        [Rule::ServiceSelectorMismatch, Rule::FrontDoorBypass],
        "{found:#?}"
    );
    assert_eq!(found[0].object, 1);
    assert_eq!(found[0].path, ["spec", "selector", "version"]);
    assert!(
        found[0]
            .message
            .contains("version: v1 where the pods have version: v2"),
        "{}",
        found[0].message
    );
    assert_eq!(found[1].object, 2);
    assert_eq!(
        found[1].path.join("."),
        "spec.rules.0.http.paths.0.backend.service.name"
    );
    assert!(
        found[1]
            .message
            .contains("not to the Service the rollout moves, checkout-api")
    );
}

/// The same release rendered right: nothing to say.
#[test]
fn a_clean_render_gives_nothing() {
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        service("checkout-api-canary", json!({"app": "checkout-api"})),
        ingress("shop", "checkout-api"),
        rollout(
            json!({"canary": {"stableService": "checkout-api", "canaryService": "checkout-api-canary",
                              "canaryMetadata": {"labels": {"role": "canary"}},
                              "steps": [{"setWeight": 20}]}}),
            json!({"app": "checkout-api"}),
            PINNED,
        ),
        service(
            "checkout-api-canary-only",
            json!({"app": "checkout-api", "role": "canary"}),
        ),
    ];
    assert_eq!(lint(&objects, "payments"), []);
}

/// The controller's key pinned in Git, an image by tag, no rollback history, a `rollme`.
#[test]
fn what_one_object_shows_on_its_own() {
    let mut r = rollout(
        json!({"blueGreen": {"activeService": "checkout-api"}}),
        json!({"app": "checkout-api"}),
        "registry.example/checkout-api:1.1",
    );
    r["spec"]["revisionHistoryLimit"] = json!(0);
    r["spec"]["template"]["metadata"]["annotations"]["rollme"] = json!("x7Kq2");
    let objects = [
        service(
            "checkout-api",
            json!({"app": "checkout-api", "rollouts-pod-template-hash": "5699dbb5c7"}),
        ),
        r,
    ];
    let found = lint(&objects, "payments");
    assert_eq!(
        rules(&found),
        [
            Rule::SelectorFight,
            Rule::ImageNotPinned,
            Rule::NoRollbackHistory,
            Rule::HashOnlyChange
        ],
        "{found:#?}"
    );
    assert_eq!(
        found[1].path.join("."),
        "spec.template.spec.containers.0.image"
    );
    assert_eq!(
        found[3].path.join("."),
        "spec.template.metadata.annotations.rollme"
    );
}

/// Seed 000's Application: the values from a branch, the image inline.
#[test]
fn seed_000_a_values_source_on_a_branch_beside_inline_parameters() {
    let app = |revision: &str, parameters: Value| {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               "metadata": {"name": "checkout-api", "namespace": "argocd"},
               "spec": {"sources": [
                   {"repoURL": "https://git.example/charts", "targetRevision": "1.4.2",
                    "path": "checkout-api",
                    "helm": {"valueFiles": ["$values/checkout-api/values.yaml"],
                             "parameters": parameters}},
                   {"repoURL": "https://git.example/values", "targetRevision": revision,
                    "ref": "values"}]}})
    };
    let image = json!([{"name": "image.tag", "value": "1.1"}]);
    let found = lint(&[app("main", image.clone())], "argocd");
    assert_eq!(rules(&found), [Rule::DoubleRender], "{found:#?}");
    assert_eq!(found[0].path.join("."), "spec.sources.1.targetRevision");
    for pinned in ["3d90a1c4b7e0f2a9c8d1e6f5a4b3c2d1e0f9a8b7", "v1.4.2"] {
        assert_eq!(lint(&[app(pinned, image.clone())], "argocd"), []);
    }
    assert_eq!(lint(&[app("main", json!([]))], "argocd"), []);
}

/// A router the rollout names in its traffic routing is its own: no front door.
#[test]
fn a_router_of_the_rollouts_traffic_routing_is_not_a_front_door() {
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        service("checkout-api-canary", json!({"app": "checkout-api"})),
        json!({"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
               "metadata": {"name": "checkout-api"},
               "spec": {"http": [{"name": "primary", "route": [
                   {"destination": {"host": "checkout-api"}, "weight": 100},
                   {"destination": {"host": "checkout-api-canary"}, "weight": 0}]}]}}),
        json!({"apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
               "metadata": {"name": "other"},
               "spec": {"http": [{"route": [
                   {"destination": {"host": "checkout-api-canary.payments.svc.cluster.local"}}]}]}}),
        rollout(
            json!({"canary": {"stableService": "checkout-api", "canaryService": "checkout-api-canary",
                              "trafficRouting": {"istio": {"virtualService": {"name": "checkout-api"}}},
                              "steps": [{"setWeight": 20}]}}),
            json!({"app": "checkout-api"}),
            PINNED,
        ),
    ];
    let found = lint(&objects, "payments");
    assert_eq!(rules(&found), [Rule::FrontDoorBypass], "{found:#?}");
    assert_eq!(
        found[0].object, 3,
        "only the VirtualService the rollout does not name"
    );
}

/// Seed 002's analysis: the canary is analyzed while the front door sends customers to the
/// legacy Service, which promotion does not move.
#[test]
fn an_analysis_behind_a_front_door_that_bypasses_the_canary() {
    let analyzed = json!({"canary": {"stableService": "checkout-api", "steps": [
        {"setWeight": 20}, {"analysis": {"templates": [{"templateName": "success-rate"}]}}]}});
    let template = json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "AnalysisTemplate",
                          "metadata": {"name": "success-rate"}, "spec": {"metrics": []}});
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        service("checkout-api-legacy", json!({"app": "checkout-api"})),
        ingress("shop", "checkout-api-legacy"),
        rollout(analyzed.clone(), json!({"app": "checkout-api"}), PINNED),
        template.clone(),
    ];
    let found = lint(&objects, "payments");
    assert_eq!(
        rules(&found),
        [Rule::FrontDoorBypass, Rule::AnalysisWithoutTraffic],
        "{found:#?}"
    );
    assert_eq!(found[1].object, 3);
    assert_eq!(
        found[1].path.join("."),
        "spec.strategy.canary.steps.1.analysis"
    );
    assert!(
        found[1]
            .message
            .contains("Ingress shop sends customers to Service checkout-api-legacy"),
        "{}",
        found[1].message
    );
    // The front door through the stableService: the canary takes its share.
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        ingress("shop", "checkout-api"),
        rollout(analyzed, json!({"app": "checkout-api"}), PINNED),
        template,
    ];
    assert_eq!(lint(&objects, "payments"), []);
}

/// What the rollout names and the render does not hold: a warning, since the cluster may
/// hold it; with the cluster's Services, an error or nothing.
#[test]
fn references_missing_from_the_render_and_from_the_cluster() {
    let strategy = json!({"canary": {
        "stableService": "checkout-api", "canaryService": "checkout-api-canary",
        "trafficRouting": {"nginx": {"stableIngress": "shop"}},
        "analysis": {"templates": [{"templateName": "errors", "clusterScope": true}]},
        "steps": [{"setWeight": 20}, {"analysis": {"templates": [{"templateName": "latency"}]}}]}});
    let objects = [
        service("checkout-api", json!({"app": "checkout-api"})),
        rollout(strategy, json!({"app": "checkout-api"}), PINNED),
    ];
    let found = lint(&objects, "payments");
    let said: Vec<(String, &str)> = found
        .iter()
        .map(|f| (f.path.join("."), f.severity.as_str()))
        .collect();
    assert_eq!(
        said,
        [
            ("spec.strategy.canary.canaryService".to_owned(), "warning"),
            (
                "spec.strategy.canary.trafficRouting.nginx.stableIngress".to_owned(),
                "warning"
            ),
            (
                "spec.strategy.canary.analysis.templates.0.templateName".to_owned(),
                "warning"
            ),
            (
                "spec.strategy.canary.steps.1.analysis.templates.0.templateName".to_owned(),
                "warning"
            ),
        ],
        "{found:#?}"
    );
    assert!(found.iter().all(|f| f.rule == Rule::RolloutStopped));
    assert!(
        found[2]
            .message
            .contains("names ClusterAnalysisTemplate errors")
    );
    // The canary Service is in the cluster: no finding; not there: an error.
    let canary = json!({"kind": "Service", "metadata": {"name": "checkout-api-canary", "namespace": "payments"}});
    let found = lint_against(&objects, "payments", Some(&[canary]));
    assert_eq!(found.len(), 3, "{found:#?}");
    let found = lint_against(&objects, "payments", Some(&[]));
    assert_eq!(found[0].severity.as_str(), "error");
    assert!(
        found[0]
            .message
            .contains("neither this render nor the cluster holds")
    );
}

/// The Istio and Gateway API routers a rollout names, missing from the render.
#[test]
fn the_routers_of_istio_and_the_gateway_api_plugin_are_references_too() {
    let istio = json!({"canary": {"stableService": "checkout-api", "trafficRouting": {"istio": {
        "virtualService": {"name": "shop.payments"}, "destinationRule": {"name": "checkout-api"}}}}});
    let gateway = json!({"canary": {"stableService": "checkout-api", "trafficRouting": {"plugins": {
        "argoproj-labs/gatewayAPI": {"httpRoutes": [{"name": "shop"}, {"name": "api"}]}}}}});
    let s = service("checkout-api", json!({"app": "checkout-api"}));
    let at = |strategy: Value| -> Vec<String> {
        lint(
            &[
                s.clone(),
                rollout(strategy, json!({"app": "checkout-api"}), PINNED),
            ],
            "payments",
        )
        .iter()
        .map(|f| {
            format!(
                "{} {}",
                f.path.join("."),
                f.message.split(" (").next().unwrap_or("")
            )
        })
        .collect()
    };
    assert_eq!(
        at(istio),
        [
            "spec.strategy.canary.trafficRouting.istio.virtualService.name Rollout checkout-api names VirtualService shop",
            "spec.strategy.canary.trafficRouting.istio.destinationRule.name Rollout checkout-api names DestinationRule checkout-api",
        ]
    );
    assert_eq!(
        at(gateway),
        [
            "spec.strategy.canary.trafficRouting.plugins.argoproj-labs/gatewayAPI.httpRoutes.0.name Rollout checkout-api names HTTPRoute shop",
            "spec.strategy.canary.trafficRouting.plugins.argoproj-labs/gatewayAPI.httpRoutes.1.name Rollout checkout-api names HTTPRoute api",
        ]
    );
}

/// An Application beside the manifests it syncs: self-heal over a pinned hash.
#[test]
fn an_application_that_self_heals_a_service_pinning_the_hash() {
    let app = |self_heal: bool| {
        json!({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               "metadata": {"name": "checkout-api", "namespace": "argocd"},
               "spec": {"destination": {"namespace": "payments"},
                        "syncPolicy": {"automated": {"selfHeal": self_heal}}}})
    };
    let pinned = service(
        "checkout-api",
        json!({"app": "checkout-api", "rollouts-pod-template-hash": "5699dbb5c7"}),
    );
    let found = lint(&[app(true), pinned.clone()], "payments");
    assert_eq!(rules(&found), [Rule::SelectorFight, Rule::SelectorFight]);
    assert_eq!(found[0].object, 0);
    assert_eq!(
        found[0].path.join("."),
        "spec.syncPolicy.automated.selfHeal"
    );
    assert!(found[0].message.contains("Application checkout-api self-heals, and Service checkout-api of its namespace payments pins rollouts-pod-template-hash: 5699dbb5c7"));
    let found = lint(&[app(false), pinned], "payments");
    assert_eq!(found.len(), 1, "the Service's own finding only: {found:#?}");
}

/// Two renders of one release given together: what differs in the pod template's annotations
/// is made at render time.
#[test]
fn two_renders_of_one_release_that_differ_in_a_render_time_value() {
    let strategy = json!({"blueGreen": {"activeService": "checkout-api"}});
    let mut once = rollout(strategy.clone(), json!({"app": "checkout-api"}), PINNED);
    let mut twice = once.clone();
    once["spec"]["template"]["metadata"]["annotations"]["example.com/build"] = json!("4f1c");
    twice["spec"]["template"]["metadata"]["annotations"]["example.com/build"] = json!("9e2a");
    let s = service("checkout-api", json!({"app": "checkout-api"}));
    let found = lint(&[s.clone(), once.clone(), s.clone(), twice], "payments");
    assert_eq!(rules(&found), [Rule::HashOnlyChange], "{found:#?}");
    assert_eq!(found[0].object, 3);
    assert_eq!(
        found[0].path.join("."),
        "spec.template.metadata.annotations.example.com/build"
    );
    assert!(
        found[0]
            .message
            .contains("annotations example.com/build (4f1c -> 9e2a)")
    );
    // Two releases (another image) are not one release rendered twice.
    let mut other = once.clone();
    other["spec"]["template"]["spec"]["containers"][0]["image"] = json!(
        "registry.example/checkout-api:1.2@sha256:0202020202020202020202020202020202020202020202020202020202020202"
    );
    other["spec"]["template"]["metadata"]["annotations"]["example.com/build"] = json!("9e2a");
    assert_eq!(lint(&[s.clone(), once, s, other], "payments"), []);
}
