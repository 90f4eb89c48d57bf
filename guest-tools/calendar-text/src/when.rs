//! Event times: local times written `YYYY-MM-DDTHH:MM` (or ISO 8601 with seconds and a
//! zone, as CalDAV servers write them), shown with their weekday, and a start and an end
//! shown as one span.

use crate::clean;

/// Longest raw time shown when a time does not parse.
const MAX_RAW_CHARS: usize = 40;

/// A local date and time, checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalTime {
    /// Four digits.
    pub year: u32,
    /// 1 to 12.
    pub month: u32,
    /// 1 to the month's last day.
    pub day: u32,
    /// 0 to 23.
    pub hour: u32,
    /// 0 to 59.
    pub minute: u32,
}

impl LocalTime {
    /// Parses `YYYY-MM-DDTHH:MM` with a real calendar date, and the ISO 8601 times
    /// CalDAV servers write too: seconds and their fraction, and a zone (`Z`, `+01:00`),
    /// read as written (the zone is not applied; [`zone`] names it).
    pub fn parse(text: &str) -> Option<LocalTime> {
        let b = text.as_bytes();
        let shape = b.len() >= 16 && b[4] == b'-' && b[7] == b'-' && b[10] == b'T' && b[13] == b':';
        if !shape || zone_of(text.get(16..)?).is_none() {
            return None;
        }
        let text = text.get(..16)?;
        let num = |range: std::ops::Range<usize>| -> Option<u32> {
            let digits = text.get(range)?;
            digits.bytes().all(|c| c.is_ascii_digit()).then(|| digits.parse().ok())?
        };
        let time = LocalTime {
            year: num(0..4)?,
            month: num(5..7)?,
            day: num(8..10)?,
            hour: num(11..13)?,
            minute: num(14..16)?,
        };
        let valid = (1..=12).contains(&time.month)
            && (1..=days_in_month(time.year, time.month)).contains(&time.day)
            && time.hour < 24
            && time.minute < 60;
        valid.then_some(time)
    }

    /// `Tue`, `Wed`, ... (Sakamoto's method, proleptic Gregorian calendar).
    pub fn weekday(&self) -> &'static str {
        const OFFSETS: [u32; 12] = [0, 3, 2, 5, 0, 3, 5, 1, 4, 6, 2, 4];
        const NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
        let year = if self.month < 3 { self.year.saturating_sub(1) } else { self.year };
        let index = (year + year / 4 - year / 100 + year / 400 + OFFSETS[(self.month - 1) as usize] + self.day) % 7;
        NAMES[index as usize]
    }

    fn same_day(&self, other: &LocalTime) -> bool {
        (self.year, self.month, self.day) == (other.year, other.month, other.day)
    }

    fn date(&self) -> String {
        format!("{} {:04}-{:02}-{:02}", self.weekday(), self.year, self.month, self.day)
    }

    fn clock(&self) -> String {
        format!("{:02}:{:02}", self.hour, self.minute)
    }
}

/// The zone a time's tail names: `Some("")` for none (a local time), `Some("UTC")` for
/// `Z`, `Some("+01:00")` for an offset; `None` for a tail that is not seconds, their
/// fraction and a zone.
fn zone_of(tail: &str) -> Option<&str> {
    let mut rest = tail;
    if let Some(seconds) = rest.strip_prefix(':') {
        let digits = seconds.get(..2).filter(|d| d.bytes().all(|c| c.is_ascii_digit()))?;
        rest = &seconds[digits.len()..];
        if let Some(fraction) = rest.strip_prefix('.') {
            let len = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if len == 0 || len > 9 {
                return None;
            }
            rest = &fraction[len..];
        }
    }
    match rest {
        "" => Some(""),
        "Z" => Some("UTC"),
        offset => {
            let b = offset.as_bytes();
            let ok = b.len() == 6
                && matches!(b[0], b'+' | b'-')
                && b[3] == b':'
                && [1, 2, 4, 5].iter().all(|&i| b[i].is_ascii_digit());
            ok.then_some(offset)
        }
    }
}

/// The zone of a time `LocalTime::parse` accepts, as shown after its span (`UTC`,
/// `+01:00`), or `""` for a local time or one that does not parse.
#[must_use]
pub fn zone(text: &str) -> &str {
    match text.get(16..) {
        Some(tail) if LocalTime::parse(text).is_some() => zone_of(tail).unwrap_or(""),
        _ => "",
    }
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The span from `start` to `end`: `Tue 2026-12-01 10:00–11:00` within one day,
/// `Thu 2026-12-03 22:00 – Fri 2026-12-04 06:00` across days. Times that do not
/// parse are shown as they were sent, cleaned and bounded.
pub fn span(start: &str, end: &str) -> String {
    let span = local_span(start, end);
    match zone(start) {
        "" => span,
        zone => format!("{span} {zone}"),
    }
}

fn local_span(start: &str, end: &str) -> String {
    match (LocalTime::parse(start), LocalTime::parse(end)) {
        (Some(s), Some(e)) if s.same_day(&e) => format!("{} {}–{}", s.date(), s.clock(), e.clock()),
        (Some(s), Some(e)) => format!("{} {} – {} {}", s.date(), s.clock(), e.date(), e.clock()),
        (Some(s), None) if end.is_empty() => format!("{} {}", s.date(), s.clock()),
        _ => {
            let start = clean::line(start, MAX_RAW_CHARS);
            let end = clean::line(end, MAX_RAW_CHARS);
            let start = if start.is_empty() { "(no start)".to_owned() } else { start };
            if end.is_empty() { start } else { format!("{start} – {end}") }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::{LocalTime, span};

    #[test]
    fn weekdays_are_those_of_the_gregorian_calendar() {
        let day = |t: &str| LocalTime::parse(t).unwrap().weekday();
        assert_eq!(day("2026-11-30T00:00"), "Mon");
        assert_eq!(day("2026-12-01T00:00"), "Tue");
        assert_eq!(day("2026-12-06T23:59"), "Sun");
        assert_eq!(day("2000-02-29T12:00"), "Tue");
        assert_eq!(day("2024-01-01T12:00"), "Mon");
        assert_eq!(day("1970-01-01T00:00"), "Thu");
    }

    #[test]
    fn only_real_times_in_the_exact_format_parse() {
        assert!(LocalTime::parse("2026-02-29T10:00").is_none());
        assert!(LocalTime::parse("2026-12-01T24:00").is_none());
        assert!(LocalTime::parse("2026-12-01 10:00").is_none());
        for tail in [":0", ":00.", ":00.1234567890", "z", "+1:00", "+01:0x", " ", ":00Zjunk"] {
            assert!(LocalTime::parse(&format!("2026-12-01T10:00{tail}")).is_none(), "{tail:?}");
        }
        assert!(LocalTime::parse("+026-12-01T10:00").is_none());
        assert!(LocalTime::parse("2026-1é-01T10:0").is_none());
    }

    #[test]
    fn iso_times_with_seconds_and_a_zone_parse_and_name_the_zone() {
        for (time, zone) in
            [("2026-12-01T10:00:00", ""), ("2026-12-01T10:00:00.000Z", "UTC"), ("2026-12-01T10:00+01:00", "+01:00")]
        {
            assert_eq!(LocalTime::parse(time).map(|t| t.hour), Some(10), "{time}");
            assert_eq!(super::zone(time), zone, "{time}");
        }
        assert_eq!(span("2026-12-01T10:00:00Z", "2026-12-01T11:00:00Z"), "Tue 2026-12-01 10:00–11:00 UTC");
    }

    #[test]
    fn a_span_within_a_day_shows_the_date_once() {
        assert_eq!(span("2026-12-01T10:00", "2026-12-01T11:00"), "Tue 2026-12-01 10:00–11:00");
    }

    #[test]
    fn a_span_across_days_shows_both_dates() {
        assert_eq!(span("2026-12-03T22:00", "2026-12-04T06:00"), "Thu 2026-12-03 22:00 – Fri 2026-12-04 06:00");
    }

    #[test]
    fn times_that_do_not_parse_are_shown_cleaned_and_bounded() {
        assert_eq!(span("tomorrow\u{1b}[2J", "later"), "tomorrow – later");
        assert_eq!(span("2026-12-01T10:00", ""), "Tue 2026-12-01 10:00");
        assert_eq!(span("", ""), "(no start)");
        assert!(span(&"9".repeat(1000), "x").len() < 100);
    }
}
