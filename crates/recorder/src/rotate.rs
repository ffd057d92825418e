//! Flight-recorder mode: a new file per interval in a directory, the oldest removed.
//!
//! Files are named by the time they start, `rf-YYYYMMDDTHHMMSSZ.rfr` (UTC), so name order is time
//! order. The file being written is `….rfr.partial` and is renamed to `….rfr` once closed with
//! its trailer and synced: a reader of the directory never takes an open file for a complete one.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, ErrorKind};
use std::path::{Path, PathBuf};
use std::time::Duration;

use rf_format::Timestamp;

use crate::clock::compact_utc;
use crate::error::{Error, Result};
use crate::sink::Destination;

/// The suffix of the file being written.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// Where and how often to start a new file.
#[derive(Clone, Debug)]
pub struct Rotation {
    /// The directory (created if missing).
    pub dir: PathBuf,
    /// How long each file covers. Files start on multiples of it since the Unix epoch (with
    /// `1h`: on the hour), except the first. At least one second.
    pub every: Duration,
    /// How many closed files to keep (the oldest are removed); `None`: all.
    pub keep: Option<usize>,
}

/// The time part of a flight-recorder file name, and its collision suffix: `Some` for
/// `rf-20260314T130000Z.rfr` or `rf-20260314T130000Z-2.rfr`, `None` for any other name.
pub fn parse_file_name(name: &str) -> Option<(&str, u32)> {
    let rest = name.strip_prefix("rf-")?.strip_suffix(".rfr")?;
    let (stamp, n) = match rest.split_once('-') {
        Some((stamp, n)) => (stamp, n.parse::<u32>().ok()?),
        None => (rest, 0),
    };
    let b = stamp.as_bytes();
    let ok = b.len() == 16
        && b[8] == b'T'
        && b[15] == b'Z'
        && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit);
    ok.then_some((stamp, n))
}

/// The flight-recorder files in `dir`, oldest first.
pub fn list_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut named: Vec<((String, u32), PathBuf)> = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some((stamp, n)) = parse_file_name(name) {
            if entry.file_type()?.is_file() {
                named.push(((stamp.to_owned(), n), entry.path()));
            }
        }
    }
    named.sort();
    Ok(named.into_iter().map(|(_, p)| p).collect())
}

/// Renames the `*.rfr.partial` files a recorder left in `dir` when it was killed to `*.rfr`, so
/// their history is read with the rest (they read as not closed, never as complete). Call it
/// before recording into `dir`, never while another recorder writes there. Returns the new
/// names.
pub fn adopt_leftovers(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut adopted = Vec::new();
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(adopted),
        Err(e) => return Err(e),
    };
    let mut leftovers = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(complete) = name.strip_suffix(PARTIAL_SUFFIX) {
            if parse_file_name(complete).is_some() && entry.file_type()?.is_file() {
                leftovers.push((entry.path(), dir.join(complete)));
            }
        }
    }
    leftovers.sort();
    for (partial, complete) in leftovers {
        if complete.exists() {
            continue;
        }
        fs::rename(&partial, &complete)?;
        adopted.push(complete);
    }
    Ok(adopted)
}

/// The directory a rotating recording writes to.
#[derive(Debug)]
pub(crate) struct Directory {
    rotation: Rotation,
    /// The file being written: its `.partial` path and its final path.
    current: Option<(PathBuf, PathBuf)>,
    /// Files closed by this run.
    closed: u64,
}

impl Directory {
    pub(crate) fn new(rotation: Rotation) -> Result<Self> {
        fs::create_dir_all(&rotation.dir).map_err(|source| Error::Output {
            action: "create the directory",
            path: rotation.dir.clone(),
            source,
        })?;
        Ok(Directory {
            rotation,
            current: None,
            closed: 0,
        })
    }

    fn prune(&self) -> Result<()> {
        let Some(keep) = self.rotation.keep else {
            return Ok(());
        };
        let files = list_files(&self.rotation.dir).map_err(|source| Error::Output {
            action: "list",
            path: self.rotation.dir.clone(),
            source,
        })?;
        let excess = files.len().saturating_sub(keep);
        for old in &files[..excess] {
            match fs::remove_file(old) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(Error::Output {
                        action: "remove",
                        path: old.clone(),
                        source,
                    });
                }
            }
        }
        Ok(())
    }
}

impl Destination for Directory {
    type Out = BufWriter<File>;

    fn open(&mut self, at: Timestamp) -> Result<Self::Out> {
        let stamp = compact_utc(at);
        for n in 0u32..1000 {
            let name = if n == 0 {
                format!("rf-{stamp}.rfr")
            } else {
                format!("rf-{stamp}-{n}.rfr")
            };
            let complete = self.rotation.dir.join(&name);
            let partial = self.rotation.dir.join(format!("{name}{PARTIAL_SUFFIX}"));
            if complete.exists() {
                continue;
            }
            match OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&partial)
            {
                Ok(file) => {
                    self.current = Some((partial, complete));
                    return Ok(BufWriter::with_capacity(256 * 1024, file));
                }
                Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                Err(source) => {
                    return Err(Error::Output {
                        action: "create",
                        path: partial,
                        source,
                    });
                }
            }
        }
        Err(Error::Output {
            action: "find a free file name in",
            path: self.rotation.dir.clone(),
            source: std::io::Error::from(ErrorKind::AlreadyExists),
        })
    }

    fn finished(&mut self, out: Self::Out) -> Result<()> {
        let Some((partial, complete)) = self.current.take() else {
            return Ok(());
        };
        let file = out.into_inner().map_err(|e| Error::Output {
            action: "write",
            path: partial.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(|source| Error::Output {
            action: "sync",
            path: partial.clone(),
            source,
        })?;
        drop(file);
        fs::rename(&partial, &complete).map_err(|source| Error::Output {
            action: "rename",
            path: partial.clone(),
            source,
        })?;
        self.closed += 1;
        // The rename is durable once the directory is synced (best effort: not every
        // filesystem lets a directory be opened for it).
        if let Ok(d) = File::open(&self.rotation.dir) {
            let _ = d.sync_all();
        }
        self.prune()
    }

    fn abandoned(&mut self) -> Result<()> {
        let Some((partial, complete)) = self.current.take() else {
            return Ok(());
        };
        if self.closed == 0 {
            // The recording failed at its start (forbidden, not served): nothing worth keeping.
            match fs::remove_file(&partial) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
                Err(source) => Err(Error::Output {
                    action: "remove",
                    path: partial,
                    source,
                }),
            }
        } else {
            // Keep the history: it reads as not closed.
            fs::rename(&partial, &complete).map_err(|source| Error::Output {
                action: "rename",
                path: partial,
                source,
            })
        }
    }

    fn every(&self) -> Option<Duration> {
        Some(self.rotation.every.max(Duration::from_secs(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_flight_recorder_names_are_recognized() {
        assert_eq!(
            parse_file_name("rf-20260314T130000Z.rfr"),
            Some(("20260314T130000Z", 0))
        );
        assert_eq!(
            parse_file_name("rf-20260314T130000Z-2.rfr"),
            Some(("20260314T130000Z", 2))
        );
        for other in [
            "rf-20260314T130000Z.rfr.partial",
            "incident.rfr",
            "rf-2026031T130000Z.rfr",
            "rf-20260314T130000Z-x.rfr",
            "rf-20260314X130000Z.rfr",
        ] {
            assert_eq!(parse_file_name(other), None, "{other}");
        }
    }

    #[test]
    fn leftovers_are_adopted_and_other_files_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        fs::write(p.join("rf-20260314T130000Z.rfr.partial"), b"x").unwrap();
        fs::write(p.join("notes.txt.partial"), b"x").unwrap();
        let adopted = adopt_leftovers(p).unwrap();
        assert_eq!(adopted, vec![p.join("rf-20260314T130000Z.rfr")]);
        assert!(p.join("notes.txt.partial").exists());
        assert_eq!(list_files(p).unwrap(), adopted);
    }
}
