//! Every input in `fuzz/corpus/reader` (the fuzzer's seeds) and `fuzz/regressions/reader` (inputs
//! that once crashed or hung the reader) reads to its end: no panic, and an error, if any, that
//! says where. The same for `reader_raw`, whose inputs are the decompressed stream (gzipped here,
//! as the fuzz target does). The fuzz targets (`cargo +nightly fuzz run reader`) run the same
//! code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::path::{Path, PathBuf};

use rf_format::Reader;

fn inputs(target: &str) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut files = Vec::new();
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_file() && p.file_name().is_some_and(|n| n != ".gitkeep") {
                files.push(p);
            }
        }
    }
    files.sort();
    files
}

fn located(s: &str) -> bool {
    s.match_indices("byte ").any(|(i, m)| {
        s[i + m.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Reads `data` to its end; the error's text, if any. Panics are the caller's to catch.
fn read_all(data: &[u8]) -> Option<String> {
    let mut reader = match Reader::new(data) {
        Ok(r) => r,
        Err(e) => return Some(e.to_string()),
    };
    loop {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => {
                assert!(reader.end().is_some());
                return None;
            }
            Err(e) => {
                assert!(matches!(reader.next_record(), Ok(None)));
                return Some(e.to_string());
            }
        }
    }
}

fn check(target: &str, prepare: fn(Vec<u8>) -> Vec<u8>) {
    let files = inputs(target);
    assert!(files.len() >= 3, "the seed corpus is there: {files:?}");
    for path in files {
        let data = prepare(std::fs::read(&path).unwrap());
        let name = path.display();
        match std::panic::catch_unwind(|| read_all(&data)) {
            Err(_) => panic!("{name}: the reader panicked"),
            Ok(Some(e)) if !e.contains("empty") => {
                assert!(located(&e), "{name}: the error says no byte offset: {e}");
            }
            Ok(_) => {}
        }
    }
}

#[test]
fn every_reader_fuzz_input_reads_without_a_panic_and_errors_say_where() {
    check("reader", |data| data);
}

#[test]
fn every_raw_reader_fuzz_input_reads_without_a_panic_and_errors_say_where() {
    check("reader_raw", |data| {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&data).unwrap();
        gz.finish().unwrap()
    });
}
