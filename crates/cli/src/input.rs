//! Opening recordings and replaying them into an analyzer, keeping account of damage.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use rf_analyzer::rfc3339;
use rf_analyzer::{Analyzer, FileEnd, Prepared};
use rf_format::{End, Reader, Timestamp};

use crate::args::Window;
use crate::timespec::TimeSpec;

/// An open recording.
pub struct Recording {
    pub path: PathBuf,
    pub reader: Reader<BufReader<File>>,
}

/// A recording that ended in damage: the records before it were used.
#[derive(Debug)]
pub struct Damage {
    pub path: PathBuf,
    pub error: rf_format::Error,
    pub records_before: u64,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} ({} complete records before it were read)",
            self.path.display(),
            self.error,
            self.records_before
        )
    }
}

/// Opens one recording and reads its header.
pub fn open(path: &Path) -> Result<Recording> {
    let file =
        File::open(path).with_context(|| format!("failed to open recording {}", path.display()))?;
    let reader = match Reader::new(BufReader::new(file)) {
        Ok(reader) => reader,
        Err(e) => {
            let e = anyhow::Error::new(e)
                .context(format!("failed to read recording {}", path.display()));
            return Err(match crate::sniff::not_a_recording(path) {
                // Said after the cause: what the file is, and what reads it.
                Some(hint) => anyhow::anyhow!("{e:#}\n  {hint}"),
                None => e,
            });
        }
    };
    Ok(Recording {
        path: path.to_owned(),
        reader,
    })
}

/// The recordings named: each file as given; a directory gives its `*.rfr` files in name order
/// (a flight recorder's `--dir`). The file a flight recorder is still writing (`*.rfr.partial`)
/// is read only when named itself; the second list holds the ones skipped.
fn expand_paths(paths: &[PathBuf]) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        let mut found = Vec::new();
        if p.is_dir() {
            let entries = std::fs::read_dir(p)
                .with_context(|| format!("failed to read the directory {}", p.display()))?;
            for entry in entries {
                let path = entry
                    .with_context(|| format!("failed to read the directory {}", p.display()))?
                    .path();
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if !path.is_file() {
                    continue;
                }
                if name.ends_with(".rfr") {
                    found.push(path);
                } else if name.ends_with(".rfr.partial") {
                    skipped.push(path);
                }
            }
            if found.is_empty() {
                anyhow::bail!("no recordings (*.rfr) in the directory {}", p.display());
            }
            found.sort();
        } else {
            found.push(p.clone());
        }
        for f in found {
            // A file named and also in a named directory is read once.
            if seen.insert(std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone())) {
                files.push(f);
            }
        }
    }
    skipped.sort();
    Ok((files, skipped))
}

/// The recording files `paths` name, a directory standing for its `*.rfr` files (in name
/// order), each once.
pub fn files_of(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let (files, skipped) = expand_paths(paths)?;
    for p in &skipped {
        eprintln!(
            "note: skipped {} (still being written; name it to read it too)",
            p.display()
        );
    }
    Ok(files)
}

/// Opens every recording (failing on the first that is not one), in order of start time. A
/// directory stands for its `*.rfr` files.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<Recording>> {
    let paths = files_of(paths)?;
    let mut recs = paths.iter().map(|p| open(p)).collect::<Result<Vec<_>>>()?;
    recs.sort_by_key(|r| r.reader.header().started_at);
    Ok(recs)
}

/// How `timeline` reads recordings that are not one history (it has no `--each`).
pub const ONE_AT_A_TIME: &str = "name one file, or run timeline once per file";

/// Opens recordings that must be one history (as a flight recorder's files are): from one
/// source, each starting where the one before ended ([`replay`] checks the spans as it goes).
/// Unrelated recordings joined would read as one incident. `otherwise` says what to do
/// instead when the files are not one history ([`EACH`], [`ONE_AT_A_TIME`]).
pub fn open_history_or(paths: &[PathBuf], otherwise: &str) -> Result<Vec<Recording>> {
    let recordings = open_all(paths)?;
    let source = |r: &Recording| {
        let s = &r.reader.header().source;
        (s.context.clone(), s.server.clone())
    };
    if let Some(first) = recordings.first() {
        for r in &recordings[1..] {
            if source(r) != source(first) {
                let show = |(context, server): (Option<String>, Option<String>)| {
                    format!(
                        "context {}, server {}",
                        context.as_deref().unwrap_or("-"),
                        server.as_deref().unwrap_or("-")
                    )
                };
                bail!(
                    "{} and {} are not one history: the first was recorded from {}, the second from {}; {otherwise}",
                    first.path.display(),
                    r.path.display(),
                    show(source(first)),
                    show(source(r))
                );
            }
        }
    }
    Ok(recordings)
}

/// How to read recordings that are not one history.
pub const EACH: &str = "name one file, or pass --each to analyze each on its own";

/// A file may start this much before the one before it ended and still follow it: the
/// recorder's clock stamps both.
const OVERLAP_TOLERANCE_NANOS: i64 = 1_000_000_000;

/// Which objects [`replay`] reads, and whether the files must be one history.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objects {
    /// Every object: each delta body is rebuilt and checked (`inspect`, which vouches for the
    /// whole file and reads files of any histories).
    All,
    /// The kinds the analyzer reads ([`Prepared::reads`]): the others' objects (a cluster's
    /// Events, a quarter of the records of the benchmark's) are neither rebuilt nor checked.
    /// The files must be one history: one that starts before the one before it ended is an
    /// error.
    Analyzed,
}

/// Fails unless `path`, starting at `start`, follows `prev`, which ended at `end` (within
/// [`OVERLAP_TOLERANCE_NANOS`]): the files of one history do not overlap. `otherwise` says
/// what to do instead.
pub fn follows(
    prev: &Path,
    end: Timestamp,
    path: &Path,
    start: Timestamp,
    otherwise: &str,
) -> Result<()> {
    if start.0 < end.0 - OVERLAP_TOLERANCE_NANOS {
        bail!(
            "{} and {} are not one history: {} starts at {}, before {} ended at {}; {otherwise}",
            prev.display(),
            path.display(),
            path.display(),
            rfc3339(start),
            prev.display(),
            rfc3339(end)
        );
    }
    Ok(())
}

/// Replays `recordings` into `analyzer` as one history; its findings are read from its report.
/// Records are read and parsed on other cores ([`crate::pipeline`]); the analyzer
/// replays them in order and reports holes between files as gaps. Returns the damage met, one
/// entry per damaged file.
pub fn replay(
    recordings: Vec<Recording>,
    analyzer: &mut Analyzer,
    objects: Objects,
    otherwise: &str,
) -> Result<Vec<Damage>> {
    let mut damage = Vec::new();
    // The file before, while the files must be one history; the analyzer knows when the
    // history read so far ends.
    let mut before: Option<PathBuf> = None;
    for Recording { path, reader } in recordings {
        let start = reader.header().started_at;
        if let (Some(prev), Some(end)) = (before.as_ref(), analyzer.stopped_at())
            && objects == Objects::Analyzed
        {
            follows(prev, end, &path, start, otherwise)?;
        }
        let reader = match objects {
            Objects::All => reader,
            Objects::Analyzed => reader
                .objects_of(Prepared::reads)
                .listed_objects_of(Prepared::reads_listed),
        };
        analyzer.begin_file(
            &path.display().to_string(),
            reader.format_version(),
            reader.header(),
        );
        let ended = crate::pipeline::for_each(reader, |rec, prepared| {
            analyzer.push(rec, prepared, &mut rf_analyzer::Discard);
            !analyzer.past_until()
        });
        before = Some(path.clone());
        if analyzer.past_until() {
            break;
        }
        let reader = ended.reader;
        match ended.error {
            None => {
                let end = match reader.end() {
                    Some(End::Closed) => FileEnd::Closed,
                    _ => FileEnd::Unclosed,
                };
                analyzer.end_file(end, reader.trailer().map(|t| t.closed_at), None);
            }
            Some(error) => {
                let end = if error.is_truncation() {
                    FileEnd::Truncated
                } else {
                    FileEnd::Corrupt
                };
                analyzer.end_file(end, None, Some(error.to_string()));
                damage.push(Damage {
                    path: path.clone(),
                    error,
                    records_before: reader.records_read(),
                });
            }
        }
    }
    Ok(damage)
}

/// The recordings' start (earliest header start) and, when needed, end (latest record).
pub fn span(paths: &[PathBuf], need_end: bool) -> Result<(Timestamp, Timestamp)> {
    let mut start: Option<Timestamp> = None;
    let mut end: Option<Timestamp> = None;
    let (paths, _) = expand_paths(paths)?;
    for path in &paths {
        let rec = open(path)?;
        let s = rec.reader.header().started_at;
        start = Some(start.map_or(s, |x| x.min(s)));
        if need_end {
            // A damaged tail does not matter here: the last complete record is the end.
            let mut reader = rec.reader;
            while let Ok(Some(r)) = reader.next_record() {
                end = Some(end.map_or(r.observed_at, |x| x.max(r.observed_at)));
            }
            if let Some(t) = reader.trailer() {
                end = Some(end.map_or(t.closed_at, |x| x.max(t.closed_at)));
            }
        }
    }
    let start = start.unwrap_or_default();
    Ok((start, end.unwrap_or(start)))
}

/// Resolves `--since`, `--until`/`--at` against the recordings.
pub fn resolve_window(
    paths: &[PathBuf],
    since: Option<&str>,
    until: Option<&str>,
    until_flag: &str,
) -> Result<(Option<Timestamp>, Option<Timestamp>)> {
    let since = since
        .map(|s| TimeSpec::parse(s).with_context(|| "in --since".to_owned()))
        .transpose()?;
    let until = until
        .map(|s| TimeSpec::parse(s).with_context(|| format!("in {until_flag}")))
        .transpose()?;
    if since.is_none() && until.is_none() {
        return Ok((None, None));
    }
    let need_end = since.is_some_and(TimeSpec::needs_end) || until.is_some_and(TimeSpec::needs_end);
    let (start, end) = span(paths, need_end)?;
    let since = since
        .map(|t| t.resolve(start, end).context("in --since"))
        .transpose()?;
    let until = until
        .map(|t| {
            t.resolve(start, end)
                .with_context(|| format!("in {until_flag}"))
        })
        .transpose()?;
    // The end is checked after the replay, which finds it ([`Scope::check`]).
    if let Some(u) = until.filter(|u| *u < start) {
        bail!(
            "{until_flag} {} is before the recording starts at {}: nothing was recorded yet",
            rfc3339(u),
            rfc3339(start)
        );
    }
    if let (Some(s), Some(u)) = (since, until)
        && s > u
    {
        bail!(
            "--since {} is after {until_flag} {}: the window holds no time",
            rfc3339(s),
            rfc3339(u)
        );
    }
    if let Some(s) = since.filter(|s| *s < start) {
        eprintln!(
            "note: --since {} is before the recording starts at {}: every finding is shown",
            rfc3339(s),
            rfc3339(start)
        );
    }
    Ok((since, until))
}

/// Parses `--rollout`: `NAMESPACE/NAME`, or `NAME` in `namespace` (`-n`); `NAME` alone is the
/// rollout of that name in any namespace (an empty namespace, as the analyzer reads it).
pub fn parse_rollout(s: &str, namespace: Option<&str>) -> Result<(String, String)> {
    match (s.split_once('/'), namespace) {
        (Some((ns, name)), given) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            if let Some(given) = given.filter(|g| *g != ns) {
                anyhow::bail!(
                    "--rollout {s} names namespace {ns}, but -n says {given}: give one of them"
                );
            }
            Ok((ns.to_owned(), name.to_owned()))
        }
        (None, given) if !s.is_empty() => Ok((given.unwrap_or_default().to_owned(), s.to_owned())),
        _ => anyhow::bail!(
            "invalid --rollout {s:?}: expected NAMESPACE/NAME or NAME (with -n NAMESPACE), e.g. payments/checkout-api"
        ),
    }
}

/// What `--rollout`, `--since` and `--until`/`--at` asked for, kept to check against what the
/// replay found ([`Scope::check`]).
#[derive(Clone, Debug)]
pub struct Scope {
    rollout: Option<(String, String)>,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
    until_flag: &'static str,
}

impl Scope {
    pub fn of(options: &rf_analyzer::Options, window: &Window) -> Self {
        Scope {
            rollout: options.rollout.clone(),
            since: options.since,
            until: options.until,
            until_flag: window.until_flag(),
        }
    }

    /// Fails where the answer would rest on something the recording does not hold: a rollout
    /// filter that names none of its rollouts (a clean bill otherwise), or a time after it ends
    /// (the state then was never recorded). The errors list the rollouts there are, nearest
    /// name first, and the recording's span.
    pub fn check(&self, analyzer: &Analyzer) -> Result<()> {
        if let Some(end) = analyzer.stopped_at().filter(|_| !analyzer.past_until()) {
            let span = || {
                format!(
                    "the recording spans {} .. {}",
                    analyzer.first_at().map_or_else(|| "?".to_owned(), rfc3339),
                    rfc3339(end)
                )
            };
            if let Some(u) = self.until.filter(|u| *u > end) {
                bail!(
                    "{} {} is after the recording ends: {}; nothing is known of that moment (leave the flag out for the end)",
                    self.until_flag,
                    rfc3339(u),
                    span()
                );
            }
            if let Some(s) = self.since.filter(|s| *s > end) {
                bail!(
                    "--since {} is after the recording ends: {}; no finding can be that late",
                    rfc3339(s),
                    span()
                );
            }
        }
        let Some((ns, name)) = &self.rollout else {
            return Ok(());
        };
        let seen = analyzer.rollouts();
        if ns.is_empty() {
            // `--rollout NAME` without a namespace: the one namespace that has it.
            let namespaces: Vec<&str> = seen
                .iter()
                .filter(|(_, m)| m == name)
                .map(|(n, _)| n.as_str())
                .collect();
            match namespaces.as_slice() {
                [_] => return Ok(()),
                [] => {}
                many => bail!(
                    "--rollout {name} is in {} namespaces ({}): say which with -n NAMESPACE or NAMESPACE/{name}",
                    many.len(),
                    many.join(", ")
                ),
            }
        } else if seen.iter().any(|(n, m)| n == ns && m == name) {
            return Ok(());
        }
        let want = if ns.is_empty() {
            name.clone()
        } else {
            format!("{ns}/{name}")
        };
        let scope = self.until.map_or_else(
            || "the recording".to_owned(),
            |u| format!("the recording up to {}", rfc3339(u)),
        );
        if seen.is_empty() {
            bail!("no rollout {want} in {scope}: it has no rollouts at all");
        }
        let names = nearest_first(&want, seen.iter().map(|(n, m)| format!("{n}/{m}")));
        bail!(
            "no rollout {want} in {scope}; its rollouts, nearest first: {}",
            listing(&names)
        )
    }
}

/// `names`, nearest to `want` first (by edit distance, then by name).
pub fn nearest_first(want: &str, names: impl Iterator<Item = String>) -> Vec<String> {
    let mut names: Vec<(usize, String)> = names.map(|n| (edit_distance(want, &n), n)).collect();
    names.sort();
    names.dedup();
    names.into_iter().map(|(_, n)| n).collect()
}

/// At most 12 names, and how many more there are.
pub fn listing(names: &[String]) -> String {
    const SHOWN: usize = 12;
    let mut s = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        s.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    s
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == *cb {
                diagonal
            } else {
                1 + diagonal.min(above).min(row[j])
            };
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The analyzer's options from the shared flags: `--rollout`, the time window, timelines.
pub fn options(
    files: &[PathBuf],
    only: &crate::args::Only,
    window: &Window,
    timelines: bool,
) -> Result<rf_analyzer::Options> {
    let (since, until) = resolve_window(
        files,
        window.since.as_deref(),
        window.until.as_deref().or(window.at.as_deref()),
        window.until_flag(),
    )?;
    Ok(rf_analyzer::Options {
        rollout: only
            .rollout
            .as_deref()
            .map(|r| parse_rollout(r, only.namespace.as_deref()))
            .transpose()?,
        since,
        until,
        timelines,
        snapshot: false,
        conditions: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_nearest_first() {
        let names = ["payments/checkout-api", "shop/cart", "payments/checkout"]
            .into_iter()
            .map(str::to_owned);
        assert_eq!(
            nearest_first("payments/checkout-apo", names),
            ["payments/checkout-api", "payments/checkout", "shop/cart"]
        );
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
    }
}
