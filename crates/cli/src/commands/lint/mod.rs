//! `rollout-forensics lint [PATH|-]...`: the analyzer's rules that can be checked before the
//! sync, on rendered manifests (`helm template ... | rollout-forensics lint -`, `kustomize build |
//! ...`): each finding with its file, line and column, rule, severity, what is wrong and the fix.
//! Output as a table, JSON, or SARIF 2.1.0 for code scanning; exit codes as `analyze`'s.
//!
//! With `--live`, also the gate before a sync: the rollouts, ReplicaSets, Services and pods of
//! the render's namespaces are listed (get/list only) and compared with the render
//! ([`rf_analyzer::lint::gate`]): a render that would restart a canary in progress, or move a
//! Service's selector away from the pods that take traffic, is an error.

mod read;

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use rf_analyzer::lint::gate::{GATE_RULES, Gate, Live, gate};
use rf_analyzer::lint::{LINT_RULES, LintFinding, lint_against};
use rf_analyzer::{Rule, Severity};
use rf_format::Kind;
use serde_json::{Value, json};

use crate::args::FailOn;
use crate::exit::Exit;

/// Where each rule's documentation is, for SARIF's `helpUri`.
const RULES_DOC: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/blob/main/docs/rules.md");

#[derive(Debug, Args)]
pub struct LintArgs {
    /// Rendered manifests: files, directories (their *.yaml, *.yml and *.json files) or `-`
    /// for stdin; multi-document YAML, JSON and Lists.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<String>,
    /// `table` for a person, `json` for scripts, `sarif` for code scanning (SARIF 2.1.0).
    #[arg(short = 'o', long = "output", value_enum, default_value_t = LintFormat::Table)]
    pub format: LintFormat,
    /// Exit 1 when a finding at or above this severity is reported.
    #[arg(long, value_enum, default_value_t = FailOn::Error)]
    pub fail_on: FailOn,
    /// The namespace of objects that name none (as `helm template --namespace` would; default:
    /// `default`, or with `--live` the kubeconfig context's).
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespace: Option<String>,
    /// The repository root SARIF locations are relative to (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// The gate before a sync: also compare the render with the cluster (its rollouts,
    /// ReplicaSets, Services and pods, read with get/list) and report what applying it would
    /// do: restart a canary in progress, move a Service's selector off the pods that serve.
    #[arg(long)]
    pub live: bool,
    /// Path to the kubeconfig (with `--live`).
    #[arg(long, value_name = "PATH", requires = "live")]
    pub kubeconfig: Option<PathBuf>,
    /// kubeconfig context to use (with `--live`).
    #[arg(long, value_name = "NAME", requires = "live")]
    pub context: Option<String>,
}

/// The rbac `--live` needs.
const LIVE_RBAC: &str = "deploy/lint-presync.yaml";

/// The rules checked: `lint`'s, and with `--live` the gate's.
fn rules_checked(live: bool) -> Vec<Rule> {
    let mut rules = LINT_RULES.to_vec();
    if live {
        rules.extend(GATE_RULES.iter().filter(|r| !LINT_RULES.contains(r)));
    }
    rules
}

/// Lists, in each namespace of the render's Rollouts and Services, what the gate compares.
fn live_state(
    args: &LintArgs,
    objects: &[Value],
    default_ns: Option<&str>,
) -> Result<(String, Live)> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let (client, _, context_ns) =
            crate::cluster::client_for(args.kubeconfig.as_deref(), args.context.as_deref()).await?;
        let ns = default_ns.map_or(context_ns, str::to_owned);
        let mut namespaces: Vec<&str> = objects
            .iter()
            .filter(|o| {
                matches!(
                    o.get("kind").and_then(Value::as_str),
                    Some("Rollout" | "Service")
                )
            })
            .map(|o| {
                o.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(&ns)
            })
            .collect();
        namespaces.sort_unstable();
        namespaces.dedup();
        let mut live = Live::default();
        for namespace in namespaces {
            for kind in [Kind::Rollout, Kind::ReplicaSet, Kind::Service, Kind::Pod] {
                let target = crate::commands::check::Target {
                    kind: kind.clone(),
                    namespace: namespace.to_owned(),
                    selector: None,
                    optional: false,
                    rbac: LIVE_RBAC,
                };
                let Some((_, _, items)) = crate::commands::check::list(&client, &target).await?
                else {
                    continue;
                };
                match kind {
                    Kind::Rollout => live.rollouts.extend(items),
                    Kind::ReplicaSet => live.replica_sets.extend(items),
                    Kind::Service => live.services.extend(items),
                    _ => live.pods.extend(items),
                }
            }
        }
        Ok((ns, live))
    })
}

/// Output formats of `lint`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LintFormat {
    /// One block per finding: where, rule, what, the fix.
    Table,
    /// The findings as JSON (`schema_version` 1).
    Json,
    /// SARIF 2.1.0, as GitHub code scanning reads it.
    Sarif,
}

/// A finding with its place.
struct Placed<'a> {
    f: &'a LintFinding,
    /// Its input, by index, and that input's name.
    input: usize,
    file: &'a str,
    line: usize,
    column: usize,
    kind: &'a str,
    namespace: &'a str,
    name: &'a str,
    source: Option<&'a str>,
}

pub fn run(args: &LintArgs, out: &mut dyn Write) -> Result<Exit> {
    let m = read::read(&args.paths)?;
    let (namespace, live) = if args.live {
        let (ns, live) = live_state(args, &m.objects, args.namespace.as_deref())?;
        (ns, Some(live))
    } else {
        (
            args.namespace
                .clone()
                .unwrap_or_else(|| "default".to_owned()),
            None,
        )
    };
    let checked = live.as_ref().map(|l| gate(&m.objects, &namespace, l));
    let mut found = lint_against(
        &m.objects,
        &namespace,
        live.as_ref().map(|l| l.services.as_slice()),
    );
    if let Some(g) = &checked {
        found.extend(g.findings.iter().cloned());
        found.sort_by_key(|f| f.object);
    }
    let rules = rules_checked(args.live);
    // Each input's lines, split once for every finding in it.
    let lines: Vec<Vec<&str>> = m.inputs.iter().map(|i| i.text.lines().collect()).collect();
    let placed: Vec<Placed<'_>> = found
        .iter()
        .map(|f| {
            let origin = &m.origins[f.object];
            let input = &m.inputs[origin.input];
            let (line, column) = origin.locate(&lines[origin.input], &f.path);
            let o = &m.objects[f.object];
            let s = |p: &str| o.pointer(p).and_then(Value::as_str).unwrap_or("");
            Placed {
                f,
                input: origin.input,
                file: &input.name,
                line,
                column,
                kind: s("/kind"),
                namespace: o
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or(&namespace),
                name: s("/metadata/name"),
                source: origin.source.as_deref(),
            }
        })
        .collect();
    match args.format {
        LintFormat::Table => table(&placed, &m, &rules, checked.as_ref(), out)?,
        LintFormat::Json => {
            serde_json::to_writer_pretty(
                &mut *out,
                &json_report(&placed, &m, &rules, checked.as_ref()),
            )?;
            writeln!(out)?;
        }
        LintFormat::Sarif => {
            let root = match &args.root {
                Some(r) => r.clone(),
                None => std::env::current_dir()?,
            };
            // Without `..` or links: SARIF's base URI must have none.
            let root = root
                .canonicalize()
                .with_context(|| format!("--root {}: cannot resolve it", root.display()))?;
            // One URI an input (a path resolved on disk), not one a finding.
            let uris: Vec<String> = m.inputs.iter().map(|i| uri(&i.name, &root)).collect();
            serde_json::to_writer_pretty(&mut *out, &sarif(&placed, &uris, &root, &rules))?;
            writeln!(out)?;
        }
    }
    out.flush()?;
    let fails = args
        .fail_on
        .threshold()
        .is_some_and(|t| found.iter().any(|f| f.severity >= t));
    Ok(if fails { Exit::Findings } else { Exit::Ok })
}

fn counts(placed: &[Placed<'_>]) -> String {
    let n = |s: Severity| placed.iter().filter(|p| p.f.severity == s).count();
    let (e, w) = (n(Severity::Error), n(Severity::Warning));
    format!(
        "{} finding{} ({e} error{}, {w} warning{})",
        placed.len(),
        if placed.len() == 1 { "" } else { "s" },
        if e == 1 { "" } else { "s" },
        if w == 1 { "" } else { "s" },
    )
}

fn table(
    placed: &[Placed<'_>],
    m: &read::Manifests,
    rules: &[Rule],
    checked: Option<&Gate>,
    out: &mut dyn Write,
) -> Result<()> {
    for p in placed {
        writeln!(
            out,
            "{}:{}:{}  {}  {}  {} {}{}",
            p.file,
            p.line,
            p.column,
            p.f.severity.as_str(),
            p.f.rule.id(),
            p.kind,
            p.name,
            p.source.map(|s| format!(" ({s})")).unwrap_or_default()
        )?;
        writeln!(out, "    {}", p.f.message)?;
        writeln!(out, "    fix: {}", p.f.fix)?;
    }
    let inputs = m.inputs.len();
    writeln!(
        out,
        "{} in {} object{} of {inputs} input{}; rules checked: {}",
        if placed.is_empty() {
            "no finding".to_owned()
        } else {
            counts(placed)
        },
        m.objects.len(),
        if m.objects.len() == 1 { "" } else { "s" },
        if inputs == 1 { "" } else { "s" },
        rules.iter().map(|r| r.id()).collect::<Vec<_>>().join(", ")
    )?;
    if let Some(g) = checked {
        writeln!(out, "against the cluster:")?;
        for n in &g.notes {
            writeln!(out, "    {n}")?;
        }
        if g.notes.is_empty() {
            writeln!(
                out,
                "    no Rollout or Service of the render is in the cluster"
            )?;
        }
    }
    Ok(())
}

fn json_report(
    placed: &[Placed<'_>],
    m: &read::Manifests,
    rules: &[Rule],
    checked: Option<&Gate>,
) -> Value {
    let mut report = json!({
        "schema_version": 1,
        "objects": m.objects.len(),
        "inputs": m.inputs.iter().map(|i| i.name.as_str()).collect::<Vec<_>>(),
        "rules": rules.iter().map(|r| r.id()).collect::<Vec<_>>(),
        "findings": placed.iter().map(|p| json!({
            "rule": p.f.rule.id(),
            "severity": p.f.severity.as_str(),
            "file": p.file,
            "line": p.line,
            "column": p.column,
            "source": p.source,
            "kind": p.kind,
            "namespace": p.namespace,
            "name": p.name,
            "field": p.f.path.join("."),
            "message": p.f.message,
            "fix": p.f.fix,
        })).collect::<Vec<_>>(),
    });
    if let Some(g) = checked {
        report["live"] = json!({"notes": g.notes});
    }
    report
}

/// A location's URI: relative to `root` (with `/`), as code scanning resolves it against the
/// checkout; stdin as `stdin`.
fn uri(file: &str, root: &Path) -> String {
    if file == "-" {
        return "stdin".to_owned();
    }
    let path = Path::new(file);
    let absolute = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let rel = absolute
        .strip_prefix(root)
        .map(Path::to_owned)
        .unwrap_or(absolute);
    let parts: Vec<String> = rel
        .components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/").replace(' ', "%20")
}

fn level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

/// The SARIF log of `placed`, `uris` the URI of each input.
fn sarif(placed: &[Placed<'_>], uris: &[String], root: &Path, checked: &[Rule]) -> Value {
    let rules: Vec<Value> = checked
        .iter()
        .map(|r: &Rule| {
            json!({
                "id": r.id(),
                // A name for people, not the id again (SARIF1001).
                "name": format!("{r:?}"),
                "shortDescription": {"text": r.summary()},
                "fullDescription": {"text": r.summary()},
                "help": {"text": r.documentation(), "markdown": r.documentation()},
                "helpUri": format!("{RULES_DOC}#{}", super::rules::anchor(*r)),
                "defaultConfiguration": {"level": level(r.severity())},
            })
        })
        .collect();
    let results: Vec<Value> = placed
        .iter()
        .map(|p| {
            let index = checked.iter().position(|r| *r == p.f.rule).unwrap_or(0);
            json!({
                "ruleId": p.f.rule.id(),
                "ruleIndex": index,
                "level": level(p.f.severity),
                "message": {"text": format!("{} Fix: {}", p.f.message, p.f.fix)},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uris[p.input], "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": p.line, "startColumn": p.column},
                    },
                    "logicalLocations": [{
                        "name": p.name,
                        "fullyQualifiedName": format!("{}/{}/{}", p.namespace, p.kind, p.name),
                        "kind": "resource",
                    }],
                }],
            })
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "rollout-forensics",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": RULES_DOC,
                "rules": rules,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": format!("file://{}/", root.display())}},
            "results": results,
        }],
    })
}
