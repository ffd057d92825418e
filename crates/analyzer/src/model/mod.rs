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
