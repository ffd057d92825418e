//! Where the served versions' bytes are kept: a scratch file of the server's own, so that memory
//! holds where each version is, not its bytes.
//!
//! A recording of a day holds millions of versions. Kept in memory (even as deltas) they took
//! about 1 GB per million records; in this file they take the page cache's memory, which the
//! kernel gives back under pressure, and none of the server's. The file is appended to while the
//! timeline is built and only read afterwards; it is unlinked as soon as it is made (on Unix), so
//! nothing is left behind when the server ends, however it ends.

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// The bytes appended last, written to the file when they reach this size.
const BUFFER: usize = 1 << 20;

/// What a scratch file's bytes hold ([`Scratch::held`] tells how much of each), in the order
/// they are told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holds {
    /// Versions kept as deltas.
    Deltas,
    /// Rows: events, record times.
    Rows,
    /// Snapshots of the live objects.
    Snapshots,
    /// Versions' metadata.
    Metadata,
    /// Versions kept whole.
    Whole,
}

/// How many kinds of bytes there are.
const HOLDS: usize = Holds::ALL.len();

impl Holds {
    /// Every kind of bytes, in [`Scratch::held`]'s order.
    pub const ALL: [Holds; 5] = [
        Holds::Deltas,
        Holds::Rows,
        Holds::Snapshots,
        Holds::Metadata,
        Holds::Whole,
    ];

    /// What it is called when told.
    pub fn name(self) -> &'static str {
        match self {
            Holds::Deltas => "deltas",
            Holds::Rows => "rows",
            Holds::Snapshots => "snapshots",
            Holds::Metadata => "metadata",
            Holds::Whole => "whole versions",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// What a server's scratch file holds, as told to its user: how much, and of what.
#[derive(Clone, Debug)]
pub struct Scratch {
    /// It is a file (else everything is in memory: no file could be made or written).
    pub in_file: bool,
    /// How many bytes of each.
    pub held: [(Holds, u64); HOLDS],
}

impl Scratch {
    /// How many bytes in all.
    pub fn total(&self) -> u64 {
        self.held.iter().map(|(_, n)| n).sum()
    }
}

impl std::fmt::Display for Scratch {
    /// `401 MB: deltas 283 MB, rows 69 MB, ...`
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", size(self.total()))?;
        let mut sep = ": ";
        for (what, n) in self.held {
            write!(f, "{sep}{} {}", what.name(), size(n))?;
            sep = ", ";
        }
        Ok(())
    }
}

/// `n` bytes in decimal units, to about three figures.
fn size(n: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1_000_000_000_000, "TB"),
        (1_000_000_000, "GB"),
        (1_000_000, "MB"),
        (1_000, "kB"),
    ];
    for (unit, name) in UNITS {
        if n >= unit {
            let x = n as f64 / unit as f64;
            return if x < 10.0 {
                format!("{x:.1} {name}")
            } else {
                format!("{x:.0} {name}")
            };
        }
    }
    format!("{n} B")
}

/// An append-only file of byte strings, read back by position. Without a file (none could be
/// made, or one stopped taking writes) what it has not written stays in memory: everything
/// appended is readable either way.
pub struct Spill {
    file: Option<File>,
    /// How many bytes of the file are written (everything before this offset is readable with
    /// `pread`, without the lock).
    written: AtomicU64,
    /// The bytes appended after `written`, not yet written.
    tail: Mutex<Tail>,
    /// How many bytes of each [`Holds`] were appended.
    held: [AtomicU64; HOLDS],
    /// Reads fail: a test's stand-in for a scratch file that can no longer be read.
    #[cfg(test)]
    fail_reads: std::sync::atomic::AtomicBool,
}

struct Tail {
    bytes: Vec<u8>,
    /// Why the file takes no more writes: the tail then grows in memory.
    failed: Option<String>,
}

impl std::fmt::Debug for Spill {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spill")
            .field("written", &self.written.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl Spill {
    /// A new, empty spill file in `dir`, removed from the directory at once (on Unix; elsewhere
    /// when the server ends).
    pub fn create_in(dir: &Path) -> io::Result<Arc<Spill>> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!(
            ".rollout-forensics-serve-{}-{n}.spill",
            std::process::id()
        ));
        let file = File::options()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)?;
        if cfg!(unix) {
            std::fs::remove_file(&path)?;
        }
        Ok(Spill::with(Some(file)))
    }

    /// A new spill file in the temp directory.
    pub fn create() -> io::Result<Arc<Spill>> {
        Spill::create_in(&std::env::temp_dir())
    }

    /// A spill that keeps everything in memory.
    pub fn memory() -> Arc<Spill> {
        Spill::with(None)
    }

    fn with(file: Option<File>) -> Arc<Spill> {
        let buffer = if file.is_some() { BUFFER } else { 0 };
        Arc::new(Spill {
            file,
            written: AtomicU64::new(0),
            tail: Mutex::new(Tail {
                bytes: Vec::with_capacity(buffer),
                failed: None,
            }),
            held: Default::default(),
            #[cfg(test)]
            fail_reads: std::sync::atomic::AtomicBool::new(false),
        })
    }

    fn tail(&self) -> MutexGuard<'_, Tail> {
        // A panic while the lock was held left the bytes as they were: still usable.
        self.tail.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `bytes`, which hold `what`; returns where they start. When the file fails to
    /// take them, they and everything after are kept in memory ([`Spill::flush`] says why).
    pub fn append(&self, bytes: &[u8], what: Holds) -> u64 {
        self.held[what.index()].fetch_add(bytes.len() as u64, Ordering::Relaxed);
        let mut tail = self.tail();
        let at = self.written.load(Ordering::Acquire) + tail.bytes.len() as u64;
        tail.bytes.extend_from_slice(bytes);
        if tail.bytes.len() >= BUFFER && tail.failed.is_none() && self.file.is_some() {
            self.write_tail(&mut tail);
        }
        at
    }

    fn write_tail(&self, tail: &mut Tail) {
        let Some(file) = &self.file else { return };
        let at = self.written.load(Ordering::Acquire);
        match write_at(file, &tail.bytes, at) {
            Ok(()) => {
                self.written
                    .store(at + tail.bytes.len() as u64, Ordering::Release);
                tail.bytes.clear();
            }
            Err(e) => tail.failed = Some(e.to_string()),
        }
    }

    /// Writes what is buffered, so every later read is a `pread` without the lock; or says why
    /// the bytes not written are kept in memory (a spill without a file keeps them there).
    pub fn flush(&self) -> Result<(), String> {
        if self.file.is_none() {
            return Ok(());
        }
        let mut tail = self.tail();
        if tail.failed.is_none() && !tail.bytes.is_empty() {
            self.write_tail(&mut tail);
            if tail.failed.is_none() {
                tail.bytes.shrink_to(0);
            }
        }
        match &tail.failed {
            Some(why) if !tail.bytes.is_empty() => Err(why.clone()),
            _ => Ok(()),
        }
    }

    /// Appends the `len` bytes at `at` to `out`.
    pub fn read(&self, at: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        out.resize(start + len, 0);
        self.read_exact(at, &mut out[start..])
    }

    /// Fills `out` with the bytes at `at`.
    pub fn read_exact(&self, at: u64, out: &mut [u8]) -> io::Result<()> {
        #[cfg(test)]
        if self.fail_reads.load(Ordering::Relaxed) {
            return Err(io::Error::other("reads made to fail by a test"));
        }
        let end = at + out.len() as u64;
        if end <= self.written.load(Ordering::Acquire) {
            return read_at(self.file()?, out, at);
        }
        let tail = self.tail();
        let written = self.written.load(Ordering::Acquire);
        let split = usize::try_from(written.saturating_sub(at)).map_err(io::Error::other)?;
        let from = usize::try_from(at.saturating_sub(written)).map_err(io::Error::other)?;
        let (file_part, tail_part) = out.split_at_mut(split.min(out.len()));
        match tail.bytes.get(from..from + tail_part.len()) {
            Some(b) => tail_part.copy_from_slice(b),
            None => return Err(io::Error::other("read past the end of the spill file")),
        }
        drop(tail);
        if file_part.is_empty() {
            return Ok(());
        }
        read_at(self.file()?, file_part, at)
    }

    /// Writes `bytes` over the bytes at `at` (which were appended).
    pub fn overwrite(&self, at: u64, bytes: &[u8]) -> io::Result<()> {
        let mut tail = self.tail();
        let written = self.written.load(Ordering::Acquire);
        let end = at + bytes.len() as u64;
        if end > written + tail.bytes.len() as u64 {
            return Err(io::Error::other("write past the end of the spill file"));
        }
        let split = usize::try_from(written.saturating_sub(at)).map_err(io::Error::other)?;
        let from = usize::try_from(at.saturating_sub(written)).map_err(io::Error::other)?;
        let (file_part, tail_part) = bytes.split_at(split.min(bytes.len()));
        tail.bytes[from..from + tail_part.len()].copy_from_slice(tail_part);
        if file_part.is_empty() {
            return Ok(());
        }
        write_at(self.file()?, file_part, at)
    }

    /// Makes every later read fail.
    #[cfg(test)]
    pub fn fail_reads(&self) {
        self.fail_reads.store(true, Ordering::Relaxed);
    }

    fn file(&self) -> io::Result<&File> {
        self.file
            .as_ref()
            .ok_or_else(|| io::Error::other("the spill has no file"))
    }

    /// Appends the `len` bytes at `at` to `out`, as [`Spill::must_read_exact`] reads them.
    pub fn must_read(&self, at: u64, len: usize, out: &mut Vec<u8>) {
        let start = out.len();
        out.resize(start + len, 0);
        self.must_read_exact(at, &mut out[start..]);
    }

    /// Fills `out` with the bytes at `at`; they were appended by this server before, so failing
    /// to read them (a full or removed temp directory) leaves nothing true to answer.
    pub fn must_read_exact(&self, at: u64, out: &mut [u8]) {
        if let Err(e) = self.read_exact(at, out) {
            panic!("internal error: the server's spill file cannot be read: {e}");
        }
    }

    /// How many bytes of each of [`Holds::ALL`] were appended.
    pub fn held(&self) -> [(Holds, u64); HOLDS] {
        Holds::ALL.map(|h| (h, self.held[h.index()].load(Ordering::Relaxed)))
    }

    /// True when what it holds is in a file (else, in memory).
    pub fn in_file(&self) -> bool {
        self.file.is_some() && self.tail().failed.is_none()
    }

    /// How many bytes were appended.
    pub fn len(&self) -> u64 {
        self.written.load(Ordering::Acquire) + self.tail().bytes.len() as u64
    }

    /// True before anything was appended.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, at)
}

#[cfg(unix)]
fn read_at(file: &File, out: &mut [u8], at: u64) -> io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(out, at)
}

#[cfg(not(unix))]
fn write_at(file: &File, bytes: &[u8], at: u64) -> io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut f = file;
    f.seek(SeekFrom::Start(at))?;
    f.write_all(bytes)
}

#[cfg(not(unix))]
fn read_at(file: &File, out: &mut [u8], at: u64) -> io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    // Reads share the file's cursor: one at a time.
    static LOCK: Mutex<()> = Mutex::new(());
    let _one = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let mut f = file;
    f.seek(SeekFrom::Start(at))?;
    f.read_exact(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_file_is_told_by_what_it_holds() {
        let spill = Spill::memory();
        spill.append(&[0; 1500], Holds::Deltas);
        spill.append(&[0; 20], Holds::Whole);
        spill.append(&[0; 2_500_000], Holds::Rows);
        spill.append(&[0; 40], Holds::Deltas);
        let scratch = Scratch {
            in_file: spill.in_file(),
            held: spill.held(),
        };
        assert!(!scratch.in_file);
        assert_eq!(scratch.total(), spill.len());
        assert_eq!(
            scratch.to_string(),
            "2.5 MB: deltas 1.5 kB, rows 2.5 MB, snapshots 0 B, metadata 0 B, whole versions 20 B"
        );
        assert_eq!(size(999), "999 B");
        assert_eq!(size(401_400_000), "401 MB");
        assert_eq!(size(3_954_000_000), "4.0 GB");
        assert!(Spill::create().unwrap().in_file());
    }

    #[test]
    fn what_is_appended_reads_back_before_and_after_it_is_written() {
        let spill = Spill::create().unwrap();
        let mut places = Vec::new();
        // Enough to cross the buffer several times, in pieces of many sizes.
        for n in 0..3000usize {
            let bytes = vec![(n % 251) as u8; n % 1700];
            let at = spill.append(&bytes, Holds::Deltas);
            places.push((at, bytes));
            // Read back at once: from the buffer or the file.
            let (at, bytes) = &places[n / 2];
            let mut out = b"x".to_vec();
            spill.read(*at, bytes.len(), &mut out).unwrap();
            assert_eq!(&out[1..], bytes.as_slice(), "piece {}", n / 2);
        }
        assert!(spill.len() > 2 * BUFFER as u64);
        spill.flush().unwrap();
        for (at, bytes) in places.iter().rev() {
            let mut out = Vec::new();
            spill.read(*at, bytes.len(), &mut out).unwrap();
            assert_eq!(&out, bytes);
        }
        let mut out = Vec::new();
        assert!(spill.read(spill.len() - 1, 2, &mut out).is_err());
    }

    #[test]
    fn overwrites_read_back_across_the_written_part_and_the_buffer_and_without_a_file() {
        for spill in [Spill::create().unwrap(), Spill::memory()] {
            // With a file, the first BUFFER bytes are written and the next 40 buffered.
            spill.append(&vec![7u8; BUFFER], Holds::Rows);
            let at = spill.append(&[1u8; 40], Holds::Rows);
            assert_eq!(at, BUFFER as u64);
            // Over both.
            spill.overwrite(at - 20, &[2u8; 40]).unwrap();
            let mut out = Vec::new();
            spill.read(at - 25, 65, &mut out).unwrap();
            let want = [vec![7u8; 5], vec![2u8; 40], vec![1u8; 20]].concat();
            assert_eq!(out, want);
            assert!(spill.overwrite(spill.len() - 1, &[0, 0]).is_err());
            spill.flush().unwrap();
            spill.overwrite(at + 10, &[3u8; 5]).unwrap();
            let mut out = Vec::new();
            spill.read(at, 40, &mut out).unwrap();
            let want = [vec![2u8; 10], vec![3u8; 5], vec![2u8; 5], vec![1u8; 20]].concat();
            assert_eq!(out, want);
        }
    }

    #[cfg(unix)]
    #[test]
    fn the_file_leaves_no_name_behind() {
        let dir = std::env::temp_dir().join(format!("rf-spill-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spill = Spill::create_in(&dir).unwrap();
        spill.append(b"abc", Holds::Metadata);
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
