//! Errors of reading and writing recordings.

use std::io;

/// What went wrong with a recording, and where.
///
/// Offsets are byte positions in the decompressed stream; `what` names the frame (`header`,
/// `record 12` for the twelfth record after the header).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The input is not a recording at all (empty, not gzip, wrong magic).
    #[error("not a recording: {0}")]
    NotARecording(String),
    /// Written by a newer version of the tool.
    #[error(
        "unsupported format version {found} at byte 8: this build reads versions 1 to {supported}"
    )]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The stream ends in the middle of a frame or of a gzip member.
    #[error("truncated in {what} at byte {offset}: {detail}")]
    Truncated {
        /// The frame being read.
        what: String,
        /// Decompressed bytes read before the cut.
        offset: u64,
        /// What was expected.
        detail: String,
    },
    /// The gzip data is damaged (bad deflate data, CRC mismatch).
    #[error("corrupt compressed data in {what} after byte {offset}: {detail}")]
    CorruptCompression {
        /// The frame being read.
        what: String,
        /// Decompressed bytes read before the damage.
        offset: u64,
        /// The decompressor's words.
        detail: String,
    },
    /// A frame length beyond [`crate::MAX_FRAME_LEN`]: corruption, refused before allocating.
    #[error("{what} at byte {offset}: frame length {len} exceeds the limit of {limit} bytes")]
    FrameTooLarge {
        /// The frame being read or written.
        what: String,
        /// Where its length field starts.
        offset: u64,
        /// The claimed length.
        len: u64,
        /// The limit.
        limit: u32,
    },
    /// A frame's bytes are not a valid encoding of its value.
    #[error("{what} at byte {offset}: cannot decode: {detail}")]
    Decode {
        /// The frame.
        what: String,
        /// Where its length field starts.
        offset: u64,
        /// The decoder's words.
        detail: String,
    },
    /// Bytes follow the end-of-recording marker.
    #[error("data after the end-of-recording marker at byte {offset}")]
    TrailingData {
        /// Where the marker ends.
        offset: u64,
    },
    /// A value could not be encoded (writer side).
    #[error("cannot encode {what}: {detail}")]
    Encode {
        /// The value.
        what: String,
        /// The encoder's words.
        detail: String,
    },
    /// The writer was used after an earlier error left its output incomplete.
    #[error("the writer failed earlier; its output is incomplete")]
    Poisoned,
    /// Reading or writing the underlying stream failed.
    #[error("i/o error at byte {offset}")]
    Io {
        /// Decompressed bytes read or written before the failure.
        offset: u64,
        /// The cause.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// True when the recording ends in the middle of something (a frame, a gzip member): the
    /// records before the cut are complete, typically because the writer was killed mid-flush.
    pub fn is_truncation(&self) -> bool {
        matches!(self, Error::Truncated { .. })
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
