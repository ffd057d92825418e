//! The catalog of scripted incidents.

use crate::recording::Recording;
use crate::sim::Sim;
use crate::spec::{
    IngressConfig, NEW_IMAGE, NEW_TAG, STABLE_IMAGE, ServiceConfig, SimConfig, Step,
    TemplateChange, config_checksum, image_digest,
};

/// A scenario's name and what it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScenarioInfo {
    /// The name [`generate`] takes (kebab-case).
    pub name: &'static str,
    /// One sentence: what happens.
    pub summary: &'static str,
}

static CATALOG: [ScenarioInfo; 21] = [
    ScenarioInfo {
        name: "rerender-race",
        summary: "Two GitOps renders 30 s apart differ only in checksum/config: the canary restarts \
                  at step 0 and the first render's ReplicaSet is left running (empty \
                  scale-down-deadline).",
    },
    ScenarioInfo {
        name: "rerender-race-reruns",
        summary: "The re-render race, then two pipeline re-runs that render both checksums again: \
                  ReplicaSets are reused with revision-history and the canary restarts each time.",
    },
    ScenarioInfo {
        name: "image-only-release",
        summary: "A clean release of a new image: pause at step 1, promoted by the pipeline, timed \
                  pauses elapse, fully promoted and Healthy.",
    },
    ScenarioInfo {
        name: "abort",
        summary: "A new image pauses at step 1 and a user aborts: the canary is scaled to 0, the \
                  stable back to full, the rollout Degraded.",
    },
    ScenarioInfo {
        name: "steps-change",
        summary: "While paused at step 1 a render changes only the steps: currentStepHash changes, \
                  currentPodHash stays, the canary restarts at step 0.",
    },
    ScenarioInfo {
        name: "rollback-to-stable",
        summary: "While paused at step 1 the stable template is rendered again: the index jumps to \
                  len(steps), the canary is scaled to 0, Healthy.",
    },
    ScenarioInfo {
        name: "manual-step-jump",
        summary: "A status patch moves currentStepIndex from 0 past an unprocessed pause to 2; \
                  later a checksum-only re-render resets the canary to step 0.",
    },
    ScenarioInfo {
        name: "hash-only-change",
        summary: "A controller upgrade changes the pod-template-hash function: an identical \
                  template gets a new ReplicaSet and a full canary.",
    },
    ScenarioInfo {
        name: "adoption-selector-drift",
        summary: "A release also bumps the pod label version v417 -> v418 while the Service still \
                  selects version v417: the canary pauses at step 1 with Ready pods that no \
                  EndpointSlice lists, for two hours, the Application Synced and Suspended.",
    },
    ScenarioInfo {
        name: "gitops-double-render",
        summary: "Two Argo CD syncs of different commits 20 s apart, the second changing only \
                  checksum/config: the canary restarts at step 0 and the first render's \
                  ReplicaSet is left running.",
    },
    ScenarioInfo {
        name: "flux-double-render",
        summary: "Seed 000 under Flux: one commit bumps the chart and changes the values, and \
                  HelmRelease checkout-api upgrades twice 20 s apart, the second changing only \
                  checksum/config: the canary restarts at step 0.",
    },
    ScenarioInfo {
        name: "moved-tag",
        summary: "A release by the unpinned tag 1.42.0 whose registry tag moves to new bytes after \
                  the canary is promoted: pods of one ReplicaSet run two digests; ends Healthy.",
    },
    ScenarioInfo {
        name: "no-rollback-history",
        summary: "A clean release with revisionHistoryLimit 0: once Healthy the controller deletes \
                  the previous ReplicaSet, leaving nothing to roll back to.",
    },
    ScenarioInfo {
        name: "blue-green-release",
        summary: "A clean blue-green release: the preview Service follows the new revision, the \
                  rollout pauses before promotion, is promoted, the active Service switches and \
                  the old active ReplicaSet is scaled down after scaleDownDelaySeconds.",
    },
    ScenarioInfo {
        name: "blue-green-rerender-at-pause",
        summary: "A blue-green release waits at its pause before promotion; a second render 30 s \
                  later changes only checksum/config: the preview starts over on a new hash and \
                  pauses again; promoted, the active Service switches and the old active \
                  ReplicaSet is scaled down after scaleDownDelaySeconds.",
    },
    ScenarioInfo {
        name: "workload-ref-scaled-up",
        summary: "A canary Rollout runs the template of Deployment checkout-api (workloadRef, \
                  scaleDown: onsuccess), scaled to 0 since the migration; a release of a new \
                  image is promoted to Healthy, then an Argo CD sync restores the Deployment's \
                  replicas: 5 pods of it run beside the rollout's 5.",
    },
    ScenarioInfo {
        name: "front-door-legacy-service",
        summary: "Seed incident 002's front door: the rollout's stableService is checkout-api, \
                  but Ingress shop sends shop.example.com to checkout-api-legacy, which selects \
                  version v417; a release moves the pod label to v418 and is promoted to \
                  Healthy: the legacy Service is left with none of the new revision's pods.",
    },
    ScenarioInfo {
        name: "nginx-canary-release",
        summary: "A clean release of a canary with NGINX traffic routing: the canary Ingress \
                  follows each setWeight step while the stable ReplicaSet stays fully scaled; \
                  promoted, the weight goes back to 0, the stableService moves to the new \
                  revision and the old ReplicaSet is scaled down after scaleDownDelaySeconds.",
    },
    ScenarioInfo {
        name: "nginx-canary-weight-overwritten",
        summary: "A canary with NGINX traffic routing over Ingress checkout-api of class \
                  nginx-public: paused at setWeight 20, the controller's canary Ingress at 20; \
                  an Argo CD sync writes canary-weight 0 to it, and the controller, which does \
                  not watch that class, leaves it: the canary takes none of the traffic the \
                  status says.",
    },
    ScenarioInfo {
        name: "role-labels-release",
        summary: "A clean release of a canary with canaryMetadata role: canary and stableMetadata \
                  role: stable, and a Service for each role: the controller labels the canary's \
                  template and pods canary, and relabels them stable once promoted.",
    },
    ScenarioInfo {
        name: "stale-role-labels",
        summary: "The same release while a webhook refuses the controller's pod label patches: \
                  once promoted, the new revision's template says role: stable but its pods keep \
                  role: canary, so the canary Service keeps them and the stable Service has none.",
    },
];

/// Every scenario, in catalog order.
pub fn catalog() -> &'static [ScenarioInfo] {
    &CATALOG
}

/// Runs the scenario called `name`; `None` for an unknown name.
pub fn generate(name: &str) -> Option<Recording> {
    let sim = match name {
        "rerender-race" => rerender_race(),
        "rerender-race-reruns" => rerender_race_reruns(),
        "image-only-release" => image_only_release(),
        "abort" => abort(),
        "steps-change" => steps_change(),
        "rollback-to-stable" => rollback_to_stable(),
        "manual-step-jump" => manual_step_jump(),
        "hash-only-change" => hash_only_change(),
        "adoption-selector-drift" => adoption_selector_drift(),
        "gitops-double-render" => gitops_double_render(),
        "flux-double-render" => flux_double_render(),
        "moved-tag" => moved_tag(),
        "no-rollback-history" => no_rollback_history(),
        "blue-green-release" => blue_green_release(),
        "blue-green-rerender-at-pause" => blue_green_rerender_at_pause(),
        "workload-ref-scaled-up" => workload_ref_scaled_up(),
        "front-door-legacy-service" => front_door_legacy_service(),
        "nginx-canary-release" => nginx_canary_release(),
        "nginx-canary-weight-overwritten" => nginx_canary_weight_overwritten(),
        "role-labels-release" => role_labels_release(false),
        "stale-role-labels" => role_labels_release(true),
        _ => return None,
    };
    Some(sim.finish(name))
}

/// The `checksum/config` of the inline values (the first render).
fn checksum_a() -> String {
    config_checksum("checkout-api/values.yaml@inline")
}

/// The `checksum/config` of the values file from a lagging checkout (the second render).
fn checksum_b() -> String {
    config_checksum("checkout-api/values.yaml@checkout-lag")
}

fn render_new_image(sim: &mut Sim, checksum: Option<String>) {
    let mut change = TemplateChange::new().with_image(NEW_IMAGE);
    if let Some(checksum) = checksum {
        change = change.with_annotation("checksum/config", checksum);
    }
    sim.render(change);
}

fn render_checksum(sim: &mut Sim, checksum: String) {
    sim.render(TemplateChange::new().with_annotation("checksum/config", checksum));
}

/// Runs until the canary is paused at `step` (at most `max` seconds).
fn run_until_paused_at(sim: &mut Sim, step: u32, max: u32) {
    sim.run_until(max, |s| {
        s.phase() == "Paused" && s.current_step_index() == step
    });
}

fn start() -> Sim {
    Sim::new(SimConfig::default())
}

/// The default cluster rendered by an Application of two sources, as seed 000's: the image in
/// the chart source's Helm parameters, the config in a values repository.
fn start_with_two_source_application() -> Sim {
    Sim::new(SimConfig {
        application: true,
        two_source_application: true,
        ..SimConfig::default()
    })
}

/// The value of the `version` pod label the environment's values file pins (stable) and the
/// one the release renders.
const VERSION_STABLE: &str = "v417";
const VERSION_NEW: &str = "v418";

/// The digest `1.42.0` resolves to after the tag was moved (a rebuild pushed under the same tag).
fn moved_digest() -> String {
    image_digest(&format!("{NEW_TAG}#rebuilt"))
}

/// The release of an image with a clean promotion: the pipeline promotes 60 s after the pause
/// at step 1 began; `at_promotion` runs right after the promotion.
fn release_and_promote(sim: &mut Sim, change: TemplateChange, at_promotion: impl FnOnce(&mut Sim)) {
    sim.run_for(5);
    sim.render(change);
    run_until_paused_at(sim, 1, 120);
    let paused_at = sim.paused_since().unwrap_or(sim.elapsed());
    sim.run_until_elapsed(paused_at + 60);
    sim.promote();
    at_promotion(sim);
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
}

fn adoption_selector_drift() -> Sim {
    let mut sim = Sim::new(SimConfig {
        application: true,
        pod_labels: [("version".to_owned(), VERSION_STABLE.to_owned())].into(),
        services: vec![
            ServiceConfig::new("checkout-api")
                .with_selector("app", "checkout-api")
                .with_selector("version", VERSION_STABLE),
        ],
        ..SimConfig::default()
    });
    sim.run_for(5);
    render_new_version(&mut sim);
    run_until_paused_at(&mut sim, 1, 120);
    // Nobody promotes: the pipeline waits, the canary gets no Service traffic, for two hours.
    let paused_at = sim.paused_since().unwrap_or(sim.elapsed());
    sim.run_until_elapsed(paused_at + 2 * 3_600);
    sim
}

/// A render of the new image that also moves the pod label `version` to the new one.
fn render_new_version(sim: &mut Sim) {
    sim.render(
        TemplateChange::new()
            .with_image(NEW_IMAGE)
            .with_label("version", VERSION_NEW),
    );
}

fn front_door_legacy_service() -> Sim {
    let mut sim = Sim::new(SimConfig {
        pod_labels: [("version".to_owned(), VERSION_STABLE.to_owned())].into(),
        services: vec![
            ServiceConfig::new("checkout-api").with_selector("app", "checkout-api"),
            ServiceConfig::new("checkout-api-legacy")
                .with_selector("app", "checkout-api")
                .with_selector("version", VERSION_STABLE),
        ],
        stable_service: Some("checkout-api".to_owned()),
        ingresses: vec![IngressConfig::new(
            "shop",
            "shop.example.com",
            "checkout-api-legacy",
        )],
        ..SimConfig::default()
    });
    sim.run_for(5);
    render_new_version(&mut sim);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(120);
    sim
}

/// A canary with NGINX traffic routing over Ingress `checkout-api` of `class`.
pub(crate) fn nginx_routed(class: &str) -> Sim {
    let service = |name: &str| ServiceConfig::new(name).with_selector("app", "checkout-api");
    Sim::new(SimConfig {
        services: vec![service("checkout-api"), service("checkout-api-canary")],
        stable_service: Some("checkout-api".to_owned()),
        canary_service: Some("checkout-api-canary".to_owned()),
        ingresses: vec![IngressConfig {
            class: class.to_owned(),
            ..IngressConfig::new("checkout-api", "shop.example.com", "checkout-api")
        }],
        nginx: Some("checkout-api".to_owned()),
        ..SimConfig::default()
    })
}

fn nginx_canary_release() -> Sim {
    let mut sim = nginx_routed("nginx");
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    // A sync of Git's weight, which the controller (watching class nginx) mends at once.
    sim.overwrite_canary_weight(0, crate::objects::manager::ARGOCD);
    sim.run_for(30);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    sim
}

fn nginx_canary_weight_overwritten() -> Sim {
    let mut sim = nginx_routed("nginx-public");
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.overwrite_canary_weight(0, crate::objects::manager::ARGOCD);
    sim.run_for(600);
    sim
}

/// A canary with role labels and a Service for each role (and one for every pod), released
/// and promoted; `refused`: a webhook refuses the controller's pod label patches.
fn role_labels_release(refused: bool) -> Sim {
    let service = |name: &str, role: Option<&str>| {
        let s = ServiceConfig::new(name).with_selector("app", "checkout-api");
        match role {
            Some(r) => s.with_selector("role", r),
            None => s,
        }
    };
    let mut sim = Sim::new(SimConfig {
        services: vec![
            service("checkout-api", None),
            service("checkout-api-canary", Some("canary")),
            service("checkout-api-stable", Some("stable")),
        ],
        role_labels: true,
        pod_relabel_refused: refused,
        ..SimConfig::default()
    });
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(120);
    sim
}

fn gitops_double_render() -> Sim {
    let mut sim = start_with_two_source_application();
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(20);
    sim.leak_replaced_canary(true);
    render_new_image(&mut sim, Some(checksum_b()));
    sim.run_until_elapsed(360);
    sim
}

/// helm-controller upgrades once for the new chart's artifact (its image, the config of the
/// values it had), then again when the values' new config reaches it: two Helm releases.
fn flux_double_render() -> Sim {
    let mut sim = Sim::new(SimConfig {
        flux: true,
        ..SimConfig::default()
    });
    sim.run_for(5);
    sim.bump_chart("0.15.0");
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(20);
    render_new_image(&mut sim, Some(checksum_b()));
    sim.run_until_elapsed(360);
    sim
}

fn moved_tag() -> Sim {
    let mut sim = start();
    release_and_promote(&mut sim, TemplateChange::new().with_image(NEW_TAG), |sim| {
        sim.move_tag(NEW_TAG, &moved_digest());
    });
    sim
}

fn no_rollback_history() -> Sim {
    let mut sim = Sim::new(SimConfig {
        revision_history_limit: 0,
        ..SimConfig::default()
    });
    release_and_promote(
        &mut sim,
        TemplateChange::new().with_image(NEW_IMAGE),
        |_| {},
    );
    sim
}

/// Runs until the blue-green preview is paused before promotion (at most `max` seconds).
fn run_until_paused_before_promotion(sim: &mut Sim, max: u32) {
    sim.run_until(max, |s| s.phase() == "Paused");
}

/// Promotes the blue-green preview 60 s after its pause began, then runs past the old active
/// ReplicaSet's scale-down delay.
fn promote_blue_green(sim: &mut Sim) {
    let paused_at = sim.paused_since().unwrap_or(sim.elapsed());
    sim.run_until_elapsed(paused_at + 60);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    // Past scaleDownDelaySeconds (30): the old active ReplicaSet is scaled down.
    sim.run_for(60);
}

fn blue_green_release() -> Sim {
    let mut sim = Sim::new(SimConfig::blue_green());
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_before_promotion(&mut sim, 120);
    promote_blue_green(&mut sim);
    sim
}

fn blue_green_rerender_at_pause() -> Sim {
    let mut sim = Sim::new(SimConfig {
        application: true,
        ..SimConfig::blue_green()
    });
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    run_until_paused_before_promotion(&mut sim, 120);
    sim.run_for(30);
    render_checksum(&mut sim, checksum_b());
    sim.run_for(5);
    run_until_paused_before_promotion(&mut sim, 120);
    promote_blue_green(&mut sim);
    sim
}

fn rerender_race() -> Sim {
    let mut sim = start_with_two_source_application();
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(30);
    sim.leak_replaced_canary(true);
    render_new_image(&mut sim, Some(checksum_b()));
    sim.run_until_elapsed(360);
    sim
}

fn rerender_race_reruns() -> Sim {
    let mut sim = start_with_two_source_application();
    sim.run_for(5);
    render_new_image(&mut sim, Some(checksum_a()));
    sim.run_for(30);
    sim.leak_replaced_canary(true);
    render_new_image(&mut sim, Some(checksum_b()));
    for rerun in 1..=2u32 {
        sim.run_until_elapsed(5 + rerun * 300);
        render_checksum(&mut sim, checksum_a());
        sim.run_for(30);
        render_checksum(&mut sim, checksum_b());
    }
    sim.run_until_elapsed(900);
    sim
}

fn image_only_release() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    sim.run_for(30);
    // The pipeline's second sync renders the identical manifest: nothing is applied.
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    // The pipeline's promotion gate fires 60 s after the pause began.
    let paused_at = sim.paused_since().unwrap_or(sim.elapsed());
    sim.run_until_elapsed(paused_at + 60);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    sim
}

fn workload_ref_scaled_up() -> Sim {
    let mut sim = Sim::new(SimConfig {
        workload_ref: Some("onsuccess".to_owned()),
        ..SimConfig::default()
    });
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    // An Argo CD sync applies the Deployment's manifest, `replicas: 5` and all: the controller
    // scaled it down once, at the migration, and does not again.
    sim.scale_deployment(5, crate::objects::manager::ARGOCD);
    sim.run_for(120);
    sim
}

fn abort() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.abort();
    sim.run_for(120);
    sim
}

fn steps_change() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.render(TemplateChange::new().with_steps(vec![
        Step::SetWeight(10),
        Step::Pause(None),
        Step::SetWeight(50),
        Step::Pause(Some(30)),
        Step::SetWeight(80),
        Step::Pause(Some(30)),
    ]));
    sim.run_for(30);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(90);
    sim
}

fn rollback_to_stable() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(30);
    sim.render(TemplateChange::new().with_image(STABLE_IMAGE));
    sim.run_until(300, |s| s.phase() == "Healthy");
    sim.run_for(90);
    sim
}

fn manual_step_jump() -> Sim {
    let mut sim = start();
    sim.run_for(5);
    render_new_image(&mut sim, None);
    // The canary RS is scaled up but not yet ready: still at step 0.
    sim.run_for(4);
    sim.patch_step_index(2);
    run_until_paused_at(&mut sim, 3, 180);
    sim.run_for(15);
    render_checksum(&mut sim, checksum_b());
    sim.run_for(5);
    run_until_paused_at(&mut sim, 1, 180);
    sim.run_for(90);
    sim
}

fn hash_only_change() -> Sim {
    let mut sim = start();
    sim.run_for(10);
    sim.upgrade_controller();
    run_until_paused_at(&mut sim, 1, 120);
    sim.run_for(60);
    sim.promote();
    sim.run_until(600, |s| s.phase() == "Healthy");
    sim.run_for(60);
    sim
}

#[cfg(test)]
mod tests {
    use rf_format::{Kind, Op, Record};
    use serde_json::Value;

    use super::*;

    fn object(record: &Record) -> Value {
        serde_json::from_slice(&record.object).unwrap()
    }

    fn watch(recording: &Recording, kind: Kind) -> Vec<(usize, Value)> {
        recording
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.kind == kind && r.op.has_object())
            .map(|(i, r)| (i, object(r)))
            .collect()
    }

    fn last(recording: &Recording, kind: Kind, name: &str) -> Value {
        recording
            .records
            .iter()
            .rev()
            .find(|r| r.kind == kind && r.name == name && r.op.has_object())
            .map(object)
            .unwrap()
    }

    fn last_rollout(recording: &Recording) -> Value {
        watch(recording, Kind::Rollout).pop().unwrap().1
    }

    /// What the real controller does in `recordings/real/front-door-legacy-service.rfr`: the
    /// stableService selects the stable revision's hash, and the new one only once promoted
    /// and fully available; the Ingress is listed with the Services and never changes.
    #[test]
    fn the_stable_service_follows_the_promoted_revision_and_the_ingress_stays() {
        let rec = generate("front-door-legacy-service").unwrap();
        let hashes: Vec<(usize, String)> = watch(&rec, Kind::Service)
            .into_iter()
            .filter(|(_, s)| s["metadata"]["name"] == "checkout-api")
            .map(|(i, s)| {
                (
                    i,
                    s["spec"]["selector"][crate::objects::HASH_LABEL]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                )
            })
            .collect();
        let end = last_rollout(&rec);
        let new = end["status"]["currentPodHash"].as_str().unwrap();
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(end["status"]["stableRS"], new);
        assert_eq!(
            end["spec"]["strategy"]["canary"]["stableService"],
            "checkout-api"
        );
        assert_eq!(hashes.len(), 2, "listed, then switched once: {hashes:?}");
        assert_ne!(hashes[0].1, new);
        assert_eq!(hashes[1].1, new);
        // The switch comes after the status names the new stable revision.
        let promoted = rec
            .records
            .iter()
            .position(|r| {
                r.kind == Kind::Rollout
                    && r.op.has_object()
                    && object(r)["status"]["stableRS"] == new
            })
            .unwrap();
        assert!(hashes[1].0 > promoted);
        let ingresses = watch(&rec, rf_format::api::INGRESS.newest());
        assert_eq!(ingresses.len(), 1);
        assert_eq!(
            ingresses[0].1["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]["name"],
            "checkout-api-legacy"
        );
    }

    /// The canary Ingress's weights in the order written, and the rollout's status weight at the
    /// end.
    fn canary_weights(rec: &Recording) -> (Vec<String>, Value) {
        let weights = watch(rec, rf_format::api::INGRESS.newest())
            .into_iter()
            .filter(|(_, i)| i["metadata"]["name"] == "checkout-api-checkout-api-canary")
            .map(|(_, i)| {
                i["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        (
            weights,
            last_rollout(rec)["status"]["canary"]["weights"].clone(),
        )
    }

    /// What the real controller does in `recordings/real/nginx-canary-weight-restored.rfr` and
    /// `recordings/real/istio-virtual-service.rfr`: the canary Ingress follows each setWeight
    /// step once the canary is available, a write of a watched class is mended at once, the
    /// stable ReplicaSet stays fully scaled, and once promoted the weight is 0, the stable
    /// Service moves, and the old ReplicaSet waits out its `scale-down-deadline`.
    #[test]
    fn nginx_routing_follows_the_steps_and_mends_a_watched_class() {
        let rec = generate("nginx-canary-release").unwrap();
        let (weights, status) = canary_weights(&rec);
        assert_eq!(weights, ["0", "20", "0", "20", "50", "80", "100", "0"]);
        let end = last_rollout(&rec);
        let new = end["status"]["currentPodHash"].as_str().unwrap();
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(status["canary"]["weight"], 0);
        assert_eq!(status["canary"]["podTemplateHash"], new);
        assert_eq!(status["stable"]["podTemplateHash"], new);
        assert_eq!(status["stable"]["weight"], 100);
        // The sync's 0 stood one second.
        let ingress = watch(&rec, rf_format::api::INGRESS.newest());
        let at = |k: usize| rec.records[ingress[k].0].observed_at.0;
        let synced = ingress
            .iter()
            .position(|(_, i)| {
                i["metadata"]["managedFields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["manager"] == "argocd-controller")
                    && i["metadata"]["annotations"]["nginx.ingress.kubernetes.io/canary-weight"]
                        == "0"
            })
            .unwrap();
        assert!(at(synced + 1) - at(synced) <= 2_000_000_000);
        // The stable ReplicaSet kept its 5 replicas until the promotion, then waited out its
        // deadline.
        let old: Vec<Value> = watch(&rec, Kind::ReplicaSet)
            .into_iter()
            .map(|(_, r)| r)
            .filter(|r| r["metadata"]["name"] != format!("checkout-api-{new}"))
            .filter(|r| {
                r["spec"]["replicas"] != 0
                    || r["metadata"]["annotations"]
                        .get("scale-down-deadline")
                        .is_some()
            })
            .collect();
        assert!(old.iter().all(|r| r["spec"]["replicas"] == 5), "{old:?}");
        assert!(
            old.iter()
                .any(|r| r["metadata"]["annotations"]["scale-down-deadline"].is_string())
        );
        let last_old = watch(&rec, Kind::ReplicaSet)
            .into_iter()
            .map(|(_, r)| r)
            .rfind(|r| r["metadata"]["name"] != format!("checkout-api-{new}"))
            .unwrap();
        assert_eq!(last_old["spec"]["replicas"], 0);
    }

    /// What the real controller does in `recordings/real/nginx-canary-weight-overwritten.rfr`:
    /// a write of a class it does not watch stands while the status says 20.
    #[test]
    fn nginx_routing_leaves_a_write_of_an_unwatched_class() {
        let rec = generate("nginx-canary-weight-overwritten").unwrap();
        let (weights, status) = canary_weights(&rec);
        assert_eq!(weights, ["0", "20", "0"]);
        assert_eq!(status["canary"]["weight"], 20);
        assert_eq!(last_rollout(&rec)["status"]["phase"], "Paused");
    }

    /// The role of each pod of revision `hash` at the end, by name.
    fn roles_at_end(rec: &Recording, hash: &str) -> Vec<String> {
        let mut pods = Live::default();
        for r in &rec.records {
            if r.kind == Kind::Pod {
                pods.apply(r);
            }
        }
        pods.objects
            .values()
            .filter(|p| p["metadata"]["labels"][crate::objects::HASH_LABEL] == hash)
            .map(|p| {
                p["metadata"]["labels"]["role"]
                    .as_str()
                    .unwrap_or("-")
                    .to_owned()
            })
            .collect()
    }

    /// `rollout/ephemeralmetadata.go`: the canary's template and pods carry `role: canary`
    /// while it is the canary, and the controller relabels both `stable` once promoted; a
    /// webhook that refuses the pod patches leaves the pods `canary` under a `stable` template.
    #[test]
    fn role_labels_follow_the_role_on_templates_and_pods() {
        for (name, pods_role) in [
            ("role-labels-release", "stable"),
            ("stale-role-labels", "canary"),
        ] {
            let rec = generate(name).unwrap();
            let end = last_rollout(&rec);
            let new = end["status"]["currentPodHash"].as_str().unwrap();
            assert_eq!(end["status"]["phase"], "Healthy", "{name}");
            assert_eq!(
                end["spec"]["strategy"]["canary"]["canaryMetadata"]["labels"]["role"],
                "canary"
            );
            let templates: Vec<String> = watch(&rec, Kind::ReplicaSet)
                .into_iter()
                .filter(|(_, r)| r["metadata"]["name"] == format!("checkout-api-{new}"))
                .map(|(_, r)| {
                    r["spec"]["template"]["metadata"]["labels"]["role"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            assert_eq!(
                templates.first().map(String::as_str),
                Some("canary"),
                "{name}"
            );
            assert_eq!(
                templates.last().map(String::as_str),
                Some("stable"),
                "{name}"
            );
            let roles = roles_at_end(&rec, new);
            assert_eq!(roles.len(), 5, "{name}");
            assert!(roles.iter().all(|r| r == pods_role), "{name}: {roles:?}");
        }
    }

    /// What the real controller does in `recordings/real/blue-green-rerender-while-paused.rfr`:
    /// the preview Service follows each new hash while the active one stays on stable; each
    /// render pauses before promotion (`BlueGreenPause`, no step index); the replaced preview
    /// and, after the switch, the old active ReplicaSet are scaled to 0 once the
    /// `scale-down-deadline` they were given passes.
    #[test]
    fn blue_green_follows_the_real_controller_through_a_rerender_and_a_promotion() {
        let rec = generate("blue-green-rerender-at-pause").unwrap();
        let selector = |v: &Value| {
            v["spec"]["selector"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        let rollouts = watch(&rec, Kind::Rollout);
        let first = &rollouts.first().unwrap().1;
        let stable = status_str(first, "stableRS");
        let pauses: Vec<(usize, String)> = rollouts
            .iter()
            .filter(|(_, v)| v["status"]["pauseConditions"][0]["reason"] == "BlueGreenPause")
            .map(|(i, v)| (*i, status_str(v, "currentPodHash").to_owned()))
            .collect();
        let mut paused_hashes: Vec<&str> = pauses.iter().map(|(_, h)| h.as_str()).collect();
        paused_hashes.dedup();
        assert_eq!(
            paused_hashes.len(),
            2,
            "two renders, each paused: {paused_hashes:?}"
        );
        let (first_render, second_render) = (paused_hashes[0], paused_hashes[1]);
        for (_, v) in &rollouts {
            assert!(v["status"].get("currentStepIndex").is_none(), "{v}");
            assert!(v["status"].get("currentStepHash").is_none(), "{v}");
        }
        // While paused, the Services: preview on the paused hash, active on stable.
        for (i, hash) in &pauses {
            let services: Vec<Value> = rec.records[..*i]
                .iter()
                .filter(|r| r.kind == Kind::Service && r.op.has_object())
                .map(object)
                .collect();
            let latest = |name: &str| {
                services
                    .iter()
                    .rev()
                    .find(|s| s["metadata"]["name"] == name)
                    .map(selector)
                    .unwrap()
            };
            assert_eq!(latest("checkout-api-preview"), *hash);
            assert_eq!(latest("checkout-api"), *stable);
        }
        let end = last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(status_str(&end, "stableRS"), second_render);
        assert_eq!(end["status"]["blueGreen"]["activeSelector"], second_render);
        assert_eq!(end["status"]["blueGreen"]["previewSelector"], second_render);
        assert_eq!(
            selector(&last(&rec, Kind::Service, "checkout-api")),
            second_render
        );
        for hash in [first_render, stable] {
            let rs = last(&rec, Kind::ReplicaSet, &format!("checkout-api-{hash}"));
            assert_eq!(rs["spec"]["replicas"], 0, "{hash} scaled down");
        }
        // Scaled down only once its deadline passed: the annotation was written first.
        let annotated = rec.records.iter().any(|r| {
            r.kind == Kind::ReplicaSet
                && r.name == format!("checkout-api-{first_render}")
                && r.op.has_object()
                && object(r)["metadata"]["annotations"]["scale-down-deadline"].is_string()
        });
        assert!(annotated);
    }

    /// The latest state of every ReplicaSet still present at the end, in creation order.
    fn final_replica_sets(recording: &Recording) -> Vec<Value> {
        let mut names: Vec<&str> = Vec::new();
        for r in &recording.records {
            if r.kind == Kind::ReplicaSet && r.op.has_object() && !names.contains(&r.name.as_str())
            {
                names.push(&r.name);
            }
        }
        let deleted = |name: &str| {
            recording.records.iter().any(|r| {
                r.kind == Kind::ReplicaSet
                    && r.name == name
                    && r.op == Op::Deleted { inferred: false }
            })
        };
        names
            .into_iter()
            .filter(|n| !deleted(n))
            .map(|n| last(recording, Kind::ReplicaSet, n))
            .collect()
    }

    fn events(recording: &Recording) -> Vec<Value> {
        watch(recording, Kind::Event)
            .into_iter()
            .map(|(_, v)| v)
            .collect()
    }

    fn status_str<'a>(rollout: &'a Value, field: &str) -> &'a str {
        rollout["status"][field].as_str().unwrap_or("")
    }

    #[test]
    fn a_workload_ref_render_writes_the_deployment_and_the_rollout_keeps_its_generation() {
        let rec = generate("workload-ref-scaled-up").unwrap();
        let deployment = rf_format::api::DEPLOYMENT.newest();
        let deployments = watch(&rec, deployment.clone());
        let rollouts = watch(&rec, Kind::Rollout);
        let first = &rollouts[0].1;
        assert!(first["spec"].get("template").is_none(), "{first}");
        assert_eq!(first["spec"]["workloadRef"]["name"], "checkout-api");
        assert_eq!(first["spec"]["workloadRef"]["scaleDown"], "onsuccess");
        // Every Rollout record has the generation it was listed with: renders went to the
        // Deployment, whose generation the controller notes on the Rollout.
        assert!(
            rollouts
                .iter()
                .all(|(_, r)| r["metadata"]["generation"] == first["metadata"]["generation"])
        );
        let images: Vec<&str> = deployments
            .iter()
            .filter_map(|(_, d)| d["spec"]["template"]["spec"]["containers"][0]["image"].as_str())
            .collect();
        assert!(
            images.first() != images.last(),
            "the render changed the image: {images:?}"
        );
        let last_rollout = last_rollout(&rec);
        assert_eq!(status_str(&last_rollout, "phase"), "Healthy");
        let last = &deployments.last().unwrap().1;
        assert_eq!(
            last_rollout["metadata"]["annotations"]["rollout.argoproj.io/workload-generation"],
            last["metadata"]["generation"].to_string().as_str()
        );
        // Scaled up by Argo CD at the end, and its pods ready a few seconds later.
        assert_eq!(last["spec"]["replicas"], 5);
        assert_eq!(last["status"]["readyReplicas"], 5);
        let scaled = deployments
            .iter()
            .find(|(_, d)| d["spec"]["replicas"] == 5)
            .unwrap();
        // Its last writer of the main resource (not the status) is Argo CD.
        let managed = scaled.1["metadata"]["managedFields"].as_array().unwrap();
        let last_writer = managed
            .iter()
            .filter(|m| m.get("subresource").is_none())
            .max_by_key(|m| m["time"].as_str().unwrap_or("").to_owned())
            .unwrap();
        assert_eq!(last_writer["manager"], "argocd-controller");
    }

    #[test]
    fn catalog_lists_every_scenario_once_and_unknown_names_give_none() {
        let names: Vec<&str> = catalog().iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "rerender-race",
                "rerender-race-reruns",
                "image-only-release",
                "abort",
                "steps-change",
                "rollback-to-stable",
                "manual-step-jump",
                "hash-only-change",
                "adoption-selector-drift",
                "gitops-double-render",
                "flux-double-render",
                "moved-tag",
                "no-rollback-history",
                "blue-green-release",
                "blue-green-rerender-at-pause",
                "workload-ref-scaled-up",
                "front-door-legacy-service",
                "nginx-canary-release",
                "nginx-canary-weight-overwritten",
                "role-labels-release",
                "stale-role-labels"
            ]
        );
        assert!(catalog().iter().all(|s| !s.summary.is_empty()));
        assert!(generate("no-such-scenario").is_none());
    }

    #[test]
    fn every_scenario_is_deterministic_and_its_records_are_consistent() {
        for info in catalog() {
            let a = generate(info.name).unwrap();
            let b = generate(info.name).unwrap();
            assert_eq!(a.records, b.records, "{} is not deterministic", info.name);
            assert_eq!(a.header, b.header);
            assert_eq!(
                a.header.source.context.as_deref(),
                Some(format!("rf-scenarios/{}", info.name).as_str())
            );
            assert!(a.records.len() > 20, "{} is too short", info.name);
            let mut last_rv = 0u64;
            for (i, r) in a.records.iter().enumerate() {
                assert_eq!(r.seq, i as u64 + 1, "{}: seq", info.name);
                if i > 0 {
                    assert!(
                        r.observed_at > a.records[i - 1].observed_at,
                        "{}: time goes back at seq {}",
                        info.name,
                        r.seq
                    );
                }
                assert!(r.actor.is_none());
                let namespace = if r.kind == Kind::Application {
                    "argocd"
                } else if rf_format::api::HELM_RELEASE.is(&r.kind) {
                    "flux-system"
                } else {
                    "payments"
                };
                assert_eq!(r.namespace, namespace, "{}: seq {}", info.name, r.seq);
                assert!(r.resource_version.bytes().all(|b| b.is_ascii_digit()));
                let rv: u64 = r.resource_version.parse().unwrap();
                if r.op.has_object() {
                    let v = object(r);
                    assert_eq!(v["metadata"]["name"], r.name.as_str(), "seq {}", r.seq);
                    assert_eq!(v["metadata"]["namespace"], r.namespace.as_str());
                    assert_eq!(v["metadata"]["uid"], r.uid.as_str());
                    assert_eq!(
                        v["metadata"]["resourceVersion"],
                        r.resource_version.as_str()
                    );
                    let kind = Kind::from_api(
                        v["apiVersion"].as_str().unwrap(),
                        v["kind"].as_str().unwrap(),
                    );
                    assert_eq!(kind, r.kind);
                    if r.op != Op::Listed {
                        assert!(
                            rv > last_rv,
                            "{}: rv not increasing at seq {}",
                            info.name,
                            r.seq
                        );
                        last_rv = rv;
                    }
                } else {
                    assert!(r.object.is_empty() && r.name.is_empty());
                    last_rv = last_rv.max(rv);
                }
            }
        }
    }

    #[test]
    fn recordings_start_with_the_lists_of_every_recorded_kind() {
        let rec = generate("abort").unwrap();
        let lists = rec
            .records
            .iter()
            .take_while(|r| matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd))
            .count();
        let ops: Vec<(Kind, &str)> = rec.records[..lists]
            .iter()
            .filter(|r| r.op != Op::Listed)
            .map(|r| (r.kind.clone(), r.op.name()))
            .collect();
        let mut want = Vec::new();
        for kind in [
            Kind::Rollout,
            Kind::ReplicaSet,
            Kind::Service,
            Kind::EndpointSlice,
            Kind::Pod,
            Kind::Event,
        ] {
            want.push((kind.clone(), "list-begin"));
            want.push((kind, "list-end"));
        }
        assert_eq!(ops, want);
        assert_eq!(rec.header.source.kinds.len(), 6, "no Application in abort");
        let listed = |kind: Kind| {
            rec.records[..lists]
                .iter()
                .filter(|r| r.kind == kind && r.op == Op::Listed)
                .count()
        };
        assert_eq!(listed(Kind::ReplicaSet), 2);
        assert_eq!(listed(Kind::Pod), 5);
        assert_eq!(listed(Kind::Service), 1);
        assert_eq!(listed(Kind::EndpointSlice), 1);
        let rollout = object(&rec.records[1]);
        assert_eq!(rollout["status"]["phase"], "Healthy");
        assert_eq!(rollout["status"]["observedGeneration"], "2");
        assert!(rollout["status"].get("pauseConditions").is_none());
        assert_eq!(
            rollout["spec"]["template"]["spec"]["containers"][0]["image"],
            STABLE_IMAGE
        );
    }

    #[test]
    fn rerender_race_rerender_follows_the_five_step_order_and_leaks_the_first_canary() {
        let rec = generate("rerender-race").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        // 1. the second render: generation 4, observedGeneration lagging.
        let (render2, r) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        assert_eq!(r["status"]["observedGeneration"], "3");
        let first_canary = status_str(r, "currentPodHash").to_owned();
        assert_eq!(r["status"]["currentStepIndex"], 1);
        assert!(r["status"]["pauseConditions"].is_array());
        // 2. the new ReplicaSet is added with 0 replicas and revision 4.
        let (rs_added, rs) = watch(&rec, Kind::ReplicaSet)
            .into_iter()
            .find(|(i, _)| *i > *render2 && rec.records[*i].op == Op::Added)
            .unwrap();
        assert_eq!(rs["spec"]["replicas"], 0);
        assert_eq!(
            rs["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "4"
        );
        let new_hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_ne!(new_hash, first_canary);
        let after: Vec<&(usize, Value)> = rollouts.iter().filter(|(i, _)| *i > rs_added).collect();
        // 3. the revision annotation.
        assert_eq!(
            after[0].1["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "4"
        );
        assert_eq!(status_str(&after[0].1, "currentPodHash"), first_canary);
        // 4. NewReplicaSetCreated with the old hash and the old pause conditions.
        let progressing = |v: &Value| {
            v["status"]["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Progressing")
                .unwrap()["reason"]
                .as_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(progressing(&after[1].1), "NewReplicaSetCreated");
        assert_eq!(status_str(&after[1].1, "currentPodHash"), first_canary);
        assert!(after[1].1["status"]["pauseConditions"].is_array());
        // 5. the new hash, index 0, pauses cleared, in one write.
        let step5 = &after[2].1;
        assert_eq!(status_str(step5, "currentPodHash"), new_hash);
        assert_eq!(step5["status"]["currentStepIndex"], 0);
        assert!(step5["status"].get("pauseConditions").is_none());
        assert!(step5["status"].get("controllerPause").is_none());
        assert_eq!(progressing(step5), "ReplicaSetUpdated");
        assert_eq!(step5["status"]["phase"], "Progressing");
        assert_eq!(step5["status"]["observedGeneration"], "4");
        let paused = step5["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Paused")
            .unwrap();
        assert_eq!(paused["status"], "True", "Paused stays True one more sync");
        // ... and a RolloutResumed event although nobody resumed.
        assert!(rec.records[after[2].0..].iter().take(3).any(|r| {
            r.kind == Kind::Event && r.op.has_object() && object(r)["reason"] == "RolloutResumed"
        }));
        // The first render's ReplicaSet is still up at the end, marked with an empty deadline.
        let leaked = last(
            &rec,
            Kind::ReplicaSet,
            &format!("checkout-api-{first_canary}"),
        );
        assert!(leaked["spec"]["replicas"].as_i64().unwrap() > 0);
        assert_eq!(leaked["metadata"]["annotations"]["scale-down-deadline"], "");
        // The new canary paused at step 1 again, and nobody promoted.
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        assert_eq!(status_str(end, "currentPodHash"), new_hash);
        assert_eq!(
            crate::calendar::rfc3339(rec.closed_at.as_unix_nanos().div_euclid(1_000_000_000)),
            "2026-03-14T13:06:00Z"
        );
    }

    #[test]
    fn reruns_reuse_replica_sets_with_revision_history_and_keep_the_first_canary_up() {
        let rec = generate("rerender-race-reruns").unwrap();
        let rs_added = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .count();
        assert_eq!(rs_added, 2, "re-runs reuse the two canary ReplicaSets");
        let histories: Vec<String> = final_replica_sets(&rec)
            .iter()
            .filter_map(|rs| {
                rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect();
        assert_eq!(histories, ["3,5", "4,6"]);
        let end = &last_rollout(&rec);
        assert_eq!(
            end["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "8"
        );
        assert_eq!(end["status"]["phase"], "Paused");
        let first = final_replica_sets(&rec)
            .into_iter()
            .find(|rs| {
                rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"] == "3,5"
            })
            .unwrap();
        assert_eq!(first["spec"]["replicas"], 1);
        let resets = watch(&rec, Kind::Rollout)
            .windows(2)
            .filter(|w| {
                w[0].1["status"]["currentPodHash"] != w[1].1["status"]["currentPodHash"]
                    && w[1].1["status"]["currentStepIndex"] == 0
            })
            .count();
        assert_eq!(resets, 6, "every render restarts the canary at step 0");
    }

    #[test]
    fn image_only_release_ends_healthy_with_every_other_replica_set_at_zero() {
        let rec = generate("image-only-release").unwrap();
        let renders = watch(&rec, Kind::Rollout)
            .iter()
            .filter(|(_, v)| {
                v["metadata"]["managedFields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["manager"] == "argocd-controller")
            })
            .map(|(_, v)| v["metadata"]["generation"].as_i64().unwrap())
            .max();
        assert_eq!(
            renders,
            Some(3),
            "the identical second render is not applied"
        );
        let end = &last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(end["status"]["currentStepIndex"], 6);
        let stable = status_str(end, "stableRS");
        assert_eq!(stable, status_str(end, "currentPodHash"));
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            let want = if hash == stable { 5 } else { 0 };
            assert_eq!(rs["spec"]["replicas"], want, "{hash}");
            assert_eq!(rs["status"]["replicas"], want, "{hash}");
        }
        let promoted = watch(&rec, Kind::Rollout).iter().any(|(_, v)| {
            v["metadata"]["managedFields"]
                .as_array()
                .unwrap()
                .iter()
                .any(|m| m["manager"] == "kubectl-argo-rollouts")
        });
        assert!(promoted);
        assert!(
            events(&rec)
                .iter()
                .any(|e| e["reason"] == "RolloutCompleted")
        );
    }

    #[test]
    fn abort_converges_to_degraded_with_the_canary_at_zero_and_stable_at_full() {
        let rec = generate("abort").unwrap();
        let end = &last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Degraded");
        assert_eq!(
            end["status"]["message"],
            "RolloutAborted: Rollout aborted update to revision 3"
        );
        assert_eq!(end["status"]["abort"], true);
        assert!(end["status"]["abortedAt"].is_string());
        assert_eq!(end["status"]["currentStepIndex"], 0);
        let canary = status_str(end, "currentPodHash");
        let stable = status_str(end, "stableRS");
        assert_ne!(canary, stable);
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            let want = if hash == stable { 5 } else { 0 };
            assert_eq!(rs["spec"]["replicas"], want);
        }
        let (at, warning) = watch(&rec, Kind::Event)
            .into_iter()
            .find(|(_, e)| e["reason"] == "RolloutAborted")
            .unwrap();
        assert_eq!(warning["type"], "Warning");
        let last_seconds = (rec.records.last().unwrap().observed_at.0
            - rec.records[at].observed_at.0)
            / 1_000_000_000;
        assert!(last_seconds >= 2, "the recording goes on after the abort");
    }

    #[test]
    fn steps_change_changes_the_step_hash_but_not_the_pod_hash() {
        let rec = generate("steps-change").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (i, before) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        let reset = &rollouts
            .iter()
            .find(|(j, v)| j > i && v["status"]["observedGeneration"] == "4")
            .unwrap()
            .1;
        assert_ne!(
            status_str(before, "currentStepHash"),
            status_str(reset, "currentStepHash")
        );
        assert_eq!(
            status_str(before, "currentPodHash"),
            status_str(reset, "currentPodHash")
        );
        assert_eq!(reset["status"]["currentStepIndex"], 0);
        assert!(reset["status"].get("pauseConditions").is_none());
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        assert_eq!(
            end["spec"]["strategy"]["canary"]["steps"][0]["setWeight"],
            10
        );
        let added = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .count();
        assert_eq!(added, 1, "a steps-only change creates no ReplicaSet");
    }

    #[test]
    fn rollback_to_stable_jumps_to_the_last_step_and_becomes_healthy() {
        let rec = generate("rollback-to-stable").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (i, _) = rollouts
            .iter()
            .find(|(_, v)| v["metadata"]["generation"] == 4)
            .unwrap();
        let reset = &rollouts
            .iter()
            .find(|(j, v)| j > i && v["status"]["observedGeneration"] == "4")
            .unwrap()
            .1;
        assert_eq!(reset["status"]["currentStepIndex"], 6);
        assert_eq!(
            status_str(reset, "currentPodHash"),
            status_str(reset, "stableRS")
        );
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Healthy");
        let stable = status_str(end, "stableRS");
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            assert_eq!(rs["spec"]["replicas"], if hash == stable { 5 } else { 0 });
            if hash == stable {
                assert_eq!(
                    rs["metadata"]["annotations"]["rollout.argoproj.io/revision-history"],
                    "2"
                );
            }
        }
    }

    #[test]
    fn manual_step_jump_is_a_status_patch_the_controller_follows() {
        let rec = generate("manual-step-jump").unwrap();
        let rollouts = watch(&rec, Kind::Rollout);
        let (pos, patched) = rollouts
            .iter()
            .enumerate()
            .find(|(_, (_, v))| {
                v["metadata"]["managedFields"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["manager"] == "kubectl-patch")
            })
            .map(|(k, (_, v))| (k, v))
            .unwrap();
        let before = &rollouts[pos - 1].1;
        assert_eq!(before["status"]["currentStepIndex"], 0);
        assert_eq!(patched["status"]["currentStepIndex"], 2);
        assert_eq!(
            patched["metadata"]["generation"],
            before["metadata"]["generation"]
        );
        // The pause at step 1 was never reached before the jump.
        assert!(
            rollouts[..pos]
                .iter()
                .all(|(_, v)| v["status"].get("pauseConditions").is_none())
        );
        // The controller continued at step 2 and paused at step 3 (timed pause).
        assert!(rollouts[pos..].iter().any(|(_, v)| {
            v["status"]["currentStepIndex"] == 3 && v["status"]["pauseConditions"].is_array()
        }));
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        // No leak: every ReplicaSet but the new and the stable one is at 0.
        let (new, stable) = (
            status_str(end, "currentPodHash"),
            status_str(end, "stableRS"),
        );
        for rs in final_replica_sets(&rec) {
            let hash = rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                .as_str()
                .unwrap();
            if hash != new && hash != stable {
                assert_eq!(rs["spec"]["replicas"], 0, "{hash}");
            }
        }
    }

    #[test]
    fn hash_only_change_gives_an_identical_template_a_new_replica_set() {
        let rec = generate("hash-only-change").unwrap();
        let added = rec
            .records
            .iter()
            .find(|r| r.kind == Kind::ReplicaSet && r.op == Op::Added)
            .map(object)
            .unwrap();
        let listed_stable = object(&rec.records[5]);
        let strip = |rs: &Value| {
            let mut t = rs["spec"]["template"].clone();
            t["metadata"]["labels"]
                .as_object_mut()
                .unwrap()
                .remove("rollouts-pod-template-hash");
            t
        };
        assert_eq!(strip(&added), strip(&listed_stable));
        assert_ne!(added["metadata"]["name"], listed_stable["metadata"]["name"]);
        let rollouts = watch(&rec, Kind::Rollout);
        assert!(
            rollouts
                .iter()
                .all(|(_, v)| v["metadata"]["generation"] == 2)
        );
        let end = &rollouts.last().unwrap().1;
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(
            status_str(end, "stableRS"),
            added["metadata"]["labels"]["rollouts-pod-template-hash"]
        );
    }

    // ---- the objects that decide where traffic goes --------------------------------------

    /// The live objects of one kind after each record, replayed.
    #[derive(Default)]
    struct Live {
        objects: std::collections::BTreeMap<String, Value>,
    }

    impl Live {
        fn apply(&mut self, r: &Record) {
            if matches!(r.op, Op::Deleted { .. }) {
                self.objects.remove(&r.name);
            } else if r.op.has_object() {
                self.objects.insert(r.name.clone(), object(r));
            }
        }
    }

    fn owner_name(v: &Value) -> &str {
        v["metadata"]["ownerReferences"][0]["name"]
            .as_str()
            .unwrap_or("")
    }

    fn pod_ready(pod: &Value) -> bool {
        pod["metadata"].get("deletionTimestamp").is_none()
            && pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
    }

    fn selects(selector: &Value, pod: &Value) -> bool {
        let selector = selector.as_object().unwrap();
        !selector.is_empty()
            && selector
                .iter()
                .all(|(k, v)| &pod["metadata"]["labels"][k] == v)
    }

    /// (pod name, ready, terminating) of every started pod `selector` selects.
    fn expected_endpoints(pods: &Live, selector: &Value) -> Vec<(String, bool, bool)> {
        let mut want: Vec<(String, bool, bool)> = pods
            .objects
            .values()
            .filter(|p| p["status"]["podIP"].is_string() && selects(selector, p))
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_owned(),
                    pod_ready(p),
                    p["metadata"].get("deletionTimestamp").is_some(),
                )
            })
            .collect();
        want.sort();
        want
    }

    fn slice_endpoints(slice: &Value) -> Vec<(String, bool, bool)> {
        let mut got: Vec<(String, bool, bool)> = slice["endpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["targetRef"]["name"].as_str().unwrap().to_owned(),
                    e["conditions"]["ready"].as_bool().unwrap(),
                    e["conditions"]["terminating"].as_bool().unwrap(),
                )
            })
            .collect();
        got.sort();
        got
    }

    #[test]
    fn pods_follow_the_replica_sets_replicas_and_readiness() {
        for info in catalog() {
            let rec = generate(info.name).unwrap();
            let mut pods = Live::default();
            let mut checked = 0;
            for r in &rec.records {
                if r.kind == Kind::Pod {
                    pods.apply(r);
                }
                if r.kind != Kind::ReplicaSet || !r.op.has_object() || r.op == Op::Listed {
                    continue;
                }
                let rs = object(r);
                let mine: Vec<&Value> = pods
                    .objects
                    .values()
                    .filter(|p| owner_name(p) == r.name)
                    .collect();
                let active = mine
                    .iter()
                    .filter(|p| p["metadata"].get("deletionTimestamp").is_none())
                    .count();
                let ready = mine.iter().filter(|p| pod_ready(p)).count();
                let status = |k: &str| rs["status"][k].as_u64().unwrap_or(0) as usize;
                assert_eq!(active, status("replicas"), "{}: seq {}", info.name, r.seq);
                assert_eq!(
                    ready,
                    status("readyReplicas"),
                    "{}: seq {}",
                    info.name,
                    r.seq
                );
                for p in &mine {
                    assert_eq!(
                        p["metadata"]["labels"]["rollouts-pod-template-hash"],
                        rs["metadata"]["labels"]["rollouts-pod-template-hash"]
                    );
                    assert!(p["metadata"]["name"].as_str().unwrap().len() == r.name.len() + 6);
                }
                checked += 1;
            }
            assert!(checked > 2, "{}", info.name);
        }
    }

    #[test]
    fn an_endpoint_slice_lists_the_pods_its_service_selects_as_they_were_a_second_before() {
        for info in catalog() {
            let rec = generate(info.name).unwrap();
            let mut pods = Live::default();
            let mut before = Live::default();
            let mut services = Live::default();
            let mut second = 0;
            let mut slices = 0;
            let mut listed = Vec::new();
            for r in &rec.records {
                let s = r.observed_at.as_unix_nanos() / 1_000_000_000;
                if s != second {
                    before.objects = pods.objects.clone();
                    second = s;
                }
                let lists = matches!(r.op, Op::ListBegin | Op::Listed | Op::ListEnd);
                let check = if lists {
                    if r.kind == Kind::EndpointSlice && r.op == Op::Listed {
                        listed.push(r);
                    }
                    Vec::new()
                } else {
                    // The initial list of slices against the initial list of pods.
                    let mut check: Vec<(&Record, bool)> =
                        listed.drain(..).map(|l| (l, false)).collect();
                    if r.kind == Kind::EndpointSlice && r.op.has_object() {
                        check.push((r, true));
                    }
                    check
                };
                match r.kind {
                    Kind::Pod => pods.apply(r),
                    Kind::Service => services.apply(r),
                    _ => {}
                }
                for (r, later) in check {
                    {
                        let slice = object(r);
                        let service = slice["metadata"]["labels"]["kubernetes.io/service-name"]
                            .as_str()
                            .unwrap();
                        assert_eq!(owner_name(&slice), service);
                        let selector = &services.objects[service]["spec"]["selector"];
                        let state = if later { &before } else { &pods };
                        assert_eq!(
                            slice_endpoints(&slice),
                            expected_endpoints(state, selector),
                            "{}: seq {}",
                            info.name,
                            r.seq
                        );
                        slices += 1;
                    }
                }
            }
            assert!(slices >= 2, "{}: {slices} slice records", info.name);
            // At the end the Service's slice shows the final pods.
            let slice = watch(&rec, Kind::EndpointSlice)
                .into_iter()
                .rfind(|(_, s)| {
                    s["metadata"]["labels"]["kubernetes.io/service-name"] == "checkout-api"
                })
                .unwrap()
                .1;
            let selector = &services.objects["checkout-api"]["spec"]["selector"];
            assert_eq!(
                slice_endpoints(&slice),
                expected_endpoints(&pods, selector),
                "{}",
                info.name
            );
        }
    }

    #[test]
    fn adoption_selector_drift_never_lists_a_v418_pod_while_the_canary_is_ready() {
        let rec = generate("adoption-selector-drift").unwrap();
        let mut pods = Live::default();
        let mut canary_ready_seen = false;
        for r in &rec.records {
            match r.kind {
                Kind::Pod => pods.apply(r),
                Kind::EndpointSlice if r.op == Op::Modified => {
                    for e in object(r)["endpoints"].as_array().unwrap() {
                        let pod = &pods.objects[e["targetRef"]["name"].as_str().unwrap()];
                        assert_eq!(pod["metadata"]["labels"]["version"], "v417");
                    }
                }
                _ => {}
            }
            canary_ready_seen |= pods
                .objects
                .values()
                .any(|p| p["metadata"]["labels"]["version"] == "v418" && pod_ready(p));
        }
        assert!(canary_ready_seen);
        let service = watch(&rec, Kind::Service).pop().unwrap().1;
        assert_eq!(service["spec"]["selector"]["version"], "v417");
        let end = last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Paused");
        assert_eq!(end["status"]["currentStepIndex"], 1);
        let canary: Vec<&Value> = pods
            .objects
            .values()
            .filter(|p| p["metadata"]["labels"]["version"] == "v418")
            .collect();
        assert_eq!(canary.len(), 1);
        assert!(pod_ready(canary[0]));
        let app = watch(&rec, Kind::Application).pop().unwrap().1;
        assert_eq!(app["status"]["sync"]["status"], "Synced");
        assert_eq!(app["status"]["health"]["status"], "Suspended");
        // Two hours paused, and the recording stays small: nothing is written while paused.
        let paused = end["status"]["pauseConditions"][0]["startTime"]
            .as_str()
            .unwrap();
        assert_eq!(paused, "2026-03-14T13:00:13Z");
        assert_eq!(
            crate::calendar::rfc3339(rec.closed_at.as_unix_nanos() / 1_000_000_000),
            "2026-03-14T15:00:13Z"
        );
        assert!(rec.records.len() < 100, "{}", rec.records.len());
    }

    #[test]
    fn moved_tag_gives_one_replica_set_two_image_ids_for_one_image_string() {
        let rec = generate("moved-tag").unwrap();
        let mut by_rs: std::collections::BTreeMap<
            String,
            std::collections::BTreeSet<(String, String)>,
        > = std::collections::BTreeMap::new();
        for (_, pod) in watch(&rec, Kind::Pod) {
            let status = &pod["status"]["containerStatuses"][0];
            if let Some(id) = status["imageID"].as_str() {
                by_rs
                    .entry(owner_name(&pod).to_owned())
                    .or_default()
                    .insert((status["image"].as_str().unwrap().to_owned(), id.to_owned()));
            }
        }
        let end = last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Healthy");
        let new_rs = format!("checkout-api-{}", status_str(&end, "currentPodHash"));
        let ids = &by_rs[&new_rs];
        let images: std::collections::BTreeSet<&str> =
            ids.iter().map(|(i, _)| i.as_str()).collect();
        assert_eq!(images.into_iter().collect::<Vec<_>>(), [NEW_TAG]);
        let digests: Vec<&str> = ids.iter().map(|(_, d)| d.as_str()).collect();
        assert_eq!(digests.len(), 2, "{digests:?}");
        for d in &digests {
            assert!(d.starts_with("registry.example.com/payments/checkout-api@sha256:"));
        }
        assert!(
            digests.contains(
                &format!(
                    "registry.example.com/payments/checkout-api@sha256:{}",
                    image_digest(NEW_TAG)
                )
                .as_str()
            )
        );
        // Every other ReplicaSet runs one pinned image, and reports its pinned digest.
        for (rs, ids) in &by_rs {
            if *rs != new_rs {
                assert_eq!(ids.len(), 1, "{rs}");
                let (image, id) = ids.iter().next().unwrap();
                assert!(
                    image.ends_with(id.split('@').nth(1).unwrap()),
                    "{image} {id}"
                );
            }
        }
    }

    #[test]
    fn no_rollback_history_deletes_the_previous_replica_set_once_healthy() {
        let rec = generate("no-rollback-history").unwrap();
        let listed = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Listed)
            .count();
        assert_eq!(listed, 1, "no history to begin with");
        let deleted: Vec<&Record> = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Deleted { inferred: false })
            .collect();
        assert_eq!(deleted.len(), 1);
        let end = last_rollout(&rec);
        assert_eq!(end["status"]["phase"], "Healthy");
        assert_eq!(end["spec"]["revisionHistoryLimit"], 0);
        let remaining = final_replica_sets(&rec);
        assert_eq!(remaining.len(), 1);
        assert_eq!(
            remaining[0]["metadata"]["labels"]["rollouts-pod-template-hash"],
            end["status"]["stableRS"]
        );
        let healthy = rec
            .records
            .iter()
            .filter(|r| r.kind == Kind::Rollout && r.op == Op::Modified)
            .find(|r| object(r)["status"]["stableRS"] == end["status"]["stableRS"])
            .unwrap();
        assert!(deleted[0].observed_at > healthy.observed_at);
    }

    #[test]
    fn application_history_has_one_entry_per_render() {
        for name in [
            "rerender-race",
            "rerender-race-reruns",
            "gitops-double-render",
            "adoption-selector-drift",
        ] {
            let rec = generate(name).unwrap();
            let rollouts = watch(&rec, Kind::Rollout);
            let generation = |v: &Value| v["metadata"]["generation"].as_i64().unwrap();
            let renders =
                (generation(&rollouts.last().unwrap().1) - generation(&rollouts[0].1)) as usize;
            let apps = watch(&rec, Kind::Application);
            let history = |v: &Value| v["status"]["history"].as_array().unwrap().clone();
            let first = history(&apps[0].1);
            let last = history(&apps.last().unwrap().1);
            assert_eq!(last.len(), (first.len() + renders).min(10), "{name}");
            let ids: Vec<i64> = last.iter().map(|h| h["id"].as_i64().unwrap()).collect();
            assert_eq!(
                *ids.last().unwrap(),
                first.len() as i64 + renders as i64,
                "{name}"
            );
            // What a sync deployed: a one-source Application's commit, a two-source one's
            // revisions and Helm parameters.
            let deployed = |h: &Value| match h.get("revisions") {
                Some(revisions) => {
                    for r in revisions.as_array().unwrap() {
                        assert_eq!(r.as_str().unwrap().len(), 40, "{name}");
                    }
                    assert!(h.get("revision").is_none(), "{name}");
                    format!("{revisions} {}", h["sources"][0]["helm"]["parameters"])
                }
                None => {
                    assert_eq!(h["revision"].as_str().unwrap().len(), 40, "{name}");
                    h["revision"].to_string()
                }
            };
            let inputs: std::collections::BTreeSet<String> = last.iter().map(deployed).collect();
            assert_eq!(inputs.len(), last.len(), "{name}: a new input per sync");
            // Each render: OutOfSync with the sync running, the Rollout applied, Synced.
            let syncs = apps
                .iter()
                .filter(|(_, v)| v["status"]["operationState"]["phase"] == "Running")
                .count();
            assert_eq!(syncs, renders, "{name}");
            let end = &apps.last().unwrap().1;
            assert_eq!(end["status"]["sync"]["status"], "Synced");
            let newest = last.last().unwrap();
            match newest.get("revisions") {
                Some(revisions) => assert_eq!(&end["status"]["sync"]["revisions"], revisions),
                None => assert_eq!(end["status"]["sync"]["revision"], newest["revision"]),
            }
            let rollout = &rollouts.last().unwrap().1;
            assert_eq!(
                rollout["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"],
                "checkout-api:argoproj.io/Rollout:payments/checkout-api"
            );
            assert!(rec.header.source.namespaces.iter().any(|n| n == "argocd"));
        }
        for name in [
            "image-only-release",
            "abort",
            "moved-tag",
            "no-rollback-history",
        ] {
            let rec = generate(name).unwrap();
            assert!(watch(&rec, Kind::Application).is_empty(), "{name}");
        }
    }

    /// Seed 000's Application: two sources; the first sync is the pipeline's new image (its
    /// Helm parameters, set by `argocd app set` through argocd-server) with a values commit,
    /// the second, 20 s later, a values commit alone.
    #[test]
    fn gitops_double_render_syncs_the_image_then_a_values_commit_20_seconds_apart() {
        let rec = generate("gitops-double-render").unwrap();
        let apps = watch(&rec, Kind::Application);
        let history = |v: &Value| v["status"]["history"].as_array().unwrap().clone();
        let before = history(&apps[0].1).len();
        let end = history(&apps.last().unwrap().1);
        let new = &end[before..];
        let deployed: Vec<&str> = new
            .iter()
            .map(|h| h["deployedAt"].as_str().unwrap())
            .collect();
        assert_eq!(deployed, ["2026-03-14T13:00:05Z", "2026-03-14T13:00:25Z"]);
        let parameters = |h: &Value| h["sources"][0]["helm"]["parameters"].clone();
        let revision = |h: &Value, i: usize| h["revisions"][i].as_str().unwrap().to_owned();
        let (stable, first, second) = (&end[before - 1], &new[0], &new[1]);
        assert_ne!(parameters(first), parameters(stable));
        assert_eq!(
            parameters(first)[0],
            serde_json::json!({"name": "image.tag", "value": "1.42.0"})
        );
        assert_eq!(parameters(second), parameters(first));
        assert_eq!(
            revision(second, 0),
            revision(first, 0),
            "one chart revision"
        );
        assert_ne!(revision(second, 1), revision(first, 1), "a values commit");
        assert_ne!(revision(first, 1), revision(stable, 1));
        let spec_writers: Vec<&str> = apps
            .iter()
            .filter_map(|(_, v)| {
                let fields = v["metadata"]["managedFields"].as_array()?;
                fields
                    .iter()
                    .filter(|f| f["fieldsV1"]["f:spec"].get("f:sources").is_some())
                    .max_by_key(|f| f["time"].as_str())?["manager"]
                    .as_str()
            })
            .collect();
        assert!(
            !spec_writers.is_empty() && spec_writers.iter().all(|m| *m == "argocd-server"),
            "{spec_writers:?}"
        );
    }

    #[test]
    fn every_scenario_writes_the_same_bytes_twice() {
        for info in catalog() {
            let a = generate(info.name).unwrap().write_to(Vec::new()).unwrap();
            let b = generate(info.name).unwrap().write_to(Vec::new()).unwrap();
            assert!(a == b, "{}", info.name);
        }
    }
}
