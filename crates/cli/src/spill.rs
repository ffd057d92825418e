//! Where a long history's packed findings go once memory holds enough of them: a temporary
//! file, unlinked as soon as it is opened, so nothing is left behind however the process ends.
//! The analyzer crate opens no file; this is the [`Spill`] the command line gives it.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use rf_analyzer::{Analyzer, Options, Spill};

/// An analyzer with `options` whose packed findings spill to a temporary file in the system's
/// temporary directory (`TMPDIR`); where no file can be made, they stay in memory.
pub fn analyzer(options: Options) -> Analyzer {
    Analyzer::new(options).spill_findings_to(Box::new(TempSpill::new(std::env::temp_dir())))
}

/// An unlinked temporary file, made at the first chunk that needs it.
#[derive(Debug)]
pub struct TempSpill {
    state: State,
}

#[derive(Debug)]
enum State {
    /// None made yet; it will be made in this directory.
    Unopened(PathBuf),
    /// Open (and already unlinked), written up to `end`.
    Open { file: File, end: u64 },
    /// None could be made: chunks stay in memory.
    Unavailable,
}

impl TempSpill {
    /// A spill whose file, when one is needed, is made in `dir`.
    pub fn new(dir: PathBuf) -> Self {
        TempSpill {
            state: State::Unopened(dir),
        }
    }
}

impl Spill for TempSpill {
    /// A file that cannot be made is not tried again; one that cannot be written to (a full
    /// disk) is kept, with the chunks already in it.
    fn append(&mut self, bytes: &[u8]) -> Option<u64> {
        if let State::Unopened(dir) = &self.state {
            self.state = match open_unlinked(dir) {
                Some(file) => State::Open { file, end: 0 },
                None => State::Unavailable,
            };
        }
        let State::Open { file, end } = &mut self.state else {
            return None;
        };
        let offset = *end;
        write_at(file, bytes, offset).ok()?;
        *end += bytes.len() as u64;
        Some(offset)
    }

    fn read(&self, offset: u64, len: u64) -> Box<dyn Read + Send + '_> {
        match &self.state {
            State::Open { file, .. } => Box::new(FileRange {
                file,
                offset,
                left: len,
            }),
            // Nothing was kept: reads as empty, and the count check says findings were lost.
            _ => Box::new(std::io::empty()),
        }
    }

    fn clear(&mut self) {
        if let State::Open { file, end } = &mut self.state {
            if file.set_len(0).is_ok() {
                *end = 0;
            }
        }
    }
}

/// A new file in `dir`, removed from the directory at once: the open handle keeps it, and the
/// system reclaims it when the process ends, however it ends.
#[cfg(unix)]
fn open_unlinked(dir: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..8 {
        let path = dir.join(format!(
            ".rollout-forensics-findings-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            // Only this user may open it in the moment before it is unlinked.
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                return std::fs::remove_file(&path).is_ok().then_some(file);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
    }
    None
}

/// Elsewhere a file cannot be unlinked while open: chunks stay in memory.
#[cfg(not(unix))]
fn open_unlinked(_dir: &Path) -> Option<File> {
    None
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_at(_file: &File, _bytes: &[u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Reads `left` bytes from `offset` of a file, with its own position (the file's is shared:
/// the findings are decoded on one thread while another may read too).
struct FileRange<'a> {
    file: &'a File,
    offset: u64,
    left: u64,
}

impl Read for FileRange<'_> {
    #[cfg(unix)]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = std::os::unix::fs::FileExt::read_at(self.file, &mut buf[..want], self.offset)?;
        self.offset += n as u64;
        self.left -= n as u64;
        Ok(n)
    }

    #[cfg(not(unix))]
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("rf-spill-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn chunks_read_back_from_a_file_that_was_unlinked_when_opened() {
        let dir = dir("unlinked");
        let mut spill = TempSpill::new(dir.clone());
        let a = spill.append(b"first chunk").unwrap();
        let b = spill.append(b"second").unwrap();
        assert_eq!((a, b), (0, 11));
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "the file was unlinked when opened"
        );
        let mut read = String::new();
        spill.read(b, 6).read_to_string(&mut read).unwrap();
        assert_eq!(read, "second");
        read.clear();
        spill.read(a, 5).read_to_string(&mut read).unwrap();
        assert_eq!(read, "first");
        spill.clear();
        assert_eq!(
            spill.append(b"again").unwrap(),
            0,
            "cleared, written from the start"
        );
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn without_a_directory_nothing_is_kept() {
        let nowhere = std::env::temp_dir().join("rf-spill-no-such-dir/below");
        let mut spill = TempSpill::new(nowhere);
        assert_eq!(spill.append(b"chunk"), None);
        assert_eq!(spill.append(b"chunk"), None, "not tried again");
    }
}
