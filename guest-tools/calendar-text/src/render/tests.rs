#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::{Input, MAX_EVENTS, RenderError, TRUNCATED, render};

fn input<'a>(tool_name: &'a str, content: &'a str, structured: Option<&'a str>) -> Input<'a> {
    Input { tool_name, content, structured, is_error: false, max_output_bytes: 1 << 20 }
}

fn events(list: &str) -> String {
    format!(r#"{{"events":[{list}]}}"#)
}

#[test]
fn events_become_one_agenda_line_each_with_weekday_span_title_description_and_id() {
    let structured = events(
        r#"{"id":"evt-2","title":"Team sync","start":"2026-12-01T10:00","end":"2026-12-01T11:00","description":"Weekly planning"},
           {"id":"evt-5","title":"Night shift","start":"2026-12-03T22:00","end":"2026-12-04T06:00","description":""}"#,
    );
    let out = render(input("calendar__calendar_query", "[]", Some(&structured))).unwrap();
    assert_eq!(
        out,
        "2 events:\n\
         Tue 2026-12-01 10:00–11:00  Team sync — Weekly planning  [evt-2]\n\
         Thu 2026-12-03 22:00 – Fri 2026-12-04 06:00  Night shift  [evt-5]"
    );
}

#[test]
fn the_agenda_replaces_the_text_content_that_repeats_it() {
    let structured = events(r#"{"title":"Lunch","start":"2026-12-02T12:00","end":"2026-12-02T13:00"}"#);
    let content = r#"[{"type":"text","text":"1 event for alice:\n- 2026-12-02T12:00 to 2026-12-02T13:00: Lunch"}]"#;
    let out = render(input("diary__calendar_query", content, Some(&structured))).unwrap();
    assert_eq!(out, "1 event:\nWed 2026-12-02 12:00–13:00  Lunch");
}

#[test]
fn created_and_deleted_events_say_so() {
    let structured = events(r#"{"id":"evt-9","title":"Dentist","start":"2026-12-04T08:00","end":"2026-12-04T09:00"}"#);
    let created = render(input("diary__calendar_create", "[]", Some(&structured))).unwrap();
    assert_eq!(created, "Created:\nFri 2026-12-04 08:00–09:00  Dentist  [evt-9]");
    let deleted = render(input("calendar__calendar_delete", "[]", Some(&structured))).unwrap();
    assert!(deleted.starts_with("Deleted:\n"), "{deleted}");
    assert_eq!(render(input("calendar__calendar_query", "[]", Some(r#"{"events":[]}"#))).unwrap(), "No events.");
}

#[test]
fn hostile_fields_are_cleaned_put_on_one_line_and_bounded() {
    let description = format!("Notes:\n\n{}", "lorem ".repeat(10_000));
    let structured = serde_json::json!({"events": [
        {"title": "\u{1b}[2J\u{1b}[31mURGENT\u{1b}[0m budget", "start": "2026-12-01T09:00", "end": "2026-12-01T09:30",
         "description": "Slides: budget_\u{202e}fdp.exe\u{200b}"},
        {"title": "Offsite", "start": "2026-12-02T09:00", "end": "2026-12-02T17:00", "description": description},
    ]})
    .to_string();
    let out = render(input("calendar__calendar_query", "[]", Some(&structured))).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[1], "Tue 2026-12-01 09:00–09:30  URGENT budget — Slides: budget_fdp.exe");
    assert!(lines[2].starts_with("Wed 2026-12-02 09:00–17:00  Offsite — Notes: lorem lorem"), "{}", lines[2]);
    assert!(lines[2].ends_with("more characters)"), "{}", lines[2]);
    assert!(lines[2].chars().count() < 300, "{}", lines[2]);
    assert_eq!(lines.len(), 3);
}

#[test]
fn fields_that_are_missing_or_not_text_do_not_break_the_line() {
    let structured = events(
        r#"{"title":7,"start":"soon"},"not an event",{"id":"e1","title":"Ok","start":"2026-12-05T10:00","end":"2026-12-05T10:30"}"#,
    );
    let out = render(input("calendar__calendar_query", "[]", Some(&structured))).unwrap();
    assert_eq!(
        out,
        "3 events:\nsoon  (untitled)\n(an entry that is not an event)\nSat 2026-12-05 10:00–10:30  Ok  [e1]"
    );
}

#[test]
fn at_most_max_events_are_listed_and_the_rest_counted() {
    let one = r#"{"title":"x","start":"2026-12-01T10:00","end":"2026-12-01T11:00"}"#;
    let structured = events(&vec![one; MAX_EVENTS + 5].join(","));
    let out = render(input("calendar__calendar_query", "[]", Some(&structured))).unwrap();
    assert_eq!(out.lines().count(), 1 + MAX_EVENTS + 1);
    assert!(out.ends_with("… and 5 more events (narrow the query to see them)"), "{out}");
}

#[test]
fn without_events_the_text_content_is_shown_plainly() {
    let content = r#"[{"type":"text","text":"No calendar\u001b[1m here\r\nsorry"},{"type":"image","data":"AAAA"}]"#;
    let expected = "No calendar here\nsorry\n[image content not shown]";
    assert_eq!(render(input("calendar__calendar_query", content, None)).unwrap(), expected);
    assert_eq!(render(input("calendar__calendar_query", content, Some(r#"{"count":3}"#))).unwrap(), expected);
    assert_eq!(render(input("x", "[]", None)).unwrap(), "(the result has no content)");
}

#[test]
fn errors_are_labelled_and_rendered_as_text() {
    let content = r#"[{"type":"text","text":"alice has no event with id \"evt-77\""}]"#;
    let out = render(Input { is_error: true, ..input("diary__calendar_delete", content, Some(&events(""))) }).unwrap();
    assert_eq!(out, "The tool reported an error:\nalice has no event with id \"evt-77\"");
}

#[test]
fn output_stays_within_the_budget_on_a_char_boundary() {
    let one = r#"{"title":"ééééééééééééééééééééé","start":"2026-12-01T10:00","end":"2026-12-01T11:00"}"#;
    let structured = events(&vec![one; 100].join(","));
    for max in [0, 1, 10, TRUNCATED.len(), 100, 1001, 4096] {
        let out = render(Input { max_output_bytes: max, ..input("q", "[]", Some(&structured)) }).unwrap();
        assert!(out.len() <= max, "budget {max}: {} bytes", out.len());
        if max >= TRUNCATED.len() {
            assert!(out.ends_with(TRUNCATED), "budget {max}: {out:?}");
        }
    }
}

#[test]
fn invalid_input_is_a_typed_error() {
    let err = |content: &str, structured: Option<&str>| render(input("q", content, structured)).unwrap_err();
    assert!(matches!(err("nope", None), RenderError::InvalidInput(m) if m.contains("content is not JSON")));
    assert!(matches!(err("{}", None), RenderError::InvalidInput(m) if m.contains("not a JSON array")));
    assert!(matches!(err("[]", Some("{")), RenderError::InvalidInput(m) if m.contains("structuredContent")));
}

#[test]
fn a_caldav_servers_json_list_is_an_agenda_with_its_fields_cut_and_cleaned() {
    let long = "A".repeat(100_000);
    let list = format!(
        r#"[{{"uid":"e2@demo","summary":"Pay\u200bro\u202ell","start":"2026-12-08T12:00:00Z","end":"2026-12-08T13:00:00Z","description":"{long}"}},
            {{"uid":"e1@demo","summary":"Team sync","start":"2026-12-07T09:00:00.000Z","end":"2026-12-07T10:00:00.000Z","description":"Agenda: roadmap"}}]"#
    );
    let content = serde_json::json!([{"type": "text", "text": list}]).to_string();
    let out = render(input("caldav__list-events", &content, None)).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "2 events:");
    assert_eq!(lines[1], "Mon 2026-12-07 09:00–10:00 UTC  Team sync — Agenda: roadmap  [e1@demo]", "in time order");
    assert!(lines[2].starts_with("Tue 2026-12-08 12:00–13:00 UTC  Payroll — AAAA"), "cleaned: {}", lines[2]);
    assert!(lines[2].chars().count() < 400, "the description is cut: {} chars", lines[2].chars().count());
    assert_eq!(lines.len(), 3);
}

#[test]
fn text_that_is_not_a_list_of_events_stays_text() {
    for text in [r#"[{"name":"x"}]"#, r#"{"summary":"x","start":"2026-12-07T09:00"}"#, "plain words"] {
        let content = serde_json::json!([{"type": "text", "text": text}]).to_string();
        let out = render(input("caldav__list-calendars", &content, None)).unwrap();
        assert!(!out.contains("event"), "{text}: {out}");
    }
}
