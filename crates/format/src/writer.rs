//! Writing recordings: a deflate sync flush at every flush, a new gzip member every few MiB.

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
/// Each [`flush`](Writer::flush) ends the deflate data written so far with a sync flush (an
/// empty stored block, `00 00 ff ff`) without closing the gzip member, and flushes the
/// underlying writer: a process killed after a flush leaves every record written before it
/// readable, while the deflate dictionary carries over from one flush to the next. A member is
/// closed (deflate end, CRC-32, ISIZE) after the header, once it holds
/// [`MEMBER_LIMIT`](Writer::MEMBER_LIMIT) decompressed bytes, and at [`finish`](Writer::finish),
/// which also writes the end-of-recording marker; a file without it is read as complete up to
/// its last flush and reported as not closed cleanly.
pub struct Writer<W: Write> {
    state: State<W>,
    level: Compression,
    frame: Vec<u8>,
    records: u64,
    raw_bytes: u64,
    last_observed: Timestamp,
    /// Decompressed bytes in the open member.
    member_bytes: u64,
    /// Bytes were written that the underlying writer does not hold in decodable form yet (no
    /// flush and no member end since).
    pending: bool,
}

impl<W: Write> fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Writer")
            .field("records", &self.records)
            .field("raw_bytes", &self.raw_bytes)
            .field("member_bytes", &self.member_bytes)
            .finish_non_exhaustive()
    }
}

impl<W: Write> Writer<W> {
    /// A gzip member is closed after the record that brings its decompressed size to this many
    /// bytes (8 MiB). Each new member starts with an empty deflate dictionary, which cost about
    /// 2 KiB of compressed output per member on a busy recording (1 % at 4 MiB, 0.5 % at 8 MiB);
    /// members bound how much is decoded before a CRC-32 check and how much one damaged byte
    /// makes unreadable to tools that skip to the next member.
    pub const MEMBER_LIMIT: u64 = 8 * 1024 * 1024;

    /// The deflate level [`Writer::new`] uses: 7. Every flush ends a deflate block, so a
    /// recording flushed every second pays a new block header per second; level 7 wins back
    /// about 1 % of the file for about 10 % more compression time than level 6.
    pub const LEVEL: Compression = Compression::new(7);

    /// Starts a recording: writes the magic, the version and `header` as the first gzip member,
    /// closes it and flushes. `header.format_version` is written as [`FORMAT_VERSION`]. The
    /// deflate level is [`Writer::LEVEL`].
    pub fn new(inner: W, header: &Header) -> Result<Self> {
        Self::with_level(inner, header, Self::LEVEL)
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
            member_bytes: 0,
            pending: false,
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
        writer.close_member()?;
        writer.flush()?;
        Ok(writer)
    }

    /// Appends one record. It reaches the underlying writer in decodable form at the next flush
    /// at the latest. Closes the member if it has reached [`MEMBER_LIMIT`](Writer::MEMBER_LIMIT).
    pub fn write(&mut self, record: &Record) -> Result<()> {
        let what = format!("record {}", self.records + 1);
        self.write_frame(&what, record)?;
        self.records += 1;
        self.last_observed = self.last_observed.max(record.observed_at);
        if self.member_bytes >= Self::MEMBER_LIMIT {
            self.close_member()?;
        }
        Ok(())
    }

    /// Makes every record written so far decodable from the underlying writer and flushes it: a
    /// deflate sync flush of the open member (which stays open), then the underlying writer's
    /// `flush`, called exactly once.
    pub fn flush(&mut self) -> Result<()> {
        let offset = self.raw_bytes;
        let result = match &mut self.state {
            State::Idle(w) => w.flush(),
            // A sync flush with nothing new would add an empty stored block.
            State::Open(enc) if self.pending => enc.flush(),
            State::Open(enc) => enc.get_mut().flush(),
            State::Poisoned => return Err(Error::Poisoned),
        };
        if let Err(source) = result {
            self.state = State::Poisoned;
            return Err(Error::Io { offset, source });
        }
        self.pending = false;
        Ok(())
    }

    /// Closes the recording as of its last record: see [`finish_at`](Writer::finish_at).
    pub fn finish(self) -> Result<W> {
        let at = self.last_observed;
        self.finish_at(at)
    }

    /// Writes the end-of-recording marker and the [`Trailer`] saying recording stopped at
    /// `closed_at` (never earlier than the last record), closes the last member, flushes and
    /// returns the writer.
    pub fn finish_at(mut self, closed_at: Timestamp) -> Result<W> {
        self.write_raw(&0u32.to_le_bytes())?;
        let trailer = Trailer {
            closed_at: closed_at.max(self.last_observed),
            records: self.records,
        };
        self.write_frame("trailer", &trailer)?;
        self.close_member()?;
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

    /// The underlying writer, when it holds everything written so far in decodable form: right
    /// after [`new`](Writer::new) or a [`flush`](Writer::flush) (then it ends at a sync-flush
    /// point or a member end), or after a `write` that closed a member. `None` while records
    /// written since wait for the next flush.
    pub fn get_ref(&self) -> Option<&W> {
        match &self.state {
            _ if self.pending => None,
            State::Idle(w) => Some(w),
            State::Open(enc) => Some(enc.get_ref()),
            State::Poisoned => None,
        }
    }

    /// Closes the open member, if any: the final deflate block, the CRC-32 and ISIZE go to the
    /// underlying writer (which is not flushed).
    fn close_member(&mut self) -> Result<()> {
        let offset = self.raw_bytes;
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Idle(w) => self.state = State::Idle(w),
            State::Open(enc) => {
                let w = enc
                    .finish()
                    .map_err(|source| Error::Io { offset, source })?;
                self.state = State::Idle(w);
            }
            State::Poisoned => return Err(Error::Poisoned),
        }
        self.member_bytes = 0;
        self.pending = false;
        Ok(())
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
        self.member_bytes += bytes.len() as u64;
        self.pending = true;
        Ok(())
    }
}
