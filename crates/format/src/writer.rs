//! Writing recordings: a deflate sync flush at every flush, a new gzip member every few MiB.
//!
//! The deflate data is made by zlib-rs (a safe-API port of zlib-ng), with the gzip framing
//! (RFC 1952 header, CRC-32, ISIZE) written here; any gzip reader reads it. The reader goes
//! through flate2, whose backend is zlib-rs too. At the level used, zlib-rs gives a slightly
//! smaller file than flate2's default miniz_oxide backend for about half its CPU time, and
//! compression is most of what `record` spends per event.

use std::fmt;
use std::io::{self, Write};

use flate2::{Compression, Crc};
use zlib_rs::{Deflate, DeflateFlush, Status};

use crate::codec::{self, Body};
use crate::delta::{Bases, Encoder};
use crate::error::{Error, Result};
use crate::record::{Header, Record, Timestamp, Trailer};
use crate::{FORMAT_VERSION, MAGIC, MAX_FRAME_LEN};

enum State<W: Write> {
    /// Between members: nothing buffered.
    Idle(W),
    /// A member is open: its header is written, its deflate stream is in `Gz`.
    Open(W),
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
    gz: Gz,
    frame: Vec<u8>,
    records: u64,
    raw_bytes: u64,
    last_observed: Timestamp,
    /// Decompressed bytes in the open member.
    member_bytes: u64,
    /// Bytes were written that the underlying writer does not hold in decodable form yet (no
    /// flush and no member end since).
    pending: bool,
    /// The format version written.
    version: u32,
    /// From version 2: the base of each object, and the pieces of the last delta.
    bases: Bases,
    encoder: Encoder,
    pieces: Vec<u8>,
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

    /// The deflate level [`Writer::new`] uses: 1. Since version 2 writes most objects as deltas,
    /// deflate sees about a sixth of the bytes, and its level decides less of the size than of
    /// `record`'s CPU. On 20,000 records of a generated recording (callgrind), deflate took
    /// 24,600 instructions per record at level 4, 16,600 at level 2 and 9,600 at level 1, for
    /// 94, 112 and 138 bytes per record (level 7, whole objects as in version 1: 105,000 and
    /// 208). `record` pinned to one core took 12-15% less time per record at level 1 than at
    /// level 2, in three alternating pairs (46.0k/53.9k, 56.1k/64.1k, 48.3k/52.4k records/s
    /// from `serve --speed max`): the margin that keeps it above 50,000 records/s on one core.
    /// Files stay about two thirds the size of `gzip -6` of the same JSON lines.
    pub const LEVEL: Compression = Compression::new(1);

    /// Starts a recording: writes the magic, the version and `header` as the first gzip member,
    /// closes it and flushes. `header.format_version` is written as [`FORMAT_VERSION`]. The
    /// deflate level is [`Writer::LEVEL`].
    pub fn new(inner: W, header: &Header) -> Result<Self> {
        Self::with_level(inner, header, Self::LEVEL)
    }

    /// Like [`Writer::new`] with an explicit gzip level (levels above 9 are 9).
    pub fn with_level(inner: W, header: &Header, level: Compression) -> Result<Self> {
        Self::with_format(inner, header, level, FORMAT_VERSION)
    }

    /// Like [`Writer::with_level`], writing format `version`: any from 1 (every object whole,
    /// for readers older than version 2) to [`FORMAT_VERSION`]; anything else is
    /// [`Error::Encode`].
    pub fn with_format(
        inner: W,
        header: &Header,
        level: Compression,
        version: u32,
    ) -> Result<Self> {
        if version == 0 || version > FORMAT_VERSION {
            return Err(Error::Encode {
                what: "the preamble".to_owned(),
                detail: format!(
                    "format version {version}: this build writes versions 1 to {FORMAT_VERSION}"
                ),
            });
        }
        let mut writer = Writer {
            state: State::Idle(inner),
            gz: Gz::new(level),
            frame: Vec::with_capacity(4096),
            records: 0,
            raw_bytes: 0,
            last_observed: header.started_at,
            member_bytes: 0,
            pending: false,
            version,
            bases: Bases::default(),
            encoder: Encoder::default(),
            pieces: Vec::new(),
        };
        let mut preamble = Vec::with_capacity(12);
        preamble.extend_from_slice(&MAGIC);
        preamble.extend_from_slice(&version.to_le_bytes());
        writer.write_raw(&preamble)?;
        let header = Header {
            format_version: version,
            ..header.clone()
        };
        writer.write_frame("header", &header)?;
        writer.close_member()?;
        writer.flush()?;
        Ok(writer)
    }

    /// Appends one record. It reaches the underlying writer in decodable form at the next flush
    /// at the latest. Closes the member if it has reached [`MEMBER_LIMIT`](Writer::MEMBER_LIMIT).
    ///
    /// From version 2, an object whose kind, namespace and name have a base (the object of an
    /// earlier record, docs/format.md) is written as the pieces that rebuild it from the base,
    /// when they are shorter than the object.
    pub fn write(&mut self, record: &Record) -> Result<()> {
        let what = format!("record {}", self.records + 1);
        let version = self.version;
        let mut pieces = std::mem::take(&mut self.pieces);
        let mut body = Body::Full(&record.object);
        // A record without an object (a marker) changes no base.
        let found = (version >= 2 && !record.object.is_empty()).then(|| self.bases.find(record));
        if let Some(found) = &found {
            if let Some(base) = self.bases.base(found) {
                self.encoder.encode(base, &record.object, &mut pieces);
                if pieces.len() < record.object.len() {
                    body = Body::Delta(&pieces);
                }
            }
        }
        let result = self.write_frame_with(&what, |out| {
            codec::encode_record(record, body, version, out)
        });
        self.pieces = pieces;
        result?;
        if let Some(found) = found {
            self.bases.after_found(record, found);
        }
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
            State::Open(w) if self.pending => self
                .gz
                .deflate(w, &[], DeflateFlush::SyncFlush)
                .and_then(|()| w.flush()),
            State::Open(w) => w.flush(),
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
            State::Open(w) => Some(w),
            State::Poisoned => None,
        }
    }

    /// Closes the open member, if any: the final deflate block, the CRC-32 and ISIZE go to the
    /// underlying writer (which is not flushed).
    fn close_member(&mut self) -> Result<()> {
        let offset = self.raw_bytes;
        match std::mem::replace(&mut self.state, State::Poisoned) {
            State::Idle(w) => self.state = State::Idle(w),
            State::Open(mut w) => {
                self.gz
                    .finish(&mut w)
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
        self.write_frame_with(what, |out| codec::encode_into(value, out))
    }

    /// Writes one frame whose value `encode` appends to the buffer it is given.
    fn write_frame_with(
        &mut self,
        what: &str,
        encode: impl FnOnce(&mut Vec<u8>) -> std::result::Result<(), String>,
    ) -> Result<()> {
        self.frame.clear();
        self.frame.extend_from_slice(&[0; 4]);
        encode(&mut self.frame).map_err(|detail| Error::Encode {
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
        let mut w = match state {
            State::Idle(mut w) => {
                self.gz
                    .begin(&mut w)
                    .map_err(|source| Error::Io { offset, source })?;
                w
            }
            State::Open(w) => w,
            State::Poisoned => return Err(Error::Poisoned),
        };
        self.gz
            .deflate(&mut w, bytes, DeflateFlush::NoFlush)
            .map_err(|source| Error::Io { offset, source })?;
        self.state = State::Open(w);
        self.raw_bytes += bytes.len() as u64;
        self.member_bytes += bytes.len() as u64;
        self.pending = true;
        Ok(())
    }
}

/// One gzip member at a time: the header, raw deflate data, the CRC-32 and ISIZE trailer. The
/// compressor and its output buffer are kept from one member to the next.
struct Gz {
    deflate: Deflate,
    /// The XFL byte of the header (RFC 1952): 2 for the slowest level, 4 for the fastest.
    xfl: u8,
    crc: Crc,
    out: Box<[u8]>,
}

impl Gz {
    /// Output buffer size: deflate hands over what it has when the buffer is full.
    const OUT: usize = 64 * 1024;

    fn new(level: Compression) -> Self {
        Self::with_buffer(level, Self::OUT)
    }

    fn with_buffer(level: Compression, out: usize) -> Self {
        // zlib-rs takes levels 0 to 9; 9 is flate2's `best`.
        let level = level.level().min(9);
        let xfl = match level {
            9 => 2,
            0 | 1 => 4,
            _ => 0,
        };
        Gz {
            // A raw deflate stream (negative window bits) with a 32 KiB window; the gzip framing
            // is written here.
            deflate: Deflate::new(level as i32, false, 15),
            xfl,
            crc: Crc::new(),
            // zlib asks for more than six bytes of room at a sync flush, or a flush that fills
            // the buffer exactly adds another flush marker each time round.
            out: vec![0; out.max(64)].into_boxed_slice(),
        }
    }

    /// Starts a member: its header (no name, no time, OS unknown).
    fn begin<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.deflate.reset();
        self.crc.reset();
        w.write_all(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, self.xfl, 0xff])
    }

    /// Compresses `input` into the open member, then does `flush`: `SyncFlush` ends with an
    /// empty stored block, `Finish` ends the deflate stream.
    fn deflate<W: Write>(
        &mut self,
        w: &mut W,
        input: &[u8],
        flush: DeflateFlush,
    ) -> io::Result<()> {
        self.crc.update(input);
        let mut rest = input;
        loop {
            let (in0, out0) = (self.deflate.total_in(), self.deflate.total_out());
            let status = self
                .deflate
                .compress(rest, &mut self.out, flush)
                .map_err(|e| io::Error::other(format!("deflate: {}", e.as_str())))?;
            let used = usize::try_from(self.deflate.total_in() - in0).unwrap_or(usize::MAX);
            let made = usize::try_from(self.deflate.total_out() - out0).unwrap_or(usize::MAX);
            let (Some(next), Some(produced)) = (rest.get(used..), self.out.get(..made)) else {
                return Err(io::Error::other(
                    "deflate reported more bytes than it was given",
                ));
            };
            rest = next;
            w.write_all(produced)?;
            let done = match flush {
                DeflateFlush::NoFlush => rest.is_empty(),
                DeflateFlush::Finish => status == Status::StreamEnd,
                // With room left in the buffer, everything pending was handed over.
                _ => rest.is_empty() && made < self.out.len(),
            };
            if done {
                return Ok(());
            }
            if used == 0 && made == 0 {
                // A flush that found the buffer exactly full last time has nothing left to do.
                if rest.is_empty() && flush != DeflateFlush::Finish {
                    return Ok(());
                }
                return Err(io::Error::other("deflate made no progress"));
            }
        }
    }

    /// Ends the member: the last deflate block, the CRC-32 and ISIZE.
    fn finish<W: Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.deflate(w, &[], DeflateFlush::Finish)?;
        w.write_all(&self.crc.sum().to_le_bytes())?;
        w.write_all(&self.crc.amount().to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::io::Read;

    use super::*;

    /// Compresses `chunks` with an output buffer of `out` bytes, a sync flush after each chunk,
    /// into one member.
    fn member(level: u32, out: usize, chunks: &[Vec<u8>]) -> (Vec<u8>, Vec<usize>) {
        let mut gz = Gz::with_buffer(Compression::new(level), out);
        let mut w = Vec::new();
        let mut flushes = Vec::new();
        gz.begin(&mut w).unwrap();
        for c in chunks {
            gz.deflate(&mut w, c, DeflateFlush::NoFlush).unwrap();
            gz.deflate(&mut w, &[], DeflateFlush::SyncFlush).unwrap();
            flushes.push(w.len());
        }
        gz.finish(&mut w).unwrap();
        (w, flushes)
    }

    /// An output buffer far smaller than what deflate has to hand over, at every step: the loop
    /// must go round until all of it is out, for plain input, sync flushes and the member end.
    #[test]
    fn a_tiny_output_buffer_still_gives_a_whole_member_and_whole_flushes() {
        let text: Vec<u8> = (0..3_000u32)
            .flat_map(|i| format!("{{\"n\":{}}}", i % 977).into_bytes())
            .collect();
        let mut n = 7u64;
        let noise: Vec<u8> = (0..5_000)
            .map(|_| {
                n ^= n << 13;
                n ^= n >> 7;
                n ^= n << 17;
                (n >> 56) as u8
            })
            .collect();
        let chunks = vec![
            text.clone(),
            noise.clone(),
            Vec::new(),
            text[..100].to_vec(),
        ];
        let all: Vec<u8> = chunks.concat();
        for level in [0, 1, 7, 9] {
            for out in [64, 300, 65_536] {
                let (bytes, flushes) = member(level, out, &chunks);
                let mut back = Vec::new();
                flate2::read::GzDecoder::new(&bytes[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert!(back == all, "level {level}, buffer {out}");
                // A member ended with no sync flush before: the end hands over everything.
                let mut gz = Gz::with_buffer(Compression::new(level), out);
                let mut unflushed = Vec::new();
                gz.begin(&mut unflushed).unwrap();
                gz.deflate(&mut unflushed, &all, DeflateFlush::NoFlush)
                    .unwrap();
                gz.finish(&mut unflushed).unwrap();
                let mut back = Vec::new();
                flate2::read::GzDecoder::new(&unflushed[..])
                    .read_to_end(&mut back)
                    .unwrap();
                assert!(back == all, "level {level}, buffer {out}, one block");
                // Each flush point holds every byte before it.
                let mut upto = 0;
                for (flush, chunk) in flushes.iter().zip(&chunks) {
                    upto += chunk.len();
                    assert!(bytes[..*flush].ends_with(&[0, 0, 0xff, 0xff]));
                    let mut part = Vec::new();
                    let mut d = flate2::read::GzDecoder::new(&bytes[..*flush]);
                    let _ = d.read_to_end(&mut part);
                    assert!(
                        part == all[..upto],
                        "level {level}, buffer {out}, at {upto}"
                    );
                }
            }
        }
    }
}
