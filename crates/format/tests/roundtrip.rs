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
