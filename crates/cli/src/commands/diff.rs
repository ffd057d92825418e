//! `rollout-forensics diff FILE RS_A RS_B`

use std::io::Write;

use anyhow::{Result, bail};
use rf_analyzer::{Change, template_diff};
use rf_format::{Kind, Op};
use serde::Serialize;
use serde_json::Value;

use crate::args::{DiffArgs, Format};
use crate::exit::Exit;
use crate::input;

/// The last state of one ReplicaSet in the recording.
struct Found {
    namespace: String,
    name: String,
    hash: Option<String>,
    seq: u64,
    template: Value,
}

#[derive(Serialize)]
struct DiffReport<'a> {
    a: Side<'a>,
    b: Side<'a>,
    identical: bool,
    only_annotations: bool,
    changes: &'a [Change],
}

fn side(f: &Found) -> Side<'_> {
    Side {
        namespace: &f.namespace,
        name: &f.name,
        hash: f.hash.as_deref(),
        seq: f.seq,
    }
}

#[derive(Serialize)]
struct Side<'a> {
    namespace: &'a str,
    name: &'a str,
    hash: Option<&'a str>,
    seq: u64,
}

fn matches(arg: &str, ns: Option<&str>, namespace: &str, name: &str, hash: Option<&str>) -> bool {
    ns.is_none_or(|n| n == namespace) && (arg == name || Some(arg) == hash)
}

pub fn run(args: &DiffArgs, out: &mut dyn Write) -> Result<Exit> {
    let rec = input::open(&args.file)?;
    let ns = args.namespace.as_deref();
    let mut found: [Vec<Found>; 2] = [Vec::new(), Vec::new()];
    // Every ReplicaSet seen (in -n's namespace), for the error that names none of them.
    let mut known = std::collections::BTreeSet::new();
    let mut damage = None;
    let mut reader = rec.reader;
    loop {
        let r = match reader.next_record() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                damage = Some(e);
                break;
            }
        };
        if r.kind != Kind::ReplicaSet || !r.op.has_object() || matches!(r.op, Op::Deleted { .. }) {
            continue;
        }
        let Ok(obj) = serde_json::from_slice::<Value>(&r.object) else {
            continue;
        };
        let hash = obj
            .pointer("/metadata/labels/rollouts-pod-template-hash")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if ns.is_none_or(|n| n == r.namespace) {
            known.insert((r.namespace.clone(), r.name.clone()));
        }
        for (i, arg) in [&args.a, &args.b].into_iter().enumerate() {
            if matches(arg, ns, &r.namespace, &r.name, hash.as_deref()) {
                let Some(template) = obj.pointer("/spec/template").cloned() else {
                    continue;
                };
                let list = &mut found[i];
                list.retain(|f| !(f.namespace == r.namespace && f.name == r.name));
                list.push(Found {
                    namespace: r.namespace.clone(),
                    name: r.name.clone(),
                    hash: hash.clone(),
                    seq: r.seq,
                    template,
                });
            }
        }
    }
    if let Some(e) = &damage {
        eprintln!(
            "warning: {}: {e}; using the records before it",
            args.file.display()
        );
    }
    let [fa, fb] = found;
    let pick = |list: Vec<Found>, arg: &str| -> Result<Found> {
        let n = list.len();
        match n {
            0 => {
                // Names alone where they are all in one namespace.
                let one_namespace = known
                    .iter()
                    .all(|(n, _)| known.first().is_some_and(|(f, _)| f == n));
                let names = input::nearest_first(
                    arg,
                    known.iter().map(|(namespace, name)| {
                        if one_namespace {
                            name.clone()
                        } else {
                            format!("{namespace}/{name}")
                        }
                    }),
                );
                bail!(
                    "no ReplicaSet named or hashed {arg:?} in {}{}; {}",
                    args.file.display(),
                    ns.map(|n| format!(" (namespace {n})")).unwrap_or_default(),
                    if names.is_empty() {
                        "it has no ReplicaSets".to_owned()
                    } else {
                        format!("its ReplicaSets, nearest first: {}", input::listing(&names))
                    }
                )
            }
            1 => Ok(list.into_iter().next().expect("one element")),
            _ => {
                bail!("{arg:?} matches {n} ReplicaSets in different namespaces: pass -n NAMESPACE")
            }
        }
    };
    let a = pick(fa, &args.a)?;
    let b = pick(fb, &args.b)?;
    if a.namespace == b.namespace && a.name == b.name {
        bail!(
            "{:?} and {:?} name the same ReplicaSet, {}/{}: name two different ones (by name or pod-template hash)",
            args.a,
            args.b,
            a.namespace,
            a.name
        );
    }
    let changes = template_diff(&a.template, &b.template);
    let only_annotations = rf_analyzer::only_annotations(&changes);
    match args.format {
        Format::Json => {
            let report = DiffReport {
                a: side(&a),
                b: side(&b),
                identical: changes.is_empty(),
                only_annotations,
                changes: &changes,
            };
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Table => {
            writeln!(
                out,
                "pod templates of {}/{} (#{}) and {}/{} (#{}), hash label ignored:",
                a.namespace, a.name, a.seq, b.namespace, b.name, b.seq
            )?;
            if changes.is_empty() {
                writeln!(
                    out,
                    "  identical: a hash change with no template change (see rule hash-only-change)"
                )?;
            }
            for c in &changes {
                writeln!(out, "  {}", c.path)?;
                writeln!(out, "    - {}", Change::show(c.old.as_ref()))?;
                writeln!(out, "    + {}", Change::show(c.new.as_ref()))?;
            }
            if only_annotations {
                writeln!(
                    out,
                    "only pod-template annotations differ: the application itself did not change (see rule config-only-rerender)"
                )?;
            }
        }
    }
    out.flush()?;
    Ok(Exit::Ok)
}
