//! Random damage to a large recording: bits flipped and tails cut at positions drawn by a
//! deterministic generator. The reader never panics, every error says where (a byte offset), and
//! every record it yields before the damage is one that was written.
//!
//! The one documented exception (docs/format.md, "End of a recording"): a gzip member's CRC is
//! checked at the member's end, so records decoded from a damaged member may be yielded, altered,
//! before its error. Records of the members before the damaged one are always intact, and a
//! damaged member always ends in an error (or, for bytes the decoder ignores such as a member's
//! mtime, in the original records).

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

/// One gzip member of the sample: compressed bytes `start..end`, holding the records
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
            return Sample {
                bytes,
                records,
                members,
            };
        }
        i += n;
    }
    unreachable!("the loop returns at the last records")
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
    assert!(s.members.len() > 50, "{} members", s.members.len());
}

#[test]
fn flipped_bits_never_panic_are_located_and_spare_the_members_before_them() {
    let s = sample();
    let mut rng = Lcg(2026);
    let (mut errors, mut clean) = (0, 0);
    for trial in 0..400 {
        let mut bytes = s.bytes.clone();
        // Half the flips in the first bytes of members (gzip headers, deflate block headers),
        // where damage changes the most; half anywhere.
        let pos = if trial % 2 == 0 {
            let m = s.members[rng.below(s.members.len())];
            (m.start + rng.below(24)).min(m.end - 1)
        } else {
            rng.below(bytes.len())
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
        // Records of the members before the damaged one are intact.
        let intact = damaged.first.min(records.len());
        assert_eq!(
            records[..intact],
            s.records[..intact],
            "{what}: a record before the damaged member changed"
        );
        match result {
            Err(e) => {
                errors += 1;
                assert!(located(&e), "{what}: the error says no byte offset: {e}");
            }
            Ok(end) => {
                // The decoder ignored the flipped bit (a member's mtime, XFL or OS byte).
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
    // Every member boundary is a clean end; one byte either side of a few is not.
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
                assert!(boundary, "{what}: a clean end inside a member");
                let m = whole.last().unwrap();
                assert_eq!(records.len(), m.first + m.count, "{what}");
            }
            Err(e) => {
                assert!(!boundary, "{what}: an error at a member boundary: {e}");
                assert!(located(&e), "{what}: the error says no byte offset: {e}");
                assert!(
                    e.is_truncation() || matches!(e, Error::CorruptCompression { .. }),
                    "{what}: {e:?}"
                );
                // Every member before the cut gave all its records.
                if let Some(m) = whole.last() {
                    assert!(records.len() >= m.first + m.count, "{what}");
                }
            }
        }
    }
}
