//! rf-recorder: records Kubernetes watch events into a rollout-forensics recording.
//!
//! One list-and-watch loop per kind and namespace feeds a writer thread through a bounded
//! channel. A watch that closes or breaks resumes from the last resourceVersion seen, so nothing
//! is lost; when the server answers 410 Gone, the loop writes a `Gap` record and relists
//! (`ListBegin`, `Listed` for every object, `Deleted{inferred}` for every object that vanished,
//! `ListEnd`). The writer closes a gzip member at every flush interval and at each list end, so
//! a recorder killed with SIGKILL loses at most the last interval; stopping it writes the trailer.
//!
//! [`record_rotating`] is the flight-recorder mode: a new file per interval in a directory, each
//! a complete recording (closed with its trailer, beginning with a list of every kind and
//! namespace made from the recorder's own view of the objects), the oldest removed; see
//! [`Rotation`].
//!
//! It only gets, lists and watches. Unless told otherwise it replaces every `env[].value` (and
//! every Helm value of an Argo CD Application) by a short digest before anything is written.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?;
//! let config = rf_recorder::Config::default();
//! let file = std::fs::File::create("incident.rfr")?;
//! let source = rf_recorder::SourceInfo::default();
//! let stop = tokio::time::sleep(std::time::Duration::from_secs(60));
//! let summary = rf_recorder::record(client, &config, &source, file, stop, |_| {}).await?;
//! println!("{} records", summary.records);
//! # Ok(()) }
//! ```

mod clock;
mod error;
mod redact;
mod resource;
mod rotate;
mod scan;
mod sink;
mod watch;

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kube::Client;
use rf_format::{Header, Kind, Redaction, Source, Timestamp};

pub use clock::now;
pub use error::{Error, Result};
pub use redact::{digest, redact_object};
pub use resource::{KIND_NAMES, Resource, parse_kind};
pub use rotate::{PARTIAL_SUFFIX, Rotation, adopt_leftovers, list_files, parse_file_name};
pub use sink::{Tap, Written};
pub use watch::Stats;

use crate::watch::{Target, Tuning};

/// What to record and how.
#[derive(Clone, Debug)]
pub struct Config {
    /// Kinds that must be served (an error names any that is not).
    pub kinds: Vec<Kind>,
    /// Kinds recorded only when the server serves them and this account may list them
    /// (skipped otherwise, and the header's notes say so).
    pub optional_kinds: Vec<Kind>,
    /// Namespaces; empty: all namespaces.
    pub namespaces: Vec<String>,
    /// Label selector for every list and watch.
    pub label_selector: Option<String>,
    /// How often the writer closes a gzip member.
    pub flush_interval: Duration,
    /// Replace env values and Helm values by digests.
    pub redact: bool,
    /// `timeoutSeconds` asked of every watch (the server ends it then; the loop resumes).
    pub watch_timeout: Duration,
    /// A watch that sends no byte for this long is taken as stalled and resumed.
    pub idle_timeout: Duration,
    /// Longest wait between retries.
    pub backoff_max: Duration,
    /// Objects per list page.
    pub page_size: u32,
    /// Records buffered between the watchers and the writer.
    pub channel_capacity: usize,
}

/// Options of one recording run that are not plain configuration.
#[derive(Default)]
pub struct Hooks {
    /// Sees every record as written, and the close (live analysis).
    pub tap: Option<Box<dyn Tap>>,
}

impl std::fmt::Debug for Hooks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hooks")
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            // The core kinds every cluster serves; the rest, Rollouts among them, when the
            // server serves them: a cluster of plain Deployments is recorded too.
            kinds: vec![
                Kind::ReplicaSet,
                Kind::Service,
                Kind::EndpointSlice,
                Kind::Pod,
                Kind::Event,
            ],
            optional_kinds: [Kind::Rollout, Kind::Application]
                .into_iter()
                .chain(rf_format::api::WELL_KNOWN.iter().map(|n| n.newest()))
                .collect(),
            namespaces: Vec::new(),
            label_selector: None,
            flush_interval: Duration::from_secs(1),
            redact: true,
            watch_timeout: Duration::from_secs(290),
            idle_timeout: Duration::from_secs(330),
            backoff_max: Duration::from_secs(30),
            page_size: 500,
            channel_capacity: 8192,
        }
    }
}

/// Where the recording comes from, for its header.
#[derive(Clone, Debug, Default)]
pub struct SourceInfo {
    /// kubeconfig context.
    pub context: Option<String>,
    /// API server URL.
    pub server: Option<String>,
}

/// What the status line shows, once a second.
#[derive(Clone, Debug)]
pub struct Progress {
    /// Since recording began.
    pub elapsed: Duration,
    /// Events and listed objects per kind.
    pub per_kind: BTreeMap<String, u64>,
    /// Records written.
    pub records: u64,
    /// Compressed bytes written.
    pub bytes: u64,
    /// Gaps recorded.
    pub gaps: u64,
    /// Watches resumed after closing or breaking, without loss.
    pub resumes: u64,
    /// Files started (more than one in flight-recorder mode: each rotation starts one).
    pub files: u64,
}

/// What was recorded.
#[derive(Clone, Debug)]
pub struct Summary {
    /// When recording began.
    pub started_at: Timestamp,
    /// When it stopped.
    pub ended_at: Timestamp,
    /// Records written.
    pub records: u64,
    /// Compressed bytes written.
    pub bytes: u64,
    /// Events and listed objects per kind.
    pub per_kind: BTreeMap<String, u64>,
    /// Gaps recorded.
    pub gaps: u64,
    /// Watches resumed after closing or breaking, without loss.
    pub resumes: u64,
    /// Kinds recorded.
    pub kinds: Vec<Kind>,
    /// Optional kinds not recorded, and why.
    pub skipped: Vec<(Kind, Skip)>,
    /// Files written (more than one in flight-recorder mode).
    pub files: u64,
}

/// Which of the asked kinds the server serves: the resources to watch, and the optional kinds
/// skipped, each with why (not served, or not allowed). A required kind that is not served is
/// an error; a kind of [`rf_format::api::WELL_KNOWN`] is recorded in the first of its versions
/// the server serves. An optional kind the server serves but this account may not list is
/// skipped (a flight recorder deployed with an older Role keeps recording the rest).
pub async fn discover(
    client: &Client,
    config: &Config,
    server: &str,
) -> Result<(Vec<Resource>, Vec<(Kind, Skip)>)> {
    let mut served_cache: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut resources = Vec::new();
    let mut skipped = Vec::new();
    let all = config
        .kinds
        .iter()
        .map(|k| (k, true))
        .chain(config.optional_kinds.iter().map(|k| (k, false)));
    for (kind, required) in all {
        let candidates = Resource::candidates(kind);
        let Some(first) = candidates.first().cloned() else {
            continue;
        };
        let mut found = None;
        for resource in candidates {
            let gv = resource.api_version();
            if !served_cache.contains_key(&gv) {
                let names = served_names(client, &resource, server).await?;
                served_cache.insert(gv.clone(), names);
            }
            if served_cache
                .get(&gv)
                .is_some_and(|names| names.iter().any(|n| n == resource.plural))
            {
                found = Some(resource);
                break;
            }
        }
        match found {
            Some(resource) if required => resources.push(resource),
            Some(resource) => {
                if may_list(client, &resource, &config.namespaces).await {
                    resources.push(resource);
                } else {
                    skipped.push((kind.clone(), Skip::Forbidden));
                }
            }
            None if required => {
                let hint = match kind {
                    Kind::Rollout => ": is Argo Rollouts installed? Leave rollouts out of --kinds, or --kinds out altogether: without it, a cluster that does not serve Rollouts is recorded without them".to_owned(),
                    _ => format!(": leave it out of --kinds to record the rest ({})", kind.name()),
                };
                return Err(Error::NotServed {
                    resource: first.qualified(),
                    api_version: first.api_version(),
                    hint,
                });
            }
            None => skipped.push((kind.clone(), Skip::NotServed)),
        }
    }
    Ok((resources, skipped))
}

/// Why an optional kind was not recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// The server does not serve it.
    NotServed,
    /// The server serves it, but this account may not list it.
    Forbidden,
}

/// The resource names the server serves in `resource`'s group version (none when it serves
/// no such group version).
async fn served_names(client: &Client, resource: &Resource, server: &str) -> Result<Vec<String>> {
    let gv = resource.api_version();
    let listed = if resource.group.is_empty() {
        client.list_core_api_resources(resource.version).await
    } else {
        client.list_api_group_resources(&gv).await
    };
    match listed {
        Ok(list) => Ok(list.resources.into_iter().map(|r| r.name).collect()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(Vec::new()),
        Err(kube::Error::Api(s)) if s.code == 403 => Err(Error::Forbidden {
            verb: "get",
            resource: format!("API discovery of {gv}"),
            scope: String::new(),
            message: s.message,
        }),
        Err(e) => Err(Error::Unreachable {
            server: server.to_owned(),
            detail: e.to_string(),
        }),
    }
}

/// False when listing `resource` in any of `namespaces` (all when empty) is forbidden: a list
/// of one object, the verb recording uses anyway. Any other failure is the watch's to report.
async fn may_list(client: &Client, resource: &Resource, namespaces: &[String]) -> bool {
    let scopes: Vec<Option<&str>> = if namespaces.is_empty() || !resource.namespaced {
        vec![None]
    } else {
        namespaces.iter().map(|n| Some(n.as_str())).collect()
    };
    for ns in scopes {
        let lp = kube::api::ListParams::default().limit(1);
        let Ok(req) = kube::core::Request::new(resource.url_path(ns)).list(&lp) else {
            continue;
        };
        if let Err(kube::Error::Api(s)) = client.request_text(req).await {
            if s.code == 403 {
                return false;
            }
        }
    }
    true
}

/// Records until `stop` resolves, then closes the file cleanly. `on_progress` is called once a
/// second. Errors before anything was recorded (forbidden, not served, unreachable) leave the
/// output without a trailer: the caller should remove it.
pub async fn record<W: Write + Send + 'static>(
    client: Client,
    config: &Config,
    source: &SourceInfo,
    output: W,
    stop: impl Future<Output = ()>,
    on_progress: impl FnMut(&Progress),
) -> Result<Summary> {
    record_with(
        client,
        config,
        source,
        output,
        stop,
        on_progress,
        Hooks::default(),
    )
    .await
}

/// [`record`], with a tap that sees every record as it is written.
pub async fn record_with<W: Write + Send + 'static>(
    client: Client,
    config: &Config,
    source: &SourceInfo,
    output: W,
    stop: impl Future<Output = ()>,
    on_progress: impl FnMut(&Progress),
    hooks: Hooks,
) -> Result<Summary> {
    run(
        client,
        config,
        source,
        sink::Single(Some(output)),
        stop,
        on_progress,
        hooks,
    )
    .await
}

/// Flight-recorder mode: records until `stop` resolves into a new file every
/// [`Rotation::every`] in [`Rotation::dir`], removing the oldest beyond [`Rotation::keep`].
///
/// Each file is a complete recording: closed with its trailer (at the rotation time) and
/// beginning with a list (`ListBegin`, `Listed`..., `ListEnd`) of every kind and namespace
/// recorded. The watches are not interrupted by a rotation, so no event is lost or written twice
/// across files; the leading lists of every file after the first are the recorder's own view,
/// every object as last recorded, not a new list from the API server (a relist every interval
/// would cost the API server a list of every kind, and would tell nothing that the uninterrupted
/// watches had not delivered). The header of such a file notes `leading-lists`. The file being written
/// ends in [`PARTIAL_SUFFIX`] and is renamed when closed. An error at the start (forbidden, not
/// served) leaves no file behind.
///
/// Call [`adopt_leftovers`] first to keep the history of a recorder that was killed.
pub async fn record_rotating(
    client: Client,
    config: &Config,
    source: &SourceInfo,
    rotation: Rotation,
    stop: impl Future<Output = ()>,
    on_progress: impl FnMut(&Progress),
    hooks: Hooks,
) -> Result<Summary> {
    let dest = rotate::Directory::new(rotation)?;
    run(client, config, source, dest, stop, on_progress, hooks).await
}

async fn run<D: sink::Destination>(
    client: Client,
    config: &Config,
    source: &SourceInfo,
    dest: D,
    stop: impl Future<Output = ()>,
    mut on_progress: impl FnMut(&Progress),
    hooks: Hooks,
) -> Result<Summary> {
    let server = source
        .server
        .clone()
        .unwrap_or_else(|| "(unknown)".to_owned());
    let (resources, skipped) = discover(&client, config, &server).await?;
    let started_at = clock::now();
    let mut header = Header::new(
        concat!("rollout-forensics ", env!("CARGO_PKG_VERSION")),
        started_at,
        Source {
            context: source.context.clone(),
            server: source.server.clone(),
            namespaces: config.namespaces.clone(),
            label_selector: config.label_selector.clone(),
            kinds: resources.iter().map(|r| r.kind.clone()).collect(),
        },
    );
    header.redaction = if config.redact {
        Redaction::EnvValueDigests
    } else {
        Redaction::Disabled
    };
    for (why, note) in [
        (Skip::NotServed, "not-served"),
        (Skip::Forbidden, "forbidden"),
    ] {
        let names: Vec<&str> = skipped
            .iter()
            .filter(|(_, w)| *w == why)
            .map(|(k, _)| k.name())
            .collect();
        if !names.is_empty() {
            header.notes.insert(note.to_owned(), names.join(","));
        }
    }
    let namespaces: Vec<Option<String>> = if config.namespaces.is_empty() {
        vec![None]
    } else {
        config.namespaces.iter().cloned().map(Some).collect()
    };
    // A cluster-scoped resource is listed and watched once, across the cluster.
    let cluster = vec![None];
    let scopes = |r: &Resource| if r.namespaced { &namespaces } else { &cluster };
    let targets: Vec<sink::TargetKey> = resources
        .iter()
        .flat_map(|r| scopes(r).iter().map(|ns| (r.kind.clone(), ns.clone())))
        .collect();
    let sink = sink::start(
        dest,
        &header,
        // Records travel in batches of up to `BATCH`: as many records buffered as configured.
        config.channel_capacity.div_ceil(watch::BATCH).max(4),
        hooks.tap,
        &targets,
        Box::new(clock::SystemClock),
    )?;
    let stats = Arc::new(Stats::default());
    let tuning = Tuning {
        watch_timeout: config.watch_timeout,
        idle_timeout: config.idle_timeout,
        backoff_max: config.backoff_max,
        page_size: config.page_size,
        redact: config.redact,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for resource in &resources {
        for ns in scopes(resource) {
            let target = Target {
                resource: resource.clone(),
                namespace: ns.clone(),
                selector: config.label_selector.clone(),
            };
            tasks.spawn(watch::run(
                client.clone(),
                target,
                tuning.clone(),
                sink.tx.clone(),
                Arc::clone(&stats),
                server.clone(),
            ));
        }
    }
    let begun = Instant::now();
    let mut ticker = tokio::time::interval(config.flush_interval.min(Duration::from_secs(1)));
    let mut last_flush = Instant::now();
    tokio::pin!(stop);
    let outcome: Result<()> = loop {
        tokio::select! {
            () = &mut stop => break Ok(()),
            Some(done) = tasks.join_next() => {
                match done {
                    Ok(Err(e)) => break Err(e),
                    Ok(Ok(())) => {}
                    Err(join) => break Err(Error::Thread(std::io::Error::other(join.to_string()))),
                }
            }
            _ = ticker.tick() => {
                if sink.handle.is_finished() {
                    // The writer stopped (a write failed): its error is returned below.
                    break Ok(());
                }
                if last_flush.elapsed() >= config.flush_interval {
                    let _ = sink.tx.try_send(sink::Message::Flush);
                    last_flush = Instant::now();
                } else {
                    // Lets a due rotation happen while nothing is recorded.
                    let _ = sink.tx.try_send(sink::Message::Tick);
                }
                on_progress(&Progress {
                    elapsed: begun.elapsed(),
                    per_kind: stats.per_kind.lock().map(|m| m.clone()).unwrap_or_default(),
                    records: sink.written.records.load(Ordering::Relaxed),
                    bytes: sink.written.bytes.load(Ordering::Relaxed),
                    gaps: stats.gaps.load(Ordering::Relaxed),
                    resumes: stats.resumes.load(Ordering::Relaxed),
                    files: sink.written.files.load(Ordering::Relaxed),
                });
            }
        }
    };
    tasks.abort_all();
    while tasks.join_next().await.is_some() {}
    let written = Arc::clone(&sink.written);
    let tx = sink.tx;
    if outcome.is_err() {
        // Leave the file without a trailer: it is not a complete recording.
        let _ = tx.send(sink::Message::Abort).await;
    }
    drop(tx);
    let joined = tokio::task::spawn_blocking(move || sink.handle.join())
        .await
        .map_err(|e| Error::Thread(std::io::Error::other(e.to_string())))?;
    match joined {
        Ok(result) => result?,
        Err(_) => {
            return Err(Error::Thread(std::io::Error::other(
                "the writer thread panicked",
            )));
        }
    }
    outcome?;
    Ok(Summary {
        started_at,
        ended_at: clock::now(),
        records: written.records.load(Ordering::Relaxed),
        bytes: written.bytes.load(Ordering::Relaxed),
        per_kind: stats.per_kind.lock().map(|m| m.clone()).unwrap_or_default(),
        gaps: stats.gaps.load(Ordering::Relaxed),
        resumes: stats.resumes.load(Ordering::Relaxed),
        kinds: resources.iter().map(|r| r.kind.clone()).collect(),
        skipped,
        files: written.files.load(Ordering::Relaxed),
    })
}
