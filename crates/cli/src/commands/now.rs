//! `rollout-forensics now [ROLLOUT] [-n NS | -A]`: the first minute of an incident. Lists
//! everything the analyzer reads once (get and list only, no watch), the Events and
//! ReplicaSet revisions the cluster kept included, and prints the report `analyze` would:
//! what the cluster shows now, and what it kept of what happened before, reconstructed and
//! marked so. `--save FILE` keeps what was read as a recording.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Args;
use rf_analyzer::{Analyzer, FileEnd, Options};
use rf_format::Kind;

use crate::args::{FailOn, ReportFormat};
use crate::cluster::client_for;
use crate::commands::check::{Snapshot, Target, save_as, where_};
use crate::exit::Exit;
use crate::render;
use crate::style::Style;

/// The rules `now` needs: the recorder's, get and list only.
const NOW_RBAC: &str = "deploy/rbac.yaml";

#[derive(Debug, Args)]
pub struct NowArgs {
    /// Only this rollout's findings (`NAME`); every rollout of the namespace otherwise.
    #[arg(value_name = "ROLLOUT")]
    pub rollout: Option<String>,
    /// The namespace to list (default: the kubeconfig context's).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// List every namespace.
    #[arg(short = 'A', long, conflicts_with = "namespace")]
    pub all_namespaces: bool,
    /// Namespace of the Argo CD Applications, listed beside NS's own (skipped when not served
    /// or not allowed; with `-A` every namespace's are listed).
    #[arg(long, default_value = "argocd", value_name = "NS")]
    pub app_namespace: String,
    /// Keep what was read as a recording (for `analyze`, `serve`, a postmortem).
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Output format, as `analyze`'s.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = ReportFormat::Table)]
    pub format: ReportFormat,
    /// Exit 1 when a finding at or above this severity is reported.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// Path to the kubeconfig.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use.
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
}

/// Every kind the recorder records, each optional but the Rollouts' own: a kind the server
/// does not serve, or this account may not list, is a note.
fn targets(ns: &str, app_ns: &str) -> Result<Vec<Target>> {
    let mut targets = Vec::new();
    for name in rf_recorder::KIND_NAMES {
        let kind = rf_recorder::parse_kind(name)
            .with_context(|| format!("the recorder's kind {name} has no API resource"))?;
        // Applications: Argo CD's control-plane namespace and the listed one (Applications in
        // any namespace); with `-A`, every namespace's. Events too: Argo CD's about an
        // Application are in its namespace, and keep the operations that failed before the
        // last one.
        let namespaces = if matches!(kind, Kind::Application | Kind::Event) && !ns.is_empty() {
            super::check::app_namespaces(ns, app_ns)
        } else {
            vec![ns]
        };
        for namespace in namespaces {
            targets.push(Target {
                kind: kind.clone(),
                namespace: namespace.to_owned(),
                selector: None,
                optional: true,
                rbac: NOW_RBAC,
            });
        }
    }
    Ok(targets)
}

/// The rollout's name in `NAME`, `rollout/NAME` or `rollouts/NAME`.
fn rollout_name(arg: &str) -> Result<&str> {
    let name = arg
        .strip_prefix("rollout/")
        .or_else(|| arg.strip_prefix("rollouts/"))
        .unwrap_or(arg);
    if name.is_empty() || name.contains('/') {
        bail!("invalid ROLLOUT {name:?}: expected NAME or rollout/NAME");
    }
    Ok(name)
}

pub fn run(args: &NowArgs, out: &mut dyn Write) -> Result<Exit> {
    let wanted = args.rollout.as_deref().map(rollout_name).transpose()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let (ns, snap, source) = runtime.block_on(async {
        let (client, source, default_ns) =
            client_for(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let ns = if args.all_namespaces {
            String::new()
        } else {
            args.namespace.clone().unwrap_or(default_ns)
        };
        let mut snap = Snapshot::now();
        snap.list_all(&client, &targets(&ns, &args.app_namespace)?)
            .await?;
        Ok::<_, anyhow::Error>((ns, snap, source))
    })?;
    let rollout = wanted.map(|name| (ns.clone(), name.to_owned()));
    if let Some((ns, name)) = &rollout {
        let found = snap.records.iter().any(|r| {
            r.kind == Kind::Rollout && r.name == *name && (ns.is_empty() || r.namespace == *ns)
        });
        if !found {
            let others = snap.nearest("Rollout", ns, name);
            bail!(
                "rollout {name} not found in {}; {}",
                if ns.is_empty() {
                    "any namespace".to_owned()
                } else {
                    format!("namespace {ns}")
                },
                if others.is_empty() {
                    "it holds no rollouts".to_owned()
                } else {
                    format!(
                        "rollouts there, nearest first: {}",
                        crate::input::listing(&others)
                    )
                }
            );
        }
    }
    let namespaces: Vec<String> = if ns.is_empty() {
        Vec::new()
    } else {
        vec![ns.clone()]
    };
    if let Some(path) = &args.save {
        save_as(
            path,
            &snap,
            &namespaces,
            "rollout-forensics now",
            &source,
            Vec::new(),
        )?;
        eprintln!("saved what was read to {}", path.display());
    }
    if !snap.skipped.is_empty() {
        // One line: most clusters serve a few of the kinds the tool knows.
        let mut by_where: Vec<(String, Vec<&str>)> = Vec::new();
        for (kind, ns) in &snap.skipped {
            let place = where_(ns);
            match by_where.iter_mut().find(|(w, _)| *w == place) {
                Some((_, kinds)) => kinds.push(kind.name()),
                None => by_where.push((place, vec![kind.name()])),
            }
        }
        let groups: Vec<String> = by_where
            .iter()
            .map(|(place, kinds)| format!("{} in {place}", kinds.join(", ")))
            .collect();
        eprintln!(
            "not listed (not served, or not allowed): {}",
            groups.join("; ")
        );
    }
    let mut analyzer = Analyzer::new(Options {
        rollout,
        snapshot: true,
        timelines: matches!(args.format, ReportFormat::Markdown | ReportFormat::Html),
        ..Options::default()
    });
    let header = snap.header(&namespaces, "rollout-forensics now", &source);
    let name = match &args.save {
        Some(p) => p.display().to_string(),
        None => "(cluster, listed now)".to_owned(),
    };
    analyzer.begin_file(&name, rf_format::FORMAT_VERSION, &header);
    for r in &snap.records {
        analyzer.push(r, rf_analyzer::Prepared::of(r), &mut rf_analyzer::Discard);
    }
    analyzer.end_file(FileEnd::Closed, Some(snap.taken_at), None);
    let report = analyzer.finish();
    render::report(out, &report, args.format, Style::for_stdout())?;
    out.flush()?;
    let failing = args
        .fail_on
        .threshold()
        .is_some_and(|t| report.worst().is_some_and(|w| w >= t));
    Ok(if failing { Exit::Findings } else { Exit::Ok })
}
