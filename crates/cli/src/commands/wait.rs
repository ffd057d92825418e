//! `rollout-forensics wait ROLLOUT -n NS --for pause|step=N|healthy`: the pipeline step that
//! waits for a canary and knows a re-render from a failure.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use rf_analyzer::RevisionClass;
use rf_format::{Header, Kind, Op, Record, Timestamp};
use rf_recorder::{Config, Hooks, Tap};
use serde::Serialize;
use serde_json::Value;

use crate::cluster::client_for;
use crate::exit::Exit;
use crate::timespec::parse_duration;

#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The Rollout to wait for.
    #[arg(value_name = "ROLLOUT")]
    pub rollout: String,
    /// Its namespace (default: the kubeconfig context's).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// What to wait for: `pause` (a canary pause step, or a blue-green preview's pause before
    /// promotion, reached), `step=N` (step index N reached),
    /// or `healthy` (fully promoted).
    #[arg(long = "for", value_name = "CONDITION")]
    pub condition: String,
    /// Give up after this long without the condition; a new pod-template hash restarts it.
    #[arg(long, default_value = "10m", value_name = "DURATION")]
    pub timeout: String,
    /// Fail once the canary restarted on a new pod-template hash more often than this (a
    /// restart as `analyze` reports one: a canary past its first step, back at step 0).
    #[arg(long, default_value_t = 3)]
    pub max_restarts: u32,
    /// Only a new revision counts: one that is not `status.stableRS` when the controller has
    /// observed the spec, or that a spec change after the wait started made. Right whether the
    /// wait starts before the pipeline's apply, during it, or after the controller moved.
    #[arg(long)]
    pub new_revision: bool,
    /// Only this revision counts: a pod-template hash, or its ReplicaSet's name. Implies
    /// `--new-revision`.
    #[arg(long, value_name = "HASH", conflicts_with = "image")]
    pub revision: Option<String>,
    /// Only a revision whose pod template runs this image counts (as the pipeline wrote it,
    /// `repo:tag` or `repo@sha256:...`; a tag also matches `repo:tag@sha256:...`). Implies
    /// `--new-revision`; a re-render that keeps the image keeps counting.
    #[arg(long, value_name = "IMAGE")]
    pub image: Option<String>,
    /// Write what was watched as a recording, so a failed run leaves its evidence.
    #[arg(long = "record", value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Output format of the outcome: one line, or JSON (`rollout`, `outcome`, `exit_code`,
    /// `waited_seconds`, the `last` state seen and the `notes`).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = crate::args::Format::Table)]
    pub format: crate::args::Format,
    /// Path to the kubeconfig.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// The condition waited for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    Pause,
    Step(i64),
    Healthy,
}

impl Want {
    fn parse(s: &str) -> Result<Want> {
        Ok(match s {
            "pause" => Want::Pause,
            "healthy" => Want::Healthy,
            _ => match s.strip_prefix("step=").map(str::parse::<i64>) {
                Some(Ok(n)) if n >= 0 => Want::Step(n),
                _ => bail!("invalid --for {s:?}: use pause, step=N or healthy"),
            },
        })
    }
}

/// How a wait ends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The condition holds.
    Reached,
    /// No progress to the condition within the timeout since the last restart.
    TimedOut,
    /// The rollout was aborted.
    Aborted,
    /// The rollout is Degraded (progress deadline, failed analysis).
    Degraded,
    /// More restarts on new pod-template hashes than allowed.
    RestartChurn,
    /// No such rollout: not in the first list, nor created within [`CREATION_GRACE`] of it.
    NotFound,
}

/// How long a rollout missing from the first list may take to appear (it may be being
/// created by the same pipeline) before the wait says it does not exist.
const CREATION_GRACE: Duration = Duration::from_secs(10);

impl Outcome {
    /// The exit code, documented in the README.
    pub fn exit(&self) -> u8 {
        match self {
            Outcome::Reached => 0,
            Outcome::TimedOut => 3,
            Outcome::Aborted => 4,
            Outcome::Degraded => 5,
            Outcome::RestartChurn => 6,
            Outcome::NotFound => 2,
        }
    }
}

/// The exit code of a wait interrupted (SIGINT or SIGTERM) before it had an answer: 128 + SIGINT,
/// as a shell reports a command it interrupted.
pub const INTERRUPTED: u8 = 130;

/// The last state seen, for messages.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Seen {
    pub pod_hash: Option<String>,
    /// `status.stableRS`.
    pub stable: Option<String>,
    pub step_index: i64,
    pub step_count: usize,
    pub phase: Option<String>,
    pub message: Option<String>,
    pub paused: bool,
    pub restarts: u32,
    /// Whether the current revision is one the wait counts (always, without
    /// `--new-revision`, `--revision` or `--image`).
    pub counts: bool,
}

impl Seen {
    /// `Paused at step 1/4 on 66c66dbf9f (new), paused (CanaryPauseStep)`.
    pub fn describe(&self) -> String {
        format!(
            "{} at step {}/{} on {}{}{}{}",
            self.phase.as_deref().unwrap_or("unknown phase"),
            self.step_index,
            self.step_count,
            self.pod_hash.as_deref().unwrap_or("no pod hash"),
            match (&self.pod_hash, &self.stable) {
                (Some(h), Some(s)) if h == s => " (stable)",
                _ if self.counts => " (new)",
                _ => " (not the revision waited for)",
            },
            if self.paused { ", paused" } else { "" },
            self.message
                .as_deref()
                .map(|m| format!(" ({m})"))
                .unwrap_or_default()
        )
    }
}

/// Which revision the wait is for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Target {
    /// Whatever revision is current.
    #[default]
    Any,
    /// A new one: not `status.stableRS` once the controller observed the spec, or made by a
    /// spec change after the wait started.
    New,
    /// This pod-template hash.
    Revision(String),
    /// A revision whose pod template runs this image.
    Image(String),
}

impl Target {
    /// From the flags: `--revision` (a hash, or `NAME-HASH` of the rollout `name`), `--image`,
    /// `--new-revision`.
    pub fn of(name: &str, new_revision: bool, revision: Option<&str>, image: Option<&str>) -> Self {
        match (revision, image) {
            (Some(r), _) => Target::Revision(
                r.strip_prefix(name)
                    .and_then(|h| h.strip_prefix('-'))
                    .unwrap_or(r)
                    .to_owned(),
            ),
            (None, Some(i)) => Target::Image(i.to_owned()),
            (None, None) if new_revision => Target::New,
            (None, None) => Target::Any,
        }
    }

    /// In words, for the line the wait starts with.
    pub fn describe(&self) -> String {
        match self {
            Target::Any => "on the current revision".to_owned(),
            Target::New => {
                "on a new revision (not the stable one, or made after the wait started)".to_owned()
            }
            Target::Revision(h) => format!("on revision {h}"),
            Target::Image(i) => format!("on a revision that runs {i}"),
        }
    }
}

/// True when `running` (a container's image) is the image `wanted` names: the same reference,
/// or `wanted` without a digest and `running` the same reference pinned by one.
fn same_image(wanted: &str, running: &str) -> bool {
    running == wanted
        || (!wanted.contains('@') && running.split_once('@').is_some_and(|(r, _)| r == wanted))
}

/// The images of a pod template's containers.
fn images(template: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for list in ["containers", "initContainers"] {
        if let Some(cs) = template
            .pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
        {
            out.extend(
                cs.iter()
                    .filter_map(|c| c["image"].as_str().map(str::to_owned)),
            );
        }
    }
    out
}

/// The pure part: observations of the rollout in, an outcome (and timer resets) out.
#[derive(Debug)]
pub struct Waiter {
    want: Want,
    max_restarts: u32,
    target: Target,
    /// `metadata.generation` when the wait first saw the rollout.
    start_generation: Option<i64>,
    /// Pod-template hashes the wait counts as new ([`Target::New`]).
    new_hashes: std::collections::BTreeSet<String>,
    /// The rollout's ReplicaSets: pod-template hash -> the images of its template
    /// ([`Target::Image`]) and its `rollout.argoproj.io/revision`.
    rs_images: std::collections::BTreeMap<String, Vec<String>>,
    rs_revisions: std::collections::BTreeMap<String, i64>,
    name: String,
    /// The first list of ReplicaSets has ended: the newest of them is known, and the wait may
    /// answer (before, a status whose `observedGeneration` is new but whose hash is not yet
    /// could pass for the new revision's).
    pub replicasets_listed: bool,
    /// The analyzer's reading of the rollout's hash changes.
    revisions: rf_analyzer::Revisions,
    pub seen: Seen,
}

/// What one observation means for the wait.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Nothing decided.
    Continue,
    /// A new pod-template hash: the canary restarted (counted, when the analyzer calls it a
    /// restart) or was replaced before it progressed (not counted); restart the timer.
    Restarted {
        from: String,
        to: String,
        counted: bool,
    },
    /// The wait is over.
    Done(Outcome),
}

impl Waiter {
    pub fn new(want: Want, max_restarts: u32, target: Target, namespace: &str, name: &str) -> Self {
        Waiter {
            want,
            max_restarts,
            target,
            start_generation: None,
            new_hashes: std::collections::BTreeSet::new(),
            rs_images: std::collections::BTreeMap::new(),
            rs_revisions: std::collections::BTreeMap::new(),
            name: name.to_owned(),
            replicasets_listed: false,
            revisions: rf_analyzer::Revisions::new(namespace, name),
            seen: Seen::default(),
        }
    }

    /// One ReplicaSet of the namespace (`rs`, its object): of the rollout's, the images of a
    /// revision (for `--image`) and its revision number (which is the newest). True when it
    /// was one of the rollout's, new or changed: what was decided of the rollout may change.
    pub fn observe_replicaset(&mut self, rs: &Value) -> bool {
        let owned = rs
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .is_some_and(|refs| {
                refs.iter()
                    .any(|r| r["kind"] == "Rollout" && r["name"] == self.name.as_str())
            });
        let Some(hash) = rs
            .pointer("/metadata/labels/rollouts-pod-template-hash")
            .and_then(Value::as_str)
            .filter(|_| owned)
        else {
            return false;
        };
        let mut changed = false;
        if let Some(t) = rs.pointer("/spec/template") {
            let images = images(t);
            if self.rs_images.get(hash) != Some(&images) {
                self.rs_images.insert(hash.to_owned(), images);
                changed = true;
            }
        }
        if let Some(n) = rs
            .pointer("/metadata/annotations/rollout.argoproj.io~1revision")
            .and_then(Value::as_str)
            .and_then(|n| n.parse::<i64>().ok())
        {
            changed |= self.rs_revisions.insert(hash.to_owned(), n) != Some(n);
        }
        changed
    }

    /// True when a ReplicaSet of the rollout newer than `hash`'s (a higher revision number)
    /// is known: the controller made it for a template it has not made current yet.
    fn superseded(&self, hash: Option<&str>) -> bool {
        let Some(current) = hash.and_then(|h| self.rs_revisions.get(h)) else {
            return false;
        };
        self.rs_revisions.values().any(|n| n > current)
    }

    /// Whether the revision `hash`, current in `rollout`, is one the wait is for.
    fn counts(&mut self, rollout: &Value, hash: Option<&str>, in_sync: bool) -> bool {
        let Some(hash) = hash else {
            return self.target == Target::Any;
        };
        match &self.target {
            Target::Any => true,
            Target::Revision(r) => r == hash,
            Target::Image(wanted) => {
                // The rollout's own template is the current revision's once the controller has
                // observed it; a workloadRef's is in the revision's ReplicaSet.
                let own = rollout
                    .pointer("/spec/template")
                    .filter(|_| in_sync)
                    .map(images)
                    .unwrap_or_default();
                own.iter()
                    .chain(self.rs_images.get(hash).into_iter().flatten())
                    .any(|i| same_image(wanted, i))
            }
            Target::New => {
                if in_sync {
                    let stable = rollout.pointer("/status/stableRS").and_then(Value::as_str);
                    let generation = rollout
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64);
                    let changed_since_start = generation
                        .zip(self.start_generation)
                        .is_some_and(|(g, s)| g > s);
                    if stable != Some(hash) || changed_since_start {
                        self.new_hashes.insert(hash.to_owned());
                    }
                }
                self.new_hashes.contains(hash)
            }
        }
    }

    /// One record of the rollout (`rollout`, its object).
    pub fn observe(&mut self, record: &Record, rollout: &Value) -> Step {
        let change = self.revisions.observe(record);
        let status = &rollout["status"];
        let hash = status["currentPodHash"].as_str().map(str::to_owned);
        let steps = rollout
            .pointer("/spec/strategy/canary/steps")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let index = status["currentStepIndex"].as_i64().unwrap_or(0);
        let phase = status["phase"].as_str().map(str::to_owned);
        let paused = status["pauseConditions"].as_array().is_some_and(|p| {
            p.iter()
                .any(|c| c["reason"] == "CanaryPauseStep" || c["reason"] == "BlueGreenPause")
        });
        let stable = status["stableRS"].as_str().map(str::to_owned);
        let generation = rollout
            .pointer("/metadata/generation")
            .and_then(Value::as_i64);
        if self.start_generation.is_none() {
            self.start_generation = generation;
        }
        let observed = match &status["observedGeneration"] {
            Value::String(s) => s.parse::<i64>().ok(),
            v => v.as_i64(),
        };
        // The controller writes `observedGeneration` of a new template before it moves
        // `currentPodHash` to the ReplicaSet it made for it (seen on the real controller):
        // the status is not yet the spec's while a newer ReplicaSet than the current one is
        // known.
        let in_sync =
            generation.is_some() && generation == observed && !self.superseded(hash.as_deref());
        let counts = self.counts(rollout, hash.as_deref(), in_sync);
        self.seen = Seen {
            pod_hash: hash.clone(),
            stable: stable.clone(),
            step_index: index,
            step_count: steps,
            phase: phase.clone(),
            message: status["message"].as_str().map(str::to_owned),
            paused,
            restarts: self.seen.restarts,
            counts,
        };
        if status["abort"].as_bool() == Some(true) {
            return Step::Done(Outcome::Aborted);
        }
        if phase.as_deref() == Some("Degraded") {
            return Step::Done(Outcome::Degraded);
        }
        let reached = counts
            && in_sync
            && self.replicasets_listed
            && match self.want {
                Want::Pause => paused,
                Want::Step(n) => index >= n,
                Want::Healthy => {
                    phase.as_deref() == Some("Healthy") && stable.is_some() && stable == hash
                }
            };
        // What the analyzer calls a restart counts (a canary past its first step replaced and
        // back at step 0); a canary replaced before it progressed starts over too, uncounted.
        // A new release from stable, a rollback to it, a change after an abort: neither.
        if let Some(change) = change {
            let counted = change.class == RevisionClass::Restart;
            if counted {
                self.seen.restarts += 1;
                if self.seen.restarts > self.max_restarts {
                    return Step::Done(Outcome::RestartChurn);
                }
            }
            if !reached && (counted || change.class == RevisionClass::Superseded) {
                return Step::Restarted {
                    from: change.from,
                    to: change.to,
                    counted,
                };
            }
        }
        if reached {
            Step::Done(Outcome::Reached)
        } else {
            Step::Continue
        }
    }
}

/// Shared between the tap (writer thread) and the waiting task.
#[derive(Debug)]
struct Shared {
    deadline: Instant,
    outcome: Option<Outcome>,
    notes: Vec<String>,
    seen: Seen,
    /// The first list of rollouts ended without the one waited for, at this instant.
    missing_since: Option<Instant>,
    /// Whether the rollout was seen at all.
    found: bool,
    /// The other rollouts of the namespace, for the error that says it is not there.
    others: std::collections::BTreeSet<String>,
}

struct WaitTap {
    name: String,
    namespace: String,
    waiter: Waiter,
    /// The last state logged.
    said: Option<String>,
    /// The rollout's last record, judged again when its ReplicaSets change.
    last: Option<(Record, Value)>,
    timeout: Duration,
    shared: Arc<Mutex<Shared>>,
}

impl Tap for WaitTap {
    fn begin(&mut self, _header: &Header) {}

    fn record(&mut self, r: &Record) {
        if r.kind == Kind::Rollout && r.namespace == self.namespace {
            let Ok(mut shared) = self.shared.lock() else {
                return;
            };
            match r.op {
                Op::ListEnd if !shared.found && shared.missing_since.is_none() => {
                    shared.missing_since = Some(Instant::now());
                }
                Op::Added | Op::Modified | Op::Listed if r.name == self.name => {
                    shared.found = true;
                    shared.missing_since = None;
                }
                Op::Added | Op::Listed => {
                    shared.others.insert(r.name.clone());
                }
                _ => {}
            }
        }
        if r.kind == Kind::ReplicaSet && r.namespace == self.namespace {
            match r.op {
                // The rollout's ReplicaSets come on a watch of their own, before or after the
                // rollout's records that need them: what they change, the rollout's last
                // record is judged again with.
                Op::Added | Op::Modified | Op::Listed => {
                    let changed = serde_json::from_slice::<Value>(&r.object)
                        .is_ok_and(|v| self.waiter.observe_replicaset(&v));
                    if changed && self.waiter.replicasets_listed {
                        self.judge_again();
                    }
                }
                Op::ListEnd if !self.waiter.replicasets_listed => {
                    self.waiter.replicasets_listed = true;
                    self.judge_again();
                }
                _ => {}
            }
            return;
        }
        if r.kind != Kind::Rollout
            || r.name != self.name
            || r.namespace != self.namespace
            || !matches!(r.op, Op::Added | Op::Modified | Op::Listed)
        {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&r.object) else {
            return;
        };
        self.judge(r, &v);
        self.last = Some((r.clone(), v));
    }

    fn closed(&mut self, _closed_at: Timestamp) {}
}

impl WaitTap {
    /// Judges the rollout's last record again.
    fn judge_again(&mut self) {
        if let Some((r, v)) = self.last.take() {
            self.judge(&r, &v);
            self.last = Some((r, v));
        }
    }

    /// What one record of the rollout (`r`, its object `v`) means for the wait.
    fn judge(&mut self, r: &Record, v: &Value) {
        let step = self.waiter.observe(r, v);
        let Ok(mut shared) = self.shared.lock() else {
            return;
        };
        if shared.outcome.is_some() {
            return;
        }
        shared.seen = self.waiter.seen.clone();
        let state = self.waiter.seen.describe();
        if self.said.as_deref() != Some(state.as_str()) {
            log_line(&format!("{}/{}: {state}", self.namespace, self.name));
            self.said = Some(state);
        }
        match step {
            Step::Continue => {}
            Step::Restarted { from, to, counted } => {
                shared.deadline = Instant::now() + self.timeout;
                let note = if counted {
                    format!(
                        "the canary restarted on a new pod template ({from} -> {to}, restart {} of at most {}): a re-render, not a failure; the timer starts again",
                        self.waiter.seen.restarts, self.waiter.max_restarts
                    )
                } else {
                    format!(
                        "a new pod template replaced the canary before it progressed ({from} -> {to}; not counted as a restart): the timer starts again"
                    )
                };
                log_line(&note);
                shared.notes.push(note);
            }
            Step::Done(outcome) => shared.outcome = Some(outcome),
        }
    }
}

/// One line of the wait's log on standard error, with the time of day (UTC): what a pipeline's
/// log shows of what it waited for. An error writing it is not the wait's to report.
fn log_line(line: &str) {
    let now = rf_analyzer::rfc3339(rf_recorder::now());
    let _ = writeln!(std::io::stderr().lock(), "{now} {line}");
}

#[derive(Serialize)]
struct Report<'a> {
    rollout: String,
    outcome: &'a Outcome,
    exit_code: u8,
    waited_seconds: f64,
    last: &'a Seen,
    notes: &'a [String],
}

pub fn run(args: &WaitArgs, out: &mut dyn Write) -> Result<Exit> {
    let want = Want::parse(&args.condition)?;
    let nanos = parse_duration(&args.timeout).context("in --timeout")?;
    let timeout = Duration::from_nanos(u64::try_from(nanos).unwrap_or(0));
    let target = Target::of(
        &args.rollout,
        args.new_revision,
        args.revision.as_deref(),
        args.image.as_deref(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let begun = Instant::now();
    let shared = Arc::new(Mutex::new(Shared {
        deadline: Instant::now() + timeout,
        outcome: None,
        notes: Vec::new(),
        seen: Seen::default(),
        missing_since: None,
        found: false,
        others: std::collections::BTreeSet::new(),
    }));
    let namespace = runtime.block_on(async {
        let (client, source, default_ns) =
            client_for(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let namespace = args.namespace.clone().unwrap_or(default_ns);
        log_line(&format!(
            "waiting for {namespace}/{}: {} {}, timeout {} (started again at each restart), at most {} restarts",
            args.rollout,
            args.condition,
            target.describe(),
            args.timeout,
            args.max_restarts
        ));
        let config = Config {
            kinds: vec![Kind::Rollout, Kind::ReplicaSet],
            optional_kinds: Vec::new(),
            namespaces: vec![namespace.clone()],
            ..Config::default()
        };
        let output: Box<dyn Write + Send> = match &args.record {
            Some(path) => Box::new(std::io::BufWriter::new(
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write the recording to {}", path.display()))?,
            )),
            None => Box::new(std::io::sink()),
        };
        let tap = WaitTap {
            name: args.rollout.clone(),
            namespace: namespace.clone(),
            waiter: Waiter::new(want, args.max_restarts, target.clone(), &namespace, &args.rollout),
            said: None,
            last: None,
            timeout,
            shared: Arc::clone(&shared),
        };
        let interrupted = crate::signal::Interrupt::install()?;
        let watch = Arc::clone(&shared);
        let stop = async move {
            let poll = async {
                loop {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let Ok(mut s) = watch.lock() else { return };
                    if s.outcome.is_some() {
                        return;
                    }
                    if s.missing_since
                        .is_some_and(|m| m.elapsed() >= CREATION_GRACE.min(timeout))
                    {
                        s.outcome = Some(Outcome::NotFound);
                        return;
                    }
                    if Instant::now() >= s.deadline {
                        s.outcome = Some(Outcome::TimedOut);
                        return;
                    }
                }
            };
            tokio::select! {
                () = poll => {}
                () = interrupted.wait() => {}
            }
        };
        let hooks = Hooks {
            tap: Some(Box::new(tap)),
        };
        rf_recorder::record_with(client, &config, &source, output, stop, |_| {}, hooks)
            .await
            .map_err(anyhow::Error::new)?;
        Ok::<_, anyhow::Error>(namespace)
    })?;
    let s = shared
        .lock()
        .map_err(|_| anyhow::anyhow!("the wait state was poisoned"))?;
    let Some(outcome) = s.outcome.clone() else {
        // Interrupted: no answer, and the shell's code for it, so that no pipeline reads it as
        // a timeout or an input error.
        eprintln!(
            "rollout-forensics: wait interrupted before {} held for {}",
            args.condition, args.rollout
        );
        return Ok(Exit::Code(INTERRUPTED));
    };
    let rollout = format!("{namespace}/{}", args.rollout);
    if outcome == Outcome::NotFound {
        let waited = s.missing_since.map_or(Duration::ZERO, |m| {
            m.elapsed().min(CREATION_GRACE.min(timeout))
        });
        let others: Vec<String> = s.others.iter().cloned().collect();
        let others = crate::input::nearest_first(&args.rollout, others.into_iter());
        bail!(
            "no rollout {rollout}: it was not in the list of the namespace's rollouts, and was not created in the {}s after it; {}",
            waited.as_secs(),
            if others.is_empty() {
                format!("namespace {namespace} has no rollouts")
            } else {
                format!(
                    "rollouts in {namespace}, nearest first: {}",
                    crate::input::listing(&others)
                )
            }
        );
    }
    match args.format {
        crate::args::Format::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &Report {
                    rollout,
                    outcome: &outcome,
                    exit_code: outcome.exit(),
                    waited_seconds: begun.elapsed().as_secs_f64(),
                    last: &s.seen,
                    notes: &s.notes,
                },
            )?;
            writeln!(out)?;
        }
        crate::args::Format::Table => {
            for n in &s.notes {
                writeln!(out, "note: {n}")?;
            }
            let state = s.seen.describe();
            let last = &s.seen;
            let line = match outcome {
                Outcome::Reached => format!("{rollout}: {} reached: {state}", args.condition),
                Outcome::TimedOut => format!(
                    "{rollout}: timed out waiting for {} after {} without progress to it; last state: {state}",
                    args.condition, args.timeout
                ),
                Outcome::Aborted => format!("{rollout}: aborted; last state: {state}"),
                Outcome::Degraded => format!("{rollout}: Degraded; last state: {state}"),
                Outcome::NotFound => format!("{rollout}: not found"),
                Outcome::RestartChurn => format!(
                    "{rollout}: the canary restarted {} times (more than --max-restarts {}): stop re-running the pipeline; last state: {state}",
                    last.restarts, args.max_restarts
                ),
            };
            writeln!(out, "{line}")?;
        }
    }
    out.flush()?;
    Ok(Exit::Code(outcome.exit()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Waits as `wait` does on the rollout `ns/web`, each observation a record of it.
    struct Fed {
        waiter: Waiter,
        seq: u64,
    }

    impl Fed {
        fn new(want: Want, max_restarts: u32, new_revision: bool) -> Self {
            let target = if new_revision {
                Target::New
            } else {
                Target::Any
            };
            Self::to(want, max_restarts, target)
        }

        fn to(want: Want, max_restarts: u32, target: Target) -> Self {
            let mut waiter = Waiter::new(want, max_restarts, target, "ns", "web");
            waiter.replicasets_listed = true;
            Fed { waiter, seq: 0 }
        }

        fn observe(&mut self, rollout: &Value) -> Step {
            self.seq += 1;
            let record = Record {
                seq: self.seq,
                observed_at: Timestamp(self.seq as i64 * 1_000_000_000),
                kind: Kind::Rollout,
                op: if self.seq == 1 {
                    Op::Added
                } else {
                    Op::Modified
                },
                namespace: "ns".into(),
                name: "web".into(),
                uid: "u1".into(),
                resource_version: self.seq.to_string(),
                actor: None,
                object: serde_json::to_vec(rollout).unwrap(),
            };
            self.waiter.observe(&record, rollout)
        }
    }

    fn rollout(hash: &str, index: i64, phase: &str, paused: bool) -> Value {
        let mut v = json!({
            "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 2},
            "spec": {"strategy": {"canary": {"steps": [{"setWeight": 20}, {"pause": {}}, {"setWeight": 50}]}}},
            "status": {"currentPodHash": hash, "stableRS": "s0", "currentStepIndex": index,
                       "phase": phase, "observedGeneration": "2"}
        });
        if paused {
            v["status"]["pauseConditions"] = json!([{"reason": "CanaryPauseStep"}]);
        }
        v
    }

    #[test]
    fn a_paused_canary_is_success_for_pause() {
        let mut w = Fed::new(Want::Pause, 3, false);
        assert_eq!(
            w.observe(&rollout("s0", 3, "Healthy", false)),
            Step::Continue
        );
        assert_eq!(
            w.observe(&rollout("h1", 0, "Progressing", false)),
            Step::Continue
        );
        assert_eq!(
            w.observe(&rollout("h1", 1, "Paused", true)),
            Step::Done(Outcome::Reached)
        );
    }

    #[test]
    fn a_new_hash_mid_canary_restarts_the_timer_and_too_many_fail() {
        let mut w = Fed::new(Want::Healthy, 1, true);
        assert_eq!(
            w.observe(&rollout("s0", 3, "Healthy", false)),
            Step::Continue,
            "the old revision does not count"
        );
        assert_eq!(
            w.observe(&rollout("h1", 0, "Progressing", false)),
            Step::Continue,
            "a release from stable is no restart"
        );
        w.observe(&rollout("h1", 1, "Paused", true));
        assert_eq!(
            w.observe(&rollout("h2", 0, "Progressing", false)),
            Step::Restarted {
                from: "h1".into(),
                to: "h2".into(),
                counted: true
            }
        );
        w.observe(&rollout("h2", 1, "Paused", true));
        assert_eq!(
            w.observe(&rollout("h3", 0, "Progressing", false)),
            Step::Done(Outcome::RestartChurn)
        );
    }

    #[test]
    fn abort_and_degraded_fail_fast_and_healthy_needs_the_new_hash_stable() {
        let mut w = Fed::new(Want::Healthy, 3, false);
        assert_eq!(
            w.observe(&rollout("s0", 3, "Healthy", false)),
            Step::Done(Outcome::Reached)
        );
        let mut w = Fed::new(Want::Step(2), 3, false);
        let mut aborted = rollout("h1", 0, "Degraded", false);
        aborted["status"]["abort"] = json!(true);
        assert_eq!(w.observe(&aborted), Step::Done(Outcome::Aborted));
        let mut w = Fed::new(Want::Step(2), 3, false);
        assert_eq!(
            w.observe(&rollout("h1", 1, "Degraded", false)),
            Step::Done(Outcome::Degraded)
        );
    }

    #[test]
    fn a_canary_replaced_before_it_progressed_starts_the_timer_again_uncounted() {
        let mut w = Fed::new(Want::Healthy, 0, false);
        w.observe(&rollout("s0", 3, "Healthy", false));
        w.observe(&rollout("h1", 0, "Progressing", false));
        assert_eq!(
            w.observe(&rollout("h2", 0, "Progressing", false)),
            Step::Restarted {
                from: "h1".into(),
                to: "h2".into(),
                counted: false
            },
            "no restart to count with --max-restarts 0: h1 never left step 0"
        );
        assert_eq!(w.waiter.seen.restarts, 0);
    }

    #[test]
    fn a_wait_that_starts_at_a_pause_and_waits_past_it_counts_the_restart_that_loses_it() {
        // `wait` after the pipeline's first try: its first sight of the rollout is the pause.
        let mut w = Fed::new(Want::Step(2), 3, true);
        assert_eq!(w.observe(&rollout("h1", 1, "Paused", true)), Step::Continue);
        assert_eq!(
            w.observe(&rollout("h2", 0, "Progressing", false)),
            Step::Restarted {
                from: "h1".into(),
                to: "h2".into(),
                counted: true
            }
        );
        assert_eq!(w.waiter.seen.restarts, 1);
    }

    /// `rollout` with `metadata.generation` and `status.observedGeneration` set.
    fn at_generation(mut v: Value, generation: i64, observed: i64) -> Value {
        v["metadata"]["generation"] = json!(generation);
        v["status"]["observedGeneration"] = json!(observed.to_string());
        v
    }

    #[test]
    fn issue_46_a_new_revision_wait_started_before_the_apply_waits_for_it() {
        let mut w = Fed::new(Want::Pause, 3, true);
        assert_eq!(
            w.observe(&rollout("s0", 3, "Healthy", false)),
            Step::Continue
        );
        assert!(!w.waiter.seen.counts, "the stable revision is not new");
        let applied = at_generation(rollout("s0", 3, "Healthy", false), 3, 2);
        assert_eq!(w.observe(&applied), Step::Continue);
        let moved = at_generation(rollout("h1", 0, "Progressing", false), 3, 3);
        assert_eq!(w.observe(&moved), Step::Continue);
        assert!(w.waiter.seen.counts);
        let paused = at_generation(rollout("h1", 1, "Paused", true), 3, 3);
        assert_eq!(w.observe(&paused), Step::Done(Outcome::Reached));
    }

    #[test]
    fn issue_46_a_new_revision_wait_started_during_the_apply_waits_for_the_controller() {
        let mut w = Fed::new(Want::Pause, 3, true);
        // The spec changed; the controller has not observed it: the hash is the old one.
        let applied = at_generation(rollout("s0", 3, "Healthy", false), 3, 2);
        assert_eq!(w.observe(&applied), Step::Continue);
        let paused = at_generation(rollout("h1", 1, "Paused", true), 3, 3);
        assert_eq!(w.observe(&paused), Step::Done(Outcome::Reached));
    }

    #[test]
    fn issue_46_a_new_revision_wait_started_after_the_controller_moved_sees_the_pause() {
        // The pipeline applied, the controller moved and paused, then the wait started: the
        // revision that is not stable is the new one.
        let mut w = Fed::new(Want::Pause, 3, true);
        assert_eq!(
            w.observe(&rollout("h1", 1, "Paused", true)),
            Step::Done(Outcome::Reached)
        );
        assert!(w.waiter.seen.counts);
        assert!(
            w.waiter.seen.describe().contains("on h1 (new), paused"),
            "{}",
            w.waiter.seen.describe()
        );
        // And once that revision is promoted, it stays the new one.
        let mut w = Fed::new(Want::Healthy, 3, true);
        assert_eq!(w.observe(&rollout("h1", 1, "Paused", true)), Step::Continue);
        let mut promoted = rollout("h1", 3, "Healthy", false);
        promoted["status"]["stableRS"] = json!("h1");
        assert_eq!(w.observe(&promoted), Step::Done(Outcome::Reached));
    }

    /// A ReplicaSet of the rollout `web` of revision `n`.
    fn replicaset(hash: &str, n: i64) -> Value {
        json!({
            "metadata": {"labels": {"rollouts-pod-template-hash": hash},
                         "annotations": {"rollout.argoproj.io/revision": n.to_string()},
                         "ownerReferences": [{"kind": "Rollout", "name": "web"}]},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app"}]}}}
        })
    }

    #[test]
    fn issue_46_a_wait_started_as_a_rerender_lands_waits_for_the_hash_to_move() {
        // The real controller writes the new observedGeneration while currentPodHash still
        // names the paused revision before the re-render, whose ReplicaSet it already made.
        let mut w = Fed::new(Want::Pause, 3, true);
        w.waiter.observe_replicaset(&replicaset("h1", 2));
        w.waiter.observe_replicaset(&replicaset("h2", 3));
        let landing = at_generation(rollout("h1", 1, "Paused", true), 4, 3);
        assert_eq!(w.observe(&landing), Step::Continue);
        let observed = at_generation(rollout("h1", 1, "Paused", true), 4, 4);
        assert_eq!(
            w.observe(&observed),
            Step::Continue,
            "h1's pause is not the new revision's: h2 is the newest ReplicaSet"
        );
        let moved = at_generation(rollout("h2", 0, "Progressing", false), 4, 4);
        w.observe(&moved);
        let paused = at_generation(rollout("h2", 1, "Paused", true), 4, 4);
        assert_eq!(w.observe(&paused), Step::Done(Outcome::Reached));
        // A current revision whose ReplicaSet is not seen yet (it comes on another watch) is
        // not held back by the older ones.
        let mut w = Fed::new(Want::Pause, 3, true);
        w.waiter.observe_replicaset(&replicaset("s0", 1));
        assert_eq!(
            w.observe(&rollout("h1", 1, "Paused", true)),
            Step::Done(Outcome::Reached)
        );
        // Before the ReplicaSets are listed, nothing is answered.
        let mut w = Fed::new(Want::Pause, 3, true);
        w.waiter.replicasets_listed = false;
        assert_eq!(w.observe(&rollout("h1", 1, "Paused", true)), Step::Continue);
    }

    #[test]
    fn issue_46_a_rollback_to_stable_applied_after_the_wait_started_is_the_new_revision() {
        let mut w = Fed::new(Want::Healthy, 3, true);
        assert_eq!(
            w.observe(&rollout("s0", 3, "Healthy", false)),
            Step::Continue,
            "healthy on the stable revision it started on is not the release"
        );
        let rolled_back = at_generation(rollout("s0", 3, "Healthy", false), 3, 3);
        assert_eq!(w.observe(&rolled_back), Step::Done(Outcome::Reached));
    }

    #[test]
    fn issue_46_a_named_revision_or_image_counts_only_that_one() {
        let mut w = Fed::to(
            Want::Pause,
            3,
            Target::of("web", false, Some("web-h2"), None),
        );
        assert_eq!(w.waiter.target, Target::Revision("h2".into()));
        assert_eq!(w.observe(&rollout("h1", 1, "Paused", true)), Step::Continue);
        assert_eq!(
            w.observe(&rollout("h2", 1, "Paused", true)),
            Step::Done(Outcome::Reached)
        );

        let image = |hash: &str, image: &str| {
            let mut v = rollout(hash, 1, "Paused", true);
            v["spec"]["template"] =
                json!({"spec": {"containers": [{"name": "app", "image": image}]}});
            v
        };
        let mut w = Fed::to(
            Want::Pause,
            3,
            Target::of("web", true, None, Some("registry/app:2")),
        );
        assert_eq!(w.observe(&image("h1", "registry/app:1")), Step::Continue);
        assert_eq!(
            w.observe(&image("h2", "registry/app:2@sha256:00aa")),
            Step::Done(Outcome::Reached),
            "a tag names the same image pinned by digest"
        );
        // A workloadRef's template is in the revision's ReplicaSet.
        let mut w = Fed::to(Want::Pause, 3, Target::Image("registry/app:2".into()));
        w.waiter.observe_replicaset(&json!({
            "metadata": {"labels": {"rollouts-pod-template-hash": "h3"},
                         "ownerReferences": [{"kind": "Rollout", "name": "web"}]},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "registry/app:2"}]}}}
        }));
        assert_eq!(
            w.observe(&rollout("h3", 1, "Paused", true)),
            Step::Done(Outcome::Reached)
        );
        assert!(!same_image("registry/app:2", "registry/app:20"));
    }

    #[test]
    fn a_blue_green_preview_paused_before_promotion_is_success_for_pause_and_its_loss_a_restart() {
        let blue_green = |hash: &str, paused: bool| {
            let mut v = json!({
                "metadata": {"name": "web", "namespace": "ns", "uid": "u1", "generation": 2},
                "spec": {"strategy": {"blueGreen": {"activeService": "web", "previewService": "web-preview"}}},
                "status": {"currentPodHash": hash, "stableRS": "s0", "phase": "Progressing",
                           "observedGeneration": "2"}
            });
            if paused {
                v["status"]["pauseConditions"] = json!([{"reason": "BlueGreenPause"}]);
                v["status"]["phase"] = json!("Paused");
            }
            v
        };
        let mut w = Fed::new(Want::Healthy, 3, false);
        w.observe(&blue_green("s0", false));
        w.observe(&blue_green("h1", false));
        w.observe(&blue_green("h1", true));
        assert_eq!(
            w.observe(&blue_green("h2", false)),
            Step::Restarted {
                from: "h1".into(),
                to: "h2".into(),
                counted: true
            },
            "the pre-promotion pause lost to a new template"
        );
        let mut w = Fed::new(Want::Pause, 3, false);
        w.observe(&blue_green("h1", false));
        assert_eq!(
            w.observe(&blue_green("h1", true)),
            Step::Done(Outcome::Reached)
        );
    }

    #[test]
    fn wait_counts_the_restarts_analyze_reports() {
        for (scenario, restarts) in [
            ("rerender-race-reruns", 5),
            ("rerender-race", 1),
            ("gitops-double-render", 1),
            ("image-only-release", 0),
            ("abort", 0),
            ("rollback-to-stable", 0),
        ] {
            let recording = rf_scenarios::generate(scenario).unwrap();
            let report = rf_analyzer::analyze(
                &recording.header,
                recording.records.clone(),
                rf_analyzer::Options::default(),
            );
            let reported = report
                .findings
                .iter()
                .filter(|f| f.rule == rf_analyzer::Rule::RerenderRestart)
                .count();
            assert_eq!(reported, restarts, "{scenario}: analyze");
            let first = recording
                .records
                .iter()
                .find(|r| r.kind == Kind::Rollout && !r.name.is_empty())
                .unwrap();
            let mut waiter = Waiter::new(
                Want::Step(99),
                u32::MAX,
                Target::Any,
                &first.namespace,
                &first.name,
            );
            for r in &recording.records {
                if r.kind == Kind::Rollout && r.name == first.name {
                    let v: Value = serde_json::from_slice(&r.object).unwrap_or(Value::Null);
                    waiter.observe(r, &v);
                }
            }
            assert_eq!(waiter.seen.restarts, restarts as u32, "{scenario}: wait");
        }
    }

    #[test]
    fn conditions_parse_and_bad_ones_say_what_is_expected() {
        assert_eq!(Want::parse("step=2").unwrap(), Want::Step(2));
        assert!(
            Want::parse("step=x")
                .unwrap_err()
                .to_string()
                .contains("pause, step=N or healthy")
        );
    }
}
