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
//! Past [`SPILL_AFTER`] bytes of chunks in memory, further chunks go to a temporary file
//! (unlinked as soon as it is opened, so nothing is left behind), and memory stays bounded
//! however many findings a long history makes. Where no temporary file can be made, chunks
//! stay in memory, as before.

use std::cmp::Ordering;
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;

use flate2::Compression;
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use rf_format::{Kind, Timestamp};

use crate::report::finding::{Evidence, Finding, Remedy, Rule, Severity, Subject};

/// Findings per chunk.
pub(crate) const CHUNK: usize = 2048;

/// Chunks kept before they are merged into one.
pub(crate) const MAX_CHUNKS: usize = 32;

/// Compressed bytes kept in memory before chunks go to a temporary file.
pub(crate) const SPILL_AFTER: usize = 2 * 1024 * 1024;

/// The report's order of findings.
pub(crate) fn report_order(a: &Finding, b: &Finding) -> Ordering {
    (a.at, std::cmp::Reverse(a.severity), a.rule, &a.subject).cmp(&(
        b.at,
        std::cmp::Reverse(b.severity),
        b.rule,
        &b.subject,
    ))
}

/// Sorted, compressed findings.
#[derive(Debug)]
pub struct PackedFindings {
    chunks: Vec<Chunk>,
    len: usize,
    worst: Option<Severity>,
    spill_after: usize,
    spill: Spill,
}

impl Default for PackedFindings {
    fn default() -> Self {
        PackedFindings {
            chunks: Vec::new(),
            len: 0,
            worst: None,
            spill_after: SPILL_AFTER,
            spill: Spill::Unopened(std::env::temp_dir()),
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
    /// At `offset` of the spill file, `len` bytes.
    File {
        offset: u64,
        len: u64,
    },
}

/// The temporary file chunks go to.
#[derive(Debug)]
enum Spill {
    /// None made yet; it will be made in this directory.
    Unopened(PathBuf),
    /// Open (and already unlinked), written up to `end`.
    Open { file: File, end: u64 },
    /// None could be made: chunks stay in memory.
    Unavailable,
}

impl Spill {
    /// Writes `bytes` at the end of the file, opening it first if need be; `None` if that
    /// fails (the caller keeps the bytes). A file that cannot be made is not tried again; one
    /// that cannot be written to (a full disk) is kept, with the chunks already in it.
    fn write(&mut self, bytes: &[u8]) -> Option<(u64, u64)> {
        if let Spill::Unopened(dir) = self {
            *self = match open_unlinked(dir) {
                Some(file) => Spill::Open { file, end: 0 },
                None => Spill::Unavailable,
            };
        }
        let Spill::Open { file, end } = self else {
            return None;
        };
        let offset = *end;
        write_at(file, bytes, offset).ok()?;
        *end += bytes.len() as u64;
        Some((offset, bytes.len() as u64))
    }

    /// Starts the file over (every chunk in it has been merged into memory).
    fn clear(&mut self) {
        if let Spill::Open { file, end } = self {
            if file.set_len(0).is_ok() {
                *end = 0;
            }
        }
    }

    fn file(&self) -> Option<&File> {
        match self {
            Spill::Open { file, .. } => Some(file),
            _ => None,
        }
    }
}

/// A new file in `dir`, removed from the directory at once: the open handle keeps it, and the
/// system reclaims it when the process ends, however it ends.
#[cfg(unix)]
fn open_unlinked(dir: &std::path::Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for _ in 0..8 {
        let path = dir.join(format!(
            ".rollout-forensics-findings-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            // Only this user may open it in the moment before it is unlinked.
            .mode(0o600)
            .open(&path)
        {
            Ok(file) => {
                return std::fs::remove_file(&path).is_ok().then_some(file);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(_) => return None,
        }
    }
    None
}

/// Elsewhere a file cannot be unlinked while open: chunks stay in memory.
#[cfg(not(unix))]
fn open_unlinked(_dir: &std::path::Path) -> Option<File> {
    None
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(not(unix))]
fn write_at(_file: &File, _bytes: &[u8], _offset: u64) -> std::io::Result<()> {
    Err(std::io::ErrorKind::Unsupported.into())
}

/// Reads `len` bytes from `offset` of a file, with its own position (the file's is shared).
struct FileRange<'a> {
    file: &'a File,
    offset: u64,
    left: u64,
}

impl Read for FileRange<'_> {
    #[cfg(unix)]
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = std::os::unix::fs::FileExt::read_at(self.file, &mut buf[..want], self.offset)?;
        self.offset += n as u64;
        self.left -= n as u64;
        Ok(n)
    }

    #[cfg(not(unix))]
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
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

    /// Compressed bytes held in memory (not those in the temporary file).
    pub fn bytes(&self) -> usize {
        self.chunks
            .iter()
            .map(|c| match &c.deflated {
                Deflated::Memory(bytes) => bytes.len(),
                Deflated::File { .. } => 0,
            })
            .sum()
    }

    /// Chunks are spilled to a file in `dir` once `after` compressed bytes are in memory: for
    /// tests of the spilled path.
    #[doc(hidden)]
    pub fn spill_to(mut self, dir: PathBuf, after: usize) -> Self {
        self.spill = Spill::Unopened(dir);
        self.spill_after = after;
        self
    }

    /// Keeps a chunk of `len` findings in memory, or in the spill file once memory holds
    /// enough.
    fn keep(&mut self, deflated: Vec<u8>, len: usize) {
        let deflated = if self.bytes() + deflated.len() > self.spill_after {
            match self.spill.write(&deflated) {
                Some((offset, len)) => Deflated::File { offset, len },
                None => Deflated::Memory(deflated),
            }
        } else {
            Deflated::Memory(deflated)
        };
        self.chunks.push(Chunk { deflated, len });
    }

    /// Adds findings (in the order they were made) as one chunk.
    pub(crate) fn push(&mut self, mut findings: Vec<Finding>) {
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
        self.spill.clear();
        self.keep(enc.finish(), n);
    }

    /// Every finding, in report order.
    pub fn iter(&self) -> Merge<'_> {
        let mut cursors: Vec<Cursor<'_>> = self
            .chunks
            .iter()
            .map(|c| {
                let bytes: Box<dyn Read + Send + '_> = match (&c.deflated, self.spill.file()) {
                    (Deflated::Memory(bytes), _) => Box::new(&bytes[..]),
                    (Deflated::File { offset, len }, Some(file)) => Box::new(FileRange {
                        file,
                        offset: *offset,
                        left: *len,
                    }),
                    // A spilled chunk without its file cannot be: it reads as empty, and the
                    // count check in `Analyzer::finish` says findings were lost.
                    (Deflated::File { .. }, None) => Box::new(std::io::empty()),
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
        Merge { cursors }
    }
}

/// The sorted sequence of [`PackedFindings::iter`].
#[allow(missing_debug_implementations)]
pub struct Merge<'a> {
    cursors: Vec<Cursor<'a>>,
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
        let out = cursor.head.take();
        cursor.advance();
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
        })
    }
}

/// Findings from which [`PackedFindings`] serializes on two threads, and how many a thread
/// hands to the other at a time.
pub(crate) const DECODE_APART: usize = 1024;
const HANDED: usize = 64;

impl serde::Serialize for PackedFindings {
    /// As the report's `findings` array: one finding decoded at a time. Many are decoded
    /// (inflated, merged) on a thread of their own while this one writes them: a report is
    /// written when everything else is done, and on 20,000 findings the two halves of that
    /// work each took about 3% of `analyze`'s time, one after the other.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.len() < DECODE_APART {
            return s.collect_seq(self.iter());
        }
        std::thread::scope(|scope| {
            let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Finding>>(4);
            let decoding = std::thread::Builder::new()
                .name("rf-findings".into())
                .spawn_scoped(scope, move || {
                    let mut batch = Vec::with_capacity(HANDED);
                    for f in self.iter() {
                        batch.push(f);
                        if batch.len() == HANDED
                            && tx
                                .send(std::mem::replace(&mut batch, Vec::with_capacity(HANDED)))
                                .is_err()
                        {
                            // The writer stopped (an error it reports).
                            return;
                        }
                    }
                    let _ = tx.send(batch);
                });
            match decoding {
                Ok(_) => s.collect_seq(rx.into_iter().flatten()),
                // No thread to be had: decoded here.
                Err(_) => s.collect_seq(self.iter()),
            }
        })
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

    /// How many chunks are in the spill file.
    fn spilled(packed: &PackedFindings) -> usize {
        packed
            .chunks
            .iter()
            .filter(|c| matches!(c.deflated, Deflated::File { .. }))
            .count()
    }

    #[test]
    fn spilled_chunks_read_back_as_the_sorted_findings_and_leave_no_file() {
        let dir = std::env::temp_dir().join(format!("rf-pack-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (all, sorted) = many();
        // Past 1 byte in memory: every chunk, and the merged one, goes to the file.
        let mut packed = PackedFindings::default().spill_to(dir.clone(), 1);
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        assert!(packed.chunks.len() < MAX_CHUNKS, "compacted at least once");
        assert_eq!(packed.bytes(), 0, "nothing held in memory");
        assert_eq!(
            spilled(&packed),
            packed.chunks.len(),
            "every chunk in the file"
        );
        assert_eq!(packed.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(packed.len(), sorted.len());
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "the file was unlinked when opened"
        );
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn chunks_stay_in_memory_up_to_the_limit_then_spill() {
        let dir = std::env::temp_dir().join(format!("rf-pack-limit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (all, sorted) = many();
        let mut whole = PackedFindings::default().spill_to(dir.clone(), usize::MAX);
        for chunk in all.chunks(500) {
            whole.push(chunk.to_vec());
        }
        let limit = whole.bytes() / 2;
        let mut packed = PackedFindings::default().spill_to(dir.clone(), limit);
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
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn without_a_directory_to_spill_to_chunks_stay_in_memory() {
        let (all, sorted) = many();
        let nowhere = std::env::temp_dir().join("rf-pack-no-such-dir/below");
        let mut packed = PackedFindings::default().spill_to(nowhere, 1);
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        assert!(packed.bytes() > 0);
        assert_eq!(packed.iter().collect::<Vec<_>>(), sorted);
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

    #[test]
    fn many_findings_serialize_the_same_decoded_on_a_thread_of_their_own() {
        let (all, sorted) = many();
        assert!(all.len() > DECODE_APART && all.len() % HANDED != 0);
        let expected = serde_json::to_string(&sorted).unwrap();
        let mut packed = PackedFindings::default();
        for chunk in all.chunks(61) {
            packed.push(chunk.to_vec());
        }
        assert_eq!(serde_json::to_string(&packed).unwrap(), expected);
        // From the spill file too.
        let dir = std::env::temp_dir().join(format!("rf-pack-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut spilled_all = PackedFindings::default().spill_to(dir.clone(), 1);
        for chunk in all.chunks(61) {
            spilled_all.push(chunk.to_vec());
        }
        assert!(spilled(&spilled_all) > 0);
        assert_eq!(serde_json::to_string(&spilled_all).unwrap(), expected);
        std::fs::remove_dir(&dir).unwrap();
    }

    /// Accepts `left` bytes, then fails.
    struct Failing {
        left: usize,
    }

    impl std::io::Write for Failing {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if self.left < buf.len() {
                return Err(std::io::Error::other("disk full"));
            }
            self.left -= buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_writer_that_fails_midway_ends_the_decoding_thread_and_says_why() {
        let (all, _) = many();
        let mut packed = PackedFindings::default();
        for chunk in all.chunks(500) {
            packed.push(chunk.to_vec());
        }
        // Fails after a few findings, while the other thread has thousands to hand over:
        // it must stop (the scope joins it), not block on a channel nobody reads.
        let err = serde_json::to_writer(Failing { left: 2000 }, &packed).unwrap_err();
        assert!(err.to_string().contains("disk full"), "{err}");
    }
}
