//! `rollout-forensics timeline FILE...`

use std::io::Write;

use anyhow::Result;
use comfy_table::{ContentArrangement, Table, presets};
use rf_analyzer::{Analyzer, ReplicaSetState, Role, TimelineEntry};

use crate::args::{Format, TimelineArgs};
use crate::commands::analyze::report_damage;
use crate::exit::Exit;
use crate::input;
use crate::render::{Clock, recording_line};

fn short(h: Option<&str>) -> String {
    h.unwrap_or("-").to_owned()
}

fn replicasets(rs: &[ReplicaSetState]) -> String {
    rs.iter()
        .map(|r| {
            let role = match r.role {
                Role::New => "new",
                Role::Stable => "stable",
                Role::Other => "other",
            };
            format!("{} {role} {}/{}", r.hash, r.ready, r.replicas)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn only_readiness(e: &TimelineEntry) -> bool {
    e.source == "ReplicaSet" && e.changes.iter().all(|c| c.contains(" ready "))
}

pub fn run(args: &TimelineArgs, out: &mut dyn Write) -> Result<Exit> {
    let options = input::options(&args.files, args.rollout.as_deref(), &args.window, true)?;
    let since = options.since;
    let recordings = input::open_history(&args.files)?;
    let scope = input::Scope::of(&options, &args.window);
    let mut analyzer = Analyzer::new(options);
    let damage = input::replay(recordings, &mut analyzer, input::Objects::Analyzed)?;
    scope.check(&analyzer)?;
    let mut report = analyzer.finish();
    for t in &mut report.timelines {
        t.entries
            .retain(|e| since.is_none_or(|s| e.at >= s) && !(args.brief && only_readiness(e)));
    }
    match args.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report.timelines)?;
            writeln!(out)?;
        }
        Format::Table => {
            let clock = Clock::for_summary(&report.recording);
            writeln!(out, "{}", recording_line(&report.recording))?;
            if report.timelines.is_empty() {
                writeln!(out, "\nNo rollouts in this recording.")?;
            }
            for t in &report.timelines {
                writeln!(
                    out,
                    "\n{} ({} changes{})",
                    t.rollout,
                    t.entries.len(),
                    if t.truncated { ", truncated" } else { "" }
                )?;
                let mut table = Table::new();
                table
                    .load_preset(presets::UTF8_HORIZONTAL_ONLY)
                    .set_content_arrangement(ContentArrangement::Dynamic)
                    .set_width(140)
                    .set_header(vec![
                        "#",
                        "TIME",
                        "CHANGE",
                        "GEN",
                        "POD HASH",
                        "STABLE",
                        "STEP",
                        "PHASE",
                        "PAUSE",
                        "REPLICASETS (ready/replicas)",
                    ]);
                for e in &t.entries {
                    table.add_row(vec![
                        e.seq.to_string(),
                        clock.show(e.at),
                        e.changes.join("\n"),
                        e.generation.map(|g| g.to_string()).unwrap_or_default(),
                        short(e.pod_hash.as_deref()),
                        short(e.stable_rs.as_deref()),
                        format!("{}/{}", e.step_index, e.step_count),
                        e.phase.as_deref().unwrap_or_default().to_owned(),
                        e.pause.join(",") + if e.abort { " ABORT" } else { "" },
                        replicasets(&e.replicasets),
                    ]);
                }
                writeln!(out, "{table}")?;
            }
        }
    }
    out.flush()?;
    Ok(report_damage(&damage, args.partial).unwrap_or(Exit::Ok))
}
