//! The recording reader over arbitrary bytes: the header, every record, the end. Never a panic;
//! every error says where.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut reader = match rf_format::Reader::new(data) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = reader.header();
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
    let _ = reader.end();
    // After the end or an error, the reader yields nothing more.
    assert!(matches!(reader.next_record(), Ok(None)));
});
