//! The one place bincode is used: encoding and decoding one frame's value.
//!
//! bincode 2.0.1 (standard config: little-endian, variable-length integers) is frozen
//! upstream. Keeping every call here means a move to a bincode-compatible crate touches only this
//! file, and the golden-bytes test proves the move byte-identical.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::MAX_FRAME_LEN;

fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ MAX_FRAME_LEN as usize }>()
}

/// Appends the encoding of `value` to `out`.
pub(crate) fn encode_into<T: Serialize>(value: &T, out: &mut Vec<u8>) -> Result<(), String> {
    bincode::serde::encode_into_std_write(value, out, config())
        .map(drop)
        .map_err(|e| e.to_string())
}

/// Decodes one value that must fill `bytes` exactly.
pub(crate) fn decode_exact<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    let (value, used) =
        bincode::serde::decode_from_slice::<T, _>(bytes, config()).map_err(|e| e.to_string())?;
    if used != bytes.len() {
        return Err(format!(
            "{} bytes left over after the value ({} of {} used)",
            bytes.len() - used,
            used,
            bytes.len()
        ));
    }
    Ok(value)
}
