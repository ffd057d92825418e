//! rollout-forensics: the command-line tool. The only crate that prints or exits.

mod args;
mod atomic;
mod cluster;
mod commands;
mod exit;
mod input;
mod metrics;
mod out;
mod pipeline;
mod render;
mod signal;
mod sniff;
mod spill;
mod style;
mod timespec;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::FromArgMatches;

use crate::args::{Cli, Command};
use crate::exit::Exit;

/// mimalloc: the analyzer's records are parsed on worker threads and freed on the replaying
/// thread; glibc's allocator serializes those cross-thread frees on arena locks (analyze took
/// 2.3 times as long with it). Built without transparent huge pages (`no_thp`): where the kernel
/// grants them on request (THP "madvise", the common default), mimalloc asked for them and every
/// partly used 2 MiB page counted whole in the RSS (analyze of 1M records peaked at 84 MiB with
/// them, 61 MiB without, in the same time).
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn run(cli: &Cli, out: &mut dyn Write) -> anyhow::Result<Exit> {
    match &cli.command {
        Command::Analyze(a) => commands::analyze::run(a, out),
        Command::Now(a) => commands::now::run(a, out),
        Command::Verify(a) => commands::verify::run(a, out),
        Command::Timeline(a) => commands::timeline::run(a, out),
        Command::Diff(a) => commands::diff::run(a, out),
        Command::Inspect(a) => commands::inspect::run(a, out),
        Command::Simulate(a) => commands::simulate::run(a, out),
        Command::Serve(a) => commands::serve::run(a, out),
        Command::Record(a) => commands::record::run(a, out),
        Command::Watch(a) => commands::record::watch(a, out),
        Command::Wait(a) => commands::wait::run(a, out),
        Command::Check(a) => commands::check::run(a, out),
        Command::Import(a) => commands::import::run(a, out),
        Command::Lint(a) => commands::lint::run(a, out),
        Command::Convert(a) => commands::convert::run(a, out),
        Command::Rules(a) => commands::rules::run(a, out),
        Command::Completions(a) => commands::shell::completions(a, out),
        Command::Man(a) => commands::shell::man(a, out),
    }
}

/// The error and its causes, each said once: some errors (kube's among them) repeat their
/// source in their own message, and `{:#}` would then print a cause two or three times.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.contains(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out
}

fn main() -> ExitCode {
    // Run as `kubectl-forensics` (kubectl's plugin), help and errors name `kubectl forensics`.
    let argv0 = std::env::args_os().next();
    let parsed = commands::shell::command_as_run(argv0.as_deref().and_then(|a| a.to_str()))
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Error.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    let stdout = io::stdout();
    // A closed stdout (`| head`) ends no command early: each runs to its end and exits as its
    // outcome decides ([`out::Quiet`]).
    let mut out = io::BufWriter::new(out::Quiet::new(stdout.lock()));
    let result = run(&cli, &mut out).and_then(|exit| {
        out.flush()?;
        Ok(exit)
    });
    match result {
        Ok(exit) => exit.into(),
        Err(e) => {
            let _ = out.flush();
            eprintln!("error: {}", message(&e));
            Exit::Error.into()
        }
    }
}
