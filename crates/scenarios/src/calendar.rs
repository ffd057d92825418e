//! Calendar arithmetic for the RFC 3339 timestamps Kubernetes writes, from simulated seconds only.

/// Seconds since the Unix epoch of a UTC date and time (proleptic Gregorian calendar).
pub(crate) const fn unix_seconds(year: i64, month: i64, day: i64, hms: (i64, i64, i64)) -> i64 {
    days_from_civil(year, month, day) * 86_400 + hms.0 * 3_600 + hms.1 * 60 + hms.2
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
const fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a count of days since 1970-01-01.
const fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + if month <= 2 { 1 } else { 0 };
    (year, month, day)
}

/// `2026-03-14T13:02:56Z`: the form of `metav1.Time` in objects (whole seconds, UTC).
pub(crate) fn rfc3339(secs: i64) -> String {
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let rem = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// The seconds of a time in the form [`rfc3339`] writes; `None` for any other text.
pub(crate) fn parse_rfc3339(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
        return None;
    }
    let num = |from: usize, to: usize| s.get(from..to)?.parse::<i64>().ok();
    Some(unix_seconds(
        num(0, 4)?,
        num(5, 7)?,
        num(8, 10)?,
        (num(11, 13)?, num(14, 16)?, num(17, 19)?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_times_parse_back() {
        let t = unix_seconds(2026, 3, 14, (13, 2, 56));
        assert_eq!(parse_rfc3339(&rfc3339(t)), Some(t));
        assert_eq!(parse_rfc3339(""), None);
        assert_eq!(parse_rfc3339("2026-03-14 13:02:56Z"), None);
    }

    #[test]
    fn simulation_start_is_the_documented_instant() {
        let start = unix_seconds(2026, 3, 14, (13, 0, 0));
        assert_eq!(start, 1_773_493_200);
        assert_eq!(rfc3339(start), "2026-03-14T13:00:00Z");
        assert_eq!(rfc3339(start + 176), "2026-03-14T13:02:56Z");
    }

    #[test]
    fn dates_round_trip_across_month_and_leap_year_boundaries() {
        for (y, m, d) in [
            (1970, 1, 1),
            (2024, 2, 29),
            (2025, 12, 31),
            (2026, 3, 1),
            (2000, 3, 1),
        ] {
            assert_eq!(civil_from_days(days_from_civil(y, m, d)), (y, m, d));
        }
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    }
}
