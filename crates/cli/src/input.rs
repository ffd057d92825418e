//! Opening recordings and replaying them into an analyzer, keeping account of damage.

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
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
    let reader = Reader::new(BufReader::new(file))
        .with_context(|| format!("failed to read recording {}", path.display()))?;
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

/// Opens every recording (failing on the first that is not one), in order of start time. A
/// directory stands for its `*.rfr` files.
pub fn open_all(paths: &[PathBuf]) -> Result<Vec<Recording>> {
    let (paths, skipped) = expand_paths(paths)?;
    for p in &skipped {
        eprintln!(
            "note: skipped {} (still being written; name it to read it too)",
            p.display()
        );
    }
    let mut recs = paths.iter().map(|p| open(p)).collect::<Result<Vec<_>>>()?;
    recs.sort_by_key(|r| r.reader.header().started_at);
    Ok(recs)
}

/// Which objects [`replay`] reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Objects {
    /// Every object: each delta body is rebuilt and checked (`inspect`, which vouches for the
    /// whole file).
    All,
    /// The kinds the analyzer reads ([`Prepared::reads`]): the others' objects (a cluster's
    /// Events, a quarter of the records of the benchmark's) are neither rebuilt nor checked.
    Analyzed,
}

/// Replays `recordings` into `analyzer` as one history; its findings are read from its report.
/// Records are read and parsed on other cores ([`crate::pipeline`]); the analyzer
/// replays them in order and reports holes between files as gaps. Returns the damage met, one
/// entry per damaged file.
pub fn replay(
    recordings: Vec<Recording>,
    analyzer: &mut Analyzer,
    objects: Objects,
) -> Result<Vec<Damage>> {
    let mut damage = Vec::new();
    for Recording { path, reader } in recordings {
        let reader = match objects {
            Objects::All => reader,
            Objects::Analyzed => reader.objects_of(Prepared::reads),
        };
        analyzer.begin_file(
            &path.display().to_string(),
            reader.format_version(),
            reader.header(),
        );
        let ended = crate::pipeline::for_each(reader, |rec, prepared| {
            analyzer.replay_prepared(rec, prepared);
            !analyzer.past_until()
        });
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
) -> Result<(Option<Timestamp>, Option<Timestamp>)> {
    let since = since
        .map(|s| TimeSpec::parse(s).with_context(|| "in --since".to_owned()))
        .transpose()?;
    let until = until
        .map(|s| TimeSpec::parse(s).with_context(|| "in --until/--at".to_owned()))
        .transpose()?;
    if since.is_none() && until.is_none() {
        return Ok((None, None));
    }
    let need_end = since.is_some_and(TimeSpec::needs_end) || until.is_some_and(TimeSpec::needs_end);
    let (start, end) = span(paths, need_end)?;
    Ok((
        since.map(|t| t.resolve(start, end)),
        until.map(|t| t.resolve(start, end)),
    ))
}

/// Parses `NAMESPACE/NAME`.
pub fn parse_rollout(s: &str) -> Result<(String, String)> {
    match s.split_once('/') {
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => anyhow::bail!(
            "invalid --rollout {s:?}: expected NAMESPACE/NAME, e.g. payments/checkout-api"
        ),
    }
}

/// The analyzer's options from the shared flags: `--rollout`, the time window, timelines.
pub fn options(
    files: &[PathBuf],
    rollout: Option<&str>,
    window: &Window,
    timelines: bool,
) -> Result<rf_analyzer::Options> {
    let (since, until) = resolve_window(
        files,
        window.since.as_deref(),
        window.until.as_deref().or(window.at.as_deref()),
    )?;
    Ok(rf_analyzer::Options {
        rollout: rollout.map(parse_rollout).transpose()?,
        since,
        until,
        timelines,
        snapshot: false,
    })
}
