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
//! ```no_run
//! use rf_analyzer::{Analyzer, Options};
//! # fn records() -> Vec<rf_format::Record> { Vec::new() }
//! # let header = rf_format::Header::new("", rf_format::Timestamp(0), Default::default());
//! let mut analyzer = Analyzer::new(Options::default());
//! analyzer.begin_file("rerender-race.rfr", 1, &header);
//! for record in records() {
//!     for finding in analyzer.push(&record) {
//!         println!("{} {}", finding.rule, finding.summary);
//!     }
//! }
//! let report = analyzer.finish();
//! println!("{}", serde_json::to_string_pretty(&report)?);
//! # Ok::<(), serde_json::Error>(())
//! ```

mod analyzer;
/// The analyzer's hash maps, looked up on every record: std's maps with a faster, still randomly
/// seeded hasher (keys come from recordings, which may be hostile).
type HashMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
type HashSet<K> = std::collections::HashSet<K, foldhash::fast::RandomState>;
mod by_name;
mod detectors;
mod diff;
mod finding;
mod pack;
mod prepare;
mod report;
mod rollout;
mod routes;
mod rules;
mod skim;
mod time;
mod timeline;
mod view;
mod world;

#[cfg(test)]
mod testkit;

pub use analyzer::{Analyzer, Options, Retained, analyze};
pub use diff::{Change, HASH_LABEL, Path, Segment, only_annotations, string_values, template_diff};
pub use finding::{Evidence, Finding, Remedy, Rule, Severity, Subject};
pub use pack::{Merge, PackedFindings};
pub use prepare::Prepared;
pub use report::{
    FileEnd, FileSummary, GapInfo, RecordingSummary, Report, SCHEMA_VERSION, Tool, Window,
};
pub use time::{human_duration, parse_rfc3339, rfc3339};
pub use timeline::{
    MAX_TIMELINE_ENTRIES, ReplicaSetState, Role, Timeline, TimelineEntry, TrafficEntry,
};
