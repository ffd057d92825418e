//! The simulated cluster: its objects, the simulated clock, and the watch records it emits.

use std::collections::{BTreeMap, BTreeSet};

use rf_format::{Kind, Op, Record, Timestamp};
use serde_json::Value;

use crate::argocd::{ARGOCD_NAMESPACE, Application, TRACKING_ID};
use crate::hash::{HashFunction, SplitMix, fnv64, uid};
use crate::json;
use crate::objects::{
    APPS_API, DESIRED_REPLICAS, Event, HASH_LABEL, ManagedField, Meta, Owner, REVISION,
    ROLLOUT_API, ReplicaSet, Rollout, RsStatus, fields, manager,
};
use crate::pods::{NODES, Pod};
use crate::recording::Recording;
use crate::spec::{
    SimConfig, Step, TemplateChange, config_checksum, replica_set_template, steps_value,
};
use crate::status::{Condition, RolloutStatus, calculate_phase, reason};
use crate::traffic::{Endpoint, EndpointSlice, Service};

const NANOS_PER_SECOND: i64 = 1_000_000_000;
const NANOS_PER_MILLI: i64 = 1_000_000;

/// A deterministic simulation of one Rollout, its ReplicaSets and the Events about it, as a
/// recorder watching the API server would have seen them.
///
/// The cluster starts fully promoted and Healthy on a stable revision, with one older revision's
/// ReplicaSet at 0 replicas; the records start with the recorder's initial lists. Actions
/// ([`Sim::render`], [`Sim::promote`], ...) write at the current simulated second;
/// [`Sim::run_for`] advances time, running the rollouts controller and the ReplicaSet controller
/// once per second. Nothing reads a clock or the environment: the same calls give the same
/// records, byte for byte.
#[derive(Debug, Clone)]
pub struct Sim {
    pub(crate) config: SimConfig,
    pub(crate) start: i64,
    pub(crate) now: i64,
    stamp_second: i64,
    stamp_count: i64,
    rv: u64,
    rv_gaps: SplitMix,
    seq: u64,
    records: Vec<Record>,
    pub(crate) rollout: Rollout,
    pub(crate) replica_sets: Vec<ReplicaSet>,
    events: Vec<Event>,
    pub(crate) hash_fn: HashFunction,
    pub(crate) leak: bool,
    pub(crate) replaced: BTreeSet<String>,
    pub(crate) pods: Vec<Pod>,
    pub(crate) services: Vec<Service>,
    pub(crate) ingresses: Vec<crate::traffic::Ingress>,
    /// NGINX traffic routing: what the controller last set (`crate::nginx`).
    pub(crate) routing: Option<crate::nginx::Routing>,
    pub(crate) slices: Vec<EndpointSlice>,
    /// What the endpointslice controller saw at the end of the last second: (slice, endpoints,
    /// when).
    pub(crate) slices_observed: Vec<(usize, Vec<Endpoint>, i64)>,
    pub(crate) application: Option<Application>,
    /// The Flux HelmRelease that installs the Rollout (`SimConfig::flux`).
    pub(crate) helm_release: Option<crate::flux::HelmRelease>,
    /// The Deployment the Rollout's `workloadRef` names (`SimConfig::workload_ref`).
    pub(crate) deployment: Option<crate::deployment::Deployment>,
    /// A Rollout health the Application does not show yet, and since when.
    pub(crate) health_seen: Option<(&'static str, i64)>,
    /// Tag reference -> digest it resolves to now.
    pub(crate) registry: BTreeMap<String, String>,
    /// (node, tag reference) -> digest the node pulled.
    pub(crate) node_images: BTreeMap<(usize, String), String>,
    pub(crate) pod_seq: u64,
    pub(crate) node_seq: usize,
    pub(crate) node_ips: [usize; NODES.len()],
}

impl Sim {
    /// A cluster at `config.start`: the Rollout fully promoted and Healthy on its stable
    /// revision (2), the previous revision's ReplicaSet at 0 replicas, no Events; the records
    /// hold the recorder's initial lists of Rollouts, ReplicaSets and Events.
    pub fn new(config: SimConfig) -> Sim {
        let start = config.start.as_unix_nanos().div_euclid(NANOS_PER_SECOND);
        let seed = fnv64(format!("{}/{}", config.namespace, config.rollout).as_bytes());
        let ns = config.namespace.clone();
        let name = config.rollout.clone();
        let replicas = i32::try_from(config.replicas).unwrap_or(i32::MAX);

        // The history: created 11 days ago (revision 1), revision 2 released 3 days ago.
        let created = start - 11 * 86_400 - 3 * 3_600 - 45 * 60 + 53;
        let released = start - 3 * 86_400 - 2 * 3_600 + 12 * 60 + 5;
        let settled = released + 197;

        let stable_template = config.pod_template(&config.image, &config.config_checksum);
        let previous_checksum = config_checksum(&format!("{}/values.yaml@previous", config.app));
        let previous_template = config.pod_template(&config.previous_image, &previous_checksum);
        let stable_hash = HashFunction::Original.pod_template_hash(&stable_template, None);
        let previous_hash = HashFunction::Original.pod_template_hash(&previous_template, None);
        let rollout_uid = uid(&format!("{ns}/{name}/rollout/{created}"));

        let mut meta = Meta::new(name.clone(), ns.clone(), rollout_uid.clone(), created);
        meta.generation = Some(2);
        for (k, v) in [
            (
                "app.kubernetes.io/instance",
                format!("{}-{}", ns, config.app),
            ),
            ("app.kubernetes.io/managed-by", "Helm".to_owned()),
            ("app.kubernetes.io/name", config.app.clone()),
            ("helm.sh/chart", format!("{}-{}", config.app, config.chart)),
        ] {
            meta.labels.insert(k.to_owned(), v);
        }
        if config.flux {
            meta.labels
                .insert(crate::flux::NAME_LABEL.to_owned(), config.app.clone());
            meta.labels.insert(
                crate::flux::NAMESPACE_LABEL.to_owned(),
                crate::flux::FLUX_NAMESPACE.to_owned(),
            );
        }
        meta.annotations.insert(REVISION.to_owned(), "2".to_owned());
        if config.application {
            meta.annotations.insert(
                TRACKING_ID.to_owned(),
                format!("{}:argoproj.io/Rollout:{ns}/{name}", config.app),
            );
        }
        let (writer, write) = gitops_writer(&config);
        meta.touch(ManagedField {
            manager: writer,
            operation: write,
            subresource: None,
            api_version: ROLLOUT_API,
            time: released,
            fields: fields::argocd_rollout(),
        });
        meta.touch(ManagedField {
            manager: manager::ROLLOUTS,
            operation: "Update",
            subresource: None,
            api_version: ROLLOUT_API,
            time: released + 1,
            fields: fields::rollouts_metadata(),
        });
        meta.touch(ManagedField {
            manager: manager::ROLLOUTS,
            operation: "Update",
            subresource: Some("status"),
            api_version: ROLLOUT_API,
            time: settled,
            fields: fields::rollouts_status(),
        });
        let stable_name = format!("{name}-{stable_hash}");
        let blue_green = config.blue_green.is_some();
        let mut status = RolloutStatus {
            current_pod_hash: stable_hash.clone(),
            current_step_hash: if blue_green {
                String::new()
            } else {
                crate::hash::steps_hash(&steps_value(&config.steps))
            },
            replicas,
            updated_replicas: replicas,
            ready_replicas: replicas,
            available_replicas: replicas,
            current_step_index: if config.steps.is_empty() {
                None
            } else {
                Some(u32::try_from(config.steps.len()).unwrap_or(u32::MAX))
            },
            observed_generation: "2".to_owned(),
            hpa_replicas: replicas,
            selector: if blue_green {
                format!("app={},{HASH_LABEL}={stable_hash}", config.app)
            } else {
                format!("app={}", config.app)
            },
            stable_rs: stable_hash.clone(),
            active_selector: if blue_green {
                stable_hash.clone()
            } else {
                String::new()
            },
            preview_selector: if blue_green {
                stable_hash.clone()
            } else {
                String::new()
            },
            ..RolloutStatus::default()
        };
        status.conditions = vec![
            Condition::new(
                reason::PAUSED,
                "False",
                reason::ROLLOUT_PAUSED,
                "Rollout is paused",
                released + 74,
            ),
            Condition::new(
                reason::AVAILABLE,
                "True",
                reason::AVAILABLE_REASON,
                "Rollout has minimum availability",
                settled,
            ),
            Condition::new(
                reason::COMPLETED,
                "True",
                reason::ROLLOUT_COMPLETED,
                reason::ROLLOUT_COMPLETED,
                settled,
            ),
            Condition::new(
                reason::HEALTHY,
                "True",
                reason::ROLLOUT_HEALTHY,
                "Rollout is healthy",
                settled,
            ),
            Condition::new(
                reason::PROGRESSING,
                "True",
                reason::NEW_RS_AVAILABLE,
                format!("ReplicaSet \"{stable_name}\" has successfully progressed."),
                settled,
            ),
        ];
        let (phase, message) =
            calculate_phase(replicas, blue_green, config.nginx.is_some(), &status);
        status.phase = phase;
        status.message = message;
        let rollout = Rollout {
            meta,
            replicas,
            revision_history_limit: i32::try_from(config.revision_history_limit)
                .unwrap_or(i32::MAX),
            app: config.app.clone(),
            template: stable_template.clone(),
            steps: config.steps.clone(),
            blue_green: config.blue_green.clone(),
            workload_ref: config.workload_ref.clone(),
            stable_service: config.stable_service.clone(),
            canary_service: config.canary_service.clone(),
            nginx: config.nginx.clone(),
            role_labels: config.role_labels,
            status,
        };

        let owner = Owner::rollout(name.clone(), rollout_uid);
        let make_rs = |hash: &str, template: &Value, revision: u32, created: i64, count: i32| {
            let rs_name = format!("{name}-{hash}");
            let mut meta = Meta::new(
                rs_name.clone(),
                ns.clone(),
                uid(&format!("{ns}/{rs_name}/replicaset/{created}")),
                created,
            );
            meta.generation = Some(6);
            meta.labels = template_labels(template);
            meta.labels.insert(HASH_LABEL.to_owned(), hash.to_owned());
            meta.annotations
                .insert(DESIRED_REPLICAS.to_owned(), replicas.to_string());
            meta.annotations
                .insert(REVISION.to_owned(), revision.to_string());
            meta.owner = Some(owner.clone());
            meta.touch(ManagedField {
                manager: manager::ROLLOUTS,
                operation: "Update",
                subresource: None,
                api_version: APPS_API,
                time: settled - 9,
                fields: fields::rollouts_replica_set(),
            });
            meta.touch(ManagedField {
                manager: manager::KUBE_CONTROLLER_MANAGER,
                operation: "Update",
                subresource: Some("status"),
                api_version: APPS_API,
                time: settled - 6,
                fields: fields::replica_set_status(),
            });
            ReplicaSet {
                meta,
                hash: hash.to_owned(),
                replicas: count,
                app: config.app.clone(),
                template: replica_set_template(template, hash),
                status: RsStatus {
                    replicas: count,
                    fully_labeled: count,
                    ready: count,
                    available: count,
                    observed_generation: 6,
                },
                ready_clock: settled,
            }
        };
        let previous = make_rs(&previous_hash, &previous_template, 1, created + 1, 0);
        let stable = make_rs(&stable_hash, &stable_template, 2, released + 1, replicas);
        // With no revision history the controller deleted the previous ReplicaSet long ago.
        let replica_sets = if config.revision_history_limit == 0 {
            vec![stable]
        } else {
            vec![previous, stable]
        };
        let helm_labels = rollout.meta.labels.clone();
        let registry = config.registry.clone();

        let mut sim = Sim {
            start,
            now: start,
            stamp_second: start,
            stamp_count: 0,
            rv: 48_211_000 + seed % 1_000,
            rv_gaps: SplitMix::new(seed),
            seq: 0,
            records: Vec::new(),
            rollout,
            replica_sets,
            events: Vec::new(),
            hash_fn: HashFunction::Original,
            leak: false,
            replaced: BTreeSet::new(),
            pods: Vec::new(),
            services: Vec::new(),
            ingresses: Vec::new(),
            routing: None,
            slices: Vec::new(),
            slices_observed: Vec::new(),
            application: None,
            helm_release: None,
            deployment: None,
            health_seen: None,
            registry,
            node_images: BTreeMap::new(),
            pod_seq: 0,
            node_seq: 0,
            node_ips: [0; NODES.len()],
            config,
        };
        let history_rv = sim.rv;
        for i in 0..sim.replica_sets.len() {
            sim.replica_sets[i].meta.resource_version = sim.bump_rv();
        }
        sim.rollout.meta.resource_version = sim.bump_rv();
        sim.rv += 1_237;
        if let Some(bg) = sim.config.blue_green.clone() {
            // The controller put the stable hash on both Services' selectors.
            for s in &mut sim.config.services {
                if s.name == bg.active_service || s.name == bg.preview_service {
                    s.selector
                        .insert(HASH_LABEL.to_owned(), stable_hash.clone());
                }
            }
        }
        // Likewise on a canary's stableService and canaryService.
        for name in [&sim.config.stable_service, &sim.config.canary_service]
            .into_iter()
            .flatten()
            .cloned()
            .collect::<Vec<_>>()
        {
            for s in &mut sim.config.services {
                if s.name == name {
                    s.selector
                        .insert(HASH_LABEL.to_owned(), stable_hash.clone());
                }
            }
        }
        if sim.config.role_labels {
            // The controller put the stable role's labels on the stable revision's template.
            let labels = sim.role_labels(false);
            if let Some(rs) = sim.rs_mut(&stable_hash) {
                Sim::set_role(&mut rs.template, labels.as_ref());
            }
        }
        if sim.config.traffic {
            sim.seed_pods(&stable_hash, replicas, released);
            sim.seed_services(created, settled, &helm_labels);
            sim.seed_ingresses(created, &helm_labels);
            sim.seed_canary_ingress(settled, &stable_hash);
            sim.rollout.status.weights = sim.weights_value();
        }
        if sim.config.application {
            sim.seed_application(created, released);
        }
        if sim.config.flux {
            sim.seed_helm_release(created, released);
        }
        if sim.config.workload_ref.is_some() {
            sim.seed_deployment(created, settled, &stable_template);
        }
        sim.date_seeded_objects(history_rv);
        sim.initial_lists();
        sim
    }

    /// resourceVersions of the objects last written before the recording started: lower than
    /// every current one, and lower the longer ago they were written.
    fn date_seeded_objects(&mut self, base: u64) {
        let start = self.start;
        let rv_at = |at: i64, salt: u64| {
            base.saturating_sub(u64::try_from(start - at).unwrap_or(0) * 3 + salt % 3 + 1)
        };
        for (k, pod) in self.pods.iter_mut().enumerate() {
            let last = pod.ready.unwrap_or(pod.meta.creation);
            pod.meta.resource_version = rv_at(last, k as u64);
        }
        for service in &mut self.services {
            service.meta.resource_version = rv_at(service.meta.creation, 0);
        }
        for ingress in &mut self.ingresses {
            ingress.meta.resource_version = rv_at(ingress.meta.creation, 0);
        }
        for slice in &mut self.slices {
            let last = slice
                .meta
                .managed
                .last()
                .map_or(slice.meta.creation, |m| m.time);
            slice.meta.resource_version = rv_at(last, 1);
        }
        if let Some(app) = self.application.as_mut() {
            app.meta.resource_version = rv_at(app.reconciled, 2);
        }
        if let Some(hr) = self.helm_release.as_mut() {
            let last = hr.history.last().map_or(hr.meta.creation, |r| r.deployed);
            hr.meta.resource_version = rv_at(last, 1);
        }
        if let Some(d) = self.deployment.as_mut() {
            let last = d.meta.managed.last().map_or(d.meta.creation, |m| m.time);
            d.meta.resource_version = rv_at(last, 0);
        }
    }

    /// A GitOps (Argo CD) apply of the Rollout's spec with `change`. A render identical to the
    /// current spec writes nothing: Argo CD does not apply an unchanged manifest. With an
    /// Application it is one automated sync of a new commit: the Application goes OutOfSync
    /// with the sync running, the Rollout is applied, then the sync Succeeded, Synced, and one
    /// more `status.history` entry.
    pub fn render(&mut self, change: TemplateChange) {
        let mut template = self.rollout.template.clone();
        change.apply_to_template(&mut template);
        let steps = change
            .steps
            .clone()
            .unwrap_or_else(|| self.rollout.steps.clone());
        if template == self.rollout.template && steps == self.rollout.steps {
            return;
        }
        // What the render changes besides the image: with a two-source Application, a commit
        // to its values repository.
        let mut rest = change.clone();
        let image = rest.image.take();
        let mut without_image = self.rollout.template.clone();
        rest.apply_to_template(&mut without_image);
        let values_changed = without_image != self.rollout.template || steps != self.rollout.steps;
        self.application_sync_started(image.as_deref(), values_changed);
        self.helm_upgrade_started(&template);
        let template_changed = template != self.rollout.template;
        let steps_changed = steps != self.rollout.steps;
        self.rollout.template = template;
        self.rollout.steps = steps;
        // With a `workloadRef`, the template is the Deployment's: the render writes it there,
        // and the controller notes the Deployment's generation on the Rollout.
        if self.deployment.is_some() && template_changed {
            let template = self.rollout.template.clone();
            self.render_deployment(&template);
        }
        if self.deployment.is_none() || steps_changed {
            self.rollout.meta.generation = Some(self.rollout.generation() + 1);
            let (writer, write) = gitops_writer(&self.config);
            self.touch_rollout(writer, write, None, fields::argocd_rollout());
            self.write_rollout(Op::Modified);
        }
        self.application_sync_finished();
        self.helm_upgrade_finished();
    }

    /// Advances simulated time by `seconds`, running at each second the rollouts controller,
    /// the ReplicaSet controller, and (with traffic) the kubelets and the endpointslice
    /// controller, then (with an Application) Argo CD's refresh.
    pub fn run_for(&mut self, seconds: u32) {
        for _ in 0..seconds {
            self.now += 1;
            self.sync_rollout();
            self.sync_replica_sets();
            self.sync_deployment();
            if self.config.traffic {
                self.run_kubelets();
                self.sync_endpoint_slices();
            }
            if self.application.is_some() {
                self.refresh_application();
            }
            if let Some(ttl) = self.config.event_ttl {
                self.expire_events(ttl);
            }
        }
    }

    /// Deletes the Events last seen `ttl` seconds ago or earlier, as the API server does
    /// (`events` is in the order they were last seen).
    fn expire_events(&mut self, ttl: u32) {
        let deadline = self.now - i64::from(ttl);
        while self.events.first().is_some_and(|e| e.last <= deadline) {
            let event = self.events.remove(0);
            let object = json::to_bytes(&event.to_value());
            let namespace = self.config.namespace.clone();
            self.push_deleted(namespace, Kind::Event, event.meta, object);
        }
    }

    /// Moves `tag` (a `repository:tag` reference) to `digest` (64 hex digits) in the registry:
    /// nodes that pull the tag from now on run those bytes; nodes that pulled it before keep
    /// what they have (`imagePullPolicy: IfNotPresent`).
    pub fn move_tag(&mut self, tag: &str, digest: &str) {
        self.registry.insert(tag.to_owned(), digest.to_owned());
    }

    /// Runs second by second until `done` holds or `max_seconds` have passed; returns whether
    /// `done` held.
    pub fn run_until(&mut self, max_seconds: u32, done: impl Fn(&Sim) -> bool) -> bool {
        for _ in 0..max_seconds {
            if done(self) {
                return true;
            }
            self.run_for(1);
        }
        done(self)
    }

    /// Runs until `seconds` have passed since the start (nothing when already past).
    pub fn run_until_elapsed(&mut self, seconds: u32) {
        let target = self.start + i64::from(seconds);
        let remaining = u32::try_from(target - self.now).unwrap_or(0);
        self.run_for(remaining);
    }

    /// `kubectl argo rollouts promote`: a status patch by manager `kubectl-argo-rollouts` that
    /// clears `pauseConditions` or, when there are none, moves `currentStepIndex` one step on.
    pub fn promote(&mut self) {
        let len = self.steps_len();
        let mut status = self.rollout.status.clone();
        if !status.pause_conditions.is_empty() {
            status.pause_conditions.clear();
        } else if len > 0 {
            let index = status.current_step_index.unwrap_or(0);
            status.current_step_index = Some(if index < len { index + 1 } else { index });
        }
        if status == self.rollout.status {
            return;
        }
        self.rollout.status = status;
        self.touch_rollout(
            manager::KUBECTL_ROLLOUTS,
            "Update",
            Some("status"),
            fields::kubectl_rollouts(self.rollout.status.abort),
        );
        self.write_rollout(Op::Modified);
    }

    /// `kubectl argo rollouts abort`: a status patch `{"status":{"abort":true}}`; the controller
    /// sets `abortedAt` and rolls back to the stable ReplicaSet.
    pub fn abort(&mut self) {
        if self.rollout.status.abort {
            return;
        }
        self.rollout.status.abort = true;
        self.touch_rollout(
            manager::KUBECTL_ROLLOUTS,
            "Update",
            Some("status"),
            fields::kubectl_rollouts(true),
        );
        self.write_rollout(Op::Modified);
    }

    /// `kubectl patch rollout --subresource=status` by manager `kubectl-patch`: sets
    /// `status.currentStepIndex` only; the generation does not change and the controller does
    /// not validate the index.
    pub fn patch_step_index(&mut self, index: u32) {
        if self.rollout.status.current_step_index == Some(index) {
            return;
        }
        self.rollout.status.current_step_index = Some(index);
        self.touch_rollout(
            manager::KUBECTL_PATCH,
            "Update",
            Some("status"),
            fields::kubectl_patch(),
        );
        self.write_rollout(Op::Modified);
    }

    /// The controller is upgraded to a version whose pod-template-hash function differs
    /// (upstream issues #4696, #1356): from the next sync on, identical templates hash
    /// differently and the controller starts a new ReplicaSet and a canary.
    pub fn upgrade_controller(&mut self) {
        self.hash_fn = HashFunction::Upgraded;
    }

    /// Turns on (or off) the model of the upstream bug: when a re-render replaces an in-progress
    /// canary ReplicaSet, the controller sets its `scale-down-deadline` annotation to `""` and
    /// never scales it down.
    pub fn leak_replaced_canary(&mut self, on: bool) {
        self.leak = on;
    }

    /// The current simulated time (whole seconds).
    pub fn now(&self) -> Timestamp {
        Timestamp::from_unix_seconds(self.now)
    }

    /// Seconds since the start of the simulation.
    pub fn elapsed(&self) -> u32 {
        u32::try_from(self.now - self.start).unwrap_or(0)
    }

    /// `status.phase` of the Rollout.
    pub fn phase(&self) -> &str {
        &self.rollout.status.phase
    }

    /// `status.currentStepIndex` (absent reads as 0).
    pub fn current_step_index(&self) -> u32 {
        self.rollout.status.current_step_index.unwrap_or(0)
    }

    /// `status.currentPodHash`.
    pub fn current_pod_hash(&self) -> &str {
        &self.rollout.status.current_pod_hash
    }

    /// `status.stableRS`.
    pub fn stable_rs(&self) -> &str {
        &self.rollout.status.stable_rs
    }

    /// Seconds since the start at which the current canary pause began, if paused.
    pub fn paused_since(&self) -> Option<u32> {
        self.rollout
            .status
            .pause_conditions
            .first()
            .and_then(|p| u32::try_from(p.start_time - self.start).ok())
    }

    /// The hash the controller (as currently upgraded) gives the Rollout's current template.
    pub fn pod_template_hash(&self) -> String {
        self.hash_fn.pod_template_hash(&self.rollout.template, None)
    }

    /// `spec.replicas` of each ReplicaSet by pod template hash.
    pub fn replica_set_replicas(&self) -> BTreeMap<String, u32> {
        self.replica_sets
            .iter()
            .map(|rs| (rs.hash.clone(), u32::try_from(rs.replicas).unwrap_or(0)))
            .collect()
    }

    /// The Rollout as the API server would serve it now.
    pub fn rollout_object(&self) -> Value {
        self.rollout.to_value()
    }

    /// How many records the simulation has written so far.
    pub fn records_len(&self) -> usize {
        self.records.len()
    }

    /// Ends the simulation: the header and records of a recording named `name`.
    pub fn finish(self, name: &str) -> Recording {
        let mut namespaces = vec![self.config.namespace.clone()];
        if self.config.application {
            namespaces.push(ARGOCD_NAMESPACE.to_owned());
        }
        if self.config.flux {
            namespaces.push(crate::flux::FLUX_NAMESPACE.to_owned());
        }
        let kinds = self.recorded_kinds();
        Recording::new(
            name,
            namespaces,
            kinds,
            (self.start, self.now),
            self.records,
        )
    }

    /// The kinds the simulated recorder watches, in the order it lists them.
    fn recorded_kinds(&self) -> Vec<Kind> {
        let deployments = self
            .deployment
            .is_some()
            .then(|| rf_format::api::DEPLOYMENT.newest());
        let ingresses = (!self.ingresses.is_empty()).then(|| rf_format::api::INGRESS.newest());
        let helm_releases = self
            .config
            .flux
            .then(|| rf_format::api::HELM_RELEASE.newest());
        Kind::KNOWN
            .into_iter()
            .filter(|k| match k {
                Kind::Service | Kind::EndpointSlice | Kind::Pod => self.config.traffic,
                Kind::Application => self.config.application,
                _ => true,
            })
            .chain(deployments)
            .chain(ingresses)
            .chain(helm_releases)
            .collect()
    }

    pub(crate) fn steps_len(&self) -> u32 {
        u32::try_from(self.rollout.steps.len()).unwrap_or(u32::MAX)
    }

    pub(crate) fn step(&self, index: u32) -> Option<Step> {
        usize::try_from(index)
            .ok()
            .and_then(|i| self.rollout.steps.get(i))
            .copied()
    }

    pub(crate) fn rs(&self, hash: &str) -> Option<&ReplicaSet> {
        self.replica_sets.iter().find(|rs| rs.hash == hash)
    }

    pub(crate) fn rs_mut(&mut self, hash: &str) -> Option<&mut ReplicaSet> {
        self.replica_sets.iter_mut().find(|rs| rs.hash == hash)
    }

    // ---- writes and records ------------------------------------------------------------

    /// The observed time of the next record: the current second plus 1 ms per earlier record
    /// in the same second.
    pub(crate) fn next_stamp(&mut self) -> Timestamp {
        if self.stamp_second != self.now {
            self.stamp_second = self.now;
            self.stamp_count = 0;
        }
        let at = self.now * NANOS_PER_SECOND + self.stamp_count * NANOS_PER_MILLI;
        self.stamp_count += 1;
        Timestamp(at)
    }

    /// The next cluster-wide resourceVersion (other namespaces' writes leave gaps).
    pub(crate) fn bump_rv(&mut self) -> u64 {
        self.rv += 1 + self.rv_gaps.next_u64() % 4;
        self.rv
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push(
        &mut self,
        at: Timestamp,
        kind: Kind,
        op: Op,
        name: String,
        uid: String,
        resource_version: String,
        object: Vec<u8>,
    ) {
        let namespace = self.config.namespace.clone();
        self.push_in(namespace, at, kind, op, name, uid, resource_version, object);
    }

    /// Records the watch's DELETED event of an object (`object`: its last state, `meta` its
    /// metadata) in `namespace`, stamped now.
    pub(crate) fn push_deleted(
        &mut self,
        namespace: String,
        kind: Kind,
        meta: crate::objects::Meta,
        object: Vec<u8>,
    ) {
        let at = self.next_stamp();
        self.push_in(
            namespace,
            at,
            kind,
            Op::Deleted { inferred: false },
            meta.name,
            meta.uid,
            meta.resource_version.to_string(),
            object,
        );
    }

    /// Records a watch event of an object in `namespace`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_in(
        &mut self,
        namespace: String,
        at: Timestamp,
        kind: Kind,
        op: Op,
        name: String,
        uid: String,
        resource_version: String,
        object: Vec<u8>,
    ) {
        self.seq += 1;
        self.records.push(Record {
            seq: self.seq,
            observed_at: at,
            kind,
            op,
            namespace,
            name,
            uid,
            resource_version,
            actor: None,
            object,
        });
    }

    /// The recorder's initial lists, one per kind in the order it lists them: markers carry the
    /// list's resourceVersion, every object its own.
    fn initial_lists(&mut self) {
        let rv = self.rv.to_string();
        let ns = self.config.namespace.clone();
        for kind in self.recorded_kinds() {
            type Listed = (String, String, u64, Value);
            let (namespace, objects): (String, Vec<Listed>) = match kind {
                Kind::Rollout => (
                    ns.clone(),
                    vec![listed(&self.rollout.meta, self.rollout.to_value())],
                ),
                Kind::ReplicaSet => (
                    ns.clone(),
                    self.replica_sets
                        .iter()
                        .map(|rs| listed(&rs.meta, rs.to_value()))
                        .collect(),
                ),
                Kind::Service => (
                    ns.clone(),
                    self.services
                        .iter()
                        .map(|s| listed(&s.meta, s.to_value()))
                        .collect(),
                ),
                Kind::EndpointSlice => (
                    ns.clone(),
                    self.slices
                        .iter()
                        .map(|s| listed(&s.meta, s.to_value()))
                        .collect(),
                ),
                Kind::Pod => (
                    ns.clone(),
                    self.pods
                        .iter()
                        .map(|p| listed(&p.meta, p.to_value()))
                        .collect(),
                ),
                Kind::Application => {
                    let rollout = self.rollout.meta.name.clone();
                    (
                        ARGOCD_NAMESPACE.to_owned(),
                        self.application
                            .iter()
                            .map(|a| listed(&a.meta, a.to_value(&rollout)))
                            .collect(),
                    )
                }
                ref k if rf_format::api::INGRESS.is(k) => (
                    ns.clone(),
                    self.ingresses
                        .iter()
                        .map(|i| listed(&i.meta, i.to_value()))
                        .collect(),
                ),
                ref k if rf_format::api::HELM_RELEASE.is(k) => (
                    crate::flux::FLUX_NAMESPACE.to_owned(),
                    self.helm_release
                        .iter()
                        .map(|h| listed(&h.meta, h.to_value()))
                        .collect(),
                ),
                ref k if rf_format::api::DEPLOYMENT.is(k) => (
                    ns.clone(),
                    self.deployment
                        .iter()
                        .map(|d| listed(&d.meta, d.to_value()))
                        .collect(),
                ),
                _ => (ns.clone(), Vec::new()),
            };
            let at = self.next_stamp();
            self.push_in(
                namespace.clone(),
                at,
                kind.clone(),
                Op::ListBegin,
                String::new(),
                String::new(),
                rv.clone(),
                Vec::new(),
            );
            for (name, uid, object_rv, object) in objects {
                let at = self.next_stamp();
                let bytes = json::to_bytes(&object);
                self.push_in(
                    namespace.clone(),
                    at,
                    kind.clone(),
                    Op::Listed,
                    name,
                    uid,
                    object_rv.to_string(),
                    bytes,
                );
            }
            let at = self.next_stamp();
            self.push_in(
                namespace,
                at,
                kind,
                Op::ListEnd,
                String::new(),
                String::new(),
                rv.clone(),
                Vec::new(),
            );
        }
    }

    /// Records a write of the Rollout: a new resourceVersion and a watch event.
    pub(crate) fn write_rollout(&mut self, op: Op) {
        self.rollout.meta.resource_version = self.bump_rv();
        let at = self.next_stamp();
        let object = json::to_bytes(&self.rollout.to_value());
        let meta = &self.rollout.meta;
        let (name, uid, rv) = (
            meta.name.clone(),
            meta.uid.clone(),
            meta.resource_version.to_string(),
        );
        self.push(at, Kind::Rollout, op, name, uid, rv, object);
    }

    /// Records a write of the ReplicaSet with `hash`.
    pub(crate) fn write_replica_set(&mut self, hash: &str, op: Op) {
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let Some(rs) = self.rs_mut(hash) else {
            return;
        };
        rs.meta.resource_version = rv;
        let object = json::to_bytes(&rs.to_value());
        let (name, uid) = (rs.meta.name.clone(), rs.meta.uid.clone());
        self.push(at, Kind::ReplicaSet, op, name, uid, rv.to_string(), object);
    }

    /// Deletes the ReplicaSet with `hash` and records the watch's DELETED event.
    pub(crate) fn delete_replica_set(&mut self, hash: &str) {
        let Some(index) = self.replica_sets.iter().position(|rs| rs.hash == hash) else {
            return;
        };
        let mut rs = self.replica_sets.remove(index);
        rs.meta.resource_version = self.bump_rv();
        let object = json::to_bytes(&rs.to_value());
        let namespace = self.config.namespace.clone();
        self.push_deleted(namespace, Kind::ReplicaSet, rs.meta, object);
    }

    /// Updates the `managedFields` entry of a manager's write to the Rollout.
    pub(crate) fn touch_rollout(
        &mut self,
        manager: &'static str,
        operation: &'static str,
        subresource: Option<&'static str>,
        fields: Value,
    ) {
        let time = self.now;
        self.rollout.meta.touch(ManagedField {
            manager,
            operation,
            subresource,
            api_version: ROLLOUT_API,
            time,
            fields,
        });
    }

    /// Updates the `managedFields` entry of a manager's write to a ReplicaSet.
    pub(crate) fn touch_replica_set(
        &mut self,
        hash: &str,
        manager: &'static str,
        subresource: Option<&'static str>,
        fields: Value,
    ) {
        let time = self.now;
        if let Some(rs) = self.rs_mut(hash) {
            rs.meta.touch(ManagedField {
                manager,
                operation: "Update",
                subresource,
                api_version: APPS_API,
                time,
                fields,
            });
        }
    }

    /// Emits a Kubernetes Event about the Rollout, as client-go's recorder does: an identical
    /// event (same type, reason and message) seen before is updated (`count` + 1) instead.
    pub(crate) fn record_event(&mut self, warning: bool, reason: &'static str, message: String) {
        let now = self.now;
        if let Some(index) = self
            .events
            .iter()
            .position(|e| e.warning == warning && e.reason == reason && e.message == message)
        {
            let rv = self.bump_rv();
            let at = self.next_stamp();
            let event = &mut self.events[index];
            event.count += 1;
            event.last = now;
            event.meta.resource_version = rv;
            let object = json::to_bytes(&event.to_value());
            let (name, uid) = (event.meta.name.clone(), event.meta.uid.clone());
            // Kept in the order they were last seen, the order they expire in.
            let event = self.events.remove(index);
            self.events.push(event);
            self.push(
                at,
                Kind::Event,
                Op::Modified,
                name,
                uid,
                rv.to_string(),
                object,
            );
            return;
        }
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let name = format!("{}.{:016x}", self.rollout.meta.name, at.as_unix_nanos());
        let mut meta = Meta::new(
            name.clone(),
            self.config.namespace.clone(),
            uid(&format!("{}/{name}/event", self.config.namespace)),
            now,
        );
        meta.resource_version = rv;
        let event = Event {
            meta,
            rollout_name: self.rollout.meta.name.clone(),
            rollout_uid: self.rollout.meta.uid.clone(),
            rollout_rv: self.rollout.meta.resource_version,
            warning,
            reason,
            message,
            first: now,
            last: now,
            count: 1,
        };
        let object = json::to_bytes(&event.to_value());
        let uid = event.meta.uid.clone();
        self.events.push(event);
        self.push(
            at,
            Kind::Event,
            Op::Added,
            name,
            uid,
            rv.to_string(),
            object,
        );
    }
}

/// Name, uid, resourceVersion and JSON of a listed object.
/// Who writes the Rollout's spec at a render, and how: helm-controller's Helm upgrade (an
/// update) under Flux, else Argo CD's sync (a client-side apply: an update, as Argo CD 3.6 does by
/// default).
fn gitops_writer(config: &SimConfig) -> (&'static str, &'static str) {
    if config.flux {
        (manager::HELM_CONTROLLER, "Update")
    } else {
        (manager::ARGOCD, "Update")
    }
}

fn listed(meta: &Meta, object: Value) -> (String, String, u64, Value) {
    (
        meta.name.clone(),
        meta.uid.clone(),
        meta.resource_version,
        object,
    )
}

/// `metadata.labels` of a pod template, as strings.
pub(crate) fn template_labels(template: &Value) -> BTreeMap<String, String> {
    template
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(|labels| {
            labels
                .iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use rf_format::{Kind, Op};

    use super::*;
    use crate::spec::NEW_IMAGE;

    fn image_release(config: SimConfig) -> Sim {
        let mut sim = Sim::new(config);
        sim.run_for(5);
        sim.render(TemplateChange::new().with_image(NEW_IMAGE));
        sim.run_until(120, |s| s.phase() == "Paused");
        sim.promote();
        sim.run_until(600, |s| s.phase() == "Healthy");
        sim.run_for(10);
        sim
    }

    #[test]
    fn a_healthy_rollout_left_alone_writes_nothing_after_the_lists() {
        let mut sim = Sim::new(SimConfig::default());
        let listed = sim.records.len();
        sim.run_for(600);
        assert_eq!(sim.records.len(), listed);
        assert_eq!(sim.phase(), "Healthy");
        assert_eq!(sim.elapsed(), 600);
    }

    #[test]
    fn without_traffic_only_rollouts_replica_sets_and_events_are_recorded() {
        let sim = image_release(SimConfig {
            traffic: false,
            ..SimConfig::default()
        });
        assert!(sim.pods.is_empty() && sim.services.is_empty() && sim.slices.is_empty());
        assert!(
            sim.records
                .iter()
                .all(|r| matches!(r.kind, Kind::Rollout | Kind::ReplicaSet | Kind::Event))
        );
        let rec = sim.finish("x");
        assert_eq!(
            rec.header.source.kinds,
            [Kind::Rollout, Kind::ReplicaSet, Kind::Event]
        );
        assert_eq!(rec.header.source.namespaces, ["payments"]);
    }

    #[test]
    fn pods_scale_with_their_replica_set_and_the_slice_follows_a_second_later() {
        let mut sim = Sim::new(SimConfig::default());
        assert_eq!(sim.pods.len(), 5);
        sim.run_for(5);
        sim.render(TemplateChange::new().with_image(NEW_IMAGE));
        sim.run_until(120, |s| s.phase() == "Paused");
        let canary = sim.current_pod_hash().to_owned();
        let of = |sim: &Sim, hash: &str| {
            sim.pods
                .iter()
                .filter(|p| p.rs_hash == hash && !p.terminating())
                .count()
        };
        assert_eq!(of(&sim, &canary), 1);
        assert_eq!(of(&sim, sim.stable_rs()), 4);
        sim.run_for(1);
        let ready: Vec<&str> = sim.slices[0]
            .endpoints
            .iter()
            .filter(|e| e.ready)
            .map(|e| e.pod.as_str())
            .collect();
        assert_eq!(ready.len(), 5);
        assert!(
            sim.pods
                .iter()
                .filter(|p| p.is_ready())
                .all(|p| ready.contains(&p.meta.name.as_str()))
        );
    }

    #[test]
    fn a_render_identical_to_the_spec_writes_nothing() {
        let mut sim = Sim::new(SimConfig::default());
        let listed = sim.records.len();
        sim.render(TemplateChange::new().with_image(crate::STABLE_IMAGE));
        sim.render(TemplateChange::new().with_steps(crate::default_steps()));
        assert_eq!(sim.records.len(), listed);
    }

    #[test]
    fn upgrade_controller_changes_the_hash_of_an_unchanged_template() {
        let mut sim = Sim::new(SimConfig::default());
        let before = sim.pod_template_hash();
        assert_eq!(before, sim.current_pod_hash());
        assert_eq!(before, pod_template_hash_of_stable());
        sim.upgrade_controller();
        assert_ne!(sim.pod_template_hash(), before);
        sim.run_for(2);
        assert_eq!(sim.current_pod_hash(), sim.pod_template_hash());
        assert_eq!(sim.current_step_index(), 0);
    }

    fn pod_template_hash_of_stable() -> String {
        let config = SimConfig::default();
        crate::pod_template_hash(
            &config.pod_template(&config.image, &config.config_checksum),
            None,
        )
    }

    #[test]
    fn replica_sets_beyond_the_revision_history_limit_are_deleted_once_scaled_down() {
        let sim = image_release(SimConfig {
            revision_history_limit: 1,
            ..SimConfig::default()
        });
        let deleted: Vec<&Record> = sim
            .records
            .iter()
            .filter(|r| r.kind == Kind::ReplicaSet && r.op == Op::Deleted { inferred: false })
            .collect();
        assert_eq!(deleted.len(), 1);
        let object: Value = serde_json::from_slice(&deleted[0].object).unwrap();
        assert_eq!(
            object["metadata"]["annotations"]["rollout.argoproj.io/revision"],
            "1"
        );
        assert_eq!(sim.replica_sets.len(), 2);
    }

    #[test]
    fn promote_at_a_pause_clears_pause_conditions_and_the_controller_moves_on() {
        let mut sim = Sim::new(SimConfig::default());
        sim.run_for(5);
        sim.render(TemplateChange::new().with_image(NEW_IMAGE));
        assert!(sim.run_until(120, |s| s.phase() == "Paused"));
        assert_eq!(sim.current_step_index(), 1);
        sim.promote();
        assert!(sim.rollout.status.pause_conditions.is_empty());
        assert!(sim.rollout.status.controller_pause);
        sim.run_for(2);
        assert_eq!(sim.current_step_index(), 2);
        assert!(!sim.rollout.status.controller_pause);
    }

    #[test]
    fn identical_events_are_counted_instead_of_created_again() {
        let mut sim = Sim::new(SimConfig::default());
        sim.record_event(false, "RolloutResumed", "Rollout is resumed".to_owned());
        sim.run_for(1);
        sim.record_event(false, "RolloutResumed", "Rollout is resumed".to_owned());
        let events: Vec<&Record> = sim
            .records
            .iter()
            .filter(|r| r.kind == Kind::Event && r.op.has_object())
            .collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].op, Op::Added);
        assert_eq!(events[1].op, Op::Modified);
        assert_eq!(events[0].name, events[1].name);
        assert!(events[0].name.starts_with("checkout-api.") && events[0].name.len() == 13 + 16);
        let object: Value = serde_json::from_slice(&events[1].object).unwrap();
        assert_eq!(object["count"], 2);
    }
}
