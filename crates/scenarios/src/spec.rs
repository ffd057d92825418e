//! What the simulator is configured with and what a GitOps render changes.

use std::collections::BTreeMap;

use rf_format::Timestamp;
use serde_json::{Value, json};

use crate::calendar;
use crate::hash::{env_digest, fake_sha256};

/// 2026-03-14T13:00:00Z, when every scenario starts.
pub const SIMULATION_START: Timestamp =
    Timestamp::from_unix_seconds(calendar::unix_seconds(2026, 3, 14, (13, 0, 0)));

/// The stable image every scenario starts on, pinned by digest ([`image_digest`] of its tag).
pub const STABLE_IMAGE: &str = "registry.example.com/payments/checkout-api:1.41.0@sha256:af80eb09651234bad433695a5b7739f162f369f52658395027823456c234a05f";

/// The image the scenarios release, pinned by digest ([`image_digest`] of [`NEW_TAG`]).
pub const NEW_IMAGE: &str = "registry.example.com/payments/checkout-api:1.42.0@sha256:ca205c097454920bdcc2145a6048c2745a64def52186e72d0dbc4356b3ab0d4e";

/// The image of the revision before the stable one (its ReplicaSet is at 0 replicas), pinned.
pub const PREVIOUS_IMAGE: &str = "registry.example.com/payments/checkout-api:1.40.3@sha256:b81d0b0969ef0e68cc71455a5753fd376bfbadf52b906f0a1fbf9456be1090f1";

/// The release of [`NEW_IMAGE`] as an unpinned tag: what it runs is whatever digest the
/// registry resolves the tag to when a node pulls it.
pub const NEW_TAG: &str = "registry.example.com/payments/checkout-api:1.42.0";

/// The digest (64 hex digits, without `sha256:`) a tag resolves to unless a scenario's registry
/// says otherwise: derived from the tag reference, so a pinned image and its tag agree.
pub fn image_digest(tag: &str) -> String {
    fake_sha256(tag)
}

/// `tag@sha256:<digest of tag>`: the tag pinned to the digest it resolves to by default.
pub fn pinned(tag: &str) -> String {
    format!("{tag}@sha256:{}", image_digest(tag))
}

/// The parts of an image reference: repository (`registry/path`), the tag reference
/// (`repository:tag`, or the repository when there is no tag) and the pinned digest if any.
pub(crate) fn split_image(image: &str) -> (&str, &str, Option<&str>) {
    let (reference, digest) = match image.split_once("@sha256:") {
        Some((r, d)) => (r, Some(d)),
        None => (image, None),
    };
    let last_slash = reference.rfind('/').map_or(0, |i| i + 1);
    let repository = match reference[last_slash..].find(':') {
        Some(colon) => &reference[..last_slash + colon],
        None => reference,
    };
    (repository, reference, digest)
}

/// One Service of the namespace: its name and `spec.selector`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceConfig {
    /// `metadata.name` (also the prefix of its EndpointSlice's name).
    pub name: String,
    /// `spec.selector`: the pods whose labels hold every pair receive its traffic.
    pub selector: BTreeMap<String, String>,
}

impl ServiceConfig {
    /// A Service called `name` with an empty selector.
    pub fn new(name: impl Into<String>) -> Self {
        ServiceConfig {
            name: name.into(),
            selector: BTreeMap::new(),
        }
    }

    /// Adds `key: value` to the selector.
    #[must_use]
    pub fn with_selector(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.selector.insert(key.into(), value.into());
        self
    }
}

/// `spec.strategy.blueGreen` of a blue-green rollout, promoted by hand
/// (`autoPromotionEnabled: false`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlueGreenConfig {
    /// `activeService`: the Service the controller points at the promoted revision.
    pub active_service: String,
    /// `previewService`: the Service it points at the new revision before promotion.
    pub preview_service: String,
    /// `scaleDownDelaySeconds`: how long the old active ReplicaSet stays up after the switch
    /// (`None`: the controller's default, 30).
    pub scale_down_delay_seconds: Option<u32>,
}

impl BlueGreenConfig {
    /// The delay the controller applies.
    pub(crate) fn scale_down_delay(&self) -> u32 {
        self.scale_down_delay_seconds.unwrap_or(30)
    }
}

/// One canary step of `spec.strategy.canary.steps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// `{setWeight: N}`: N percent of the replicas run the new template.
    SetWeight(u32),
    /// `{pause: {}}` (indefinite, `None`) or `{pause: {duration: "<N>s"}}`.
    Pause(Option<u32>),
}

impl Step {
    /// The step as it appears in the Rollout's spec.
    pub fn to_value(self) -> Value {
        match self {
            Step::SetWeight(weight) => json!({ "setWeight": weight }),
            Step::Pause(None) => json!({ "pause": {} }),
            Step::Pause(Some(secs)) => json!({ "pause": { "duration": format!("{secs}s") } }),
        }
    }

    /// The controller's words for the step in `RolloutStepCompleted` events.
    pub(crate) fn describe(self) -> String {
        match self {
            Step::SetWeight(weight) => format!("setWeight: {weight}"),
            Step::Pause(None) => "pause".to_owned(),
            Step::Pause(Some(secs)) => format!("pause: {secs}s"),
        }
    }
}

/// The steps of every scenario: setWeight 20, pause {}, setWeight 50, pause 30s, setWeight 80,
/// pause 30s.
pub fn default_steps() -> Vec<Step> {
    vec![
        Step::SetWeight(20),
        Step::Pause(None),
        Step::SetWeight(50),
        Step::Pause(Some(30)),
        Step::SetWeight(80),
        Step::Pause(Some(30)),
    ]
}

/// The JSON array of `steps`.
pub(crate) fn steps_value(steps: &[Step]) -> Value {
    Value::Array(steps.iter().map(|s| s.to_value()).collect())
}

/// A Helm-style `checksum/config` value: 64 hex digits derived from `seed`.
pub fn config_checksum(seed: &str) -> String {
    fake_sha256(seed)
}

/// The `checksum/config` of the stable revision.
pub fn stable_config_checksum() -> String {
    config_checksum("checkout-api/values.yaml@stable")
}

/// What one GitOps apply of the Rollout changes. Empty fields leave the spec as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TemplateChange {
    /// A new image for the application container.
    pub image: Option<String>,
    /// Pod-template annotations to set (e.g. `checksum/config`).
    pub annotations: BTreeMap<String, String>,
    /// Pod-template labels to set.
    pub labels: BTreeMap<String, String>,
    /// New canary steps.
    pub steps: Option<Vec<Step>>,
}

impl TemplateChange {
    /// A render that changes nothing yet.
    pub fn new() -> Self {
        TemplateChange::default()
    }

    /// Sets the container image.
    #[must_use]
    pub fn with_image(mut self, image: impl Into<String>) -> Self {
        self.image = Some(image.into());
        self
    }

    /// Sets a pod-template annotation.
    #[must_use]
    pub fn with_annotation(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.annotations.insert(key.into(), value.into());
        self
    }

    /// Sets a pod-template label.
    #[must_use]
    pub fn with_label(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.labels.insert(key.into(), value.into());
        self
    }

    /// Replaces the canary steps.
    #[must_use]
    pub fn with_steps(mut self, steps: Vec<Step>) -> Self {
        self.steps = Some(steps);
        self
    }

    /// Applies the template part of the change to a Rollout's `spec.template`.
    pub(crate) fn apply_to_template(&self, template: &mut Value) {
        if let Some(image) = &self.image {
            if let Some(container) = template
                .pointer_mut("/spec/containers/0")
                .and_then(Value::as_object_mut)
            {
                container.insert("image".to_owned(), Value::String(image.clone()));
            }
        }
        for (section, entries) in [("annotations", &self.annotations), ("labels", &self.labels)] {
            if entries.is_empty() {
                continue;
            }
            let Some(metadata) = template
                .as_object_mut()
                .map(|t| t.entry("metadata").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let Some(map) = metadata
                .entry(section)
                .or_insert_with(|| json!({}))
                .as_object_mut()
            else {
                continue;
            };
            for (k, v) in entries {
                map.insert(k.clone(), Value::String(v.clone()));
            }
        }
    }
}

/// The cluster a [`crate::Sim`] starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimConfig {
    /// Namespace of every object.
    pub namespace: String,
    /// Name of the Rollout (and prefix of its ReplicaSets and Events).
    pub rollout: String,
    /// Value of the `app` label of the selector and the pod template.
    pub app: String,
    /// `spec.replicas`.
    pub replicas: u32,
    /// `spec.strategy.canary.steps`.
    pub steps: Vec<Step>,
    /// Image of the stable revision.
    pub image: String,
    /// Image of the revision before it (its ReplicaSet is scaled to 0).
    pub previous_image: String,
    /// `checksum/config` pod-template annotation of the stable revision.
    pub config_checksum: String,
    /// `spec.revisionHistoryLimit`. With 0 the cluster starts without the previous revision's
    /// ReplicaSet (the controller deleted it long ago).
    pub revision_history_limit: u32,
    /// Simulated time of the recorder's initial lists (whole seconds are used).
    pub start: Timestamp,
    /// Pods, Services and EndpointSlices are simulated and recorded (the ReplicaSet controller's
    /// pods, the scheduler, the kubelet, the endpointslice controller).
    pub traffic: bool,
    /// An Argo CD Application (namespace `argocd`, named after the rollout) manages the Rollout
    /// and the Services; every [`crate::Sim::render`] is one of its syncs.
    pub application: bool,
    /// The Application has two sources, as seed 000's: the chart, with the image in its Helm
    /// parameters (set by the pipeline), and a values repository (`ref: values`) for the rest.
    /// A render's new image is a parameter change (the same revisions), anything else it
    /// changes a values commit. Otherwise one source, and every render a new commit.
    pub two_source_application: bool,
    /// A Flux HelmRelease (`flux-system/<app>`) installs the Rollout instead: each render is one
    /// of its Helm upgrades, by helm-controller.
    pub flux: bool,
    /// The chart version the stable revision was installed from.
    pub chart: String,
    /// The Services of the namespace (used when `traffic` is on).
    pub services: Vec<ServiceConfig>,
    /// Extra pod-template labels of the stable (and previous) revision, e.g. `version: v417`.
    pub pod_labels: BTreeMap<String, String>,
    /// The registry: tag reference (`repository:tag`) -> digest (64 hex digits) it resolves to
    /// at the start; a tag not in it resolves to [`image_digest`] of itself.
    /// [`crate::Sim::move_tag`] moves a tag later.
    pub registry: BTreeMap<String, String>,
    /// Seconds after its last occurrence that an Event is deleted (the API server's
    /// `--event-ttl`, 1 h by default); `None` keeps them (the scenarios are shorter).
    pub event_ttl: Option<u32>,
    /// The strategy is blue-green instead of a canary with `steps` (which are then unused).
    /// Its two Services must be among `services`; the controller puts the pod-template hash
    /// label on their selectors.
    pub blue_green: Option<BlueGreenConfig>,
    /// The Rollout takes its pod template from a Deployment of its name (`spec.workloadRef`,
    /// with this `scaleDown`): renders write the Deployment's template, and the Deployment,
    /// scaled to 0 since the migration, is recorded.
    pub workload_ref: Option<String>,
    /// A canary's `stableService` (one of `services`): the controller puts the stable
    /// revision's hash on its selector, once that ReplicaSet is fully available.
    pub stable_service: Option<String>,
    /// Ingresses of the namespace (applied by Argo CD before the recording, recorded with
    /// `traffic`): the front door.
    pub ingresses: Vec<IngressConfig>,
    /// A canary's `canaryService` (one of `services`): the controller puts the new revision's
    /// hash on its selector, once that ReplicaSet is fully available.
    pub canary_service: Option<String>,
    /// NGINX traffic routing (`trafficRouting.nginx.stableIngress`, one of `ingresses`; needs
    /// `stable_service` and `canary_service`): the controller keeps a canary Ingress of it.
    pub nginx: Option<String>,
    /// `canaryMetadata` `role: canary` and `stableMetadata` `role: stable`: the controller puts
    /// each role's label on its ReplicaSet's template and pods.
    pub role_labels: bool,
    /// A webhook refuses the controller's patches of pod labels: pods keep the role they were
    /// created with.
    pub pod_relabel_refused: bool,
}

/// An Ingress (`networking.k8s.io/v1`) that sends every request for `host` to Service
/// `service`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngressConfig {
    pub name: String,
    pub host: String,
    pub service: String,
    /// `spec.ingressClassName`.
    pub class: String,
}

impl IngressConfig {
    /// Ingress `name` of class `nginx` sending `host` to `service`.
    pub fn new(name: &str, host: &str, service: &str) -> Self {
        IngressConfig {
            name: name.to_owned(),
            host: host.to_owned(),
            service: service.to_owned(),
            class: "nginx".to_owned(),
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            namespace: "payments".to_owned(),
            rollout: "checkout-api".to_owned(),
            app: "checkout-api".to_owned(),
            replicas: 5,
            steps: default_steps(),
            image: STABLE_IMAGE.to_owned(),
            previous_image: PREVIOUS_IMAGE.to_owned(),
            config_checksum: stable_config_checksum(),
            revision_history_limit: 3,
            start: SIMULATION_START,
            traffic: true,
            application: false,
            two_source_application: false,
            flux: false,
            chart: "0.14.2".to_owned(),
            services: vec![ServiceConfig::new("checkout-api").with_selector("app", "checkout-api")],
            pod_labels: BTreeMap::new(),
            registry: BTreeMap::new(),
            event_ttl: None,
            blue_green: None,
            workload_ref: None,
            stable_service: None,
            ingresses: Vec::new(),
            canary_service: None,
            nginx: None,
            role_labels: false,
            pod_relabel_refused: false,
        }
    }
}

impl SimConfig {
    /// The default cluster with a blue-green rollout: active Service `checkout-api`, preview
    /// Service `checkout-api-preview`, promoted by hand, no steps.
    pub fn blue_green() -> Self {
        let service = |name: &str| ServiceConfig::new(name).with_selector("app", "checkout-api");
        SimConfig {
            steps: Vec::new(),
            services: vec![service("checkout-api"), service("checkout-api-preview")],
            blue_green: Some(BlueGreenConfig {
                active_service: "checkout-api".to_owned(),
                preview_service: "checkout-api-preview".to_owned(),
                scale_down_delay_seconds: None,
            }),
            ..SimConfig::default()
        }
    }
}

impl SimConfig {
    /// The Rollout's `spec.template` for `image` and `checksum`, as the chart renders it.
    pub(crate) fn pod_template(&self, image: &str, checksum: &str) -> Value {
        let app = &self.app;
        let mut labels = serde_json::Map::new();
        labels.insert("app".to_owned(), json!(app));
        for (k, v) in &self.pod_labels {
            labels.insert(k.clone(), json!(v));
        }
        json!({
            "metadata": {
                "labels": labels,
                "annotations": { "checksum/config": checksum }
            },
            "spec": {
                "containers": [{
                    "name": app,
                    "image": image,
                    "ports": [{ "name": "http", "containerPort": 8080 }],
                    "env": [
                        { "name": "DB_HOST", "value": env_digest(&format!("{app}/DB_HOST")) },
                        { "name": "DB_PASSWORD", "value": env_digest(&format!("{app}/DB_PASSWORD")) },
                        { "name": "LOG_LEVEL", "value": env_digest(&format!("{app}/LOG_LEVEL")) }
                    ],
                    "resources": {
                        "requests": { "cpu": "250m", "memory": "256Mi" },
                        "limits": { "memory": "512Mi" }
                    },
                    "readinessProbe": {
                        "httpGet": { "path": "/healthz/ready", "port": "http" },
                        "periodSeconds": 5
                    }
                }]
            }
        })
    }
}

/// A ReplicaSet's pod template: the Rollout's, plus the hash label, with the API server's
/// defaults filled in.
pub(crate) fn replica_set_template(template: &Value, hash: &str) -> Value {
    let mut t = template.clone();
    let Some(root) = t.as_object_mut() else {
        return t;
    };
    let metadata = root.entry("metadata").or_insert_with(|| json!({}));
    if let Some(metadata) = metadata.as_object_mut() {
        metadata.insert("creationTimestamp".to_owned(), Value::Null);
        if let Some(labels) = metadata
            .entry("labels")
            .or_insert_with(|| json!({}))
            .as_object_mut()
        {
            labels.insert(
                crate::objects::HASH_LABEL.to_owned(),
                Value::String(hash.to_owned()),
            );
        }
    }
    if let Some(spec) = root.get_mut("spec").and_then(Value::as_object_mut) {
        if let Some(containers) = spec.get_mut("containers").and_then(Value::as_array_mut) {
            for container in containers.iter_mut().filter_map(Value::as_object_mut) {
                default_container(container);
            }
        }
        for (key, value) in [
            ("restartPolicy", json!("Always")),
            ("terminationGracePeriodSeconds", json!(30)),
            ("dnsPolicy", json!("ClusterFirst")),
            ("securityContext", json!({})),
            ("schedulerName", json!("default-scheduler")),
        ] {
            spec.entry(key).or_insert(value);
        }
    }
    t
}

fn default_container(container: &mut serde_json::Map<String, Value>) {
    let pull = match container.get("image").and_then(Value::as_str) {
        Some(image) if image.ends_with(":latest") || !image.contains(':') => "Always",
        _ => "IfNotPresent",
    };
    container
        .entry("imagePullPolicy")
        .or_insert_with(|| json!(pull));
    container
        .entry("terminationMessagePath")
        .or_insert_with(|| json!("/dev/termination-log"));
    container
        .entry("terminationMessagePolicy")
        .or_insert_with(|| json!("File"));
    if let Some(ports) = container.get_mut("ports").and_then(Value::as_array_mut) {
        for port in ports.iter_mut().filter_map(Value::as_object_mut) {
            port.entry("protocol").or_insert_with(|| json!("TCP"));
        }
    }
    if let Some(probe) = container
        .get_mut("readinessProbe")
        .and_then(Value::as_object_mut)
    {
        if let Some(get) = probe.get_mut("httpGet").and_then(Value::as_object_mut) {
            get.entry("scheme").or_insert_with(|| json!("HTTP"));
        }
        for (key, value) in [
            ("timeoutSeconds", 1),
            ("periodSeconds", 10),
            ("successThreshold", 1),
            ("failureThreshold", 3),
        ] {
            probe.entry(key).or_insert_with(|| json!(value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_images_are_their_tags_pinned_to_the_digests_they_resolve_to() {
        let repo = "registry.example.com/payments/checkout-api";
        assert_eq!(STABLE_IMAGE, pinned(&format!("{repo}:1.41.0")));
        assert_eq!(NEW_IMAGE, pinned(NEW_TAG));
        assert_eq!(PREVIOUS_IMAGE, pinned(&format!("{repo}:1.40.3")));
        assert_eq!(
            split_image(NEW_IMAGE),
            (repo, NEW_TAG, Some(image_digest(NEW_TAG).as_str()))
        );
        assert_eq!(split_image(NEW_TAG), (repo, NEW_TAG, None));
        assert_eq!(
            split_image("localhost:5000/app"),
            ("localhost:5000/app", "localhost:5000/app", None)
        );
    }

    #[test]
    fn steps_render_as_the_controller_spells_them() {
        let v = steps_value(&default_steps());
        assert_eq!(
            crate::json::to_bytes(&v),
            br#"[{"setWeight":20},{"pause":{}},{"setWeight":50},{"pause":{"duration":"30s"}},{"setWeight":80},{"pause":{"duration":"30s"}}]"#
        );
        assert_eq!(Step::Pause(Some(30)).describe(), "pause: 30s");
    }

    #[test]
    fn a_change_sets_image_and_annotations_of_the_template() {
        let config = SimConfig::default();
        let mut t = config.pod_template(STABLE_IMAGE, "a");
        TemplateChange::new()
            .with_image(NEW_IMAGE)
            .with_annotation("checksum/config", "b")
            .with_label("version", "1.42.0")
            .apply_to_template(&mut t);
        assert_eq!(t.pointer("/spec/containers/0/image").unwrap(), NEW_IMAGE);
        assert_eq!(
            t.pointer("/metadata/annotations/checksum~1config").unwrap(),
            "b"
        );
        assert_eq!(t.pointer("/metadata/labels/version").unwrap(), "1.42.0");
    }

    #[test]
    fn replica_set_templates_carry_the_hash_label_and_api_server_defaults() {
        let config = SimConfig::default();
        let t = replica_set_template(&config.pod_template(STABLE_IMAGE, "a"), "5f7b8c9d4");
        assert_eq!(
            t.pointer("/metadata/labels/rollouts-pod-template-hash")
                .unwrap(),
            "5f7b8c9d4"
        );
        assert!(t.pointer("/metadata/creationTimestamp").unwrap().is_null());
        assert_eq!(t.pointer("/spec/dnsPolicy").unwrap(), "ClusterFirst");
        assert_eq!(
            t.pointer("/spec/containers/0/imagePullPolicy").unwrap(),
            "IfNotPresent"
        );
        assert_eq!(
            t.pointer("/spec/containers/0/ports/0/protocol").unwrap(),
            "TCP"
        );
    }
}
