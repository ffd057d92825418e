//! The ReplicaSet controller (kube-controller-manager), reduced to what a watch shows: status
//! follows `spec.replicas` at once, one more pod becomes ready every 3 s, scale-down is immediate
//! (terminating pods are not counted). The pods themselves are in `pods.rs`.

use rf_format::Op;

use crate::objects::{fields, manager};
use crate::sim::Sim;

/// Seconds between two pods of a ReplicaSet becoming ready.
const POD_READY_INTERVAL: i64 = 3;

impl Sim {
    /// One pass of the ReplicaSet controller over every ReplicaSet, in creation order. With
    /// traffic, the pods that make the new status true are written first: created (newest
    /// replicas), deleted (scale-down) or reported ready (one more every 3 s).
    pub(crate) fn sync_replica_sets(&mut self) {
        let now = self.now;
        let hashes: Vec<String> = self.replica_sets.iter().map(|rs| rs.hash.clone()).collect();
        for hash in hashes {
            let Some(rs) = self.rs_mut(&hash) else {
                continue;
            };
            let generation = rs.generation();
            let status = &mut rs.status;
            let (old_replicas, old_ready) = (status.replicas, status.ready);
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
            if !changed {
                continue;
            }
            let (replicas, ready) = (status.replicas, status.ready);
            if self.config.traffic {
                if replicas > old_replicas {
                    self.create_pods(&hash, replicas - old_replicas);
                } else if replicas < old_replicas {
                    self.terminate_pods(&hash, old_replicas - replicas);
                }
                if ready > old_ready {
                    self.ready_pod(&hash);
                }
            }
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
