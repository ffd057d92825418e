//! Services and their EndpointSlices, as the endpointslice controller maintains them: one slice
//! per Service listing every started pod its selector selects, with the pod's readiness, updated
//! 1 s after the pods changed (the controller works from what it saw at the end of the second
//! before).

use std::collections::BTreeMap;

use rf_format::{Kind, Op};
use serde_json::{Value, json};

use crate::calendar::rfc3339;
use crate::hash::{fnv64, name_suffix, uid};
use crate::objects::{HASH_LABEL, ManagedField, Meta, Owner, manager, string_map};
use crate::pods::Pod;
use crate::sim::Sim;

/// The label that ties an EndpointSlice to its Service.
pub(crate) const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";
const MANAGED_BY_LABEL: &str = "endpointslice.kubernetes.io/managed-by";
const MANAGED_BY: &str = "endpointslice-controller.k8s.io";
const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// A `v1` Service of type ClusterIP.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Service {
    pub meta: Meta,
    pub selector: BTreeMap<String, String>,
    pub cluster_ip: String,
}

impl Service {
    /// True when `labels` hold every pair of the selector (an empty selector selects nothing:
    /// the endpointslice controller does not manage Services without one).
    pub(crate) fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        !self.selector.is_empty()
            && self
                .selector
                .iter()
                .all(|(k, v)| labels.get(k).is_some_and(|l| l == v))
    }

    pub(crate) fn to_value(&self) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": self.meta.to_value(),
            "spec": {
                "type": "ClusterIP",
                "clusterIP": self.cluster_ip,
                "clusterIPs": [self.cluster_ip],
                "internalTrafficPolicy": "Cluster",
                "ipFamilies": ["IPv4"],
                "ipFamilyPolicy": "SingleStack",
                "ports": [{ "name": "http", "port": 80, "protocol": "TCP", "targetPort": "http" }],
                "selector": string_map(&self.selector),
                "sessionAffinity": "None",
            },
            "status": { "loadBalancer": {} },
        })
    }
}

/// An Ingress: every request for `host` goes to `service`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ingress {
    pub meta: Meta,
    pub host: String,
    pub service: String,
    pub class: String,
}

impl Ingress {
    pub(crate) fn to_value(&self) -> Value {
        json!({
            "apiVersion": "networking.k8s.io/v1",
            "kind": "Ingress",
            "metadata": self.meta.to_value(),
            "spec": {
                "ingressClassName": self.class,
                "rules": [{
                    "host": self.host,
                    "http": { "paths": [{
                        "path": "/",
                        "pathType": "Prefix",
                        "backend": { "service": { "name": self.service, "port": { "number": 80 } } },
                    }] },
                }],
            },
            "status": { "loadBalancer": {} },
        })
    }
}

/// One entry of an EndpointSlice's `endpoints`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Endpoint {
    pub ip: String,
    pub pod: String,
    pub pod_uid: String,
    pub node: String,
    pub ready: bool,
    pub serving: bool,
    pub terminating: bool,
}

impl Endpoint {
    fn of(pod: &Pod) -> Option<Endpoint> {
        pod.started?;
        Some(Endpoint {
            ip: pod.ip.clone(),
            pod: pod.meta.name.clone(),
            pod_uid: pod.meta.uid.clone(),
            node: pod.node_name().unwrap_or_default().to_owned(),
            ready: pod.is_ready(),
            serving: pod.ready.is_some(),
            terminating: pod.terminating(),
        })
    }

    fn to_value(&self, namespace: &str) -> Value {
        json!({
            "addresses": [self.ip],
            "conditions": {
                "ready": self.ready,
                "serving": self.serving,
                "terminating": self.terminating,
            },
            "nodeName": self.node,
            "targetRef": {
                "kind": "Pod",
                "namespace": namespace,
                "name": self.pod,
                "uid": self.pod_uid,
            },
        })
    }
}

/// A `discovery.k8s.io/v1` EndpointSlice of one Service.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EndpointSlice {
    pub meta: Meta,
    /// The Service's name.
    pub service: String,
    pub endpoints: Vec<Endpoint>,
}

impl EndpointSlice {
    pub(crate) fn to_value(&self) -> Value {
        let ns = &self.meta.namespace;
        json!({
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            "metadata": self.meta.to_value(),
            "addressType": "IPv4",
            "endpoints": self.endpoints.iter().map(|e| e.to_value(ns)).collect::<Vec<_>>(),
            "ports": [{ "name": "http", "port": 8080, "protocol": "TCP" }],
        })
    }
}

fn slice_fields() -> Value {
    json!({
        "f:addressType": {}, "f:endpoints": {}, "f:ports": {},
        "f:metadata": {
            "f:annotations": { ".": {}, "f:endpoints.kubernetes.io/last-change-trigger-time": {} },
            "f:generateName": {}, "f:labels": {}, "f:ownerReferences": {}
        }
    })
}

fn service_fields() -> Value {
    json!({
        "f:metadata": { "f:labels": {} },
        "f:spec": { "f:ports": {}, "f:selector": {}, "f:type": {} }
    })
}

impl Sim {
    /// The Services of the configuration and their EndpointSlices as they stand at the start
    /// (every pod already listed). `created` is when the chart was first installed; `settled`
    /// when the stable release finished.
    /// The Ingresses of the config, applied by Argo CD when the Services were.
    pub(crate) fn seed_ingresses(&mut self, created: i64, labels: &BTreeMap<String, String>) {
        let ns = self.config.namespace.clone();
        for config in self.config.ingresses.clone() {
            let name = config.name.clone();
            let mut meta = Meta::new(
                name.clone(),
                ns.clone(),
                uid(&format!("{ns}/{name}/ingress/{created}")),
                created,
            );
            meta.generation = Some(1);
            meta.labels = labels.clone();
            if self.config.application {
                meta.annotations.insert(
                    crate::argocd::TRACKING_ID.to_owned(),
                    format!("{}:networking.k8s.io/Ingress:{ns}/{name}", self.config.app),
                );
            }
            meta.touch(ManagedField {
                manager: manager::ARGOCD,
                operation: "Update",
                subresource: None,
                api_version: "networking.k8s.io/v1",
                time: created,
                fields: json!({ "f:spec": { "f:ingressClassName": {}, "f:rules": {} } }),
            });
            self.ingresses.push(Ingress {
                meta,
                host: config.host,
                service: config.service,
                class: config.class,
            });
        }
    }

    pub(crate) fn seed_services(
        &mut self,
        created: i64,
        settled: i64,
        labels: &BTreeMap<String, String>,
    ) {
        let ns = self.config.namespace.clone();
        for config in self.config.services.clone() {
            let name = config.name.clone();
            let h = fnv64(format!("{ns}/{name}/cluster-ip").as_bytes());
            let cluster_ip = format!("172.20.{}.{}", (h >> 8) % 256, 1 + h % 254);
            let mut meta = Meta::new(
                name.clone(),
                ns.clone(),
                uid(&format!("{ns}/{name}/service/{created}")),
                created,
            );
            meta.labels = labels.clone();
            if self.config.application {
                meta.annotations.insert(
                    crate::argocd::TRACKING_ID.to_owned(),
                    format!("{}:/Service:{ns}/{name}", self.config.app),
                );
            }
            meta.touch(ManagedField {
                manager: manager::ARGOCD,
                operation: "Update",
                subresource: None,
                api_version: "v1",
                time: created,
                fields: service_fields(),
            });
            let service = Service {
                meta,
                selector: config.selector.clone(),
                cluster_ip,
            };
            let slice_name = format!("{name}-{}", name_suffix(&format!("{ns}/{name}/slice")));
            let mut slice_meta = Meta::new(
                slice_name.clone(),
                ns.clone(),
                uid(&format!("{ns}/{slice_name}/endpointslice/{created}")),
                created,
            );
            slice_meta.generate_name = Some(format!("{name}-"));
            slice_meta.generation = Some(23);
            slice_meta.labels = labels.clone();
            slice_meta
                .labels
                .insert(MANAGED_BY_LABEL.to_owned(), MANAGED_BY.to_owned());
            slice_meta
                .labels
                .insert(SERVICE_NAME_LABEL.to_owned(), name.clone());
            slice_meta
                .annotations
                .insert(TRIGGER_TIME.to_owned(), rfc3339(settled - 6));
            slice_meta.owner = Some(Owner {
                api_version: "v1",
                kind: "Service",
                name: name.clone(),
                uid: service.meta.uid.clone(),
            });
            slice_meta.touch(ManagedField {
                manager: manager::KUBE_CONTROLLER_MANAGER,
                operation: "Update",
                subresource: None,
                api_version: "discovery.k8s.io/v1",
                time: settled - 5,
                fields: slice_fields(),
            });
            let mut slice = EndpointSlice {
                meta: slice_meta,
                service: name,
                endpoints: Vec::new(),
            };
            slice.endpoints = self.desired_endpoints(&service);
            self.services.push(service);
            self.slices.push(slice);
        }
    }

    /// Every started pod the Service selects, by pod name.
    fn desired_endpoints(&self, service: &Service) -> Vec<Endpoint> {
        let mut endpoints: Vec<Endpoint> = self
            .pods
            .iter()
            .filter(|p| service.selects(p.labels()))
            .filter_map(Endpoint::of)
            .collect();
        endpoints.sort_by(|a, b| a.pod.cmp(&b.pod));
        endpoints
    }

    /// One pass of the endpointslice controller at the end of a second: it writes what it
    /// observed at the end of the second before, then observes the pods as they are now.
    pub(crate) fn sync_endpoint_slices(&mut self) {
        let now = self.now;
        for (i, endpoints, trigger) in std::mem::take(&mut self.slices_observed) {
            let Some(slice) = self.slices.get_mut(i) else {
                continue;
            };
            if slice.endpoints == endpoints {
                continue;
            }
            slice.endpoints = endpoints;
            slice.meta.generation = Some(slice.meta.generation.unwrap_or(0) + 1);
            slice
                .meta
                .annotations
                .insert(TRIGGER_TIME.to_owned(), rfc3339(trigger));
            slice.meta.touch(ManagedField {
                manager: manager::KUBE_CONTROLLER_MANAGER,
                operation: "Update",
                subresource: None,
                api_version: "discovery.k8s.io/v1",
                time: now,
                fields: slice_fields(),
            });
            self.write_slice(i);
        }
        let mut observed = Vec::new();
        for (i, service) in self.services.iter().enumerate() {
            let desired = self.desired_endpoints(service);
            if self.slices.get(i).is_some_and(|s| s.endpoints != desired) {
                observed.push((i, desired, now));
            }
        }
        self.slices_observed = observed;
    }

    /// The rollouts controller puts `hash` on the selector of Service `name`
    /// (`rollouts-pod-template-hash`), as it does for a blue-green rollout's active and preview
    /// Services. Returns whether it wrote.
    pub(crate) fn point_service(&mut self, name: &str, hash: &str) -> bool {
        let now = self.now;
        let Some(i) = self.services.iter().position(|s| s.meta.name == name) else {
            return false;
        };
        let service = &mut self.services[i];
        if service.selector.get(HASH_LABEL).map(String::as_str) == Some(hash) {
            return false;
        }
        service
            .selector
            .insert(HASH_LABEL.to_owned(), hash.to_owned());
        service.meta.touch(ManagedField {
            manager: manager::ROLLOUTS,
            operation: "Update",
            subresource: None,
            api_version: "v1",
            time: now,
            fields: json!({ "f:spec": { "f:selector": { "f:rollouts-pod-template-hash": {} } } }),
        });
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let service = &mut self.services[i];
        service.meta.resource_version = rv;
        let object = crate::json::to_bytes(&service.to_value());
        let (ns, name, uid) = (
            service.meta.namespace.clone(),
            service.meta.name.clone(),
            service.meta.uid.clone(),
        );
        self.push_in(
            ns,
            at,
            Kind::Service,
            Op::Modified,
            name,
            uid,
            rv.to_string(),
            object,
        );
        true
    }

    /// The hash on Service `name`'s selector, if any.
    pub(crate) fn service_hash(&self, name: &str) -> String {
        self.services
            .iter()
            .find(|s| s.meta.name == name)
            .and_then(|s| s.selector.get(HASH_LABEL).cloned())
            .unwrap_or_default()
    }

    fn write_slice(&mut self, i: usize) {
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let Some(slice) = self.slices.get_mut(i) else {
            return;
        };
        slice.meta.resource_version = rv;
        let object = crate::json::to_bytes(&slice.to_value());
        let (ns, name, uid) = (
            slice.meta.namespace.clone(),
            slice.meta.name.clone(),
            slice.meta.uid.clone(),
        );
        self.push_in(
            ns,
            at,
            Kind::EndpointSlice,
            Op::Modified,
            name,
            uid,
            rv.to_string(),
            object,
        );
    }
}
