//! A recording cut at any byte: every complete record before the cut, then a clean stop or an
//! error that says where, and never a panic.

mod common;
use common::member_ends;

use std::io::Cursor;

use rf_format::{End, Error, Header, Kind, Op, Reader, Record, Source, Timestamp, Writer};

struct Sample {
    /// The whole recording.
    bytes: Vec<u8>,
    records: Vec<Record>,
    /// Compressed offsets where the file may end cleanly (a gzip member's end or a sync flush),
    /// with the number of records written before them. The last one is the whole file, closed by
    /// `finish`.
    boundaries: Vec<(usize, usize)>,
}

fn sample_records() -> Vec<Record> {
    let kinds = [
        Kind::Rollout,
        Kind::ReplicaSet,
        Kind::Pod,
        Kind::Service,
        Kind::EndpointSlice,
        Kind::Event,
        Kind::Application,
        Kind::Other {
            group: "example.com".to_owned(),
            version: "v1".to_owned(),
            kind: "Widget".to_owned(),
        },
    ];
    kinds
        .into_iter()
        .enumerate()
        .map(|(i, kind)| Record {
            seq: i as u64 + 1,
            observed_at: Timestamp::from_unix_seconds(1_700_000_000).plus_nanos(i as i64 * 1_000),
            kind,
            op: if i == 5 {
                Op::Gap {
                    reason: "watch broke".to_owned(),
                }
            } else {
                Op::Modified
            },
            namespace: "shop".to_owned(),
            name: format!("obj-{i}"),
            uid: format!("uid-{i}"),
            resource_version: (100 + i).to_string(),
            actor: (i % 3 == 0).then(|| "alice".to_owned()),
            object: format!(r#"{{"kind":"X","metadata":{{"name":"obj-{i}","n":{i}}}}}"#)
                .into_bytes(),
        })
        .collect()
}

/// The header in its own gzip member, then eight records flushed after 1, 3, 5 and 8 of them
/// (sync flushes in one open member), then the end marker in the same member, closed by `finish`.
fn sample() -> Sample {
    let records = sample_records();
    let (writer, mut boundaries) = written(&records, &[1, 3, 5, 8]);
    let bytes = writer.finish().expect("finish succeeds");
    boundaries.push((bytes.len(), records.len()));
    Sample {
        bytes,
        records,
        boundaries,
    }
}

/// What reading a cut file gave.
struct Outcome {
    records: Vec<Record>,
    result: Result<End, Error>,
}

fn read_cut(bytes: &[u8]) -> Outcome {
    let mut reader = match Reader::new(Cursor::new(bytes)) {
        Ok(reader) => reader,
        Err(e) => {
            return Outcome {
                records: Vec::new(),
                result: Err(e),
            };
        }
    };
    let mut records = Vec::new();
    loop {
        match reader.next() {
            Some(Ok(record)) => records.push(record),
            Some(Err(e)) => {
                assert!(reader.next().is_none(), "the reader goes on after {e}");
                assert_eq!(reader.end(), None);
                return Outcome {
                    records,
                    result: Err(e),
                };
            }
            None => {
                let end = reader
                    .end()
                    .expect("a clean stop says how the stream ended");
                return Outcome {
                    records,
                    result: Ok(end),
                };
            }
        }
    }
}

#[test]
fn the_sample_has_two_gzip_members_and_four_sync_flushes() {
    let sample = sample();
    assert_eq!(sample.records.len(), 8);
    assert_eq!(sample.boundaries.len(), 6);
    assert!(sample.boundaries.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(
        member_ends(&sample.bytes),
        vec![sample.boundaries[0].0, sample.bytes.len()]
    );
    for &(at, _) in &sample.boundaries[1..5] {
        assert_eq!(
            sample.bytes[at - 4..at],
            [0, 0, 0xff, 0xff],
            "flush at {at}"
        );
    }
}

#[test]
fn an_empty_cut_is_not_a_recording() {
    let outcome = read_cut(&[]);
    assert!(matches!(outcome.result, Err(Error::NotARecording(_))));
}

#[test]
fn every_cut_yields_a_prefix_of_the_records_then_a_clean_stop_or_an_error_naming_a_byte() {
    let sample = sample();
    let full = sample.bytes.len();
    let boundary_records = |cut: usize| {
        sample
            .boundaries
            .iter()
            .find(|(at, _)| *at == cut)
            .map(|(_, n)| *n)
    };
    let mut previous_len = 0;
    for cut in 0..=full {
        let outcome = read_cut(&sample.bytes[..cut]);
        let n = outcome.records.len();

        assert!(n <= sample.records.len(), "cut {cut}: too many records");
        assert_eq!(
            outcome.records,
            sample.records[..n],
            "cut {cut}: not a prefix of the records written"
        );
        assert!(
            n >= previous_len,
            "cut {cut}: fewer records than a shorter cut gave"
        );
        previous_len = n;

        // Every record flushed at or before the cut is returned.
        let flushed = flushed_by(&sample.boundaries, cut);
        assert!(
            n >= flushed,
            "cut {cut}: {n} records, {flushed} were flushed before it"
        );

        match (&outcome.result, boundary_records(cut)) {
            _ if cut == full => {
                assert!(
                    matches!(outcome.result, Ok(End::Closed)),
                    "full file: {:?}",
                    outcome.result
                );
                assert_eq!(n, sample.records.len());
            }
            (Err(Error::NotARecording(_)), _) => assert_eq!(cut, 0, "cut {cut}: NotARecording"),
            (Err(e), None) => {
                assert!(cut > 0);
                assert!(
                    e.to_string().contains("byte"),
                    "cut {cut}: the error does not say where: {e}"
                );
            }
            (Ok(End::Unclosed), Some(flushed_here)) => {
                assert_eq!(n, flushed_here, "cut {cut} at a flush point");
            }
            (result, boundary) => panic!(
                "cut {cut} (flush point: {}): unexpected {result:?}",
                boundary.is_some()
            ),
        }
    }
}

#[test]
fn a_cut_between_flush_points_is_reported_as_a_truncation() {
    let sample = sample();
    for window in sample.boundaries.windows(2) {
        let (start, end) = (window[0].0, window[1].0);
        for cut in [start + 1, (start + end) / 2, end - 1] {
            let outcome = read_cut(&sample.bytes[..cut]);
            match outcome.result {
                Err(e) => assert!(e.is_truncation(), "cut {cut}: {e}"),
                Ok(end) => panic!("cut {cut} between flush points read as {end:?}"),
            }
        }
    }
}

/// The records flushed at or before compressed offset `cut`, from flush points (offset,
/// records before it).
fn flushed_by(points: &[(usize, usize)], cut: usize) -> usize {
    points
        .iter()
        .filter(|(at, _)| *at <= cut)
        .map(|(_, n)| *n)
        .max()
        .unwrap_or(0)
}

/// A writer that wrote `records`, flushed after each number of records in `flush_after`, and the
/// flush points (compressed offset, records before it), the header's member end first.
fn written(records: &[Record], flush_after: &[usize]) -> (Writer<Vec<u8>>, Vec<(usize, usize)>) {
    let header = Header::new(
        "test",
        Timestamp::from_unix_seconds(1_700_000_000),
        Source::default(),
    );
    let mut writer = Writer::new(Vec::new(), &header).expect("writer starts");
    let mut points = vec![(writer.get_ref().expect("flushed after new").len(), 0)];
    for (i, record) in records.iter().enumerate() {
        writer.write(record).expect("record is written");
        if flush_after.contains(&(i + 1)) {
            writer.flush().expect("flush succeeds");
            points.push((writer.get_ref().expect("flushed").len(), i + 1));
        }
    }
    (writer, points)
}

/// Many records of varied sizes, the writer flushed after each of them in `flush_after` and never
/// finished: what a recorder killed after its last flush leaves. Returns the bytes and the flush
/// points.
fn unfinished(records: &[Record], flush_after: &[usize]) -> (Vec<u8>, Vec<(usize, usize)>) {
    let (writer, points) = written(records, flush_after);
    let bytes = writer.get_ref().expect("flushed last").clone();
    (bytes, points)
}

/// 40 records, some with a large object so that some flush intervals span several deflate
/// blocks.
fn many_records() -> Vec<Record> {
    let mut records = Vec::new();
    for round in 0..5 {
        for (i, mut r) in sample_records().into_iter().enumerate() {
            r.seq = records.len() as u64 + 1;
            if (round + i) % 7 == 0 {
                r.object = (0..3000u32)
                    .flat_map(|n| (n.wrapping_mul(2_654_435_761) >> 20).to_le_bytes())
                    .collect();
            }
            records.push(r);
        }
    }
    records
}

#[test]
fn a_writer_killed_after_a_flush_leaves_every_flushed_record_and_an_unclosed_end() {
    let records = many_records();
    let (bytes, points) = unfinished(&records, &[3, 4, 17, 30, 40]);
    assert!(bytes.ends_with(&[0, 0, 0xff, 0xff]), "a sync flush ends it");
    let outcome = read_cut(&bytes);
    assert_eq!(outcome.records, records);
    assert!(
        matches!(outcome.result, Ok(End::Unclosed)),
        "{:?}",
        outcome.result
    );
    assert_eq!(points.last().map(|p| p.0), Some(bytes.len()));
}

/// Every cut of a recording whose last member is open with several sync flushes in it: a clean
/// `Unclosed` exactly at the flush points, with every record flushed there; anywhere else a
/// truncation that names a byte, after every record flushed before the cut. Never a panic, never
/// `Closed`.
#[test]
fn every_cut_of_an_open_member_is_unclosed_at_a_flush_point_and_a_truncation_elsewhere() {
    let records = many_records();
    let (bytes, points) = unfinished(&records, &[1, 2, 3, 9, 10, 17, 25, 26, 33, 40]);
    let (mut clean, mut cut_errors) = (0, 0);
    for cut in 0..=bytes.len() {
        let outcome = std::panic::catch_unwind(|| read_cut(&bytes[..cut]))
            .unwrap_or_else(|_| panic!("cut {cut}: panicked"));
        let n = outcome.records.len();
        assert_eq!(outcome.records, records[..n], "cut {cut}: not a prefix");
        let flushed = flushed_by(&points, cut);
        assert!(
            n >= flushed,
            "cut {cut}: {n} records, {flushed} were flushed"
        );
        let at_point = points.iter().find(|(at, _)| *at == cut);
        match (outcome.result, at_point) {
            (Ok(End::Unclosed), Some(&(_, flushed_here))) => {
                clean += 1;
                assert_eq!(n, flushed_here, "cut {cut}");
            }
            (Err(Error::NotARecording(_)), None) if cut == 0 => {}
            (Err(e), None) => {
                cut_errors += 1;
                assert!(e.is_truncation(), "cut {cut}: {e:?}");
                assert!(e.to_string().contains("byte "), "cut {cut}: {e}");
            }
            (result, point) => panic!("cut {cut} (flush point: {point:?}): {result:?}"),
        }
    }
    assert_eq!(clean, points.len());
    assert_eq!(cut_errors, bytes.len() - points.len());
}
