//! `no-ready-endpoints` (error): a Service that was taking traffic had no ready endpoint: the
//! requests it took in that window reached no pod.
//!
//! # What it detects
//! A Service that takes traffic whose EndpointSlices (`kubernetes.io/service-name`) hold no
//! ready address for at least 5 s. A Service takes traffic when it is the rollout's
//! `stableService` at a weight above 0 (100 less the canary's weight with traffic routing, all of
//! it without), its `canaryService` at a canary weight above 0 (with traffic routing), a
//! blue-green rollout's `activeService`, a Service that selects the rollout's pods (all that is
//! sent to it), a Service a recorded Ingress, HTTPRoute or VirtualService sends a share to, or a
//! Service that selects a plain Deployment's pods and had ready endpoints before. A
//! preview Service, a canary Service without traffic routing and a Service none of whose
//! EndpointSlices was recorded are judged only when a recorded router sends to them.
//!
//! Each window is one finding: when it began (the last ready endpoint went, or traffic moved to
//! a Service that had none), when it ended (or that it still held at the end of the recording),
//! how long, and the share of traffic the Service was taking. Its cause is read from the
//! evidence: the ReplicaSet whose pods were the last endpoints and why the controller scaled it
//! down (the previous active ReplicaSet `scaleDownDelaySeconds` after a blue-green promotion, a
//! canary scaled down after an abort, a stable ReplicaSet scaled down by `dynamicStableScale`),
//! pods that stopped being Ready, a selector that changed, or weights that moved to a Service
//! with no ready endpoint (an abort moving traffic back to a stable Service whose pods are not
//! Ready yet).
//!
//! # Why it matters
//! Every request the Service took in that window failed: an outage, however short, whatever the
//! rollout's phase or the GitOps status said. The postmortem needs its start, end and share;
//! the fix is the setting that lets the controller remove the last endpoint before the next
//! ones are in.
//!
//! # Example
//! A blue-green rollout with `scaleDownDelaySeconds: 3` is promoted: the active Service
//! switches to `7c9d5f8b6d`, the controller scales the previous ReplicaSet to 0 three seconds
//! later, and the Service's EndpointSlice lists none of `7c9d5f8b6d`'s pods for 23 s.
//!
//! # Evidence
//! The EndpointSlices with no ready endpoint, the ReplicaSet scaled down, the pods that were the
//! last endpoints, the rollout's weights.
//!
//! # Remedy
//! While it holds: see which pods the Service selects and why none is Ready or listed. After:
//! the setting the cause names (`scaleDownDelaySeconds` longer than the endpoints take to follow
//! a switch, `abortScaleDownDelaySeconds`, `dynamicStableScale`, readiness probes, a selector
//! kept out of the render).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::base::HashMap;

use rf_format::{Kind, Timestamp};

use crate::base::At;
use crate::base::time::rfc3339;
use crate::detectors::{DeploymentScene, Detector, Scene};
use crate::model::rollout::{RolloutTrack, ScaleDown};
use crate::model::traffic::{Route, revision};
use crate::model::world::{Router, Touched, World, selects};
use crate::report::finding::{
    ConditionChange, Evidence, Finding, Interval, Resolved, Rule, Subject,
};

/// How long a Service taking traffic may have no ready endpoint before it counts: the
/// endpointslice controller follows a pod's readiness within a second or two.
pub(crate) const GRACE_SECONDS: i64 = 5;

/// Windows reported per Service of a rollout: a Service that flaps all day makes one finding
/// per window up to this many, and the last says how many more followed.
const KEEP_WINDOWS: u32 = 32;

/// Endpoint pod names remembered per Service: enough to name them.
const KEEP_PODS: usize = 8;

/// (namespace, rollout, Service).
type Key = (String, String, String);

/// The detector, for the registry (`crate::report::rules`); `snapshot`: the records are one snapshot.
pub(crate) fn detector(_snapshot: bool) -> Box<dyn Detector> {
    Box::new(NoReadyEndpoints::default())
}

/// What share of traffic a Service takes, and why that is known.
#[derive(Debug, Clone)]
struct Share {
    /// Percent of the rollout's traffic, when a weight says it.
    percent: Option<i64>,
    words: String,
    /// A recorded router sends it a share.
    routed: bool,
}

/// A Service seen with no ready endpoint while taking traffic.
#[derive(Debug, Clone)]
struct Open {
    since: At,
    share: Share,
    cause: Cause,
    /// Reported: the start of its finding.
    fired: bool,
}

/// The last ready endpoints seen of a Service: their pods and the revision of the first.
#[derive(Debug, Clone, Default)]
struct LastReady {
    pods: Vec<String>,
    hash: Option<String>,
}

/// What emptied the Service, in words, with the setting that prevents it and evidence.
#[derive(Debug, Clone, Default)]
struct Cause {
    words: String,
    prevent: String,
    evidence: Vec<Evidence>,
}

#[derive(Debug)]
struct Closed {
    end: Timestamp,
    how: String,
}

/// What is followed of one Service that routes to a rollout.
#[derive(Debug, Default)]
struct Svc {
    /// It takes traffic (as of the rollout's last look, until this one decides).
    taking: bool,
    /// It took traffic at the look before.
    was_taking: bool,
    /// Its ready endpoints when it last had some.
    last: Option<LastReady>,
    /// The endpoints stamp ([`crate::model::world::Namespace::endpoints_stamp`]) at which its
    /// ready endpoints were last found to be `last`'s: while it holds, they still are.
    ready_at: Option<u64>,
    /// A window of no ready endpoint, open now.
    open: Option<Open>,
}

/// The Services followed of one rollout or Deployment, and when a window of one is due.
#[derive(Debug, Default)]
struct Follow {
    svcs: BTreeMap<String, Svc>,
    due: Option<Timestamp>,
}

#[derive(Debug, Default)]
pub(crate) struct NoReadyEndpoints {
    /// Namespace -> rollout -> Service -> what is followed: looked up by the scene's own
    /// `&str`s, with no key built per look (this runs at every record around a rollout).
    state: HashMap<String, HashMap<String, Follow>>,
    /// Windows that ended, by key and start.
    closed: BTreeMap<(Key, Timestamp), Closed>,
    /// Windows reported per key, and those past [`KEEP_WINDOWS`].
    windows: BTreeMap<Key, (u32, u32)>,
    changes: VecDeque<ConditionChange>,
}

/// How a Service takes a rollout's traffic (its words are made only for a finding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Takes {
    /// A blue-green rollout's activeService: all of it.
    Active,
    /// The stableService with traffic routing, at 100 less the canary's weight.
    Stable(i64),
    /// The canaryService with traffic routing, at the canary's weight.
    Canary(i64),
    /// The stableService without traffic routing: all that is sent to it.
    StableAll,
    /// A Service selecting the rollout's stable pods by its `stableMetadata`.
    SelectsStable,
    /// A Service selecting the rollout's pods.
    Selects,
    /// Only a recorded router sends to it.
    ByRouter,
}

impl Takes {
    fn percent(self) -> Option<i64> {
        match self {
            Takes::Active => Some(100),
            Takes::Stable(w) | Takes::Canary(w) => Some(w),
            _ => None,
        }
    }

    /// The share it takes, in words, with what a recorded router sends it.
    fn share(self, s: &Scene<'_>, name: &str) -> Share {
        let words = match self {
            Takes::Active => format!("all of the rollout's traffic: {name} is its activeService"),
            Takes::Stable(w) => format!(
                "{w}% of the rollout's traffic: {name} is its stableService and the canary weight is {}",
                100 - w
            ),
            Takes::Canary(w) => {
                format!("{w}% of the rollout's traffic: {name} is its canaryService at that weight")
            }
            Takes::StableAll => {
                format!("all the traffic sent to {name}, the rollout's stableService")
            }
            Takes::SelectsStable => format!(
                "all the traffic sent to {name}, which selects the rollout's stable pods"
            ),
            Takes::Selects => {
                format!("all the traffic sent to {name}, which selects the rollout's pods")
            }
            Takes::ByRouter => String::new(),
        };
        let router = router_share(s.world, s.track.namespace(), name);
        let routed = router.as_ref().is_some_and(|(p, _)| *p > 0);
        let words = match (words.is_empty(), router) {
            (true, Some((_, r))) => r,
            (false, Some((_, r))) => format!("{words}; {r}"),
            (_, None) => words,
        };
        Share {
            percent: self.percent(),
            words,
            routed,
        }
    }
}

/// The Services of `s`'s rollout that take traffic, and how.
fn taking_traffic<'a>(s: &'a Scene<'_>) -> Vec<(&'a str, Takes)> {
    let track = s.track;
    let Some(cur) = track.last() else {
        return Vec::new();
    };
    let weight = cur.canary_weight.unwrap_or(0).clamp(0, 100);
    let routed = track.traffic_routed();
    let blue_green = track.is_blue_green();
    let promoted = cur.pod_hash.is_some() && cur.pod_hash == cur.stable_rs;
    // Asked only of a Service no weight gives traffic (a range over the routers copies the
    // namespace's name).
    let mut routers: Option<bool> = None;
    let mut out = Vec::new();
    for (name, _, route) in s.routing {
        let takes = match (route, blue_green) {
            (Route::Stable | Route::SelectsStable, true) => Some(Takes::Active),
            (Route::Stable, false) if routed => (weight < 100).then_some(Takes::Stable(100 - weight)),
            (Route::Canary, false) if routed => {
                (weight > 0 && !promoted).then_some(Takes::Canary(weight))
            }
            (Route::Stable, false) => Some(Takes::StableAll),
            (Route::SelectsStable, false) => Some(Takes::SelectsStable),
            (Route::Selects, _) => Some(Takes::Selects),
            (Route::Canary | Route::SelectsCanary, _) => None,
        };
        // A preview or canary Service is judged when a recorded router sends to it.
        let takes = takes.or_else(|| {
            let any = *routers
                .get_or_insert_with(|| s.world.routers_in(track.namespace()).next().is_some());
            (any && router_share(s.world, track.namespace(), name).is_some_and(|(p, _)| p > 0))
                .then_some(Takes::ByRouter)
        });
        if let Some(t) = takes {
            out.push((*name, t));
        }
    }
    out
}

/// The largest share a recorded router in `ns` sends to `service`, as a percent of that rule's
/// traffic and in words.
fn router_share(world: &World, ns: &str, service: &str) -> Option<(i64, String)> {
    let mut best: Option<(i64, String)> = None;
    for r in world.routers_in(ns) {
        for rule in &r.rules {
            if !rule.backends.iter().any(|b| &*b.service == service) {
                continue;
            }
            let (picked, total) = rule.share(r.router, |b| &*b.service == service);
            let pct = if total > 0 { picked * 100 / total } else { 0 };
            if best.as_ref().is_none_or(|(p, _)| pct > *p) {
                let kind = match r.router {
                    Router::Ingress => "Ingress",
                    Router::HttpRoute => "HTTPRoute",
                    Router::VirtualService => "VirtualService",
                };
                best = Some((
                    pct,
                    format!(
                        "{kind} {} sends it {pct}% of {}",
                        r.name,
                        rule.match_words().join(", ")
                    ),
                ));
            }
        }
    }
    best
}

/// The ready endpoints of `service` as its slices list them: pod names, or addresses of
/// endpoints that are no pod.
fn ready_names<'a>(world: &'a World, ns: &str, service: &str) -> impl Iterator<Item = &'a str> {
    world
        .slices_of(ns, service)
        .flat_map(|(_, slice)| slice.endpoints.iter().filter(|e| e.ready))
        .map(|e| e.pod.as_deref().unwrap_or(&e.address))
}

/// The first [`KEEP_PODS`] ready endpoints of `service`, as listed.
fn first_ready(world: &World, ns: &str, service: &str) -> Vec<String> {
    ready_names(world, ns, service)
        .take(KEEP_PODS)
        .map(str::to_owned)
        .collect()
}

/// How a window of `service` ended when it has ready endpoints again: `ready endpoints again:`
/// the first [`KEEP_PODS`] of them, sorted.
fn back_words(world: &World, ns: &str, service: &str) -> Option<String> {
    let mut ready: Vec<&str> = ready_names(world, ns, service).collect();
    if ready.is_empty() {
        return None;
    }
    ready.sort_unstable();
    ready.dedup();
    ready.truncate(KEEP_PODS);
    Some(format!("ready endpoints again: {}", ready.join(", ")))
}

/// True when a ReplicaSet of the rollout whose pods `service` selects reports ready replicas.
fn counts_ready(s: &Scene<'_>, service: &str) -> bool {
    let Some(sel) = s
        .world
        .namespace(s.track.namespace())
        .and_then(|n| n.service(service))
        .and_then(|svc| svc.selector.as_ref())
    else {
        return false;
    };
    s.track
        .replicasets()
        .values()
        .any(|rs| !rs.deleted && rs.ready > 0 && selects(sel, &rs.pod_labels))
}

/// A selector as `key=value,...`.
fn selector_words(sel: Option<&BTreeMap<String, String>>) -> String {
    sel.map(|m| {
        m.iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    })
    .unwrap_or_else(|| "none".to_owned())
}

/// The rollout's phase, weight and abort, for evidence.
fn rollout_words(cur: &crate::model::rollout::Snapshot) -> String {
    let mut words = vec![format!("phase {}", cur.phase.as_deref().unwrap_or("unknown"))];
    if let Some(w) = cur.canary_weight {
        words.push(format!("canary weight {w}"));
    }
    if cur.abort {
        words.push("aborted".to_owned());
    }
    words.join(", ")
}

/// What emptied `service`, from what the world holds now and its last ready endpoints.
fn cause_of(s: &Scene<'_>, service: &str, was_taking: bool, last: Option<&LastReady>) -> Cause {
    let track = s.track;
    let ns = track.namespace();
    let Some(cur) = track.last() else {
        return Cause::default();
    };
    let mut evidence = vec![track.evidence(cur.pos, rollout_words(cur))];
    if !was_taking {
        // Traffic moved to a Service that had no ready endpoint.
        let (words, prevent) = if cur.abort {
            let mut words = format!(
                "the rollout was aborted and the controller moved the traffic back to {service}, which had no ready endpoint"
            );
            if track.dynamic_stable_scale() {
                let stable = cur
                    .stable_rs
                    .as_deref()
                    .and_then(|h| track.rs_by_hash(h));
                if let Some(rs) = stable {
                    words.push_str(&format!(
                        ": with dynamicStableScale the stable ReplicaSet {} had been scaled down as the canary's weight rose, and had {} ready of {} replicas",
                        rs.name, rs.ready, rs.replicas
                    ));
                    evidence.push(track.rs_evidence(rs, rs.last, format!("{} ready of {}", rs.ready, rs.replicas)));
                }
            }
            (
                words,
                if track.dynamic_stable_scale() {
                    "with dynamicStableScale the controller shifts the weight back as it counts stable replicas available; the Service's endpoints lagged behind that count: give the stable pods a readiness probe that passes only when they serve (and minReadySeconds), or turn dynamicStableScale off so the stable ReplicaSet stays at full size during the canary".to_owned()
                } else {
                    "keep the stable ReplicaSet at full size during the canary (no dynamicStableScale) and make its pods' readiness mean they serve".to_owned()
                },
            )
        } else {
            (
                format!("traffic moved to {service} while it had no ready endpoint"),
                "move weight to a Service only once its endpoints hold ready pods: a readiness probe that passes only when the pod serves lets the controller's availability checks see it".to_owned(),
            )
        };
        return Cause {
            words,
            prevent,
            evidence,
        };
    }
    let Some(last) = last.filter(|l| !l.pods.is_empty()) else {
        return Cause {
            words: format!("{service} had no ready endpoint when it was first recorded"),
            prevent: "a readiness probe that passes only when the pod serves, and enough replicas that one going away leaves others".to_owned(),
            evidence,
        };
    };
    let n = s.world.namespace(ns);
    // The Service's selector no longer selects the pods that were its endpoints.
    if let (Some(svc), Some(n)) = (n.and_then(|n| n.service(service)), n) {
        let still_selected = last.pods.iter().any(|p| {
            n.pod(p).is_none_or(|pod| {
                svc.selector
                    .as_ref()
                    .is_none_or(|sel| pod.labels.is_none() || selects(sel, pod.labels()))
            })
        });
        if !still_selected {
            let sel = selector_words(svc.selector.as_ref());
            evidence.push(Evidence::of(
                svc.pos,
                Subject::new(Kind::Service, ns, service),
                format!("selector {sel}"),
            ));
            return Cause {
                words: format!(
                    "{service}'s selector changed to {sel}, which selects none of the pods that were its endpoints ({}) and no ready pod",
                    last.pods.join(", ")
                ),
                prevent: "change a Service's selector only to one that selects ready pods; a selector the rollout's controller manages (its pod-template hash) is not the render's to write".to_owned(),
                evidence,
            };
        }
    }
    let gone: Vec<&String> = last
        .pods
        .iter()
        .filter(|p| n.and_then(|n| n.pod(p)).is_none())
        .collect();
    let listed_unready: BTreeSet<&str> = s
        .world
        .slices_of(ns, service)
        .flat_map(|(_, slice)| slice.endpoints.iter().filter(|e| !e.ready))
        .filter_map(|e| e.pod.as_deref())
        .collect();
    let unready: Vec<&String> = last
        .pods
        .iter()
        .filter(|p| {
            listed_unready.contains(p.as_str())
                || n.and_then(|n| n.pod(p)).is_some_and(|pod| !pod.ready)
        })
        .collect();
    let hash = last.hash.as_deref();
    let rs = hash.and_then(|h| track.rs_by_hash(h));
    if !gone.is_empty() || rs.is_some_and(|r| r.replicas == 0) {
        if let Some(rs) = rs {
            evidence.push(track.rs_evidence(
                rs,
                rs.last,
                format!("scaled to {} ({} ready)", rs.replicas, rs.ready),
            ));
        }
        let rs_name = rs.map_or_else(|| "their ReplicaSet".to_owned(), |r| r.name.to_string());
        let current = cur.pod_hash.as_deref();
        let next = current.filter(|h| Some(*h) != hash);
        let svc = n.and_then(|n| n.service(service));
        let sel = svc.and_then(|svc| svc.selector.as_ref());
        // Whether the Service can ever list the current revision's pods.
        let selects_next = next.is_none_or(|h| {
            sel.is_none_or(|sel| {
                track
                    .rs_by_hash(h)
                    .is_none_or(|rs| rs.pod_labels.is_empty() || selects(sel, &rs.pod_labels))
            })
        });
        let (next_words, labels_missing) = next.map_or_else(|| (String::new(), false), |h| {
            if !selects_next {
                return (format!(
                    ", and its selector ({}) selects no pod of the current revision {h}",
                    selector_words(sel)
                ), false);
            }
            let ready: Vec<&crate::model::world::PodObj> = s
                .world
                .pods_of_hash(ns, h)
                .filter(|(_, p)| p.ready)
                .map(|(_, p)| p)
                .collect();
            let selected = ready
                .iter()
                .filter(|p| sel.is_none_or(|sel| p.labels.is_none() || selects(sel, p.labels())))
                .count();
            let ready = ready.len();
            if ready > 0 && selected == 0 {
                (format!(
                    ", while {ready} Ready pod(s) of {h} lacked labels its selector asks for ({})",
                    selector_words(sel)
                ), true)
            } else if ready > 0 {
                (format!(
                    ", while {ready} Ready pod(s) of {h} were not yet in its endpoints"
                ), false)
            } else {
                (format!(", while no pod of {h} was Ready"), false)
            }
        });
        if !selects_next {
            if let Some(svc) = svc {
                evidence.push(Evidence::of(
                    svc.pos,
                    Subject::new(Kind::Service, ns, service),
                    format!("selector {}", selector_words(sel)),
                ));
            }
        }
        let (words, prevent) = if track.is_blue_green() && hash != current {
            let delay = match track.scale_down() {
                ScaleDown::After(d) => format!("{d} s"),
                ScaleDown::Kept => "never".to_owned(),
                ScaleDown::Immediate => "at once".to_owned(),
            };
            (
                format!(
                    "the controller scaled the previous active ReplicaSet {rs_name} to 0 after the promotion (scaleDownDelaySeconds: {delay}), removing the pods that were {service}'s last ready endpoints ({}){next_words}",
                    last.pods.join(", ")
                ),
                "set scaleDownDelaySeconds (default 30) longer than the endpoints take to follow the active Service's switch, so the previous pods serve until the new ones are listed".to_owned(),
            )
        } else if cur.abort && hash == current {
            (
                format!(
                    "the rollout was aborted and the controller scaled the canary ReplicaSet {rs_name} down{}, removing {service}'s last ready endpoints ({})",
                    track
                        .abort_scale_down()
                        .map_or_else(String::new, |d| format!(" (abortScaleDownDelaySeconds: {d})")),
                    last.pods.join(", ")
                ),
                "move the weight off the canary Service before its pods go: abortScaleDownDelaySeconds (default 30) longer than the router takes to follow".to_owned(),
            )
        } else if track.dynamic_stable_scale() && hash.is_some() && hash == cur.stable_rs.as_deref() {
            (
                format!(
                    "dynamicStableScale scaled the stable ReplicaSet {rs_name} down as the canary's weight rose, removing {service}'s last ready endpoints ({}) while it still took traffic",
                    last.pods.join(", ")
                ),
                "with dynamicStableScale the stable Service must take no weight once its ReplicaSet is at 0: keep the weights and the stable scale together (a router the controller sets), or turn dynamicStableScale off".to_owned(),
            )
        } else if labels_missing {
            (
                format!(
                    "{rs_name} was scaled to {}, removing the pods that were {service}'s last ready endpoints ({}){next_words}",
                    rs.map_or(0, |r| r.replicas),
                    last.pods.join(", ")
                ),
                format!("the current revision's pods must carry the labels {service} selects ({}) before the previous pods go: a label the controller moves with the role (stableMetadata, activeMetadata) must reach the pods (see stale-role-labels), and a label the render writes must be on every revision", selector_words(sel)),
            )
        } else if !selects_next {
            (
                format!(
                    "the controller scaled {rs_name} to {} as the release replaced it, removing the pods that were {service}'s last ready endpoints ({}){next_words}",
                    rs.map_or(0, |r| r.replicas),
                    last.pods.join(", ")
                ),
                format!("{service}'s selector ({}) selects only pods of older revisions: select by labels every revision of the rollout carries, or send its traffic to the rollout's stableService", selector_words(sel)),
            )
        } else {
            (
                format!(
                    "{rs_name} was scaled to {}, removing the pods that were {service}'s last ready endpoints ({}){next_words}",
                    rs.map_or(0, |r| r.replicas),
                    last.pods.join(", ")
                ),
                "scale a ReplicaSet down only once another's pods are in the Service's endpoints".to_owned(),
            )
        };
        return Cause {
            words,
            prevent,
            evidence,
        };
    }
    if !unready.is_empty() {
        if let Some(p) = unready.first().and_then(|p| s.world.pod(ns, p)) {
            evidence.push(Evidence::of(
                p.pos,
                Subject::new(Kind::Pod, ns, unready[0]),
                "not Ready",
            ));
        }
        return Cause {
            words: format!(
                "the pods that were {service}'s last ready endpoints stopped being Ready ({})",
                unready.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ),
            prevent: "find why the pods failed their readiness probe (their containers' state, the kubelet's Events); enough replicas, and a PodDisruptionBudget, keep one serving".to_owned(),
            evidence,
        };
    }
    Cause {
        words: format!(
            "the pods that were {service}'s last ready endpoints ({}) left them while still Ready",
            last.pods.join(", ")
        ),
        prevent: "find what changed the pods' labels or the Service's endpoints".to_owned(),
        evidence,
    }
}

impl NoReadyEndpoints {
    fn change(&mut self, key: &Key, holds: bool, at: Timestamp) {
        if self.changes.len() == 256 {
            self.changes.pop_front();
        }
        self.changes.push_back(ConditionChange {
            rule: Rule::NoReadyEndpoints,
            rollout: Subject::new(Kind::Rollout, &key.0, &key.1),
            condition: format!("Service {}", key.2),
            holds,
            at,
        });
    }

    fn fire(&mut self, s: &Scene<'_>, key: &Key, open: &Open, out: &mut Vec<Finding>) {
        self.fire_for(s.track.subject(), s.world, key, open, s.now, out);
    }

    /// Reports the window `open` of Service `key.2`, about `owner` (a Rollout or a
    /// Deployment), at `now`.
    fn fire_for(
        &mut self,
        owner: Subject,
        world: &World,
        key: &Key,
        open: &Open,
        now: At,
        out: &mut Vec<Finding>,
    ) {
        let counts = self.windows.entry(key.clone()).or_default();
        if counts.0 >= KEEP_WINDOWS {
            counts.1 += 1;
            return;
        }
        counts.0 += 1;
        let (ns, service) = (key.0.as_str(), key.2.as_str());
        let start = open.since.at;
        let summary = format!(
            "Service {service} had no ready endpoint from {}, while it took {}",
            rfc3339(start),
            open.share.words
        );
        let explanation = format!(
            "Every request {service} took in that window reached no pod. Cause: {}.",
            open.cause.words
        );
        let mut evidence: Vec<Evidence> = world
            .slices_of(ns, service)
            .map(|(name, slice)| {
                Evidence::of(
                    slice.pos,
                    Subject::new(Kind::EndpointSlice, ns, name),
                    format!("endpoints of {service}: no ready address"),
                )
            })
            .collect();
        evidence.extend(open.cause.evidence.iter().cloned());
        let selector = world
            .namespace(ns)
            .and_then(|n| n.service(service))
            .and_then(|svc| svc.selector.as_ref())
            .map(|m| selector_words(Some(m)));
        let mut commands = vec![format!(
            "kubectl -n {ns} get endpointslices -l kubernetes.io/service-name={service} -o wide"
        )];
        if let Some(sel) = selector.filter(|s| !s.is_empty()) {
            commands.push(format!("kubectl -n {ns} get pods -l {sel} -o wide"));
        }
        commands.push(if owner.kind == Kind::Rollout {
            format!("kubectl argo rollouts get rollout {} -n {ns}", owner.name)
        } else {
            format!("kubectl -n {ns} get deployment {} -o wide", owner.name)
        });
        let mut finding = Finding::new(
            Rule::NoReadyEndpoints,
            Subject::new(Kind::Service, ns, service),
            owner,
            start,
            summary,
        )
        .explain(explanation)
        .with_evidence(evidence)
        .remedy(
            format!("While it holds, {service} serves nothing: see which pods it selects and why none is Ready or listed in its endpoints."),
            commands,
            format!("Prevent it: {}.", open.cause.prevent),
        );
        finding.window = Some(Interval {
            start,
            end: None,
            seconds: (now.at.0 - start.0) / 1_000_000_000,
        });
        out.push(finding);
    }
}

impl NoReadyEndpoints {
    /// The Services that select plain Deployment `d`'s pods, followed as a rollout's are:
    /// a window opens when one that served has no ready endpoint, and is reported once it held
    /// [`GRACE_SECONDS`] (at the record that ends it, or at the end).
    fn judge_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        let dep = d.dep;
        let ns = dep.namespace.as_str();
        // Endpoints change by their own records (which look here with no pod).
        if d.pod.is_some() || dep.pod_labels.is_empty() {
            return;
        }
        let Some(n) = d.world.namespace(ns) else {
            return;
        };
        let owner = crate::detectors::deployment_key(&dep.name);
        let mut svcs = match self.state.get_mut(ns).and_then(|m| m.get_mut(&owner)) {
            Some(slot) => std::mem::take(&mut slot.svcs),
            None => BTreeMap::new(),
        };
        let mut empty: Vec<String> = Vec::new();
        for (service, svc_obj) in n.services() {
            let Some(sel) = svc_obj.selector.as_ref() else {
                continue;
            };
            if !selects(sel, &dep.pod_labels) || !n.has_slices(service) {
                continue;
            }
            let svc: &mut Svc = svcs.entry(service.to_owned()).or_default();
            svc.taking = true;
            let ready = first_ready(d.world, ns, service);
            svc.ready_at = None;
            if !ready.is_empty() {
                svc.last = Some(LastReady {
                    pods: ready,
                    hash: None,
                });
                continue;
            }
            if svc.open.is_none() {
                let Some(last) = svc.last.clone() else {
                    continue;
                };
                let (words, prevent) = deployment_cause(d, service, &last);
                svc.open = Some(Open {
                    since: d.now,
                    share: Share {
                        percent: None,
                        words: format!(
                            "all the traffic sent to {service}, which selects the pods of Deployment {}",
                            dep.name
                        ),
                        routed: false,
                    },
                    cause: Cause {
                        words,
                        prevent,
                        evidence: vec![d.evidence(format!(
                            "{} of {} replicas ready",
                            dep.ready, dep.replicas
                        ))],
                    },
                    fired: false,
                });
            }
            empty.push(service.to_owned());
            if d.end {
                if let Some(open) = svc.open.as_mut().filter(|o| !o.fired) {
                    if d.now.at.0 - open.since.at.0 >= GRACE_SECONDS * 1_000_000_000 {
                        open.fired = true;
                        let open = open.clone();
                        let key = (ns.to_owned(), owner.clone(), service.to_owned());
                        self.fire_for(d.subject(), d.world, &key, &open, d.now, out);
                    }
                }
            }
        }
        // Windows that ended: reported when they held the grace.
        for (service, svc) in &mut svcs {
            if empty.contains(service) {
                continue;
            }
            let Some(open) = svc.open.take() else {
                continue;
            };
            let held = d.now.at.0 - open.since.at.0 >= GRACE_SECONDS * 1_000_000_000;
            let key = (ns.to_owned(), owner.clone(), service.clone());
            if !open.fired && held {
                self.fire_for(d.subject(), d.world, &key, &open, d.now, out);
            }
            if open.fired || held {
                let how = back_words(d.world, ns, service).unwrap_or_else(|| {
                    format!("{service} no longer selects the Deployment's pods")
                });
                self.closed
                    .insert((key, open.since.at), Closed { end: d.now.at, how });
            }
        }
        svcs.retain(|service, svc| svc.open.is_some() || n.service(service).is_some());
        self.state
            .entry(ns.to_owned())
            .or_default()
            .insert(
                owner,
                Follow { svcs, due: None },
            );
    }
}

/// What removed a Deployment's Service's last ready endpoints, and what prevents it.
fn deployment_cause(d: &DeploymentScene<'_>, service: &str, last: &LastReady) -> (String, String) {
    let ns = d.dep.namespace.as_str();
    let gone = last.pods.iter().filter(|p| d.world.pod(ns, p).is_none()).count();
    let pods = last.pods.join(", ");
    if gone == last.pods.len() {
        (
            format!(
                "the pods that were {service}'s last ready endpoints ({pods}) went, and no other pod of Deployment {} was Ready in their place",
                d.dep.name
            ),
            "keep a pod serving while others are replaced: a rolling update with maxUnavailable 0 (or replicas > 1), a readiness probe that passes only when the pod serves, and a PodDisruptionBudget".to_owned(),
        )
    } else {
        (
            format!("the pods that were {service}'s last ready endpoints ({pods}) stopped being Ready"),
            "find why the pods failed their readiness probe (their containers' state, the kubelet's Events); enough replicas, and a PodDisruptionBudget, keep one serving".to_owned(),
        )
    }
}

impl Detector for NoReadyEndpoints {
    fn take_changes(&mut self, out: &mut Vec<ConditionChange>) {
        out.extend(self.changes.drain(..));
    }

    fn on_deployment(&mut self, d: &DeploymentScene<'_>, out: &mut Vec<Finding>) {
        self.judge_deployment(d, out);
    }

    fn on_world(
        &mut self,
        s: &Scene<'_>,
        _facts: &mut super::Facts,
        out: &mut Vec<Finding>,
    ) -> Option<Timestamp> {
        let track = s.track;
        let (ns, name) = (track.namespace(), track.name());
        // Where traffic goes changes with the rollout (its weights), a Service, its endpoints
        // and a router; a pod's own record changes none of those (its endpoints' record
        // follows): the due time stands.
        if matches!(
            s.touched,
            Some(
                Touched::Pod { .. }
                    | Touched::App { .. }
                    | Touched::Analysis { .. }
                    | Touched::Flux
                    | Touched::Deployment { .. }
            )
        ) {
            return self
                .state
                .get(ns)
                .and_then(|m| m.get(name))
                .and_then(|f| f.due);
        }
        let judged = s.world.namespace(ns)?;
        let takes = taking_traffic(s);
        let known = self
            .state
            .get(ns)
            .and_then(|m| m.get(name))
            .is_some_and(|m| !m.svcs.is_empty());
        if takes.is_empty() && !known {
            return None;
        }
        // Taken out while looked at; the keys are copied only for a rollout not seen yet.
        let slot = match self.state.get_mut(ns).and_then(|m| m.get_mut(name)) {
            Some(slot) => slot,
            None => self
                .state
                .entry(ns.to_owned())
                .or_default()
                .entry(name.to_owned())
                .or_default(),
        };
        let mut svcs = std::mem::take(&mut slot.svcs);
        let mut due: Option<Timestamp> = None;
        // A record of endpoints changes only its Service: the others stand as they were.
        let only: Option<[Option<&str>; 2]> = match s.touched {
            Some(Touched::Endpoints { service, was, .. }) => {
                Some([service.as_deref(), was.as_deref()])
            }
            _ => None,
        };
        let relevant = |service: &str| only.is_none_or(|o| o.contains(&Some(service)));
        // The Services with no ready endpoint now, while taking traffic.
        let mut empty: Vec<&str> = Vec::new();
        for (service, svc) in &mut svcs {
            if relevant(service) {
                svc.was_taking = std::mem::take(&mut svc.taking);
            }
        }
        for &(service, how) in &takes {
            if !relevant(service) || !judged.has_slices(service) {
                continue;
            }
            let svc = match svcs.get_mut(service) {
                Some(svc) => svc,
                None => svcs.entry(service.to_owned()).or_default(),
            };
            svc.taking = true;
            let was_taking = svc.was_taking;
            // Its endpoints unchanged since they were found ready: they still are, the same.
            let stamp = judged.endpoints_stamp(service);
            if stamp.is_some() && svc.ready_at == stamp {
                continue;
            }
            let mut ready = ready_names(s.world, ns, service);
            if let Some(first) = ready.next() {
                // The last ready endpoints, copied only when they changed.
                let same = svc.last.as_ref().is_some_and(|l| {
                    let mut names = std::iter::once(first).chain(ready).take(KEEP_PODS);
                    l.pods.iter().all(|p| names.next() == Some(p.as_str()))
                        && names.next().is_none()
                });
                if !same {
                    let pods = first_ready(s.world, ns, service);
                    let hash = pods
                        .iter()
                        .find_map(|p| revision(track, p, s.world.pod(ns, p)))
                        .map(str::to_owned);
                    svc.last = Some(LastReady { pods, hash });
                }
                svc.ready_at = stamp;
                continue;
            }
            svc.ready_at = None;
            if svc.open.is_none() {
                // Taking traffic: it served before, a router sends to it, or the rollout
                // counts ready pods it selects. A Service of a first release whose pods were
                // never Ready served nothing yet.
                let share = how.share(s, service);
                if svc.last.is_none() && !share.routed && !counts_ready(s, service) {
                    continue;
                }
                // Traffic moved to it only when a weight says it takes a share now and it
                // took none at the last look; else its endpoints went.
                let endpoints_went = was_taking || share.percent.is_none() || svc.last.is_none();
                let cause = cause_of(s, service, endpoints_went, svc.last.as_ref());
                svc.open = Some(Open {
                    since: s.now,
                    share,
                    cause,
                    fired: false,
                });
            }
            empty.push(service);
            let Some(open) = svc.open.as_mut().filter(|o| !o.fired) else {
                continue;
            };
            if s.settled(open.since, GRACE_SECONDS) {
                open.fired = true;
                let open = open.clone();
                let key = (ns.to_owned(), name.to_owned(), service.to_owned());
                self.fire(s, &key, &open, out);
                self.change(&key, true, s.now.at);
            } else {
                let t = Scene::due(open.since, GRACE_SECONDS);
                due = Some(due.map_or(t, |d| d.min(t)));
            }
        }
        // Windows of this rollout's Services that ended with this look.
        for (service, svc) in &mut svcs {
            if !relevant(service) || empty.contains(&service.as_str()) {
                continue;
            }
            let Some(open) = svc.open.take() else {
                continue;
            };
            if !open.fired {
                continue;
            }
            let key = (ns.to_owned(), name.to_owned(), service.clone());
            self.change(&key, false, s.now.at);
            let how = back_words(s.world, ns, service).unwrap_or_else(|| {
                if svc.taking {
                    "its endpoints were no longer recorded".to_owned()
                } else {
                    format!("{service} took no more traffic")
                }
            });
            self.closed
                .insert((key, open.since.at), Closed { end: s.now.at, how });
        }
        // A Service is followed while it exists (its last endpoints are a later window's
        // cause, even after a time of taking no traffic).
        if only.is_none() {
            svcs.retain(|service, svc| svc.open.is_some() || judged.service(service).is_some());
        }
        if let Some(slot) = self.state.get_mut(ns).and_then(|m| m.get_mut(name)) {
            slot.svcs = svcs;
            slot.due = due;
        }
        due
    }

    fn on_end(
        &mut self,
        _tracks: &[&RolloutTrack],
        _world: &World,
        end: At,
        findings: &mut Vec<Finding>,
        _undecided: &mut Vec<(Subject, String)>,
    ) {
        let mut last_of: BTreeMap<Key, usize> = BTreeMap::new();
        for (i, f) in findings.iter_mut().enumerate() {
            if f.rule != Rule::NoReadyEndpoints {
                continue;
            }
            let owner = crate::detectors::workload_key(&f.rollout);
            let key = (f.rollout.namespace.clone(), owner, f.subject.name.clone());
            let closed = self.closed.get(&(key.clone(), f.at));
            let stop = closed.map_or(end.at, |c| c.end);
            let seconds = (stop.0 - f.at.0).max(0) / 1_000_000_000;
            let window = Interval {
                start: f.at,
                end: closed.map(|c| c.end),
                seconds,
            };
            let words = window.words();
            if let Some((head, tail)) = f.summary.split_once(&format!(" from {}", rfc3339(f.at))) {
                f.summary = format!("{head} {words}{tail}");
            }
            f.window = Some(window);
            if let Some(c) = closed {
                f.resolved = Some(Resolved {
                    at: c.end,
                    how: c.how.clone(),
                });
            }
            last_of.insert(key, i);
        }
        for (key, i) in last_of {
            let more = self.windows.get(&key).map_or(0, |c| c.1);
            if more > 0 {
                if let Some(f) = findings.get_mut(i) {
                    f.explanation.push_str(&format!(
                        " {more} more window(s) of {} followed and are not listed.",
                        key.2
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::Rule;
    use crate::testkit::{Kit, NAME, digest, pinned, template};

    fn selector(hash: &str) -> serde_json::Value {
        json!({"app": NAME, "rollouts-pod-template-hash": hash})
    }

    fn pod(kit: &mut Kit, hash: &str, suffix: &str, ready: bool) {
        let image = if hash == "stable0" { "app:1" } else { "app:2" };
        kit.pod(hash, suffix, ready, &pinned(image), &digest(image));
    }

    /// A blue-green rollout promoted to `new1`; the previous ReplicaSet is scaled down 3 s later
    /// and the active Service's slice lists no pod for `gap` seconds.
    fn blue_green_gap(gap: i64) -> (crate::Report, Vec<crate::Finding>) {
        let mut kit = Kit::new();
        kit.blue_green();
        kit.service(NAME, selector("stable0"));
        pod(&mut kit, "stable0", "s0", true);
        pod(&mut kit, "stable0", "s1", true);
        kit.slice(
            NAME,
            &[("checkout-api-stable0-s0", true), ("checkout-api-stable0-s1", true)],
        );
        kit.advance(5);
        kit.new_revision("new1", template("app:2", "c1"));
        kit.scale("new1", 5, template("app:2", "c1"));
        pod(&mut kit, "new1", "n0", true);
        kit.pause_before_promotion();
        kit.advance(30);
        kit.service(NAME, selector("new1"));
        kit.promote_blue_green("new1");
        kit.advance(3);
        kit.scale("stable0", 0, template("app:1", "c0"));
        kit.delete_pod("stable0", "s0");
        kit.delete_pod("stable0", "s1");
        kit.slice(NAME, &[]);
        kit.advance(gap);
        kit.slice(NAME, &[("checkout-api-new1-n0", true)]);
        kit.advance(60);
        kit.step(0);
        let found = kit.found.clone();
        (kit.finish(), found)
    }

    #[test]
    fn issue_48_a_blue_green_promotion_that_scaled_down_before_the_endpoints_followed_is_an_outage_window()
     {
        let (report, live) = blue_green_gap(23);
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::NoReadyEndpoints)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        let f = f[0];
        let w = f.window.expect("a window");
        assert_eq!(w.seconds, 23, "{w:?}");
        assert_eq!(w.end.map(|e| (e.0 - w.start.0) / 1_000_000_000), Some(23));
        assert!(f.summary.contains("(23 s)"), "{}", f.summary);
        assert!(f.summary.contains("all of the rollout's traffic"), "{}", f.summary);
        assert!(
            f.explanation.contains("previous active ReplicaSet checkout-api-stable0")
                && f.explanation.contains("scaleDownDelaySeconds: 30 s")
                && f.explanation.contains("1 Ready pod(s) of new1 were not yet in its endpoints"),
            "{}",
            f.explanation
        );
        assert!(f.remedy.prevention.contains("scaleDownDelaySeconds"), "{}", f.remedy.prevention);
        let r = f.resolved.as_ref().expect("ended");
        assert!(r.how.contains("checkout-api-new1-n0"), "{}", r.how);
        // Seen live at its grace, before it ended.
        assert_eq!(live.iter().filter(|f| f.rule == Rule::NoReadyEndpoints).count(), 1);
        // Not an adoption problem, and no advice not to promote a promoted rollout.
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::CanaryNotInEndpoints),
            "{:#?}",
            report.findings
        );
    }

    #[test]
    fn a_gap_shorter_than_the_grace_is_not_reported() {
        let (report, _) = blue_green_gap(super::GRACE_SECONDS - 2);
        assert!(
            report
                .findings
                .iter()
                .all(|f| f.rule != Rule::NoReadyEndpoints),
            "{:#?}",
            report.findings
        );
    }

    /// A canary with traffic routing and `dynamicStableScale`, at weight 100 with its stable
    /// ReplicaSet at 0, aborted: the weight moves back to the stable Service before its
    /// endpoints hold a ready pod.
    fn dynamic_abort(back_after: Option<i64>) -> (crate::Report, Kit) {
        let mut kit = Kit::new();
        kit.spec(|s| {
            s["strategy"]["canary"]["canaryService"] = json!("checkout-api-canary");
            s["strategy"]["canary"]["stableService"] = json!(NAME);
            s["strategy"]["canary"]["dynamicStableScale"] = json!(true);
            s["strategy"]["canary"]["trafficRouting"] =
                json!({"nginx": {"stableIngress": NAME}});
        });
        kit.service(NAME, selector("stable0"));
        kit.service("checkout-api-canary", selector("stable0"));
        pod(&mut kit, "stable0", "s0", true);
        kit.slice(NAME, &[("checkout-api-stable0-s0", true)]);
        kit.advance(5);
        kit.new_revision("new1", template("app:2", "c1"));
        kit.service("checkout-api-canary", selector("new1"));
        kit.scale("new1", 5, template("app:2", "c1"));
        pod(&mut kit, "new1", "n0", true);
        kit.slice("checkout-api-canary", &[("checkout-api-new1-n0", true)]);
        kit.status(|s| {
            s.insert("currentStepIndex".into(), json!(3));
            s.insert(
                "canary".into(),
                json!({"weights": {"canary": {"weight": 100, "podTemplateHash": "new1"},
                                   "stable": {"weight": 0, "podTemplateHash": "stable0"}}}),
            );
        });
        kit.advance(2);
        kit.scale("stable0", 0, template("app:1", "c0"));
        kit.delete_pod("stable0", "s0");
        kit.slice(NAME, &[]);
        kit.advance(60);
        kit.status(|s| {
            s.insert("abort".into(), json!(true));
            s.insert("phase".into(), json!("Degraded"));
            s.insert(
                "canary".into(),
                json!({"weights": {"canary": {"weight": 0, "podTemplateHash": "new1"},
                                   "stable": {"weight": 100, "podTemplateHash": "stable0"}}}),
            );
        });
        kit.scale("stable0", 5, template("app:1", "c0"));
        if let Some(after) = back_after {
            kit.advance(after);
            pod(&mut kit, "stable0", "s2", true);
            kit.slice(NAME, &[("checkout-api-stable0-s2", true)]);
        }
        kit.advance(30);
        kit.step(0);
        let report = std::mem::replace(&mut kit, Kit::new()).finish();
        (report, kit)
    }

    #[test]
    fn issue_48_an_abort_that_moves_the_weight_back_before_the_stable_pods_are_ready_is_an_outage_window()
     {
        let (report, _) = dynamic_abort(Some(40));
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::NoReadyEndpoints)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        let f = f[0];
        assert_eq!(f.subject.name, NAME);
        assert_eq!(f.window.map(|w| w.seconds), Some(40));
        assert!(f.summary.contains("100% of the rollout's traffic"), "{}", f.summary);
        assert!(
            f.explanation.contains("aborted") && f.explanation.contains("dynamicStableScale"),
            "{}",
            f.explanation
        );
        assert!(f.remedy.prevention.contains("dynamicStableScale"), "{}", f.remedy.prevention);
        // At weight 100 the stable Service took nothing: the window opens at the abort.
        let abort = report
            .findings
            .iter()
            .flat_map(|f| &f.evidence)
            .filter(|e| e.detail.contains("aborted"))
            .map(|e| e.at)
            .min();
        assert_eq!(Some(f.at), abort);
    }

    #[test]
    fn a_window_still_open_at_the_end_says_so() {
        let (report, _) = dynamic_abort(None);
        let f = report
            .findings
            .iter()
            .find(|f| f.rule == Rule::NoReadyEndpoints)
            .expect("a window");
        let w = f.window.expect("window");
        assert_eq!(w.end, None);
        assert_eq!(w.seconds, 30);
        assert!(f.summary.contains("still at the end (30 s so far)"), "{}", f.summary);
        assert!(f.resolved.is_none());
    }

    #[test]
    fn the_condition_is_active_while_it_holds() {
        let mut kit = Kit::with_options(crate::Options {
            conditions: true,
            ..crate::Options::default()
        });
        kit.blue_green();
        kit.service(NAME, selector("stable0"));
        pod(&mut kit, "stable0", "s0", true);
        kit.slice(NAME, &[("checkout-api-stable0-s0", true)]);
        kit.advance(1);
        pod(&mut kit, "stable0", "s0", false);
        kit.slice(NAME, &[("checkout-api-stable0-s0", false)]);
        kit.advance(10);
        kit.step(0);
        let holds: Vec<bool> = kit
            .changes
            .iter()
            .filter(|c| c.rule == Rule::NoReadyEndpoints)
            .map(|c| c.holds)
            .collect();
        assert_eq!(holds, [true]);
        let f = kit.of_rule(Rule::NoReadyEndpoints);
        assert_eq!(f.len(), 1);
        assert!(f[0].explanation.contains("stopped being Ready"), "{}", f[0].explanation);
        kit.advance(1);
        pod(&mut kit, "stable0", "s0", true);
        kit.slice(NAME, &[("checkout-api-stable0-s0", true)]);
        let holds: Vec<bool> = kit
            .changes
            .iter()
            .filter(|c| c.rule == Rule::NoReadyEndpoints)
            .map(|c| c.holds)
            .collect();
        assert_eq!(holds, [true, false]);
    }

    /// A plain Deployment's only pod replaced with no other Ready in its place: the Service
    /// that selects its pods had no ready endpoint for 12 s.
    #[test]
    fn issue_48_a_service_of_a_plain_deployment_with_no_ready_endpoint_is_a_window() {
        let mut kit = Kit::new();
        let spec = json!({"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": pinned("web:1")}]}}});
        kit.plain_deployment("web", 1, spec);
        kit.service("web", json!({"app": "web"}));
        kit.deployment_pod("web", "aaaa", "p0", &pinned("web:1"), &digest("web:1"));
        kit.slice("web", &[("web-aaaa-p0", true)]);
        kit.advance(3);
        kit.delete_pod_named("web-aaaa-p0");
        kit.slice("web", &[]);
        kit.advance(12);
        kit.deployment_pod("web", "aaaa", "p1", &pinned("web:1"), &digest("web:1"));
        kit.slice("web", &[("web-aaaa-p1", true)]);
        kit.advance(30);
        let report = kit.finish();
        let f: Vec<_> = report
            .findings
            .iter()
            .filter(|f| f.rule == Rule::NoReadyEndpoints)
            .collect();
        assert_eq!(f.len(), 1, "{:#?}", report.findings);
        assert_eq!(f[0].rollout.name, "web");
        assert_eq!(f[0].window.map(|w| w.seconds), Some(12), "{:?}", f[0].window);
        assert!(f[0].resolved.is_some());
        assert!(f[0].explanation.contains("web-aaaa-p0"), "{}", f[0].explanation);
    }
}
