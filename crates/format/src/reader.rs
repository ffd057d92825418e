//! Reading recordings as a stream of records.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

use crate::codec::{self, Body};
use crate::delta::{self, Bases};
use crate::error::{Error, Result};
use crate::record::{Header, Kind, Record, Trailer};
use crate::{FORMAT_VERSION, MAGIC, MAX_FRAME_LEN};

/// How the stream ended, once the reader has reached its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The end-of-recording marker and its trailer were read: the writer closed the file.
    Closed,
    /// The file ended at a flush point (a gzip member's end, or a verified deflate sync flush
    /// inside an open member), between two frames, without the marker: the writer was killed
    /// after a flush, or is still writing. Every record is complete.
    Unclosed,
}

enum State {
    Reading,
    Ended(End),
    Failed,
}

/// Reads a recording from any [`Read`]: first the [`Header`], then records as an iterator.
///
/// After an error the iterator yields nothing more; every record yielded before it is complete.
pub struct Reader<R: Read> {
    src: Gzip<BufReader<R>>,
    header: Header,
    version: u32,
    offset: u64,
    records: u64,
    state: State,
    buf: Vec<u8>,
    trailer: Option<Trailer>,
    objects: Objects,
}

/// What makes a record's object from its decoded body.
#[derive(Debug)]
struct Objects {
    /// From version 2: the base of each object, for the delta bodies of its next records.
    bases: Bases,
    /// The kinds whose objects are read ([`Reader::objects_of`]).
    wanted: fn(&Kind) -> bool,
    /// The kinds whose listed objects are read when their body is whole, though `wanted`
    /// refuses the kind ([`Reader::listed_objects_of`]).
    listed: fn(&Kind) -> bool,
    /// The last record's delta body, when kept ([`Reader::keep_deltas`]).
    delta: Option<Delta>,
}

/// A delta body's pieces, kept for [`Reader::delta`].
#[derive(Debug, Default)]
struct Delta {
    pieces: Vec<u8>,
    /// Whether the last record read had a delta body (its pieces are the ones above).
    last: bool,
}

impl<R: Read> fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("version", &self.version)
            .field("offset", &self.offset)
            .field("records", &self.records)
            .finish_non_exhaustive()
    }
}

impl<R: Read> Reader<R> {
    /// Checks that `inner` is a recording and reads its header.
    pub fn new(inner: R) -> Result<Self> {
        let mut buffered = BufReader::with_capacity(64 * 1024, inner);
        let head = buffered
            .fill_buf()
            .map_err(|source| Error::Io { offset: 0, source })?;
        if head.is_empty() {
            return Err(Error::NotARecording("the input is empty".to_owned()));
        }
        if head[0] != 0x1f || head.get(1).is_some_and(|&b| b != 0x8b) {
            return Err(Error::NotARecording(format!(
                "the input is not gzip-compressed (at byte 0 it starts with {})",
                hex_prefix(head)
            )));
        }
        let mut reader = Reader {
            src: Gzip::new(buffered),
            header: Header::new("", crate::Timestamp(0), crate::Source::default()),
            version: 0,
            offset: 0,
            records: 0,
            state: State::Reading,
            buf: Vec::new(),
            trailer: None,
            objects: Objects {
                bases: Bases::default(),
                wanted: |_| true,
                listed: |_| false,
                delta: None,
            },
        };
        let mut preamble = [0u8; 12];
        let got = reader.read_fully(&mut preamble, "the preamble")?;
        if got < MAGIC.len() || preamble[..MAGIC.len()] != MAGIC {
            return Err(Error::NotARecording(format!(
                "gzip data without the rollout-forensics magic (at byte 0 it starts with {})",
                hex_prefix(&preamble[..got])
            )));
        }
        if got < preamble.len() {
            return Err(Error::Truncated {
                what: "the preamble".to_owned(),
                offset: reader.offset,
                detail: "the format version is cut off".to_owned(),
            });
        }
        let version = u32::from_le_bytes([preamble[8], preamble[9], preamble[10], preamble[11]]);
        if version == 0 || version > FORMAT_VERSION {
            return Err(Error::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        reader.version = version;
        match reader.read_frame("header")? {
            Some(frame_start) => {
                reader.header =
                    codec::decode_exact(&reader.buf).map_err(|detail| Error::Decode {
                        what: "header".to_owned(),
                        offset: frame_start,
                        detail,
                    })?;
            }
            None => {
                return Err(Error::Truncated {
                    what: "header".to_owned(),
                    offset: reader.offset,
                    detail: "the recording ends before its header".to_owned(),
                });
            }
        }
        Ok(reader)
    }

    /// Reads the objects of the kinds `wanted` accepts only (all, unless this is called): a
    /// record of another kind comes with an empty `object`, which is neither rebuilt from its
    /// delta body nor kept as a base, nor checked. For a reader of a few kinds' objects (the
    /// analyzer reads six; a cluster's Events can be a quarter of its records).
    ///
    /// The objects read are exactly those of a full read: a delta body's base is the latest
    /// earlier object of its kind, namespace and name, and the bases of the kinds read are
    /// never dropped before the writer's (they share the writer's budget with fewer bases).
    pub fn objects_of(mut self, wanted: fn(&Kind) -> bool) -> Self {
        self.objects.wanted = wanted;
        self
    }

    /// Also reads the objects of the kinds `listed` accepts (though [`Reader::objects_of`]
    /// refuses them) in records of a list (`Op::Listed`) whose body is whole, as a recording's
    /// first list is: what the cluster held when recording began, read without rebuilding
    /// every later version of those kinds. A listed record with a delta body (a list again
    /// after a gap) comes with an empty `object`, as refused kinds' records do.
    pub fn listed_objects_of(mut self, listed: fn(&Kind) -> bool) -> Self {
        self.objects.listed = listed;
        self
    }

    /// Keeps each record's delta body, for [`Reader::delta`]: a reader that keeps versions as
    /// deltas of their object's last version (the replay server) can take the recording's
    /// rather than encode its own.
    pub fn keep_deltas(mut self) -> Self {
        self.objects.delta = Some(Delta::default());
        self
    }

    /// The pieces of the last record's delta body (docs/format.md, "Delta bodies"): they
    /// rebuild its object from the object of the latest earlier record of the same kind,
    /// namespace and name in this file. `None` when the body was whole or not read, and unless
    /// [`Reader::keep_deltas`] was asked.
    pub fn delta(&self) -> Option<&[u8]> {
        self.objects
            .delta
            .as_ref()
            .filter(|d| d.last)
            .map(|d| d.pieces.as_slice())
    }

    /// The recording's header.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The format version in the file's preamble.
    pub fn format_version(&self) -> u32 {
        self.version
    }

    /// Records read so far.
    pub fn records_read(&self) -> u64 {
        self.records
    }

    /// Decompressed bytes read so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The trailer of a cleanly closed recording, once the end was reached.
    pub fn trailer(&self) -> Option<&Trailer> {
        self.trailer.as_ref()
    }

    /// How the stream ended; `None` while records remain or after an error.
    pub fn end(&self) -> Option<End> {
        match self.state {
            State::Ended(end) => Some(end),
            _ => None,
        }
    }

    /// Reads the next record; `Ok(None)` at the end of the recording.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        let mut rec = Record::blank();
        if !self.read_into(&mut rec)? {
            return Ok(None);
        }
        // A record returned by value is often kept (`serve` indexes every one): without the
        // spare capacity of an object rebuilt piece by piece (about a third more, on average).
        rec.object.shrink_to_fit();
        Ok(Some(rec))
    }

    /// Reads the next record into `rec`, reusing its strings and buffers (a reader of many
    /// records can recycle them rather than allocate and free each one); `Ok(false)` at the end
    /// of the recording. After `Ok(false)` or an error, `rec` holds no record worth reading.
    pub fn read_into(&mut self, rec: &mut Record) -> Result<bool> {
        if !matches!(self.state, State::Reading) {
            return Ok(false);
        }
        // A buffer that once held a huge object is not kept for every later one.
        if rec.object.capacity() > MAX_KEPT_OBJECT {
            rec.object = Vec::new();
        }
        if let Some(d) = &mut self.objects.delta {
            d.last = false;
        }
        let result = self.read_record(rec);
        match &result {
            Ok(true) => self.records += 1,
            Ok(false) => {}
            Err(_) => self.state = State::Failed,
        }
        result
    }

    fn read_record(&mut self, rec: &mut Record) -> Result<bool> {
        let version = self.version;
        // Most frames lie whole in the inflater's output: decode them in place, copying nothing
        // but the record's own fields. Anything else (a frame across two outputs, the end, an
        // error to report) takes the general path below, from the same position.
        let avail = match self.src.fill() {
            Ok(avail) => avail,
            Err(e) => return Err(self.classify(e, &self.record_name())),
        };
        if let Some(len) = avail
            .get(..4)
            .map(|l| u32::from_le_bytes([l[0], l[1], l[2], l[3]]) as usize)
        {
            if len != 0 && len <= MAX_FRAME_LEN as usize && avail.len() - 4 >= len {
                if let Some(body) = codec::decode_record_into(&avail[4..4 + len], version, rec) {
                    let result = self.objects.materialize(version, rec, body);
                    self.src.consume(4 + len);
                    let frame_start = self.offset;
                    self.offset += 4 + len as u64;
                    return match result {
                        Ok(()) => Ok(true),
                        Err(detail) => Err(Error::Decode {
                            what: self.record_name(),
                            offset: frame_start,
                            detail,
                        }),
                    };
                }
            }
        }
        let what = self.record_name();
        let Some(frame_start) = self.read_frame(&what)? else {
            return Ok(false);
        };
        let result = match codec::decode_record_into(&self.buf, version, rec) {
            Some(body) => self.objects.materialize(version, rec, body),
            None => codec::decode_record_exact(&self.buf, version).and_then(|(record, body)| {
                *rec = record;
                self.objects.materialize(version, rec, body.as_body())
            }),
        };
        result.map_err(|detail| Error::Decode {
            what,
            offset: frame_start,
            detail,
        })?;
        Ok(true)
    }

    fn record_name(&self) -> String {
        format!("record {}", self.records + 1)
    }

    /// Reads one frame into `self.buf`. Returns its start offset, or `None` at a clean end
    /// (the marker and trailer, or the end of the stream on a frame boundary), having set
    /// `self.state`.
    fn read_frame(&mut self, what: &str) -> Result<Option<u64>> {
        let Some((frame_start, len)) = self.read_len(what)? else {
            self.state = State::Ended(End::Unclosed);
            return Ok(None);
        };
        if len == 0 {
            self.read_trailer()?;
            let mut probe = [0u8; 1];
            if self.read_fully(&mut probe, "the end of the recording")? != 0 {
                return Err(Error::TrailingData {
                    offset: self.offset - 1,
                });
            }
            self.state = State::Ended(End::Closed);
            return Ok(None);
        }
        self.read_body(what, len)?;
        Ok(Some(frame_start))
    }

    /// Reads a frame's length field: `None` when the stream ends right there.
    fn read_len(&mut self, what: &str) -> Result<Option<(u64, u32)>> {
        let frame_start = self.offset;
        let mut len_bytes = [0u8; 4];
        let got = self.read_fully(&mut len_bytes, what)?;
        if got == 0 {
            return Ok(None);
        }
        if got < len_bytes.len() {
            return Err(Error::Truncated {
                what: what.to_owned(),
                offset: self.offset,
                detail: format!("the length field is cut off after {got} of 4 bytes"),
            });
        }
        let len = u32::from_le_bytes(len_bytes);
        if len > MAX_FRAME_LEN {
            return Err(Error::FrameTooLarge {
                what: what.to_owned(),
                offset: frame_start,
                len: u64::from(len),
                limit: MAX_FRAME_LEN,
            });
        }
        Ok(Some((frame_start, len)))
    }

    /// Reads a frame's `len` bytes into `self.buf`.
    fn read_body(&mut self, what: &str, len: u32) -> Result<()> {
        // Grows with the bytes that actually arrive, never from the claimed length alone.
        self.buf.clear();
        let len = len as usize;
        while self.buf.len() < len {
            let avail = match self.src.fill() {
                Ok(avail) => avail,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.classify(e, what)),
            };
            if avail.is_empty() {
                break;
            }
            let n = avail.len().min(len - self.buf.len());
            self.buf.extend_from_slice(&avail[..n]);
            self.src.consume(n);
        }
        let got = self.buf.len();
        self.offset += got as u64;
        if got < len {
            return Err(Error::Truncated {
                what: what.to_owned(),
                offset: self.offset,
                detail: format!("the frame says {len} bytes, only {got} are present"),
            });
        }
        Ok(())
    }

    /// Reads a frame that must not be the end marker (the trailer): `None` at the end of the
    /// stream.
    fn read_frame_body(&mut self, what: &str) -> Result<Option<u64>> {
        let Some((frame_start, len)) = self.read_len(what)? else {
            return Ok(None);
        };
        if len == 0 {
            return Err(Error::Decode {
                what: what.to_owned(),
                offset: frame_start,
                detail: "a second end marker instead of the trailer".to_owned(),
            });
        }
        self.read_body(what, len)?;
        Ok(Some(frame_start))
    }

    /// Reads the trailer frame that follows the end marker and checks its record count.
    fn read_trailer(&mut self) -> Result<()> {
        let what = "the trailer";
        let Some(frame_start) = self.read_frame_body(what)? else {
            return Err(Error::Truncated {
                what: what.to_owned(),
                offset: self.offset,
                detail: "the end marker is not followed by its trailer".to_owned(),
            });
        };
        let trailer: Trailer = codec::decode_exact(&self.buf).map_err(|detail| Error::Decode {
            what: what.to_owned(),
            offset: frame_start,
            detail,
        })?;
        if trailer.records != self.records {
            return Err(Error::Decode {
                what: what.to_owned(),
                offset: frame_start,
                detail: format!(
                    "it counts {} records, the file holds {}",
                    trailer.records, self.records
                ),
            });
        }
        self.trailer = Some(trailer);
        Ok(())
    }

    /// Fills `buf` as far as the stream allows; returns how many bytes were read (fewer only at
    /// the end of the stream).
    fn read_fully(&mut self, buf: &mut [u8], what: &str) -> Result<usize> {
        let mut filled = 0;
        while filled < buf.len() {
            match self.src.read(&mut buf[filled..]) {
                Ok(0) => break,
                Ok(n) => {
                    filled += n;
                    self.offset += n as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.classify(e, what)),
            }
        }
        Ok(filled)
    }

    fn classify(&self, e: io::Error, what: &str) -> Error {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => Error::Truncated {
                what: what.to_owned(),
                offset: self.offset,
                detail: e.to_string(),
            },
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidData => Error::CorruptCompression {
                what: what.to_owned(),
                offset: self.offset,
                detail: e.to_string(),
            },
            _ => Error::Io {
                offset: self.offset,
                source: e,
            },
        }
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

impl Objects {
    /// Sets `rec.object` from its decoded `body` and, from version 2, keeps it as the next base;
    /// a delta body's pieces also, if kept.
    fn materialize(
        &mut self,
        version: u32,
        rec: &mut Record,
        body: Body<'_>,
    ) -> std::result::Result<(), String> {
        let bases = &mut self.bases;
        if !(self.wanted)(&rec.kind) {
            rec.object.clear();
            if rec.op == crate::Op::Listed && (self.listed)(&rec.kind) {
                if let Body::Full(bytes) = body {
                    rec.object.extend_from_slice(bytes);
                }
            }
            return Ok(());
        }
        // Version 1 has no bases, and a record without an object (a marker) changes none.
        let empty = matches!(body, Body::Full(bytes) if bytes.is_empty());
        let found = (version >= 2 && !empty).then(|| bases.find(rec));
        match body {
            Body::Full(bytes) => {
                rec.object.clear();
                rec.object.extend_from_slice(bytes);
            }
            Body::Delta(pieces) => {
                let Some(base) = found.as_ref().and_then(|f| bases.base(f)) else {
                    return Err(format!(
                        "a delta body for {} {}/{}, which has no earlier object in this recording",
                        rec.kind, rec.namespace, rec.name
                    ));
                };
                delta::apply(base, pieces, &mut rec.object)?;
                if let Some(d) = &mut self.delta {
                    d.pieces.clear();
                    d.pieces.extend_from_slice(pieces);
                    d.last = true;
                }
            }
        }
        if let Some(found) = found {
            bases.after_found(rec, found);
        }
        Ok(())
    }
}

/// Object buffers larger than this are not reused for the next record.
const MAX_KEPT_OBJECT: usize = 1024 * 1024;

fn hex_prefix(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    if shown.is_empty() {
        "nothing".to_owned()
    } else {
        format!("bytes {}", shown.join(" "))
    }
}

/// The gzip layer: concatenated members (RFC 1952), each inflated with flate2's raw-deflate
/// [`Decompress`] and checked against its CRC-32 and ISIZE. It reads like `MultiGzDecoder`, except
/// at the end of the input, which it accepts in two places only:
///
/// - right after a complete member (or before the first one);
/// - inside a member's deflate data at a sync-flush point: all input consumed, no output
///   pending, the member's last four compressed bytes are `00 00 ff ff` (the end of an empty
///   stored block) and the inflater is at a block boundary, which it proves by accepting the two
///   bytes `03 00` (an empty final block) as the end of the stream without producing output.
///
/// Anywhere else the end of the input is an `UnexpectedEof` error; damaged data is an
/// `InvalidData` error. Both say at which compressed byte the member in question starts.
struct Gzip<R: BufRead> {
    inner: R,
    phase: Phase,
    inflate: Decompress,
    crc: Crc,
    /// Compressed bytes consumed from `inner`.
    pos: u64,
    /// Where the current (or next) member starts, in compressed bytes.
    member_start: u64,
    /// Deflate bytes of the current member consumed so far.
    deflate_in: u64,
    /// The last (up to) four deflate bytes of the current member, oldest first.
    tail: [u8; 4],
    /// A member header read so far.
    head: Vec<u8>,
    /// The member trailer read so far (CRC-32, ISIZE).
    foot: [u8; 8],
    foot_len: usize,
    /// Inflated bytes not yet returned: `out[out_pos..out_len]`.
    out: Box<[u8]>,
    out_pos: usize,
    out_len: usize,
    /// An error met while inflating bytes that are still in `out`: reported once they are read.
    deferred: Option<io::Error>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Before a member header, or inside one (`head` holds its first bytes).
    Header,
    /// In a member's deflate data.
    Body,
    /// In a member's 8-byte trailer.
    Trailer,
    /// The input ended cleanly.
    End,
}

/// How much of the input to look at, at most, per step of reading a member header.
const HEADER_STEP: usize = 4096;
/// The longest member header accepted (FEXTRA is at most 65 537 bytes; names and comments are
/// short in practice).
const MAX_HEADER: usize = 256 * 1024;
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;
const FRESERVED: u8 = 0xe0;
/// What a deflate sync flush ends with: the LEN and NLEN of an empty stored block.
const SYNC_MARKER: [u8; 4] = [0x00, 0x00, 0xff, 0xff];
/// An empty final block with fixed codes: BFINAL 1, BTYPE 01, end-of-block (7 zero bits).
const EMPTY_FINAL_BLOCK: [u8; 2] = [0x03, 0x00];

impl<R: BufRead> Gzip<R> {
    fn new(inner: R) -> Self {
        Gzip {
            inner,
            phase: Phase::Header,
            inflate: Decompress::new(false),
            crc: Crc::new(),
            pos: 0,
            member_start: 0,
            deflate_in: 0,
            tail: [0xaa; 4],
            head: Vec::new(),
            foot: [0; 8],
            foot_len: 0,
            out: vec![0; 64 * 1024].into_boxed_slice(),
            out_pos: 0,
            out_len: 0,
            deferred: None,
        }
    }

    fn cut(&self, detail: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!(
                "the file ends {detail} (the member starting at compressed byte {})",
                self.member_start
            ),
        )
    }

    fn corrupt(&self, detail: &str) -> io::Error {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{detail} (the gzip member starting at compressed byte {})",
                self.member_start
            ),
        )
    }

    /// Reads (part of) a member header; at a clean end of the input, moves to `End`.
    fn read_header(&mut self) -> io::Result<()> {
        let input = self.inner.fill_buf()?;
        if input.is_empty() {
            if self.head.is_empty() {
                self.phase = Phase::End;
                return Ok(());
            }
            return Err(self.cut("inside a gzip member header"));
        }
        let seen = self.head.len();
        let step = input.len().min(HEADER_STEP);
        self.head.extend_from_slice(&input[..step]);
        match header_len(&self.head) {
            Err(what) => Err(self.corrupt(what)),
            Ok(Some(len)) => {
                let used = len - seen;
                self.inner.consume(used);
                self.pos += used as u64;
                self.head.clear();
                self.inflate.reset(false);
                self.crc.reset();
                self.deflate_in = 0;
                self.tail = [0xaa; 4];
                self.phase = Phase::Body;
                Ok(())
            }
            Ok(None) => {
                self.inner.consume(step);
                self.pos += step as u64;
                if self.head.len() > MAX_HEADER {
                    return Err(self.corrupt("a gzip member header longer than 256 KiB"));
                }
                Ok(())
            }
        }
    }

    /// Inflates into `out`; at the end of the deflate data moves to `Trailer`, at a clean end of
    /// the input (a sync-flush point) to `End`.
    fn inflate_some(&mut self) -> io::Result<()> {
        let input = self.inner.fill_buf()?;
        let eof = input.is_empty();
        let (in_before, out_before) = (self.inflate.total_in(), self.inflate.total_out());
        let status = self
            .inflate
            .decompress(input, &mut self.out, FlushDecompress::None);
        let consumed = (self.inflate.total_in() - in_before) as usize;
        let produced = (self.inflate.total_out() - out_before) as usize;
        push_tail(&mut self.tail, &input[..consumed]);
        self.inner.consume(consumed);
        self.pos += consumed as u64;
        self.deflate_in += consumed as u64;
        self.crc.update(&self.out[..produced]);
        self.out_pos = 0;
        self.out_len = produced;
        let status = match status {
            Ok(status) => status,
            Err(e) => {
                let e = self.corrupt(&format!("invalid deflate data: {e}"));
                if produced == 0 {
                    return Err(e);
                }
                // What was inflated before the damage comes first.
                self.deferred = Some(e);
                return Ok(());
            }
        };
        match status {
            Status::StreamEnd => self.phase = Phase::Trailer,
            Status::Ok | Status::BufError if produced == 0 && eof => {
                if !self.at_sync_point() {
                    return Err(self.cut("inside a gzip member, not at a flush point"));
                }
                self.phase = Phase::End;
            }
            Status::Ok | Status::BufError if produced == 0 && consumed == 0 => {
                return Err(self.corrupt("the inflater makes no progress"));
            }
            Status::Ok | Status::BufError => {}
        }
        Ok(())
    }

    /// At the end of the input inside a member's deflate data: whether it ends right after a
    /// sync flush. Leaves the inflater finished either way.
    fn at_sync_point(&mut self) -> bool {
        if self.deflate_in < SYNC_MARKER.len() as u64 || self.tail != SYNC_MARKER {
            return false;
        }
        let (in_before, out_before) = (self.inflate.total_in(), self.inflate.total_out());
        let mut scratch = [0u8; 8];
        let status =
            self.inflate
                .decompress(&EMPTY_FINAL_BLOCK, &mut scratch, FlushDecompress::Finish);
        matches!(status, Ok(Status::StreamEnd))
            && self.inflate.total_out() == out_before
            && self.inflate.total_in() - in_before == EMPTY_FINAL_BLOCK.len() as u64
    }

    /// Reads (part of) a member's trailer and, once whole, checks it; then moves to `Header`.
    fn read_trailer(&mut self) -> io::Result<()> {
        let input = self.inner.fill_buf()?;
        if input.is_empty() {
            return Err(self.cut("inside the CRC-32 and length trailer of a gzip member"));
        }
        let n = input.len().min(self.foot.len() - self.foot_len);
        self.foot[self.foot_len..self.foot_len + n].copy_from_slice(&input[..n]);
        self.inner.consume(n);
        self.pos += n as u64;
        self.foot_len += n;
        if self.foot_len < self.foot.len() {
            return Ok(());
        }
        let [c0, c1, c2, c3, l0, l1, l2, l3] = self.foot;
        if u32::from_le_bytes([c0, c1, c2, c3]) != self.crc.sum() {
            return Err(self.corrupt("the CRC-32 at the end of a gzip member does not match"));
        }
        if u32::from_le_bytes([l0, l1, l2, l3]) != self.crc.amount() {
            return Err(self.corrupt("the length at the end of a gzip member does not match"));
        }
        self.foot_len = 0;
        self.member_start = self.pos;
        self.phase = Phase::Header;
        Ok(())
    }
}

impl<R: BufRead> Gzip<R> {
    /// The inflated bytes not yet read, inflating more when none are left: empty only at the
    /// end of the input.
    fn fill(&mut self) -> io::Result<&[u8]> {
        while self.out_pos == self.out_len {
            if let Some(e) = self.deferred.take() {
                self.phase = Phase::End;
                return Err(e);
            }
            match self.phase {
                Phase::Header => self.read_header()?,
                Phase::Body => self.inflate_some()?,
                Phase::Trailer => self.read_trailer()?,
                Phase::End => return Ok(&[]),
            }
        }
        Ok(&self.out[self.out_pos..self.out_len])
    }

    /// Marks `n` bytes of what [`Gzip::fill`] returned as read.
    fn consume(&mut self, n: usize) {
        self.out_pos = (self.out_pos + n).min(self.out_len);
    }
}

impl<R: BufRead> Read for Gzip<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let avail = self.fill()?;
        let n = buf.len().min(avail.len());
        buf[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

/// Keeps the last four bytes of the deflate data seen.
fn push_tail(tail: &mut [u8; 4], bytes: &[u8]) {
    const N: usize = 4;
    if bytes.len() >= N {
        tail.copy_from_slice(&bytes[bytes.len() - N..]);
    } else {
        tail.rotate_left(bytes.len());
        tail[N - bytes.len()..].copy_from_slice(bytes);
    }
}

/// The length of the gzip member header `head` starts with: `None` while `head` is too short to
/// tell, an error when it cannot be one.
fn header_len(head: &[u8]) -> Result<Option<usize>, &'static str> {
    if head.first().is_some_and(|&b| b != 0x1f) || head.get(1).is_some_and(|&b| b != 0x8b) {
        return Err("not a gzip member header");
    }
    if head.get(2).is_some_and(|&b| b != 8) {
        return Err("a gzip member compressed with a method other than deflate");
    }
    if head.get(3).is_some_and(|&b| b & FRESERVED != 0) {
        return Err("a gzip member header with reserved flags set");
    }
    if head.len() < 10 {
        return Ok(None);
    }
    let flags = head[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let Some(&[x0, x1]) = head.get(at..at + 2) else {
            return Ok(None);
        };
        at += 2 + usize::from(u16::from_le_bytes([x0, x1]));
        if head.len() < at {
            return Ok(None);
        }
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            match head[at..].iter().position(|&b| b == 0) {
                Some(nul) => at += nul + 1,
                None => return Ok(None),
            }
        }
    }
    if flags & FHCRC != 0 {
        let Some(&[c0, c1]) = head.get(at..at + 2) else {
            return Ok(None);
        };
        let mut crc = Crc::new();
        crc.update(&head[..at]);
        if crc.sum() as u16 != u16::from_le_bytes([c0, c1]) {
            return Err("a gzip member header whose CRC-16 does not match");
        }
        at += 2;
    }
    Ok(Some(at))
}
