//! The calendar document and its rules, as pure functions.
//!
//! The file holds every user's events; each event has an `owner`. Every
//! operation takes the calling user and only ever sees that user's events: a
//! query filters by owner, and a delete of someone else's event looks exactly
//! like a delete of an event that does not exist.

use serde::{Deserialize, Serialize};

use crate::date::DateTime;

/// Most events the whole file may hold.
pub const MAX_EVENTS: usize = 10_000;
/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Longest user name, in bytes.
pub const MAX_USER_BYTES: usize = 64;

/// One event, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// `evt-N`, unique in the file and never reused.
    pub id: String,
    /// The user the event belongs to.
    pub owner: String,
    pub title: String,
    /// Local time, `YYYY-MM-DDTHH:MM`.
    pub start: String,
    /// Local time, `YYYY-MM-DDTHH:MM`, not before `start`.
    pub end: String,
    #[serde(default)]
    pub description: String,
}

/// The whole events file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Calendar {
    /// The number in the next event's id.
    #[serde(default = "first_id")]
    pub next_id: u64,
    #[serde(default)]
    pub events: Vec<Event>,
}

fn first_id() -> u64 {
    1
}

/// A new event, before it has an id and an owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewEvent {
    pub title: String,
    pub start: DateTime,
    pub end: DateTime,
    pub description: String,
}

/// Checks a user name: 1 to 64 of `[A-Za-z0-9_.@-]`.
pub fn check_user(user: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '@' | '-');
    if user.is_empty() || user.len() > MAX_USER_BYTES || !user.chars().all(allowed) {
        return Err(format!("`user` must be 1 to {MAX_USER_BYTES} of the characters A-Z a-z 0-9 _ . @ -"));
    }
    Ok(())
}

/// Checks the free text of a new event: a title on one line, a description
/// whose only control characters are newlines and tabs, both bounded.
pub fn check_text(title: &str, description: &str) -> Result<(), String> {
    if title.trim().is_empty() || title.chars().count() > MAX_TITLE_CHARS || title.chars().any(char::is_control) {
        return Err(format!("`title` must be 1 to {MAX_TITLE_CHARS} characters on one line"));
    }
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if description.chars().count() > MAX_DESCRIPTION_CHARS || description.chars().any(bad) {
        return Err(format!("`description` must be at most {MAX_DESCRIPTION_CHARS} characters of text"));
    }
    Ok(())
}

impl Calendar {
    /// The events of `user` that overlap `from..=to` (either bound optional),
    /// in start order.
    pub fn query(&self, user: &str, from: Option<&DateTime>, to: Option<&DateTime>) -> Vec<&Event> {
        let mut found: Vec<&Event> = self
            .events
            .iter()
            .filter(|e| e.owner == user)
            .filter(|e| from.is_none_or(|from| e.end.as_str() >= from.as_str()))
            .filter(|e| to.is_none_or(|to| e.start.as_str() <= to.as_str()))
            .collect();
        found.sort_by(|a, b| (&a.start, &a.end, &a.id).cmp(&(&b.start, &b.end, &b.id)));
        found
    }

    /// Adds `event` for `user` and returns it with its new id. Fails when the
    /// calendar is full.
    pub fn create(&mut self, user: &str, event: NewEvent) -> Result<Event, String> {
        if self.events.len() >= MAX_EVENTS {
            return Err(format!("the calendar is full ({MAX_EVENTS} events)"));
        }
        let id = self.next_id.max(1);
        self.next_id = id.saturating_add(1);
        let event = Event {
            id: format!("evt-{id}"),
            owner: user.to_owned(),
            title: event.title,
            start: event.start.as_str().to_owned(),
            end: event.end.as_str().to_owned(),
            description: event.description,
        };
        self.events.push(event.clone());
        Ok(event)
    }

    /// Removes `user`'s event `id` and returns it; `None` when `user` has no
    /// such event (whether it does not exist or belongs to someone else).
    pub fn delete(&mut self, user: &str, id: &str) -> Option<Event> {
        let index = self.events.iter().position(|e| e.id == id && e.owner == user)?;
        Some(self.events.remove(index))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::{Calendar, NewEvent, check_text, check_user};
    use crate::date::DateTime;

    fn event(title: &str, start: &str, end: &str) -> NewEvent {
        NewEvent {
            title: title.into(),
            start: DateTime::parse(start).unwrap(),
            end: DateTime::parse(end).unwrap(),
            description: String::new(),
        }
    }

    fn titles(events: &[&super::Event]) -> Vec<String> {
        events.iter().map(|e| e.title.clone()).collect()
    }

    #[test]
    fn a_query_returns_only_the_users_own_events_in_start_order() {
        let mut cal = Calendar::default();
        cal.create("alice", event("Review", "2026-03-03T14:00", "2026-03-03T15:00")).unwrap();
        cal.create("bob", event("Bob's secret", "2026-03-02T08:00", "2026-03-02T09:00")).unwrap();
        cal.create("alice", event("Standup", "2026-03-02T09:00", "2026-03-02T09:15")).unwrap();
        assert_eq!(titles(&cal.query("alice", None, None)), ["Standup", "Review"]);
        assert_eq!(titles(&cal.query("bob", None, None)), ["Bob's secret"]);
        assert!(cal.query("alic", None, None).is_empty());
        assert!(cal.query("", None, None).is_empty());
    }

    #[test]
    fn a_query_range_keeps_events_that_overlap_it() {
        let mut cal = Calendar::default();
        cal.create("a", event("Overnight", "2026-03-01T22:00", "2026-03-02T06:00")).unwrap();
        cal.create("a", event("Later", "2026-03-05T10:00", "2026-03-05T11:00")).unwrap();
        let from = DateTime::parse("2026-03-02T00:00").unwrap();
        let to = DateTime::parse("2026-03-02T23:59").unwrap();
        assert_eq!(titles(&cal.query("a", Some(&from), Some(&to))), ["Overnight"]);
        assert_eq!(titles(&cal.query("a", Some(&from), None)), ["Overnight", "Later"]);
        assert_eq!(titles(&cal.query("a", None, Some(&from))), ["Overnight"]);
    }

    #[test]
    fn ids_are_never_reused_after_a_delete() {
        let mut cal = Calendar::default();
        let first = cal.create("a", event("One", "2026-03-02T09:00", "2026-03-02T10:00")).unwrap();
        assert_eq!(first.id, "evt-1");
        assert_eq!(cal.delete("a", "evt-1"), Some(first));
        let second = cal.create("a", event("Two", "2026-03-02T09:00", "2026-03-02T10:00")).unwrap();
        assert_eq!(second.id, "evt-2");
    }

    #[test]
    fn a_user_cannot_delete_another_users_event() {
        let mut cal = Calendar::default();
        let bobs = cal.create("bob", event("Bob's", "2026-03-02T09:00", "2026-03-02T10:00")).unwrap();
        assert_eq!(cal.delete("alice", &bobs.id), None);
        assert_eq!(cal.delete("alice", "evt-99"), None);
        assert_eq!(cal.events.len(), 1);
    }

    #[test]
    fn a_full_calendar_refuses_new_events() {
        let mut cal = Calendar::default();
        for _ in 0..super::MAX_EVENTS {
            cal.create("a", event("x", "2026-03-02T09:00", "2026-03-02T10:00")).unwrap();
        }
        let err = cal.create("a", event("x", "2026-03-02T09:00", "2026-03-02T10:00")).unwrap_err();
        assert!(err.contains("full"), "{err}");
    }

    #[test]
    fn users_and_texts_are_checked() {
        assert!(check_user("alice.smith@example-1_x").is_ok());
        for bad in ["", "a b", "alice\n", "../bob", &"a".repeat(65)] {
            assert!(check_user(bad).is_err(), "{bad:?}");
        }
        assert!(check_text("Standup", "line one\n\tline two").is_ok());
        for (title, description) in [("", ""), ("  ", ""), ("a\nb", ""), ("ok", "\u{1b}[2J"), (&*"t".repeat(201), "")] {
            assert!(check_text(title, description).is_err(), "{title:?} {description:?}");
        }
    }
}
