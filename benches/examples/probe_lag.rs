//! How late a recording saw the writes of a prober:
//! `probe_lag [--reference FILE] RECORDING ANNOTATION KIND/NAME...`.
//!
//! The prober (tests/cluster/scale.sh) writes, every second, the annotation ANNOTATION with the
//! time it sent the write (nanoseconds since the Unix epoch) on the objects KIND/NAME the
//! recorder watches (others that carry it, such as a ReplicaSet that a controller copied the
//! Rollout's annotations to, are not counted: their lag is the controller's too). For each
//! probe value, the first record of it is the moment the recorder had it:
//! its lag is that record's `observed_at` minus the value, an upper bound of the recorder's lag
//! (it includes the API server's own latency). Prints, per kind: probes seen, p50, p99 and max
//! lag in milliseconds, then the same over all kinds.
//!
//! With `--reference FILE`, lines `KIND/NAME VALUE ARRIVAL` (nanoseconds) from another client
//! that held the same watches: its lag per kind (the API server's, as far as a client that does
//! nothing else sees it), then, for the probes both saw, the recorder's time minus the
//! reference's: the lag the recorder adds.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::process::ExitCode;

use rf_format::Reader;

const USAGE: &str = "usage: probe_lag [--reference FILE] RECORDING ANNOTATION KIND/NAME...";

fn main() -> ExitCode {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let reference = if args.first().map(String::as_str) == Some("--reference") && args.len() > 1 {
        let file = args.remove(1);
        args.remove(0);
        Some(file)
    } else {
        None
    };
    let [file, annotation, targets @ ..] = args.as_slice() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    if targets.is_empty() || targets.iter().any(|t| !t.contains('/')) {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    }
    let result = recorded(file, annotation, targets).and_then(|recorded| {
        let reference = match &reference {
            Some(r) => Some(arrivals(r, targets).map_err(|e| format!("{r}: {e}"))?),
            None => None,
        };
        report(&recorded, reference.as_ref());
        Ok(())
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("probe_lag: {e}");
            ExitCode::from(2)
        }
    }
}

/// (KIND/NAME, probe value) -> when it arrived, in nanoseconds since the Unix epoch.
type Arrivals = HashMap<(String, i64), i64>;

/// The first record of each probe value in the recording.
fn recorded(file: &str, annotation: &str, targets: &[String]) -> Result<Arrivals, String> {
    let fail = |e: String| format!("{file}: {e}");
    let mut reader = Reader::new(File::open(file).map_err(|e| fail(e.to_string()))?)
        .map_err(|e| fail(e.to_string()))?;
    let needle = format!("\"{annotation}\":\"");
    let mut seen = Arrivals::new();
    while let Some(rec) = reader.next_record().map_err(|e| fail(e.to_string()))? {
        // Most records are not probes: look for the annotation's bytes before parsing.
        let target = format!("{}/{}", rec.kind.name(), rec.name);
        if !targets.contains(&target) || !contains(&rec.object, needle.as_bytes()) {
            continue;
        }
        let object: serde_json::Value = serde_json::from_slice(&rec.object)
            .map_err(|e| fail(format!("record {}: {e}", rec.seq)))?;
        let Some(sent) = object["metadata"]["annotations"][annotation]
            .as_str()
            .and_then(|v| v.parse::<i64>().ok())
        else {
            continue;
        };
        seen.entry((target, sent))
            .or_insert(rec.observed_at.as_unix_nanos());
    }
    if seen.is_empty() {
        return Err(fail(format!(
            "no record of {} carries the annotation {annotation}",
            targets.join(", ")
        )));
    }
    Ok(seen)
}

/// The reference client's lines, `KIND/NAME VALUE ARRIVAL`; the first arrival of each value.
fn arrivals(file: &str, targets: &[String]) -> Result<Arrivals, String> {
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let mut seen = Arrivals::new();
    for (n, line) in text.lines().enumerate() {
        let bad = || format!("line {}: not `KIND/NAME VALUE ARRIVAL`: {line:?}", n + 1);
        let mut words = line.split_whitespace();
        let (Some(target), Some(value), Some(at), None) =
            (words.next(), words.next(), words.next(), words.next())
        else {
            return Err(bad());
        };
        let (Ok(value), Ok(at)) = (value.parse::<i64>(), at.parse::<i64>()) else {
            return Err(bad());
        };
        if targets.iter().any(|t| t == target) {
            let first = seen.entry((target.to_owned(), value)).or_insert(at);
            *first = (*first).min(at);
        }
    }
    if seen.is_empty() {
        return Err(format!("no line of {}", targets.join(", ")));
    }
    Ok(seen)
}

fn report(recorded: &Arrivals, reference: Option<&Arrivals>) {
    let lags = |arrived: &Arrivals| {
        let mut by_kind: BTreeMap<String, Vec<i64>> = BTreeMap::new();
        for ((target, sent), at) in arrived {
            by_kind.entry(kind_of(target)).or_default().push(at - sent);
        }
        by_kind
    };
    print_kinds("", lags(recorded));
    let Some(reference) = reference else { return };
    print_kinds("reference ", lags(reference));
    // Probe by probe, for those both saw: how much later the recorder had it.
    let mut added: BTreeMap<String, Vec<i64>> = BTreeMap::new();
    let mut only_reference = 0;
    for (key, at) in reference {
        match recorded.get(key) {
            Some(r) => added.entry(kind_of(&key.0)).or_default().push(r - at),
            None => only_reference += 1,
        }
    }
    print_kinds("added ", added);
    println!("probes the reference saw and the recording did not: {only_reference}");
}

fn kind_of(target: &str) -> String {
    target.split('/').next().unwrap_or(target).to_owned()
}

/// One line per kind, then one over all kinds.
fn print_kinds(prefix: &str, mut by_kind: BTreeMap<String, Vec<i64>>) {
    let mut all = Vec::new();
    for (kind, v) in &mut by_kind {
        print_line(&format!("{prefix}{kind}"), v);
        all.extend_from_slice(v);
    }
    if !all.is_empty() {
        print_line(&format!("{prefix}all"), &mut all);
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// `KIND probes N p50 MS p99 MS max MS` (`min MS` too: a difference can be below zero).
fn print_line(kind: &str, lags: &mut [i64]) {
    lags.sort_unstable();
    let at = |q: f64| {
        let i = ((lags.len() as f64 - 1.0) * q).round() as usize;
        lags[i.min(lags.len() - 1)] as f64 / 1e6
    };
    println!(
        "{kind} probes {} min {:.0} p50 {:.0} p99 {:.0} max {:.0}",
        lags.len(),
        at(0.0),
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
