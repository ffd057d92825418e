//! `rollout-forensics simulate SCENARIO -o FILE`

use std::io::Write;
use std::path::Path;

use anyhow::{Result, bail};

use crate::args::SimulateArgs;
use crate::atomic::write_atomically;
use crate::exit::Exit;

/// The generated `scale` scenario, listed after the catalog's.
const SCALE: (&str, &str) = (
    "scale",
    "Many rollouts releasing (some racing, some aborting): --rollouts N --events M --seed S",
);

/// Every scenario: name and summary.
fn scenarios() -> Vec<(&'static str, &'static str)> {
    let mut all: Vec<(&str, &str)> = rf_scenarios::catalog()
        .iter()
        .map(|s| (s.name, s.summary))
        .collect();
    all.push(SCALE);
    all
}

pub fn run(args: &SimulateArgs, out: &mut dyn Write) -> Result<Exit> {
    if args.list {
        let all = scenarios();
        let width = all.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
        for (name, summary) in all {
            writeln!(out, "{name:<width$}  {summary}")?;
        }
        return Ok(Exit::Ok);
    }
    let (Some(name), Some(output)) = (&args.scenario, &args.output) else {
        bail!("simulate needs a SCENARIO and -o FILE (or --list)");
    };
    if name == "scale" {
        // Written as it is merged: a million records would otherwise be held decoded (GBs).
        let config = rf_scenarios::ScaleConfig {
            rollouts: args.rollouts,
            events: args.events,
            seed: args.seed,
            applications: args.applications,
            replicas: args.replicas,
            per_namespace: usize::try_from(args.per_namespace).unwrap_or(usize::MAX),
        };
        if output == Path::new("-") {
            rf_scenarios::write_scale(&config, &mut *out)?;
            out.flush()?;
            return Ok(Exit::Ok);
        }
        let mut records = 0;
        write_atomically(output, |file| {
            records = rf_scenarios::write_scale(&config, file)?.1;
            Ok(())
        })?;
        eprintln!("wrote scale ({records} records) to {}", output.display());
        return Ok(Exit::Ok);
    }
    let Some(recording) = rf_scenarios::generate(name) else {
        let names: Vec<&str> = scenarios().into_iter().map(|(n, _)| n).collect();
        bail!(
            "unknown scenario {name:?}; known: {} (simulate --list says what each is)",
            names.join(", ")
        );
    };
    if output == Path::new("-") {
        recording.write_to(&mut *out)?;
        out.flush()?;
        return Ok(Exit::Ok);
    }
    write_atomically(output, |file| {
        recording.write_to(file)?;
        Ok(())
    })?;
    eprintln!(
        "wrote {} ({} records) to {}",
        name,
        recording.records.len(),
        output.display()
    );
    Ok(Exit::Ok)
}
