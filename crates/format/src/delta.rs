//! Format version 2's delta bodies: a record's object written as the changes from its *base*,
//! the object of the latest earlier record of the same object in the same file.
//!
//! Watch events of one object repeat almost all of its JSON: a Rollout's status moves, its
//! resourceVersion changes, its spec and metadata stay. Writing only the changed bytes gives
//! deflate about a sixth of the bytes to compress (compressing was about half of what `record`
//! spent per event), and makes recordings about half the size (docs/format.md, "Delta bodies").
//!
//! The writer and the reader keep the same [`Bases`], updated by the same rule after each record
//! ([`Bases::after`]), so a reader rebuilds exactly the bytes the writer was given.

use std::collections::HashMap;

use foldhash::fast::RandomState;

use crate::MAX_FRAME_LEN;
use crate::codec::Cursor;
use crate::record::{Kind, Op, Record};

/// The total cost of the bases kept (8 MiB), part of the format: when keeping an object would
/// pass it, the bases written or read longest ago are dropped first. Objects that change often
/// stay; one that changes rarely may be written whole at its next change.
pub(crate) const BASES_BUDGET: usize = 8 * 1024 * 1024;

/// What a base costs besides its object and the strings of its key: so that many tiny objects
/// cannot make the table large (at most `BASES_BUDGET / 64` bases).
pub(crate) const BASE_OVERHEAD: usize = 64;

/// What keeping `rec`'s object as a base costs of the budget (docs/format.md): its length, the
/// lengths of the key's strings, and [`BASE_OVERHEAD`].
fn cost(rec: &Record) -> usize {
    let kind = match &rec.kind {
        Kind::Other {
            group,
            version,
            kind,
        } => group.len() + version.len() + kind.len(),
        _ => 0,
    };
    rec.object.len() + rec.namespace.len() + rec.name.len() + kind + BASE_OVERHEAD
}

/// The object each (kind, namespace, name) had at its latest record, for the records after it.
///
/// The rule (docs/format.md, "Delta bodies"): after a record whose object is not empty, that
/// object becomes the base of its kind, namespace and name, unless the record is `Deleted`,
/// which leaves none. Records without an object (list markers, gaps) change nothing. The bases
/// cost at most [`BASES_BUDGET`] (see [`cost`]): to keep a new one, the least recently kept are
/// dropped, and an object that costs more than the budget is not kept. Memory is therefore bounded
/// whatever the file holds (objects that are never deleted, such as Events a cluster keeps for
/// an hour, would otherwise accumulate).
#[derive(Debug, Default)]
pub(crate) struct Bases {
    /// The slot of each key's base (foldhash: a record's key is hashed once per record, and
    /// SipHash, the standard one, cost more than the lookup itself).
    map: HashMap<Box<[u8]>, u32, RandomState>,
    /// The bases, linked from the least to the most recently kept (an LRU list in a slab).
    slots: Vec<Slot>,
    free: Vec<u32>,
    oldest: Option<u32>,
    newest: Option<u32>,
    /// The cost of the bases kept.
    total: usize,
    key: Vec<u8>,
}

#[derive(Debug)]
struct Slot {
    key: Box<[u8]>,
    object: Vec<u8>,
    cost: usize,
    older: Option<u32>,
    newer: Option<u32>,
}

/// `rec`'s key looked up in [`Bases`]: its slot, if it has a base. Made by [`Bases::find`] for
/// one record, and used for that record only (a written or read record looks its key up once).
#[derive(Debug)]
#[must_use]
pub(crate) struct Found(Option<u32>);

impl Bases {
    /// Looks `rec`'s kind, namespace and name up.
    pub(crate) fn find(&mut self, rec: &Record) -> Found {
        rec.identity_into(&mut self.key);
        Found(self.map.get(self.key.as_slice()).copied())
    }

    /// The base [`find`](Bases::find) found, if any.
    pub(crate) fn base(&self, found: &Found) -> Option<&[u8]> {
        found.0.map(|at| self.slots[at as usize].object.as_slice())
    }

    /// The base of `rec`'s object, if its kind, namespace and name have one.
    #[cfg(test)]
    fn get(&mut self, rec: &Record) -> Option<&[u8]> {
        let found = self.find(rec);
        self.base(&found)
    }

    /// Applies the rule to `rec`, once it is written or read.
    #[cfg(test)]
    fn after(&mut self, rec: &Record) {
        let found = self.find(rec);
        self.after_found(rec, found);
    }

    /// Applies the rule to `rec`, once it is written or read; `found` is [`find`](Bases::find)
    /// of `rec`, with no change to the bases since.
    pub(crate) fn after_found(&mut self, rec: &Record, found: Found) {
        if rec.object.is_empty() {
            return;
        }
        let cost = cost(rec);
        let keep = !matches!(rec.op, Op::Deleted { .. }) && cost <= BASES_BUDGET;
        match (found.0, keep) {
            (Some(at), true) => {
                // The common case: a newer version of a kept object.
                self.unlink(at);
                let slot = &mut self.slots[at as usize];
                self.total = self.total - slot.cost + cost;
                slot.cost = cost;
                // The budget counts lengths: keep each allocation close to its length, so
                // that memory is what the budget says (within a quarter).
                // An object that grew gets an eighth to spare: most grow by a few bytes at a
                // time (a counter gains a digit), and each was a new allocation.
                let len = rec.object.len();
                slot.object.clear();
                if slot.object.capacity() < len || slot.object.capacity() > len + len / 4 {
                    slot.object = Vec::with_capacity(len + len / 8);
                }
                slot.object.extend_from_slice(&rec.object);
                self.push_newest(at);
            }
            (Some(at), false) => self.drop_slot(at),
            (None, true) => {
                let key: Box<[u8]> = self.key.as_slice().into();
                let slot = Slot {
                    key: key.clone(),
                    object: rec.object.clone(),
                    cost,
                    older: None,
                    newer: None,
                };
                let at = match self.free.pop() {
                    Some(at) => {
                        self.slots[at as usize] = slot;
                        at
                    }
                    None => {
                        self.slots.push(slot);
                        (self.slots.len() - 1) as u32
                    }
                };
                self.map.insert(key, at);
                self.total += cost;
                self.push_newest(at);
            }
            (None, false) => {}
        }
        while self.total > BASES_BUDGET {
            let Some(at) = self.oldest else { break };
            self.drop_slot(at);
        }
    }

    fn drop_slot(&mut self, at: u32) {
        self.unlink(at);
        let slot = &mut self.slots[at as usize];
        self.total -= slot.cost;
        let key = std::mem::take(&mut slot.key);
        slot.object = Vec::new();
        self.map.remove(&key);
        self.free.push(at);
    }

    fn unlink(&mut self, at: u32) {
        let (older, newer) = {
            let slot = &self.slots[at as usize];
            (slot.older, slot.newer)
        };
        match older {
            Some(o) => self.slots[o as usize].newer = newer,
            None => self.oldest = newer,
        }
        match newer {
            Some(n) => self.slots[n as usize].older = older,
            None => self.newest = older,
        }
    }

    fn push_newest(&mut self, at: u32) {
        let slot = &mut self.slots[at as usize];
        slot.older = self.newest;
        slot.newer = None;
        match self.newest {
            Some(n) => self.slots[n as usize].newer = Some(at),
            None => self.oldest = Some(at),
        }
        self.newest = Some(at);
    }
}

/// Copies shorter than this are written as inserted bytes: a copy piece costs up to 6 bytes.
const MIN_COPY: usize = 8;

/// How many of the base's next boundaries are tried before its index.
const NEAR_BOUNDARIES: usize = 4;

/// At most this many earlier places in the base are tried for one resynchronization.
const MAX_CANDIDATES: usize = 8;

/// Where the writer looks for the bytes of a target in its base.
#[derive(Debug, Default)]
pub struct Encoder {
    /// A hash table of the base's boundaries by their first 8 bytes: for each slot, 1 + the
    /// index in `at` of the first boundary with that hash (0: none). Built only when a target
    /// changes the base's structure, not for values changed in place.
    head: Vec<u32>,
    /// The offset of each boundary in the base, in order, and the index of the next boundary
    /// with the same hash (0: none; boundaries chain from earlier to later).
    at: Vec<u32>,
    next: Vec<u32>,
    indexed: bool,
}

impl Encoder {
    /// Writes into `out` the pieces that rebuild `target` from `base` (docs/format.md, "Delta
    /// bodies"). `out` is cleared first. The pieces are found at JSON structure boundaries (after
    /// `,`, `{` and `[`): a changed value is skipped on both sides at once; inserted or removed
    /// members are found again through an index of the base's boundaries. Any bytes rebuild
    /// exactly, JSON or not; only the size depends on the structure.
    pub fn encode(&mut self, base: &[u8], target: &[u8], out: &mut Vec<u8>) {
        out.clear();
        self.indexed = false;
        let (mut i, mut j, mut literal, mut misses) = (0usize, 0usize, 0usize, 0u32);
        while i < target.len() {
            let m = common_prefix(&target[i..], base.get(j..).unwrap_or_default());
            if m >= MIN_COPY {
                insert(out, &target[literal..i]);
                copy(out, j, m);
                i += m;
                j += m;
                literal = i;
                misses = 0;
                continue;
            }
            // The bytes at `i + m` differ: go on at the next boundary of the target.
            let ti = next_boundary(target, i + m);
            if ti >= target.len() {
                break;
            }
            // A value changed in place: the base goes on at its own next boundary, or at one of
            // the next few (a value with a `,` in it, members removed), or at the start of the
            // member that differs (members inserted before it).
            let rest = &target[ti..];
            let mut resync = None;
            let mut bj = j + m;
            for _ in 0..NEAR_BOUNDARIES {
                bj = next_boundary(base, bj);
                if bj >= base.len() {
                    break;
                }
                if common_prefix(rest, &base[bj..]) >= MIN_COPY {
                    resync = Some(bj);
                    break;
                }
            }
            if resync.is_none() {
                let here = prev_boundary(base, j + m);
                resync = (common_prefix(rest, &base[here..]) >= MIN_COPY).then_some(here);
            }
            // Otherwise, when the target went on without the base twice (members inserted,
            // moved, or more removed), look its next bytes up in the base.
            if resync.is_none() {
                misses += 1;
                if misses >= 2 {
                    resync = self.find(base, &target[ti..], j);
                }
            }
            if let Some(at) = resync {
                (j, misses) = (at, 0);
            }
            i = ti;
        }
        insert(out, &target[literal..]);
    }

    /// The offset in `base` with the longest common prefix with `rest` (at least `MIN_COPY`)
    /// among up to [`MAX_CANDIDATES`] boundaries that start with the same 8 bytes, from the
    /// first at or after `near`; on a tie, the first of them.
    fn find(&mut self, base: &[u8], rest: &[u8], near: usize) -> Option<usize> {
        let key = first8(rest)?;
        if !self.indexed {
            self.build(base);
        }
        if self.head.is_empty() {
            return None;
        }
        let mut link = self.head[slot(key, self.head.len())];
        let mut candidates = [0usize; MAX_CANDIDATES];
        let (mut n, mut seen) = (0, 0);
        // The chain runs in base order: keep the first few at or after `near`, or the last few
        // before it when none is.
        while link != 0 && seen < 8 * MAX_CANDIDATES {
            let k = link as usize - 1;
            let at = self.at[k] as usize;
            link = self.next[k];
            seen += 1;
            if first8(&base[at..]) != Some(key) {
                continue;
            }
            if at >= near && n > 0 && candidates[n - 1] < near {
                n = 0;
            }
            if n < MAX_CANDIDATES {
                candidates[n] = at;
                n += 1;
            } else if candidates[n - 1] < near {
                candidates.copy_within(1.., 0);
                candidates[n - 1] = at;
            } else {
                break;
            }
        }
        let mut best: Option<(usize, usize)> = None;
        for &at in &candidates[..n] {
            let len = common_prefix(rest, &base[at..]);
            if len >= MIN_COPY && best.is_none_or(|(_, l)| len > l) {
                best = Some((at, len));
            }
        }
        best.map(|(at, _)| at)
    }

    fn build(&mut self, base: &[u8]) {
        self.indexed = true;
        self.at.clear();
        self.next.clear();
        self.head.clear();
        if base.len() >= u32::MAX as usize {
            return;
        }
        let mut at = 0;
        while at + 8 <= base.len() {
            self.at.push(at as u32);
            at = next_boundary(base, at);
        }
        let slots = (self.at.len() * 2).next_power_of_two().max(16);
        self.head.resize(slots, 0);
        self.next.resize(self.at.len(), 0);
        // Inserted from the last boundary to the first, so that each chain runs in base order.
        for k in (0..self.at.len()).rev() {
            let at = self.at[k] as usize;
            if let Some(key) = first8(&base[at..]) {
                let s = slot(key, slots);
                self.next[k] = self.head[s];
                self.head[s] = k as u32 + 1;
            }
        }
    }
}

/// The slot of a key in a table of `slots` (a power of two) slots.
fn slot(key: u64, slots: usize) -> usize {
    (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize & (slots - 1)
}

/// The first offset after `from` that follows a `,`, `{` or `[` (or `bytes.len()`), looking at
/// eight bytes at a time.
fn next_boundary(bytes: &[u8], from: usize) -> usize {
    let mut at = from.min(bytes.len());
    while let Some(word) = first8(&bytes[at..]) {
        let mask = boundaries(word);
        if mask != 0 {
            return at + (mask.trailing_zeros() / 8) as usize + 1;
        }
        at += 8;
    }
    bytes[at..]
        .iter()
        .position(|&b| matches!(b, b',' | b'{' | b'['))
        .map_or(bytes.len(), |p| at + p + 1)
}

/// The last offset at or before `to` that follows a `,`, `{` or `[` (or 0).
fn prev_boundary(bytes: &[u8], to: usize) -> usize {
    let to = to.min(bytes.len());
    bytes[..to]
        .iter()
        .rposition(|&b| matches!(b, b',' | b'{' | b'['))
        .map_or(0, |p| p + 1)
}

/// The high bit of each byte of `word` (little-endian) that is a `,`, `{` or `[`, exactly.
fn boundaries(word: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    // A byte of `v` is zero exactly where the high bit of the result is set.
    let zero = |v: u64| !(((v & LOW7) + LOW7) | v | LOW7);
    // `{` (0x7b) and `[` (0x5b) differ only in bit 5.
    zero(word ^ 0x2c2c_2c2c_2c2c_2c2c)
        | zero((word | 0x2020_2020_2020_2020) ^ 0x7b7b_7b7b_7b7b_7b7b)
}

fn first8(bytes: &[u8]) -> Option<u64> {
    let head: [u8; 8] = bytes.get(..8)?.try_into().ok()?;
    Some(u64::from_le_bytes(head))
}

/// How many leading bytes `a` and `b` share, compared eight at a time.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = first8(&a[i..]).unwrap_or(0) ^ first8(&b[i..]).unwrap_or(0);
        if x != 0 {
            return i + (x.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    i
}

fn copy(out: &mut Vec<u8>, from: usize, len: usize) {
    put_varint(out, (len as u64) << 1);
    put_varint(out, from as u64);
}

fn insert(out: &mut Vec<u8>, bytes: &[u8]) {
    if !bytes.is_empty() {
        put_varint(out, ((bytes.len() as u64) << 1) | 1);
        out.extend_from_slice(bytes);
    }
}

/// bincode's unsigned varint (docs/format.md, "Primitives"), shortest form.
fn put_varint(out: &mut Vec<u8>, v: u64) {
    if v <= 250 {
        out.push(v as u8);
    } else if let Ok(v) = u16::try_from(v) {
        out.push(0xfb);
        out.extend_from_slice(&v.to_le_bytes());
    } else if let Ok(v) = u32::try_from(v) {
        out.push(0xfc);
        out.extend_from_slice(&v.to_le_bytes());
    } else {
        out.push(0xfd);
        out.extend_from_slice(&v.to_le_bytes());
    }
}

/// Rebuilds an object from `base` and the `pieces` of a delta body into `out` (cleared first).
/// The error says what is wrong and at which byte of the pieces.
pub fn apply(base: &[u8], pieces: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    if pieces.is_empty() {
        return Err("a delta body without pieces".to_owned());
    }
    // Into a new buffer (a record returned by value), the object's length first, so that it
    // is built in one allocation: it grew piece by piece, then was shrunk to fit. A reused
    // buffer grows as a Vec does, and is rarely too small. Malformed pieces end the count; the
    // pass below says what is wrong with them.
    if out.capacity() == 0 {
        out.reserve_exact(rebuilt_len(pieces).min(MAX_FRAME_LEN as usize));
    }
    let mut c = Cursor { bytes: pieces };
    let at = |c: &Cursor<'_>| pieces.len() - c.bytes.len();
    while !c.bytes.is_empty() {
        let piece = at(&c);
        let head = c
            .varint()
            .ok_or_else(|| format!("a malformed varint at byte {piece} of the delta"))?;
        let len = head >> 1;
        if len == 0 {
            return Err(format!("a piece of length 0 at byte {piece} of the delta"));
        }
        if (out.len() as u64).saturating_add(len) > u64::from(MAX_FRAME_LEN) {
            return Err(format!(
                "the rebuilt object would exceed {MAX_FRAME_LEN} bytes at byte {piece} of the delta"
            ));
        }
        let len = len as usize;
        let bytes = if head & 1 == 0 {
            let from_at = at(&c);
            let from = c
                .varint()
                .ok_or_else(|| format!("a malformed varint at byte {from_at} of the delta"))?;
            usize::try_from(from)
                .ok()
                .and_then(|from| base.get(from..from.checked_add(len)?))
                .ok_or_else(|| {
                    format!(
                        "a copy of {len} bytes from offset {from} of a {}-byte base at byte \
                         {piece} of the delta",
                        base.len()
                    )
                })?
        } else {
            let left = c.bytes.len();
            c.take(len).ok_or_else(|| {
                format!(
                    "an insert of {len} bytes at byte {piece} of the delta, which has {left} left"
                )
            })?
        };
        out.extend_from_slice(bytes);
    }
    Ok(())
}

/// The length of the object `pieces` rebuild, as far as they read.
fn rebuilt_len(pieces: &[u8]) -> usize {
    let mut c = Cursor { bytes: pieces };
    let mut total = 0usize;
    while let Some(head) = c.varint() {
        let Ok(len) = usize::try_from(head >> 1) else {
            break;
        };
        let read = if head & 1 == 0 {
            c.varint().map(|_| ())
        } else {
            c.take(len).map(|_| ())
        };
        if read.is_none() {
            break;
        }
        total = total.saturating_add(len);
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(base: &[u8], target: &[u8]) -> Vec<u8> {
        let mut pieces = Vec::new();
        Encoder::default().encode(base, target, &mut pieces);
        let mut out = Vec::new();
        if target.is_empty() {
            assert!(pieces.is_empty());
        } else {
            assert_eq!(
                rebuilt_len(&pieces),
                target.len(),
                "the length counted first"
            );
            apply(base, &pieces, &mut out).expect("the encoder's pieces apply");
            assert_eq!(out, target, "rebuilt from {pieces:?}");
        }
        pieces
    }

    const BASE: &[u8] = br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"name":"web","namespace":"shop","resourceVersion":"48211408","uid":"4ac84bfa-3cf7-4aed-802b-b8043f64ee03"},"spec":{"replicas":5,"strategy":{"canary":{"steps":[{"setWeight":20},{"pause":{}},{"setWeight":50}]}}},"status":{"currentPodHash":"6d4f8b9c7","currentStepIndex":1,"conditions":[{"type":"Available","status":"True"},{"type":"Progressing","status":"True"}]}}"#;

    #[test]
    fn a_value_changed_in_place_costs_about_its_own_bytes() {
        let target = String::from_utf8_lossy(BASE)
            .replace("48211408", "48211517")
            .replace(r#""currentStepIndex":1"#, r#""currentStepIndex":2"#);
        let pieces = roundtrip(BASE, target.as_bytes());
        assert!(pieces.len() < 40, "{} bytes of pieces", pieces.len());
    }

    #[test]
    fn inserted_and_removed_members_are_found_again() {
        let target = String::from_utf8_lossy(BASE)
            .replace(
                r#""metadata":{"#,
                r#""metadata":{"annotations":{"rollout.argoproj.io/revision":"3"},"#,
            )
            .replace(r#"{"type":"Available","status":"True"},"#, "");
        let pieces = roundtrip(BASE, target.as_bytes());
        assert!(pieces.len() < 110, "{} bytes of pieces", pieces.len());
    }

    #[test]
    fn any_bytes_rebuild_exactly() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let alphabet = b",{[]}:\"ab0";
        for _ in 0..2000 {
            let base: Vec<u8> = (0..next() % 300)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            let mut target = base.clone();
            for _ in 0..next() % 6 {
                let at = (next() as usize) % (target.len() + 1);
                match next() % 3 {
                    0 => target.insert(at, alphabet[(next() % 10) as usize]),
                    1 if at < target.len() => {
                        target.remove(at);
                    }
                    _ => {
                        let from = (next() as usize) % (base.len() + 1);
                        let len = ((next() as usize) % 40).min(base.len() - from);
                        let part = base[from..from + len].to_vec();
                        target.splice(at..at, part);
                    }
                }
            }
            roundtrip(&base, &target);
            roundtrip(&target, &base);
            roundtrip(&[], &target);
        }
    }

    #[test]
    fn boundaries_are_found_eight_bytes_at_a_time_as_one_at_a_time() {
        let text = br#"{"a":[1,2],"b":{"c":"x,y"},"d":";[{,"}ab{cdefghij,klmnopqrstu[vw"#;
        for from in 0..=text.len() + 2 {
            let slow = text
                .iter()
                .enumerate()
                .skip(from)
                .find(|(_, b)| matches!(b, b',' | b'{' | b'['))
                .map_or(text.len(), |(i, _)| i + 1);
            assert_eq!(next_boundary(text, from), slow, "from {from}");
        }
        for b in 0..=255u8 {
            let word = u64::from_le_bytes([b'a', b, b'a', b'a', b'a', b'a', b'a', b]);
            let want = if matches!(b, b',' | b'{' | b'[') {
                0x8000_0000_0000_8000
            } else {
                0
            };
            assert_eq!(boundaries(word), want, "byte {b:#04x}");
        }
    }

    #[test]
    fn bad_pieces_are_errors_that_say_where() {
        let mut out = Vec::new();
        let err = |pieces: &[u8], out: &mut Vec<u8>| apply(b"0123456789", pieces, out).unwrap_err();
        assert_eq!(err(&[], &mut out), "a delta body without pieces");
        assert_eq!(
            err(&[0x00], &mut out),
            "a piece of length 0 at byte 0 of the delta"
        );
        assert_eq!(
            err(&[0x08, 0x07], &mut out),
            "a copy of 4 bytes from offset 7 of a 10-byte base at byte 0 of the delta"
        );
        assert_eq!(
            err(&[0x03, b'a', 0x07, b'b'], &mut out),
            "an insert of 3 bytes at byte 2 of the delta, which has 1 left"
        );
        assert_eq!(
            err(&[0x03, b'a', 0xff], &mut out),
            "a malformed varint at byte 2 of the delta"
        );
        // Not the shortest form: 0xfb followed by 5.
        assert_eq!(
            err(&[0xfb, 5, 0], &mut out),
            "a malformed varint at byte 0 of the delta"
        );
        // Copies may overlap and repeat; they stay below the frame limit.
        let repeat: Vec<u8> = std::iter::repeat_n([0x14, 0x00], 7_000_000)
            .flatten()
            .collect();
        let e = err(&repeat, &mut out);
        assert!(e.starts_with("the rebuilt object would exceed"), "{e}");
    }

    /// A record of `kind` `ns/name`.
    fn record(kind: Kind, op: Op, name: &str, object: &[u8]) -> Record {
        Record {
            seq: 1,
            observed_at: crate::Timestamp(0),
            kind,
            op,
            namespace: "ns".to_owned(),
            name: name.to_owned(),
            uid: String::new(),
            resource_version: String::new(),
            actor: None,
            object: object.to_vec(),
        }
    }

    #[test]
    fn bases_follow_the_rule() {
        let rec = |op: Op, name: &str, object: &[u8]| record(Kind::Pod, op, name, object);
        let mut bases = Bases::default();
        bases.after(&rec(Op::Added, "a", b"{1}"));
        bases.after(&rec(Op::Added, "ab", b"{2}"));
        assert_eq!(bases.get(&rec(Op::Modified, "a", b"")), Some(&b"{1}"[..]));
        bases.after(&rec(Op::ListBegin, "a", b""));
        assert_eq!(bases.get(&rec(Op::Modified, "a", b"")), Some(&b"{1}"[..]));
        bases.after(&rec(Op::Modified, "a", b"{3}"));
        assert_eq!(bases.get(&rec(Op::Modified, "a", b"")), Some(&b"{3}"[..]));
        bases.after(&rec(Op::Deleted { inferred: false }, "a", b"{4}"));
        assert_eq!(bases.get(&rec(Op::Modified, "a", b"")), None);
        assert_eq!(bases.get(&rec(Op::Modified, "ab", b"")), Some(&b"{2}"[..]));
        let mut other = rec(Op::Modified, "ab", b"");
        other.kind = Kind::Service;
        assert_eq!(bases.get(&other), None);
    }

    #[test]
    fn bases_keep_at_most_the_budget_dropping_the_least_recently_kept() {
        // Each name is one byte and the namespace "ns": a quarter of the budget each.
        let quarter = vec![b'x'; BASES_BUDGET / 4 - BASE_OVERHEAD - 3];
        let rec = |name: &str, object: &[u8]| record(Kind::Event, Op::Added, name, object);
        let mut bases = Bases::default();
        for name in ["a", "b", "c", "d"] {
            bases.after(&rec(name, &quarter));
        }
        assert_eq!(bases.total, BASES_BUDGET);
        // "a" is kept again, so "b" is now the oldest: a fifth quarter drops it.
        bases.after(&rec("a", &quarter));
        bases.after(&rec("e", &quarter));
        let kept: Vec<bool> = ["a", "b", "c", "d", "e"]
            .iter()
            .map(|n| bases.get(&rec(n, b"")).is_some())
            .collect();
        assert_eq!(kept, [true, false, true, true, true]);
        assert_eq!(bases.total, BASES_BUDGET);
        // Larger than the budget: not kept, and it drops the key's older base.
        bases.after(&rec("c", &vec![b'y'; BASES_BUDGET]));
        assert!(bases.get(&rec("c", b"")).is_none());
        assert_eq!(bases.total, 3 * BASES_BUDGET / 4);
        let mut linked = 0;
        let mut at = bases.oldest;
        while let Some(a) = at {
            linked += 1;
            at = bases.slots[a as usize].newer;
        }
        assert_eq!((bases.map.len(), linked), (3, 3));
        // Tiny objects: at most budget / overhead of them.
        for n in 0..BASES_BUDGET / BASE_OVERHEAD + 10 {
            bases.after(&rec(&n.to_string(), b"{}"));
        }
        assert!(bases.map.len() < BASES_BUDGET / BASE_OVERHEAD);
        assert!(bases.total <= BASES_BUDGET);
    }
}
