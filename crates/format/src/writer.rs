//! Writing recordings: one gzip member per flush.

use std::fmt;
use std::io::Write;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::codec;
use crate::error::{Error, Result};
use crate::record::{Header, Record, Timestamp, Trailer};
use crate::{FORMAT_VERSION, MAGIC, MAX_FRAME_LEN};

enum State<W: Write> {
    /// Between members: nothing buffered.
    Idle(W),
    /// A member is open.
    Open(GzEncoder<W>),
    /// An earlier error; the output is incomplete.
    Poisoned,
}

/// Writes a recording to any [`Write`].
///
/// Each [`flush`](Writer::flush) closes the current gzip member and flushes the underlying writer,
/// so a process killed after a flush leaves every record written before it readable.
/// [`finish`](Writer::finish) writes the end-of-recording marker; a file without it is read as
/// complete up to its last whole record and reported as not closed cleanly.
pub struct Writer<W: Write> {
    state: State<W>,
    level: Compression,
    frame: Vec<u8>,
    records: u64,
    raw_bytes: u64,
    last_observed: Timestamp,
}

impl<W: Write> fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("records", &self.records)
            .field("raw_bytes", &self.raw_bytes)
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// Starts a recording: writes the magic, the version and `header`, and flushes them as the
    /// first gzip member. `header.format_version` is written as [`FORMAT_VERSION`].
    pub fn new(inner: W, header: &Header) -> Result<Self> {
        Self::with_level(inner, header, Compression::default())
    }

    /// Like [`Writer::new`] with an explicit gzip level.
    pub fn with_level(inner: W, header: &Header, level: Compression) -> Result<Self> {
        let mut writer = Writer {
            state: State::Idle(inner),
            level,
            frame: Vec::with_capacity(4096),
            records: 0,
            raw_bytes: 0,
            last_observed: header.started_at,
        };
        let mut preamble = Vec::with_capacity(12);
        preamble.extend_from_slice(&MAGIC);
        preamble.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        writer.write_raw(&preamble)?;
        let header = Header {
            format_version: FORMAT_VERSION,
            ..header.clone()
        };
        writer.write_frame("header", &header)?;
        writer.flush()?;
        Ok(writer)
    }

    /// Appends one record. It reaches the underlying writer at the next flush at the latest.
    pub fn write(&mut self, record: &Record) -> Result<()> {
        let what = format!("record {}", self.records + 1);
        self.write_frame(&what, record)?;
        self.records += 1;
        self.last_observed = self.last_observed.max(record.observed_at);
        Ok(())
    }

    /// Closes the current gzip member (if any) and flushes the underlying writer.
    pub fn flush(&mut self) -> Result<()> {
        let offset = self.raw_bytes;
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Idle(mut w) => {
                w.flush().map_err(|source| Error::Io { offset, source })?;
                self.state = State::Idle(w);
            }
            State::Open(enc) => {
                let mut w = enc
                    .finish()
                    .map_err(|source| Error::Io { offset, source })?;
                w.flush().map_err(|source| Error::Io { offset, source })?;
                self.state = State::Idle(w);
            }
            State::Poisoned => return Err(Error::Poisoned),
        }
        Ok(())
    }

    /// Closes the recording as of its last record: see [`finish_at`](Writer::finish_at).
    pub fn finish(self) -> Result<W> {
        let at = self.last_observed;
        self.finish_at(at)
    }

    /// Writes the end-of-recording marker and the [`Trailer`] saying recording stopped at
    /// `closed_at` (never earlier than the last record), closes the last member and returns the
    /// writer.
    pub fn finish_at(mut self, closed_at: Timestamp) -> Result<W> {
        self.write_raw(&0u32.to_le_bytes())?;
        let trailer = Trailer {
            closed_at: closed_at.max(self.last_observed),
            records: self.records,
        };
        self.write_frame("trailer", &trailer)?;
        self.flush()?;
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Idle(w) => Ok(w),
            _ => Err(Error::Poisoned),
        }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Decompressed bytes written so far.
    pub fn raw_bytes(&self) -> u64 {
        self.raw_bytes
    }

    /// The underlying writer, when no member is open (right after a flush).
    pub fn get_ref(&self) -> Option<&W> {
        match &self.state {
            State::Idle(w) => Some(w),
            _ => None,
        }
    }

    fn write_frame<T: serde::Serialize>(&mut self, what: &str, value: &T) -> Result<()> {
        self.frame.clear();
        self.frame.extend_from_slice(&[0; 4]);
        codec::encode_into(value, &mut self.frame).map_err(|detail| Error::Encode {
            what: what.to_owned(),
            detail,
        })?;
        let len = self.frame.len() - 4;
        if len > MAX_FRAME_LEN as usize {
            return Err(Error::FrameTooLarge {
                what: what.to_owned(),
                offset: self.raw_bytes,
                len: len as u64,
                limit: MAX_FRAME_LEN,
            });
        }
        // `len` fits: it is at most MAX_FRAME_LEN.
        self.frame[..4].copy_from_slice(&(len as u32).to_le_bytes());
        let frame = std::mem::take(&mut self.frame);
        let result = self.write_raw(&frame);
        self.frame = frame;
        result
    }

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        let offset = self.raw_bytes;
        let state = std::mem::replace(&mut self.state, State::Poisoned);
        let mut enc = match state {
            State::Idle(w) => GzEncoder::new(w, self.level),
            State::Open(enc) => enc,
            State::Poisoned => return Err(Error::Poisoned),
        };
        enc.write_all(bytes)
            .map_err(|source| Error::Io { offset, source })?;
        self.state = State::Open(enc);
        self.raw_bytes += bytes.len() as u64;
        Ok(())
    }
}
