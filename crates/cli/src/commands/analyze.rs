//! `rollout-forensics analyze FILE...`

use std::io::Write;

use anyhow::Result;
use rf_analyzer::{Analyzer, Options, Severity};

use crate::args::{AnalyzeArgs, ReportFormat};
use crate::exit::Exit;
use crate::input::{self, Damage};
use crate::render;
use crate::style::Style;

/// The checked configuration of one `analyze` run.
struct Config {
    options: Options,
    format: ReportFormat,
    fail_on: Option<Severity>,
    partial: bool,
}

impl Config {
    fn from_args(args: &AnalyzeArgs, files: &[std::path::PathBuf]) -> Result<Self> {
        Ok(Config {
            options: input::options(
                files,
                &args.only,
                &args.window,
                // The markdown and HTML reports draw the timelines.
                args.timelines
                    || matches!(args.format, ReportFormat::Markdown | ReportFormat::Html),
            )?,
            format: args.format,
            fail_on: args.fail_on.threshold(),
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

/// Replays `files` as one history into an analyzer with `options`: the report (with the holes
/// between files among its gaps) and the damage met. `verify` analyzes the same way.
pub fn analyze_files(
    files: &[std::path::PathBuf],
    options: Options,
    window: &crate::args::Window,
) -> Result<(rf_analyzer::Report, Vec<Damage>)> {
    let (analyzer, damage) = replay_files(files, options, window, input::EACH)?;
    Ok((analyzer.finish(), damage))
}

/// Replays `files` into an analyzer, left unfinished; fails where the recording does not hold
/// what `options` ask for ([`input::Scope::check`]). `timeline` replays the same way.
/// `otherwise` says what to do when the files are not one history.
pub(crate) fn replay_files(
    files: &[std::path::PathBuf],
    options: Options,
    window: &crate::args::Window,
    otherwise: &str,
) -> Result<(Analyzer, Vec<Damage>)> {
    let recordings = input::open_history_or(files, otherwise)?;
    let scope = input::Scope::of(&options, window);
    let mut analyzer = crate::spill::analyzer(options);
    let damage = input::replay(
        recordings,
        &mut analyzer,
        input::Objects::Analyzed,
        otherwise,
    )?;
    scope.check(&analyzer)?;
    Ok((analyzer, damage))
}

pub fn run(args: &AnalyzeArgs, out: &mut dyn Write) -> Result<Exit> {
    if !args.each {
        return run_on(args, &args.files, out);
    }
    if args.write.is_some() || args.format == ReportFormat::Html {
        anyhow::bail!(
            "--each writes one report after another to stdout: not with --write or -o html (run analyze once per file for those)"
        );
    }
    // Each file its own history; the exit code is the worst of them.
    let mut worst = Exit::Ok;
    for file in input::files_of(&args.files)? {
        let exit = run_on(args, std::slice::from_ref(&file), out)?;
        worst = match (worst, exit) {
            (Exit::Error, _) | (_, Exit::Error) => Exit::Error,
            (Exit::Findings, _) | (_, Exit::Findings) => Exit::Findings,
            _ => exit,
        };
        if args.format == ReportFormat::Table || args.format == ReportFormat::Markdown {
            writeln!(out)?;
        }
    }
    Ok(worst)
}

fn run_on(args: &AnalyzeArgs, files: &[std::path::PathBuf], out: &mut dyn Write) -> Result<Exit> {
    let config = Config::from_args(args, files)?;
    let (analyzer, damage) = replay_files(files, config.options, &args.window, input::EACH)?;
    // The machine formats stream their findings from the analyzer's packed form: a day of
    // records can make tens of thousands, and they need not all be decoded at once. The
    // formats for a person hold them (and a person reads far fewer).
    let (report, packed) = match config.format {
        ReportFormat::Json | ReportFormat::Yaml | ReportFormat::Jsonl => {
            let (report, packed) = analyzer.finish_packed();
            (report, Some(packed))
        }
        _ => (analyzer.finish(), None),
    };
    let write = |w: &mut dyn Write, style: Style| match &packed {
        Some(packed) => render::packed_report(w, &report, packed, config.format),
        None => render::report(w, &report, config.format, style),
    };
    match &args.write {
        Some(path) => {
            crate::atomic::write_atomically(path, |file| {
                let mut w = std::io::BufWriter::new(file);
                write(&mut w, Style::plain())?;
                w.flush()?;
                Ok(())
            })?;
            eprintln!("wrote the report to {}", path.display());
        }
        None => write(out, Style::for_stdout())?,
    }
    out.flush()?;
    if let Some(exit) = report_damage(&damage, config.partial) {
        return Ok(exit);
    }
    let worst = match &packed {
        Some(packed) => packed.worst(),
        None => report.worst(),
    };
    let failing = config
        .fail_on
        .is_some_and(|threshold| worst.is_some_and(|w| w >= threshold));
    Ok(if failing { Exit::Findings } else { Exit::Ok })
}
