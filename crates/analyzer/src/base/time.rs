//! Formatting of record timestamps. The analyzer never reads a clock: every time it prints comes
//! from a record.

use chrono::{DateTime, SecondsFormat};
use rf_format::Timestamp;

/// RFC 3339 in UTC with millisecond precision when the time has a fraction, e.g.
/// `2026-03-14T13:03:26.120Z`; whole seconds print as `2026-03-14T13:03:26Z`.
pub fn rfc3339(t: Timestamp) -> String {
    let dt = DateTime::from_timestamp_nanos(t.as_unix_nanos());
    if t.as_unix_nanos().rem_euclid(1_000_000_000) == 0 {
        dt.to_rfc3339_opts(SecondsFormat::Secs, true)
    } else {
        dt.to_rfc3339_opts(SecondsFormat::Millis, true)
    }
}

/// Parses an RFC 3339 time (as Kubernetes writes them) into a timestamp.
pub fn parse_rfc3339(s: &str) -> Option<Timestamp> {
    let dt = DateTime::parse_from_rfc3339(s).ok()?;
    dt.timestamp_nanos_opt().map(Timestamp)
}

/// A duration in words a person reads fast: `45s`, `3m10s`, `2h05m`.
pub fn human_duration(nanos: i64) -> String {
    let secs = nanos.max(0) / 1_000_000_000;
    if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_seconds_print_without_a_fraction() {
        let t = parse_rfc3339("2026-03-14T13:03:26Z").unwrap();
        assert_eq!(rfc3339(t), "2026-03-14T13:03:26Z");
        assert_eq!(
            rfc3339(t.plus_nanos(120_000_000)),
            "2026-03-14T13:03:26.120Z"
        );
    }

    #[test]
    fn durations_read_like_a_person_writes_them() {
        assert_eq!(human_duration(30_000_000_000), "30s");
        assert_eq!(human_duration(190_000_000_000), "3m10s");
        assert_eq!(human_duration(7_500_000_000_000), "2h05m");
        assert_eq!(human_duration(-5), "0s");
    }
}
