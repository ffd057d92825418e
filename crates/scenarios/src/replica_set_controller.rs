//! The ReplicaSet controller (kube-controller-manager), reduced to what a watch shows: status
//! follows `spec.replicas` at once, one more pod becomes ready every 3 s, scale-down is immediate.

use rf_format::Op;

use crate::objects::{fields, manager};
use crate::sim::Sim;

/// Seconds between two pods of a ReplicaSet becoming ready.
const POD_READY_INTERVAL: i64 = 3;

impl Sim {
    /// One pass of the ReplicaSet controller over every ReplicaSet, in creation order.
    pub(crate) fn sync_replica_sets(&mut self) {
        let now = self.now;
        let hashes: Vec<String> = self.replica_sets.iter().map(|rs| rs.hash.clone()).collect();
        for hash in hashes {
            let Some(rs) = self.rs_mut(&hash) else {
                continue;
            };
            let generation = rs.generation();
            let status = &mut rs.status;
            let changed =
                if status.observed_generation != generation || status.replicas != rs.replicas {
                    if rs.replicas > status.replicas && status.ready >= status.replicas {
                        rs.ready_clock = now;
                    }
                    status.replicas = rs.replicas;
                    status.fully_labeled = rs.replicas;
                    status.ready = status.ready.min(rs.replicas);
                    status.available = status.available.min(rs.replicas);
                    status.observed_generation = generation;
                    true
                } else if status.ready < rs.replicas && now - rs.ready_clock >= POD_READY_INTERVAL {
                    status.ready += 1;
                    status.available += 1;
                    rs.ready_clock = now;
                    true
                } else {
                    false
                };
            if changed {
                self.touch_replica_set(
                    &hash,
                    manager::KUBE_CONTROLLER_MANAGER,
                    Some("status"),
                    fields::replica_set_status(),
                );
                self.write_replica_set(&hash, Op::Modified);
            }
        }
    }
}
