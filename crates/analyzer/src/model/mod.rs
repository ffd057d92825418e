//! The model of the controllers: each rollout's track (its observations classified into
//! transitions), the world of Services, EndpointSlices, Pods and Applications, the traffic
//! between them, and the diff of two pod templates. Detectors read this layer, never the views
//! it is built from.

pub(crate) mod analysis;
pub(crate) mod deployment_timeline;
pub(crate) mod diff;
pub(crate) mod history;
pub(crate) mod revisions;
pub(crate) mod rollout;
pub(crate) mod routes;
pub(crate) mod traffic;
pub(crate) mod world;

pub(crate) use crate::input::view::Step;

/// A number never given before in this process (and never 0): what a piece of state is
/// stamped with when it changes, so that a result worked out under the stamps it read holds
/// while they do, whichever object the state belongs to now.
pub(crate) fn stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}
