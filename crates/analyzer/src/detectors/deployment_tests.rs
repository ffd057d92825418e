//! The rules that mean something for a plain Deployment, on Deployments.

use serde_json::{Value, json};

use crate::Rule;
use crate::testkit::{Kit, digest};

/// The spec of Deployment `web` running `image`, its template annotated `checksum`.
fn spec(image: &str, checksum: &str, history: Option<i64>) -> Value {
    let mut s = json!({"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"},
                                  "annotations": {"checksum/config": checksum}},
                     "spec": {"containers": [{"name": "app", "image": image}]}}});
    if let Some(h) = history {
        s["revisionHistoryLimit"] = json!(h);
    }
    s
}

const PINNED: &str = "registry.example.com/web@sha256:1111111111111111111111111111111111111111111111111111111111111111";

fn of(kit: &Kit, rule: Rule) -> Vec<String> {
    kit.of_rule(rule)
        .iter()
        .filter(|f| f.subject.kind == rf_format::api::DEPLOYMENT.newest())
        .map(|f| f.summary.clone())
        .collect()
}

#[test]
fn issue_28_a_deployment_without_history_is_reported_with_deployment_commands() {
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec(PINNED, "c0", Some(0)));
    kit.advance(5);
    kit.plain_deployment("web", 1, spec(PINNED, "c0", Some(0)));
    let f = kit.of_rule(Rule::NoRollbackHistory);
    assert_eq!(f.len(), 1, "{:?}", kit.rules());
    assert!(
        f[0].summary.contains("Deployment web keeps no old ReplicaSets (revisionHistoryLimit: 0): `kubectl rollout undo` has nothing to go back to"),
        "{}",
        f[0].summary
    );
    assert_eq!(
        f[0].remedy.commands,
        vec!["kubectl -n payments rollout history deployment/web".to_owned()]
    );
    assert_eq!(f[0].rollout.kind, rf_format::api::DEPLOYMENT.newest());

    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec(PINNED, "c0", None));
    assert!(of(&kit, Rule::NoRollbackHistory).is_empty());
}

#[test]
fn issue_28_a_deployment_image_by_tag_is_reported_once() {
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec("registry.example.com/web:2", "c0", None));
    kit.advance(5);
    kit.plain_deployment("web", 2, spec("registry.example.com/web:2", "c1", None));
    assert_eq!(
        of(&kit, Rule::ImageNotPinned),
        vec!["image registry.example.com/web:2 is referenced by tag, not by digest".to_owned()]
    );
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec(PINNED, "c0", None));
    assert!(of(&kit, Rule::ImageNotPinned).is_empty());
}

#[test]
fn issue_28_a_moved_tag_under_one_deployment_replicaset_is_reported() {
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec("registry.example.com/web:2", "c0", None));
    kit.deployment_pod(
        "web",
        "7f9c",
        "a",
        "registry.example.com/web:2",
        &digest("build-1"),
    );
    kit.advance(60);
    kit.deployment_pod(
        "web",
        "7f9c",
        "b",
        "registry.example.com/web:2",
        &digest("build-1"),
    );
    assert!(of(&kit, Rule::ImageDigestDrift).is_empty());
    kit.deployment_pod(
        "web",
        "7f9c",
        "c",
        "registry.example.com/web:2",
        &digest("build-2"),
    );
    let f = of(&kit, Rule::ImageDigestDrift);
    assert_eq!(f.len(), 1, "{:?}", kit.rules());
    assert!(
        f[0].contains("ran as two digests within ReplicaSet web-7f9c")
            && f[0].contains("web-7f9c-a")
            && f[0].contains("web-7f9c-c"),
        "{}",
        f[0]
    );
    // The same digest again is nothing new.
    kit.deployment_pod(
        "web",
        "7f9c",
        "d",
        "registry.example.com/web:2",
        &digest("build-2"),
    );
    assert_eq!(of(&kit, Rule::ImageDigestDrift).len(), 1);
}

#[test]
fn issue_28_a_checksum_only_rerender_of_a_deployment_is_a_double_render() {
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec(PINNED, "c0", None));
    kit.advance(600);
    // The release: a new image and config.
    kit.plain_deployment("web", 2, spec(&PINNED.replace("1111", "2222"), "c1", None));
    kit.advance(30);
    // The second render: only the checksum.
    kit.plain_deployment("web", 3, spec(&PINNED.replace("1111", "2222"), "c2", None));
    let f = kit.of_rule(Rule::DoubleRender);
    assert_eq!(f.len(), 1, "{:?}", kit.rules());
    assert!(
        f[0].summary
            .starts_with("Deployment web was rendered twice 30s apart: generation 2 at ")
            && f[0].summary.contains("generation 3 at ")
            && f[0].summary.contains("annotations only: "),
        "{}",
        f[0].summary
    );
    assert_eq!(
        f[0].remedy.commands,
        vec!["kubectl -n payments rollout history deployment/web".to_owned()]
    );

    // Two releases far apart, or a second change of the image, are not.
    let mut kit = Kit::new();
    kit.plain_deployment("web", 1, spec(PINNED, "c0", None));
    kit.plain_deployment("web", 2, spec(PINNED, "c1", None));
    kit.advance(600);
    kit.plain_deployment("web", 3, spec(PINNED, "c2", None));
    kit.advance(10);
    kit.plain_deployment("web", 4, spec(&PINNED.replace("1111", "3333"), "c2", None));
    assert!(of(&kit, Rule::DoubleRender).is_empty(), "{:?}", kit.rules());
}

/// A double render of a Deployment an Argo CD Application tracks: the finding waits for the
/// Application's history to show the second sync, and names both revisions.
#[test]
fn issue_28_a_deployment_double_render_names_the_argocd_syncs() {
    let render = |kit: &mut Kit, generation: i64, image: &str, checksum: &str| {
        kit.plain_deployment_with(
            "web",
            generation,
            spec(image, checksum, None),
            json!({}),
            json!({"argocd.argoproj.io/tracking-id": "checkout-api:apps/Deployment:payments/web"}),
        );
    };
    let mut kit = Kit::new();
    kit.app_listing("Synced", "Healthy", &[("r0", 0)], false);
    render(&mut kit, 1, PINNED, "c0");
    kit.advance(600);
    render(&mut kit, 2, &PINNED.replace("1111", "2222"), "c1");
    kit.app_listing(
        "Synced",
        "Healthy",
        &[("r0", 0), ("rev-one-aaaa", 600)],
        false,
    );
    kit.advance(20);
    render(&mut kit, 3, &PINNED.replace("1111", "2222"), "c2");
    assert!(
        of(&kit, Rule::DoubleRender).is_empty(),
        "waits for the second sync"
    );
    kit.advance(1);
    kit.app_listing(
        "Synced",
        "Healthy",
        &[("r0", 0), ("rev-one-aaaa", 600), ("rev-two-bbbb", 620)],
        false,
    );
    render(&mut kit, 3, &PINNED.replace("1111", "2222"), "c2");
    let f = kit.of_rule(Rule::DoubleRender);
    assert_eq!(f.len(), 1, "{:?}", kit.rules());
    assert!(
        f[0].summary.contains("sync 1 at ")
            && f[0].summary.contains("revision r0 -> rev-one-")
            && f[0].summary.contains("sync 2 at ")
            && f[0].summary.contains("revision rev-one- -> rev-two-"),
        "{}",
        f[0].summary
    );
    assert!(
        f[0].remedy
            .commands
            .contains(&"argocd app history checkout-api -N argocd".to_owned()),
        "{:?}",
        f[0].remedy.commands
    );
}

/// A Deployment a Flux HelmRelease applies: its double render names both Helm releases; and
/// one whose recording ends before the HelmRelease said anything is still reported.
#[test]
fn issue_28_a_deployment_double_render_names_the_helm_releases() {
    let render = |kit: &mut Kit, generation: i64, checksum: &str| {
        kit.plain_deployment_with(
            "web",
            generation,
            spec(PINNED, checksum, None),
            json!({"helm.toolkit.fluxcd.io/name": "web"}),
            json!({}),
        );
    };
    let history = |releases: &[(i64, &str, i64)]| {
        json!({"history": releases.iter().rev().map(|(v, digest, at)| json!({
            "chartName": "web", "chartVersion": "2.1.0", "configDigest": digest, "version": v,
            "firstDeployed": "2026-01-05T09:00:00Z",
            "lastDeployed": crate::base::time::rfc3339(rf_format::Timestamp::from_unix_seconds(*at)),
            "status": "deployed"})).collect::<Vec<_>>()})
    };
    let mut kit = Kit::new();
    render(&mut kit, 1, "c0");
    kit.advance(600);
    let t1 = kit.now().0 / 1_000_000_000;
    render(&mut kit, 2, "c1");
    kit.helm_release("web", history(&[(6, "sha256:aaaa1111aaaa", t1)]));
    kit.advance(15);
    let t2 = kit.now().0 / 1_000_000_000;
    render(&mut kit, 3, "c2");
    kit.advance(2);
    kit.helm_release(
        "web",
        history(&[
            (6, "sha256:aaaa1111aaaa", t1),
            (7, "sha256:bbbb2222bbbb", t2),
        ]),
    );
    render(&mut kit, 3, "c2");
    let f = kit.of_rule(Rule::DoubleRender);
    assert_eq!(f.len(), 1, "{:?}", kit.rules());
    assert!(
        f[0].summary.contains(", HelmRelease web: chart 2.1.0, values sha256:aaaa1111 (Helm release 6) (")
            && f[0].summary.contains(", HelmRelease web: chart 2.1.0, values sha256:bbbb2222 (Helm release 7) (annotations only"),
        "{}",
        f[0].summary
    );
    assert!(
        f[0].remedy
            .commands
            .contains(&"flux -n flux-system get helmreleases web".to_owned())
    );

    // The recording ends 2 s after the second render: reported at the end, with what is known.
    let mut kit = Kit::new();
    render(&mut kit, 1, "c0");
    kit.advance(600);
    let t1 = kit.now().0 / 1_000_000_000;
    render(&mut kit, 2, "c1");
    kit.helm_release("web", history(&[(6, "sha256:aaaa1111aaaa", t1)]));
    kit.advance(15);
    render(&mut kit, 3, "c2");
    kit.advance(2);
    assert!(
        of(&kit, Rule::DoubleRender).is_empty(),
        "waits for the HelmRelease"
    );
    let report = kit.finish();
    let f: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.rule == Rule::DoubleRender)
        .collect();
    assert_eq!(f.len(), 1, "{:?}", crate::testkit::rules_of(&report));
    assert!(
        f[0].summary
            .starts_with("Deployment web was rendered twice 15s apart"),
        "{}",
        f[0].summary
    );
}
