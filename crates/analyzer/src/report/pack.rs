//! Findings kept compressed while a long recording is replayed, so that what the analyzer holds
//! follows the live objects and not the number of findings a day of records makes.
//!
//! Findings are collected in a small buffer; a full buffer is sorted into report order and
//! encoded (a private, length-prefixed binary encoding: exact, unlike the report's millisecond
//! times) into a deflated chunk. [`PackedFindings::iter`] merges the chunks back into one sorted
//! sequence, decoding one finding per chunk at a time. When the chunks grow many, they are
//! merged into one, so the merge never holds more than [`MAX_CHUNKS`] decoders.
//!
//! The report order is `(at, severity descending, rule, subject)`, ties in the order the
//! findings were made: each chunk is sorted stably, and the merge takes from the earlier chunk
//! on ties, which together are the stable sort of the whole sequence.
//!
//! Past a limit of compressed bytes in memory, further chunks go to a [`Spill`], a store the
//! caller provides (the command line's is an unlinked temporary file), so memory stays bounded
//! however many findings a long history makes. Without one, or where it refuses a chunk,
//! chunks stay in memory. This crate opens no file itself.

use std::cmp::Ordering;
use std::io::{Read, Write};

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use rf_format::{Kind, Timestamp};

use crate::report::end::Resolver;
use crate::report::finding::{Evidence, Finding, Remedy, Rule, Severity, Subject};

/// Findings per chunk.
pub(crate) const CHUNK: usize = 2048;

/// Chunks kept before they are merged into one.
pub(crate) const MAX_CHUNKS: usize = 32;

/// Compressed bytes kept in memory before chunks go to the [`Spill`], when there is one.
pub const SPILL_AFTER: usize = 2 * 1024 * 1024;

/// The report's order of findings.
pub(crate) fn report_order(a: &Finding, b: &Finding) -> Ordering {
    (a.at, std::cmp::Reverse(a.severity), a.rule, &a.subject).cmp(&(
        b.at,
        std::cmp::Reverse(b.severity),
        b.rule,
        &b.subject,
    ))
}

/// Where chunks of packed findings go once memory holds enough of them: bytes appended, read
/// back by offset, forgotten all at once. An implementation that cannot keep a chunk answers
/// `None` and the chunk stays in memory.
pub trait Spill: Send + Sync + std::fmt::Debug {
    /// Keeps `bytes` after those kept before; their offset, or `None` when they cannot be kept.
    fn append(&mut self, bytes: &[u8]) -> Option<u64>;
    /// Reads back `len` bytes kept at `offset`.
    fn read(&self, offset: u64, len: u64) -> Box<dyn Read + Send + '_>;
    /// Forgets every byte kept (their chunks have been merged into memory).
    fn clear(&mut self);
}

/// Sorted, compressed findings.
#[derive(Debug)]
pub struct PackedFindings {
    chunks: Vec<Chunk>,
    len: usize,
    worst: Option<Severity>,
    spill_after: usize,
    spill: Option<Box<dyn Spill>>,
    /// Marks, as they are read back, the findings the rollouts' later states moved past.
    resolver: Resolver,
}

impl Default for PackedFindings {
    fn default() -> Self {
        PackedFindings {
            chunks: Vec::new(),
            len: 0,
            worst: None,
            spill_after: SPILL_AFTER,
            spill: None,
            resolver: Resolver::default(),
        }
    }
}

#[derive(Debug)]
struct Chunk {
    deflated: Deflated,
    len: usize,
}

/// Where a chunk's compressed bytes are.
#[derive(Debug)]
enum Deflated {
    Memory(Vec<u8>),
    /// At `offset` of the spill, `len` bytes.
    Spilled {
        offset: u64,
        len: u64,
    },
}

impl PackedFindings {
    /// How many findings it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The most severe finding's severity.
    pub fn worst(&self) -> Option<Severity> {
        self.worst
    }

    /// Compressed bytes held in memory (not those in the spill).
    pub fn bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| match &c.deflated {
                Deflated::Memory(bytes) => bytes.len(),
                Deflated::Spilled { .. } => 0,
            })
            .sum()
    }

    /// Findings read back are marked resolved by `resolver` (known only once the analysis
    /// ended, after they were packed).
    pub(crate) fn resolve_with(&mut self, resolver: Resolver) {
        self.resolver = resolver;
    }

    /// Chunks go to `spill` once `after` compressed bytes are in memory.
    pub fn spill_to(mut self, spill: Box<dyn Spill>, after: usize) -> Self {
        self.spill = Some(spill);
        self.spill_after = after;
        self
    }

    /// Keeps a chunk of `len` findings in memory, or in the spill once memory holds enough.
    fn keep(&mut self, deflated: Vec<u8>, len: usize) {
        let full = self.bytes() + deflated.len() > self.spill_after;
        let spilled = match &mut self.spill {
            Some(spill) if full => spill.append(&deflated),
            _ => None,
        };
        let deflated = match spilled {
            Some(offset) => Deflated::Spilled {
                offset,
                len: deflated.len() as u64,
            },
            None => Deflated::Memory(deflated),
        };
        self.chunks.push(Chunk { deflated, len });
    }

    /// Adds findings (in the order they were made) as one chunk.
    pub fn push(&mut self, mut findings: Vec<Finding>) {
        if findings.is_empty() {
            return;
        }
        findings.sort_by(report_order);
        self.len += findings.len();
        self.worst = self.worst.max(findings.iter().map(|f| f.severity).max());
        let mut enc = Encoder::new();
        for f in &findings {
            enc.finding(f);
        }
        self.keep(enc.finish(), findings.len());
        if self.chunks.len() >= MAX_CHUNKS {
            self.compact();
        }
    }

    /// Merges every chunk into one (in memory, then kept as any new chunk is).
    fn compact(&mut self) {
        let mut enc = Encoder::new();
        let mut n = 0;
        for f in self.iter() {
            enc.finding(&f);
            n += 1;
        }
        self.chunks.clear();
        if let Some(spill) = &mut self.spill {
            spill.clear();
        }
        self.keep(enc.finish(), n);
    }

    /// Every finding, in report order.
    pub fn iter(&self) -> Merge<'_> {
        let mut cursors: Vec<Cursor<'_>> = self
            .chunks
            .iter()
            .map(|c| {
                let bytes: Box<dyn Read + Send + '_> = match (&c.deflated, &self.spill) {
                    (Deflated::Memory(bytes), _) => Box::new(&bytes[..]),
                    (Deflated::Spilled { offset, len }, Some(spill)) => spill.read(*offset, *len),
                    // A spilled chunk without its spill cannot be: it reads as empty, and the
                    // count check says findings were lost.
                    (Deflated::Spilled { .. }, None) => Box::new(std::io::empty()),
                };
                Cursor {
                    inflate: DeflateDecoder::new(bytes),
                    left: c.len,
                    head: None,
                    buf: Vec::new(),
                }
            })
            .collect();
        for c in &mut cursors {
            c.advance();
        }
        Merge {
            cursors,
            resolver: &self.resolver,
        }
    }
}

/// The sorted sequence of [`PackedFindings::iter`].
#[allow(missing_debug_implementations)]
pub struct Merge<'a> {
    cursors: Vec<Cursor<'a>>,
    resolver: &'a Resolver,
}

struct Cursor<'a> {
    inflate: DeflateDecoder<Box<dyn Read + Send + 'a>>,
    left: usize,
    head: Option<Finding>,
    buf: Vec<u8>,
}

impl Cursor<'_> {
    fn advance(&mut self) {
        self.head = None;
        if self.left == 0 {
            return;
        }
        self.left -= 1;
        // The chunks are this process's own bytes: a failure here is a bug, and ends this
        // chunk rather than the process (the count check in `Analyzer::finish` reports it).
        self.head = decode_one(&mut self.inflate, &mut self.buf);
        if self.head.is_none() {
            self.left = 0;
        }
    }
}

impl Iterator for Merge<'_> {
    type Item = Finding;

    fn next(&mut self) -> Option<Finding> {
        // Few cursors (at most MAX_CHUNKS): a scan beats a heap's bookkeeping. The first of
        // equal heads wins, which keeps the order the findings were made in.
        let mut best: Option<usize> = None;
        for (i, c) in self.cursors.iter().enumerate() {
            let Some(head) = &c.head else { continue };
            let better = match best.and_then(|b| self.cursors[b].head.as_ref()) {
                None => true,
                Some(current) => report_order(head, current) == Ordering::Less,
            };
            if better {
                best = Some(i);
            }
        }
        let cursor = &mut self.cursors[best?];
        let mut out = cursor.head.take();
        cursor.advance();
        if let Some(f) = &mut out {
            self.resolver.apply(f);
        }
        out
    }
}

struct Encoder {
    deflate: DeflateEncoder<Vec<u8>>,
    buf: Vec<u8>,
}

impl Encoder {
    fn new() -> Self {
        Encoder {
            // The fastest level: packing runs on the replaying thread, the critical one. On
            // the 1M-record bench file, level 6 (the default) spent 1.6% of analyze's CPU
            // here for 1.99 MB of chunks; level 1 spends 0.5% for 3.25 MB.
            deflate: DeflateEncoder::new(Vec::new(), Compression::fast()),
            buf: Vec::new(),
        }
    }

    fn finding(&mut self, f: &Finding) {
        self.buf.clear();
        let b = &mut self.buf;
        put_str(b, f.rule.id());
        b.push(match f.severity {
            Severity::Info => 0,
            Severity::Warning => 1,
            Severity::Error => 2,
        });
        put_subject(b, &f.subject);
        put_subject(b, &f.rollout);
        b.extend_from_slice(&f.at.0.to_le_bytes());
        put_str(b, &f.summary);
        put_str(b, &f.explanation);
        put_len(b, f.evidence.len());
        for e in &f.evidence {
            b.extend_from_slice(&e.file.to_le_bytes());
            b.extend_from_slice(&e.seq.to_le_bytes());
            b.extend_from_slice(&e.at.0.to_le_bytes());
            put_subject(b, &e.object);
            put_str(b, &e.detail);
            b.push(u8::from(e.listed));
        }
        put_str(b, &f.remedy.summary);
        put_len(b, f.remedy.commands.len());
        for c in &f.remedy.commands {
            put_str(b, c);
        }
        put_len(b, f.remedy.decisions.len());
        for c in &f.remedy.decisions {
            put_str(b, c);
        }
        put_str(b, &f.remedy.prevention);
        match &f.reconstructed {
            None => b.push(0),
            Some(r) => {
                b.push(1);
                for list in [&r.from, &r.unknown] {
                    put_len(b, list.len());
                    for line in list {
                        put_str(b, line);
                    }
                }
            }
        }
        match &f.resolved {
            None => b.push(0),
            Some(r) => {
                b.push(1);
                b.extend_from_slice(&r.at.0.to_le_bytes());
                put_str(b, &r.how);
            }
        }
        match &f.window {
            None => b.push(0),
            Some(w) => {
                b.push(1);
                b.extend_from_slice(&w.start.0.to_le_bytes());
                b.extend_from_slice(&w.end.map_or(i64::MIN, |t| t.0).to_le_bytes());
                b.extend_from_slice(&w.seconds.to_le_bytes());
            }
        }
        let mut framed = Vec::with_capacity(4 + self.buf.len());
        put_len(&mut framed, self.buf.len());
        framed.extend_from_slice(&self.buf);
        // Writing into memory cannot fail.
        let _ = self.deflate.write_all(&framed);
    }

    fn finish(self) -> Vec<u8> {
        self.deflate.finish().unwrap_or_default()
    }
}

fn put_len(b: &mut Vec<u8>, n: usize) {
    b.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_le_bytes());
}

fn put_str(b: &mut Vec<u8>, s: &str) {
    put_len(b, s.len());
    b.extend_from_slice(s.as_bytes());
}

fn put_subject(b: &mut Vec<u8>, s: &Subject) {
    match s.kind.known_index() {
        Some(i) => b.push(u8::try_from(i).unwrap_or(u8::MAX)),
        None => {
            b.push(u8::MAX);
            if let Kind::Other {
                group,
                version,
                kind,
            } = &s.kind
            {
                put_str(b, group);
                put_str(b, version);
                put_str(b, kind);
            }
        }
    }
    put_str(b, &s.namespace);
    put_str(b, &s.name);
}

/// Decodes the next finding of `r` through `buf`, the cursor's own (reused: a buffer grown
/// from nothing for each finding was a few reallocations per finding, and a report decodes
/// every finding twice).
fn decode_one(r: &mut impl Read, buf: &mut Vec<u8>) -> Option<Finding> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len).ok()?;
    let len = u32::from_le_bytes(len) as usize;
    buf.clear();
    r.take(len as u64).read_to_end(buf).ok()?;
    if buf.len() != len {
        return None;
    }
    let mut d = Decoder { b: buf };
    d.finding()
}

struct Decoder<'a> {
    b: &'a [u8],
}

impl Decoder<'_> {
    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let (head, rest) = self.b.split_at_checked(n)?;
        self.b = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.bytes(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.bytes(8)?.try_into().ok()?))
    }

    fn string(&mut self) -> Option<String> {
        let n = self.u32()? as usize;
        String::from_utf8(self.bytes(n)?.to_vec()).ok()
    }

    fn subject(&mut self) -> Option<Subject> {
        let kind = match self.u8()? {
            u8::MAX => Kind::Other {
                group: self.string()?,
                version: self.string()?,
                kind: self.string()?,
            },
            i => Kind::KNOWN.get(usize::from(i))?.clone(),
        };
        Some(Subject {
            kind,
            namespace: self.string()?,
            name: self.string()?,
        })
    }

    fn finding(&mut self) -> Option<Finding> {
        let rule = Rule::from_id(&self.string()?)?;
        let severity = match self.u8()? {
            0 => Severity::Info,
            1 => Severity::Warning,
            2 => Severity::Error,
            _ => return None,
        };
        let subject = self.subject()?;
        let rollout = self.subject()?;
        let at = Timestamp(self.i64()?);
        let summary = self.string()?;
        let explanation = self.string()?;
        let n = self.u32()? as usize;
        let mut evidence = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            evidence.push(Evidence {
                file: self.u32()?,
                seq: self.u64()?,
                at: Timestamp(self.i64()?),
                object: self.subject()?,
                detail: self.string()?,
                listed: self.u8()? == 1,
            });
        }
        let summary_r = self.string()?;
        let n = self.u32()? as usize;
        let mut commands = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            commands.push(self.string()?);
        }
        let n = self.u32()? as usize;
        let mut decisions = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            decisions.push(self.string()?);
        }
        let prevention = self.string()?;
        Some(Finding {
            rule,
            severity,
            subject,
            rollout,
            at,
            summary,
            explanation,
            evidence,
            remedy: Remedy {
                summary: summary_r,
                commands,
                decisions,
                prevention,
            },
            reconstructed: self.reconstructed()?,
            resolved: match self.u8()? {
                0 => None,
                1 => Some(crate::report::finding::Resolved {
                    at: Timestamp(self.i64()?),
                    how: self.string()?,
                }),
                _ => return None,
            },
            window: match self.u8()? {
                0 => None,
                1 => Some(crate::report::finding::Interval {
                    start: Timestamp(self.i64()?),
                    end: Some(self.i64()?).filter(|t| *t != i64::MIN).map(Timestamp),
                    seconds: self.i64()?,
                }),
                _ => return None,
            },
        })
    }

    fn strings(&mut self) -> Option<Vec<String>> {
        let n = self.u32()? as usize;
        let mut all = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            all.push(self.string()?);
        }
        Some(all)
    }

    fn reconstructed(&mut self) -> Option<Option<crate::report::finding::Reconstructed>> {
        Some(match self.u8()? {
            0 => None,
            1 => Some(crate::report::finding::Reconstructed {
                from: self.strings()?,
                unknown: self.strings()?,
            }),
            _ => return None,
        })
    }
}

impl serde::Serialize for PackedFindings {
    /// As the report's `findings` array, one finding decoded at a time.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(at: i64, rule: Rule, name: &str, n: usize) -> Finding {
        Finding::new(
            rule,
            Subject::new(Kind::Rollout, "ns", name),
            Subject::new(Kind::Rollout, "ns", name),
            Timestamp(at),
            format!("finding {n}"),
        )
        .explain(format!("explanation {n}"))
        .with_evidence([Evidence {
            file: 1,
            seq: n as u64,
            at: Timestamp(at + 1),
            object: Subject::new(
                Kind::Other {
                    group: "g".into(),
                    version: "v1".into(),
                    kind: "Thing".into(),
                },
                "ns",
                "x",
            ),
            detail: "détail ✓".into(),
            listed: true,
        }])
        .remedy("do".into(), vec!["a".into(), String::new()], "p".into())
    }

    #[test]
    fn merging_chunks_is_the_stable_sort_of_everything() {
        // Times repeat and go back, as settled findings do; equal keys keep their order.
        let all: Vec<Finding> = (0..5000)
            .map(|n| {
                let rule = if n % 3 == 0 {
                    Rule::PauseLost
                } else {
                    Rule::RerenderRestart
                };
                finding(((n * 7919) % 1000) as i64, rule, &format!("r{}", n % 5), n)
            })
            .collect();
        let mut packed = PackedFindings::default();
        for chunk in all.chunks(97) {
            packed.push(chunk.to_vec());
        }
        assert!(packed.chunks.len() < MAX_CHUNKS, "compacted");
        let mut expected = all.clone();
        expected.sort_by(report_order);
        let merged: Vec<Finding> = packed.iter().collect();
        assert_eq!(merged.len(), 5000);
        assert_eq!(merged, expected);
        assert_eq!(packed.len(), 5000);
        assert_eq!(packed.worst(), Some(Severity::Error));
    }

    fn many() -> (Vec<Finding>, Vec<Finding>) {
        let all: Vec<Finding> = (0..3000)
            .map(|n| finding(((n * 7919) % 1000) as i64, Rule::PauseLost, "r", n))
            .collect();
        let mut sorted = all.clone();
        sorted.sort_by(report_order);
        (all, sorted)
    }

    /// How many chunks are in the spill.
    fn spilled(packed: &PackedFindings) -> usize {
        packed
            .chunks
            .iter()
            .filter(|c| matches!(c.deflated, Deflated::Spilled { .. }))
            .count()
    }

    /// A spill in memory that keeps at most `room` bytes, and counts its clearings.
    #[derive(Debug, Default)]
    struct Kept {
        bytes: Vec<u8>,
        room: usize,
        cleared: usize,
    }

    impl Spill for Kept {
        fn append(&mut self, bytes: &[u8]) -> Option<u64> {
            if self.bytes.len() + bytes.len() > self.room {
                return None;
            }
            let at = self.bytes.len() as u64;
            self.bytes.extend_from_slice(bytes);
            Some(at)
        }
        fn read(&self, offset: u64, len: u64) -> Box<dyn Read + Send + '_> {
            let (from, to) = (offset as usize, (offset + len) as usize);
            Box::new(&self.bytes[from..to])
        }
        fn clear(&mut self) {
            self.bytes.clear();
            self.cleared += 1;
        }
    }

    fn kept(room: usize) -> Box<dyn Spill> {
        Box::new(Kept {
            room,
            ..Kept::default()
        })
    }

    #[test]
    fn spilled_chunks_read_back_as_the_sorted_findings() {
        let (all, sorted) = many();
        // Past 1 byte in memory: every chunk, and the merged one, goes to the spill.
        let mut packed = PackedFindings::default().spill_to(kept(usize::MAX), 1);
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        assert!(packed.chunks.len() < MAX_CHUNKS, "compacted at least once");
        assert_eq!(packed.bytes(), 0, "nothing held in memory");
        assert_eq!(spilled(&packed), packed.chunks.len(), "every chunk spilled");
        assert_eq!(packed.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(packed.len(), sorted.len());
        assert_eq!(
            serde_json::to_string(&packed).unwrap(),
            serde_json::to_string(&sorted).unwrap()
        );
    }

    #[test]
    fn chunks_stay_in_memory_up_to_the_limit_then_spill() {
        let (all, sorted) = many();
        let mut whole = PackedFindings::default();
        for chunk in all.chunks(500) {
            whole.push(chunk.to_vec());
        }
        let limit = whole.bytes() / 2;
        let mut packed = PackedFindings::default().spill_to(kept(usize::MAX), limit);
        for chunk in all.chunks(500) {
            packed.push(chunk.to_vec());
        }
        assert!(
            packed.bytes() > 0 && packed.bytes() <= limit,
            "{}",
            packed.bytes()
        );
        assert!(spilled(&packed) > 0);
        assert_eq!(packed.iter().collect::<Vec<_>>(), sorted);
    }

    #[test]
    fn a_spill_that_refuses_a_chunk_leaves_it_in_memory() {
        let (all, sorted) = many();
        let mut packed = PackedFindings::default().spill_to(kept(0), 1);
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        assert_eq!(spilled(&packed), 0);
        assert!(packed.bytes() > 0);
        assert_eq!(packed.iter().collect::<Vec<_>>(), sorted);
        // Without a spill at all, the same.
        let mut memory = PackedFindings::default();
        for chunk in all.chunks(61) {
            memory.push(chunk.to_vec());
        }
        assert_eq!(memory.iter().collect::<Vec<_>>(), sorted);
    }

    #[test]
    fn serializes_as_the_array_of_the_findings() {
        let all: Vec<Finding> = (0..10)
            .map(|n| finding(10 - n as i64, Rule::ManualStepJump, "a", n))
            .collect();
        let mut packed = PackedFindings::default();
        packed.push(all[..4].to_vec());
        packed.push(all[4..].to_vec());
        let mut sorted = all;
        sorted.sort_by(report_order);
        assert_eq!(
            serde_json::to_string(&packed).unwrap(),
            serde_json::to_string(&sorted).unwrap()
        );
        assert!(PackedFindings::default().iter().next().is_none());
    }
}
