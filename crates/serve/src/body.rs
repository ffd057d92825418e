//! An object's JSON as the server keeps it. The server keeps every version of every object, and
//! most versions repeat the one before almost byte for byte: a version is kept as the pieces
//! that rebuild it from the one before (the recording's own delta bodies, docs/format.md), with
//! a whole one every [`KEYFRAME`] versions so that rebuilding one never walks far. On 100,000
//! records of the bench file the served versions take 51 MB kept so, 290 MB whole.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use rf_format::{DeltaEncoder, apply_delta};

use crate::spill::Spill;

/// A version this many steps from a whole one is kept whole.
const KEYFRAME: u8 = 16;

/// The JSON of one version of an object (cheap to clone: shared).
#[derive(Clone)]
pub struct Json(Arc<Node>);

enum Node {
    /// Whole bytes; `spill` is where they and the pieces of the deltas after them are, if
    /// not in memory.
    Whole {
        stored: Stored,
        spill: Option<Arc<Spill>>,
    },
    /// `len` bytes, rebuilt by applying `pieces` to `base`'s bytes.
    Delta {
        base: Json,
        pieces: Stored,
        depth: u8,
        len: u32,
    },
    /// `of` with its `metadata.resourceVersion` set to `rv` (as [`crate::json::with_resource_version`]
    /// does), made when served.
    Rewritten { of: Json, rv: u64 },
}

/// Bytes, in memory or in a [`Spill`] file (the one of the whole version a chain starts
/// from: a version is kept in about 48 bytes of memory, as many versions are).
enum Stored {
    Memory(Box<[u8]>),
    /// Where ([`SPILLED_AT_BITS`]) and how many bytes.
    Spilled(u64),
}

/// A spilled piece's place is kept in the low 40 bits (a terabyte of scratch file), its length in
/// the 24 above (16 MiB; a longer one is kept in memory).
const SPILLED_AT_BITS: u32 = 40;

impl Stored {
    fn spilled(at: u64, len: usize) -> Option<Stored> {
        let len = u64::try_from(len).ok()?;
        (at < 1 << SPILLED_AT_BITS && len < 1 << (64 - SPILLED_AT_BITS))
            .then_some(Stored::Spilled(at | len << SPILLED_AT_BITS))
    }

    fn len(&self) -> usize {
        match self {
            Stored::Memory(b) => b.len(),
            Stored::Spilled(place) => (place >> SPILLED_AT_BITS) as usize,
        }
    }

    /// Where it is in its spill file, and its length.
    fn place(&self) -> Option<(u64, usize)> {
        match self {
            Stored::Memory(_) => None,
            Stored::Spilled(place) => Some((place & ((1 << SPILLED_AT_BITS) - 1), self.len())),
        }
    }

    fn get<'a>(&'a self, spill: Option<&Arc<Spill>>) -> Cow<'a, [u8]> {
        match (self, self.place(), spill) {
            (Stored::Memory(b), _, _) => Cow::Borrowed(b),
            (_, Some((at, len)), Some(spill)) => {
                let mut out = Vec::new();
                read_spilled(spill, at, len, &mut out);
                Cow::Owned(out)
            }
            _ => panic!("internal error: spilled bytes without their spill file"),
        }
    }
}

/// Appends the `len` bytes at `at` in `spill` to `out`.
fn read_spilled(spill: &Spill, at: u64, len: usize, out: &mut Vec<u8>) {
    if let Err(e) = spill.read(at, len, out) {
        // The server's own scratch file, written before any request: losing it (a full or
        // removed temp directory) leaves nothing true to answer.
        panic!("internal error: the server's spill file cannot be read: {e}");
    }
}

/// What makes the pieces of a delta, with its buffers, and where it keeps what it makes.
#[derive(Debug, Default)]
pub struct Encoder {
    encoder: DeltaEncoder,
    pieces: Vec<u8>,
    /// Where kept bytes go: memory when `None`.
    spill: Option<Arc<Spill>>,
}

impl Encoder {
    /// An encoder that keeps what it makes in `spill`.
    pub fn spilling(spill: Arc<Spill>) -> Encoder {
        Encoder {
            spill: Some(spill),
            ..Encoder::default()
        }
    }

    /// `bytes` in `spill` (if it can take them), else in memory.
    fn store(spill: Option<&Arc<Spill>>, bytes: &[u8]) -> Stored {
        if let Some(spill) = spill {
            if !bytes.is_empty() && Stored::spilled(spill.len(), bytes.len()).is_some() {
                if let Some(stored) = spill
                    .append(bytes)
                    .ok()
                    .and_then(|at| Stored::spilled(at, bytes.len()))
                {
                    return stored;
                }
            }
        }
        Stored::Memory(bytes.into())
    }

    /// `bytes`, kept whole where this encoder keeps what it makes.
    pub fn whole(&self, bytes: &[u8]) -> Json {
        let stored = Encoder::store(self.spill.as_ref(), bytes);
        let spill = match stored {
            Stored::Spilled(_) => self.spill.clone(),
            Stored::Memory(_) => None,
        };
        Json(Arc::new(Node::Whole { stored, spill }))
    }
}

impl Json {
    /// `bytes`, kept whole.
    pub fn whole(bytes: &[u8]) -> Json {
        Json(Arc::new(Node::Whole {
            stored: Stored::Memory(bytes.into()),
            spill: None,
        }))
    }

    /// `target`, kept as the pieces that rebuild it from `base` (whose bytes are `base_bytes`),
    /// or whole: every 16 versions, and when the pieces would not be much smaller.
    pub fn after(base: &Json, base_bytes: &[u8], target: &[u8], encoder: &mut Encoder) -> Json {
        let depth = base.depth() + 1;
        let (Ok(len), true) = (u32::try_from(target.len()), depth < KEYFRAME) else {
            return encoder.whole(target);
        };
        if base_bytes.is_empty() || target.is_empty() {
            return encoder.whole(target);
        }
        encoder
            .encoder
            .encode(base_bytes, target, &mut encoder.pieces);
        if encoder.pieces.len() > target.len() / 2 {
            return encoder.whole(target);
        }
        // The pieces go where the chain's whole version is.
        let pieces = Encoder::store(base.spill(), &encoder.pieces);
        Json(Arc::new(Node::Delta {
            base: base.clone(),
            pieces,
            depth,
            len,
        }))
    }

    /// How many deltas separate it from a whole version.
    fn depth(&self) -> u8 {
        match &*self.0 {
            Node::Whole { .. } | Node::Rewritten { .. } => 0,
            Node::Delta { depth, .. } => *depth,
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        match &*self.0 {
            Node::Whole { stored, .. } => stored.len(),
            Node::Delta { len, .. } => *len as usize,
            Node::Rewritten { .. } => self.bytes().len(),
        }
    }

    /// True for an empty object (a marker's).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Its bytes: borrowed when kept whole, else rebuilt.
    pub fn bytes(&self) -> Cow<'_, [u8]> {
        match &*self.0 {
            Node::Whole { stored, spill } => stored.get(spill.as_ref()),
            Node::Delta { .. } => Cow::Owned(self.rebuild()),
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

    /// The spill file of the whole version its chain starts from, if its bytes are in one.
    fn spill(&self) -> Option<&Arc<Spill>> {
        let mut at = self;
        loop {
            match &*at.0 {
                Node::Whole { spill, .. } => return spill.as_ref(),
                Node::Delta { base, .. } => at = base,
                Node::Rewritten { .. } => return None,
            }
        }
    }

    /// True when both are the same kept version (not only the same bytes).
    pub fn same(&self, other: &Json) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    fn rebuild(&self) -> Vec<u8> {
        // The chain from this version back to its whole one, at most KEYFRAME long.
        let mut chain: Vec<&Stored> = Vec::with_capacity(usize::from(KEYFRAME));
        let mut at = self;
        let (whole, spill) = loop {
            match &*at.0 {
                Node::Rewritten { .. } => break (Cow::Owned(at.bytes().into_owned()), None),
                Node::Whole { stored, spill } => {
                    break (stored.get(spill.as_ref()), spill.as_ref());
                }
                Node::Delta { base, pieces, .. } => {
                    chain.push(pieces);
                    at = base;
                }
            }
        };
        // The first delta applied to the whole version where it is, not to a copy.
        let mut bytes: Option<Vec<u8>> = None;
        for pieces in chain.iter().rev() {
            bytes = Some(apply(
                bytes.as_deref().unwrap_or(&whole),
                &pieces.get(spill),
            ));
        }
        bytes.unwrap_or_else(|| whole.into_owned())
    }
}

/// The bytes of the versions written last, one per object, for a reader that goes through the
/// versions of objects in order (a watch): each is rebuilt from the one before with one delta.
#[derive(Debug, Default)]
pub struct Rebuilt {
    /// By the address of the version (its [`Json`] is kept with it, so the address stays its).
    by_version: HashMap<usize, (Json, Vec<u8>)>,
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
        if let Node::Rewritten { of, rv } = &*json.0 {
            let mut recorded = Vec::new();
            self.write(of, &mut recorded);
            out.extend_from_slice(&rewrite(&recorded, *rv));
            return;
        }
        let Node::Delta { base, pieces, .. } = &*json.0 else {
            out.extend_from_slice(&json.bytes());
            return;
        };
        let bytes = match self.by_version.remove(&address(base)) {
            Some((_, base_bytes)) => match (pieces.place(), json.spill()) {
                (Some((at, len)), Some(spill)) => apply(&base_bytes, self.read(spill, at, len)),
                _ => apply(&base_bytes, &pieces.get(json.spill())),
            },
            None => json.rebuild(),
        };
        out.extend_from_slice(&bytes);
        if self.by_version.len() >= REBUILT_OBJECTS {
            self.by_version.clear();
        }
        self.by_version.insert(address(json), (json.clone(), bytes));
    }
}

impl Rebuilt {
    /// The `len` bytes at `at` in `spill`, through the window.
    fn read(&mut self, spill: &Arc<Spill>, at: u64, len: usize) -> &[u8] {
        let hit = self.window.as_ref().is_some_and(|w| {
            Arc::ptr_eq(&w.spill, spill)
                && w.at <= at
                && at + len as u64 <= w.at + w.bytes.len() as u64
        });
        if !hit {
            let want = len.max(WINDOW) as u64;
            let n = want.min(spill.len().saturating_sub(at)).max(len as u64) as usize;
            let mut bytes = Vec::with_capacity(n);
            read_spilled(spill, at, n, &mut bytes);
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

fn address(json: &Json) -> usize {
    Arc::as_ptr(&json.0) as usize
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

    /// Versions 0 to `n - 1`, each kept after the one before.
    fn chain(n: usize) -> Vec<Json> {
        let mut encoder = Encoder::default();
        let mut kept: Vec<Json> = vec![Json::whole(&version(0))];
        for n in 1..n {
            let base = kept[n - 1].clone();
            kept.push(Json::after(
                &base,
                &version(n - 1),
                &version(n),
                &mut encoder,
            ));
        }
        kept
    }

    #[test]
    fn a_version_takes_48_bytes_of_memory_with_its_counts() {
        assert!(
            std::mem::size_of::<Node>() <= 32,
            "{}",
            std::mem::size_of::<Node>()
        );
    }

    #[test]
    fn every_version_rebuilds_to_its_bytes_in_and_out_of_order() {
        let kept = chain(50);
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
    fn unlike_bytes_are_kept_whole() {
        let mut encoder = Encoder::default();
        let a = Json::whole(b"{\"a\":1}");
        let b = Json::after(
            &a,
            b"{\"a\":1}",
            b"[\"entirely\",\"different\"]",
            &mut encoder,
        );
        assert_eq!(b.depth(), 0);
        let empty = Json::after(&a, b"{\"a\":1}", b"", &mut encoder);
        assert!(empty.is_empty());
        assert_eq!(&*empty.bytes(), b"");
    }
}
