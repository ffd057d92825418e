//! The recorder's clock: receive times of watch events, and when the writer starts a new file.

use rf_format::Timestamp;

/// Now, UTC: the receive time the recorder gives records.
pub fn now() -> Timestamp {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    Timestamp(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// Where the writer takes the time from: the system clock, or a test's hand-moved clock (so
/// rotation is tested without waiting for wall time).
pub(crate) trait Clock: Send {
    /// Now, UTC.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        now()
    }
}

/// A UTC time as `YYYYMMDDTHHMMSSZ` (whole seconds, rounded down), for file names that sort by
/// time.
pub(crate) fn compact_utc(t: Timestamp) -> String {
    let secs = t.0.div_euclid(1_000_000_000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Year, month, day of a day count since 1970-01-01 (proleptic Gregorian; Howard Hinnant's
/// algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_utc_names_sort_by_time() {
        assert_eq!(
            compact_utc(Timestamp::from_unix_seconds(1_773_493_200)),
            "20260314T130000Z"
        );
        assert_eq!(compact_utc(Timestamp(0)), "19700101T000000Z");
        assert_eq!(
            compact_utc(Timestamp::from_unix_seconds(951_782_399).plus_nanos(999_999_999)),
            "20000228T235959Z"
        );
        assert_eq!(
            compact_utc(Timestamp::from_unix_seconds(951_868_800)),
            "20000301T000000Z"
        );
        assert_eq!(
            compact_utc(Timestamp::from_unix_seconds(1_709_164_800)),
            "20240229T000000Z"
        );
    }
}
