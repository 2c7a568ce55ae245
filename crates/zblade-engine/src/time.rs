//! Time bounds typed by people (`2026-03-01`, an RFC 3339 time, `7d` ago) turned into index
//! timestamps, so every face of zblade reads them the same way.

use chrono::{DateTime, NaiveDate, Utc};
use zblade_core::{Error, Result};

/// Parses a time bound: `YYYY-MM-DD` (midnight UTC), an RFC 3339 time, or an age such as
/// `30m`, `12h`, `7d`, `2w` (that long before `now`). `what` names the option in errors.
/// Returns it as an index timestamp.
pub fn parse_time_bound(text: &str, what: &str, now: DateTime<Utc>) -> Result<String> {
    parse_time(text, what, now).map(zblade_index::timestamp)
}

/// [`parse_time_bound`] as a time.
pub fn parse_time(text: &str, what: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let text = text.trim();
    if let Ok(time) = DateTime::parse_from_rfc3339(text) {
        return Ok(time.with_timezone(&Utc));
    }
    if let Ok(date) = NaiveDate::parse_from_str(text, "%Y-%m-%d") {
        return Ok(date.and_hms_opt(0, 0, 0).expect("midnight exists").and_utc());
    }
    let unit = text.chars().last().unwrap_or(' ');
    let seconds = match unit {
        'm' => 60,
        'h' => 3600,
        'd' => 86_400,
        'w' => 7 * 86_400,
        _ => 0,
    };
    match text[..text.len() - unit.len_utf8().min(text.len())].parse::<i64>() {
        Ok(n) if seconds > 0 && n >= 0 => Ok(now - chrono::Duration::seconds(n * seconds)),
        _ => Err(Error::Usage(format!(
            "{what}: {text:?} is not a time; use YYYY-MM-DD, an RFC 3339 time, or an age like 30m, 12h, 7d, 2w"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_times_and_ages() {
        let now = DateTime::parse_from_rfc3339("2026-11-22T12:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        for (given, bound) in [
            ("2026-03-01", "2026-03-01T00:00:00.000Z"),
            ("2026-03-01T10:00:00+02:00", "2026-03-01T08:00:00.000Z"),
            ("7d", "2026-11-15T12:00:00.000Z"),
            ("12h", "2026-11-22T00:00:00.000Z"),
        ] {
            assert_eq!(parse_time_bound(given, "--since", now).unwrap(), bound, "{given}");
        }
        let err = parse_time_bound("last tuesday", "--since", now)
            .unwrap_err()
            .to_string();
        assert!(err.contains("--since") && err.contains("YYYY-MM-DD"), "{err}");
        assert!(parse_time_bound("", "--until", now).is_err());
        assert!(parse_time_bound("d", "--until", now).is_err());
    }
}
