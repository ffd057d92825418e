//! `lint`'s reading of rendered manifests on whatever libFuzzer makes
//! (`rf_analyzer::lint::manifests::check_reading`): the text split into documents and objects,
//! or refused with an error that names the input; each object linted, and each finding
//! located on a line of the text. Nothing may panic.
//!
//!     cargo +nightly fuzz run manifests
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        rf_analyzer::lint::manifests::check_reading(text);
    }
});
