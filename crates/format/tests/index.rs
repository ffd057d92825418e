//! Reading with the member index (docs/format.md, "Member index"): the members it names are
//! inflated whole, and the records, the end and any error are exactly those of a reader without
//! the index, whatever the damage, to the members or to the index itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Cursor;

use rf_format::{Header, Kind, MemberIndex, Op, Reader, Record, Source, Timestamp, Writer};

const LIMIT: u64 = Writer::<Vec<u8>>::MEMBER_LIMIT;

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

/// A Pod record whose object changes a little from one version to the next (deltas) and holds
/// some noise (so that members are megabytes, not kilobytes, compressed).
fn record(seq: u64, rng: &mut Lcg) -> Record {
    let pod = seq % 40;
    let noise: String = (0..600)
        .map(|_| char::from(b'a' + rng.below(26) as u8))
        .collect();
    let object = format!(
        r#"{{"kind":"Pod","metadata":{{"name":"pod-{pod}","resourceVersion":"{seq}"}},"status":{{"phase":"Running","note":"{noise}"}}}}"#
    );
    Record {
        seq,
        observed_at: Timestamp(seq as i64 * 1_000_000),
        kind: Kind::Pod,
        op: Op::Modified,
        namespace: "ns".to_owned(),
        name: format!("pod-{pod}"),
        uid: format!("uid-{pod}"),
        resource_version: seq.to_string(),
        actor: None,
        object: object.into_bytes(),
    }
}

/// A closed recording of more than two full members, flushed now and then.
fn recording() -> Vec<u8> {
    let header = Header::new("index-test", Timestamp(0), Source::default());
    let mut w = Writer::with_level(Vec::new(), &header, flate2::Compression::fast()).unwrap();
    let mut rng = Lcg(11);
    let mut seq = 0;
    while w.raw_bytes() < 2 * LIMIT + LIMIT / 3 {
        seq += 1;
        w.write(&record(seq, &mut rng)).unwrap();
        if seq % 50 == 0 {
            w.flush().unwrap();
        }
    }
    w.finish().unwrap()
}

/// What a reader gave: every record, then its end or its error, written out; and how many
/// members it inflated whole.
fn read(bytes: &[u8], indexed: bool) -> (Vec<Record>, String, usize) {
    let mut cursor = Cursor::new(bytes);
    let index = if indexed {
        MemberIndex::find(&mut cursor).unwrap()
    } else {
        None
    };
    let mut reader = match Reader::with_index(cursor, index) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), format!("error: {e}"), 0),
    };
    let mut records = Vec::new();
    let end = loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r),
            Ok(None) => break format!("end: {:?}", reader.end()),
            Err(e) => break format!("error: {e}"),
        }
    };
    (records, end, reader.members_read_whole())
}

#[test]
fn an_indexed_recording_reads_whole_members_and_the_same_records() {
    let bytes = recording();
    let index = MemberIndex::find(&mut Cursor::new(&bytes))
        .unwrap()
        .unwrap();
    assert!(
        index.len() >= 4,
        "the header's member and three more: {index:?}"
    );
    let (plain, plain_end, none) = read(&bytes, false);
    let (whole, whole_end, inflated) = read(&bytes, true);
    assert_eq!(none, 0);
    assert_eq!(
        inflated,
        index.len(),
        "every member listed was inflated whole"
    );
    assert_eq!(plain_end, "end: Some(Closed)");
    assert_eq!(whole_end, plain_end);
    assert!(plain.len() > 10_000, "{}", plain.len());
    assert!(whole == plain);
}

/// Bits flipped anywhere (the members of records, the index, the locator) and tails cut: the
/// indexed reader gives what the plain one gives, records and error alike.
#[test]
fn damage_anywhere_reads_as_without_the_index() {
    let bytes = recording();
    let index = MemberIndex::find(&mut Cursor::new(&bytes))
        .unwrap()
        .unwrap();
    let listed: usize = index.lengths().iter().map(|&l| l as usize).sum();
    let mut rng = Lcg(5);
    let mut fell_back = 0;
    for round in 0..24 {
        let mut damaged = bytes.clone();
        // A third of the rounds damage the index or the locator, the others the members.
        let at = if round % 3 == 0 {
            listed + rng.below(bytes.len() - listed)
        } else {
            rng.below(listed)
        };
        damaged[at] ^= 1 << rng.below(8);
        let (plain, plain_end, _) = read(&damaged, false);
        let (whole, whole_end, inflated) = read(&damaged, true);
        assert_eq!(whole_end, plain_end, "byte {at}");
        assert!(whole == plain, "byte {at}: records differ");
        if inflated < index.len() {
            fell_back += 1;
        }
    }
    assert!(fell_back >= 12, "damage made {fell_back} reads fall back");
    for cut in [1, 29, 30, 31, 500, bytes.len() - listed, bytes.len() / 2] {
        let cut = &bytes[..bytes.len() - cut];
        let (plain, plain_end, _) = read(cut, false);
        let (whole, whole_end, _) = read(cut, true);
        assert_eq!(whole_end, plain_end);
        assert!(whole == plain);
    }
}

/// An index that checks (its CRC-32 is right) but misplaces members, as only a writer with a
/// bug or a crafted file would: each member is still checked as it is inflated, and one that
/// does not check is read as without the index.
#[test]
fn an_index_that_misplaces_members_reads_as_without_it() {
    let bytes = recording();
    let index = MemberIndex::find(&mut Cursor::new(&bytes))
        .unwrap()
        .unwrap();
    let listed: usize = index.lengths().iter().map(|&l| l as usize).sum();
    let (plain, plain_end, _) = read(&bytes, false);
    let lengths = index.lengths().to_vec();
    for (i, shift) in [(1, 1i64), (1, -1), (2, 8), (0, 3), (2, -100)] {
        let mut moved: Vec<u64> = lengths.iter().map(|&l| u64::from(l)).collect();
        // Member i one way, the next the other: the sum still fills the file up to the index.
        moved[i] = moved[i].checked_add_signed(shift).unwrap();
        moved[i + 1] = moved[i + 1].checked_add_signed(-shift).unwrap();
        let mut rewritten = bytes[..listed].to_vec();
        rewritten.extend(index_members(&moved));
        assert_eq!(
            MemberIndex::find(&mut Cursor::new(&rewritten))
                .unwrap()
                .unwrap()
                .len(),
            lengths.len()
        );
        let (whole, whole_end, inflated) = read(&rewritten, true);
        assert_eq!(whole_end, plain_end, "member {i} by {shift}");
        assert!(whole == plain, "member {i} by {shift}: records differ");
        // The members before it are inflated whole; it is not (nor, read from the wrong place,
        // the next); a later one may be, when a member read as without the index brought the
        // reader back to where the index says the next starts.
        assert!(
            (i..lengths.len() - 1).contains(&inflated),
            "member {i} by {shift}: {inflated} inflated whole"
        );
    }
}

/// The index member and the locator for members of `lengths`, as docs/format.md lays them out.
fn index_members(lengths: &[u64]) -> Vec<u8> {
    let mut payload = Vec::new();
    payload.extend_from_slice(&(lengths.len() as u32).to_le_bytes());
    for &l in lengths {
        payload.extend_from_slice(&u32::try_from(l).unwrap().to_le_bytes());
    }
    let mut crc = flate2::Crc::new();
    crc.update(&payload);
    payload.extend_from_slice(&crc.sum().to_le_bytes());
    let member = |id: &[u8; 2], payload: &[u8]| {
        let mut m = vec![0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 0xff];
        m.extend_from_slice(&(payload.len() as u16 + 4).to_le_bytes());
        m.extend_from_slice(id);
        m.extend_from_slice(&(payload.len() as u16).to_le_bytes());
        m.extend_from_slice(payload);
        m.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        m
    };
    let mut out = member(b"RI", &payload);
    let index_len = out.len() as u32;
    out.extend(member(b"RL", &index_len.to_le_bytes()));
    out
}

/// A recording cut inside its index (a copy cut short by a few bytes) has every record: the
/// cut is reported where it is, as any cut inside a gzip member, or, right after the index
/// member, reads as closed (as a recording written before the index).
#[test]
fn a_cut_inside_the_index_keeps_every_record() {
    let header = Header::new("index-test", Timestamp(0), Source::default());
    let mut w = Writer::new(Vec::new(), &header).unwrap();
    let mut rng = Lcg(3);
    for seq in 1..=20 {
        w.write(&record(seq, &mut rng)).unwrap();
    }
    let bytes = w.finish().unwrap();
    let index = MemberIndex::find(&mut Cursor::new(&bytes))
        .unwrap()
        .unwrap();
    let listed: usize = index.lengths().iter().map(|&l| l as usize).sum();
    let (all, end, _) = read(&bytes, true);
    assert_eq!((all.len(), end.as_str()), (20, "end: Some(Closed)"));
    let mut closed = Vec::new();
    for cut in listed..bytes.len() {
        let (records, end, _) = read(&bytes[..cut], true);
        assert!(records == all, "cut {cut}");
        if end == "end: Some(Closed)" {
            closed.push(cut);
        } else {
            assert!(
                end.contains("the file ends") && end.contains("byte"),
                "cut {cut}: {end}"
            );
        }
    }
    // Right before the index member and right before the locator.
    assert_eq!(closed, [listed, bytes.len() - 30]);
}
