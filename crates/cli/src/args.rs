//! Command-line flags as parsed by clap, before validation (see each command for the checked
//! configuration built from them).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Forensics for progressive-delivery incidents on Kubernetes: what happened to a canary, with
/// evidence, and what to run now.
#[derive(Debug, Parser)]
#[command(name = "rollout-forensics", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The first minute of an incident: list the cluster once and report what it shows and
    /// what its Events and ReplicaSets kept of what happened (exit as `analyze`).
    Now(crate::commands::now::NowArgs),
    /// Replay recordings through the analyzer: findings with evidence and commands.
    Analyze(AnalyzeArgs),
    /// Analyze recordings and compare the findings with an expected report (a regression
    /// fixture): exit 0 equal, 1 different, 2 error.
    Verify(crate::commands::verify::VerifyArgs),
    /// One row per state change of each rollout.
    Timeline(TimelineArgs),
    /// Diff the pod templates of two ReplicaSets in a recording (hash label ignored).
    Diff(DiffArgs),
    /// Header, time span, counts per kind and op, gaps and integrity of recordings.
    Inspect(InspectArgs),
    /// Generate a recording of a simulated scenario.
    Simulate(SimulateArgs),
    /// Serve a recording as a read-only Kubernetes API server (for kubectl, k9s, recorders).
    Serve(ServeArgs),
    /// Record watch events of a live API server into a recording.
    Record(crate::commands::record::RecordArgs),
    /// Watch a live API server and print each finding on stderr as it becomes true; `-o` also
    /// writes the recording.
    #[command(
        mut_arg("dir", |a| a.hide(true)),
        mut_arg("rotate", |a| a.hide(true)),
        mut_arg("keep", |a| a.hide(true)),
        mut_arg("live", |a| a.hide(true)),
        mut_arg("output", |a| a.help("Also write what is watched to FILE, as `record -o` does")),
    )]
    Watch(crate::commands::record::RecordArgs),
    /// Wait for a rollout to pause, reach a step or become healthy; a re-render restarts the
    /// timer instead of timing out (exit 0 reached, 3 timeout, 4 aborted, 5 degraded, 6 churn).
    Wait(crate::commands::wait::WaitArgs),
    /// One-shot adoption check: do the Services route to the rollout's current revision?
    /// (exit 0 adopted, 1 not adopted, 2 error)
    Check(crate::commands::check::CheckArgs),
    /// Turn a kubectl watch capture or an API server audit log into a recording.
    Import(crate::commands::import::ImportArgs),
    /// Check rendered manifests before the sync (`helm template ... | rollout-forensics lint -`):
    /// the rules that need no cluster, with file, line and column (exit as `analyze`).
    Lint(crate::commands::lint::LintArgs),
    /// Rewrite a recording in another format version (1: every object whole, for older
    /// rollout-forensics builds).
    Convert(crate::commands::convert::ConvertArgs),
    /// The rules the analyzer applies; with an id, what it detects, why it matters, an example.
    Rules(crate::commands::rules::RulesArgs),
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish, powershell).
    Completions(crate::commands::shell::CompletionsArgs),
    /// Print the man page (roff), or write one per command with `--dir`.
    Man(crate::commands::shell::ManArgs),
}

/// Output formats of the commands other than `analyze` (each command's `-o` says what its
/// JSON holds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// For a person.
    Table,
    /// JSON, for scripts.
    Json,
}

/// Output formats of a report (`analyze`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// For a person: summary, proof, what to run.
    Table,
    /// The report as JSON (schema_version 1, see docs/report-schema.md).
    Json,
    /// The same report as YAML.
    Yaml,
    /// A postmortem section: summary, timeline per rollout, findings with proof and commands.
    Markdown,
    /// One self-contained HTML page: a chart per rollout and the findings (docs/reports.md).
    Html,
    /// One finding per line (JSON), each with the recording's cluster, context and files: for
    /// log pipelines that collect reports from many clusters.
    Jsonl,
}

/// Which findings make the exit code 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any error finding.
    Error,
    /// Any warning or error finding.
    Warning,
    /// Never: exit 0 whatever is found.
    Never,
}

impl FailOn {
    /// The least severity that makes the exit code 1; `None`: nothing does.
    pub fn threshold(self) -> Option<rf_analyzer::Severity> {
        match self {
            FailOn::Error => Some(rf_analyzer::Severity::Error),
            FailOn::Warning => Some(rf_analyzer::Severity::Warning),
            FailOn::Never => None,
        }
    }
}

#[derive(Debug, Args)]
pub struct Window {
    /// Only findings at or after T (RFC 3339, `+5m` from the start, `-5m` before the end).
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Ignore records after T; end-of-recording checks run at T.
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "at",
        allow_hyphen_values = true
    )]
    pub until: Option<String>,
    /// The state at T: same as --until, by the name an on-call engineer asks with.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub at: Option<String>,
}

impl Window {
    /// The flag that set the end of the window, for messages.
    pub fn until_flag(&self) -> &'static str {
        if self.until.is_some() {
            "--until"
        } else {
            "--at"
        }
    }
}

/// `timeline`'s window: the same flags as [`Window`], about the changes it shows.
#[derive(Debug, Args)]
pub struct TimelineWindow {
    /// Only changes at or after T (RFC 3339, `+5m` from the start, `-5m` before the end); the
    /// history before T is still read.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub since: Option<String>,
    /// Only changes up to T: records after T are not read.
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "at",
        allow_hyphen_values = true
    )]
    pub until: Option<String>,
    /// The changes up to T: the same as --until.
    #[arg(long, value_name = "T", allow_hyphen_values = true)]
    pub at: Option<String>,
}

impl TimelineWindow {
    /// As the shared [`Window`].
    pub fn window(&self) -> Window {
        Window {
            since: self.since.clone(),
            until: self.until.clone(),
            at: self.at.clone(),
        }
    }
}

/// `--rollout` and `-n`: which rollout a report is limited to.
#[derive(Debug, Args)]
pub struct Only {
    /// Only this rollout: NAMESPACE/NAME, or NAME with `-n NAMESPACE` (NAME alone: the
    /// rollout of that name in whichever namespace holds it).
    #[arg(long, value_name = "NS/NAME")]
    pub rollout: Option<String>,
    /// The namespace of `--rollout NAME`.
    #[arg(
        short = 'n',
        long = "namespace",
        value_name = "NS",
        requires = "rollout"
    )]
    pub namespace: Option<String>,
}

#[derive(Debug, Args)]
pub struct AnalyzeArgs {
    /// Recording files (.rfr), read as one history in order of their start times.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub only: Only,
    #[command(flatten)]
    pub window: Window,
    /// Output format (markdown and html include the timelines).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Write the report to FILE instead of stdout: to a temporary file beside it, renamed when
    /// complete, so an error never leaves a partial report.
    #[arg(long, value_name = "FILE")]
    pub write: Option<PathBuf>,
    /// Exit 1 when a finding at or above this severity is reported.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Analyze what is readable of a truncated or corrupt recording and exit by the findings
    /// (the damage is still reported on stderr and in the report).
    #[arg(long)]
    pub partial: bool,
    /// Include per-rollout timelines in the JSON or YAML report.
    #[arg(long)]
    pub timelines: bool,
    /// Analyze each file (a directory: each of its recordings) as a history of its own, one
    /// report after another, instead of one history: for recordings that do not follow one
    /// another. The exit code is the worst of them.
    #[arg(long)]
    pub each: bool,
}

#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// Recording files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub only: Only,
    #[command(flatten)]
    pub window: TimelineWindow,
    /// Output format: a table per rollout, or JSON (the `timelines` of the JSON report,
    /// docs/report-schema.md).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// One line per change, as `kubectl get -w` prints, without the changes that only move a
    /// ReplicaSet's readiness.
    #[arg(long)]
    pub brief: bool,
    /// Read what is readable of a truncated or corrupt recording.
    #[arg(long)]
    pub partial: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Recording file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// First ReplicaSet: its name, or its pod-template hash.
    #[arg(value_name = "RS_A")]
    pub a: String,
    /// Second ReplicaSet: its name, or its pod-template hash.
    #[arg(value_name = "RS_B")]
    pub b: String,
    /// Namespace, when names are ambiguous across namespaces.
    #[arg(short = 'n', long)]
    pub namespace: Option<String>,
    /// Output format: the paths that differ, or JSON (both ReplicaSets, `identical`,
    /// `only_annotations` and the `changes`).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
}

#[derive(Debug, Args)]
pub struct InspectArgs {
    /// Recording files.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format: a summary per file, or JSON (header, span, counts per kind and op, gaps
    /// and integrity of each file).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Print every record as one JSON line instead (seq, at, kind, op, namespace, name, uid,
    /// resourceVersion, actor, object): for jq and other line tools.
    #[arg(long, conflicts_with = "format")]
    pub jsonl: bool,
}

#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Scenario name (see --list).
    #[arg(value_name = "SCENARIO", required_unless_present = "list")]
    pub scenario: Option<String>,
    /// Output file (`-` for stdout). Written to a temporary file and renamed when complete.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        required_unless_present = "list"
    )]
    pub output: Option<PathBuf>,
    /// List the scenarios.
    #[arg(long)]
    pub list: bool,
    /// For the `scale` scenario: rollouts, each in its own namespace (see --per-namespace).
    #[arg(long, default_value_t = 20)]
    pub rollouts: usize,
    /// For the `scale` scenario: records to make (at least).
    #[arg(long, default_value_t = 100_000)]
    pub events: usize,
    /// For the `scale` scenario: varies which releases race, abort or run clean.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// For the `scale` scenario: each rollout managed by an Argo CD Application.
    #[arg(long)]
    pub applications: bool,
    /// For the `scale` scenario: pods of each rollout.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub replicas: u32,
    /// For the `scale` scenario: rollouts that share a namespace (its Services, EndpointSlices
    /// and pods).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub per_namespace: u64,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Recording file (.rfr), or a flight recorder's directory (its *.rfr files, served as the
    /// one history they are).
    #[arg(value_name = "FILE|DIR")]
    pub file: PathBuf,
    /// Serve the state at T (RFC 3339, `+5m` from the start, `-5m` before the end).
    /// Default: the end of the recording.
    #[arg(
        long,
        value_name = "T",
        conflicts_with = "speed",
        allow_hyphen_values = true
    )]
    pub at: Option<String>,
    /// Replay events from the start in recorded time, X times faster (`1`: real time; `max`: as
    /// fast as clients read).
    #[arg(long, value_name = "X")]
    pub speed: Option<String>,
    /// Address to listen on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// Where to write a kubeconfig for the server. Default: FILE's name + `.kubeconfig` in a new
    /// temporary directory (removed on Ctrl-C).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig_out: Option<PathBuf>,
    /// Serve what is readable of a truncated or corrupt recording.
    #[arg(long)]
    pub partial: bool,
    /// Fault injection for tests: end each watch stream after N events.
    #[arg(long, value_name = "N", hide = true, default_value_t = 0)]
    pub fault_close_watch_every: u64,
    /// Fault injection for tests: answer every M-th watch with 410 Gone.
    #[arg(long, value_name = "M", hide = true, default_value_t = 0)]
    pub fault_gone_every: u64,
    /// Fault injection for tests: stall each watch stream after N events.
    #[arg(long, value_name = "N", hide = true, default_value_t = 0)]
    pub fault_stall_after: u64,
}
