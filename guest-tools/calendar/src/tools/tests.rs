//! The tools against an in-memory calendar file.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use serde_json::{Value, json};

use super::{CallFailure, Outcome, call, definitions};
use crate::storage::{Storage, StorageError};

#[derive(Default)]
struct Memory {
    text: Option<String>,
    read_only: bool,
    no_dir: bool,
}

impl Storage for Memory {
    fn read(&self) -> Result<Option<String>, StorageError> {
        if self.no_dir {
            return Err(StorageError::NoDataDir("no data directory".into()));
        }
        Ok(self.text.clone())
    }

    fn write(&mut self, text: &str) -> Result<(), StorageError> {
        if self.read_only {
            return Err(StorageError::ReadOnly);
        }
        self.text = Some(text.to_owned());
        Ok(())
    }
}

fn run(storage: &mut Memory, name: &str, args: Value) -> Outcome {
    call(name, &args.to_string(), storage).unwrap()
}

fn text(outcome: &Outcome) -> String {
    let content: Value = serde_json::from_str(&outcome.content).unwrap();
    content[0]["text"].as_str().unwrap().to_owned()
}

fn events(outcome: &Outcome) -> Vec<Value> {
    let structured: Value = serde_json::from_str(outcome.structured_content.as_deref().unwrap()).unwrap();
    structured["events"].as_array().unwrap().clone()
}

fn create(storage: &mut Memory, user: &str, title: &str, start: &str, end: &str) -> Outcome {
    run(storage, "calendar_create", json!({"user": user, "title": title, "start": start, "end": end}))
}

#[test]
fn the_three_tools_are_listed_with_strict_object_schemas() {
    let defs = definitions();
    let names: Vec<_> = defs.iter().map(|d| d.name).collect();
    assert_eq!(names, ["calendar_query", "calendar_create", "calendar_delete"]);
    for def in &defs {
        assert_eq!(def.input_schema["type"], "object", "{}", def.name);
        assert_eq!(def.input_schema["additionalProperties"], false, "{}", def.name);
        assert_eq!(def.input_schema["required"][0], "user", "{}", def.name);
        assert!(def.description.len() > 100, "{} needs a real description", def.name);
    }
}

#[test]
fn created_events_are_queried_back_with_text_and_structured_content() {
    let mut storage = Memory::default();
    let created = create(&mut storage, "alice", "Standup", "2026-03-02T09:00", "2026-03-02T09:15");
    assert!(!created.is_error);
    assert_eq!(text(&created), "Created - 2026-03-02T09:00 to 2026-03-02T09:15: Standup [evt-1]");
    let found = run(&mut storage, "calendar_query", json!({"user": "alice", "from": "2026-03-02", "to": "2026-03-02"}));
    assert_eq!(text(&found), "1 event for alice:\n- 2026-03-02T09:00 to 2026-03-02T09:15: Standup [evt-1]");
    assert_eq!(
        events(&found),
        [
            json!({"id": "evt-1", "title": "Standup", "start": "2026-03-02T09:00", "end": "2026-03-02T09:15", "description": ""})
        ]
    );
    let none = run(&mut storage, "calendar_query", json!({"user": "alice", "from": "2026-03-03"}));
    assert_eq!(text(&none), "No events for alice.");
    assert!(events(&none).is_empty());
}

#[test]
fn a_query_never_returns_another_users_events() {
    let mut storage = Memory::default();
    create(&mut storage, "bob", "Bob's secret", "2026-03-02T09:00", "2026-03-02T10:00");
    create(&mut storage, "alice", "Alice's", "2026-03-02T11:00", "2026-03-02T12:00");
    let found = run(&mut storage, "calendar_query", json!({"user": "alice"}));
    assert_eq!(events(&found).len(), 1);
    assert!(!found.content.contains("secret") && !found.structured_content.unwrap().contains("secret"));
    assert!(!found.content.contains("bob"));
}

#[test]
fn a_user_cannot_delete_another_users_event_and_learns_nothing_about_it() {
    let mut storage = Memory::default();
    create(&mut storage, "bob", "Bob's", "2026-03-02T09:00", "2026-03-02T10:00");
    let theirs = run(&mut storage, "calendar_delete", json!({"user": "alice", "id": "evt-1"}));
    let missing = run(&mut storage, "calendar_delete", json!({"user": "alice", "id": "evt-2"}));
    assert!(theirs.is_error && missing.is_error);
    assert_eq!(text(&theirs).replace("evt-1", "evt-N"), text(&missing).replace("evt-2", "evt-N"));
    let deleted = run(&mut storage, "calendar_delete", json!({"user": "bob", "id": "evt-1"}));
    assert!(!deleted.is_error);
    assert_eq!(events(&deleted)[0]["title"], "Bob's");
    assert!(events(&run(&mut storage, "calendar_query", json!({"user": "bob"}))).is_empty());
}

#[test]
fn a_read_only_calendar_refuses_writes_as_an_error_result_and_stays_unchanged() {
    let mut storage = Memory::default();
    create(&mut storage, "alice", "Kept", "2026-03-02T09:00", "2026-03-02T10:00");
    let before = storage.text.clone();
    storage.read_only = true;
    for outcome in [
        create(&mut storage, "alice", "New", "2026-03-02T09:00", "2026-03-02T10:00"),
        run(&mut storage, "calendar_delete", json!({"user": "alice", "id": "evt-1"})),
    ] {
        assert!(outcome.is_error);
        assert_eq!(text(&outcome), "the calendar is read-only");
    }
    assert_eq!(storage.text, before);
    assert_eq!(events(&run(&mut storage, "calendar_query", json!({"user": "alice"}))).len(), 1);
}

#[test]
fn arguments_outside_the_schema_are_invalid_arguments() {
    let mut storage = Memory::default();
    for (name, args) in [
        ("calendar_query", "{}"),
        ("calendar_query", r#"{"user":"alice","extra":1}"#),
        ("calendar_query", r#"{"user":"alice","from":"2026-02-30"}"#),
        ("calendar_query", r#"{"user":"al ice"}"#),
        ("calendar_query", "[]"),
        ("calendar_query", "not json"),
        ("calendar_create", r#"{"user":"a","title":"t","start":"2026-03-02 09:00","end":"2026-03-02T10:00"}"#),
        ("calendar_create", r#"{"user":"a","title":"","start":"2026-03-02T09:00","end":"2026-03-02T10:00"}"#),
        ("calendar_delete", r#"{"user":"a"}"#),
    ] {
        let result = call(name, args, &mut storage);
        assert!(matches!(result, Err(CallFailure::InvalidArguments(_))), "{name} {args}: {result:?}");
    }
    assert_eq!(storage.text, None);
}

#[test]
fn business_rule_failures_are_error_results() {
    let mut storage = Memory::default();
    let backwards = create(&mut storage, "a", "t", "2026-03-02T10:00", "2026-03-02T09:00");
    assert!(backwards.is_error);
    assert!(text(&backwards).contains("before the start"));
    let range = run(&mut storage, "calendar_query", json!({"user": "a", "from": "2026-03-05", "to": "2026-03-01"}));
    assert!(range.is_error);
}

#[test]
fn unknown_tools_missing_data_and_corrupt_files_are_call_failures() {
    let mut storage = Memory::default();
    assert_eq!(call("calendar_drop", "{}", &mut storage), Err(CallFailure::UnknownTool("calendar_drop".into())));
    let mut no_dir = Memory { no_dir: true, ..Memory::default() };
    let result = call("calendar_query", r#"{"user":"a"}"#, &mut no_dir);
    assert!(matches!(result, Err(CallFailure::Internal(_))), "{result:?}");
    let mut corrupt = Memory { text: Some("{\"events\": 7}".into()), ..Memory::default() };
    let result = call("calendar_query", r#"{"user":"a"}"#, &mut corrupt);
    assert!(matches!(&result, Err(CallFailure::Internal(why)) if why.contains("not a valid calendar")), "{result:?}");
}

#[test]
fn a_query_returns_at_most_a_hundred_events_and_says_so() {
    let mut storage = Memory::default();
    for day in 1..=28 {
        for hour in 10..15 {
            let start = format!("2026-02-{day:02}T{hour}:00");
            let end = format!("2026-02-{day:02}T{hour}:30");
            create(&mut storage, "a", "x", &start, &end);
        }
    }
    let found = run(&mut storage, "calendar_query", json!({"user": "a"}));
    assert_eq!(events(&found).len(), super::MAX_RESULTS);
    assert!(text(&found).starts_with("140 events for a:"));
    assert!(text(&found).ends_with("narrow `from` and `to` to see the rest)"));
}
