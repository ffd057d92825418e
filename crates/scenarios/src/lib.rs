//! rf-scenarios: a deterministic simulator of Argo Rollouts incidents.
//!
//! It models the Argo Rollouts canary controller (v1.9/v1.10 semantics, basic canary without
//! traffic routing), the ReplicaSet controller and GitOps (Argo CD) renders, and emits the
//! [`rf_format::Record`]s a recorder watching the API server would have seen: the initial lists,
//! then `Added`/`Modified`/`Deleted` watch events of the Rollout, its ReplicaSets and the
//! Kubernetes Events about it, with real object shapes and in the real order. The analyzer's
//! tests, the CLI's `simulate` command and the committed fixtures are built from it.
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

mod calendar;
mod controller;
mod export;
mod hash;
mod json;
mod objects;
mod recording;
mod replica_set_controller;
mod scale;
mod scenarios;
mod sim;
mod spec;
mod status;

pub use export::{to_audit_log, to_kubectl_watch};
pub use hash::{HashFunction, fake_sha256, pod_template_hash, steps_hash};
pub use recording::Recording;
pub use scale::{ScaleConfig, scale};
pub use scenarios::{ScenarioInfo, catalog, generate};
pub use sim::Sim;
pub use spec::{
    NEW_IMAGE, PREVIOUS_IMAGE, SIMULATION_START, STABLE_IMAGE, SimConfig, Step, TemplateChange,
    config_checksum, default_steps, stable_config_checksum,
};
