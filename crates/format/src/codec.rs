//! The one place bincode is used: encoding and decoding one frame's value.
//!
//! bincode 2.0.1 (standard config: little-endian, variable-length integers) is frozen
//! upstream. Keeping every call here means a move to a bincode-compatible crate touches only this
//! file, and the golden-bytes test proves the move byte-identical.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::MAX_FRAME_LEN;
use crate::record::{Kind, Op, Record, Timestamp};

/// How a record's object is written: whole (version 1 always), or from version 2 on as the
/// pieces that rebuild it from its base (see `delta.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub(crate) enum Body<'a> {
    /// The object's bytes (empty for markers and gaps).
    Full(#[serde(with = "serde_bytes")] &'a [u8]),
    /// The pieces of a delta.
    Delta(#[serde(with = "serde_bytes")] &'a [u8]),
}

/// [`Body`], owned, for the serde path.
#[derive(Deserialize)]
pub(crate) enum OwnedBody {
    Full(#[serde(with = "serde_bytes")] Vec<u8>),
    Delta(#[serde(with = "serde_bytes")] Vec<u8>),
}

impl OwnedBody {
    pub(crate) fn as_body(&self) -> Body<'_> {
        match self {
            OwnedBody::Full(bytes) => Body::Full(bytes),
            OwnedBody::Delta(bytes) => Body::Delta(bytes),
        }
    }
}

/// A version 2 record frame as written: the record's fields, then its [`Body`] in place of
/// version 1's object bytes.
#[derive(Serialize)]
struct FrameV2<'a> {
    seq: u64,
    observed_at: Timestamp,
    kind: &'a Kind,
    op: &'a Op,
    namespace: &'a str,
    name: &'a str,
    uid: &'a str,
    resource_version: &'a str,
    actor: Option<&'a str>,
    body: Body<'a>,
}

/// [`FrameV2`], owned, for the serde path.
#[derive(Deserialize)]
struct OwnedFrameV2 {
    seq: u64,
    observed_at: Timestamp,
    kind: Kind,
    op: Op,
    namespace: String,
    name: String,
    uid: String,
    resource_version: String,
    actor: Option<String>,
    body: OwnedBody,
}

/// Appends the encoding of `record` as format `version` writes it, with `body` (which must be
/// `Body::Full(&record.object)` for version 1) standing for its object.
pub(crate) fn encode_record(
    record: &Record,
    body: Body<'_>,
    version: u32,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    if version < 2 {
        debug_assert_eq!(body, Body::Full(&record.object));
        return encode_into(record, out);
    }
    let frame = FrameV2 {
        seq: record.seq,
        observed_at: record.observed_at,
        kind: &record.kind,
        op: &record.op,
        namespace: &record.namespace,
        name: &record.name,
        uid: &record.uid,
        resource_version: &record.resource_version,
        actor: record.actor.as_deref(),
        body,
    };
    encode_into(&frame, out)
}

/// Decodes one record of format `version` that must fill `bytes` exactly, through serde: the
/// record with an empty object, and its body.
pub(crate) fn decode_record_exact(
    bytes: &[u8],
    version: u32,
) -> Result<(Record, OwnedBody), String> {
    if version < 2 {
        let mut record: Record = decode_exact(bytes)?;
        let object = std::mem::take(&mut record.object);
        return Ok((record, OwnedBody::Full(object)));
    }
    let f: OwnedFrameV2 = decode_exact(bytes)?;
    let record = Record {
        seq: f.seq,
        observed_at: f.observed_at,
        kind: f.kind,
        op: f.op,
        namespace: f.namespace,
        name: f.name,
        uid: f.uid,
        resource_version: f.resource_version,
        actor: f.actor,
        object: Vec::new(),
    };
    Ok((record, f.body))
}

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ MAX_FRAME_LEN as usize }>()
}

/// Appends the encoding of `value` to `out`.
pub(crate) fn encode_into<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
    bincode::serde::encode_into_std_write(value, out, config())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Decodes one value that must fill `bytes` exactly.
pub(crate) fn decode_exact<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, used) =
        bincode::serde::decode_from_slice::<T, _>(bytes, config()).map_err(|e| e.to_string())?;
    if used != bytes.len() {
        return Err(format!(
            "{} bytes left over after the value ({} of {} used)",
            bytes.len() - used,
            used,
            bytes.len()
        ));
    }
    Ok(value)
}

/// Decodes one record of format `version` that must fill `bytes` exactly into `rec`, reusing
/// its strings, without going through serde (this runs for every record of a recording). The
/// object is not touched: its [`Body`] is returned, borrowed from `bytes`.
///
/// It reads the same bytes as [`decode_record_exact`] (docs/format.md, "Record"), but accepts
/// only the shortest varints, which the writer always uses. `None` when it does not accept
/// `bytes`: the caller then decodes them with [`decode_record_exact`], which gives the value
/// (for a form only bincode takes) or the error to report. `rec` is unspecified after `None`.
pub(crate) fn decode_record_into<'a>(
    bytes: &'a [u8],
    version: u32,
    rec: &mut Record,
) -> Option<Body<'a>> {
    let mut c = Cursor { bytes };
    rec.seq = c.varint()?;
    rec.observed_at = Timestamp(c.zigzag()?);
    rec.kind = match c.variant()? {
        0 => Kind::Rollout,
        1 => Kind::ReplicaSet,
        2 => Kind::Service,
        3 => Kind::EndpointSlice,
        4 => Kind::Pod,
        5 => Kind::Application,
        6 => Kind::Event,
        7 => {
            let (mut group, mut version, mut kind) =
                match std::mem::replace(&mut rec.kind, Kind::Event) {
                    Kind::Other {
                        group,
                        version,
                        kind,
                    } => (group, version, kind),
                    _ => Default::default(),
                };
            c.string_into(&mut group)?;
            c.string_into(&mut version)?;
            c.string_into(&mut kind)?;
            Kind::Other {
                group,
                version,
                kind,
            }
        }
        _ => return None,
    };
    rec.op = match c.variant()? {
        0 => Op::Added,
        1 => Op::Modified,
        2 => Op::Deleted {
            inferred: c.boolean()?,
        },
        3 => Op::ListBegin,
        4 => Op::Listed,
        5 => Op::ListEnd,
        6 => {
            let mut reason = match std::mem::replace(&mut rec.op, Op::Added) {
                Op::Gap { reason } => reason,
                _ => String::new(),
            };
            c.string_into(&mut reason)?;
            Op::Gap { reason }
        }
        _ => return None,
    };
    c.string_into(&mut rec.namespace)?;
    c.string_into(&mut rec.name)?;
    c.string_into(&mut rec.uid)?;
    c.string_into(&mut rec.resource_version)?;
    if c.boolean()? {
        let actor = rec.actor.get_or_insert_with(String::new);
        c.string_into(actor)?;
    } else {
        rec.actor = None;
    }
    let body = if version < 2 {
        Body::Full(c.take_len()?)
    } else {
        match c.variant()? {
            0 => Body::Full(c.take_len()?),
            1 => Body::Delta(c.take_len()?),
            _ => return None,
        }
    };
    c.bytes.is_empty().then_some(body)
}

/// Bytes not yet decoded: a record's, or a delta's pieces (`delta::apply`).
pub(crate) struct Cursor<'a> {
    pub(crate) bytes: &'a [u8],
}

impl<'a> Cursor<'a> {
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.bytes.len() {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(b)
    }

    /// An unsigned varint in its shortest form.
    pub(crate) fn varint(&mut self) -> Option<u64> {
        let (v, least) = match self.byte()? {
            b @ 0..=250 => return Some(u64::from(b)),
            0xfb => (
                u64::from(u16::from_le_bytes(self.take(2)?.try_into().ok()?)),
                251,
            ),
            0xfc => (
                u64::from(u32::from_le_bytes(self.take(4)?.try_into().ok()?)),
                0x1_0000,
            ),
            0xfd => (
                u64::from_le_bytes(self.take(8)?.try_into().ok()?),
                0x1_0000_0000,
            ),
            _ => return None,
        };
        (v >= least).then_some(v)
    }

    fn zigzag(&mut self) -> Option<i64> {
        let v = self.varint()?;
        Some(((v >> 1) as i64) ^ -((v & 1) as i64))
    }

    fn variant(&mut self) -> Option<u32> {
        u32::try_from(self.varint()?).ok()
    }

    fn boolean(&mut self) -> Option<bool> {
        match self.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }

    /// A varint length and that many bytes.
    fn take_len(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        self.take(len)
    }

    fn string_into(&mut self, s: &mut String) -> Option<()> {
        let text = std::str::from_utf8(self.take_len()?).ok()?;
        s.clear();
        s.push_str(text);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records() -> Vec<Record> {
        let kinds = Kind::KNOWN.into_iter().chain([Kind::Other {
            group: "batch".into(),
            version: "v1".into(),
            kind: "Jöb".into(),
        }]);
        let ops = crate::record::tests::every_op();
        let mut out = Vec::new();
        for (i, kind) in kinds.enumerate() {
            for (j, op) in ops.iter().enumerate() {
                let n = (i * ops.len() + j) as u64;
                out.push(Record {
                    // Every varint width, and negative times.
                    seq: [
                        7,
                        250,
                        251,
                        65_535,
                        65_536,
                        u64::from(u32::MAX) + 1,
                        u64::MAX,
                    ][n as usize % 7],
                    observed_at: Timestamp(if n % 2 == 0 {
                        -(n as i64) * 1_000_003
                    } else {
                        i64::MAX - n as i64
                    }),
                    kind: kind.clone(),
                    op: op.clone(),
                    namespace: "prod".into(),
                    name: "x".repeat(n as usize * 9),
                    uid: if n % 3 == 0 {
                        String::new()
                    } else {
                        "u-1".into()
                    },
                    resource_version: n.to_string(),
                    actor: (n % 2 == 1).then(|| "system:serviceaccount:argo".into()),
                    object: vec![b'{'; n as usize * 13],
                });
            }
        }
        out
    }

    /// The encodings of every record in every version: version 1, then version 2 with whole
    /// bodies and with its object's bytes taken as a delta's pieces (the codec does not read
    /// them). With each: the version, and whether the body is a delta.
    fn encodings() -> Vec<(Record, u32, bool, Vec<u8>)> {
        let mut out = Vec::new();
        for rec in records() {
            for (version, delta) in [(1, false), (2, false), (2, true)] {
                let body = if delta {
                    Body::Delta(&rec.object)
                } else {
                    Body::Full(&rec.object)
                };
                let mut bytes = Vec::new();
                encode_record(&rec, body, version, &mut bytes).unwrap();
                out.push((rec.clone(), version, delta, bytes));
            }
        }
        out
    }

    /// The fast decoder's record, with its body's bytes as the object.
    fn decode_fast(bytes: &[u8], version: u32, rec: &mut Record) -> Option<bool> {
        let (object, delta) = match decode_record_into(bytes, version, rec)? {
            Body::Full(b) => (b.to_vec(), false),
            Body::Delta(b) => (b.to_vec(), true),
        };
        rec.object = object;
        Some(delta)
    }

    fn decode_serde(bytes: &[u8], version: u32) -> Result<(Record, bool), String> {
        let (mut rec, body) = decode_record_exact(bytes, version)?;
        let (object, delta) = match body {
            OwnedBody::Full(b) => (b, false),
            OwnedBody::Delta(b) => (b, true),
        };
        rec.object = object;
        Ok((rec, delta))
    }

    fn blank() -> Record {
        Record {
            seq: 1,
            observed_at: Timestamp(1),
            kind: Kind::Other {
                group: "left".into(),
                version: "over".into(),
                kind: "Kind".into(),
            },
            op: Op::Gap {
                reason: "from the record before".into(),
            },
            namespace: "old".into(),
            name: "old".into(),
            uid: "old".into(),
            resource_version: "old".into(),
            actor: Some("old".into()),
            object: b"old".to_vec(),
        }
    }

    #[test]
    fn the_record_decoder_reads_what_bincode_reads_into_a_used_record() {
        let mut rec = blank();
        for (want, version, delta, bytes) in encodings() {
            assert_eq!(
                decode_fast(&bytes, version, &mut rec),
                Some(delta),
                "{want:?}"
            );
            assert_eq!(rec, want);
            assert_eq!(decode_serde(&bytes, version).unwrap(), (want, delta));
        }
    }

    #[test]
    fn version_2_is_version_1_with_a_body_tag_before_the_object() {
        for (want, version, delta, bytes) in encodings() {
            let mut v1 = Vec::new();
            encode_into(&want, &mut v1).unwrap();
            let tail = want.object.len() + varint_len(want.object.len());
            let head = v1.len() - tail;
            if version == 1 {
                assert_eq!(bytes, v1);
            } else {
                assert_eq!(bytes[..head], v1[..head]);
                assert_eq!(bytes[head], u8::from(delta));
                assert_eq!(bytes[head + 1..], v1[head..]);
            }
        }
    }

    fn varint_len(n: usize) -> usize {
        match n {
            0..=250 => 1,
            251..=65_535 => 3,
            _ => 5,
        }
    }

    #[test]
    fn whatever_the_record_decoder_accepts_bincode_decodes_to_the_same_record() {
        let mut accepted = 0;
        for (_, version, _, bytes) in encodings() {
            let mut damaged = Vec::new();
            for cut in 0..bytes.len() {
                damaged.push(bytes[..cut].to_vec());
            }
            let mut longer = bytes.clone();
            longer.push(0);
            damaged.push(longer);
            for at in 0..bytes.len().min(64) {
                for v in [
                    0x00, 0x01, 0x02, 0x07, 0x08, 0xfa, 0xfb, 0xfd, 0xfe, 0xff, 0xc3,
                ] {
                    let mut b = bytes.clone();
                    b[at] = v;
                    damaged.push(b);
                }
            }
            for b in damaged {
                let mut rec = blank();
                if let Some(delta) = decode_fast(&b, version, &mut rec) {
                    accepted += 1;
                    assert_eq!(decode_serde(&b, version), Ok((rec, delta)), "{b:02x?}");
                }
            }
        }
        assert!(
            accepted > 300,
            "only {accepted} damaged encodings were records"
        );
    }

    #[test]
    fn a_longer_varint_than_needed_is_left_to_bincode() {
        for (_, version, _, shortest) in encodings().into_iter().take(3) {
            // seq 5 as fb 05 00: not the writer's form.
            let mut bytes = vec![0xfb, 0x05, 0x00];
            bytes.extend_from_slice(&shortest[1..]);
            let mut rec = blank();
            assert!(decode_record_into(&bytes, version, &mut rec).is_none());
            assert!(decode_record_into(&shortest, version, &mut rec).is_some());
        }
    }
}
