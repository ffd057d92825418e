//! `rollout-forensics timeline FILE...`

use std::io::Write;

use anyhow::Result;
use rf_analyzer::{ReplicaSetState, Role, TimelineEntry};

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

/// The step, `index/count`; `-` for a rollout without steps (blue-green), where the index means
/// nothing.
fn step(e: &TimelineEntry) -> String {
    if e.step_count == 0 {
        "-".to_owned()
    } else {
        format!("{}/{}", e.step_index, e.step_count)
    }
}

/// The phase, with its pause reasons and an abort.
fn phase(e: &TimelineEntry) -> String {
    let mut phase = e.phase.as_deref().unwrap_or("-").to_owned();
    if !e.pause.is_empty() {
        phase.push_str(&format!(" ({})", e.pause.join(",")));
    }
    if e.abort {
        phase.push_str(" ABORT");
    }
    phase
}

/// `--brief`: one line per change, as `kubectl get -w` prints, with what changed last (the line
/// is not wrapped: a terminal or a pager shows the rest).
fn brief(out: &mut dyn Write, entries: &[TimelineEntry], clock: Clock) -> std::io::Result<()> {
    writeln!(
        out,
        "{:<6} {:<9} {:<4} {:<11} {:<6} {:<24} CHANGE",
        "#", "TIME", "GEN", "POD HASH", "STEP", "PHASE"
    )?;
    for e in entries {
        writeln!(
            out,
            "{:<6} {:<9} {:<4} {:<11} {:<6} {:<24} {}",
            e.seq,
            clock.show(e.at),
            e.generation
                .map(|g| g.to_string())
                .unwrap_or_else(|| "-".into()),
            short(e.pod_hash.as_deref()),
            step(e),
            phase(e),
            e.changes.join("; ")
        )?;
    }
    Ok(())
}

fn only_readiness(e: &TimelineEntry) -> bool {
    e.source == "ReplicaSet" && e.changes.iter().all(|c| c.contains(" ready "))
}

pub fn run(args: &TimelineArgs, out: &mut dyn Write) -> Result<Exit> {
    let window = args.window.window();
    let options = input::options(&args.files, &args.only, &window, true)?;
    let since = options.since;
    let (analyzer, damage) = crate::commands::analyze::replay_files(
        &args.files,
        options,
        &window,
        input::ONE_AT_A_TIME,
    )?;
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
            let width = crate::style::Style::for_stdout().width;
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
                if args.brief {
                    brief(out, &t.entries, clock)?;
                    continue;
                }
                let mut table = crate::style::table(width);
                table.set_header(vec![
                    "#",
                    "TIME",
                    "GEN",
                    "POD HASH",
                    "STEP",
                    "PHASE",
                    "CHANGE",
                    "REPLICASETS (ready/replicas)",
                ]);
                for e in &t.entries {
                    table.add_row(vec![
                        e.seq.to_string(),
                        clock.show(e.at),
                        e.generation.map(|g| g.to_string()).unwrap_or_default(),
                        short(e.pod_hash.as_deref()),
                        step(e),
                        phase(e),
                        e.changes.join("\n"),
                        replicasets(&e.replicasets),
                    ]);
                }
                // Short values are never broken; the phase, changes and ReplicaSets wrap, a
                // ReplicaSet a line (`<hash> stable 5/5`).
                for i in 0..5 {
                    if let Some(c) = table.column_mut(i) {
                        c.set_constraint(comfy_table::ColumnConstraint::ContentWidth);
                    }
                }
                if let Some(c) = table.column_mut(7) {
                    c.set_constraint(comfy_table::ColumnConstraint::LowerBoundary(
                        comfy_table::Width::Fixed(22),
                    ));
                }
                crate::style::write_table(out, &table)?;
            }
        }
    }
    out.flush()?;
    Ok(report_damage(&damage, args.partial).unwrap_or(Exit::Ok))
}
