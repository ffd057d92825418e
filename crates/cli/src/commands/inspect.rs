//! `rollout-forensics inspect FILE...`

use std::io::Write;

use anyhow::Result;
use rf_analyzer::{Analyzer, Options};

use crate::args::{Format, InspectArgs};
use crate::commands::analyze::report_damage;
use crate::exit::Exit;
use crate::input;
use crate::render::{Clock, recording_line};

pub fn run(args: &InspectArgs, out: &mut dyn Write) -> Result<Exit> {
    let recordings = input::open_all(&args.files)?;
    let mut analyzer = Analyzer::new(Options::default());
    let (damage, holes) = input::replay_history(recordings, &mut analyzer, |_| Ok(()))?;
    let mut summary = analyzer.finish().recording;
    input::add_holes(&mut summary, &holes);
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
