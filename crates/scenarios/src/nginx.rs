//! NGINX traffic routing as the rollouts controller does it (`rollout/trafficrouting.go`,
//! `rollout/trafficrouting/nginx/`, `utils/replicaset/canary.go`), as the real controller showed
//! it in `recordings/real/nginx-canary-weight-*.rfr`: the canary Ingress
//! `<rollout>-<stableIngress>-canary` sends the canary Service its weight, the stable
//! ReplicaSet stays fully scaled, and the status records the weights it set.
//!
//! The real controller syncs a rollout when something it watches changes; this simulator syncs
//! every second. So a write of the canary Ingress by someone else is mended at the next sync
//! only when the Ingress's class is one the controller watches (`--nginx-ingress-classes`,
//! [`WATCHED_CLASS`] by default); otherwise it stands until the weight the controller wants
//! changes.

use rf_format::Op;
use serde_json::json;

use crate::objects::{ManagedField, Meta, Owner, manager};
use crate::sim::Sim;
use crate::spec::Step;
use crate::traffic::Ingress;

/// The Ingress class the controller watches unless started with other `--nginx-ingress-classes`.
pub(crate) const WATCHED_CLASS: &str = "nginx";

/// The annotations' prefix (`annotationPrefix` unset).
const PREFIX: &str = "nginx.ingress.kubernetes.io";

/// What the controller last set for a rollout with NGINX routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Routing {
    /// The canary weight it last wrote (Ingress and status).
    pub weight: i32,
    /// The revision `status.canary.weights.canary` names, and the stable one.
    pub canary_hash: String,
    pub stable_hash: String,
    /// Someone else wrote the canary Ingress, and the controller noticed (a watched class).
    pub mend: bool,
}

impl Sim {
    /// The canary Ingress's name: `<rollout>-<stableIngress>-canary`.
    fn canary_ingress_name(&self) -> Option<String> {
        let stable = self.rollout.nginx.as_ref()?;
        Some(format!("{}-{stable}-canary", self.rollout.meta.name))
    }

    fn canary_ingress_mut(&mut self) -> Option<&mut Ingress> {
        let name = self.canary_ingress_name()?;
        self.ingresses.iter_mut().find(|i| i.meta.name == name)
    }

    /// The controller made the canary Ingress when the rollout was first deployed, at weight 0.
    pub(crate) fn seed_canary_ingress(&mut self, at: i64, stable_hash: &str) {
        let (Some(name), Some(stable)) = (self.canary_ingress_name(), self.rollout.nginx.clone())
        else {
            return;
        };
        let Some(stable) = self
            .ingresses
            .iter()
            .find(|i| i.meta.name == stable)
            .cloned()
        else {
            return;
        };
        let ns = self.config.namespace.clone();
        let mut meta = Meta::new(
            name.clone(),
            ns.clone(),
            crate::hash::uid(&format!("{ns}/{name}/ingress/{at}")),
            at,
        );
        meta.generation = Some(1);
        meta.owner = Some(Owner::rollout(
            self.rollout.meta.name.clone(),
            self.rollout.meta.uid.clone(),
        ));
        meta.annotations
            .insert(format!("{PREFIX}/canary"), "true".to_owned());
        meta.annotations
            .insert(format!("{PREFIX}/canary-weight"), "0".to_owned());
        meta.touch(ingress_write(manager::ROLLOUTS, at));
        self.ingresses.push(Ingress {
            meta,
            host: stable.host,
            service: self.rollout.canary_service.clone().unwrap_or_default(),
            class: stable.class,
        });
        self.routing = Some(Routing {
            weight: 0,
            canary_hash: stable_hash.to_owned(),
            stable_hash: stable_hash.to_owned(),
            mend: false,
        });
    }

    /// `reconcileTrafficRouting` with NGINX: the desired canary weight, written to the canary
    /// Ingress when it differs from what the controller last set (or, for a watched class, from
    /// what someone else wrote since), and kept for the status.
    pub(crate) fn reconcile_nginx(&mut self, hash: &str) {
        if self.routing.is_none() {
            return;
        }
        let weight = self.desired_weight(hash);
        let stable = self.rollout.status.stable_rs.clone();
        let Some(routing) = self.routing.as_mut() else {
            return;
        };
        let write = routing.weight != weight || routing.mend;
        routing.weight = weight;
        routing.canary_hash = hash.to_owned();
        routing.stable_hash = stable;
        routing.mend = false;
        if !write {
            return;
        }
        let written = weight.to_string();
        let key = format!("{PREFIX}/canary-weight");
        let now = self.now;
        let Some(ingress) = self.canary_ingress_mut() else {
            return;
        };
        if ingress.meta.annotations.get(&key) == Some(&written) {
            return;
        }
        ingress.meta.annotations.insert(key, written);
        ingress.meta.touch(ingress_write(manager::ROLLOUTS, now));
        self.write_canary_ingress();
    }

    /// The weight `reconcileTrafficRouting` wants for the canary now.
    fn desired_weight(&self, hash: &str) -> i32 {
        let status = &self.rollout.status;
        let available = self.rs(hash).map_or(0, |rs| rs.status.available);
        if status.stable_rs == hash || status.abort || available == 0 {
            return 0;
        }
        if status.promote_full {
            return self.routing.as_ref().map_or(0, |r| r.weight);
        }
        let index = status.current_step_index.unwrap_or(0);
        let set_weight = |i: u32| match self.step(i) {
            Some(Step::SetWeight(w)) => i32::try_from(w).ok(),
            _ => None,
        };
        if !self.at_desired_replica_counts(hash) {
            // The previous weight: the new ReplicaSet is not ready for the next one.
            return (0..index).rev().find_map(set_weight).unwrap_or(0);
        }
        if index < self.steps_len() {
            return (0..=index).rev().find_map(set_weight).unwrap_or(0);
        }
        100
    }

    /// Someone else (`manager`, e.g. an Argo CD sync of an Ingress kept in Git under the
    /// controller's name) writes the canary Ingress's weight.
    pub fn overwrite_canary_weight(&mut self, weight: u32, manager: &'static str) {
        let now = self.now;
        let key = format!("{PREFIX}/canary-weight");
        let Some(ingress) = self.canary_ingress_mut() else {
            return;
        };
        ingress.meta.annotations.insert(key, weight.to_string());
        ingress.meta.touch(ingress_write(manager, now));
        let watched = ingress.class == WATCHED_CLASS;
        self.write_canary_ingress();
        if let Some(routing) = self.routing.as_mut() {
            routing.mend |= watched;
        }
    }

    fn write_canary_ingress(&mut self) {
        let rv = self.bump_rv();
        let at = self.next_stamp();
        let Some(name) = self.canary_ingress_name() else {
            return;
        };
        let Some(ingress) = self.ingresses.iter_mut().find(|i| i.meta.name == name) else {
            return;
        };
        ingress.meta.resource_version = rv;
        let object = crate::json::to_bytes(&ingress.to_value());
        let (ns, uid) = (ingress.meta.namespace.clone(), ingress.meta.uid.clone());
        self.push_in(
            ns,
            at,
            rf_format::api::INGRESS.newest(),
            Op::Modified,
            name,
            uid,
            rv.to_string(),
            object,
        );
    }

    /// `status.canary.weights` as the controller last set them, when it routes traffic.
    pub(crate) fn weights_value(&self) -> Option<serde_json::Value> {
        let r = self.routing.as_ref()?;
        let service = |s: &Option<String>| s.clone().unwrap_or_default();
        Some(json!({
            "canary": {
                "podTemplateHash": r.canary_hash,
                "serviceName": service(&self.rollout.canary_service),
                "weight": r.weight,
            },
            "stable": {
                "podTemplateHash": r.stable_hash,
                "serviceName": service(&self.rollout.stable_service),
                "weight": 100 - r.weight,
            },
        }))
    }
}

/// A write of the canary Ingress's annotations by `manager` at `time`.
fn ingress_write(manager: &'static str, time: i64) -> ManagedField {
    ManagedField {
        manager,
        operation: "Update",
        subresource: None,
        api_version: "networking.k8s.io/v1",
        time,
        fields: json!({ "f:metadata": { "f:annotations": {
            "f:nginx.ingress.kubernetes.io/canary": {},
            "f:nginx.ingress.kubernetes.io/canary-weight": {},
        } } }),
    }
}
