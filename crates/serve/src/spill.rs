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

/// An append-only file of byte strings, read back by position.
pub struct Spill {
    file: File,
    /// How many bytes of the file are written (everything before this offset is readable with
    /// `pread`, without the lock).
    written: AtomicU64,
    /// The bytes appended after `written`, not yet written.
    tail: Mutex<Vec<u8>>,
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
        Ok(Arc::new(Spill {
            file,
            written: AtomicU64::new(0),
            tail: Mutex::new(Vec::with_capacity(BUFFER)),
        }))
    }

    /// A new spill file in the temp directory.
    pub fn create() -> io::Result<Arc<Spill>> {
        Spill::create_in(&std::env::temp_dir())
    }

    fn tail(&self) -> MutexGuard<'_, Vec<u8>> {
        // A panic while the lock was held left the bytes as they were: still usable.
        self.tail.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends `bytes`; returns where they start.
    pub fn append(&self, bytes: &[u8]) -> io::Result<u64> {
        let mut tail = self.tail();
        let at = self.written.load(Ordering::Acquire) + tail.len() as u64;
        tail.extend_from_slice(bytes);
        if tail.len() >= BUFFER {
            self.write_tail(&mut tail)?;
        }
        Ok(at)
    }

    fn write_tail(&self, tail: &mut Vec<u8>) -> io::Result<()> {
        let at = self.written.load(Ordering::Acquire);
        write_at(&self.file, tail, at)?;
        self.written
            .store(at + tail.len() as u64, Ordering::Release);
        tail.clear();
        Ok(())
    }

    /// Writes what is buffered, so every later read is a `pread` without the lock.
    pub fn flush(&self) -> io::Result<()> {
        let mut tail = self.tail();
        if tail.is_empty() {
            return Ok(());
        }
        self.write_tail(&mut tail)?;
        tail.shrink_to(0);
        Ok(())
    }

    /// Appends the `len` bytes at `at` to `out`.
    pub fn read(&self, at: u64, len: usize, out: &mut Vec<u8>) -> io::Result<()> {
        let start = out.len();
        out.resize(start + len, 0);
        let end = at + len as u64;
        if end <= self.written.load(Ordering::Acquire) {
            return read_at(&self.file, &mut out[start..], at);
        }
        let tail = self.tail();
        let written = self.written.load(Ordering::Acquire);
        if at >= written {
            let from = usize::try_from(at - written).map_err(io::Error::other)?;
            match tail.get(from..from + len) {
                Some(b) => out[start..].copy_from_slice(b),
                None => return Err(io::Error::other("read past the end of the spill file")),
            }
            return Ok(());
        }
        drop(tail);
        read_at(&self.file, &mut out[start..], at)
    }

    /// How many bytes were appended.
    pub fn len(&self) -> u64 {
        self.written.load(Ordering::Acquire) + self.tail().len() as u64
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
    fn what_is_appended_reads_back_before_and_after_it_is_written() {
        let spill = Spill::create().unwrap();
        let mut places = Vec::new();
        // Enough to cross the buffer several times, in pieces of many sizes.
        for n in 0..3000usize {
            let bytes = vec![(n % 251) as u8; n % 1700];
            let at = spill.append(&bytes).unwrap();
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

    #[cfg(unix)]
    #[test]
    fn the_file_leaves_no_name_behind() {
        let dir = std::env::temp_dir().join(format!("rf-spill-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spill = Spill::create_in(&dir).unwrap();
        spill.append(b"abc").unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir(&dir).unwrap();
    }
}
