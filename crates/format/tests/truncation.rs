//! A recording cut at any byte: every complete record before the cut, then a clean stop or an
//! error that says where, and never a panic.

use std::io::Cursor;

use rf_format::{End, Error, Header, Kind, Op, Reader, Record, Source, Timestamp, Writer};

struct Sample {
    /// The whole recording.
    bytes: Vec<u8>,
    records: Vec<Record>,
    /// Compressed offsets where a gzip member ends, with the number of records written before
    /// that member was closed. The last one is the whole file, closed by `finish`.
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

/// Eight records in gzip members of 1, 2, 2 and 3 records, then the end marker in its own member.
fn sample() -> Sample {
    let records = sample_records();
    let header = Header::new(
        "test",
        Timestamp::from_unix_seconds(1_700_000_000),
        Source::default(),
    );
    let mut writer = Writer::new(Vec::new(), &header).expect("writer starts");
    let mut boundaries = vec![(writer.get_ref().expect("idle after new").len(), 0)];
    for (i, record) in records.iter().enumerate() {
        writer.write(record).expect("record is written");
        if matches!(i, 0 | 2 | 4 | 7) {
            writer.flush().expect("flush succeeds");
            boundaries.push((writer.get_ref().expect("idle after flush").len(), i + 1));
        }
    }
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
fn the_sample_has_several_gzip_members() {
    let sample = sample();
    assert_eq!(sample.records.len(), 8);
    assert_eq!(sample.boundaries.len(), 6);
    assert!(sample.boundaries.windows(2).all(|w| w[0].0 < w[1].0));
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

        // Every record in a member that ends at or before the cut is returned.
        let flushed = sample
            .boundaries
            .iter()
            .filter(|(at, _)| *at <= cut)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
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
                assert_eq!(n, flushed_here, "cut {cut} on a member boundary");
            }
            (result, boundary) => panic!(
                "cut {cut} (member boundary: {}): unexpected {result:?}",
                boundary.is_some()
            ),
        }
    }
}

#[test]
fn a_cut_inside_a_member_is_reported_as_a_truncation() {
    let sample = sample();
    for window in sample.boundaries.windows(2) {
        let (start, end) = (window[0].0, window[1].0);
        for cut in [start + 1, (start + end) / 2, end - 1] {
            let outcome = read_cut(&sample.bytes[..cut]);
            match outcome.result {
                Err(e) => assert!(e.is_truncation(), "cut {cut}: {e}"),
                Ok(end) => panic!("cut {cut} inside a member read as {end:?}"),
            }
        }
    }
}
