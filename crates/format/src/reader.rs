//! Reading recordings as a stream of records.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read};

use flate2::bufread::MultiGzDecoder;

use crate::codec;
use crate::error::{Error, Result};
use crate::record::{Header, Record, Trailer};
use crate::{FORMAT_VERSION, MAGIC, MAX_FRAME_LEN};

/// How the stream ended, once the reader has reached its end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The end-of-recording marker and its trailer were read: the writer closed the file.
    Closed,
    /// The stream ended between two frames without the marker: the writer was killed after a
    /// flush, or is still writing. Every record is complete.
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
    src: MultiGzDecoder<BufReader<R>>,
    header: Header,
    version: u32,
    offset: u64,
    records: u64,
    state: State,
    buf: Vec<u8>,
    trailer: Option<Trailer>,
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
            src: MultiGzDecoder::new(buffered),
            header: Header::new("", crate::Timestamp(0), crate::Source::default()),
            version: 0,
            offset: 0,
            records: 0,
            state: State::Reading,
            buf: Vec::new(),
            trailer: None,
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
        if !matches!(self.state, State::Reading) {
            return Ok(None);
        }
        let result = self.read_record();
        match &result {
            Ok(Some(_)) => self.records += 1,
            Ok(None) => {}
            Err(_) => self.state = State::Failed,
        }
        result
    }

    fn read_record(&mut self) -> Result<Option<Record>> {
        let what = format!("record {}", self.records + 1);
        let Some(frame_start) = self.read_frame(&what)? else {
            return Ok(None);
        };
        codec::decode_exact(&self.buf)
            .map(Some)
            .map_err(|detail| Error::Decode {
                what,
                offset: frame_start,
                detail,
            })
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
        let got = (&mut self.src)
            .take(u64::from(len))
            .read_to_end(&mut self.buf)
            .map_err(|e| self.classify(e, what))?;
        self.offset += got as u64;
        if got < len as usize {
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
                detail: "the last gzip member is cut off".to_owned(),
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

fn hex_prefix(bytes: &[u8]) -> String {
    let shown: Vec<String> = bytes.iter().take(8).map(|b| format!("{b:02x}")).collect();
    if shown.is_empty() {
        "nothing".to_owned()
    } else {
        format!("bytes {}", shown.join(" "))
    }
}
