//! Round trip: whatever a `Writer` writes, a `Reader` reads back unchanged, wherever the writer
//! flushes (a deflate sync flush inside the open gzip member).

use std::io::Cursor;

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use rf_format::{
    End, FORMAT_VERSION, Header, Kind, Op, Reader, Record, Redaction, Source, Timestamp, Writer,
};

/// Strings that include the empty string, ASCII, and multi-byte unicode.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(String::new()),
        "[a-z0-9./-]{1,12}",
        any::<String>(),
        "[\u{e9}\u{4e2d}\u{1f680}\u{0}a]{1,8}",
    ]
}

fn timestamp() -> impl Strategy<Value = Timestamp> {
    prop_oneof![
        Just(Timestamp(i64::MIN)),
        Just(Timestamp(i64::MAX)),
        Just(Timestamp(0)),
        Just(Timestamp(-1)),
        any::<i64>().prop_map(Timestamp),
    ]
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Rollout),
        Just(Kind::ReplicaSet),
        Just(Kind::Service),
        Just(Kind::EndpointSlice),
        Just(Kind::Pod),
        Just(Kind::Application),
        Just(Kind::Event),
        (text(), text(), text()).prop_map(|(group, version, kind)| Kind::Other {
            group,
            version,
            kind
        }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        Just(Op::Added),
        Just(Op::Modified),
        any::<bool>().prop_map(|inferred| Op::Deleted { inferred }),
        Just(Op::ListBegin),
        Just(Op::Listed),
        Just(Op::ListEnd),
        text().prop_map(|reason| Op::Gap { reason }),
    ]
}

fn redaction() -> impl Strategy<Value = Redaction> {
    prop_oneof![Just(Redaction::Disabled), Just(Redaction::EnvValueDigests)]
}

fn source() -> impl Strategy<Value = Source> {
    (
        option::of(text()),
        option::of(text()),
        vec(text(), 0..4),
        option::of(text()),
        vec(kind(), 0..5),
    )
        .prop_map(
            |(context, server, namespaces, label_selector, kinds)| Source {
                context,
                server,
                namespaces,
                label_selector,
                kinds,
            },
        )
}

fn header() -> impl Strategy<Value = Header> {
    (
        any::<u32>(),
        text(),
        timestamp(),
        source(),
        redaction(),
        btree_map(text(), text(), 0..4),
    )
        .prop_map(
            |(format_version, tool_version, started_at, source, redaction, notes)| Header {
                format_version,
                tool_version,
                started_at,
                source,
                redaction,
                notes,
            },
        )
}

fn object() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        vec(any::<u8>(), 0..300),
        Just(br#"{"kind":"Pod","metadata":{"name":"a"}}"#.to_vec()),
    ]
}

fn record() -> impl Strategy<Value = Record> {
    (
        any::<u64>(),
        timestamp(),
        kind(),
        op(),
        (text(), text(), text(), text()),
        option::of(text()),
        object(),
    )
        .prop_map(
            |(
                seq,
                observed_at,
                kind,
                op,
                (namespace, name, uid, resource_version),
                actor,
                object,
            )| {
                Record {
                    seq,
                    observed_at,
                    kind,
                    op,
                    namespace,
                    name,
                    uid,
                    resource_version,
                    actor,
                    object,
                }
            },
        )
}

/// Each record with whether the writer flushes (a sync flush) right after it.
fn records_and_flushes() -> impl Strategy<Value = Vec<(Record, bool)>> {
    vec((record(), any::<bool>()), 0..24)
}

fn write_recording(header: &Header, records: &[(Record, bool)]) -> Vec<u8> {
    let mut writer = Writer::new(Vec::new(), header).expect("writer starts");
    for (record, flush) in records {
        writer.write(record).expect("record is written");
        if *flush {
            writer.flush().expect("flush succeeds");
        }
    }
    writer.finish().expect("finish succeeds")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn every_header_and_record_survives_a_write_and_read(
        header in header(),
        records in records_and_flushes(),
    ) {
        let bytes = write_recording(&header, &records);

        let mut reader = Reader::new(Cursor::new(bytes)).expect("reader opens");
        let expected_header = Header { format_version: FORMAT_VERSION, ..header };
        prop_assert_eq!(reader.header(), &expected_header);
        prop_assert_eq!(reader.format_version(), FORMAT_VERSION);

        let read: Vec<Record> = (&mut reader).collect::<Result<_, _>>().expect("records read");
        let written: Vec<Record> = records.into_iter().map(|(record, _)| record).collect();
        prop_assert_eq!(&read, &written);
        prop_assert_eq!(reader.records_read(), written.len() as u64);
        prop_assert_eq!(reader.end(), Some(End::Closed));
        prop_assert!(reader.next().is_none());
    }

    #[test]
    fn a_flushed_but_unfinished_recording_yields_every_record_and_ends_unclosed(
        header in header(),
        records in records_and_flushes(),
    ) {
        let mut writer = Writer::new(Vec::new(), &header).expect("writer starts");
        for (record, flush) in &records {
            writer.write(record).expect("record is written");
            if *flush {
                writer.flush().expect("flush succeeds");
            }
        }
        writer.flush().expect("flush succeeds");
        // The writer is never finished: this is what a killed recorder leaves on disk.
        let bytes = writer.get_ref().expect("everything is decodable after a flush").clone();

        let mut reader = Reader::new(Cursor::new(bytes)).expect("reader opens");
        let read: Vec<Record> = (&mut reader).collect::<Result<_, _>>().expect("records read");
        let written: Vec<Record> = records.into_iter().map(|(record, _)| record).collect();
        prop_assert_eq!(&read, &written);
        prop_assert_eq!(reader.end(), Some(End::Unclosed));
    }
}

#[test]
fn the_writer_stamps_the_current_format_version_into_the_header() {
    let mut header = Header::new("test", Timestamp(0), Source::default());
    header.format_version = 99;
    let bytes = Writer::new(Vec::new(), &header).unwrap().finish().unwrap();
    let reader = Reader::new(Cursor::new(bytes)).unwrap();
    assert_eq!(reader.header().format_version, FORMAT_VERSION);
}

#[test]
fn records_written_after_the_last_flush_of_an_unfinished_writer_are_not_on_disk_yet() {
    let header = Header::new("test", Timestamp(0), Source::default());
    let record = Record {
        seq: 1,
        observed_at: Timestamp(1),
        kind: Kind::Pod,
        op: Op::Added,
        namespace: "ns".to_owned(),
        name: "p".to_owned(),
        uid: String::new(),
        resource_version: "1".to_owned(),
        actor: None,
        object: b"{}".to_vec(),
    };
    let mut writer = Writer::new(Vec::new(), &header).unwrap();
    writer.write(&record).unwrap();
    writer.flush().unwrap();
    let flushed = writer.get_ref().unwrap().clone();
    writer.write(&record).unwrap();
    assert!(
        writer.get_ref().is_none(),
        "the record written after the flush is not decodable until the next one"
    );

    let mut reader = Reader::new(Cursor::new(flushed)).unwrap();
    let read: Vec<Record> = (&mut reader).collect::<Result<_, _>>().unwrap();
    assert_eq!(read, vec![record]);
    assert_eq!(reader.end(), Some(End::Unclosed));
}

/// Versions of a few objects: each record is one of four objects, whose JSON is an edit of the
/// same template (values changed, members inserted or removed), so most are written as deltas.
fn versions() -> impl Strategy<Value = Vec<(Record, bool)>> {
    let template = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-1","labels":{"app":"web"},"resourceVersion":"1"},"spec":{"containers":[{"name":"app","image":"web:1","env":[{"name":"A","value":"x"}]}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#;
    let edit = (0..template.len(), 0..40usize, "[a-z0-9\",:{}\\[\\]]{0,30}");
    let version = (
        0..4usize,
        op(),
        vec(edit, 0..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(move |(which, op, edits, empty, flush)| {
            let mut object = template.as_bytes().to_vec();
            for (at, cut, with) in edits {
                let at = at.min(object.len());
                let end = (at + cut).min(object.len());
                object.splice(at..end, with.into_bytes());
            }
            let record = Record {
                seq: 1,
                observed_at: Timestamp(0),
                kind: if which < 2 { Kind::Pod } else { Kind::Rollout },
                op,
                namespace: "shop".to_owned(),
                name: format!("web-{}", which % 2),
                uid: String::new(),
                resource_version: String::new(),
                actor: None,
                object: if empty { Vec::new() } else { object },
            };
            (record, flush)
        });
    vec(version, 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn versions_of_the_same_objects_survive_a_write_and_read(records in versions()) {
        let header = Header::new("test", Timestamp(0), Source::default());
        let bytes = write_recording(&header, &records);
        let read: Vec<Record> = Reader::new(Cursor::new(bytes))
            .expect("reader opens")
            .collect::<Result<_, _>>()
            .expect("records read");
        let written: Vec<Record> = records.into_iter().map(|(record, _)| record).collect();
        prop_assert_eq!(&read, &written);
    }
}

/// More objects than the bases' budget holds (about 24 MiB of live objects, three times it), each changed many
/// times: the writer and the reader drop the same bases, and what is read is what was written.
#[test]
fn objects_past_the_bases_budget_read_back_and_most_are_deltas() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: u64| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) % n
    };
    let filler = "x".repeat(12_000);
    let header = Header::new("test", Timestamp(0), Source::default());
    let mut records = Vec::new();
    for seq in 0..6_000u64 {
        // Four records in five are of 500 objects that change often (6 MiB of them), the rest
        // of 1,500 that change rarely.
        let key = if next(5) < 4 {
            next(500)
        } else {
            500 + next(1_500)
        };
        let op = match next(20) {
            0 => Op::Deleted { inferred: false },
            1 => Op::Added,
            _ => Op::Modified,
        };
        let object = format!(
            r#"{{"metadata":{{"name":"o-{key}","resourceVersion":"{seq}"}},"spec":{{"filler":"{filler}"}},"status":{{"n":{}}}}}"#,
            next(1000)
        );
        records.push(Record {
            seq,
            observed_at: Timestamp(seq as i64),
            kind: Kind::Pod,
            op,
            namespace: "ns".to_owned(),
            name: format!("o-{key}"),
            uid: String::new(),
            resource_version: seq.to_string(),
            actor: None,
            object: object.into_bytes(),
        });
    }
    let flushes: Vec<(Record, bool)> = records.iter().cloned().map(|r| (r, false)).collect();
    let v2 = write_recording(&header, &flushes);
    let read: Vec<Record> = Reader::new(Cursor::new(&v2))
        .expect("reader opens")
        .collect::<Result<_, _>>()
        .expect("records read");
    assert!(
        read == records,
        "what was read differs from what was written"
    );
    let mut whole = Writer::with_format(Vec::new(), &header, Writer::<Vec<u8>>::LEVEL, 1).unwrap();
    let mut writer = Writer::new(Vec::new(), &header).unwrap();
    for r in &records {
        whole.write(r).unwrap();
        writer.write(r).unwrap();
    }
    let raw_whole = whole.raw_bytes();
    // The objects that change often keep their bases: most records are deltas.
    assert!(
        writer.raw_bytes() * 2 < raw_whole,
        "{} raw bytes with deltas, {raw_whole} without",
        writer.raw_bytes()
    );
}
