//! Pods of the ReplicaSets, as the ReplicaSet controller creates and deletes them, the scheduler
//! binds them and the kubelet starts them, makes them ready and reports the digest it pulled.
//!
//! The ReplicaSet controller model decides when (one more pod ready every 3 s, scale-down at
//! once); this module writes the pods that make its `status` true:
//! - create: `Added` (Pending, unscheduled), then `Modified` by the scheduler (`spec.nodeName`,
//!   `PodScheduled`) in the same second;
//! - 1 s later the kubelet starts it: `Running`, `podIP`, `containerStatuses[]` with `imageID`,
//!   `Ready` False;
//! - when the ReplicaSet controller counts it ready: `Ready` True (the oldest unready pod first);
//! - scale-down (unready pods first, newest first, then the most recently ready): `Modified` with
//!   `deletionTimestamp` (now + the 30 s grace period) and `Ready` False, and 2 s later `Deleted`.

use rf_format::{Kind, Op};
use serde_json::{Map, Value, json};

use crate::calendar::rfc3339;
use crate::hash::{fake_sha256, name_suffix, uid};
use crate::objects::{APPS_API, ManagedField, Meta, Owner, manager};
use crate::sim::{Sim, template_labels};
use crate::spec::{image_digest, split_image};

/// `terminationGracePeriodSeconds` of every pod.
const GRACE_PERIOD: i64 = 30;

/// Seconds from a pod's deletion request to its containers having stopped (it is then gone).
const TERMINATION_SECONDS: i64 = 2;

/// The cluster's nodes (name, host IP); pods are scheduled round robin.
pub(crate) const NODES: [(&str, &str); 3] = [
    ("ip-10-0-1-23.eu-west-1.compute.internal", "10.0.1.23"),
    ("ip-10-0-2-117.eu-west-1.compute.internal", "10.0.2.117"),
    ("ip-10-0-3-54.eu-west-1.compute.internal", "10.0.3.54"),
];

/// A `v1` Pod of one of the Rollout's ReplicaSets.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pod {
    pub meta: Meta,
    /// `rollouts-pod-template-hash` of its ReplicaSet.
    pub rs_hash: String,
    /// `spec.containers`.
    pub containers: Value,
    /// Name and image of the application container.
    pub container: (String, String),
    /// `imagePullPolicy: Always`.
    pub pull_always: bool,
    /// Index in [`NODES`], once scheduled.
    pub node: Option<usize>,
    /// `status.podIP` (assigned when the sandbox starts).
    pub ip: String,
    /// When the container started (phase Running).
    pub started: Option<i64>,
    /// Since when `Ready` is True.
    pub ready: Option<i64>,
    /// The last transition of `Ready` to False.
    pub not_ready_since: i64,
    /// `containerStatuses[0].imageID`: `repository@sha256:<digest>`.
    pub image_id: String,
    /// `containerStatuses[0].containerID`.
    pub container_id: String,
}

impl Pod {
    /// `Ready` True and not being deleted.
    pub(crate) fn is_ready(&self) -> bool {
        self.ready.is_some() && self.meta.deletion.is_none()
    }

    pub(crate) fn terminating(&self) -> bool {
        self.meta.deletion.is_some()
    }

    /// When its deletion was requested.
    fn deletion_requested(&self) -> Option<i64> {
        self.meta.deletion.map(|(at, grace)| at - grace)
    }

    pub(crate) fn labels(&self) -> &std::collections::BTreeMap<String, String> {
        &self.meta.labels
    }

    pub(crate) fn node_name(&self) -> Option<&'static str> {
        self.node.map(|n| NODES[n].0)
    }

    pub(crate) fn to_value(&self) -> Value {
        let mut spec = Map::new();
        spec.insert("containers".to_owned(), self.containers.clone());
        for (key, value) in [
            ("restartPolicy", json!("Always")),
            ("terminationGracePeriodSeconds", json!(GRACE_PERIOD)),
            ("dnsPolicy", json!("ClusterFirst")),
            ("serviceAccountName", json!("default")),
            ("serviceAccount", json!("default")),
            ("securityContext", json!({})),
            ("schedulerName", json!("default-scheduler")),
            ("enableServiceLinks", json!(true)),
            ("priority", json!(0)),
            ("preemptionPolicy", json!("PreemptLowerPriority")),
        ] {
            spec.insert(key.to_owned(), value);
        }
        if let Some(node) = self.node_name() {
            spec.insert("nodeName".to_owned(), json!(node));
        }
        let mut status = Map::new();
        let phase = if self.started.is_some() {
            "Running"
        } else {
            "Pending"
        };
        status.insert("phase".to_owned(), json!(phase));
        status.insert("qosClass".to_owned(), json!("Burstable"));
        let condition = |kind: &str, ok: bool, at: i64| {
            let mut c = json!({
                "type": kind,
                "status": if ok { "True" } else { "False" },
                "lastProbeTime": null,
                "lastTransitionTime": rfc3339(at),
            });
            if !ok {
                c["reason"] = json!("ContainersNotReady");
                c["message"] = json!(format!(
                    "containers with unready status: [{}]",
                    self.container.0
                ));
            }
            c
        };
        let scheduled = json!({
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": null,
            "lastTransitionTime": rfc3339(self.meta.creation),
        });
        match (self.node, self.started) {
            (Some(node), Some(started)) => {
                let ready = self.is_ready();
                let ready_at = if ready {
                    self.ready.unwrap_or(started)
                } else {
                    self.not_ready_since
                };
                status.insert(
                    "conditions".to_owned(),
                    json!([
                        {
                            "type": "PodReadyToStartContainers",
                            "status": "True",
                            "lastProbeTime": null,
                            "lastTransitionTime": rfc3339(started),
                        },
                        {
                            "type": "Initialized",
                            "status": "True",
                            "lastProbeTime": null,
                            "lastTransitionTime": rfc3339(self.meta.creation),
                        },
                        condition("Ready", ready, ready_at),
                        condition("ContainersReady", ready, ready_at),
                        scheduled,
                    ]),
                );
                let host_ip = NODES[node].1;
                status.insert("hostIP".to_owned(), json!(host_ip));
                status.insert("hostIPs".to_owned(), json!([{ "ip": host_ip }]));
                status.insert("podIP".to_owned(), json!(self.ip));
                status.insert("podIPs".to_owned(), json!([{ "ip": self.ip }]));
                status.insert("startTime".to_owned(), json!(rfc3339(self.meta.creation)));
                status.insert(
                    "containerStatuses".to_owned(),
                    json!([{
                        "name": self.container.0,
                        "image": self.container.1,
                        "imageID": self.image_id,
                        "containerID": self.container_id,
                        "ready": ready,
                        "started": true,
                        "restartCount": 0,
                        "state": { "running": { "startedAt": rfc3339(started) } },
                        "lastState": {},
                    }]),
                );
            }
            (Some(_), None) => {
                status.insert("conditions".to_owned(), json!([scheduled]));
            }
            (None, _) => {}
        }
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": self.meta.to_value(),
            "spec": Value::Object(spec),
            "status": Value::Object(status),
        })
    }
}

/// `spec.containers` of a pod made from a ReplicaSet's template: name, image, pull policy and
/// ports of each container.
fn pod_containers(template: &Value) -> Value {
    let containers = template
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Value::Array(
        containers
            .into_iter()
            .map(|c| {
                let mut out = Map::new();
                for key in ["name", "image", "imagePullPolicy", "ports"] {
                    if let Some(v) = c.get(key) {
                        out.insert(key.to_owned(), v.clone());
                    }
                }
                Value::Object(out)
            })
            .collect(),
    )
}

fn pod_fields() -> Value {
    json!({
        "f:metadata": {
            "f:generateName": {}, "f:labels": {}, "f:annotations": {},
            "f:ownerReferences": { ".": {} }
        },
        "f:spec": { "f:containers": {}, "f:restartPolicy": {}, "f:terminationGracePeriodSeconds": {} }
    })
}

fn kubelet_fields() -> Value {
    json!({ "f:status": {
        "f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {}, "f:hostIPs": {},
        "f:phase": {}, "f:podIP": {}, "f:podIPs": {}, "f:startTime": {}
    } })
}

fn scheduler_fields() -> Value {
    json!({ "f:status": { "f:conditions": { "k:{\"type\":\"PodScheduled\"}": {} } } })
}

impl Sim {
    /// A new pod of ReplicaSet `hash`, created at `at` (not yet scheduled).
    fn new_pod(&mut self, hash: &str, at: i64) -> Option<Pod> {
        let rs = self.rs(hash)?;
        let rs_name = rs.meta.name.clone();
        let rs_uid = rs.meta.uid.clone();
        let template = rs.template.clone();
        let ns = self.config.namespace.clone();
        self.pod_seq += 1;
        let mut name = format!(
            "{rs_name}-{}",
            name_suffix(&format!("{ns}/{rs_name}/{}", self.pod_seq))
        );
        let mut salt = 0;
        while self.pods.iter().any(|p| p.meta.name == name) {
            salt += 1;
            name = format!(
                "{rs_name}-{}",
                name_suffix(&format!("{ns}/{rs_name}/{}/{salt}", self.pod_seq))
            );
        }
        let mut meta = Meta::new(
            name.clone(),
            ns.clone(),
            uid(&format!("{ns}/{name}/pod/{at}")),
            at,
        );
        meta.generate_name = Some(format!("{rs_name}-"));
        meta.labels = template_labels(&template);
        meta.annotations = template
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        meta.owner = Some(Owner {
            api_version: APPS_API,
            kind: "ReplicaSet",
            name: rs_name,
            uid: rs_uid,
        });
        meta.touch(ManagedField {
            manager: manager::KUBE_CONTROLLER_MANAGER,
            operation: "Update",
            subresource: None,
            api_version: "v1",
            time: at,
            fields: pod_fields(),
        });
        let containers = pod_containers(&template);
        let first = containers.get(0).cloned().unwrap_or_default();
        let text = |k: &str| first[k].as_str().unwrap_or_default().to_owned();
        Some(Pod {
            meta,
            rs_hash: hash.to_owned(),
            container: (text("name"), text("image")),
            pull_always: first["imagePullPolicy"] == "Always",
            containers,
            node: None,
            ip: String::new(),
            started: None,
            ready: None,
            not_ready_since: at,
            image_id: String::new(),
            container_id: String::new(),
        })
    }

    /// Binds pod `i` to the next node (round robin) at `at`.
    fn schedule_pod(&mut self, i: usize, at: i64) {
        let node = self.node_seq % NODES.len();
        self.node_seq += 1;
        let Some(pod) = self.pods.get_mut(i) else {
            return;
        };
        pod.node = Some(node);
        pod.meta.touch(ManagedField {
            manager: manager::KUBE_SCHEDULER,
            operation: "Update",
            subresource: Some("status"),
            api_version: "v1",
            time: at,
            fields: scheduler_fields(),
        });
    }

    /// The sandbox and the container of pod `i` start at `at`: its IP, and the digest its node
    /// pulls for the image.
    fn start_pod(&mut self, i: usize, at: i64) {
        let Some(pod) = self.pods.get(i) else {
            return;
        };
        let node = pod.node.unwrap_or(0);
        let (image, always, name) = (
            pod.container.1.clone(),
            pod.pull_always,
            pod.meta.name.clone(),
        );
        let image_id = self.pulled_image_id(node, &image, always);
        let n = self.node_ips[node];
        self.node_ips[node] += 1;
        let host = 30 + (n * 37) % 211;
        let ip = format!("10.0.{}.{host}", node + 1);
        let Some(pod) = self.pods.get_mut(i) else {
            return;
        };
        pod.ip = ip;
        pod.started = Some(at);
        pod.not_ready_since = at;
        pod.image_id = image_id;
        pod.container_id = format!("containerd://{}", fake_sha256(&format!("{name}/container")));
        self.touch_pod_status(i, at);
    }

    fn touch_pod_status(&mut self, i: usize, at: i64) {
        if let Some(pod) = self.pods.get_mut(i) {
            pod.meta.touch(ManagedField {
                manager: manager::KUBELET,
                operation: "Update",
                subresource: Some("status"),
                api_version: "v1",
                time: at,
                fields: kubelet_fields(),
            });
        }
    }

    /// `repository@sha256:<digest>` of what `node` runs for `image`: the pinned digest, or for
    /// a tag the digest the node pulled before (`IfNotPresent`), else what the registry
    /// resolves the tag to now (cached on the node).
    fn pulled_image_id(&mut self, node: usize, image: &str, always: bool) -> String {
        let (repository, reference, pinned) = split_image(image);
        let digest = match pinned {
            Some(d) => d.to_owned(),
            None => {
                let key = (node, reference.to_owned());
                match self.node_images.get(&key) {
                    Some(d) if !always => d.clone(),
                    _ => {
                        let d = self
                            .registry
                            .get(reference)
                            .cloned()
                            .unwrap_or_else(|| image_digest(reference));
                        self.node_images.insert(key, d.clone());
                        d
                    }
                }
            }
        };
        format!("{repository}@sha256:{digest}")
    }

    /// The pods of the stable ReplicaSet at the start: created during its release, Running and
    /// Ready long before the recording starts.
    pub(crate) fn seed_pods(&mut self, hash: &str, count: i32, released: i64) {
        for k in 0..i64::from(count) {
            let created = released + 2 + 37 * k;
            let Some(pod) = self.new_pod(hash, created) else {
                return;
            };
            self.pods.push(pod);
            let i = self.pods.len() - 1;
            self.schedule_pod(i, created);
            self.start_pod(i, created + 1);
            if let Some(pod) = self.pods.get_mut(i) {
                pod.ready = Some(created + 4);
            }
            self.touch_pod_status(i, created + 4);
        }
    }

    /// The ReplicaSet controller creates `n` pods of ReplicaSet `hash`; the scheduler binds each.
    pub(crate) fn create_pods(&mut self, hash: &str, n: i32) {
        let now = self.now;
        for _ in 0..n {
            let Some(pod) = self.new_pod(hash, now) else {
                return;
            };
            self.pods.push(pod);
            let i = self.pods.len() - 1;
            self.write_pod(i, Op::Added);
            self.schedule_pod(i, now);
            self.write_pod(i, Op::Modified);
        }
    }

    /// The ReplicaSet controller deletes `n` pods of ReplicaSet `hash`, as its
    /// `getPodsToDelete` ranks them: unready before ready, newer before older.
    pub(crate) fn terminate_pods(&mut self, hash: &str, n: i32) {
        let now = self.now;
        let mut candidates: Vec<(bool, i64, i64, usize)> = self
            .pods
            .iter()
            .enumerate()
            .filter(|(_, p)| p.rs_hash == hash && !p.terminating())
            .map(|(i, p)| {
                // Sort key: unready first; then the most recent (ready time or creation) first.
                let recent = p.ready.unwrap_or(p.meta.creation);
                (p.is_ready(), -recent, -p.meta.creation, i)
            })
            .collect();
        candidates.sort();
        let victims: Vec<usize> = candidates
            .into_iter()
            .take(usize::try_from(n).unwrap_or(0))
            .map(|c| c.3)
            .collect();
        for i in victims {
            if let Some(pod) = self.pods.get_mut(i) {
                pod.meta.deletion = Some((now + GRACE_PERIOD, GRACE_PERIOD));
                if pod.ready.take().is_some() {
                    pod.not_ready_since = now;
                }
            }
            self.touch_pod_status(i, now);
            self.write_pod(i, Op::Modified);
        }
    }

    /// The kubelet reports the oldest started, unready pod of ReplicaSet `hash` ready.
    pub(crate) fn ready_pod(&mut self, hash: &str) {
        let now = self.now;
        let Some(i) = self
            .pods
            .iter()
            .enumerate()
            .filter(|(_, p)| p.rs_hash == hash && !p.terminating() && p.ready.is_none())
            .min_by_key(|(i, p)| (p.started.is_none(), p.meta.creation, *i))
            .map(|(i, _)| i)
        else {
            return;
        };
        if self.pods[i].started.is_none() {
            self.start_pod(i, now);
        }
        if let Some(pod) = self.pods.get_mut(i) {
            pod.ready = Some(now);
        }
        self.touch_pod_status(i, now);
        self.write_pod(i, Op::Modified);
    }

    /// One pass of the kubelets: pods bound a second ago start; pods whose containers have
    /// stopped since their deletion was requested are gone.
    pub(crate) fn run_kubelets(&mut self) {
        let now = self.now;
        let mut i = 0;
        while i < self.pods.len() {
            let pod = &self.pods[i];
            if pod
                .deletion_requested()
                .is_some_and(|at| now >= at + TERMINATION_SECONDS)
            {
                self.delete_pod(i);
                continue;
            }
            if !pod.terminating() && pod.started.is_none() && now > pod.meta.creation {
                self.start_pod(i, now);
                self.write_pod(i, Op::Modified);
            }
            i += 1;
        }
    }

    fn delete_pod(&mut self, i: usize) {
        let mut pod = self.pods.remove(i);
        pod.meta.resource_version = self.bump_rv();
        let object = crate::json::to_bytes(&pod.to_value());
        let namespace = pod.meta.namespace.clone();
        self.push_deleted(namespace, Kind::Pod, pod.meta, object);
    }

    pub(crate) fn write_pod(&mut self, i: usize, op: Op) {
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let Some(pod) = self.pods.get_mut(i) else {
            return;
        };
        pod.meta.resource_version = rv;
        let object = crate::json::to_bytes(&pod.to_value());
        let (ns, name, uid) = (
            pod.meta.namespace.clone(),
            pod.meta.name.clone(),
            pod.meta.uid.clone(),
        );
        self.push_in(ns, at, Kind::Pod, op, name, uid, rv.to_string(), object);
    }
}
