//! `rollout-forensics import --from SOURCE FILE... -o OUT`: turn a kubectl watch capture, an
//! API server audit log (plain, GKE's or EKS's), an export of Events or the Argo Rollouts
//! controller's logs into a recording.

use std::collections::BTreeMap;
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use rf_analyzer::{human_duration, rfc3339};
use rf_format::Writer;
use rf_import::Input;

use crate::atomic::write_atomically;
use crate::exit::Exit;

/// The sources `import` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum From {
    /// What `kubectl get KIND -w -o json [--output-watch-events]` printed (times approximate).
    KubectlWatch,
    /// API server audit log: audit.k8s.io/v1 Event JSON lines, plain or gzip.
    AuditLog,
    /// GKE's Kubernetes audit log, as `gcloud logging read --format=json` prints it (or a log
    /// sink's JSON lines).
    GkeAudit,
    /// EKS's control-plane audit log, as CloudWatch Logs exports it (`aws logs
    /// filter-log-events`, `get-log-events`, an export to S3).
    EksAudit,
    /// Exported Kubernetes Events (`kubectl get events -A -o json`, `kubectl get events -w -o
    /// json`, an event exporter's JSON lines): read as the history before a recording.
    Events,
    /// The Argo Rollouts controller's logs (`kubectl logs -n argo-rollouts deploy/argo-rollouts`,
    /// text or JSON): the Events it logged, read as the history before a recording.
    ControllerLog,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// What the files are.
    #[arg(long = "from", value_enum, value_name = "SOURCE")]
    pub from: From,
    /// Files to import (`-` for stdin), merged by time.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The recording to write. Written to a temporary file and renamed when complete.
    #[arg(short = 'o', long = "output", value_name = "OUT")]
    pub output: PathBuf,
}

fn open(path: &Path) -> Result<Input> {
    if path == Path::new("-") {
        return Ok(Input::new("-", BufReader::new(std::io::stdin())));
    }
    let file =
        std::fs::File::open(path).with_context(|| format!("failed to open {}", path.display()))?;
    Ok(Input::new(path.display().to_string(), BufReader::new(file)))
}

pub fn run(args: &ImportArgs, _out: &mut dyn Write) -> Result<Exit> {
    for path in args.files.iter().filter(|p| *p != Path::new("-")) {
        crate::sniff::check_import(path, args.from)?;
    }
    let inputs = args
        .files
        .iter()
        .map(|p| open(p))
        .collect::<Result<Vec<_>>>()?;
    let imported = match args.from {
        From::KubectlWatch => rf_import::kubectl_watch(inputs),
        From::AuditLog => rf_import::audit_log(inputs),
        From::GkeAudit => rf_import::gke_audit(inputs),
        From::EksAudit => rf_import::eks_audit(inputs),
        From::Events => rf_import::events(inputs),
        From::ControllerLog => rf_import::controller_log(inputs),
    }
    .context("import failed")?;
    for w in &imported.warnings {
        eprintln!("warning: {w}");
    }
    write_atomically(&args.output, |file| {
        let mut writer = Writer::new(std::io::BufWriter::new(file), &imported.header)?;
        for r in &imported.records {
            writer.write(r)?;
        }
        writer.finish_at(imported.closed_at)?.flush()?;
        Ok(())
    })?;
    let mut per_kind: BTreeMap<String, u64> = BTreeMap::new();
    for r in &imported.records {
        *per_kind.entry(r.kind.to_string()).or_default() += 1;
    }
    let kinds: Vec<String> = per_kind.iter().map(|(k, n)| format!("{n} {k}")).collect();
    let span = imported.closed_at.0 - imported.header.started_at.0;
    eprintln!(
        "wrote {} records ({}) to {}: {} to {} ({}){}, {} warnings",
        imported.records.len(),
        kinds.join(", "),
        args.output.display(),
        rfc3339(imported.header.started_at),
        rfc3339(imported.closed_at),
        human_duration(span),
        if args.from == From::KubectlWatch {
            ", times approximate (taken from the objects)"
        } else {
            ""
        },
        imported.warnings.len()
    );
    Ok(Exit::Ok)
}
