//! rf-scenarios: a deterministic simulator of Argo Rollouts incidents.
//!
//! It models the Argo Rollouts controller (v1.9/v1.10 semantics: a basic canary without traffic
//! routing, or blue-green with an active and a preview Service, promoted by hand), the
//! ReplicaSet controller, the scheduler and the kubelets (pods, the digest
//! each node pulled for an image), the endpointslice controller, and GitOps renders (optionally
//! as syncs of an Argo CD Application whose health follows the Rollout's), and emits the
//! [`rf_format::Record`]s a recorder watching the API server would have seen: the initial lists,
//! then `Added`/`Modified`/`Deleted` watch events of the Rollout, its ReplicaSets, their Pods,
//! the Services and their EndpointSlices, the Application and the Kubernetes Events about the
//! Rollout, with real object shapes and in the real order. The analyzer's tests, the CLI's
//! `simulate` command and the committed fixtures are built from it.
//!
//! It never touches a clock, the environment, randomness or a hash map's iteration order: time
//! is simulated from [`SIMULATION_START`], every name and uid is derived from FNV hashes, and the
//! same scenario gives byte-identical records every time.
//!
//! ```no_run
//! let recording = rf_scenarios::generate("rerender-race").expect("a catalog scenario");
//! let file = std::fs::File::create("rerender-race.rfr")?;
//! recording.write_to(file)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Scenarios are scripts over [`Sim`]; other crates can script variations:
//!
//! ```no_run
//! use rf_scenarios::{NEW_IMAGE, Sim, SimConfig, TemplateChange};
//! let mut sim = Sim::new(SimConfig::default());
//! sim.run_for(5);
//! sim.render(TemplateChange::new().with_image(NEW_IMAGE));
//! sim.run_for(60);
//! let recording = sim.finish("my-variation");
//! ```

mod argocd;
mod calendar;
mod controller;
mod deployment;
mod ephemeral;
mod export;
mod flux;
mod hash;
mod json;
mod nginx;
mod objects;
mod pods;
mod recording;
mod replica_set_controller;
mod scale;
mod scenarios;
mod sim;
mod spec;
mod status;
mod traffic;

pub use export::{to_audit_log, to_kubectl_watch};
pub use hash::{HashFunction, SplitMix, fake_sha256, pod_template_hash, steps_hash};
pub use recording::Recording;
pub use scale::{ScaleConfig, scale, write_scale};
pub use scenarios::{ScenarioInfo, catalog, generate};
pub use sim::Sim;
pub use spec::{
    BlueGreenConfig, IngressConfig, NEW_IMAGE, NEW_TAG, PREVIOUS_IMAGE, SIMULATION_START,
    STABLE_IMAGE, ServiceConfig, SimConfig, Step, TemplateChange, config_checksum, default_steps,
    image_digest, pinned, stable_config_checksum,
};
