//! rf-format: the rollout-forensics recording file.
//!
//! A recording is a gzip stream of one or more members. Decompressed, it is an 8-byte magic, a
//! little-endian `u32` format version, then frames: a little-endian `u32` length followed by the
//! bincode encoding of one value. The first frame is the [`Header`]; every later frame is a
//! [`Record`]; a zero-length frame followed by one [`Trailer`] frame (when recording stopped, how
//! many records) marks a recording that was closed cleanly. See
//! `docs/format.md` for the full specification.
//!
//! This crate reads any [`std::io::Read`] and writes any [`std::io::Write`]. It never opens a
//! path, never touches the network or a clock, and never allocates from a length it has not
//! checked against [`MAX_FRAME_LEN`]: a truncated or corrupt tail yields every complete record
//! before it and then an [`Error`] that says where and why.
//!
//! ```no_run
//! use rf_format::{Header, Reader};
//! let file = std::fs::File::open("recordings/rerender-race.rfr")?;
//! let mut reader = Reader::new(file)?;
//! println!("recorded from {:?}", reader.header().source.server);
//! for record in &mut reader {
//!     let record = record?;
//!     println!("{} {:?} {}/{}", record.seq, record.op, record.namespace, record.name);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod api;
mod codec;
mod delta;
mod error;
pub mod json;
mod reader;
mod record;
mod writer;

pub use error::{Error, Result};
pub use reader::{End, Reader};
pub use record::{
    Header, Kind, Op, Record, Redaction, Source, Timestamp, Trailer, push_object_key,
};
pub use writer::Writer;

/// Delta bodies (docs/format.md, "Delta bodies") for a reader that keeps versions of objects as
/// the writer does: [`DeltaEncoder::encode`] writes the pieces that rebuild a target from a
/// base, [`apply_delta`] rebuilds it.
pub use delta::{Encoder as DeltaEncoder, apply as apply_delta};

/// The eight bytes every decompressed recording starts with.
pub const MAGIC: [u8; 8] = *b"RFORENSI";

/// The format version this build writes. Readers accept every version from 1 up to this one.
///
/// Version 2 writes an object that an earlier record of the same
/// object already holds most of as the changes from it (docs/format.md, "Delta bodies");
/// version 1 writes every object whole. [`Writer::with_format`] still writes version 1.
pub const FORMAT_VERSION: u32 = 2;

/// The largest frame a reader accepts and a writer produces: 64 MiB. The Kubernetes API server
/// refuses objects over ~1.5 MiB by default, so a larger length can only be corruption.
pub const MAX_FRAME_LEN: u32 = 64 * 1024 * 1024;
