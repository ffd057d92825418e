//! `Reader::objects_of`: records of the kinds left out come without their object, and the
//! objects of the kinds read are exactly those of a full read, also when the writer's bases
//! outgrow their budget and it drops some (it then writes those objects whole).

use std::io::Cursor;

use flate2::Compression;
use rf_format::{Header, Kind, Op, Reader, Record, Source, Timestamp, Writer};

/// An object of about `len` bytes, distinct per name and changed a little per round: the writer
/// writes a later round as a delta of the one before, while it keeps its base.
fn object(name: &str, round: usize, len: usize) -> Vec<u8> {
    let mut o = format!("{{\"name\":\"{name}\",\"round\":{round},\"fill\":\"").into_bytes();
    let mut x = name.len() as u64 + name.bytes().map(u64::from).sum::<u64>();
    while o.len() < len {
        // Not compressible to nothing: only a delta makes a later round small.
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        o.push(b'a' + (x >> 59) as u8);
    }
    o.extend_from_slice(b"\"}");
    o
}

fn record(seq: usize, kind: Kind, op: Op, name: &str, object: Vec<u8>) -> Record {
    Record {
        seq: seq as u64,
        observed_at: Timestamp::from_unix_seconds(seq as i64),
        kind,
        op,
        namespace: "ns".into(),
        name: name.to_owned(),
        uid: format!("u-{name}"),
        resource_version: seq.to_string(),
        actor: None,
        object,
    }
}

/// 24 objects of 100 KB, Pods and Events, over four rounds. In rounds 1 and 2 an Event of 7
/// MB arrives mid-round: with it the writer's bases pass their 8 MiB budget, and it drops the
/// least recently kept, Pods among them, whose next objects it writes whole.
fn records() -> Vec<Record> {
    let mut out = Vec::new();
    for round in 0..4 {
        for n in 0..24 {
            if n == 12 && (1..=2).contains(&round) {
                let big = format!("big{round}");
                let mut o = format!("{{\"name\":\"{big}\",\"fill\":\"").into_bytes();
                o.resize(7 * 1024 * 1024, b'x');
                o.extend_from_slice(b"\"}");
                out.push(record(out.len() + 1, Kind::Event, Op::Added, &big, o));
            }
            let kind = if n % 2 == 0 { Kind::Pod } else { Kind::Event };
            let op = match (round, n % 7) {
                (0, _) => Op::Added,
                (3, 3) => Op::Deleted { inferred: false },
                _ => Op::Modified,
            };
            let name = format!("o{n}");
            let object = object(&name, round, 100 * 1024);
            out.push(record(out.len() + 1, kind, op, &name, object));
        }
    }
    out
}

fn read(bytes: &[u8], wanted: Option<fn(&Kind) -> bool>) -> Vec<Record> {
    let mut reader = Reader::new(Cursor::new(bytes)).expect("a recording");
    if let Some(wanted) = wanted {
        reader = reader.objects_of(wanted);
    }
    let mut out = Vec::new();
    while let Some(rec) = reader.next_record().expect("no error") {
        out.push(rec);
    }
    out
}

#[test]
fn the_kinds_read_have_the_objects_of_a_full_read_and_the_others_none() {
    let written = records();
    let header = Header::new("test", Timestamp(0), Source::default());
    let write = |version: u32| {
        let mut writer = Writer::with_format(Vec::new(), &header, Compression::default(), version)
            .expect("writer");
        for rec in &written {
            writer.write(rec).expect("write");
        }
        writer.finish().expect("finish")
    };
    let bytes = write(rf_format::FORMAT_VERSION);
    // Deltas were written (version 1 writes every object whole), and bases were dropped: the
    // big Events pass the budget.
    let whole = write(1);
    assert!(
        bytes.len() * 10 < whole.len() * 9,
        "{} bytes with deltas, {} without",
        bytes.len(),
        whole.len()
    );
    let full = read(&bytes, None);
    assert_eq!(full, written);
    let pods = read(&bytes, Some(|k| *k == Kind::Pod));
    assert_eq!(pods.len(), written.len());
    for (got, want) in pods.iter().zip(&written) {
        let mut want = want.clone();
        if want.kind != Kind::Pod {
            want.object.clear();
        }
        assert_eq!(*got, want, "record {}", want.seq);
    }
    // Nothing read at all: every record, no object.
    let none = read(&bytes, Some(|_| false));
    assert!(none.iter().all(|r| r.object.is_empty()));
    assert_eq!(none.len(), written.len());
}

#[test]
fn kept_delta_bodies_rebuild_each_object_from_its_last_one_in_the_file() {
    let written = records();
    let header = Header::new("test", Timestamp(0), Source::default());
    let mut writer = Writer::new(Vec::new(), &header).expect("writer");
    for rec in &written {
        writer.write(rec).expect("write");
    }
    let bytes = writer.finish().expect("finish");
    let read = |keep: bool, wanted: fn(&Kind) -> bool| {
        let mut reader = Reader::new(Cursor::new(&bytes)).expect("a recording");
        reader = reader.objects_of(wanted);
        if keep {
            reader = reader.keep_deltas();
        }
        let mut last: std::collections::HashMap<(Kind, String), Vec<u8>> = Default::default();
        let (mut deltas, mut whole) = (0, 0);
        while let Some(rec) = reader.next_record().expect("no error") {
            let key = (rec.kind.clone(), rec.name.clone());
            match reader.delta() {
                Some(pieces) => {
                    deltas += 1;
                    let mut rebuilt = Vec::new();
                    rf_format::apply_delta(&last[&key], pieces, &mut rebuilt).expect("pieces");
                    assert_eq!(rebuilt, rec.object, "record {}", rec.seq);
                }
                None => whole += 1,
            }
            if matches!(rec.op, Op::Deleted { .. }) {
                last.remove(&key);
            } else {
                last.insert(key, rec.object);
            }
        }
        (deltas, whole)
    };
    let (deltas, whole) = read(true, |_| true);
    // Later rounds' objects are deltas while their base is kept; the first round's, the big
    // Events and the objects whose base the big Events pushed out are whole.
    assert!(deltas >= 20 && whole > 24, "{deltas} deltas, {whole} whole");
    // Pods only: no Event's pieces.
    let (pod_deltas, _) = read(true, |k| *k == Kind::Pod);
    assert!(
        pod_deltas > 0 && pod_deltas < deltas,
        "{pod_deltas} of {deltas}"
    );
    // Not kept unless asked.
    assert_eq!(read(false, |_| true).0, 0);
}
