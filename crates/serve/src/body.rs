//! An object's JSON as the server keeps it. The server keeps every version of every object, and
//! most versions repeat the one before almost byte for byte: a version is kept as the pieces
//! that rebuild it from the one before (the recording's own delta bodies, docs/format.md), in
//! chains of fewer than [`KEYFRAME`] deltas from a whole version, so that rebuilding one never
//! walks far. A chain's whole version is mostly not the object's own: the timeline starts a
//! chain from a version of the same kind kept whole (its template), so that only a kind's first
//! version, and one unlike any before, are kept whole.
//!
//! Versions are kept in the server's scratch file ([`Spill`]), each record saying what it is
//! rebuilt from: a version is named by its [`Place`] alone, so the timeline keeps it on disk too.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rf_format::{DeltaEncoder, apply_delta};

use crate::spill::{Holds, Spill};
use crate::wire::{Take, put_u32, put_u64};

/// A version this many steps from a whole one is kept whole.
const KEYFRAME: u8 = 16;

/// The JSON of one version of an object (cheap to clone: shared).
#[derive(Clone)]
pub struct Json(Arc<Node>);

enum Node {
    /// Whole bytes in memory: an object the server makes.
    Whole(Box<[u8]>),
    /// `len` bytes kept in `spill` at `place`, `depth` deltas from a whole version.
    Kept {
        spill: Arc<Spill>,
        place: Place,
        len: u32,
        depth: u8,
    },
    /// `of` with its `metadata.resourceVersion` set to `rv` (as [`crate::json::with_resource_version`]
    /// does), made when served.
    Rewritten { of: Json, rv: u64 },
}

/// Where a kept version's record is in its spill file: its offset, its length, and whether it is
/// a delta. A delta's record is the [`Place`] of its base (its offset as a `u64`, its length as
/// a `u32`), then the pieces that rebuild it from the base's bytes; a whole version's record is
/// its bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    /// The offset, with [`DELTA`] set for a delta.
    at: u64,
    len: u32,
}

/// [`Place::at`]: the record is a delta.
const DELTA: u64 = 1 << 63;

impl Place {
    /// The place as two numbers (for a row of the timeline).
    pub fn to_parts(self) -> (u64, u32) {
        (self.at, self.len)
    }

    /// The place [`Place::to_parts`] gave.
    pub fn from_parts(at: u64, len: u32) -> Place {
        Place { at, len }
    }

    fn offset(self) -> u64 {
        self.at & !DELTA
    }

    fn is_delta(self) -> bool {
        self.at & DELTA != 0
    }

    /// The record's bytes.
    fn read(self, spill: &Spill) -> Vec<u8> {
        let mut out = Vec::new();
        spill.must_read(self.offset(), self.len as usize, &mut out);
        out
    }
}

/// A delta's record: its base, and its pieces.
fn split_delta(record: &[u8]) -> (Place, &[u8]) {
    let mut b = Take(record);
    match (b.u64(), b.u32()) {
        (Some(at), Some(len)) => (Place { at, len }, b.0),
        _ => (Place { at: 0, len: 0 }, &[]),
    }
}

/// What makes the pieces of a delta, with its buffers, and where it keeps what it makes.
#[derive(Debug)]
pub struct Encoder {
    encoder: DeltaEncoder,
    pieces: Vec<u8>,
    /// What given pieces rebuild, to check them.
    rebuilt: Vec<u8>,
    /// A delta's record: its base's place, then its pieces.
    record: Vec<u8>,
    spill: Arc<Spill>,
}

impl Encoder {
    /// An encoder that keeps what it makes in `spill`.
    pub fn new(spill: Arc<Spill>) -> Encoder {
        Encoder {
            encoder: DeltaEncoder::default(),
            pieces: Vec::new(),
            rebuilt: Vec::new(),
            record: Vec::new(),
            spill,
        }
    }

    /// `bytes`, kept whole in this encoder's spill; `None` past 4 GiB.
    pub fn whole(&self, bytes: &[u8]) -> Option<Json> {
        let len = u32::try_from(bytes.len()).ok()?;
        let at = self.spill.append(bytes, Holds::Whole);
        Some(Json(Arc::new(Node::Kept {
            spill: Arc::clone(&self.spill),
            place: Place { at, len },
            len,
            depth: 0,
        })))
    }
}

impl Json {
    /// `bytes`, kept whole in memory.
    pub fn whole(bytes: &[u8]) -> Json {
        Json(Arc::new(Node::Whole(bytes.into())))
    }

    /// The version kept at `place` in `spill`, `len` bytes long, `depth` deltas from a whole one
    /// (what [`Json::place`], [`Json::len`] and [`Json::depth`] of a kept version were).
    pub fn kept(spill: &Arc<Spill>, place: Place, len: u32, depth: u8) -> Json {
        Json(Arc::new(Node::Kept {
            spill: Arc::clone(spill),
            place,
            len,
            depth,
        }))
    }

    /// Where it is kept, if in a spill.
    pub fn place(&self) -> Option<Place> {
        match &*self.0 {
            Node::Kept { place, .. } => Some(*place),
            _ => None,
        }
    }

    /// `target`, kept as the pieces that rebuild it from `base` (whose bytes are `base_bytes`),
    /// or whole: every 16 versions, when the pieces would not be much smaller, and when `base`
    /// is not kept where the encoder keeps what it makes. `None` past 4 GiB.
    ///
    /// `given` are pieces that may rebuild `target` from `base_bytes` (the recording's delta
    /// body, whose base is the object's last version in its file): taken if they do, which is
    /// checked (rebuilding is a copy, encoding a search), encoded anew if they do not.
    pub fn after(
        base: &Json,
        base_bytes: &[u8],
        target: &[u8],
        given: Option<&[u8]>,
        encoder: &mut Encoder,
    ) -> Option<Json> {
        let depth = base.depth() + 1;
        let len = u32::try_from(target.len()).ok()?;
        let base_place = match &*base.0 {
            Node::Kept { spill, place, .. } if Arc::ptr_eq(spill, &encoder.spill) => *place,
            _ => return encoder.whole(target),
        };
        if depth >= KEYFRAME || base_bytes.is_empty() || target.is_empty() {
            return encoder.whole(target);
        }
        let rebuilt = &mut encoder.rebuilt;
        let pieces = match given {
            Some(pieces)
                if {
                    rebuilt.clear();
                    apply_delta(base_bytes, pieces, rebuilt).is_ok() && rebuilt == target
                } =>
            {
                pieces
            }
            _ => {
                encoder
                    .encoder
                    .encode(base_bytes, target, &mut encoder.pieces);
                &encoder.pieces
            }
        };
        if pieces.len() > target.len() / 2 {
            return encoder.whole(target);
        }
        let record = &mut encoder.record;
        record.clear();
        put_u64(record, base_place.at);
        put_u32(record, base_place.len);
        record.extend_from_slice(pieces);
        let stored = u32::try_from(record.len()).ok()?;
        let at = encoder.spill.append(record, Holds::Deltas);
        Some(Json(Arc::new(Node::Kept {
            spill: Arc::clone(&encoder.spill),
            place: Place {
                at: at | DELTA,
                len: stored,
            },
            len,
            depth,
        })))
    }

    /// True when a version kept after it would be kept whole: its chain of deltas is as long
    /// as one may be.
    pub fn chain_is_full(&self) -> bool {
        self.depth() + 1 >= KEYFRAME
    }

    /// How many deltas separate it from a whole version.
    pub fn depth(&self) -> u8 {
        match &*self.0 {
            Node::Kept { depth, .. } => *depth,
            Node::Whole(_) | Node::Rewritten { .. } => 0,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match &*self.0 {
            Node::Whole(b) => b.len(),
            Node::Kept { len, .. } => *len as usize,
            Node::Rewritten { .. } => self.bytes().len(),
        }
    }

    /// True for an empty object (a marker's).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes: borrowed when kept whole in memory, else read or rebuilt.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        match &*self.0 {
            Node::Whole(b) => Cow::Borrowed(b),
            Node::Kept { spill, place, .. } => Cow::Owned(rebuild(spill, *place)),
            Node::Rewritten { of, rv } => Cow::Owned(rewrite(&of.bytes(), *rv)),
        }
    }

    /// These bytes with `metadata.resourceVersion` set to `rv`, when they are read.
    pub fn rewritten(&self, rv: u64) -> Json {
        Json(Arc::new(Node::Rewritten {
            of: self.clone(),
            rv,
        }))
    }

    /// The length it has, or about (a rewritten version's is not worked out).
    pub fn len_hint(&self) -> usize {
        match &*self.0 {
            Node::Rewritten { of, .. } => of.len_hint() + 8,
            _ => self.len(),
        }
    }

    /// True when both are the same kept version (not only the same bytes).
    pub fn same(&self, other: &Json) -> bool {
        match (&*self.0, &*other.0) {
            (
                Node::Kept { spill, place, .. },
                Node::Kept {
                    spill: s, place: p, ..
                },
            ) => Arc::ptr_eq(spill, s) && place == p,
            _ => Arc::ptr_eq(&self.0, &other.0),
        }
    }
}

/// The bytes of the version kept at `place`: its whole version's, with the pieces of the chain's
/// deltas applied in order.
fn rebuild(spill: &Spill, place: Place) -> Vec<u8> {
    // The chain from this version back to its whole one, at most KEYFRAME long.
    let mut chain: Vec<Vec<u8>> = Vec::new();
    let mut at = place;
    while at.is_delta() {
        let record = at.read(spill);
        at = split_delta(&record).0;
        chain.push(record);
    }
    let mut bytes = at.read(spill);
    for record in chain.iter().rev() {
        bytes = apply(&bytes, split_delta(record).1);
    }
    bytes
}

/// The bytes of the versions written last, one per object, for a reader that goes through the
/// versions of objects in order (a watch): each is rebuilt from the one before with one delta.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// By the offset of the version's record.
    by_version: HashMap<u64, Vec<u8>>,
    /// The part of a spill file read last: versions in order were written in order, so one read
    /// brings the pieces of many.
    window: Option<Window>,
}

#[derive(Debug)]
struct Window {
    spill: Arc<Spill>,
    at: u64,
    bytes: Vec<u8>,
}

/// How much of a spill file a watch reads at once.
const WINDOW: usize = 256 << 10;

/// Past this many objects remembered, all are forgotten (the deleted ones would otherwise stay).
const REBUILT_OBJECTS: usize = 4096;

impl Rebuilt {
    /// Appends the bytes of `json` to `out`.
    pub fn write(&mut self, json: &Json, out: &mut Vec<u8>) {
        match &*json.0 {
            Node::Rewritten { of, rv } => {
                let mut recorded = Vec::new();
                self.write(of, &mut recorded);
                out.extend_from_slice(&rewrite(&recorded, *rv));
            }
            Node::Kept { spill, place, .. } if place.is_delta() => {
                let base = split_delta(self.read(spill, *place)).0;
                let bytes = match self.by_version.remove(&base.at) {
                    Some(base_bytes) => apply(&base_bytes, split_delta(self.read(spill, *place)).1),
                    None => rebuild(spill, *place),
                };
                out.extend_from_slice(&bytes);
                if self.by_version.len() >= REBUILT_OBJECTS {
                    self.by_version.clear();
                }
                self.by_version.insert(place.at, bytes);
            }
            _ => out.extend_from_slice(&json.bytes()),
        }
    }

    /// The record at `place` in `spill`, through the window.
    fn read(&mut self, spill: &Arc<Spill>, place: Place) -> &[u8] {
        let (at, len) = (place.offset(), place.len as usize);
        let hit = self.window.as_ref().is_some_and(|w| {
            Arc::ptr_eq(&w.spill, spill)
                && w.at <= at
                && at + len as u64 <= w.at + w.bytes.len() as u64
        });
        if !hit {
            let want = len.max(WINDOW) as u64;
            let n = want.min(spill.len().saturating_sub(at)).max(len as u64) as usize;
            let mut bytes = Vec::with_capacity(n);
            spill.must_read(at, n, &mut bytes);
            self.window = Some(Window {
                spill: Arc::clone(spill),
                at,
                bytes,
            });
        }
        match &self.window {
            Some(w) => {
                let from = (at - w.at) as usize;
                &w.bytes[from..from + len]
            }
            None => &[],
        }
    }
}

/// `bytes` with `metadata.resourceVersion` set to `rv`; as they are if it cannot be (the server
/// rewrites only versions it checked it can rewrite).
fn rewrite(bytes: &[u8], rv: u64) -> Vec<u8> {
    crate::json::with_resource_version(bytes, &rv.to_string()).unwrap_or_else(|_| bytes.to_vec())
}

/// Applies pieces this server encoded: they rebuild their target from its base exactly
/// (rf-format's contract, checked by its tests on any bytes), so failing is a bug here.
fn apply(base: &[u8], pieces: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Err(e) = apply_delta(base, pieces, &mut out) {
        panic!("internal error: a kept version does not rebuild: {e}");
    }
    out
}

impl PartialEq for Json {
    fn eq(&self, other: &Json) -> bool {
        self.same(other) || (self.len() == other.len() && self.bytes() == other.bytes())
    }
}

impl Eq for Json {}

impl fmt::Debug for Json {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(&self.bytes()) {
            Ok(s) => write!(f, "Json({s})"),
            Err(_) => write!(f, "Json({} bytes)", self.len()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(n: usize) -> Vec<u8> {
        format!(
            r#"{{"metadata":{{"name":"web-1","resourceVersion":"{}","labels":{{"app":"web"}}}},"spec":{{"replicas":3,"image":"registry.example.com/web:1.{n}"}},"status":{{"ready":{}}}}}"#,
            1000 + n,
            n % 4
        )
        .into_bytes()
    }

    /// Versions 0 to `n - 1`, each kept after the one before, in `spill`.
    fn chain_in(spill: Arc<Spill>, n: usize) -> Vec<Json> {
        let mut encoder = Encoder::new(spill);
        let mut kept: Vec<Json> = vec![encoder.whole(&version(0)).unwrap()];
        for n in 1..n {
            let base = kept[n - 1].clone();
            kept.push(
                Json::after(&base, &version(n - 1), &version(n), None, &mut encoder).unwrap(),
            );
        }
        kept
    }

    fn chain(n: usize) -> Vec<Json> {
        chain_in(Spill::memory(), n)
    }

    #[test]
    fn every_version_rebuilds_to_its_bytes_in_and_out_of_order() {
        for spill in [Spill::memory(), Spill::create().unwrap()] {
            let kept = chain_in(spill, 50);
            // Mostly deltas, a whole one every KEYFRAME.
            let deltas = kept.iter().filter(|j| j.depth() > 0).count();
            assert!(deltas > 40, "{deltas} deltas");
            assert!(kept.iter().all(|j| j.depth() < KEYFRAME));
            for (n, j) in kept.iter().enumerate().rev() {
                assert_eq!(&*j.bytes(), version(n).as_slice(), "version {n}");
                assert_eq!(j.len(), version(n).len());
            }
            assert_eq!(kept[7], Json::whole(&version(7)));
            assert_ne!(kept[7], kept[8]);
        }
    }

    #[test]
    fn a_version_named_by_its_place_alone_is_the_same_version() {
        let spill = Spill::create().unwrap();
        let kept = chain_in(Arc::clone(&spill), 40);
        spill.flush().unwrap();
        for (n, j) in kept.iter().enumerate() {
            let (at, len) = j.place().unwrap().to_parts();
            let again = Json::kept(
                &spill,
                Place::from_parts(at, len),
                j.len() as u32,
                j.depth(),
            );
            assert!(again.same(j), "version {n}");
            assert_eq!(&*again.bytes(), version(n).as_slice(), "version {n}");
        }
        assert!(!kept[3].same(&kept[4]));
    }

    #[test]
    fn a_reader_in_order_writes_every_version() {
        let kept = chain(40);
        let mut rebuilt = Rebuilt::default();
        // In order, from the middle of a chain, skipping some, and one twice.
        for n in [5, 6, 7, 9, 10, 10, 11, 30, 31, 39, 0] {
            let mut out = b"x".to_vec();
            rebuilt.write(&kept[n], &mut out);
            assert_eq!(&out[1..], version(n).as_slice(), "version {n}");
        }
        // One remembered per run of versions sent in order (7, 11, 31, 39), not one per version.
        assert_eq!(rebuilt.by_version.len(), 4);
    }

    #[test]
    fn given_pieces_are_kept_when_they_rebuild_the_version_and_encoded_anew_when_not() {
        let spill = Spill::memory();
        let mut encoder = Encoder::new(Arc::clone(&spill));
        let (base_bytes, target) = (version(1), version(2));
        let base = encoder.whole(&base_bytes).unwrap();
        let pieces_of = |json: &Json| {
            let record = json.place().unwrap().read(&spill);
            split_delta(&record).1.to_vec()
        };
        // Pieces the encoder would not write: the first byte copied alone, then the rest.
        let mut given = Vec::new();
        DeltaEncoder::default().encode(&base_bytes, &target[1..], &mut given);
        given.splice(0..0, [2, 0]);
        let mut own = Vec::new();
        DeltaEncoder::default().encode(&base_bytes, &target, &mut own);
        assert_ne!(given, own);
        let taken = Json::after(&base, &base_bytes, &target, Some(&given), &mut encoder).unwrap();
        assert_eq!(pieces_of(&taken), given);
        assert_eq!(&*taken.bytes(), &target[..]);
        // Pieces of another version: not what rebuilds this one, so its own are encoded.
        let mut wrong = Vec::new();
        DeltaEncoder::default().encode(&base_bytes, &version(3), &mut wrong);
        for given in [&wrong[..], b"\xff"] {
            let json = Json::after(&base, &base_bytes, &target, Some(given), &mut encoder).unwrap();
            assert_eq!(pieces_of(&json), own);
            assert_eq!(&*json.bytes(), &target[..]);
        }
    }

    #[test]
    fn unlike_bytes_are_kept_whole() {
        let mut encoder = Encoder::new(Spill::memory());
        let a = encoder.whole(b"{\"a\":1}").unwrap();
        let b = Json::after(
            &a,
            b"{\"a\":1}",
            b"[\"entirely\",\"different\"]",
            None,
            &mut encoder,
        )
        .unwrap();
        assert_eq!(b.depth(), 0);
        let empty = Json::after(&a, b"{\"a\":1}", b"", None, &mut encoder).unwrap();
        assert!(empty.is_empty());
        assert_eq!(&*empty.bytes(), b"");
        // A base not kept in the encoder's spill is not one a delta can name.
        let memory = Json::whole(b"{\"a\":1}");
        let c = Json::after(&memory, b"{\"a\":1}", b"{\"a\":2}", None, &mut encoder).unwrap();
        assert_eq!(c.depth(), 0);
        assert_eq!(&*c.bytes(), b"{\"a\":2}");
    }
}
