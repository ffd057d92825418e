//! Every input in `fuzz/corpus/{kubectl_watch,audit_log}` (the fuzzers' seeds) and
//! `fuzz/regressions/{kubectl_watch,audit_log}` (inputs that once crashed or hung an importer)
//! imports without a panic; an error names the input, and every warning names the input and a
//! line that exists. The fuzz targets (`cargo +nightly fuzz run kubectl_watch`) run the same code.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use rf_import::{Imported, Input, Result};

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

fn check(target: &str, import: fn(Vec<Input>) -> Result<Imported>) {
    let files = inputs(target);
    assert!(files.len() >= 3, "the seed corpus is there: {files:?}");
    for path in files {
        let data = std::fs::read(&path).unwrap();
        let name = path.display();
        let lines = data.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
        let result = std::panic::catch_unwind(|| {
            import(vec![Input::new(
                "input",
                std::io::Cursor::new(data.clone()),
            )])
        });
        match result {
            Err(_) => panic!("{name}: {target} panicked"),
            Ok(Err(e)) => {
                let e = e.to_string();
                assert!(
                    e.starts_with("input"),
                    "{name}: the error names no input: {e}"
                );
            }
            Ok(Ok(imported)) => {
                for w in &imported.warnings {
                    assert_eq!(w.source, "input", "{name}: {w}");
                    // A gzip input's lines are counted after decompression: only bound plain ones.
                    if !data.starts_with(&[0x1f, 0x8b]) {
                        assert!(w.line <= lines, "{name}: line {} of {lines}: {w}", w.line);
                    }
                }
            }
        }
    }
}

#[test]
fn every_kubectl_watch_fuzz_input_imports_without_a_panic() {
    check("kubectl_watch", rf_import::kubectl_watch);
}

#[test]
fn every_audit_log_fuzz_input_imports_without_a_panic() {
    check("audit_log", rf_import::audit_log);
}
