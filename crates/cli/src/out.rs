//! Standard output that a closed pipe (`| head`) does not turn into a verdict.
//!
//! When the reader of stdout goes away, the command goes on to its end and exits with the code
//! its own outcome decides (findings: 1), writing nothing more: an error there would end the run
//! early, and the exit code would then say what the pipe did, not what the recording holds.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set once a write to stdout met a closed pipe.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// True once stdout's reader went away: a command whose only product is its output may stop.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// A writer that, once a write meets a closed pipe, drops everything written after it.
#[derive(Debug)]
pub struct Quiet<W> {
    inner: W,
}

impl<W: Write> Quiet<W> {
    pub fn new(inner: W) -> Self {
        Quiet { inner }
    }

    fn guard(&mut self, len: usize, r: io::Result<usize>) -> io::Result<usize> {
        match r {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                CLOSED.store(true, Ordering::Relaxed);
                Ok(len)
            }
            r => r,
        }
    }
}

impl<W: Write> Write for Quiet<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if closed() {
            return Ok(buf.len());
        }
        let r = self.inner.write(buf);
        self.guard(buf.len(), r)
    }

    fn flush(&mut self) -> io::Result<()> {
        if closed() {
            return Ok(());
        }
        let r = self.inner.flush().map(|()| 0);
        self.guard(0, r).map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pipe {
        open_for: usize,
        got: Vec<u8>,
    }

    impl Write for Pipe {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.open_for == 0 {
                return Err(io::ErrorKind::BrokenPipe.into());
            }
            self.open_for -= 1;
            self.got.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_swallows_what_follows_and_other_errors_pass() {
        let mut q = Quiet::new(Pipe {
            open_for: 1,
            got: Vec::new(),
        });
        q.write_all(b"one").unwrap();
        q.write_all(b"two").unwrap();
        q.write_all(b"three").unwrap();
        q.flush().unwrap();
        assert_eq!(q.inner.got, b"one");
        assert!(closed());

        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut q = Quiet::new(Full);
        let r = q.guard(1, Full.write(b"x"));
        assert!(r.is_err(), "only a closed pipe is swallowed");
    }
}
