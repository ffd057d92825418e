//! The kubectl-watch importer over arbitrary bytes (plain, or gzip when they start with 1f 8b).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let input = rf_import::Input::new("fuzz.json", std::io::Cursor::new(data.to_vec()));
    if let Ok(imported) = rf_import::kubectl_watch(vec![input]) {
        for w in &imported.warnings {
            let _ = w.to_string();
        }
    }
});
