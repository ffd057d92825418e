//! Golden files of format versions 1 and 2.
//!
//! `tests/golden/vN.rfr` is a small recording written once and committed; `tests/golden/vN.raw`
//! is its decompressed bytes, which *are* the format. The tests check that today's writer
//! produces exactly `vN.raw` for the same values when asked for version N (so any change to the
//! encoding, such as a move off bincode 2.0.1, is caught), and that today's reader reads the
//! committed `vN.rfr` back to the same values. Version 2's values add records whose objects are
//! written as deltas (and some that are not, by the rule of docs/format.md). The compressed bytes are never compared: deflate output may change between
//! flate2 versions without changing the format.
//!
//! `v1.rfr` was written when the writer closed a gzip member at every flush. `v1-sync.rfr` holds
//! the same values as written since the writer sync-flushes inside a member instead (see
//! docs/format.md): both layouts must keep reading the same.
//!
//! The files are generated once, by hand, with
//!
//! ```text
//! RF_BLESS_GOLDEN=1 CARGO_TARGET_DIR=/work/target-fmt cargo test -p rf-format --test golden bless
//! ```
//!
//! Without `RF_BLESS_GOLDEN=1` no test writes them. Even with it, blessing refuses to overwrite
//! an existing golden file whose decompressed bytes differ: a released version is never silently
//! regenerated. A new encoding is a new format version with its own `vN` files.

mod common;
use common::member_ends;

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::path::PathBuf;

use flate2::read::MultiGzDecoder;
use rf_format::{
    End, FORMAT_VERSION, Header, Kind, MAGIC, Op, Reader, Record, Redaction, Source, Timestamp,
    Writer,
};

const BLESS_VAR: &str = "RF_BLESS_GOLDEN";

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(name)
}

fn read_golden(name: &str) -> Vec<u8> {
    let path = golden_path(name);
    std::fs::read(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e} (generate it once with {BLESS_VAR}=1, see golden.rs)",
            path.display()
        )
    })
}

/// 2024-05-01T12:00:00Z.
const T0: i64 = 1_714_564_800_000_000_000;

fn fixed_header() -> Header {
    let mut notes = BTreeMap::new();
    notes.insert("purpose".to_owned(), "golden file".to_owned());
    notes.insert("times".to_owned(), "exact".to_owned());
    Header {
        format_version: 1,
        tool_version: "0.1.0".to_owned(),
        started_at: Timestamp(T0),
        source: Source {
            context: Some("kind-dev".to_owned()),
            server: Some("https://127.0.0.1:6443".to_owned()),
            namespaces: vec!["shop".to_owned(), "argocd".to_owned()],
            label_selector: Some("app=web".to_owned()),
            kinds: vec![
                Kind::Rollout,
                Kind::ReplicaSet,
                Kind::Service,
                Kind::EndpointSlice,
                Kind::Pod,
                Kind::Application,
                Kind::Event,
                Kind::Other {
                    group: "networking.k8s.io".to_owned(),
                    version: "v1".to_owned(),
                    kind: "Ingress".to_owned(),
                },
            ],
        },
        redaction: Redaction::EnvValueDigests,
        notes,
    }
}

#[allow(clippy::too_many_arguments)]
fn record(
    seq: u64,
    kind: Kind,
    op: Op,
    name: &str,
    uid: &str,
    rv: &str,
    actor: Option<&str>,
    object: &[u8],
) -> Record {
    Record {
        seq,
        observed_at: Timestamp(T0 + (seq as i64) * 250_000_000),
        kind,
        op,
        namespace: "shop".to_owned(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        resource_version: rv.to_owned(),
        actor: actor.map(str::to_owned),
        object: object.to_vec(),
    }
}

/// The fixed records of format `version`: for version 1, nine records with every `Op` variant
/// (both `Deleted` flavours) and every `Kind` variant; version 2 adds records of the same
/// objects that are written as deltas, or whole where the rule leaves no base.
fn fixed_records(version: u32) -> Vec<Record> {
    let mut records = vec![
        record(1, Kind::Rollout, Op::ListBegin, "", "", "100", None, b""),
        record(
            2,
            Kind::Rollout,
            Op::Listed,
            "web",
            "u-1",
            "99",
            None,
            br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"name":"web"}}"#,
        ),
        record(3, Kind::ReplicaSet, Op::ListEnd, "", "", "100", None, b""),
        record(
            4,
            Kind::Service,
            Op::Added,
            "web-canary",
            "u-2",
            "101",
            None,
            br#"{"kind":"Service"}"#,
        ),
        record(
            5,
            Kind::EndpointSlice,
            Op::Modified,
            "web-canary-x",
            "u-3",
            "102",
            Some("system:serviceaccount:kube-system:endpointslice-controller"),
            br#"{"kind":"EndpointSlice"}"#,
        ),
        record(
            6,
            Kind::Pod,
            Op::Deleted { inferred: false },
            "web-1",
            "u-4",
            "103",
            None,
            br#"{"kind":"Pod"}"#,
        ),
        record(
            7,
            Kind::Application,
            Op::Gap {
                reason: "410 Gone".to_owned(),
            },
            "",
            "",
            "",
            None,
            b"",
        ),
        record(
            8,
            Kind::Other {
                group: "networking.k8s.io".to_owned(),
                version: "v1".to_owned(),
                kind: "Ingress".to_owned(),
            },
            Op::Deleted { inferred: true },
            "web",
            "u-5",
            "104",
            None,
            br#"{"kind":"Ingress"}"#,
        ),
        record(
            9,
            Kind::Event,
            Op::Added,
            "web.1",
            "u-6",
            "105",
            None,
            b"{}",
        ),
    ];
    if version >= 2 {
        records.extend([
            // A delta from record 2.
            record(
                10,
                Kind::Rollout,
                Op::Modified,
                "web",
                "u-1",
                "106",
                None,
                br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"generation":2,"name":"web"},"status":{}}"#,
            ),
            // Whole: record 6 deleted this Pod, which leaves no base.
            record(
                11,
                Kind::Pod,
                Op::Added,
                "web-1",
                "u-7",
                "107",
                None,
                br#"{"kind":"Pod"}"#,
            ),
            // Whole: it shares too little with record 4 for a delta to be shorter.
            record(
                12,
                Kind::Service,
                Op::Modified,
                "web-canary",
                "u-2",
                "108",
                None,
                br#"{"spec":{"type":"ClusterIP"}}"#,
            ),
            // A delta from record 10; then no base is left.
            record(
                13,
                Kind::Rollout,
                Op::Deleted { inferred: false },
                "web",
                "u-1",
                "109",
                None,
                br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"generation":3,"name":"web"},"status":{}}"#,
            ),
            // Whole again.
            record(
                14,
                Kind::Rollout,
                Op::Added,
                "web",
                "u-8",
                "110",
                None,
                br#"{"apiVersion":"argoproj.io/v1alpha1","kind":"Rollout","metadata":{"generation":1,"name":"web"},"status":{}}"#,
            ),
        ]);
    }
    records
}

/// Writes the fixed recording of format `version`: a member for the header, then one with a
/// flush after the first list (a sync flush; the writer of `v1.rfr` closed a member there) and
/// the end marker.
fn write_fixed(version: u32) -> Vec<u8> {
    let mut writer = Writer::with_format(
        Vec::new(),
        &fixed_header(),
        Writer::<Vec<u8>>::LEVEL,
        version,
    )
    .expect("writer starts");
    for (i, record) in fixed_records(version).iter().enumerate() {
        writer.write(record).expect("record is written");
        if i == 2 {
            writer.flush().expect("flush succeeds");
        }
    }
    writer
        .finish_at(closed_at(version))
        .expect("finish succeeds")
}

/// When the fixed recording was closed: a minute after its last record.
fn closed_at(version: u32) -> Timestamp {
    fixed_records(version)
        .iter()
        .map(|r| r.observed_at)
        .max()
        .expect("records")
        .plus_nanos(60_000_000_000)
}

fn decompress(bytes: &[u8]) -> Vec<u8> {
    let mut raw = Vec::new();
    MultiGzDecoder::new(bytes)
        .read_to_end(&mut raw)
        .expect("valid gzip");
    raw
}

#[test]
fn the_fixed_values_cover_every_op_and_kind_variant() {
    let records = fixed_records(1);
    for op in [
        "added",
        "modified",
        "deleted",
        "deleted-inferred",
        "list-begin",
        "listed",
        "list-end",
        "gap",
    ] {
        assert!(records.iter().any(|r| r.op.name() == op), "no {op} record");
    }
    for kind in Kind::KNOWN {
        assert!(records.iter().any(|r| r.kind == kind), "no {kind} record");
    }
    assert!(records.iter().any(|r| matches!(r.kind, Kind::Other { .. })));
    assert!(records.iter().any(|r| r.actor.is_some()));
}

/// The versions with golden files, each with its compressed layouts.
const GOLDEN: [(u32, &[&str]); 2] = [(1, &["v1.rfr", "v1-sync.rfr"]), (2, &["v2.rfr"])];

#[test]
fn encoding_the_fixed_recordings_today_gives_the_golden_bytes() {
    for (version, _) in GOLDEN {
        let today = decompress(&write_fixed(version));
        let golden = read_golden(&format!("v{version}.raw"));
        assert_eq!(
            today.len(),
            golden.len(),
            "the decompressed length changed: the v{version} encoding is frozen"
        );
        if let Some(at) = today.iter().zip(&golden).position(|(a, b)| a != b) {
            panic!("the v{version} encoding changed: first difference at decompressed byte {at}");
        }
    }
}

#[test]
fn the_committed_recordings_decompress_to_the_golden_bytes() {
    for (version, files) in GOLDEN {
        for file in files {
            assert_eq!(
                decompress(&read_golden(file)),
                read_golden(&format!("v{version}.raw")),
                "{file}"
            );
        }
    }
}

#[test]
fn the_committed_recordings_read_back_to_the_fixed_values() {
    for (version, files) in GOLDEN {
        for file in files {
            reads_back(version, read_golden(file));
        }
    }
}

#[test]
fn todays_fixed_recordings_read_back_to_the_fixed_values() {
    for (version, _) in GOLDEN {
        reads_back(version, write_fixed(version));
    }
}

#[test]
fn version_2_writes_deltas_where_the_rule_allows() {
    // The same values written whole (version 1) and with deltas (version 2): only records 10
    // and 13 have a base and a shorter delta; every other record costs one byte more (the body
    // tag), and the preamble and header are the same length.
    let records = fixed_records(2);
    let whole = {
        let mut w =
            Writer::with_format(Vec::new(), &fixed_header(), Writer::<Vec<u8>>::LEVEL, 1).unwrap();
        for r in &records {
            w.write(r).unwrap();
        }
        decompress(&w.finish_at(closed_at(2)).unwrap())
    };
    let delta = decompress(&write_fixed(2));
    let saved = (whole.len() + records.len()) - delta.len();
    let object = |seq: usize| records[seq - 1].object.len();
    assert!(
        saved > object(10) / 2 + object(13) / 2,
        "{saved} bytes saved: records 10 and 13 were not written as deltas"
    );
}

fn reads_back(version: u32, rfr: Vec<u8>) {
    let mut reader = Reader::new(Cursor::new(rfr)).expect("a recording");
    assert_eq!(reader.format_version(), version);
    assert_eq!(
        reader.header(),
        &Header {
            format_version: version,
            ..fixed_header()
        }
    );
    let records: Vec<Record> = (&mut reader)
        .collect::<Result<_, _>>()
        .expect("every record reads");
    assert_eq!(records, fixed_records(version));
    assert_eq!(reader.end(), Some(End::Closed));
    let trailer = reader.trailer().expect("a trailer");
    assert_eq!(trailer.closed_at, closed_at(version));
    assert_eq!(trailer.records, fixed_records(version).len() as u64);
}

#[test]
fn the_raw_bytes_start_with_the_magic_and_their_version_little_endian() {
    for (version, _) in GOLDEN {
        raw_bytes_start_with_the_magic_and(version);
    }
}

fn raw_bytes_start_with_the_magic_and(version: u32) {
    let raw = read_golden(&format!("v{version}.raw"));
    assert_eq!(&raw[..8], &MAGIC);
    assert_eq!(&raw[..8], b"RFORENSI");
    assert_eq!(&raw[8..12], &[version as u8, 0, 0, 0]);
    // ...and end with the zero-length end-of-recording frame and the trailer frame.
    let ends_with_marker_and_trailer = (1..=32).any(|trailer_len: usize| {
        let marker = raw.len() - 8 - trailer_len;
        raw[marker..marker + 4] == [0, 0, 0, 0]
            && u32::from_le_bytes(raw[marker + 4..marker + 8].try_into().expect("four bytes"))
                as usize
                == trailer_len
    });
    assert!(ends_with_marker_and_trailer);
}

#[test]
fn the_sync_recordings_are_two_gzip_members_with_a_sync_flush() {
    for (what, rfr) in [
        ("v1-sync.rfr", read_golden("v1-sync.rfr")),
        ("v2.rfr", read_golden("v2.rfr")),
        ("today", write_fixed(1)),
        ("today", write_fixed(2)),
    ] {
        let ends = member_ends(&rfr);
        assert_eq!(ends.len(), 2, "{what}: {ends:?}");
        assert!(
            rfr[ends[0]..].windows(4).any(|w| w == [0, 0, 0xff, 0xff]),
            "{what}: no sync flush"
        );
    }
}

#[test]
fn the_v1_recording_is_several_gzip_members() {
    let rfr = read_golden("v1.rfr");
    let members = rfr
        .windows(4)
        .filter(|w| w == &[0x1f, 0x8b, 0x08, 0x00])
        .count();
    assert!(
        members >= 3,
        "expected at least 3 gzip members, found {members}"
    );
}

/// Writes the golden files of every version that lacks them, only when `RF_BLESS_GOLDEN=1`.
/// Never overwrites a golden file whose decompressed content differs.
#[test]
fn bless_writes_the_golden_files_only_when_rf_bless_golden_is_set() {
    if std::env::var(BLESS_VAR).as_deref() != Ok("1") {
        return;
    }
    assert_eq!(
        FORMAT_VERSION, 2,
        "these fixed values are the v1 and v2 golden files; add vN files for a new version"
    );
    std::fs::create_dir_all(golden_path("")).unwrap();
    for (version, files) in GOLDEN {
        let rfr = write_fixed(version);
        let raw = decompress(&rfr);
        let raw_path = golden_path(&format!("v{version}.raw"));
        let rfr_paths: Vec<PathBuf> = files.iter().map(|f| golden_path(f)).collect();
        for path in rfr_paths.iter().chain([&raw_path]) {
            if let Ok(existing) = std::fs::read(path) {
                let existing_raw = if path != &raw_path {
                    decompress(&existing)
                } else {
                    existing
                };
                assert_eq!(
                    existing_raw,
                    raw,
                    "{} exists with different content: v{version} is frozen, not regenerated",
                    path.display()
                );
            }
        }
        if !raw_path.exists() {
            std::fs::write(&raw_path, &raw).unwrap();
        }
        for path in &rfr_paths {
            if !path.exists() {
                std::fs::write(path, &rfr).unwrap();
            }
        }
    }
}
