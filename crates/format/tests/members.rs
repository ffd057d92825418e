//! How the writer lays a recording out in gzip members: the header alone in the first, then
//! members of at least `Writer::MEMBER_LIMIT` decompressed bytes each (the last one shorter),
//! with a deflate sync flush at every `flush` inside them. See docs/format.md, "Gzip members,
//! sync flushes and when the writer closes them".

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Cursor, Read};
use std::sync::OnceLock;

use rf_format::{End, Header, Kind, Op, Reader, Record, Source, Timestamp, Writer};

const LIMIT: u64 = Writer::<Vec<u8>>::MEMBER_LIMIT;

fn header() -> Header {
    Header::new("test", Timestamp(1), Source::default())
}

/// Pseudo-random words, from which records take their objects.
fn words() -> &'static str {
    static WORDS: OnceLock<String> = OnceLock::new();
    WORDS.get_or_init(|| {
        let mut out = String::with_capacity(1 << 20);
        let mut n = 1u64;
        while out.len() < 1 << 20 {
            n = n.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            out.push_str(["a", "bb", "ccc", "d", "-", "0", "17", "\\n"][(n >> 61) as usize]);
        }
        out
    })
}

/// A record of about `size` (at most 1 MiB) bytes of JSON that compresses about as well as real
/// objects.
fn record(seq: u64, size: usize) -> Record {
    let start = (seq as usize * 7919) % (words().len() - size);
    let object = format!(
        r#"{{"kind":"Pod","metadata":{{"name":"pod-{seq}"}},"data":"{}"}}"#,
        &words()[start..start + size]
    );
    Record {
        seq,
        observed_at: Timestamp(seq as i64),
        kind: Kind::Pod,
        op: Op::Modified,
        namespace: "ns".to_owned(),
        name: format!("pod-{seq}"),
        uid: format!("uid-{}", seq % 100),
        resource_version: seq.to_string(),
        actor: None,
        object: object.into_bytes(),
    }
}

/// Each gzip member of `bytes` (whole members only): its compressed end offset and its
/// decompressed size.
fn members(bytes: &[u8]) -> Vec<(usize, u64)> {
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let mut member = flate2::bufread::GzDecoder::new(rest);
        let raw = std::io::copy(&mut member, &mut std::io::sink()).expect("a whole member");
        rest = member.into_inner();
        out.push((bytes.len() - rest.len(), raw));
    }
    out
}

/// A writer at the fastest level: these tests are about the layout of many megabytes, not about
/// their size.
fn fast_writer() -> Writer<Vec<u8>> {
    Writer::with_level(Vec::new(), &header(), flate2::Compression::fast()).expect("a writer")
}

fn read_all(bytes: &[u8]) -> (Vec<Record>, Option<End>) {
    let mut reader = Reader::new(Cursor::new(bytes)).expect("a recording");
    let records = (&mut reader)
        .collect::<Result<Vec<_>, _>>()
        .expect("records");
    (records, reader.end())
}

#[test]
fn the_header_is_alone_in_the_first_member() {
    let writer = Writer::new(Vec::new(), &header()).unwrap();
    let bytes = writer.get_ref().expect("flushed after new").clone();
    assert_eq!(members(&bytes), vec![(bytes.len(), writer.raw_bytes())]);
    let (records, end) = read_all(&bytes);
    assert!(records.is_empty());
    assert_eq!(end, Some(End::Unclosed));
}

#[test]
fn a_flush_ends_in_a_sync_marker_and_keeps_the_member_open() {
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    let header_end = writer.get_ref().unwrap().len();
    let mut flushed = Vec::new();
    for seq in 1..=6 {
        writer.write(&record(seq, 300)).unwrap();
        assert!(
            writer.get_ref().is_none(),
            "record {seq} is not flushed yet"
        );
        writer.flush().unwrap();
        let bytes = writer.get_ref().expect("flushed").clone();
        assert!(bytes.ends_with(&[0, 0, 0xff, 0xff]), "flush {seq}");
        // No gzip trailer was written: the member after the header's is still open, so a
        // decoder of whole members finds only the header's.
        let mut rest = &bytes[header_end..];
        let mut member = flate2::bufread::GzDecoder::new(&mut rest);
        let e = std::io::copy(&mut member, &mut std::io::sink()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "flush {seq}");
        flushed.push(bytes);
    }
    // A flush with nothing new written adds nothing.
    writer.flush().unwrap();
    assert_eq!(writer.get_ref().unwrap(), flushed.last().unwrap());
    // Each flushed state reads every record before it, then Unclosed.
    for (i, bytes) in flushed.iter().enumerate() {
        let (records, end) = read_all(bytes);
        let written: Vec<Record> = (1..=i as u64 + 1).map(|s| record(s, 300)).collect();
        assert_eq!(records, written);
        assert_eq!(end, Some(End::Unclosed));
    }
    let bytes = writer.finish().unwrap();
    assert_eq!(members(&bytes).len(), 2);
    let (records, end) = read_all(&bytes);
    assert_eq!(records.len(), 6);
    assert_eq!(end, Some(End::Closed));
}

/// Writes records until the file holds more than `limits` × [`LIMIT`] decompressed bytes,
/// flushing every `flush_every` records (never when 0).
fn large(limits: u64, flush_every: u64) -> (Vec<u8>, Vec<Record>) {
    let mut writer = fast_writer();
    let mut written = Vec::new();
    let mut seq = 0;
    while writer.raw_bytes() < limits * LIMIT + LIMIT / 2 {
        seq += 1;
        // Mostly small objects, now and then a large one.
        let size = if seq % 97 == 0 {
            200_000
        } else {
            200 + (seq as usize * 37) % 2000
        };
        let r = record(seq, size);
        writer.write(&r).unwrap();
        written.push(r);
        if flush_every > 0 && seq % flush_every == 0 {
            writer.flush().unwrap();
        }
    }
    (writer.finish().unwrap(), written)
}

fn check_large(limits: u64, flush_every: u64) {
    let (bytes, written) = large(limits, flush_every);
    let members = members(&bytes);
    // The header's member, `limits` full ones, the rest with the end marker.
    assert_eq!(members.len() as u64, limits + 2, "{members:?}");
    let largest_frame = 4 + 200_100;
    for &(_, raw) in &members[1..members.len() - 1] {
        assert!(
            (LIMIT..LIMIT + largest_frame).contains(&raw),
            "a member of {raw} bytes: {members:?}"
        );
    }
    assert!(members.last().unwrap().1 < LIMIT);
    let (records, end) = read_all(&bytes);
    assert_eq!(records, written);
    assert_eq!(end, Some(End::Closed));
    // flate2, zcat and gzip read it as one stream.
    let mut raw = Vec::new();
    flate2::read::MultiGzDecoder::new(&bytes[..])
        .read_to_end(&mut raw)
        .unwrap();
    assert_eq!(raw.len() as u64, members.iter().map(|m| m.1).sum::<u64>());
}

#[test]
fn a_member_is_closed_once_it_passes_the_limit_with_flushes() {
    check_large(2, 25);
}

#[test]
fn a_member_is_closed_once_it_passes_the_limit_without_flushes() {
    check_large(1, 0);
}

/// Killed right after a record that closed a member: the file ends with a whole member, the
/// records read back to there, Unclosed.
#[test]
fn a_recording_cut_at_a_member_closed_by_the_limit_ends_unclosed() {
    let mut writer = fast_writer();
    let mut written = Vec::new();
    let mut seq = 0;
    loop {
        seq += 1;
        let r = record(seq, 1500);
        writer.write(&r).unwrap();
        written.push(r);
        if let Some(bytes) = writer.get_ref() {
            // The record closed the member: everything written is decodable without a flush.
            let bytes = bytes.clone();
            assert_eq!(members(&bytes).len(), 2);
            let (records, end) = read_all(&bytes);
            assert_eq!(records, written);
            assert_eq!(end, Some(End::Unclosed));
            break;
        }
        assert!(writer.raw_bytes() < 2 * LIMIT, "no member was closed");
    }
}

/// A record whose object is `size` bytes that deflate cannot shrink (xorshift noise).
fn noise_record(seq: u64, size: usize) -> Record {
    let mut n = seq.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let object = (0..size)
        .map(|_| {
            n ^= n << 13;
            n ^= n >> 7;
            n ^= n << 17;
            (n >> 56) as u8
        })
        .collect();
    Record {
        object,
        ..record(seq, 10)
    }
}

/// Frames of incompressible bytes bigger than the writer's deflate output buffer (64 KiB), and
/// sync flushes right after them, at every level: each member is whole (CRC-32 and ISIZE check
/// out), each flush point is readable, and every record reads back.
#[test]
fn every_level_writes_whole_members_when_deflate_output_outgrows_its_buffer() {
    for level in [0, 1, 6, 7, 9, 10] {
        let mut writer =
            Writer::with_level(Vec::new(), &header(), flate2::Compression::new(level)).unwrap();
        let mut written = Vec::new();
        for (seq, size) in [(1, 70_000), (2, 10), (3, 65_536), (4, 200_000), (5, 1)] {
            let r = noise_record(seq, size);
            writer.write(&r).unwrap();
            writer.flush().unwrap();
            let bytes = writer.get_ref().expect("flushed").clone();
            assert!(
                bytes.ends_with(&[0, 0, 0xff, 0xff]),
                "level {level} flush {seq}"
            );
            written.push(r);
            let (records, end) = read_all(&bytes);
            assert_eq!(records, written, "level {level} after flush {seq}");
            assert_eq!(end, Some(End::Unclosed));
        }
        let bytes = writer.finish().unwrap();
        let ends = members(&bytes);
        assert_eq!(
            ends.len(),
            2,
            "level {level}: the header's member and one more"
        );
        assert_eq!(ends.last().map(|e| e.0), Some(bytes.len()));
        let (records, end) = read_all(&bytes);
        assert_eq!(records, written, "level {level}");
        assert_eq!(end, Some(End::Closed));
    }
}
