//! The date and time formats the calendar accepts, checked strictly.
//!
//! - A date is `YYYY-MM-DD` (a real calendar day, leap years included).
//! - A time is local and minute-precise: `YYYY-MM-DDTHH:MM`, no seconds and no
//!   zone. Both are fixed-width, so comparing the strings compares the times.

/// A checked `YYYY-MM-DD` date.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Date(String);

/// A checked `YYYY-MM-DDTHH:MM` local time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DateTime(String);

impl Date {
    /// Parses `YYYY-MM-DD`; the error says what is wrong with `text`.
    pub fn parse(text: &str) -> Result<Self, String> {
        check_date(text).map(|()| Date(text.to_owned()))
    }

    /// The first minute of the day.
    pub fn first_minute(&self) -> DateTime {
        DateTime(format!("{}T00:00", self.0))
    }

    /// The last minute of the day.
    pub fn last_minute(&self) -> DateTime {
        DateTime(format!("{}T23:59", self.0))
    }

    /// The date as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl DateTime {
    /// Parses `YYYY-MM-DDTHH:MM`; the error says what is wrong with `text`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let wrong = || format!("{text:?} is not a local time of the form YYYY-MM-DDTHH:MM");
        let (date, time) = text.split_once('T').ok_or_else(wrong)?;
        check_date(date)?;
        let (hour, minute) = time.split_once(':').ok_or_else(wrong)?;
        let hour = number(hour, 2).ok_or_else(wrong)?;
        let minute = number(minute, 2).ok_or_else(wrong)?;
        if hour > 23 || minute > 59 {
            return Err(format!("{text:?} has no such time of day"));
        }
        Ok(DateTime(text.to_owned()))
    }

    /// The time as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

fn check_date(text: &str) -> Result<(), String> {
    let wrong = || format!("{text:?} is not a date of the form YYYY-MM-DD");
    let mut parts = text.split('-');
    let (Some(year), Some(month), Some(day), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
        return Err(wrong());
    };
    let year = number(year, 4).ok_or_else(wrong)?;
    let month = number(month, 2).ok_or_else(wrong)?;
    let day = number(day, 2).ok_or_else(wrong)?;
    if !(1..=12).contains(&month) || day == 0 || day > days_in_month(year, month) {
        return Err(format!("{text:?} is not a day of the calendar"));
    }
    Ok(())
}

/// `text` as a number if it is exactly `width` ASCII digits.
fn number(text: &str, width: usize) -> Option<u32> {
    if text.len() != width || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::{Date, DateTime};

    #[test]
    fn real_dates_parse_and_compare_in_time_order() {
        let a = Date::parse("2026-02-28").unwrap();
        let b = Date::parse("2026-03-01").unwrap();
        assert!(a < b);
        assert!(Date::parse("2024-02-29").is_ok(), "a leap day");
        assert_eq!(a.first_minute().as_str(), "2026-02-28T00:00");
        assert_eq!(a.last_minute().as_str(), "2026-02-28T23:59");
    }

    #[test]
    fn impossible_or_malformed_dates_are_refused() {
        for bad in ["2026-02-29", "1900-02-29", "2026-13-01", "2026-00-10", "2026-04-31", "2026-1-01", "26-01-01"] {
            assert!(Date::parse(bad).is_err(), "{bad}");
        }
        for bad in ["", "2026-01-01-01", "2026/01/01", "2026-01-0a", "+026-01-01", "2026-01-01T00:00"] {
            assert!(Date::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn local_times_are_minute_precise_without_zone() {
        let t = DateTime::parse("2026-03-02T09:30").unwrap();
        assert_eq!(t.as_str(), "2026-03-02T09:30");
        assert!(DateTime::parse("2026-03-02T23:59").unwrap() > t);
        for bad in ["2026-03-02", "2026-03-02T24:00", "2026-03-02T09:60", "2026-03-02T09:30:00", "2026-03-02T9:30"] {
            assert!(DateTime::parse(bad).is_err(), "{bad}");
        }
        for bad in ["2026-03-02T09:30Z", "2026-03-02 09:30", "2026-02-30T09:30"] {
            assert!(DateTime::parse(bad).is_err(), "{bad}");
        }
    }
}
