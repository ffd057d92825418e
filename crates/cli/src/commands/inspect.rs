//! `rollout-forensics inspect FILE...`

use std::io::Write;

use anyhow::Result;
use rf_analyzer::Options;

use crate::args::{Format, InspectArgs};
use crate::commands::analyze::report_damage;
use crate::exit::Exit;
use crate::input;
use crate::render::{Clock, recording_line};

pub fn run(args: &InspectArgs, out: &mut dyn Write) -> Result<Exit> {
    if args.jsonl {
        return jsonl(args, out);
    }
    let recordings = input::open_all(&args.files)?;
    let mut analyzer = crate::spill::analyzer(Options::default());
    let damage = input::replay(recordings, &mut analyzer, input::Objects::All, input::EACH)?;
    let summary = analyzer.finish().recording;
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &summary)?;
            writeln!(out)?;
        }
        Format::Table => {
            let clock = Clock::for_summary(&summary);
            writeln!(out, "{}", recording_line(&summary))?;
            for f in &summary.files {
                writeln!(out)?;
                writeln!(out, "file {}: {}", f.index, f.name)?;
                writeln!(out, "  format version   {}", f.format_version)?;
                writeln!(out, "  written by       {}", f.tool_version)?;
                writeln!(
                    out,
                    "  started at       {}",
                    rf_analyzer::rfc3339(f.started_at)
                )?;
                let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".to_owned());
                writeln!(out, "  context          {}", opt(&f.context))?;
                writeln!(out, "  server           {}", opt(&f.server))?;
                let ns = if f.namespaces.is_empty() {
                    "(all)".to_owned()
                } else {
                    f.namespaces.join(", ")
                };
                writeln!(out, "  namespaces       {ns}")?;
                writeln!(out, "  label selector   {}", opt(&f.label_selector))?;
                writeln!(out, "  kinds            {}", f.kinds.join(", "))?;
                writeln!(out, "  redaction        {}", f.redaction)?;
                for (k, v) in &f.notes {
                    writeln!(out, "  note             {k}: {v}")?;
                }
                writeln!(out, "  records          {}", f.records)?;
                let end = match f.end {
                    Some(e) => serde_json::to_value(e)?.as_str().unwrap_or("?").to_owned(),
                    None => "not read to the end".to_owned(),
                };
                writeln!(out, "  integrity        {end}")?;
                if let Some(e) = &f.error {
                    writeln!(out, "  error            {e}")?;
                }
            }
            writeln!(out)?;
            writeln!(out, "records per kind")?;
            for (k, n) in &summary.by_kind {
                writeln!(out, "  {k:<16} {n}")?;
            }
            writeln!(out, "records per op")?;
            for (k, n) in &summary.by_op {
                writeln!(out, "  {k:<16} {n}")?;
            }
            writeln!(out, "objects at the end")?;
            for (k, n) in &summary.live_objects {
                writeln!(out, "  {k:<16} {n}")?;
            }
            if summary.gaps.is_empty() {
                writeln!(out, "gaps: none")?;
            } else {
                writeln!(out, "gaps")?;
                for g in &summary.gaps {
                    writeln!(
                        out,
                        "  {} #{} {} {}: {}",
                        clock.show(g.at),
                        g.seq,
                        g.kind,
                        g.namespace,
                        g.reason
                    )?;
                }
            }
            for w in &summary.warnings {
                writeln!(out, "warning: {w}")?;
            }
        }
    }
    out.flush()?;
    Ok(report_damage(&damage, false).unwrap_or(Exit::Ok))
}

/// One JSON line per record, the object embedded as recorded.
fn jsonl(args: &InspectArgs, out: &mut dyn Write) -> Result<Exit> {
    #[derive(serde::Serialize)]
    struct Line<'a> {
        seq: u64,
        at: String,
        kind: &'a str,
        op: &'a str,
        namespace: &'a str,
        name: &'a str,
        uid: &'a str,
        #[serde(rename = "resourceVersion")]
        resource_version: &'a str,
        actor: Option<&'a str>,
        object: Option<&'a serde_json::value::RawValue>,
    }
    let mut damaged = false;
    let mut line = Vec::with_capacity(4096);
    for input::Recording { path, mut reader } in input::open_all(&args.files)? {
        loop {
            match reader.next_record() {
                Ok(Some(r)) => {
                    let object =
                        serde_json::from_slice::<&serde_json::value::RawValue>(&r.object).ok();
                    line.clear();
                    serde_json::to_writer(
                        &mut line,
                        &Line {
                            seq: r.seq,
                            at: rf_analyzer::rfc3339(r.observed_at),
                            kind: r.kind.name(),
                            op: r.op.name(),
                            namespace: &r.namespace,
                            name: &r.name,
                            uid: &r.uid,
                            resource_version: &r.resource_version,
                            actor: r.actor.as_deref(),
                            object,
                        },
                    )?;
                    line.push(b'\n');
                    // An io::Error, so a closed pipe (`| head`) ends quietly.
                    out.write_all(&line)?;
                }
                Ok(None) => break,
                Err(e) => {
                    eprintln!("error: {}: {e}", path.display());
                    damaged = true;
                    break;
                }
            }
        }
    }
    out.flush()?;
    Ok(if damaged { Exit::Error } else { Exit::Ok })
}
