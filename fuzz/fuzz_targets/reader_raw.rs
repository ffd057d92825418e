//! The recording reader over arbitrary *decompressed* bytes: the input is gzip-compressed here,
//! so mutations reach the preamble, the frames and the bincode values instead of dying in the
//! deflate decoder or at a CRC check.
#![no_main]

use std::io::Write;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    if gz.write_all(data).is_err() {
        return;
    }
    let Ok(bytes) = gz.finish() else { return };
    let mut reader = match rf_format::Reader::new(bytes.as_slice()) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    loop {
        match reader.next_record() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => {
                let _ = e.to_string();
                break;
            }
        }
    }
    let _ = reader.trailer();
    assert!(matches!(reader.next_record(), Ok(None)));
});
