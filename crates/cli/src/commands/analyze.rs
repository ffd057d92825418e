//! `rollout-forensics analyze FILE...`

use std::io::Write;

use anyhow::Result;
use rf_analyzer::{Analyzer, Options, Severity};

use crate::args::{AnalyzeArgs, FailOn, Format};
use crate::exit::Exit;
use crate::input::{self, Damage};
use crate::render;
use crate::style::Style;

/// The checked configuration of one `analyze` run.
struct Config {
    options: Options,
    format: Format,
    fail_on: Option<Severity>,
    partial: bool,
}

impl Config {
    fn from_args(args: &AnalyzeArgs) -> Result<Self> {
        Ok(Config {
            options: input::options(
                &args.files,
                args.rollout.as_deref(),
                &args.window,
                args.timelines,
            )?,
            format: args.format,
            fail_on: match args.fail_on {
                FailOn::Error => Some(Severity::Error),
                FailOn::Warning => Some(Severity::Warning),
                FailOn::Never => None,
            },
            partial: args.partial,
        })
    }
}

/// Reports damage on stderr; returns the exit code it forces, if any.
pub fn report_damage(damage: &[Damage], partial: bool) -> Option<Exit> {
    for d in damage {
        if partial {
            eprintln!("warning: {d}");
        } else {
            eprintln!("error: {d}");
        }
    }
    if !damage.is_empty() && !partial {
        eprintln!(
            "hint: the output above covers the records before the damage; pass --partial to accept that and exit by the findings"
        );
        return Some(Exit::Error);
    }
    None
}

pub fn run(args: &AnalyzeArgs, out: &mut dyn Write) -> Result<Exit> {
    let config = Config::from_args(args)?;
    let recordings = input::open_all(&args.files)?;
    let mut analyzer = Analyzer::new(config.options);
    let damage = input::replay(recordings, &mut analyzer, |_| Ok(()))?;
    let report = analyzer.finish();
    match config.format {
        Format::Json => {
            serde_json::to_writer_pretty(&mut *out, &report)?;
            writeln!(out)?;
        }
        Format::Table => render::analyze_table(out, &report, Style::for_stdout())?,
    }
    out.flush()?;
    if let Some(exit) = report_damage(&damage, config.partial) {
        return Ok(exit);
    }
    let failing = config
        .fail_on
        .is_some_and(|threshold| report.worst().is_some_and(|w| w >= threshold));
    Ok(if failing { Exit::Findings } else { Exit::Ok })
}
