//! Every input in `fuzz/corpus/manifests` (the fuzzer's seeds) and `fuzz/regressions/manifests`
//! (inputs that once made `lint`'s manifest reader panic) read again on stable: no panic, every
//! finding on a line of its input.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

#[test]
fn the_manifest_readers_fuzz_inputs_read_without_panic() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz");
    let mut read = 0;
    for dir in ["corpus", "regressions"] {
        let dir = root.join(dir).join("manifests");
        // No input has crashed the reader yet: git keeps no empty `regressions/manifests`.
        if dir.ends_with("regressions/manifests") && !dir.exists() {
            continue;
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let bytes = std::fs::read(&path).unwrap();
            if let Ok(text) = std::str::from_utf8(&bytes) {
                rf_analyzer::lint::manifests::check_reading(text);
            }
            read += 1;
        }
    }
    assert!(read >= 4, "the seeds are there: {read}");
}
