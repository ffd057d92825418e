//! What detectors report: [`Finding`]s with evidence and a remedy.

use std::fmt;

use rf_format::{Kind, Timestamp};
use serde::Serialize;

use crate::base::time::rfc3339;

/// How bad a finding is. Ordered: `Info < Warning < Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; nothing to do.
    Info,
    /// Something to fix so it does not recur.
    Warning,
    /// Something broke, or is breaking now.
    Error,
}

impl Severity {
    /// `info`, `warning`, `error`.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Makes [`Rule`] of the registry's lines (`crate::report::rules`).
macro_rules! rule_enum {
    ($($variant:ident, $id:literal, $severity:ident, $module:ident;)*) => {
        /// The stable identity of a detector. Ids never change once released; see
        /// `docs/rules.md` and `rollout-forensics rules`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Rule {
            $(
                #[doc = concat!("`", $id, "`")]
                $variant,
            )*
        }

        impl Rule {
            /// Every rule, in the order they are documented.
            pub const ALL: &'static [Rule] = &[$(Rule::$variant),*];

            /// The kebab-case id, as in reports and `--fail-on` output.
            pub fn id(self) -> &'static str {
                match self {
                    $(Rule::$variant => $id,)*
                }
            }

            /// The rule's severity (a finding of `gitops-health-mismatch` can be lower: `info`
            /// when the GitOps UI is red by design).
            pub fn severity(self) -> Severity {
                match self {
                    $(Rule::$variant => Severity::$severity,)*
                }
            }
        }
    };
}
crate::report::rules::registry!(rule_enum);

impl Rule {
    /// True for a rule whose detector amends its findings at the end of the analysis
    /// (`restart-churn` counts every restart there): its findings stay decoded until then
    /// instead of being packed. At most one per rollout.
    pub(crate) fn amended_at_end(self) -> bool {
        matches!(self, Rule::RestartChurn | Rule::NoReadyEndpoints)
    }

    /// The rule with this id.
    pub fn from_id(id: &str) -> Option<Rule> {
        Rule::ALL.iter().copied().find(|r| r.id() == id)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl Serialize for Rule {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

/// A Kubernetes object a finding is about.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Subject {
    /// `Rollout`, `ReplicaSet`, ...
    #[serde(serialize_with = "serialize_kind")]
    pub kind: Kind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
}

fn serialize_kind<S: serde::Serializer>(kind: &Kind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.name())
}

impl Subject {
    /// A subject of `kind` in `namespace` named `name`.
    pub fn new(kind: Kind, namespace: &str, name: &str) -> Self {
        Subject {
            kind,
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// One record that proves part of a finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Evidence {
    /// Index of the recording among the files analyzed (0 for the first or only one).
    pub file: u32,
    /// The record's `seq` in that file.
    pub seq: u64,
    /// When it was observed.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// The object the record is about.
    pub object: Subject,
    /// What it shows, in words.
    pub detail: String,
    /// The record is of the recording's first list: the object was last written at or before
    /// `at`, not then.
    pub listed: bool,
}

impl Evidence {
    /// The record at `pos`, about `object`, showing `detail`.
    pub(crate) fn of(pos: crate::base::At, object: Subject, detail: impl Into<String>) -> Self {
        Evidence {
            file: pos.file,
            seq: pos.seq,
            at: pos.at,
            object,
            detail: detail.into(),
            listed: false,
        }
    }

    /// Its time in words, by `show`: `13:03:26`, or `13:03:26 (listed: written at or before)`
    /// for a record of the first list.
    pub fn time_words(&self, show: impl Fn(Timestamp) -> String) -> String {
        if self.listed {
            format!("{} (listed: written at or before)", show(self.at))
        } else {
            show(self.at)
        }
    }
}

/// What to do about a finding.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Remedy {
    /// What to do now, in words.
    pub summary: String,
    /// Exact commands to run now, in order: each ends the incident or shows more of it, and
    /// none moves traffic, so a list of them is safe to paste.
    pub commands: Vec<String>,
    /// Commands that move traffic or change the release (promote, abort, undo): a decision for
    /// a person to take, only under the finding that calls for it.
    pub decisions: Vec<String>,
    /// What to change so it does not happen again.
    pub prevention: String,
}

/// A finding whose remedy the rollout has since moved past.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Resolved {
    /// When the rollout moved past it.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// How, in words: `promoted, Healthy on 54477fc49b`.
    pub how: String,
}

impl Resolved {
    /// `resolved at 2026-03-14T13:29:10Z: promoted, Healthy on 54477fc49b`.
    pub fn line(&self) -> String {
        format!("resolved at {}: {}", rfc3339(self.at), self.how)
    }
}

/// When a condition a finding reported held: from `start` to `end`, or to the end of what was
/// recorded (`end` none: it still held then).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Interval {
    /// When it began.
    #[serde(serialize_with = "serialize_time")]
    pub start: Timestamp,
    /// When it ended; none while it still held at the end of the recording.
    #[serde(serialize_with = "serialize_opt_time")]
    pub end: Option<Timestamp>,
    /// How long it held, in whole seconds (to the end of the recording when it had not ended).
    pub seconds: i64,
}

impl Interval {
    /// `from 13:29:10Z to 13:29:33Z (23 s)`, or `from 13:29:10Z, still at the end (40 s so far)`.
    pub fn words(&self) -> String {
        let start = rfc3339(self.start);
        match self.end {
            Some(end) => format!("from {start} to {} ({} s)", rfc3339(end), self.seconds),
            None => format!("from {start}, still at the end ({} s so far)", self.seconds),
        }
    }
}

/// A finding made from what the cluster kept of the time before the recording (its Events, its
/// ReplicaSets' revisions and creation times), not from records of it happening.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Reconstructed {
    /// What it rests on, one piece of evidence a line, with the times the cluster kept.
    pub from: Vec<String>,
    /// What that evidence cannot tell.
    pub unknown: Vec<String>,
}

/// One thing the analyzer found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// How bad it is.
    pub severity: Severity,
    /// The object it is about.
    pub subject: Subject,
    /// The rollout it concerns (the subject itself, or the rollout owning it).
    pub rollout: Subject,
    /// When it became true.
    #[serde(serialize_with = "serialize_time")]
    pub at: Timestamp,
    /// One line: what happened.
    pub summary: String,
    /// More: why it matters, what the evidence shows.
    pub explanation: String,
    /// The records that prove it, in order.
    pub evidence: Vec<Evidence>,
    /// What to run now and what to change.
    pub remedy: Remedy,
    /// Set when the rollout later moved past the remedy (it was promoted, or went back to
    /// its stable revision, and is Healthy): its commands are no longer what to run now.
    pub resolved: Option<Resolved>,
    /// Set when it was reconstructed from what the cluster kept of the time before the
    /// recording rather than seen in it: what it rests on and what cannot be known.
    pub reconstructed: Option<Reconstructed>,
    /// Set for a finding of a condition that held for a time (a Service with no ready
    /// endpoint): when it began and ended.
    pub window: Option<Interval>,
}

/// A condition a finding reported that stopped holding (`holds: false`: the Service was fixed,
/// the canary joined the endpoints), or that holds again after it stopped (`holds: true`). The
/// report has no place for them; a live caller (metrics) clears what is no longer true.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionChange {
    pub rule: Rule,
    /// The rollout it concerns.
    pub rollout: Subject,
    /// Which condition of that rule and rollout (a Service, a revision...), as an opaque name.
    pub condition: String,
    pub holds: bool,
    pub at: Timestamp,
}

pub(crate) fn serialize_opt_time<S: serde::Serializer>(
    t: &Option<Timestamp>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&rfc3339(*t)),
        None => s.serialize_none(),
    }
}

pub(crate) fn serialize_time<S: serde::Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&rfc3339(*t))
}

impl Finding {
    /// A finding of `rule` about `subject` (which concerns `rollout`), with no evidence yet.
    pub(crate) fn new(
        rule: Rule,
        subject: Subject,
        rollout: Subject,
        at: Timestamp,
        summary: String,
    ) -> Self {
        Finding {
            rule,
            severity: rule.severity(),
            subject,
            rollout,
            at,
            summary,
            explanation: String::new(),
            evidence: Vec::new(),
            remedy: Remedy::default(),
            resolved: None,
            reconstructed: None,
            window: None,
        }
    }

    pub(crate) fn with_severity(mut self, severity: Severity) -> Self {
        self.severity = severity;
        self
    }

    pub(crate) fn explain(mut self, text: String) -> Self {
        self.explanation = text;
        self
    }

    /// Adds evidence, kept in record order.
    pub(crate) fn with_evidence(mut self, evidence: impl IntoIterator<Item = Evidence>) -> Self {
        self.evidence.extend(evidence);
        self.evidence.sort_by_key(|e| (e.file, e.seq));
        self.evidence
            .dedup_by(|a, b| a.file == b.file && a.seq == b.seq && a.detail == b.detail);
        self
    }

    pub(crate) fn remedy(
        mut self,
        summary: String,
        commands: Vec<String>,
        prevention: String,
    ) -> Self {
        self.remedy = Remedy {
            summary,
            commands,
            decisions: Vec::new(),
            prevention,
        };
        self
    }

    /// Marks it as reconstructed from the time before the recording.
    pub(crate) fn reconstructed(mut self, from: Vec<String>, unknown: Vec<String>) -> Self {
        self.reconstructed = Some(Reconstructed { from, unknown });
        self
    }

    /// Adds commands that move traffic or change the release to the remedy
    /// ([`Remedy::decisions`]).
    pub(crate) fn decide(mut self, decisions: Vec<String>) -> Self {
        self.remedy.decisions = decisions;
        self
    }
}
