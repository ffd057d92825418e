//! Where a rollout's traffic goes: which Services route to it and why, which revision a pod
//! belongs to, and the ready endpoints of a Service by revision. The one place where the world
//! of Services, EndpointSlices and Pods meets a rollout's track.

use std::collections::BTreeMap;

use crate::base::At;
use crate::model::rollout::RolloutTrack;
use crate::model::world::{AppObj, Namespace, PodObj, ServiceObj, World, selects};

impl Namespace {
    /// The Services that route to `track` ([`route`]), in name order, with why: what
    /// `services().filter_map(route)` gives, through [`Namespace::services_for`].
    pub fn routing<'a>(&'a self, track: &RolloutTrack) -> Vec<Routed<'a>> {
        let live = track
            .replicasets
            .values()
            .filter(|rs| !rs.deleted && !rs.pod_labels.is_empty())
            .map(|rs| &rs.pod_labels);
        self.services_for(
            [
                track.canary_service.as_deref(),
                track.stable_service.as_deref(),
            ],
            live,
        )
        .into_iter()
        .filter_map(|name| {
            let svc = self.service(name)?;
            Some((name, svc, route(track, name, svc)?))
        })
        .collect()
    }
}

/// [`World::routing`] of each rollout, kept with the stamps it was worked out under (the
/// rollout's [`routes_stamp`](RolloutTrack::routes_stamp) and its namespace's
/// [`services_stamp`](Namespace::services_stamp)): asked again at every look, it changes only
/// when a Service's selector or the rollout's revisions, Services or role labels do.
#[derive(Debug, Default)]
pub(crate) struct RoutingCache {
    by_rollout: crate::base::by_name::ByName<KeptRouting>,
}

/// One rollout's routing, by Service name, and the stamps it was worked out under.
#[derive(Debug)]
struct KeptRouting {
    rollout: u64,
    services: u64,
    routed: Vec<(String, Route)>,
}

impl RoutingCache {
    /// [`World::routing`] of `track`.
    pub fn routing<'a>(&mut self, world: &'a World, track: &RolloutTrack) -> Vec<Routed<'a>> {
        let Some(n) = world.namespace(&track.namespace) else {
            return Vec::new();
        };
        let stamps = (track.routes_stamp(), n.services_stamp());
        if let Some(kept) = self.by_rollout.get(&track.namespace, &track.name) {
            if (kept.rollout, kept.services) == stamps {
                return kept
                    .routed
                    .iter()
                    .filter_map(|(name, why)| {
                        let (name, svc) = n.service_entry(name)?;
                        Some((name, svc, *why))
                    })
                    .collect();
            }
        }
        let routed = n.routing(track);
        let kept = KeptRouting {
            rollout: stamps.0,
            services: stamps.1,
            routed: routed
                .iter()
                .map(|(name, _, why)| ((*name).to_owned(), *why))
                .collect(),
        };
        self.by_rollout.set(&track.namespace, &track.name, kept);
        routed
    }
}

impl World {
    /// The Services that route to `track`, in name order, with why ([`Namespace::routing`]).
    pub fn routing<'a>(&'a self, track: &RolloutTrack) -> Vec<Routed<'a>> {
        self.namespace(&track.namespace)
            .map(|n| n.routing(track))
            .unwrap_or_default()
    }

    /// The Applications that manage `track`, by namespace and name
    /// ([`World::apps_of_rollout`]).
    pub fn apps_of<'a>(&'a self, track: &'a RolloutTrack) -> impl Iterator<Item = &'a AppObj> + 'a {
        self.apps_of_rollout(&track.namespace, &track.name, track.tracked_by.as_deref())
    }
}

/// True when `pod` belongs to a ReplicaSet that is none of `track`'s revisions though its hash
/// label may name one: an Experiment's, whose ReplicaSet (`<experiment>-<template>`) the
/// controller labels with a hash computed the same way from the same template. A pod whose
/// ReplicaSet is not recorded yet is the rollout's when that name is `<rollout>-<hash>`.
pub(crate) fn foreign(track: &RolloutTrack, pod: &PodObj) -> bool {
    let (Some(owner), Some(hash)) = (pod.owner.as_deref(), pod.hash.as_deref()) else {
        return false;
    };
    !track.replicasets.contains_key(owner)
        && owner
            .strip_prefix(track.name())
            .and_then(|rest| rest.strip_prefix('-'))
            != Some(hash)
}

/// The revision (pod-template hash) of a pod of `track`: its hash label when it names a
/// revision of the rollout, else its owner ReplicaSet's hash, else by name
/// (`<rollout>-<hash>-<suffix>`). None for a pod of another ReplicaSet ([`foreign`]).
pub(crate) fn revision<'a>(
    track: &'a RolloutTrack,
    pod_name: &str,
    pod: Option<&'a PodObj>,
) -> Option<&'a str> {
    if let Some(p) = pod {
        if foreign(track, p) {
            return None;
        }
        if let Some(h) = p.hash.as_deref() {
            if track
                .replicasets
                .values()
                .any(|rs| rs.hash.as_deref() == Some(h))
            {
                return Some(h);
            }
        }
        if let Some(owner) = &p.owner {
            if let Some(h) = track
                .replicasets
                .get(owner.as_str())
                .and_then(|rs| rs.hash.as_deref())
            {
                return Some(h);
            }
        }
        if p.hash.is_some() {
            return None;
        }
    }
    // `<replicaset>-<suffix>`, the suffix without a dash: the ReplicaSet is named by what comes
    // before the last dash, and looked up (they are keyed by name), not matched against each.
    let (replicaset, _) = pod_name.rsplit_once('-')?;
    track.replicasets.get(replicaset)?.hash.as_deref()
}

/// True when a ReplicaSet of `track` has pod-template hash `hash`.
pub(crate) fn has_revision(track: &RolloutTrack, hash: &str) -> bool {
    track
        .replicasets
        .values()
        .any(|rs| rs.hash.as_deref() == Some(hash))
}

/// `revision(track, pod_name, pod) == Some(hash)`, answered with fewer walks over the
/// rollout's ReplicaSets: `has_hash` is [`has_revision`]`(track, hash)`, asked once per look
/// rather than per pod (this runs for every ready endpoint of a Service on every look).
pub(crate) fn of_revision(
    track: &RolloutTrack,
    pod_name: &str,
    pod: Option<&PodObj>,
    hash: &str,
    has_hash: bool,
) -> bool {
    let by_name = || revision(track, pod_name, None) == Some(hash);
    let Some(p) = pod else {
        return by_name();
    };
    if foreign(track, p) {
        return false;
    }
    let owner = || {
        p.owner
            .as_ref()
            .and_then(|o| track.replicasets.get(o))
            .and_then(|rs| rs.hash.as_deref())
    };
    match p.hash.as_deref() {
        Some(h) if h == hash => has_hash || owner() == Some(hash),
        // Its own label names another revision of the rollout, or its owner decides.
        Some(h) => owner() == Some(hash) && !has_revision(track, h),
        None => match owner() {
            Some(o) => o == hash,
            None => by_name(),
        },
    }
}

/// A Service that routes to a rollout: its name, the Service, and why.
pub(crate) type Routed<'a> = (&'a str, &'a ServiceObj, Route);

/// Why a Service routes to a rollout's pods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `spec.strategy.canary.canaryService`.
    Canary,
    /// `spec.strategy.canary.stableService`.
    Stable,
    /// Its selector selects the pods of at least one revision of the rollout.
    Selects,
    /// It selects them by a label of the rollout's `stableMetadata`: meant for the stable pods
    /// only (the controller puts the label there, and moves it with the role).
    SelectsStable,
    /// Likewise by a label of its `canaryMetadata`: meant for the canary pods only.
    SelectsCanary,
}

impl Route {
    /// The strategy field that names a Service of this route: `stableService` and
    /// `canaryService`, a blue-green rollout's `activeService` and `previewService`; `None` for
    /// a Service that only selects the rollout's pods.
    pub fn field(self, blue_green: bool) -> Option<&'static str> {
        match (self, blue_green) {
            (Route::Stable, false) => Some("stableService"),
            (Route::Canary, false) => Some("canaryService"),
            (Route::Stable, true) => Some("activeService"),
            (Route::Canary, true) => Some("previewService"),
            _ => None,
        }
    }
}

/// What role `selector` picks by the rollout's ephemeral metadata: the stable pods, the canary
/// pods, or neither (no key of it is one of the labels the controller moves with the role).
fn ephemeral_role(track: &RolloutTrack, selector: &BTreeMap<String, String>) -> Route {
    let has =
        |labels: &BTreeMap<String, String>| selector.iter().any(|(k, v)| labels.get(k) == Some(v));
    if has(&track.stable_labels) {
        Route::SelectsStable
    } else if has(&track.canary_labels) {
        Route::SelectsCanary
    } else {
        Route::Selects
    }
}

/// How `service` relates to `track`, if at all.
pub(crate) fn route(track: &RolloutTrack, name: &str, svc: &ServiceObj) -> Option<Route> {
    if track.canary_service.as_deref() == Some(name) {
        return Some(Route::Canary);
    }
    if track.stable_service.as_deref() == Some(name) {
        return Some(Route::Stable);
    }
    let selector = svc.selector.as_ref()?;
    track
        .replicasets
        .values()
        .filter(|rs| !rs.deleted && !rs.pod_labels.is_empty())
        .any(|rs| selects(selector, &rs.pod_labels))
        .then(|| ephemeral_role(track, selector))
}

/// True when a ready endpoint of `service` is a pod of `track`'s revision `hash`: what a
/// non-empty `membership(..)[hash]` says, without collecting every endpoint (this runs on
/// every pod and endpoint change).
pub(crate) fn serves_revision(
    world: &World,
    track: &RolloutTrack,
    service: &str,
    hash: &str,
) -> bool {
    let Some(n) = world.namespace(&track.namespace) else {
        return false;
    };
    let has_hash = has_revision(track, hash);
    // A pod of the revision is usually named `<rollout>-<hash>-<suffix>` (its ReplicaSet's
    // name and a suffix): those endpoints are asked first, then the others. Each endpoint is
    // asked once, so the answer is the same, with fewer pods looked up (this runs at every
    // record that touches the rollout, and the stable pods often come first).
    let named = |p: &str| {
        p.strip_prefix(track.name.as_str())
            .and_then(|r| r.strip_prefix('-'))
            .and_then(|r| r.strip_prefix(hash))
            .is_some_and(|r| r.starts_with('-'))
    };
    let serves = |first: bool| {
        n.slices_of(service).any(|(_, slice)| {
            slice.endpoints.iter().filter(|e| e.ready).any(|e| {
                e.pod.as_deref().is_some_and(|p| {
                    named(p) == first && of_revision(track, p, n.pod(p), hash, has_hash)
                })
            })
        })
    };
    serves(true) || serves(false)
}

/// Ready endpoint pods of `service` by revision of `track` (`""`: not a pod of the rollout).
pub(crate) fn membership(
    world: &World,
    track: &RolloutTrack,
    service: &str,
) -> BTreeMap<String, Vec<String>> {
    let mut by: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (_, slice) in world.slices_of(&track.namespace, service) {
        for e in slice.endpoints.iter().filter(|e| e.ready) {
            let (rev, who) = match &e.pod {
                Some(p) => (
                    revision(track, p, world.pod(&track.namespace, p))
                        .unwrap_or_default()
                        .to_owned(),
                    p.to_string(),
                ),
                None => (String::new(), e.address.to_string()),
            };
            by.entry(rev).or_default().push(who);
        }
    }
    for pods in by.values_mut() {
        pods.sort();
        pods.dedup();
    }
    by
}

/// Records on `track`'s traffic timeline the ready endpoints by revision of every Service that
/// routes to it (`routing`, [`World::routing`] of it), where they changed.
pub(crate) fn observe(track: &mut RolloutTrack, world: &World, routing: &[Routed<'_>], pos: At) {
    if !track.wants_traffic() {
        return;
    }
    for &(service, _, _) in routing {
        let now = membership(world, track, service);
        track.record_traffic(service, now, pos);
    }
}
