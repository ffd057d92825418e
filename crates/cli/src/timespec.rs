//! Times on the command line: RFC 3339, or relative to the recording (`+5m` from its start,
//! `-5m` before its end).

use anyhow::{Context, Result, bail};
use rf_analyzer::{parse_rfc3339, rfc3339};
use rf_format::Timestamp;

/// A time as the user wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeSpec {
    /// An absolute time.
    At(Timestamp),
    /// Nanoseconds after the first record.
    FromStart(i64),
    /// Nanoseconds before the last record.
    BeforeEnd(i64),
    /// A time of day (nanoseconds after midnight, UTC) on the recording's date, as the
    /// report's tables print times: refused when the recording spans midnight.
    TimeOfDay(i64),
}

/// Date and time without a zone, read as UTC: `2026-03-14T13:03:26`, `2026-03-14 13:03:26.5`,
/// `2026-03-14 13:03`.
const NAIVE: &[&str] = &[
    "%Y-%m-%dT%H:%M:%S%.f",
    "%Y-%m-%d %H:%M:%S%.f",
    "%Y-%m-%dT%H:%M",
    "%Y-%m-%d %H:%M",
];

/// A time of day: `13:03:26`, `13:03:26.120`, `13:03`.
const TIME_OF_DAY: &[&str] = &["%H:%M:%S%.f", "%H:%M"];

impl TimeSpec {
    /// Parses `2026-03-14T13:03:26Z`, `+5m`, `-90s`, `+1h30m`, `-500ms`.
    pub fn parse(s: &str) -> Result<Self> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix('+') {
            return Ok(TimeSpec::FromStart(parse_duration(rest)?));
        }
        if let Some(rest) = s.strip_prefix('-') {
            return Ok(TimeSpec::BeforeEnd(parse_duration(rest)?));
        }
        if let Some(t) = parse_rfc3339(s) {
            return Ok(TimeSpec::At(t));
        }
        for f in NAIVE {
            if let Some(t) = chrono::NaiveDateTime::parse_from_str(s, f)
                .ok()
                .and_then(|d| d.and_utc().timestamp_nanos_opt())
            {
                return Ok(TimeSpec::At(Timestamp(t)));
            }
        }
        for f in TIME_OF_DAY {
            if let Ok(t) = chrono::NaiveTime::parse_from_str(s, f) {
                let since_midnight = t.signed_duration_since(chrono::NaiveTime::MIN);
                if let Some(n) = since_midnight.num_nanoseconds() {
                    return Ok(TimeSpec::TimeOfDay(n));
                }
            }
        }
        bail!(
            "invalid time {s:?}: expected RFC 3339 (2026-03-14T13:03:26Z), a date and time read as UTC (2026-03-14 13:03:26), a time of day on the recording's date (13:03:26), +DURATION from the start or -DURATION before the end (e.g. +5m, -90s)"
        )
    }

    /// True when resolving needs the time of the last record.
    pub fn needs_end(self) -> bool {
        matches!(self, TimeSpec::BeforeEnd(_) | TimeSpec::TimeOfDay(_))
    }

    /// The absolute time, given the recording's first and last record times; a time of day
    /// when the recording spans midnight (UTC) is ambiguous, an error that says so.
    pub fn resolve(self, start: Timestamp, end: Timestamp) -> Result<Timestamp> {
        Ok(match self {
            TimeSpec::At(t) => t,
            TimeSpec::FromStart(d) => start.plus_nanos(d),
            TimeSpec::BeforeEnd(d) => end.plus_nanos(-d),
            TimeSpec::TimeOfDay(n) => {
                const DAY: i64 = 86_400_000_000_000;
                let day = start.as_unix_nanos().div_euclid(DAY);
                if end.as_unix_nanos().div_euclid(DAY) != day {
                    bail!(
                        "a time of day is ambiguous here: the recording spans midnight UTC ({} .. {}); give the date too (2026-03-14 13:03:26, read as UTC)",
                        rfc3339(start),
                        rfc3339(end)
                    );
                }
                Timestamp(day * DAY + n)
            }
        })
    }
}

/// Parses `90s`, `5m`, `1h30m`, `500ms`, `2h`, `1m30s` into nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64> {
    if s.is_empty() {
        bail!("invalid duration \"\": expected a number and a unit, like 90s, 5m or 1h30m");
    }
    let mut total: i64 = 0;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            bail!("invalid duration {s:?}: expected a number at {rest:?}");
        }
        let n: i64 = rest[..digits]
            .parse()
            .with_context(|| format!("invalid duration {s:?}: number too large"))?;
        rest = &rest[digits..];
        let unit_len = rest.chars().take_while(char::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let scale: i64 = match unit {
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            "d" => 86_400_000_000_000,
            "" => bail!("invalid duration {s:?}: {n} needs a unit (ms, s, m, h, d)"),
            other => bail!("invalid duration {s:?}: unknown unit {other:?} (use ms, s, m, h, d)"),
        };
        total = n
            .checked_mul(scale)
            .and_then(|v| total.checked_add(v))
            .with_context(|| format!("invalid duration {s:?}: too large"))?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_times_resolve_against_the_recording() {
        let start = Timestamp::from_unix_seconds(1000);
        let end = Timestamp::from_unix_seconds(2000);
        assert_eq!(
            TimeSpec::parse("+5m").unwrap().resolve(start, end).unwrap(),
            Timestamp::from_unix_seconds(1300)
        );
        assert_eq!(
            TimeSpec::parse("-90s")
                .unwrap()
                .resolve(start, end)
                .unwrap(),
            Timestamp::from_unix_seconds(1910)
        );
        assert!(TimeSpec::parse("-1m").unwrap().needs_end());
        assert!(!TimeSpec::parse("+1m").unwrap().needs_end());
    }

    #[test]
    fn absolute_times_are_rfc3339() {
        let t = TimeSpec::parse("2026-03-14T13:03:26Z").unwrap();
        assert_eq!(
            t,
            TimeSpec::At(parse_rfc3339("2026-03-14T13:03:26+00:00").unwrap())
        );
    }

    #[test]
    fn issue_46_the_tables_own_forms_are_accepted_and_a_time_of_day_across_midnight_is_not() {
        let at = |s| parse_rfc3339(s).unwrap();
        let (start, end) = (at("2026-03-14T03:20:00Z"), at("2026-03-14T03:40:00Z"));
        for (given, want) in [
            ("03:27:50", "2026-03-14T03:27:50Z"),
            ("03:27", "2026-03-14T03:27:00Z"),
            ("03:27:50.250", "2026-03-14T03:27:50.250Z"),
            ("2026-03-14 03:27:50", "2026-03-14T03:27:50Z"),
            ("2026-03-14T03:27:50", "2026-03-14T03:27:50Z"),
            ("2026-03-14 03:27", "2026-03-14T03:27:00Z"),
        ] {
            let t = TimeSpec::parse(given).unwrap();
            assert_eq!(t.resolve(start, end).unwrap(), at(want), "{given}");
        }
        assert!(TimeSpec::parse("03:27:50").unwrap().needs_end());
        let midnight = (at("2026-03-14T23:50:00Z"), at("2026-03-15T00:10:00Z"));
        let err = TimeSpec::parse("23:55:00")
            .unwrap()
            .resolve(midnight.0, midnight.1)
            .unwrap_err()
            .to_string();
        assert!(err.contains("spans midnight"), "{err}");
        let err = TimeSpec::parse("3:2x").unwrap_err().to_string();
        assert!(err.contains("time of day on the recording's date"), "{err}");
    }

    #[test]
    fn durations_combine_units() {
        assert_eq!(parse_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_duration("500ms").unwrap(), 500_000_000);
        assert_eq!(parse_duration("1m30s").unwrap(), 90_000_000_000);
    }

    #[test]
    fn bad_times_say_what_is_expected() {
        let e = TimeSpec::parse("yesterday").unwrap_err().to_string();
        assert!(e.contains("RFC 3339"), "{e}");
        assert!(
            parse_duration("5")
                .unwrap_err()
                .to_string()
                .contains("unit")
        );
        assert!(
            parse_duration("5x")
                .unwrap_err()
                .to_string()
                .contains("unknown unit")
        );
        assert!(parse_duration("99999999999999999999s").is_err());
    }
}
