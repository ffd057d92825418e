//! The recorder's one clock: receive times of watch events.

use rf_format::Timestamp;

/// Now, UTC.
pub(crate) fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
