//! A small scripted cluster for unit tests: builds Rollout and ReplicaSet objects with the
//! fields the state machine reads and pushes them through an [`Analyzer`] as watch records.

use rf_format::{Header, Kind, Op, Record, Source, Timestamp};
use serde_json::{Value, json};

use crate::{Analyzer, Finding, Options, Report, Rule};

pub(crate) const NS: &str = "payments";
pub(crate) const NAME: &str = "checkout-api";
const T0: i64 = 1_773_493_200; // 2026-03-14T13:00:00Z

pub(crate) fn default_steps() -> Value {
    json!([{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}, {"pause": {"duration": "30s"}}])
}

/// A pod template whose image is pinned by a digest derived from `image` (as a careful team
/// deploys); see [`template_unpinned`] for a tag.
pub(crate) fn template(image: &str, checksum: &str) -> Value {
    template_unpinned(&pinned(image), checksum)
}

/// `image@sha256:<64 hex derived from image>`.
pub(crate) fn pinned(image: &str) -> String {
    format!("{image}@{}", digest(image))
}

/// A fake digest derived from `seed`.
pub(crate) fn digest(seed: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in seed.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    format!("sha256:{}", format!("{h:016x}").repeat(4))
}

/// A pod template with `image` as given.
pub(crate) fn template_unpinned(image: &str, checksum: &str) -> Value {
    json!({
        "metadata": {"labels": {"app": NAME}, "annotations": {"checksum/config": checksum}},
        "spec": {"containers": [{"name": "app", "image": image}]}
    })
}

/// A scripted rollout `payments/checkout-api`, Healthy on `stable0` at the start.
pub(crate) struct Kit {
    pub analyzer: Analyzer,
    pub found: Vec<Finding>,
    /// With `Options::conditions`: the reported conditions that stopped or hold again.
    pub changes: Vec<crate::ConditionChange>,
    seq: u64,
    t: i64,
    pub rollout: Value,
    /// Deployment `checkout-api`, once written.
    deployment: Option<Value>,
}

impl Kit {
    pub fn new() -> Self {
        Self::with_options(Options::default())
    }

    pub fn with_options(opts: Options) -> Self {
        let mut analyzer = Analyzer::new(opts);
        let header = Header::new("test", Timestamp::from_unix_seconds(T0), Source::default());
        analyzer.begin_file("test", 1, &header);
        let rollout = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
            "metadata": {"name": NAME, "namespace": NS, "uid": "uid-rollout", "generation": 1},
            "spec": {"replicas": 5, "template": template("app:1", "c0"),
                     "strategy": {"canary": {"steps": default_steps()}}},
            "status": {"currentPodHash": "stable0", "stableRS": "stable0", "currentStepIndex": 4,
                       "currentStepHash": "steps0", "phase": "Healthy", "observedGeneration": "1"}
        });
        let mut kit = Kit {
            analyzer,
            found: Vec::new(),
            changes: Vec::new(),
            seq: 0,
            t: T0,
            rollout,
            deployment: None,
        };
        kit.push(Kind::Rollout, Op::Listed, NAME, kit.rollout.clone());
        kit.replicaset("stable0", 5, template("app:1", "c0"), Op::Listed);
        kit
    }

    pub fn advance(&mut self, secs: i64) {
        self.t += secs;
    }

    fn push(&mut self, kind: Kind, op: Op, name: &str, obj: Value) {
        self.push_in(NS, kind, op, name, obj);
    }

    fn push_in(&mut self, ns: &str, kind: Kind, op: Op, name: &str, obj: Value) {
        self.seq += 1;
        self.t += 0;
        let rec = Record {
            seq: self.seq,
            observed_at: Timestamp::from_unix_seconds(self.t).plus_nanos(self.seq as i64 * 1000),
            kind,
            op,
            namespace: ns.to_owned(),
            name: name.to_owned(),
            uid: format!("uid-{name}"),
            resource_version: self.seq.to_string(),
            actor: None,
            object: serde_json::to_vec(&obj).unwrap(),
        };
        self.analyzer.push(
            &rec,
            crate::Prepared::of(&rec),
            &mut Both(&mut self.found, &mut self.changes),
        );
    }

    /// A status write by the controller (or a user, with `manager`).
    pub fn status(&mut self, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
        f(self.rollout["status"].as_object_mut().unwrap());
        self.push(Kind::Rollout, Op::Modified, NAME, self.rollout.clone());
    }

    /// A spec write (generation + 1).
    pub fn spec(&mut self, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
        f(self.rollout["spec"].as_object_mut().unwrap());
        let g = self.rollout["metadata"]["generation"].as_i64().unwrap() + 1;
        self.rollout["metadata"]["generation"] = json!(g);
        self.push(Kind::Rollout, Op::Modified, NAME, self.rollout.clone());
    }

    /// Sets the rollout's `metadata.managedFields` for its next record.
    pub fn managed_fields(&mut self, entries: Value) {
        self.rollout["metadata"]["managedFields"] = entries;
    }

    pub fn set_managed(&mut self, manager: &str, status: bool) {
        let time = crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t));
        let mut entry = json!({"manager": manager, "operation": "Update", "time": time});
        if status {
            entry["subresource"] = json!("status");
        }
        self.rollout["metadata"]["managedFields"] = json!([entry]);
    }

    pub fn replicaset(&mut self, hash: &str, replicas: i64, template: Value, op: Op) {
        let mut template = template;
        template["metadata"]["labels"]["rollouts-pod-template-hash"] = json!(hash);
        let name = format!("{NAME}-{hash}");
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "labels": {"app": NAME, "rollouts-pod-template-hash": hash},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                    "name": NAME, "uid": "uid-rollout", "controller": true}]},
            "spec": {"replicas": replicas, "template": template},
            "status": {"replicas": replicas, "readyReplicas": replicas}
        });
        self.push(Kind::ReplicaSet, op, &name, obj);
    }

    pub fn scale(&mut self, hash: &str, replicas: i64, template: Value) {
        self.replicaset(hash, replicas, template, Op::Modified);
    }

    pub fn gap(&mut self) {
        self.seq += 1;
        let rec = Record {
            seq: self.seq,
            observed_at: Timestamp::from_unix_seconds(self.t),
            kind: Kind::Rollout,
            op: Op::Gap {
                reason: "watch closed: 410 Gone".to_owned(),
            },
            namespace: NS.to_owned(),
            name: String::new(),
            uid: String::new(),
            resource_version: String::new(),
            actor: None,
            object: Vec::new(),
        };
        self.analyzer.push(
            &rec,
            crate::Prepared::of(&rec),
            &mut Both(&mut self.found, &mut self.changes),
        );
    }

    /// The controller's reaction to a new template `hash`: RS created, then status reset.
    pub fn new_revision(&mut self, hash: &str, tpl: Value) {
        self.spec(|s| {
            s.insert("template".into(), tpl.clone());
        });
        self.revision_of(hash, tpl);
    }

    /// The controller's reaction to template `tpl` (of its spec or its Deployment), `hash`:
    /// RS created, then status reset.
    fn revision_of(&mut self, hash: &str, tpl: Value) {
        self.replicaset(hash, 0, tpl.clone(), Op::Added);
        let stable = self.rollout["status"]["stableRS"].clone();
        let generation = self.rollout["metadata"]["generation"].to_string();
        let to_stable = stable == json!(hash);
        self.status(|s| {
            s.insert("currentPodHash".into(), json!(hash));
            s.insert(
                "currentStepIndex".into(),
                json!(if to_stable { 4 } else { 0 }),
            );
            s.remove("pauseConditions");
            s.remove("controllerPause");
            s.remove("abort");
            s.insert(
                "phase".into(),
                json!(if to_stable { "Healthy" } else { "Progressing" }),
            );
            s.insert("observedGeneration".into(), json!(generation));
        });
    }

    /// A live recorder's check at the kit's time (`Analyzer::live_checks`).
    pub fn live(&mut self) {
        let now = Timestamp::from_unix_seconds(self.t);
        self.analyzer
            .live_checks(now, &mut Both(&mut self.found, &mut self.changes));
    }

    pub fn step(&mut self, index: i64) {
        self.status(|s| {
            s.insert("currentStepIndex".into(), json!(index));
        });
    }

    pub fn pause(&mut self) {
        self.paused_by("CanaryPauseStep");
    }

    /// Paused by the controller for `reason`.
    fn paused_by(&mut self, reason: &str) {
        self.status(|s| {
            s.insert(
                "pauseConditions".into(),
                json!([{"reason": reason, "startTime": "2026-03-14T13:01:00Z"}]),
            );
            s.insert("controllerPause".into(), json!(true));
            s.insert("phase".into(), json!("Paused"));
        });
    }

    pub fn unpause_to(&mut self, index: i64) {
        self.status(|s| {
            s.remove("pauseConditions");
            s.remove("controllerPause");
            s.insert("phase".into(), json!("Progressing"));
            s.insert("currentStepIndex".into(), json!(index));
        });
    }

    /// Release `hash` (template `tpl`) and take it to the pause at step 1.
    pub fn release_to_pause(&mut self, hash: &str, tpl: Value) {
        self.advance(5);
        self.new_revision(hash, tpl.clone());
        self.advance(5);
        self.scale(hash, 1, tpl);
        self.step(1);
        self.advance(1);
        self.pause();
    }

    /// Makes the rollout take its template from Deployment `checkout-api` (`workloadRef`, with
    /// `scaleDown`).
    pub fn workload_ref(&mut self, scale_down: &str) {
        self.spec(|s| {
            s.remove("template");
            s.insert(
                "workloadRef".into(),
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": NAME,
                       "scaleDown": scale_down}),
            );
        });
    }

    /// Deployment `checkout-api` with `replicas` (`ready` of them ready) and `template`,
    /// written last by `manager`; its generation goes up when its spec changed.
    pub fn deployment(&mut self, replicas: i64, ready: i64, template: Value, manager: &str) {
        let spec = json!({"replicas": replicas, "template": template});
        let generation = match &self.deployment {
            Some(d) if d["spec"] == spec => d["metadata"]["generation"].as_i64().unwrap(),
            Some(d) => d["metadata"]["generation"].as_i64().unwrap() + 1,
            None => 1,
        };
        let time = crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t));
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": NAME, "namespace": NS, "uid": "uid-deployment",
                "generation": generation,
                "managedFields": [{"manager": manager, "operation": "Update", "time": time}]},
            "spec": spec,
            "status": {"replicas": replicas, "readyReplicas": ready,
                       "observedGeneration": generation}
        });
        self.deployment = Some(obj.clone());
        self.push(rf_format::api::DEPLOYMENT.newest(), Op::Modified, NAME, obj);
    }

    /// Ingress `name` sending every request to Service `service`, written last by `manager`;
    /// with `canary_weight`, the rollout's NGINX canary Ingress of that weight.
    pub fn ingress(
        &mut self,
        name: &str,
        service: &str,
        canary_weight: Option<&str>,
        manager: &str,
    ) {
        let time = crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t));
        let mut obj = json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-ing-{name}"),
                "managedFields": [{"manager": manager, "operation": "Update", "time": time}]},
            "spec": {"ingressClassName": "nginx", "rules": [{"host": "shop.example.com",
                "http": {"paths": [{"path": "/", "pathType": "Prefix",
                    "backend": {"service": {"name": service, "port": {"number": 80}}}}]}}]}
        });
        if let Some(w) = canary_weight {
            obj["metadata"]["annotations"] = json!({
                "nginx.ingress.kubernetes.io/canary": "true",
                "nginx.ingress.kubernetes.io/canary-weight": w,
            });
            obj["metadata"]["ownerReferences"] = json!([{"apiVersion": "argoproj.io/v1alpha1",
                "kind": "Rollout", "name": NAME, "uid": "uid-rollout", "controller": true}]);
        }
        self.push(rf_format::api::INGRESS.newest(), Op::Modified, name, obj);
    }

    /// A VirtualService (`istio: true`, networking.istio.io) or HTTPRoute (gateway.networking.k8s.io)
    /// `name` of spec `spec`, written by `manager`.
    pub fn router(&mut self, istio: bool, name: &str, spec: Value, manager: &str) {
        let time = crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t));
        let (api, kind) = if istio {
            (&rf_format::api::VIRTUAL_SERVICE, "VirtualService")
        } else {
            (&rf_format::api::HTTP_ROUTE, "HTTPRoute")
        };
        let obj = json!({
            "apiVersion": format!("{}/{}", api.group, api.versions[0]), "kind": kind,
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{kind}-{name}"),
                "managedFields": [{"manager": manager, "operation": "Update", "time": time}]},
            "spec": spec,
        });
        self.push(api.newest(), Op::Modified, name, obj);
    }

    /// Ingress `name` deleted.
    pub fn delete_ingress(&mut self, name: &str) {
        self.push(
            rf_format::api::INGRESS.newest(),
            Op::Deleted { inferred: false },
            name,
            json!({}),
        );
    }

    /// A render of the Deployment (template `tpl`, by Argo CD) and the controller's new
    /// revision `hash` of it.
    pub fn workload_revision(&mut self, hash: &str, tpl: Value) {
        let (replicas, ready) = self.deployment.as_ref().map_or((0, 0), |d| {
            (
                d["spec"]["replicas"].as_i64().unwrap(),
                d["status"]["readyReplicas"].as_i64().unwrap(),
            )
        });
        self.deployment(replicas, ready, tpl.clone(), "argocd-controller");
        self.revision_of(hash, tpl);
    }

    /// [`Self::release_to_pause`] of a render of the Deployment.
    pub fn workload_release_to_pause(&mut self, hash: &str, tpl: Value) {
        self.advance(5);
        self.workload_revision(hash, tpl.clone());
        self.advance(5);
        self.scale(hash, 1, tpl);
        self.step(1);
        self.advance(1);
        self.pause();
    }

    /// Makes the rollout blue-green (active Service `checkout-api`, preview
    /// `checkout-api-preview`, no auto-promotion): no steps, no step index.
    pub fn blue_green(&mut self) {
        self.spec(|s| {
            s.insert(
                "strategy".into(),
                json!({"blueGreen": {"activeService": NAME, "previewService": format!("{NAME}-preview"),
                                     "autoPromotionEnabled": false}}),
            );
        });
        self.status(|s| {
            s.remove("currentStepIndex");
        });
    }

    /// A blue-green preview paused before promotion.
    pub fn pause_before_promotion(&mut self) {
        self.paused_by("BlueGreenPause");
    }

    /// A blue-green preview `hash` promoted: the active revision, Healthy.
    pub fn promote_blue_green(&mut self, hash: &str) {
        self.status(|s| {
            s.remove("pauseConditions");
            s.remove("controllerPause");
            s.insert("stableRS".into(), json!(hash));
            s.insert("phase".into(), json!("Healthy"));
        });
    }

    pub fn rules(&self) -> Vec<Rule> {
        self.found.iter().map(|f| f.rule).collect()
    }

    /// The findings of `rule` so far.
    pub fn of_rule(&self, rule: Rule) -> Vec<&Finding> {
        self.found.iter().filter(|f| f.rule == rule).collect()
    }

    pub fn finish(self) -> Report {
        let mut a = self.analyzer;
        a.end_file(crate::FileEnd::Closed, None, None);
        a.finish()
    }
}

pub(crate) fn rules_of(report: &Report) -> Vec<Rule> {
    report.findings.iter().map(|f| f.rule).collect()
}

impl Kit {
    /// Re-sends ReplicaSet `hash` with a `scale-down-deadline` annotation.
    pub fn replicaset_with_deadline(
        &mut self,
        hash: &str,
        replicas: i64,
        template: Value,
        deadline: &str,
    ) {
        let name = format!("{NAME}-{hash}");
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "labels": {"app": NAME, "rollouts-pod-template-hash": hash},
                "annotations": {"scale-down-deadline": deadline},
                "ownerReferences": [{"apiVersion": "argoproj.io/v1alpha1", "kind": "Rollout",
                    "name": NAME, "uid": "uid-rollout", "controller": true}]},
            "spec": {"replicas": replicas, "template": template},
            "status": {"replicas": replicas, "readyReplicas": replicas}
        });
        self.push(Kind::ReplicaSet, Op::Modified, &name, obj);
    }
}

impl Kit {
    /// The current time of the script.
    pub fn now(&self) -> Timestamp {
        Timestamp::from_unix_seconds(self.t)
    }

    /// A Service (added or changed) with `selector`.
    pub fn service(&mut self, name: &str, selector: Value) {
        let obj = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-svc-{name}")},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": [{"port": 80}]}
        });
        self.push(Kind::Service, Op::Modified, name, obj);
    }

    /// Service `name` with `selector`, written last by field manager `writer` (which owns the
    /// selector in its managed fields, as the API server says of an atomic map).
    pub fn service_by(&mut self, name: &str, selector: Value, writer: &str) {
        let other = if writer == "rollouts-controller" {
            "argocd-controller"
        } else {
            "rollouts-controller"
        };
        let obj = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-svc-{name}"),
                         "managedFields": [
                             {"manager": other, "operation": "Update",
                              "fieldsV1": {"f:spec": {"f:ports": {}}}},
                             {"manager": writer, "operation": "Update",
                              "fieldsV1": {"f:spec": {"f:selector": {}}}}
                         ]},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": [{"port": 80}]}
        });
        self.push(Kind::Service, Op::Modified, name, obj);
    }

    /// The one EndpointSlice of `service`, listing `pods` (name, ready).
    pub fn slice(&mut self, service: &str, pods: &[(&str, bool)]) {
        let name = format!("{service}-abcde");
        let endpoints: Vec<Value> = pods
            .iter()
            .enumerate()
            .map(|(i, (pod, ready))| {
                json!({"addresses": [format!("10.0.0.{i}")],
                       "conditions": {"ready": ready, "serving": ready, "terminating": false},
                       "targetRef": {"kind": "Pod", "namespace": NS, "name": pod}})
            })
            .collect();
        let obj = json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": name, "namespace": NS,
                         "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": endpoints, "ports": [{"port": 8080}]
        });
        self.push(Kind::EndpointSlice, Op::Modified, &name, obj);
    }

    /// A pod `<rollout>-<hash>-<suffix>` of revision `hash`, running `image` as `image_id`.
    pub fn pod(&mut self, hash: &str, suffix: &str, ready: bool, image: &str, image_id: &str) {
        self.pod_with(hash, suffix, ready, image, image_id, json!({}));
    }

    /// A ready pod like [`Self::pod`]'s with the labels of `labels` too.
    pub fn pod_labelled(
        &mut self,
        hash: &str,
        suffix: &str,
        image: &str,
        image_id: &str,
        labels: Value,
    ) {
        self.pod_with(hash, suffix, true, image, image_id, labels);
    }

    fn pod_with(
        &mut self,
        hash: &str,
        suffix: &str,
        ready: bool,
        image: &str,
        image_id: &str,
        labels: Value,
    ) {
        let name = format!("{NAME}-{hash}-{suffix}");
        let mut obj = self.pod_json(
            &name,
            &format!("{NAME}-{hash}"),
            json!({"app": NAME, "rollouts-pod-template-hash": hash}),
            ready,
            image,
            image_id,
        );
        for (k, v) in labels.as_object().into_iter().flatten() {
            obj["metadata"]["labels"][k] = v.clone();
        }
        self.push(Kind::Pod, Op::Modified, &name, obj);
    }

    /// A ready pod of ReplicaSet `replicaset` (an Experiment's) labelled with hash `hash`, as
    /// the controller labels an experiment's pods of the rollout's template.
    pub fn experiment_pod(&mut self, replicaset: &str, hash: &str, image: &str, image_id: &str) {
        let name = format!("{replicaset}-x1");
        let labels = json!({"app": NAME, "rollouts-pod-template-hash": hash});
        let obj = self.pod_json(&name, replicaset, labels, true, image, image_id);
        self.push(Kind::Pod, Op::Modified, &name, obj);
    }

    /// Plain Deployment `name` (no rollout names it) with `spec`, at `generation`.
    pub fn plain_deployment(&mut self, name: &str, generation: i64, spec: Value) {
        self.plain_deployment_with(name, generation, spec, json!({}), json!({}));
    }

    /// [`plain_deployment`](Self::plain_deployment) with `labels` and `annotations`.
    pub fn plain_deployment_with(
        &mut self,
        name: &str,
        generation: i64,
        spec: Value,
        labels: Value,
        annotations: Value,
    ) {
        let obj = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "generation": generation, "labels": labels, "annotations": annotations,
                "managedFields": [{"manager": "argocd-controller", "operation": "Update",
                    "time": crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t))}]},
            "spec": spec,
            "status": {"observedGeneration": generation}
        });
        self.push(rf_format::api::DEPLOYMENT.newest(), Op::Modified, name, obj);
    }

    /// ReplicaSet `<deployment>-<hash>` of plain Deployment `deployment`, and its ready pod
    /// `<rs>-<suffix>` running `image` pulled as `image_id`.
    pub fn deployment_pod(
        &mut self,
        deployment: &str,
        hash: &str,
        suffix: &str,
        image: &str,
        image_id: &str,
    ) {
        let rs = format!("{deployment}-{hash}");
        let rs_obj = json!({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs, "namespace": NS, "uid": format!("uid-{rs}"),
                "labels": {"app": deployment, "pod-template-hash": hash},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                    "name": deployment, "uid": format!("uid-{deployment}"), "controller": true}]},
            "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": deployment}},
                "spec": {"containers": [{"name": "app", "image": image}]}}},
            "status": {"replicas": 1, "readyReplicas": 1}
        });
        self.push(Kind::ReplicaSet, Op::Modified, &rs, rs_obj);
        let name = format!("{rs}-{suffix}");
        let labels = json!({"app": deployment, "pod-template-hash": hash});
        let obj = self.pod_json(&name, &rs, labels, true, image, image_id);
        self.push(Kind::Pod, Op::Modified, &name, obj);
    }

    /// Sets label `key` on the rollout (written with its next record).
    pub fn label(&mut self, key: &str, value: &str) {
        self.rollout["metadata"]["labels"][key] = json!(value);
    }

    /// Flux HelmRelease `name` (in namespace flux-system) with `status`.
    pub fn helm_release(&mut self, name: &str, status: Value) {
        self.flux(rf_format::api::HELM_RELEASE, name, status);
    }

    /// Flux Kustomization `name` (in namespace flux-system) with `status`.
    pub fn kustomization(&mut self, name: &str, status: Value) {
        self.flux(rf_format::api::KUSTOMIZATION, name, status);
    }

    fn flux(&mut self, api: rf_format::api::ApiNames, name: &str, status: Value) {
        self.seq += 1;
        let rec = Record {
            seq: self.seq,
            observed_at: Timestamp::from_unix_seconds(self.t).plus_nanos(self.seq as i64 * 1000),
            kind: api.newest(),
            op: Op::Modified,
            namespace: "flux-system".to_owned(),
            name: name.to_owned(),
            uid: format!("uid-flux-{name}"),
            resource_version: self.seq.to_string(),
            actor: None,
            object: serde_json::to_vec(&json!({
                "apiVersion": api.newest().api_version(), "kind": api.kind,
                "metadata": {"name": name, "namespace": "flux-system"},
                "status": status
            }))
            .unwrap(),
        };
        self.analyzer.push(
            &rec,
            crate::Prepared::of(&rec),
            &mut Both(&mut self.found, &mut self.changes),
        );
    }

    /// AnalysisRun `name` with `object` (metadata name and namespace filled in).
    pub fn analysis_run(&mut self, name: &str, mut object: Value) {
        object["apiVersion"] = json!("argoproj.io/v1alpha1");
        object["kind"] = json!("AnalysisRun");
        object["metadata"]["name"] = json!(name);
        object["metadata"]["namespace"] = json!(NS);
        self.push(
            rf_format::api::ANALYSIS_RUN.newest(),
            Op::Modified,
            name,
            object,
        );
    }

    /// Pod `name` of ReplicaSet `replicaset` with `labels`, its container `app` running
    /// `image` pulled as `image_id`.
    fn pod_json(
        &self,
        name: &str,
        replicaset: &str,
        labels: Value,
        ready: bool,
        image: &str,
        image_id: &str,
    ) -> Value {
        let since = crate::base::time::rfc3339(self.now());
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                "labels": labels,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": replicaset, "uid": format!("uid-{replicaset}"), "controller": true}]},
            "spec": {"containers": [{"name": "app", "image": image}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                                "lastTransitionTime": since}],
                "containerStatuses": [{"name": "app", "image": image,
                    "imageID": format!("registry.example.com/app@{image_id}"), "ready": ready}]}
        })
    }

    /// A pod of revision `hash` that is not Ready, its container `app` (running `image`) with
    /// `state` as its `status.containerStatuses[0].state`, and `conditions` added to its own.
    pub fn troubled_pod(
        &mut self,
        hash: &str,
        suffix: &str,
        image: &str,
        state: Value,
        conditions: Value,
    ) {
        let name = format!("{NAME}-{hash}-{suffix}");
        let mut obj = self.pod_json(
            &name,
            &format!("{NAME}-{hash}"),
            json!({"app": NAME, "rollouts-pod-template-hash": hash}),
            false,
            image,
            "",
        );
        obj["status"]["containerStatuses"][0]["state"] = state;
        obj["status"]["containerStatuses"][0]["imageID"] = json!("");
        for c in conditions.as_array().into_iter().flatten() {
            obj["status"]["conditions"]
                .as_array_mut()
                .unwrap()
                .push(c.clone());
        }
        self.push(Kind::Pod, Op::Modified, &name, obj);
    }

    /// An Event of the first list (`Listed`) named `name`, about pod `pod`, with `reason`
    /// and `message`, as the kubelet writes one.
    pub fn listed_pod_event(&mut self, name: &str, pod: &str, reason: &str, message: &str) {
        let time = crate::base::time::rfc3339(self.now());
        let obj = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}")},
            "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod},
            "reason": reason, "message": message, "type": "Warning", "count": 3,
            "firstTimestamp": time, "lastTimestamp": time,
            "source": {"component": "kubelet"}
        });
        self.push(Kind::Event, Op::Listed, name, obj);
    }

    /// An Event of the first list of namespace `argocd` named `name`, about the Application
    /// `checkout-api`, as Argo CD's application controller writes one: `reason`, `type`,
    /// `message`, `count` times, last `ago` seconds before now (returned).
    pub fn listed_app_event(
        &mut self,
        name: &str,
        (reason, severity): (&str, &str),
        message: &str,
        count: i64,
        ago: i64,
    ) -> String {
        let time = crate::base::time::rfc3339(Timestamp::from_unix_seconds(self.t - ago));
        let obj = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": "argocd", "uid": format!("uid-{name}")},
            "involvedObject": {"kind": "Application", "namespace": "argocd", "name": NAME,
                "apiVersion": "argoproj.io/v1alpha1"},
            "reason": reason, "message": message, "type": severity, "count": count,
            "firstTimestamp": time, "lastTimestamp": time,
            "source": {"component": "argocd-application-controller"}
        });
        self.push_in("argocd", Kind::Event, Op::Listed, name, obj);
        time
    }

    /// Deletes pod `name`.
    pub fn delete_pod_named(&mut self, name: &str) {
        self.push(Kind::Pod, Op::Deleted { inferred: false }, name, json!({}));
    }

    /// Deletes a pod.
    pub fn delete_pod(&mut self, hash: &str, suffix: &str) {
        let name = format!("{NAME}-{hash}-{suffix}");
        self.push(Kind::Pod, Op::Deleted { inferred: false }, &name, json!({}));
    }

    /// The Argo CD Application `checkout-api` managing the rollout, with `history` as
    /// (revision, seconds since the script's start).
    pub fn app(&mut self, sync: &str, health: &str, history: &[(&str, i64)]) {
        self.app_listing(sync, health, history, true);
    }

    /// [`app`](Self::app), listing the rollout in its `status.resources` or not (an app that
    /// manages it only by the rollout's tracking id).
    pub fn app_listing(&mut self, sync: &str, health: &str, history: &[(&str, i64)], listed: bool) {
        self.app_with(sync, health, history, listed, Value::Null);
    }

    /// A Synced and Healthy Application whose last operation is self-heal attempt `attempts`,
    /// limited to `resources` (`[{"kind": .., "name": ..}]`).
    pub fn app_healing(&mut self, attempts: i64, resources: Value) {
        let op = json!({"operation": {"initiatedBy": {"automated": true},
            "sync": {"autoHealAttemptsCount": attempts, "resources": resources}},
            "phase": "Succeeded"});
        self.app_with("Synced", "Healthy", &[("r1", 0)], true, op);
    }

    fn app_with(
        &mut self,
        sync: &str,
        health: &str,
        history: &[(&str, i64)],
        listed: bool,
        operation_state: Value,
    ) {
        let history: Vec<Value> = history
            .iter()
            .enumerate()
            .map(|(i, (rev, at))| {
                json!({"id": i, "revision": rev,
                       "deployedAt": crate::base::time::rfc3339(Timestamp::from_unix_seconds(T0 + at))})
            })
            .collect();
        let obj = json!({
            "apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": NAME, "namespace": "argocd"},
            "status": {"sync": {"status": sync, "revision": "abc"}, "health": {"status": health},
                "history": history,
                "resources": if listed {
                    json!([{"group": "argoproj.io", "kind": "Rollout", "namespace": NS,
                            "name": NAME, "status": sync, "health": {"status": health}}])
                } else {
                    json!([])
                },
                "operationState": operation_state}
        });
        self.seq += 1;
        let rec = Record {
            seq: self.seq,
            observed_at: Timestamp::from_unix_seconds(self.t).plus_nanos(self.seq as i64 * 1000),
            kind: Kind::Application,
            op: Op::Modified,
            namespace: "argocd".to_owned(),
            name: NAME.to_owned(),
            uid: "uid-app".to_owned(),
            resource_version: self.seq.to_string(),
            actor: None,
            object: serde_json::to_vec(&obj).unwrap(),
        };
        self.analyzer.push(
            &rec,
            crate::Prepared::of(&rec),
            &mut Both(&mut self.found, &mut self.changes),
        );
    }
}

/// The kit's sink: findings and condition changes.
struct Both<'a>(&'a mut Vec<Finding>, &'a mut Vec<crate::ConditionChange>);

impl crate::FindingSink for Both<'_> {
    fn finding(&mut self, finding: &Finding) {
        self.0.push(finding.clone());
    }

    fn condition(&mut self, change: &crate::ConditionChange) {
        self.1.push(change.clone());
    }
}
