//! `rollout-forensics record -o FILE`: watch a live API server and write a recording.
//! `record --dir DIR --rotate 1h --keep 24`: the flight recorder, a new file per interval.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use rf_analyzer::{Analyzer, FileEnd, Finding, Options};
use rf_format::{Header, Record, Timestamp};
use rf_recorder::{Config, Hooks, Progress, Summary, Tap};
use std::sync::Arc;

use crate::exit::Exit;
use crate::metrics::Metrics;
use crate::timespec::parse_duration;

#[derive(Debug, Args)]
pub struct RecordArgs {
    /// Namespace to record (repeatable); default: the kubeconfig context's namespace.
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespaces: Vec<String>,
    /// Record all namespaces.
    #[arg(short = 'A', long = "all-namespaces", conflicts_with = "namespaces")]
    pub all_namespaces: bool,
    /// Label selector for every kind (e.g. `app=checkout-api`).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Path to the kubeconfig (default: $KUBECONFIG, ~/.kube/config, or in-cluster).
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Kinds to record, comma-separated: rollouts, replicasets, services, endpointslices, pods,
    /// applications, events, deployments, endpoints, ingresses, httproutes, virtualservices,
    /// destinationrules, analysisruns, analysistemplates, clusteranalysistemplates, experiments,
    /// helmreleases, kustomizations. Each one named must be served. Default: replicasets,
    /// services, endpointslices, pods and events, and each of the others that the server serves
    /// and this account may list (one skipped is named in the summary and the header's notes:
    /// a cluster without Argo Rollouts is recorded without its Rollouts).
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    pub kinds: Vec<String>,
    /// The recording to write (or --dir for a flight recorder).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        conflicts_with = "dir"
    )]
    pub output: Option<PathBuf>,
    /// Flight recorder: write a new file every --rotate into DIR, named by its start time
    /// (`rf-20260314T130000Z.rfr`); the file being written ends in `.partial`.
    #[arg(long, value_name = "DIR", requires = "rotate")]
    pub dir: Option<PathBuf>,
    /// With --dir: how long each file covers (e.g. 30s, 10m, 1h; whole seconds). Files start on
    /// multiples of it (with 1h, on the hour).
    #[arg(long, value_name = "DURATION", requires = "dir")]
    pub rotate: Option<String>,
    /// With --dir: keep the N newest closed files, remove older ones (default: keep all).
    #[arg(long, value_name = "N", requires = "dir", value_parser = clap::value_parser!(u64).range(1..))]
    pub keep: Option<u64>,
    /// Print each finding on stderr the moment it becomes true, as `analyze` would report it.
    #[arg(long)]
    pub live: bool,
    /// Stop after this long (e.g. 30m); default: until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// How often to flush to disk (a deflate sync flush): at most this much is lost to a SIGKILL.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub flush_interval: String,
    /// Keep env values and Helm values as they are (they may hold secrets).
    #[arg(long)]
    pub no_redact: bool,
    /// A watch silent for this long is taken as stalled and resumed (tests).
    #[arg(long, hide = true, value_name = "DURATION")]
    pub idle_timeout: Option<String>,
    /// timeoutSeconds asked of each watch (tests).
    #[arg(long, hide = true, value_name = "DURATION")]
    pub watch_timeout: Option<String>,
    /// Serve `/metrics` (OpenMetrics: findings by rollout and rule, the recorder's health),
    /// `/healthz` and `/readyz` on ADDR (e.g. `0.0.0.0:9464`), for Prometheus to scrape.
    #[arg(long, value_name = "ADDR")]
    pub metrics_listen: Option<std::net::SocketAddr>,
}

fn duration(s: &str, flag: &str) -> Result<Duration> {
    let nanos = parse_duration(s).with_context(|| format!("in {flag}"))?;
    Ok(Duration::from_nanos(u64::try_from(nanos).unwrap_or(0)))
}

/// The recorder's configuration from the flags (namespaces resolved later).
fn config(args: &RecordArgs) -> Result<Config> {
    let mut config = Config {
        redact: !args.no_redact,
        label_selector: args.selector.clone(),
        flush_interval: duration(&args.flush_interval, "--flush-interval")?,
        ..Config::default()
    };
    if config.flush_interval.is_zero() {
        bail!("--flush-interval must be longer than 0");
    }
    if !args.kinds.is_empty() {
        let mut kinds = Vec::new();
        for name in &args.kinds {
            match rf_recorder::parse_kind(name) {
                Some(k) if !kinds.contains(&k) => kinds.push(k),
                Some(_) => {}
                None => bail!(
                    "unknown kind {name:?} in --kinds: use {}",
                    rf_recorder::KIND_NAMES.join(", ")
                ),
            }
        }
        config.kinds = kinds;
        config.optional_kinds.clear();
    }
    if let Some(s) = &args.idle_timeout {
        config.idle_timeout = duration(s, "--idle-timeout")?;
    }
    if let Some(s) = &args.watch_timeout {
        config.watch_timeout = duration(s, "--watch-timeout")?;
    }
    Ok(config)
}

fn status_line(p: &Progress) -> String {
    let secs = p.elapsed.as_secs();
    let kinds: Vec<String> = p.per_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let rate = p.records.checked_div(secs).unwrap_or(p.records);
    format!(
        "recording {:02}:{:02}:{:02} · {} · {} records ({rate}/s) · {} KiB · {} gaps",
        secs / 3600,
        (secs % 3600) / 60,
        secs % 60,
        if kinds.is_empty() {
            "listing".to_owned()
        } else {
            kinds.join(" · ")
        },
        p.records,
        p.bytes / 1024,
        p.gaps
    )
}

fn summary_text(s: &Summary, path: Option<&std::path::Path>) -> String {
    let secs = (s.ended_at.as_unix_nanos() - s.started_at.as_unix_nanos()).max(0) / 1_000_000_000;
    let kinds: Vec<String> = s.per_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut text = format!(
        "recorded {} records in {} to {} ({} bytes, {} gaps, {} watches resumed without loss)\n  per kind: {}",
        s.records,
        rf_analyzer::human_duration(secs * 1_000_000_000),
        match path {
            None => "nowhere (no -o)".to_owned(),
            Some(p) if s.files > 1 => format!("{} files in {}", s.files, p.display()),
            Some(p) => p.display().to_string(),
        },
        s.bytes,
        s.gaps,
        s.resumes,
        if kinds.is_empty() {
            "none".to_owned()
        } else {
            kinds.join(", ")
        }
    );
    for (why, words) in [
        (rf_recorder::Skip::NotServed, "not served, skipped"),
        (
            rf_recorder::Skip::Forbidden,
            "not allowed to list, skipped (see deploy/rbac.yaml)",
        ),
    ] {
        let names: Vec<&str> = s
            .skipped
            .iter()
            .filter(|(_, w)| *w == why)
            .map(|(k, _)| k.name())
            .collect();
        if !names.is_empty() {
            text.push_str(&format!("\n  {words}: {}", names.join(", ")));
        }
    }
    text
}

async fn stop_signal(limit: Option<Duration>, interrupted: crate::signal::Interrupt) {
    let timer = async {
        match limit {
            Some(d) => tokio::time::sleep(d).await,
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = timer => {}
        () = interrupted.wait() => {}
    }
}

/// Analyzes records as the writer writes them and prints each finding once, when it becomes
/// true (with `print`); at the close, the end-of-recording findings (orphans) follow. With
/// `metrics`, counts each finding and what is written there.
struct LiveTap {
    analyzer: Option<Analyzer>,
    printed: Vec<(rf_analyzer::Rule, rf_analyzer::Subject, Timestamp)>,
    clear_line: bool,
    print: bool,
    metrics: Option<Arc<Metrics>>,
    /// When the end-of-recording checks last ran live (a flight recorder never ends).
    last_live_check: Option<Timestamp>,
}

/// How often a recording that goes on asks the end-of-recording checks (an orphaned
/// ReplicaSet) what they decide already.
const LIVE_CHECK_NANOS: i64 = 5_000_000_000;

/// What the analyzer hands the live tap: findings, and the conditions they reported that
/// stopped holding or hold again.
#[derive(Default)]
struct Found {
    findings: Vec<Finding>,
    changes: Vec<rf_analyzer::ConditionChange>,
}

impl rf_analyzer::FindingSink for Found {
    fn finding(&mut self, finding: &Finding) {
        self.findings.push(finding.clone());
    }

    fn condition(&mut self, change: &rf_analyzer::ConditionChange) {
        self.changes.push(change.clone());
    }
}

impl LiveTap {
    fn take(&mut self, found: &Found) {
        self.print(&found.findings);
        if let Some(m) = &self.metrics {
            m.conditions(&found.changes);
        }
    }

    /// Prints (with `print`) and counts (with `metrics`) each finding not seen before.
    fn print(&mut self, findings: &[Finding]) {
        let mut new: Vec<&Finding> = Vec::new();
        for f in findings {
            let key = (f.rule, f.subject.clone(), f.at);
            if self.printed.contains(&key) {
                continue;
            }
            self.printed.push(key);
            new.push(f);
            if !self.print {
                continue;
            }
            let time = rf_analyzer::rfc3339(f.at);
            let run = f
                .remedy
                .commands
                .first()
                .map(|c| format!("; run: {c}"))
                .unwrap_or_default();
            eprintln!(
                "{}{} {} {} {}/{}: {}{run}",
                if self.clear_line { "\r\x1b[K" } else { "" },
                time.get(11..19).unwrap_or(&time),
                f.severity.as_str().to_uppercase(),
                f.rule,
                f.subject.namespace,
                f.subject.name,
                f.summary
            );
        }
        if let Some(m) = &self.metrics {
            m.findings(new);
        }
    }
}

impl Tap for LiveTap {
    fn begin(&mut self, header: &Header) {
        // With metrics, the conditions the findings reported are followed as they end.
        let options = Options {
            conditions: self.metrics.is_some(),
            ..Options::default()
        };
        let mut analyzer = crate::spill::analyzer(options);
        analyzer.begin_file("(live)", rf_format::FORMAT_VERSION, header);
        self.analyzer = Some(analyzer);
        if let Some(m) = &self.metrics {
            m.begin(header);
        }
    }

    fn record(&mut self, record: &Record) {
        if let Some(m) = &self.metrics {
            m.record(record, rf_recorder::now());
        }
        if let Some(a) = self.analyzer.as_mut() {
            let mut found = Found::default();
            a.push(record, rf_analyzer::Prepared::of(record), &mut found);
            self.take(&found);
        }
    }

    fn tick(&mut self, now: Timestamp) {
        if let Some(a) = self.analyzer.as_mut() {
            let mut found = Found::default();
            a.advance_to(now, &mut found);
            if self
                .last_live_check
                .is_none_or(|t| now.0 - t.0 >= LIVE_CHECK_NANOS)
            {
                a.live_checks(now, &mut found);
                self.last_live_check = Some(now);
            }
            self.take(&found);
        }
    }

    fn closed(&mut self, closed_at: Timestamp) {
        if let Some(mut a) = self.analyzer.take() {
            a.end_file(FileEnd::Closed, Some(closed_at), None);
            let report = a.finish();
            self.print(&report.findings);
        }
    }
}

/// Says which of `namespaces` do not exist, as kubectl does: recording goes on (they may be
/// created), but a typo would otherwise record nothing without a word. A server that does not
/// let the recorder get namespaces (a namespaced Role) is not asked twice and says nothing.
async fn warn_of_missing_namespaces(client: &kube::Client, namespaces: &[String]) {
    use kube::api::{Api, ApiResource, DynamicObject};
    let resource = ApiResource {
        group: String::new(),
        version: "v1".to_owned(),
        api_version: "v1".to_owned(),
        kind: "Namespace".to_owned(),
        plural: "namespaces".to_owned(),
    };
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
    for ns in namespaces {
        match api.get_opt(ns).await {
            Ok(Some(_)) => {}
            Ok(None) => eprintln!(
                "warning: namespace {ns:?} does not exist: nothing is recorded from it until it is created (recording goes on)"
            ),
            // Forbidden or unreachable: the recorder's own lists say the rest.
            Err(_) => return,
        }
    }
}

/// What a recorder says as it starts: what it records, where to, and how it stops
/// (`recording namespace oncall to inc.rfr; Ctrl-C stops`).
fn start_line(namespaces: &[String], args: &RecordArgs, limited: bool) -> String {
    let what = match namespaces {
        [] => "recording all namespaces".to_owned(),
        [one] => format!("recording namespace {one}"),
        many => format!("recording namespaces {}", many.join(", ")),
    };
    let what = match &args.selector {
        Some(l) => format!("{what} (-l {l})"),
        None => what,
    };
    let to = match (&args.output, &args.dir) {
        (Some(f), _) => format!(" to {}", f.display()),
        (None, Some(d)) => format!(" to files in {}", d.display()),
        (None, None) => String::new(),
    };
    let stops = match &args.duration {
        Some(d) if limited => format!("for {d}, or until Ctrl-C"),
        _ => "Ctrl-C stops".to_owned(),
    };
    format!("{what}{to}; {stops}")
}

/// `watch`: `record --live`, with the file optional.
pub fn watch(args: &RecordArgs, out: &mut dyn Write) -> Result<Exit> {
    if args.dir.is_some() || args.rotate.is_some() || args.keep.is_some() {
        bail!("watch does not keep a flight recorder: use record --dir DIR --rotate D --live");
    }
    run_inner(args, out, true)
}

/// `--dir`, `--rotate`, `--keep` checked.
fn rotation(args: &RecordArgs) -> Result<Option<rf_recorder::Rotation>> {
    if args.dir.is_none() && (args.rotate.is_some() || args.keep.is_some()) {
        bail!("--rotate and --keep go with --dir DIR (the flight recorder), not with -o FILE");
    }
    let (Some(dir), Some(every)) = (&args.dir, &args.rotate) else {
        return Ok(None);
    };
    let every = duration(every, "--rotate")?;
    if every < Duration::from_secs(1) || every.subsec_nanos() != 0 {
        bail!("--rotate must be a whole number of seconds, at least 1s (e.g. 30s, 10m, 1h)");
    }
    Ok(Some(rf_recorder::Rotation {
        dir: dir.clone(),
        every,
        keep: args.keep.map(|k| usize::try_from(k).unwrap_or(usize::MAX)),
    }))
}

pub fn run(args: &RecordArgs, out: &mut dyn Write) -> Result<Exit> {
    if args.output.is_none() && args.dir.is_none() {
        bail!(
            "record needs -o FILE, or --dir DIR --rotate D for a flight recorder (use `watch` to see findings live without writing a file)"
        );
    }
    run_inner(args, out, args.live)
}

fn run_inner(args: &RecordArgs, _out: &mut dyn Write, live: bool) -> Result<Exit> {
    let mut config = config(args)?;
    let rotation = rotation(args)?;
    let limit = args
        .duration
        .as_deref()
        .map(|d| duration(d, "--duration"))
        .transpose()?;
    // Bound before anything is recorded: a port in use is an error now, not a silent recorder.
    let metrics_listener = args.metrics_listen.map(crate::metrics::bind).transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let (client, source, default_ns) =
            crate::cluster::client_for(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        config.namespaces = if args.all_namespaces {
            Vec::new()
        } else if args.namespaces.is_empty() {
            vec![default_ns]
        } else {
            args.namespaces.clone()
        };
        warn_of_missing_namespaces(&client, &config.namespaces).await;
        let output: Box<dyn Write + Send> = match &args.output {
            Some(path) => Box::new(std::io::BufWriter::with_capacity(
                256 * 1024,
                std::fs::File::create(path)
                    .with_context(|| format!("cannot write the recording to {}", path.display()))?,
            )),
            None => Box::new(std::io::sink()),
        };
        if let Some(r) = &rotation {
            // A recorder killed before its last close left a `.partial` file: its history stays,
            // under the name every reader of the directory sees (it reads as not closed).
            let adopted = rf_recorder::adopt_leftovers(&r.dir)
                .with_context(|| format!("cannot read the directory {}", r.dir.display()))?;
            for p in adopted {
                eprintln!(
                    "note: {} was left open by a recorder that stopped without closing it; it keeps its history and reads as not closed",
                    p.display()
                );
            }
        }
        let interrupted = crate::signal::Interrupt::install()?;
        eprintln!("{}", start_line(&config.namespaces, args, limit.is_some()));
        let status = std::io::stderr().is_terminal();
        let metrics = match metrics_listener {
            Some(listener) => {
                let metrics = Arc::new(Metrics::new());
                let listener = tokio::net::TcpListener::from_std(listener)
                    .context("cannot serve --metrics-listen")?;
                if let Ok(addr) = listener.local_addr() {
                    eprintln!("metrics: http://{addr}/metrics (and /healthz, /readyz)");
                }
                tokio::spawn(crate::metrics::serve(listener, Arc::clone(&metrics)));
                Some(metrics)
            }
            None => None,
        };
        let hooks = Hooks {
            tap: (live || metrics.is_some()).then(|| {
                Box::new(LiveTap {
                    analyzer: None,
                    printed: Vec::new(),
                    clear_line: status,
                    print: live,
                    metrics: metrics.clone(),
                    last_live_check: None,
                }) as Box<dyn Tap>
            }),
        };
        let progress = |p: &Progress| {
            if let Some(m) = &metrics {
                m.progress(p.bytes, p.resumes, p.files);
            }
            if status {
                eprint!("\r\x1b[K{}", status_line(p));
            }
        };
        let stop = stop_signal(limit, interrupted);
        let result = match rotation {
            Some(r) => {
                rf_recorder::record_rotating(client, &config, &source, r, stop, progress, hooks)
                    .await
            }
            None => {
                rf_recorder::record_with(client, &config, &source, output, stop, progress, hooks)
                    .await
            }
        };
        if status {
            eprint!("\r\x1b[K");
        }
        match result {
            Ok(summary) => {
                let to = args.output.as_deref().or(args.dir.as_deref());
                eprintln!("{}", summary_text(&summary, to));
                Ok(Exit::Ok)
            }
            Err(e) => {
                let started = !matches!(
                    e,
                    rf_recorder::Error::Forbidden { .. }
                        | rf_recorder::Error::NotServed { .. }
                        | rf_recorder::Error::Unreachable { .. }
                );
                if let (false, Some(path)) = (started, &args.output) {
                    // Nothing worth keeping: no half-made file under the asked name.
                    let _ = std::fs::remove_file(path);
                }
                Err(anyhow::Error::new(e))
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_help_of_kinds_names_every_kind_the_recorder_takes() {
        let cli = crate::args::Cli::command();
        let record = cli.find_subcommand("record").expect("the record command");
        let help = record
            .get_arguments()
            .find(|a| a.get_id() == "kinds")
            .and_then(|a| a.get_help())
            .expect("--kinds has help")
            .to_string();
        for name in rf_recorder::KIND_NAMES {
            assert!(help.contains(name), "{name} not in: {help}");
        }
    }
}
