//! Random damage to a large recording: bits flipped and tails cut at positions drawn by a
//! deterministic generator. The reader never panics, every error says where (a byte offset), and
//! every record it yields before the damage is one that was written.
//!
//! The one documented exception (docs/format.md, "End of a recording"): a gzip member's CRC is
//! checked at the member's end, so records decoded from a damaged member may be yielded, altered,
//! before its error. Records flushed before the damaged byte (in earlier members, or before an
//! earlier sync flush of the same member) are always intact, and a damaged member always ends in
//! an error (or, for bits the decoder ignores such as a member's mtime or a sync flush's padding,
//! in the original records).
//!
//! The sample (about 3.5 MB decompressed, less than `Writer::MEMBER_LIMIT`) is the header's gzip
//! member and one more with many sync flushes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

use rf_format::{End, Error, Header, Reader, Record, Source, Timestamp, Writer};

/// A small linear congruential generator (Knuth's MMIX constants): deterministic, no crate.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next()).unwrap() % n
    }
}

/// One flush interval of the sample: compressed bytes `start..end` between two flush points (a
/// sync flush or a member end, where the file may end cleanly), holding the records
/// `first..first + count`.
#[derive(Debug, Clone, Copy)]
struct Member {
    start: usize,
    end: usize,
    first: usize,
    count: usize,
}

struct Sample {
    bytes: Vec<u8>,
    records: Vec<Record>,
    members: Vec<Member>,
    /// Where the gzip members start.
    member_starts: Vec<usize>,
}

/// Every committed recording's records, renumbered as one recording, written with a flush after
/// a random 1 to 16 records.
fn sample() -> Sample {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../recordings");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rfr"))
        .collect();
    paths.sort();
    let mut records = Vec::new();
    for p in &paths {
        let reader = Reader::new(std::fs::File::open(p).unwrap()).unwrap();
        for r in reader {
            let r = r.unwrap();
            records.push(Record {
                seq: records.len() as u64 + 1,
                ..r
            });
        }
    }
    assert!(records.len() > 500, "a large recording: {}", records.len());
    let header = Header::new(
        "damage-test",
        Timestamp::from_unix_seconds(1_773_493_200),
        Source::default(),
    );
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    let mut members = vec![Member {
        start: 0,
        end: w.get_ref().unwrap().len(),
        first: 0,
        count: 0,
    }];
    let mut rng = Lcg(7);
    let mut i = 0;
    while i < records.len() {
        let n = (1 + rng.below(16)).min(records.len() - i);
        for r in &records[i..i + n] {
            w.write(r).unwrap();
        }
        if i + n < records.len() {
            w.flush().unwrap();
            let start = members.last().unwrap().end;
            members.push(Member {
                start,
                end: w.get_ref().unwrap().len(),
                first: i,
                count: n,
            });
        } else {
            // The last records share a member with the end marker and the trailer.
            let bytes = w.finish().unwrap();
            let start = members.last().unwrap().end;
            members.push(Member {
                start,
                end: bytes.len(),
                first: i,
                count: n,
            });
            let member_starts = member_starts(&bytes);
            return Sample {
                bytes,
                records,
                members,
                member_starts,
            };
        }
        i += n;
    }
    unreachable!("the loop returns at the last records")
}

/// Where each gzip member of a finished recording starts (compressed offsets).
fn member_starts(bytes: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        starts.push(bytes.len() - rest.len());
        let mut member = flate2::bufread::GzDecoder::new(rest);
        std::io::copy(&mut member, &mut std::io::sink()).expect("a whole member");
        rest = member.into_inner();
    }
    starts
}

/// An error that names a byte offset.
fn located(e: &Error) -> bool {
    let s = e.to_string();
    s.match_indices("byte ").any(|(i, m)| {
        s[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// What reading gave: the records, then `Ok(end)` or the error (including one from the header).
fn read(bytes: &[u8]) -> (Vec<Record>, Result<End, Error>) {
    let mut reader = match Reader::new(Cursor::new(bytes)) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Err(e)),
    };
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r),
            Ok(None) => {
                let end = reader.end().expect("an end after the last record");
                return (records, Ok(end));
            }
            Err(e) => {
                assert!(
                    matches!(reader.next_record(), Ok(None)),
                    "nothing after an error"
                );
                return (records, Err(e));
            }
        }
    }
}

fn read_guarded(bytes: &[u8], what: &str) -> (Vec<Record>, Result<End, Error>) {
    catch_unwind(AssertUnwindSafe(|| read(bytes))).unwrap_or_else(|_| panic!("{what}: panicked"))
}

#[test]
fn the_sample_reads_back_whole() {
    let s = sample();
    let (records, end) = read(&s.bytes);
    assert_eq!(end.unwrap(), End::Closed);
    assert_eq!(records, s.records);
    assert!(s.members.len() > 50, "{} flush intervals", s.members.len());
    assert!(
        s.member_starts.len() >= 2,
        "{} gzip members",
        s.member_starts.len()
    );
}

#[test]
fn flipped_bits_never_panic_are_located_and_spare_the_members_before_them() {
    let s = sample();
    let mut rng = Lcg(2026);
    let (mut errors, mut clean) = (0, 0);
    for trial in 0..400 {
        let mut bytes = s.bytes.clone();
        // A quarter of the flips in the first bytes of gzip members (headers, the first deflate
        // block's header), a quarter in those of flush intervals (a new deflate block's header),
        // where damage changes the most; half anywhere.
        let pos = match trial % 4 {
            0 => {
                let start = s.member_starts[rng.below(s.member_starts.len())];
                (start + rng.below(24)).min(bytes.len() - 1)
            }
            2 => {
                let m = s.members[rng.below(s.members.len())];
                (m.start + rng.below(24)).min(m.end - 1)
            }
            _ => rng.below(bytes.len()),
        };
        let bit = rng.below(8);
        bytes[pos] ^= 1 << bit;
        let what = format!("trial {trial}: bit {bit} of byte {pos}");
        let (records, result) = read_guarded(&bytes, &what);
        let damaged = s
            .members
            .iter()
            .find(|m| m.start <= pos && pos < m.end)
            .unwrap();
        // Records flushed before the damaged interval are intact.
        let intact = damaged.first.min(records.len());
        assert_eq!(
            records[..intact],
            s.records[..intact],
            "{what}: a record flushed before the damage changed"
        );
        match result {
            Err(e) => {
                errors += 1;
                assert!(located(&e), "{what}: the error says no byte offset: {e}");
            }
            Ok(end) => {
                // The decoder ignored the flipped bit (a member's mtime, XFL or OS byte, or the
                // padding bits before a sync flush's LEN and NLEN).
                clean += 1;
                assert_eq!(end, End::Closed, "{what}");
                assert_eq!(
                    records, s.records,
                    "{what}: altered records without an error"
                );
            }
        }
    }
    assert!(errors > 300, "{errors} errors, {clean} clean reads");
}

#[test]
fn cut_tails_give_a_prefix_and_a_located_truncation_or_a_clean_unclosed_end() {
    let s = sample();
    let mut rng = Lcg(1971);
    let mut cuts: Vec<usize> = (0..300).map(|_| 1 + rng.below(s.bytes.len() - 1)).collect();
    // Every flush point is a clean end; one byte either side of a few is not.
    for m in s.members.iter().step_by(7) {
        cuts.extend([m.end - 1, m.end, m.end + 1]);
    }
    for cut in cuts {
        let cut = cut.min(s.bytes.len());
        let what = format!("cut at {cut} of {}", s.bytes.len());
        let (records, result) = read_guarded(&s.bytes[..cut], &what);
        assert_eq!(
            records,
            s.records[..records.len()],
            "{what}: not a prefix of what was written"
        );
        let whole: Vec<&Member> = s.members.iter().filter(|m| m.end <= cut).collect();
        let boundary = whole.last().is_some_and(|m| m.end == cut);
        match result {
            Ok(End::Closed) => assert_eq!(cut, s.bytes.len(), "{what}"),
            Ok(End::Unclosed) => {
                assert!(boundary, "{what}: a clean end between flush points");
                let m = whole.last().unwrap();
                assert_eq!(records.len(), m.first + m.count, "{what}");
            }
            Err(e) => {
                assert!(!boundary, "{what}: an error at a flush point: {e}");
                assert!(located(&e), "{what}: the error says no byte offset: {e}");
                assert!(
                    e.is_truncation() || matches!(e, Error::CorruptCompression { .. }),
                    "{what}: {e:?}"
                );
                // Every record flushed before the cut was read.
                if let Some(m) = whole.last() {
                    assert!(records.len() >= m.first + m.count, "{what}");
                }
            }
        }
    }
}
