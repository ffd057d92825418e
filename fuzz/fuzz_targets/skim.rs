//! The skimming reader against serde on whatever libFuzzer makes: wherever the fast reader
//! reads a view from the bytes (as each kind the analyzer reads), it is the view serde reads,
//! and it never reads an object serde refuses. `check_against_serde` panics otherwise.
//!
//!     cargo +nightly fuzz run skim
#![no_main]

use libfuzzer_sys::fuzz_target;
use rf_format::Kind;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for kind in Kind::KNOWN.iter().filter(|k| rf_analyzer::Prepared::reads(k)) {
        rf_analyzer::check_against_serde(kind, text);
    }
});
