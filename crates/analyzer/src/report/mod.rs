//! The analysis result: findings, timelines and a summary of the recording. Serialized as JSON
//! with a `schema_version` (see `docs/report-schema.md`); arrays are never null.

pub(crate) mod end;
pub(crate) mod finding;
pub(crate) mod pack;
pub(crate) mod rules;
pub(crate) mod sink;
pub(crate) mod timeline;

use std::collections::BTreeMap;

use rf_format::{Header, Redaction, Timestamp};
use serde::Serialize;

use crate::base::time::rfc3339;
use crate::report::end::RolloutEnd;
use crate::report::finding::{Finding, Severity, serialize_opt_time, serialize_time};
use crate::report::timeline::Timeline;

/// The version of the JSON report's schema. Bumped on any incompatible change.
pub const SCHEMA_VERSION: u32 = 1;

/// Everything `analyze` says about a recording.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA_VERSION`].
    pub schema_version: u32,
    /// The tool that wrote the report.
    pub tool: Tool,
    /// What was analyzed.
    pub recording: RecordingSummary,
    /// What was found, in time order.
    pub findings: Vec<Finding>,
    /// One per rollout (empty when timelines were not asked for).
    pub timelines: Vec<Timeline>,
    /// Where each rollout ended, in (namespace, name) order.
    pub rollouts: Vec<RolloutEnd>,
}

impl Report {
    /// The most severe finding's severity.
    pub fn worst(&self) -> Option<Severity> {
        self.findings.iter().map(|f| f.severity).max()
    }

    /// This report with `findings` (a sequence of [`Finding`]s: [`PackedFindings`](crate::PackedFindings), say) in
    /// place of its own (empty) ones, serialized exactly as a report holding them: the
    /// counterpart of [`Analyzer::finish_packed`](crate::Analyzer::finish_packed).
    pub fn with_findings<'a, F: Serialize + ?Sized>(
        &'a self,
        findings: &'a F,
    ) -> impl Serialize + 'a {
        WithFindings {
            report: self,
            findings,
        }
    }
}

struct WithFindings<'a, F: ?Sized> {
    report: &'a Report,
    findings: &'a F,
}

impl<F: Serialize + ?Sized> Serialize for WithFindings<'_, F> {
    /// The fields of [`Report`], in its order.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let r = self.report;
        let mut st = s.serialize_struct("Report", 6)?;
        st.serialize_field("schema_version", &r.schema_version)?;
        st.serialize_field("tool", &r.tool)?;
        st.serialize_field("recording", &r.recording)?;
        st.serialize_field("findings", self.findings)?;
        st.serialize_field("timelines", &r.timelines)?;
        st.serialize_field("rollouts", &r.rollouts)?;
        st.end()
    }
}

/// Name and version of the tool.
#[derive(Clone, Debug, Serialize)]
pub struct Tool {
    /// `rollout-forensics`.
    pub name: String,
    /// Its version.
    pub version: String,
}

/// How a recording file ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileEnd {
    /// The end-of-recording marker was read.
    Closed,
    /// The file ends between records without the marker: the recorder was killed after a flush
    /// or is still running. Every record is complete.
    Unclosed,
    /// The file ends inside a record or a gzip member; the records before the cut were analyzed.
    Truncated,
    /// The file is damaged; the records before the damage were analyzed.
    Corrupt,
}

/// One recording file.
#[derive(Clone, Debug, Serialize)]
pub struct FileSummary {
    /// Index among the files analyzed (evidence refers to it).
    pub index: u32,
    /// As the caller named it (a path).
    pub name: String,
    /// Format version of the file.
    pub format_version: u32,
    /// The tool that wrote it.
    pub tool_version: String,
    /// When recording began.
    #[serde(serialize_with = "serialize_time")]
    pub started_at: Timestamp,
    /// kubeconfig context or generator.
    pub context: Option<String>,
    /// API server.
    pub server: Option<String>,
    /// Namespaces watched (empty: all).
    pub namespaces: Vec<String>,
    /// Label selector.
    pub label_selector: Option<String>,
    /// Kinds watched.
    pub kinds: Vec<String>,
    /// `env-value-digests` or `disabled`.
    pub redaction: String,
    /// Free-form notes of the header.
    pub notes: BTreeMap<String, String>,
    /// Records read from it.
    pub records: u64,
    /// How it ended; `None` when it was not read to its end (`--until` stopped earlier).
    pub end: Option<FileEnd>,
    /// When recording stopped, from the trailer of a closed file.
    #[serde(serialize_with = "serialize_opt_time")]
    pub closed_at: Option<Timestamp>,
    /// The error that ended reading, for truncated and corrupt files.
    pub error: Option<String>,
}

impl FileSummary {
    /// The summary of a file with this header, before any record is read.
    pub fn from_header(index: u32, name: &str, format_version: u32, header: &Header) -> Self {
        FileSummary {
            index,
            name: name.to_owned(),
            format_version,
            tool_version: header.tool_version.clone(),
            started_at: header.started_at,
            context: header.source.context.clone(),
            server: header.source.server.clone(),
            namespaces: header.source.namespaces.clone(),
            label_selector: header.source.label_selector.clone(),
            kinds: header
                .source
                .kinds
                .iter()
                .map(|k| k.name().to_owned())
                .collect(),
            redaction: match header.redaction {
                Redaction::Disabled => "disabled".to_owned(),
                Redaction::EnvValueDigests => "env-value-digests".to_owned(),
            },
            notes: header.notes.clone(),
            records: 0,
            end: None,
            closed_at: None,
            error: None,
        }
    }
}

/// A hole in the recording's history.
#[derive(Clone, Debug, Serialize)]
pub struct GapInfo {
    /// Which file.
    pub file: u32,
    /// The gap record's seq.
    pub seq: u64,
    /// When the recorder noticed it.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// Of which kind's history.
    pub kind: String,
    /// In which namespace (empty: all).
    pub namespace: String,
    /// Why.
    pub reason: String,
}

/// The time window the analysis was limited to.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Window {
    /// Findings before this time were not reported.
    pub since: Option<String>,
    /// Records after this time were not read; end-of-recording checks ran at this time.
    pub until: Option<String>,
}

/// Counts and integrity of what was analyzed.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RecordingSummary {
    /// The files, in the order read.
    pub files: Vec<FileSummary>,
    /// Time of the first record.
    pub first_record_at: Option<String>,
    /// Time of the last record read.
    pub last_record_at: Option<String>,
    /// Where the analysis ended: when recording stopped (a closed file's trailer), the last
    /// record, or `--until`. End-of-recording checks ran at this time.
    pub ended_at: Option<String>,
    /// Seconds from the first record to `ended_at`.
    pub span_seconds: f64,
    /// Records read.
    pub records: u64,
    /// Records that carry an object, per kind (as the recorder's summary counts them; a
    /// list's begin and end and a gap are counted only in `by_op`).
    pub by_kind: BTreeMap<String, u64>,
    /// Records per op.
    pub by_op: BTreeMap<String, u64>,
    /// Objects present at the end, per kind.
    pub live_objects: BTreeMap<String, u64>,
    /// Holes in the history.
    pub gaps: Vec<GapInfo>,
    /// Things in the input that were odd but not fatal.
    pub warnings: Vec<String>,
    /// What the analysis ended too soon to decide, one sentence each (a ReplicaSet left up
    /// for less than its rule's grace period): the absence of a finding there is no all-clear.
    pub undecided: Vec<String>,
    /// Namespaces the recording was made of (its headers' `-n`) that it holds no object of:
    /// a namespace that did not exist, or held none of the recorded kinds. No finding there
    /// says nothing of it.
    pub empty_namespaces: Vec<String>,
    /// Rollouts the recording found in the middle of a release when it began, one sentence
    /// each: what happened before is history it did not see, and no finding says nothing of
    /// it.
    pub before: Vec<String>,
    /// Limits of the analysis.
    pub window: Window,
    /// True when every file was closed cleanly and had no gap.
    pub complete: bool,
}

impl RecordingSummary {
    pub(crate) fn set_span(
        &mut self,
        first: Option<Timestamp>,
        last: Option<Timestamp>,
        ended: Option<Timestamp>,
    ) {
        self.first_record_at = first.map(rfc3339);
        self.last_record_at = last.map(rfc3339);
        self.ended_at = ended.map(rfc3339);
        if let (Some(a), Some(b)) = (first, ended) {
            self.span_seconds = (b.0 - a.0) as f64 / 1e9;
        }
    }
}
