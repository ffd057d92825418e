//! The writer thread: records arrive over a bounded channel, get their seq, and are written with
//! a gzip member closed at every flush interval and at each list end.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use rf_format::{Header, Kind, Op, Record, Timestamp, Writer};
use tokio::sync::mpsc;

use crate::clock::now;
use crate::error::{Error, Result};

/// A record before the writer numbers it.
#[derive(Debug)]
pub(crate) struct Draft {
    pub observed_at: Timestamp,
    pub kind: Kind,
    pub op: Op,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub object: Vec<u8>,
}

/// Counters the writer keeps, read by the status line.
#[derive(Debug, Default)]
pub struct Written {
    /// Records written.
    pub records: AtomicU64,
    /// Compressed bytes written.
    pub bytes: AtomicU64,
}

/// Counts compressed bytes on their way to the file.
struct Counting<W> {
    inner: W,
    written: Arc<Written>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written.bytes.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Sees every record as it is written, in file order, and the close: how `record --live`
/// analyzes while recording, with the same records `analyze` will read from the file.
pub trait Tap: Send {
    /// The recording begins with this header.
    fn begin(&mut self, _header: &Header) {}
    /// A record was written.
    fn record(&mut self, record: &Record);
    /// The recording was closed cleanly at `closed_at`.
    fn closed(&mut self, closed_at: Timestamp);
}

/// What the writer thread is sent.
// Nearly every message is a record: boxing it would cost an allocation per record.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(crate) enum Message {
    /// A record to write.
    Record(Draft),
    /// Close the current gzip member (sent every flush interval).
    Flush,
    /// Stop without the trailer: the recording is not complete.
    Abort,
}

pub(crate) struct Sink {
    pub tx: mpsc::Sender<Message>,
    pub handle: JoinHandle<Result<()>>,
    pub written: Arc<Written>,
}

/// Starts the writer thread. It ends when every sender is dropped: it then writes the trailer
/// (closed now) and closes the file.
pub(crate) fn start<W: Write + Send + 'static>(
    output: W,
    header: &Header,
    capacity: usize,
    mut tap: Option<Box<dyn Tap>>,
) -> Result<Sink> {
    let written = Arc::new(Written::default());
    let counting = Counting {
        inner: output,
        written: Arc::clone(&written),
    };
    let mut writer = Writer::new(counting, header).map_err(Error::Write)?;
    if let Some(tap) = tap.as_mut() {
        tap.begin(header);
    }
    let (tx, mut rx) = mpsc::channel::<Message>(capacity);
    let w = Arc::clone(&written);
    let handle = std::thread::Builder::new()
        .name("rf-writer".to_owned())
        .spawn(move || -> Result<()> {
            let mut seq = 0u64;
            let mut last_at = Timestamp(i64::MIN);
            let mut dirty = false;
            while let Some(message) = rx.blocking_recv() {
                let d = match message {
                    Message::Abort => {
                        writer.flush().map_err(Error::Write)?;
                        return Ok(());
                    }
                    Message::Flush => {
                        if dirty {
                            writer.flush().map_err(Error::Write)?;
                            dirty = false;
                        }
                        continue;
                    }
                    Message::Record(d) => d,
                };
                seq += 1;
                // Several watchers stamp their own receive times: keep the file in order.
                let observed_at = d.observed_at.max(last_at);
                last_at = observed_at;
                let list_end = d.op == Op::ListEnd;
                let record = Record {
                    seq,
                    observed_at,
                    kind: d.kind,
                    op: d.op,
                    namespace: d.namespace,
                    name: d.name,
                    uid: d.uid,
                    resource_version: d.resource_version,
                    actor: None,
                    object: d.object,
                };
                writer.write(&record).map_err(Error::Write)?;
                if let Some(tap) = tap.as_mut() {
                    tap.record(&record);
                }
                w.records.fetch_add(1, Ordering::Relaxed);
                dirty = true;
                if list_end {
                    writer.flush().map_err(Error::Write)?;
                    dirty = false;
                }
            }
            let closed_at = now().max(last_at);
            let mut out = writer.finish_at(closed_at).map_err(Error::Write)?;
            out.flush().map_err(|e| {
                Error::Write(rf_format::Error::Io {
                    offset: 0,
                    source: e,
                })
            })?;
            if let Some(tap) = tap.as_mut() {
                tap.closed(closed_at);
            }
            Ok(())
        })
        .map_err(Error::Thread)?;
    Ok(Sink {
        tx,
        handle,
        written,
    })
}
