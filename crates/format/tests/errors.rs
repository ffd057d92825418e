//! Inputs that are not recordings, or are damaged ones: a distinct error that says why and
//! where, never a panic, never an allocation from an unchecked length.

mod common;
use common::member_ends;

use std::io::{Cursor, ErrorKind, Read, Write};

use flate2::Compression;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use rf_format::{
    Error, FORMAT_VERSION, Header, Kind, MAGIC, MAX_FRAME_LEN, Op, Reader, Record, Source,
    Timestamp, Writer,
};

fn header() -> Header {
    Header::new("test", Timestamp(1), Source::default())
}

fn record(seq: u64) -> Record {
    Record {
        seq,
        observed_at: Timestamp(seq as i64),
        kind: Kind::Pod,
        op: Op::Added,
        namespace: "ns".to_owned(),
        name: format!("pod-{seq}"),
        uid: String::new(),
        resource_version: seq.to_string(),
        actor: None,
        object: br#"{"kind":"Pod"}"#.to_vec(),
    }
}

fn gzip(raw: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::default());
    enc.write_all(raw).expect("write to a Vec");
    enc.finish().expect("finish to a Vec")
}

/// The decompressed bytes of a finished recording, or of a writer's output right after a flush:
/// its last member is still open and ends at a sync-flush point, which flate2 reports as an
/// incomplete deflate stream after returning every byte before it.
fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    match MultiGzDecoder::new(bytes).read_to_end(&mut raw) {
        Ok(_) => {}
        Err(e) if e.kind() == ErrorKind::UnexpectedEof => {
            assert!(bytes.ends_with(&[0, 0, 0xff, 0xff]))
        }
        Err(e) => panic!("valid gzip: {e}"),
    }
    raw
}

/// The decompressed preamble and header frame of a recording with no records: what a file
/// holds right after `Writer::new`.
fn raw_preamble_and_header() -> Vec<u8> {
    let writer = Writer::new(Vec::new(), &header()).expect("writer starts");
    gunzip(writer.get_ref().expect("idle after new"))
}

fn open(bytes: Vec<u8>) -> Result<Reader<Cursor<Vec<u8>>>, Error> {
    Reader::new(Cursor::new(bytes))
}

fn open_err(bytes: Vec<u8>) -> Error {
    match open(bytes) {
        Ok(reader) => panic!("opened as a recording: {reader:?}"),
        Err(e) => e,
    }
}

/// Reads every record; returns those read and the error that stopped the reader, after
/// checking that the reader yields nothing more after it.
fn read_until_error(reader: &mut Reader<Cursor<Vec<u8>>>) -> (Vec<Record>, Option<Error>) {
    let mut records = Vec::new();
    while let Some(item) = reader.next() {
        match item {
            Ok(record) => records.push(record),
            Err(e) => {
                assert!(reader.next().is_none(), "the reader goes on after {e}");
                assert!(reader.next().is_none());
                assert_eq!(reader.end(), None);
                return (records, Some(e));
            }
        }
    }
    (records, None)
}

#[test]
fn empty_input_is_not_a_recording_because_it_is_empty() {
    let e = open_err(Vec::new());
    assert!(matches!(e, Error::NotARecording(_)), "{e:?}");
    assert!(e.to_string().contains("empty"), "{e}");
}

#[test]
fn plain_text_is_not_a_recording_because_it_is_not_gzip() {
    for input in [
        b"hello, this is not a recording\n".to_vec(),
        b"{\"kind\":\"Pod\"}".to_vec(),
        b"PK\x03\x04 a zip file".to_vec(),
        MAGIC.to_vec(),
        vec![0x1f, 0x00, 0x00],
    ] {
        let e = open_err(input);
        assert!(matches!(e, Error::NotARecording(_)), "{e:?}");
        assert!(e.to_string().contains("gzip"), "{e}");
    }
}

#[test]
fn gzip_of_other_content_is_not_a_recording_because_of_its_magic() {
    for raw in [
        b"hello world, a longer text than the magic".to_vec(),
        b"RFO".to_vec(),
        b"RFORENSX\x01\x00\x00\x00".to_vec(),
    ] {
        let e = open_err(gzip(&raw));
        assert!(matches!(e, Error::NotARecording(_)), "{e:?}");
        assert!(e.to_string().contains("magic"), "{e}");
    }
}

#[test]
fn an_empty_gzip_member_is_not_a_recording() {
    let e = open_err(gzip(&[]));
    assert!(matches!(e, Error::NotARecording(_)), "{e:?}");
}

#[test]
fn a_version_newer_than_this_build_or_zero_is_unsupported() {
    for version in [0u32, FORMAT_VERSION + 1, FORMAT_VERSION + 2, u32::MAX] {
        let mut raw = raw_preamble_and_header();
        raw[8..12].copy_from_slice(&version.to_le_bytes());
        let e = open_err(gzip(&raw));
        assert!(
            matches!(e, Error::UnsupportedVersion { found, supported }
                if found == version && supported == FORMAT_VERSION),
            "version {version}: {e:?}"
        );
    }
}

#[test]
fn a_preamble_cut_inside_the_version_is_a_truncation() {
    let mut raw = MAGIC.to_vec();
    raw.extend_from_slice(&[1, 0]);
    let e = open_err(gzip(&raw));
    assert!(e.is_truncation(), "{e:?}");
}

#[test]
fn a_recording_without_a_header_frame_is_a_truncation() {
    let mut raw = MAGIC.to_vec();
    raw.extend_from_slice(&1u32.to_le_bytes());
    let e = open_err(gzip(&raw));
    assert!(e.is_truncation(), "{e:?}");
    assert!(e.to_string().contains("header"), "{e}");
}

#[test]
fn a_garbage_header_frame_is_a_decode_error_naming_the_header() {
    let mut raw = MAGIC.to_vec();
    raw.extend_from_slice(&1u32.to_le_bytes());
    raw.extend_from_slice(&3u32.to_le_bytes());
    raw.extend_from_slice(&[0xff, 0xff, 0xff]);
    let e = open_err(gzip(&raw));
    assert!(
        matches!(&e, Error::Decode { what, offset: 12, .. } if what == "header"),
        "{e:?}"
    );
}

#[test]
fn a_huge_frame_length_after_the_header_is_refused_before_reading_or_allocating() {
    let raw_header = raw_preamble_and_header();
    let frame_start = raw_header.len() as u64;
    for len in [u32::MAX, MAX_FRAME_LEN + 1] {
        let mut raw = raw_header.clone();
        raw.extend_from_slice(&len.to_le_bytes());
        // No frame bytes follow: had the reader allocated or read `len` bytes first, it would
        // report a truncation instead.
        let mut reader = open(gzip(&raw)).expect("the header is fine");
        let (records, e) = read_until_error(&mut reader);
        assert!(records.is_empty());
        let e = e.expect("an error");
        assert!(
            matches!(&e, Error::FrameTooLarge { what, offset, len: l, limit }
                if what == "record 1" && *offset == frame_start && *l == u64::from(len)
                    && *limit == MAX_FRAME_LEN),
            "length {len}: {e:?}"
        );
        assert!(e.to_string().contains("byte"), "{e}");
    }
}

#[test]
fn a_frame_length_of_exactly_the_limit_is_not_too_large() {
    let mut raw = raw_preamble_and_header();
    raw.extend_from_slice(&MAX_FRAME_LEN.to_le_bytes());
    raw.extend_from_slice(&[0; 16]);
    let mut reader = open(gzip(&raw)).expect("the header is fine");
    let (_, e) = read_until_error(&mut reader);
    let e = e.expect("an error");
    assert!(e.is_truncation(), "{e:?}");
}

#[test]
fn bytes_after_the_trailer_are_trailing_data() {
    let writer = Writer::new(Vec::new(), &header()).unwrap();
    let mut raw = gunzip(&writer.finish().unwrap());
    let trailer_end = raw.len() as u64;
    raw.extend_from_slice(b"junk");
    let mut reader = open(gzip(&raw)).expect("the header is fine");
    let (records, e) = read_until_error(&mut reader);
    assert!(records.is_empty());
    let e = e.expect("an error");
    assert!(
        matches!(e, Error::TrailingData { offset } if offset == trailer_end),
        "{e:?}"
    );
}

#[test]
fn an_end_marker_without_its_trailer_is_truncated() {
    let mut raw = raw_preamble_and_header();
    raw.extend_from_slice(&0u32.to_le_bytes());
    let mut reader = open(gzip(&raw)).expect("the header is fine");
    let (_, e) = read_until_error(&mut reader);
    let e = e.expect("an error");
    assert!(e.is_truncation(), "{e:?}");
    assert!(e.to_string().contains("trailer"), "{e}");
}

#[test]
fn a_trailer_that_miscounts_the_records_is_an_error() {
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    writer.write(&record(1)).unwrap();
    let finished = gunzip(&writer.finish().unwrap());
    // Drop record 1's frame but keep the trailer that counts it.
    let header_only = gunzip(
        Writer::new(Vec::new(), &header())
            .unwrap()
            .get_ref()
            .unwrap(),
    );
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    writer.write(&record(1)).unwrap();
    writer.flush().unwrap();
    let with_record = gunzip(writer.get_ref().unwrap());
    let mut raw = header_only.clone();
    raw.extend_from_slice(&finished[with_record.len()..]);
    let mut reader = open(gzip(&raw)).unwrap();
    let (records, e) = read_until_error(&mut reader);
    assert!(records.is_empty());
    let e = e.expect("an error");
    assert!(
        e.to_string().contains("counts 1 records, the file holds 0"),
        "{e}"
    );
}

#[test]
fn a_second_member_after_the_end_marker_is_trailing_data() {
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    writer.write(&record(1)).unwrap();
    let mut bytes = writer.finish().unwrap();
    bytes.extend_from_slice(&gzip(&[0, 0, 0, 0]));
    let mut reader = open(bytes).unwrap();
    let (records, e) = read_until_error(&mut reader);
    assert_eq!(records, vec![record(1)]);
    assert!(matches!(e, Some(Error::TrailingData { .. })), "{e:?}");
}

#[test]
fn a_garbage_frame_is_a_decode_error_naming_the_record_and_its_byte_offset() {
    let writer = Writer::new(Vec::new(), &header()).unwrap();
    let frame_start = writer.raw_bytes();
    let mut raw = gunzip(writer.get_ref().unwrap());
    raw.extend_from_slice(&5u32.to_le_bytes());
    raw.extend_from_slice(&[0xff; 5]);
    let mut reader = open(gzip(&raw)).unwrap();
    let (records, e) = read_until_error(&mut reader);
    assert!(records.is_empty());
    let e = e.expect("an error");
    assert!(
        matches!(&e, Error::Decode { what, offset, .. } if what == "record 1" && *offset == frame_start),
        "{e:?}"
    );
    let message = e.to_string();
    assert!(message.contains("record 1"), "{message}");
    assert!(
        message.contains(&format!("byte {frame_start}")),
        "{message}"
    );
}

#[test]
fn a_frame_with_bytes_left_over_after_its_record_is_a_decode_error() {
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    writer.write(&record(1)).unwrap();
    writer.write(&record(2)).unwrap();
    let mut raw = gunzip(&writer.finish().unwrap());
    // Merge the two record frames into one: the first record fills only part of it.
    let header_end = raw_preamble_and_header().len();
    let len1 = u32::from_le_bytes(raw[header_end..header_end + 4].try_into().unwrap()) as usize;
    let second = header_end + 4 + len1;
    let len2 = u32::from_le_bytes(raw[second..second + 4].try_into().unwrap()) as usize;
    let merged = (len1 + 4 + len2) as u32;
    raw[header_end..header_end + 4].copy_from_slice(&merged.to_le_bytes());
    let mut reader = open(gzip(&raw)).unwrap();
    let (records, e) = read_until_error(&mut reader);
    assert!(records.is_empty());
    let e = e.expect("an error");
    assert!(
        matches!(&e, Error::Decode { what, .. } if what == "record 1"),
        "{e:?}"
    );
    assert!(e.to_string().contains("left over"), "{e}");
}

#[test]
fn a_record_after_a_bad_one_is_not_read() {
    let writer = Writer::new(Vec::new(), &header()).unwrap();
    let mut raw = gunzip(writer.get_ref().unwrap());
    raw.extend_from_slice(&1u32.to_le_bytes());
    raw.push(0xff);
    let mut good = Writer::new(Vec::new(), &header()).unwrap();
    let before = good.raw_bytes() as usize;
    good.write(&record(2)).unwrap();
    let good_raw = gunzip(&good.finish().unwrap());
    raw.extend_from_slice(&good_raw[before..]);
    let mut reader = open(gzip(&raw)).unwrap();
    let (records, e) = read_until_error(&mut reader);
    assert!(records.is_empty());
    assert!(matches!(e, Some(Error::Decode { .. })), "{e:?}");
}

/// A recording of two members: the header; then records 1 and 2, a sync flush, records 3 and 4,
/// the end marker and the trailer. Returns its bytes, the compressed offsets where each member
/// ends and the offset of the sync flush.
fn two_member_recording() -> (Vec<u8>, Vec<usize>, usize) {
    let mut writer = Writer::new(Vec::new(), &header()).expect("writer starts");
    let header_end = writer.get_ref().expect("idle").len();
    writer.write(&record(1)).expect("write");
    writer.write(&record(2)).expect("write");
    writer.flush().expect("flush");
    let flushed = writer.get_ref().expect("flushed").len();
    writer.write(&record(3)).expect("write");
    writer.write(&record(4)).expect("write");
    let bytes = writer.finish().expect("finish");
    let ends = member_ends(&bytes);
    assert_eq!(
        ends,
        vec![header_end, bytes.len()],
        "the flush closed no member"
    );
    assert_eq!(bytes[flushed - 4..flushed], [0, 0, 0xff, 0xff]);
    (bytes, ends, flushed)
}

/// Damage to a member's deflate data is detected for certain only by the CRC-32 at the member's
/// end; the reader may stumble over the damaged bytes first and report what it sees there (a bad
/// magic, version, frame length or encoding). Either way it is an error, never success.
#[test]
fn a_corrupted_byte_in_the_deflate_data_or_trailer_of_a_member_is_an_error() {
    let (bytes, ends, flushed) = two_member_recording();
    let mut start = 0;
    for end in ends {
        // A member: a 10-byte gzip header (no optional fields), deflate data, CRC-32, ISIZE.
        for at in start + 10..end {
            for flip in [0x01, 0x5a, 0xff] {
                let mut damaged = bytes.clone();
                damaged[at] ^= flip;
                if let Ok(mut reader) = open(damaged) {
                    let (_, e) = read_until_error(&mut reader);
                    // The sync flush's empty stored block starts with 3 header bits and up to 7
                    // bits of padding that the inflater skips: the byte before its LEN and NLEN.
                    if at == flushed - 5 && e.is_none() {
                        continue;
                    }
                    assert!(e.is_some(), "byte {at} ^ {flip:#x}: no error");
                }
            }
        }
        start = end;
    }
}

#[test]
fn a_corrupted_crc_or_length_trailer_is_reported_as_corrupt_compression() {
    let (bytes, ends, _) = two_member_recording();
    for end in ends {
        for at in end - 8..end {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x01;
            let e = match open(damaged) {
                Err(e) => e,
                Ok(mut reader) => read_until_error(&mut reader)
                    .1
                    .unwrap_or_else(|| panic!("byte {at}: no error")),
            };
            assert!(
                matches!(e, Error::CorruptCompression { .. }),
                "byte {at}: {e:?}"
            );
            assert!(e.to_string().contains("byte"), "{e}");
        }
    }
}

/// A damaged sync-flush marker (the empty stored block's LEN and NLEN) is bad deflate data.
#[test]
fn a_corrupted_sync_flush_marker_is_corrupt_compression() {
    let (bytes, _, flushed) = two_member_recording();
    for at in flushed - 4..flushed {
        let mut damaged = bytes.clone();
        damaged[at] ^= 0x10;
        let mut reader = open(damaged).expect("the header member is intact");
        let (records, e) = read_until_error(&mut reader);
        assert_eq!(records, vec![record(1), record(2)], "byte {at}");
        let e = e.unwrap_or_else(|| panic!("byte {at}: no error"));
        assert!(
            matches!(e, Error::CorruptCompression { .. }),
            "byte {at}: {e:?}"
        );
    }
}

/// Records are yielded as their frames complete, while a member's CRC-32 is only checked at the
/// member's end: the records of a damaged member that precede the check may be damaged too. What
/// holds is that every record flushed before the damaged byte (in an earlier member, or before a
/// sync flush of the same member) reads intact, and the damage is always reported.
#[test]
fn any_single_corrupted_byte_never_panics_and_keeps_the_records_flushed_before_it() {
    let (bytes, ends, flushed_at) = two_member_recording();
    let written: Vec<Record> = (1..=4).map(record).collect();
    // Records flushed by each offset: the header's member end, the sync flush, the last member's end.
    let flushed = [(ends[0], 0), (flushed_at, 2), (ends[1], 4)];
    for at in 0..bytes.len() {
        let intact = flushed
            .iter()
            .filter(|(end, _)| *end <= at)
            .map(|(_, n)| *n)
            .max()
            .unwrap_or(0);
        for flip in [0x01, 0x80, 0xff] {
            let mut damaged = bytes.clone();
            damaged[at] ^= flip;
            let Ok(mut reader) = open(damaged) else {
                assert_eq!(
                    intact, 0,
                    "byte {at} ^ {flip:#x}: the header member was intact"
                );
                continue;
            };
            let (records, e) = read_until_error(&mut reader);
            assert!(records.len() >= intact, "byte {at} ^ {flip:#x}: {e:?}");
            assert_eq!(
                records[..intact],
                written[..intact],
                "byte {at} ^ {flip:#x}"
            );
            if e.is_none() {
                // Only a byte the decoder does not check (a gzip header's time or OS field, the
                // padding bits of the sync flush's stored block) can change without an error,
                // and then nothing decompressed changed.
                assert_eq!(records, written, "byte {at} ^ {flip:#x}");
            }
        }
    }
}

#[test]
fn the_writer_refuses_an_object_larger_than_the_frame_limit() {
    let mut writer = Writer::new(Vec::new(), &header()).unwrap();
    let mut big = record(1);
    big.object = vec![0; MAX_FRAME_LEN as usize + 1];
    let e = writer.write(&big).unwrap_err();
    assert!(
        matches!(&e, Error::FrameTooLarge { what, limit, len, .. }
            if what == "record 1" && *limit == MAX_FRAME_LEN && *len > u64::from(MAX_FRAME_LEN)),
        "{e:?}"
    );
    assert_eq!(writer.records(), 0);
}
