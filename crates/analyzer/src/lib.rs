//! rf-analyzer: replays a rollout-forensics recording and says, with evidence, what happened.
//!
//! Records go in, in order; a [`Report`] comes out: [`Finding`]s (each with a stable [`Rule`]
//! id, the records that prove it, and the commands to run), per-rollout [`Timeline`]s, and a
//! summary of the recording. The state machine follows the Argo Rollouts controller's semantics
//! (see `ARGO_ROLLOUTS.md` in the project's shared notes): a change of `status.currentPodHash` is
//! classified as a restart, a new release, a rollback to stable, or a change after an abort,
//! before any detector looks at it.
//!
//! This crate never touches a clock, a file, the network or the environment: time comes only
//! from record timestamps, so every finding is reproducible from the recording alone.
//!
//! Its modules are layers, and each uses only those before it (`tests/layers.rs` checks it):
//!
//! - `base`: where a record sits, short strings, Kubernetes names, time, the maps;
//! - `input`: the views of the objects read, the skimming reader that fills them, `Prepared`;
//! - `report`: findings, the rule registry, timelines, the `Report`;
//! - `model`: each rollout's track and its classification of hash changes, the world of
//!   Services, EndpointSlices, Pods and Applications, the traffic between them, template diffs
//!   (it writes timeline entries and evidence, so it comes after `report`);
//! - `detectors`: one file per rule, reading the model (never `input`) and writing findings;
//! - `lint`: the rules that need no cluster, checked on rendered manifests before the sync;
//! - `analyzer`, the engine on top: it feeds each record to the model, then to the detectors.
//!
//! ```no_run
//! use rf_analyzer::{Analyzer, Finding, Options, Prepared};
//! # fn records() -> Vec<rf_format::Record> { Vec::new() }
//! # let header = rf_format::Header::new("", rf_format::Timestamp(0), Default::default());
//! let mut analyzer = Analyzer::new(Options::default());
//! analyzer.begin_file("rerender-race.rfr", 1, &header);
//! for record in records() {
//!     let mut found: Vec<Finding> = Vec::new();
//!     analyzer.push(&record, Prepared::of(&record), &mut found);
//!     for finding in found {
//!         println!("{} {}", finding.rule, finding.summary);
//!     }
//! }
//! let report = analyzer.finish();
//! println!("{}", serde_json::to_string_pretty(&report)?);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod analyzer;
mod base;
mod detectors;
mod input;
pub mod lint;
mod model;
mod report;

#[cfg(test)]
mod testkit;

pub use analyzer::{Analyzer, Options, Retained, analyze};
pub use base::HASH_LABEL;
pub use base::image::image_digest;
pub use base::time::{human_duration, parse_rfc3339, rfc3339};
pub use input::prepare::Prepared;
#[doc(hidden)]
pub use input::skim::check_against_serde;
pub use model::diff::{Change, Path, Segment, only_annotations, string_values, template_diff};
pub use model::revisions::{HashChange, Revisions};
pub use model::rollout::RevisionClass;
pub use model::world::{RouterPath, router_paths};
pub use report::end::{ApplicationEnd, Resolver, RolloutEnd, Settled};
pub use report::finding::{
    ConditionChange, Evidence, Finding, Interval, Remedy, Resolved, Rule, Severity, Subject,
};
pub use report::pack::{Merge, PackedFindings, SPILL_AFTER, Spill};
pub use report::sink::{Discard, FindingSink};
pub use report::timeline::{
    MAX_TIMELINE_ENTRIES, ReplicaSetState, Role, Timeline, TimelineEntry, TrafficEntry,
};
pub use report::{
    FileEnd, FileSummary, GapInfo, RecordingSummary, Report, SCHEMA_VERSION, Tool, Window,
};
