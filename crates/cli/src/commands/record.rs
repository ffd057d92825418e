//! `rollout-forensics record -o FILE`: watch a live API server and write a recording.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use kube::config::{KubeConfigOptions, Kubeconfig};
use rf_recorder::{Config, Progress, SourceInfo, Summary};

use crate::exit::Exit;
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
    /// applications, events. Default: all of them (applications when the server serves them).
    #[arg(long, value_delimiter = ',', value_name = "KINDS")]
    pub kinds: Vec<String>,
    /// The recording to write.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Stop after this long (e.g. 30m); default: until Ctrl-C or SIGTERM.
    #[arg(long, value_name = "DURATION")]
    pub duration: Option<String>,
    /// How often to close a gzip member: at most this much is lost to a SIGKILL.
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
                    "unknown kind {name:?} in --kinds: use rollouts, replicasets, services, endpointslices, pods, applications, events"
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

async fn client(args: &RecordArgs) -> Result<(kube::Client, SourceInfo, String)> {
    let options = KubeConfigOptions {
        context: args.context.clone(),
        cluster: None,
        user: None,
    };
    let config = match &args.kubeconfig {
        Some(path) => {
            let kc = Kubeconfig::read_from(path)
                .with_context(|| format!("cannot read kubeconfig {}", path.display()))?;
            kube::Config::from_custom_kubeconfig(kc, &options)
                .await
                .with_context(|| format!("cannot use kubeconfig {}", path.display()))?
        }
        None if args.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .context("cannot use the kubeconfig context")?,
        None => kube::Config::infer().await.context(
            "no kubeconfig found: set KUBECONFIG, pass --kubeconfig PATH, or run inside a cluster",
        )?,
    };
    let server = config.cluster_url.to_string();
    let namespace = config.default_namespace.clone();
    let client =
        kube::Client::try_from(config).context("cannot build a client from the kubeconfig")?;
    let source = SourceInfo {
        context: args.context.clone(),
        server: Some(server.trim_end_matches('/').to_owned()),
    };
    Ok((client, source, namespace))
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

fn summary_text(s: &Summary, path: &std::path::Path) -> String {
    let secs = (s.ended_at.as_unix_nanos() - s.started_at.as_unix_nanos()).max(0) / 1_000_000_000;
    let kinds: Vec<String> = s.per_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    let mut text = format!(
        "recorded {} records in {} to {} ({} bytes, {} gaps, {} watches resumed without loss)\n  per kind: {}",
        s.records,
        rf_analyzer::human_duration(secs * 1_000_000_000),
        path.display(),
        s.bytes,
        s.gaps,
        s.resumes,
        if kinds.is_empty() {
            "none".to_owned()
        } else {
            kinds.join(", ")
        }
    );
    if !s.skipped.is_empty() {
        let names: Vec<&str> = s.skipped.iter().map(rf_format::Kind::name).collect();
        text.push_str(&format!("\n  not served, skipped: {}", names.join(", ")));
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

pub fn run(args: &RecordArgs, _out: &mut dyn Write) -> Result<Exit> {
    let mut config = config(args)?;
    let limit = args
        .duration
        .as_deref()
        .map(|d| duration(d, "--duration"))
        .transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let (client, source, default_ns) = client(args).await?;
        config.namespaces = if args.all_namespaces {
            Vec::new()
        } else if args.namespaces.is_empty() {
            vec![default_ns]
        } else {
            args.namespaces.clone()
        };
        let file = std::fs::File::create(&args.output)
            .with_context(|| format!("cannot write the recording to {}", args.output.display()))?;
        let interrupted = crate::signal::Interrupt::install()?;
        let live = std::io::stderr().is_terminal();
        let result = rf_recorder::record(
            client,
            &config,
            &source,
            std::io::BufWriter::with_capacity(256 * 1024, file),
            stop_signal(limit, interrupted),
            |p| {
                if live {
                    eprint!("\r\x1b[K{}", status_line(p));
                }
            },
        )
        .await;
        if live {
            eprint!("\r\x1b[K");
        }
        match result {
            Ok(summary) => {
                eprintln!("{}", summary_text(&summary, &args.output));
                Ok(Exit::Ok)
            }
            Err(e) => {
                let started = !matches!(
                    e,
                    rf_recorder::Error::Forbidden { .. }
                        | rf_recorder::Error::NotServed { .. }
                        | rf_recorder::Error::Unreachable { .. }
                );
                if !started {
                    // Nothing worth keeping: no half-made file under the asked name.
                    let _ = std::fs::remove_file(&args.output);
                }
                Err(anyhow::Error::new(e))
            }
        }
    })
}
