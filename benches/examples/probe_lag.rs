//! How late a recording saw the writes of a prober: `probe_lag FILE ANNOTATION KIND/NAME...`.
//!
//! The prober (tests/cluster/scale.sh) writes, every second, the annotation ANNOTATION with the
//! time it sent the write (nanoseconds since the Unix epoch) on the objects KIND/NAME the
//! recorder watches (others that carry it, such as a ReplicaSet that a controller copied the
//! Rollout's annotations to, are not counted: their lag is the controller's too). For each
//! probe value, the first record of it is the moment the recorder had it:
//! its lag is that record's `observed_at` minus the value, an upper bound of the recorder's lag
//! (it includes the API server's own latency). Prints, per kind: probes seen, p50, p99 and max
//! lag in milliseconds, then the same over all kinds.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::process::ExitCode;

use rf_format::Reader;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [file, annotation, targets @ ..] = args.as_slice() else {
        eprintln!("usage: probe_lag FILE ANNOTATION KIND/NAME...");
        return ExitCode::from(2);
    };
    if targets.is_empty() || targets.iter().any(|t| !t.contains('/')) {
        eprintln!("usage: probe_lag FILE ANNOTATION KIND/NAME...");
        return ExitCode::from(2);
    }
    match run(file, annotation, targets) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("probe_lag: {file}: {e}");
            ExitCode::from(2)
        }
    }
}

fn run(file: &str, annotation: &str, targets: &[String]) -> Result<(), String> {
    let mut reader =
        Reader::new(File::open(file).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let needle = format!("\"{annotation}\":\"");
    let mut seen: BTreeSet<(String, String, i64)> = BTreeSet::new();
    let mut lags: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    while let Some(rec) = reader.next_record().map_err(|e| e.to_string())? {
        // Most records are not probes: look for the annotation's bytes before parsing.
        let target = format!("{}/{}", rec.kind.name(), rec.name);
        if !targets.contains(&target) || !contains(&rec.object, needle.as_bytes()) {
            continue;
        }
        let object: serde_json::Value =
            serde_json::from_slice(&rec.object).map_err(|e| format!("record {}: {e}", rec.seq))?;
        let Some(sent) = object["metadata"]["annotations"][annotation]
            .as_str()
            .and_then(|v| v.parse::<i64>().ok())
        else {
            continue;
        };
        let kind = rec.kind.name().to_owned();
        if seen.insert((kind.clone(), rec.name.clone(), sent)) {
            let lag = rec.observed_at.as_unix_nanos() - sent;
            lags.entry(kind).or_default().push(lag);
        }
    }
    if lags.is_empty() {
        return Err(format!(
            "no record of {} carries the annotation {annotation}",
            targets.join(", ")
        ));
    }
    let mut all = Vec::new();
    for (kind, v) in &mut lags {
        print_line(kind, v);
        all.extend_from_slice(v);
    }
    print_line("all", &mut all);
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `KIND probes N p50 MS p99 MS max MS`.
fn print_line(kind: &str, lags: &mut [i64]) {
    lags.sort_unstable();
    let at = |q: f64| {
        let i = ((lags.len() as f64 - 1.0) * q).round() as usize;
        lags[i.min(lags.len() - 1)] as f64 / 1e6
    };
    println!(
        "{kind} probes {} p50 {:.0} p99 {:.0} max {:.0}",
        lags.len(),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
