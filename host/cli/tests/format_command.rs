//! `wasmgate format` as a user runs it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

fn wasmgate(args: &[&str]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_wasmgate"))
        .args(args)
        .arg("--cache-dir")
        .arg(cache.path().join("c"))
        .output()
        .unwrap()
}

fn sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sample-result.json").display().to_string()
}

#[test]
fn the_sample_result_renders_as_clean_readable_text() {
    let out = wasmgate(&["format", &sample()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let expected = "\
Your agenda for 2026-12-02
All times are local. (reversed?)
date: 2026-12-02
events:
  - title: Standup
    start: 09:00
    attendees:
      - ana
      - bo
  - title: Lunch with Kim
    start: 12:30
    location:
      name: Cafe Nord
      floor: 2
  - title: Review
    start: 16:00
    notes: Bring the Q4 numbers
      and the slides
free_slots: 2
[image: image/png, 70 B]
[link: calendar.ics <file:///calendars/work.ics>]
  The full calendar export
";
    assert_eq!(text, expected);
}

#[test]
fn a_file_that_is_not_a_formatter_fails_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let bogus = dir.path().join("bogus.wasm");
    std::fs::write(&bogus, b"not a component").unwrap();
    let out = wasmgate(&["format", &sample(), "--formatter", bogus.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bogus.wasm is not a valid WebAssembly component"), "{stderr}");
}

#[test]
fn a_result_without_content_is_refused_with_the_expected_shape() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("r.json");
    std::fs::write(&file, r#"{"text": "hi"}"#).unwrap();
    let out = wasmgate(&["format", file.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no `content` array"), "{stderr}");
}

#[test]
fn a_formatter_that_fails_is_reported_with_its_limit() {
    let out =
        wasmgate(&["format", &sample(), "--formatter", wasmgate_guests::hostile::SPIN_FOREVER, "--deadline-ms", "100"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("deadline of 100ms exceeded"), "{stderr}");
}
