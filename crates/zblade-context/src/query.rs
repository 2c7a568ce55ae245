//! Query analysis: what the user typed, split into the signals retrieval uses. Time phrases
//! ("yesterday", "last week", "in March", "3 days ago") become a time range; explicit
//! references (`@file:src/auth.ts`, `@file:src/auth.ts:10-25`, `@conv:ID`, `@moment:ID`)
//! become direct lookups; what is left is the text for hybrid search.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use serde::Serialize;

/// A file named in the query, with an optional line range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct FileRef {
    /// Path relative to the project root, as typed.
    pub path: String,
    /// First and last line (1-based, inclusive), when given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<(u32, u32)>,
}

/// A time range found in the query: `[since, until)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct TimeRange {
    /// The words that gave it, as typed.
    pub phrase: String,
    /// Start, inclusive.
    pub since: DateTime<Utc>,
    /// End, exclusive.
    pub until: DateTime<Utc>,
}

/// What a query asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Default)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct Analysis {
    /// The query without time phrases and explicit references: the text to search for.
    pub text: String,
    /// The time range the query names, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<TimeRange>,
    /// `@file:` references.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<FileRef>,
    /// `@conv:` references (conversation ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub conversations: Vec<String>,
    /// `@moment:` references (moment ids).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub moments: Vec<String>,
}

/// Month names, lower case (also what the relevance gate does not count as names).
pub(crate) const MONTHS: [&str; 12] = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
];

/// Analyses `query` as asked at `now` (UTC; days and weeks start at midnight UTC, weeks on
/// Monday).
pub fn analyse(query: &str, now: DateTime<Utc>) -> Analysis {
    let mut analysis = Analysis::default();
    let mut words: Vec<&str> = Vec::new();
    for word in query.split_whitespace() {
        if let Some(rest) = word.strip_prefix("@file:") {
            if let Some(file) = parse_file_ref(rest) {
                analysis.files.push(file);
                continue;
            }
        } else if let Some(id) = word.strip_prefix("@conv:").filter(|id| !id.is_empty()) {
            analysis.conversations.push(trim_punctuation(id).to_string());
            continue;
        } else if let Some(id) = word.strip_prefix("@moment:").filter(|id| !id.is_empty()) {
            analysis.moments.push(trim_punctuation(id).to_string());
            continue;
        }
        words.push(word);
    }
    let (time, kept) = find_time(&words, now);
    analysis.time = time;
    analysis.text = kept.join(" ");
    analysis
}

fn trim_punctuation(word: &str) -> &str {
    word.trim_end_matches(['.', ',', ';', ':', '?', '!', ')', '"', '\''])
}

/// `path` or `path:START-END` (or `path:LINE`).
fn parse_file_ref(text: &str) -> Option<FileRef> {
    let text = trim_punctuation(text);
    if text.is_empty() {
        return None;
    }
    if let Some((path, range)) = text.rsplit_once(':') {
        let lines = match range.split_once('-') {
            Some((a, b)) => a.parse().ok().zip(b.parse().ok()),
            None => range.parse().ok().map(|n| (n, n)),
        };
        if let Some((start, end)) = lines.filter(|&(a, b): &(u32, u32)| a >= 1 && a <= b) {
            return Some(FileRef {
                path: path.to_string(),
                lines: Some((start, end)),
            });
        }
    }
    Some(FileRef {
        path: text.to_string(),
        lines: None,
    })
}

fn midnight(date: NaiveDate) -> DateTime<Utc> {
    Utc.from_utc_datetime(&date.and_hms_opt(0, 0, 0).expect("midnight exists"))
}

fn month_start(year: i32, month: u32) -> DateTime<Utc> {
    midnight(NaiveDate::from_ymd_opt(year, month, 1).expect("first of a month exists"))
}

fn next_month(year: i32, month: u32) -> (i32, u32) {
    if month == 12 { (year + 1, 1) } else { (year, month + 1) }
}

fn previous_month(year: i32, month: u32) -> (i32, u32) {
    if month == 1 { (year - 1, 12) } else { (year, month - 1) }
}

fn unit_days(word: &str) -> Option<i64> {
    match word.trim_end_matches('s') {
        "day" => Some(1),
        "week" => Some(7),
        "month" => Some(30),
        "year" => Some(365),
        _ => None,
    }
}

fn number(word: &str) -> Option<i64> {
    const WORDS: [&str; 10] = [
        "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    word.parse()
        .ok()
        .or_else(|| WORDS.iter().position(|w| *w == word).map(|i| i as i64 + 1))
        .filter(|n| (1..=3650).contains(n))
}

/// The first time phrase among `words`, and the words without it.
fn find_time<'a>(words: &[&'a str], now: DateTime<Utc>) -> (Option<TimeRange>, Vec<&'a str>) {
    let lower: Vec<String> = words.iter().map(|w| trim_punctuation(w).to_lowercase()).collect();
    let today = midnight(now.date_naive());
    let week_start = today - Duration::days(now.weekday().num_days_from_monday() as i64);
    let at = |i: usize| lower.get(i).map(String::as_str).unwrap_or("");
    for i in 0..lower.len() {
        // (length of the phrase in words, since, until)
        let found: Option<(usize, DateTime<Utc>, DateTime<Utc>)> = match (at(i), at(i + 1), at(i + 2)) {
            ("today", ..) => Some((1, today, now.max(today + Duration::days(1)))),
            ("yesterday", ..) => Some((1, today - Duration::days(1), today)),
            ("this", "week", _) => Some((2, week_start, now + Duration::seconds(1))),
            ("last", "week", _) => Some((2, week_start - Duration::days(7), week_start)),
            // "the past week" is the last seven days, not the calendar week before this one.
            ("past", unit, _) if unit_days(unit).is_some() && !unit.ends_with('s') => Some((
                2,
                now - Duration::days(unit_days(unit).unwrap_or(1)),
                now + Duration::seconds(1),
            )),
            ("this", "month", _) => Some((2, month_start(now.year(), now.month()), now + Duration::seconds(1))),
            ("last", "month", _) => {
                let (y, m) = previous_month(now.year(), now.month());
                Some((2, month_start(y, m), month_start(now.year(), now.month())))
            }
            ("this", "year", _) => Some((2, month_start(now.year(), 1), now + Duration::seconds(1))),
            ("last", "year", _) => Some((2, month_start(now.year() - 1, 1), month_start(now.year(), 1))),
            ("last" | "past", n, unit) if number(n).is_some() && unit_days(unit).is_some() => {
                let days = number(n).unwrap_or(1) * unit_days(unit).unwrap_or(1);
                Some((3, now - Duration::days(days), now + Duration::seconds(1)))
            }
            (n, unit, "ago") if number(n).is_some() && unit_days(unit).is_some() => {
                // "3 days ago" is that day; "2 weeks ago" that week, give or take.
                let span = unit_days(unit).unwrap_or(1);
                let start = today - Duration::days(number(n).unwrap_or(1) * span);
                Some((3, start, start + Duration::days(span)))
            }
            ("in" | "during" | "since", month, year) if MONTHS.contains(&month) => {
                let m = MONTHS.iter().position(|x| *x == month).unwrap_or(0) as u32 + 1;
                let (year, words) = match year.parse::<i32>() {
                    Ok(y) if (1970..=9999).contains(&y) => (y, 3),
                    // The latest such month that has begun.
                    _ if m > now.month() => (now.year() - 1, 2),
                    _ => (now.year(), 2),
                };
                let since = month_start(year, m);
                let until = if at(i) == "since" {
                    now + Duration::seconds(1)
                } else {
                    let (ny, nm) = next_month(year, m);
                    month_start(ny, nm)
                };
                Some((words, since, until))
            }
            _ => None,
        };
        if let Some((len, since, until)) = found {
            let phrase = words[i..i + len].join(" ");
            let kept = words[..i].iter().chain(&words[i + len..]).copied().collect();
            return (Some(TimeRange { phrase, since, until }), kept);
        }
    }
    (None, words.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> DateTime<Utc> {
        // A Sunday.
        DateTime::parse_from_rfc3339("2026-11-22T15:30:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    fn day(s: &str) -> DateTime<Utc> {
        midnight(NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap())
    }

    #[test]
    fn time_phrases_become_ranges_and_leave_the_text() {
        let cases = [
            (
                "what did we decide yesterday about auth",
                "2026-11-21",
                "2026-11-22",
                "what did we decide about auth",
            ),
            ("auth last week", "2026-11-09", "2026-11-16", "auth"),
            ("token bug in March", "2026-03-01", "2026-04-01", "token bug"),
            ("token bug in December", "2025-12-01", "2026-01-01", "token bug"),
            (
                "in march 2024 we chose redis",
                "2024-03-01",
                "2024-04-01",
                "we chose redis",
            ),
            ("cache 3 days ago", "2026-11-19", "2026-11-20", "cache"),
            ("Last month: deploys", "2026-10-01", "2026-11-01", "deploys"),
        ];
        for (query, since, until, text) in cases {
            let a = analyse(query, now());
            let time = a.time.unwrap_or_else(|| panic!("no time in {query:?}"));
            assert_eq!((time.since, time.until), (day(since), day(until)), "{query}");
            assert_eq!(a.text, text, "{query}");
        }
        let a = analyse("the past 2 weeks of retries", now());
        assert_eq!(a.time.unwrap().since, now() - Duration::days(14));
        assert_eq!(a.text, "the of retries");
        let a = analyse("errors in the past week", now());
        assert_eq!(a.time.unwrap().since, now() - Duration::days(7));
    }

    #[test]
    fn words_that_only_look_like_time_stay_text() {
        for query in [
            "may we cache this",
            "in the last step",
            "today's flaky test",
            "past days",
        ] {
            let a = analyse(query, now());
            assert_eq!(a.time, None, "{query}");
            assert_eq!(a.text, query);
        }
    }

    #[test]
    fn explicit_references_become_lookups() {
        let a = analyse(
            "why @file:src/auth.ts:10-25 and @file:README.md, see @conv:conv_01 @moment:moment_9?",
            now(),
        );
        assert_eq!(
            a.files,
            vec![
                FileRef {
                    path: "src/auth.ts".into(),
                    lines: Some((10, 25))
                },
                FileRef {
                    path: "README.md".into(),
                    lines: None
                },
            ]
        );
        assert_eq!(a.conversations, vec!["conv_01"]);
        assert_eq!(a.moments, vec!["moment_9"]);
        assert_eq!(a.text, "why and see");
        // A bad range is kept as part of the path rather than guessed at.
        assert_eq!(analyse("@file:a.rs:9-2", now()).files[0].lines, None);
        // Empty references are just text.
        assert_eq!(analyse("@conv: x", now()).text, "@conv: x");
    }
}
