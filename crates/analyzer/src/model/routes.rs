//! Which rollouts a Service may route to, found without asking every rollout of its namespace.
//!
//! A Service routes to a rollout ([`route`](crate::model::traffic::route)) when the rollout names it as
//! its canary or stable Service, or when its selector selects the pods of a live ReplicaSet of
//! the rollout: then those pods carry every label of the selector, and the rollout is indexed
//! under each of them. A change of a Service's endpoints asks for the rollouts under the
//! selector's rarest label, not for the hundreds of a namespace the size of a cluster's.

use std::collections::BTreeSet;

use crate::base::HashMap;
use crate::base::by_name::ByName;
use crate::model::rollout::RolloutTrack;
use crate::model::world::ServiceObj;

/// Rollout names by a value, nested under what the value is of.
type Names = HashMap<String, BTreeSet<String>>;

/// What one rollout is indexed under: sorted, without repeats.
#[derive(Debug, Default)]
struct Indexed {
    /// The labels of its live ReplicaSets' pods.
    labels: Vec<(String, String)>,
    /// The Services it names (canary, stable).
    named: Vec<String>,
    /// The track's [`RolloutTrack::routes_stamp`] when it was indexed.
    stamp: u64,
}

/// The index of the rollouts by what a Service may route to them through.
#[derive(Debug, Default)]
pub(crate) struct Routes {
    /// namespace -> label key -> label value -> rollouts.
    by_label: HashMap<String, HashMap<String, Names>>,
    /// namespace -> Service name -> rollouts that name it.
    by_name: HashMap<String, Names>,
    indexed: ByName<Indexed>,
}

impl Routes {
    /// Brings the entries of `track` up to date: after each change of its Rollout or of one
    /// of its ReplicaSets (the only records that change what it is indexed under).
    pub fn update(&mut self, track: &RolloutTrack) {
        let (ns, name) = (track.namespace.as_str(), track.name.as_str());
        let stamp = track.routes_stamp();
        // Most records change neither its ReplicaSets' labels nor its Services.
        if self
            .indexed
            .get(ns, name)
            .is_some_and(|old| old.stamp == stamp)
        {
            return;
        }
        let mut labels: Vec<(&str, &str)> = track
            .replicasets
            .values()
            .filter(|rs| !rs.deleted)
            .flat_map(|rs| rs.pod_labels.iter())
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        labels.sort_unstable();
        labels.dedup();
        let mut named: Vec<&str> = [&track.canary_service, &track.stable_service]
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        named.sort_unstable();
        named.dedup();
        if let Some(old) = self.indexed.get_mut(ns, name) {
            let same_labels = old.labels.len() == labels.len()
                && old
                    .labels
                    .iter()
                    .zip(&labels)
                    .all(|(o, n)| o.0 == n.0 && o.1 == n.1);
            if same_labels && old.named == named {
                old.stamp = stamp;
                return;
            }
        }
        if let Some(old) = self.indexed.remove(ns, name) {
            self.drop_entries(ns, name, &old);
        }
        let by_label = self.by_label.entry(ns.to_owned()).or_default();
        for (k, v) in &labels {
            by_label
                .entry((*k).to_owned())
                .or_default()
                .entry((*v).to_owned())
                .or_default()
                .insert(name.to_owned());
        }
        let by_name = self.by_name.entry(ns.to_owned()).or_default();
        for s in &named {
            by_name
                .entry((*s).to_owned())
                .or_default()
                .insert(name.to_owned());
        }
        let entry = Indexed {
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            named: named.iter().map(|s| (*s).to_owned()).collect(),
            stamp,
        };
        self.indexed.set(ns, name, entry);
    }

    fn drop_entries(&mut self, ns: &str, name: &str, old: &Indexed) {
        if let Some(by_label) = self.by_label.get_mut(ns) {
            for (k, v) in &old.labels {
                if let Some(by_value) = by_label.get_mut(k.as_str()) {
                    forget(by_value, v, name);
                    if by_value.is_empty() {
                        by_label.remove(k.as_str());
                    }
                }
            }
            if by_label.is_empty() {
                self.by_label.remove(ns);
            }
        }
        if let Some(by_name) = self.by_name.get_mut(ns) {
            for s in &old.named {
                forget(by_name, s, name);
            }
            if by_name.is_empty() {
                self.by_name.remove(ns);
            }
        }
    }

    /// The rollouts of `ns` that Service `service` (`svc`) may route to, in name order: each
    /// one it routes to is among them (the caller asks [`route`](crate::model::traffic::route) of each).
    pub fn candidates<'a>(
        &'a self,
        ns: &str,
        service: &str,
        svc: &ServiceObj,
    ) -> BTreeSet<&'a str> {
        let mut out: BTreeSet<&'a str> = BTreeSet::new();
        if let Some(names) = self.by_name.get(ns).and_then(|m| m.get(service)) {
            out.extend(names.iter().map(String::as_str));
        }
        let selector = svc.selector.as_ref().filter(|s| !s.is_empty());
        if let (Some(selector), Some(by_label)) = (selector, self.by_label.get(ns)) {
            // The rollouts of each label of the selector; a label no rollout's pods carry
            // leaves none.
            let rarest = selector
                .iter()
                .map(|(k, v)| by_label.get(k.as_str()).and_then(|m| m.get(v.as_str())))
                .min_by_key(|names| names.map_or(0, BTreeSet::len))
                .flatten();
            out.extend(rarest.into_iter().flatten().map(String::as_str));
        }
        out
    }
}

/// Drops `name` from the set under `key`, and the set once empty.
fn forget(index: &mut Names, key: &str, name: &str) {
    if let Some(set) = index.get_mut(key) {
        set.remove(name);
        if set.is_empty() {
            index.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rf_format::Timestamp;

    use super::*;
    use crate::base::At;
    use crate::base::HASH_LABEL;
    use crate::input::view::ReplicaSetView;
    use crate::model::traffic::route;

    #[test]
    fn every_rollout_a_service_routes_to_is_a_candidate() {
        // Rollouts of one namespace gain and lose ReplicaSets (their pods labelled with a label
        // all share, their own `app`, a hash, sometimes `tier`) and name Services as canary or
        // stable; Services with selectors drawn from those labels ask which rollouts they may
        // route to, after every change.
        const ROLLOUTS: [&str; 4] = ["a", "b", "c", "d"];
        let labels = [
            ("team", "pay"),
            ("app", "a"),
            ("app", "b"),
            (HASH_LABEL, "h1"),
            (HASH_LABEL, "h2"),
            ("tier", "web"),
        ];
        let mut rng = rf_scenarios::SplitMix::new(5);
        let mut tracks: Vec<RolloutTrack> = ROLLOUTS
            .iter()
            .map(|r| RolloutTrack::new("ns", r, false))
            .collect();
        let mut routes = Routes::default();
        let (mut routed, mut asked) = (0, 0);
        for seq in 0..2000u64 {
            let t = rng.below(tracks.len());
            let track = &mut tracks[t];
            if rng.below(4) == 0 {
                let pick = |rng: &mut rf_scenarios::SplitMix| {
                    (rng.below(2) == 0).then(|| ["s1", "s2"][rng.below(2)].to_owned())
                };
                let (canary, stable) = (pick(&mut rng), pick(&mut rng));
                track.set_services(canary, stable);
            } else {
                let hash = ["h1", "h2"][rng.below(2)];
                let mut pod_labels =
                    serde_json::json!({"team": "pay", "app": track.name, HASH_LABEL: hash});
                if rng.below(2) == 0 {
                    pod_labels["tier"] = "web".into();
                }
                let view: ReplicaSetView = serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("{}-{hash}", track.name), "namespace": "ns",
                        "labels": pod_labels,
                        "ownerReferences": [{"kind": "Rollout", "name": track.name, "uid": "u"}]},
                    "spec": {"replicas": 1, "template": {"metadata": {"labels": pod_labels}}}
                }))
                .unwrap_or_default();
                let pos = At {
                    file: 0,
                    seq,
                    at: Timestamp(0),
                };
                track.observe_replicaset(&view, &[], pos, rng.below(4) == 0, false);
            }
            routes.update(&tracks[t]);
            for service in ["s1", "s2", "s3"] {
                let selector: BTreeMap<String, String> = (0..rng.below(4))
                    .map(|_| labels[rng.below(labels.len())])
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect();
                let svc = ServiceObj {
                    selector: (rng.below(6) > 0).then_some(selector),
                    pos: At {
                        file: 0,
                        seq,
                        at: Timestamp(0),
                    },
                    hash_writes: Vec::new(),
                };
                let candidates = routes.candidates("ns", service, &svc);
                for track in &tracks {
                    if route(track, service, &svc).is_some() {
                        routed += 1;
                        assert!(
                            candidates.contains(track.name.as_str()),
                            "{service} {:?} routes to {} at {seq}: not among {candidates:?}",
                            svc.selector,
                            track.name
                        );
                    }
                }
                asked += 1;
            }
        }
        assert!(routed > asked / 2, "{routed} routed of {asked} asked");
        // Nothing stays indexed for a rollout under a label it lost.
        for track in &tracks {
            let live: BTreeSet<(&str, &str)> = track
                .replicasets
                .values()
                .filter(|rs| !rs.deleted)
                .flat_map(|rs| rs.pod_labels.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                .collect();
            let indexed: BTreeSet<(&str, &str)> = routes.by_label["ns"]
                .iter()
                .flat_map(|(k, by)| by.iter().map(move |(v, names)| (k, v, names)))
                .filter(|(_, _, names)| names.contains(&track.name))
                .map(|(k, v, _)| (k.as_str(), v.as_str()))
                .collect();
            assert_eq!(indexed, live, "{}", track.name);
        }
    }
}
