//! Ephemeral metadata as the rollouts controller does it (`rollout/ephemeralmetadata.go`,
//! `utils/replicaset`): `canaryMetadata` / `stableMetadata` labels on each role's ReplicaSet
//! template, then on that ReplicaSet's running pods, one patch per pod; the labels move when the
//! role does (at promotion the new revision's become the stable ones). The real controller put
//! them on the templates in `recordings/real/ephemeral-metadata.rfr`.

use std::collections::BTreeMap;

use rf_format::Op;
use serde_json::{Value, json};

use crate::objects::{ManagedField, fields, manager};
use crate::sim::Sim;

/// The label key both roles set.
pub(crate) const ROLE: &str = "role";

impl Sim {
    /// The labels `canaryMetadata` and `stableMetadata` set, when configured.
    pub(crate) fn role_labels(&self, canary: bool) -> Option<BTreeMap<String, String>> {
        self.config.role_labels.then(|| {
            let role = if canary { "canary" } else { "stable" };
            [(ROLE.to_owned(), role.to_owned())].into()
        })
    }

    /// The role labels the controller wants on ReplicaSet `rs` while `new` is the current
    /// revision: the canary's on the new one until it is fully rolled out, the stable's on the
    /// stable one, none on the others.
    fn wanted_role(&self, rs: &str, new: &str) -> Option<BTreeMap<String, String>> {
        let stable = &self.rollout.status.stable_rs;
        let fully = stable.is_empty() || stable == new;
        if rs == new {
            self.role_labels(!fully)
        } else if rs == stable {
            self.role_labels(false)
        } else {
            None
        }
    }

    /// Puts `labels` (none: removes the role labels) on the pod template `template`.
    pub(crate) fn set_role(template: &mut Value, labels: Option<&BTreeMap<String, String>>) {
        let Some(map) = template
            .pointer_mut("/metadata/labels")
            .and_then(Value::as_object_mut)
        else {
            return;
        };
        map.remove(ROLE);
        for (k, v) in labels.into_iter().flatten() {
            map.insert(k.clone(), json!(v));
        }
    }

    /// `reconcileEphemeralMetadata`: each ReplicaSet's template first, then its pods.
    pub(crate) fn reconcile_ephemeral_metadata(&mut self, new: &str) {
        if !self.config.role_labels {
            return;
        }
        let hashes: Vec<String> = self.replica_sets.iter().map(|rs| rs.hash.clone()).collect();
        for hash in hashes {
            let wanted = self.wanted_role(&hash, new);
            let Some(rs) = self.rs_mut(&hash) else {
                continue;
            };
            let current = rs.template.pointer("/metadata/labels/role").cloned();
            let want = wanted.as_ref().and_then(|w| w.get(ROLE)).map(|v| json!(v));
            if current != want {
                Sim::set_role(&mut rs.template, wanted.as_ref());
                self.touch_replica_set(
                    &hash,
                    manager::ROLLOUTS,
                    None,
                    fields::rollouts_replica_set(),
                );
                self.write_replica_set(&hash, Op::Modified);
            }
            if self.rs(&hash).is_some_and(|rs| rs.replicas == 0) {
                continue;
            }
            self.relabel_pods(&hash, wanted.as_ref());
        }
    }

    /// The controller's patch of each running pod of ReplicaSet `hash` whose role labels are
    /// not `wanted`; refused (left as they are) when the scenario has a webhook refuse them.
    fn relabel_pods(&mut self, hash: &str, wanted: Option<&BTreeMap<String, String>>) {
        if self.config.pod_relabel_refused {
            return;
        }
        let want = wanted.and_then(|w| w.get(ROLE)).cloned();
        let now = self.now;
        for i in 0..self.pods.len() {
            let pod = &mut self.pods[i];
            if pod.rs_hash != hash
                || pod.meta.deletion.is_some()
                || pod.meta.labels.get(ROLE) == want.as_ref()
            {
                continue;
            }
            match &want {
                Some(v) => pod.meta.labels.insert(ROLE.to_owned(), v.clone()),
                None => pod.meta.labels.remove(ROLE),
            };
            pod.meta.touch(ManagedField {
                manager: manager::ROLLOUTS,
                operation: "Update",
                subresource: None,
                api_version: "v1",
                time: now,
                fields: json!({ "f:metadata": { "f:labels": { "f:role": {} } } }),
            });
            self.write_pod(i, Op::Modified);
        }
    }
}
