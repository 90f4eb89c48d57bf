//! The failure contract for WASM tool components, one row per test: what the agent gets
//! when the arguments are invalid, the component declines, the sandbox stops the call,
//! or the caller cancels.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::components::{
    calendar, calendar_component, component, data, echo_component, hostile_component, named, run, single,
};
use common::formatters;
use serde_json::json;
use wasmgate_adapter::component_tool;
use wasmgate_core::{CancellationToken, ToolErrorKind};
use wasmgate_sandbox::{CallLimits, Grants, ToolDefinition};

#[tokio::test]
async fn arguments_that_break_the_input_schema_are_an_error_result_and_never_reach_the_component() {
    let dir = tempfile::tempdir().unwrap();
    let tools = calendar(data(dir.path(), false)).tools();
    let input = json!({"user": "alice", "title": "x", "start": "tomorrow", "end": "2030-05-01T10:00"});
    let result = run(&named(&tools, "cal__calendar_create"), input).await.unwrap();
    assert!(result.is_error);
    assert!(result.content.starts_with("invalid arguments:\n/start: "), "{}", result.content);
    let not_an_object = run(&named(&tools, "cal__calendar_query"), json!([1])).await.unwrap();
    assert!(not_an_object.is_error);
    // The hostile `write` tool writes wherever it is told: had the call reached it, the file would exist.
    let schema = json!({"type": "object", "properties": {"path": {"type": "string", "pattern": "^/data/ok$"}}});
    let write = single(&component("evil", hostile_component(), data(dir.path(), false)), "write", schema);
    let refused = run(&write, json!({"path": "/data/evil"})).await.unwrap();
    assert!(refused.is_error && refused.content.contains("/path"), "{}", refused.content);
    assert!(!dir.path().join("evil").exists(), "the component was never called");
    assert!(!run(&write, json!({"path": "/data/ok"})).await.unwrap().is_error);
    assert!(dir.path().join("ok").exists(), "valid arguments do reach it");
}

#[tokio::test]
async fn a_component_that_rejects_the_arguments_is_an_error_result_rendered_by_the_formatter() {
    let echo = single(&component("echo", echo_component(), Grants::none()), "echo", json!({"type": "object"}));
    let result = run(&echo, json!({"text": "a \"quoted\" word"})).await.unwrap();
    assert!(result.is_error);
    assert!(result.content.contains("the provider rejected the arguments: expected"), "{}", result.content);
    assert_eq!(run(&echo, json!({"text": "plain"})).await.unwrap().content, "plain");
}

#[tokio::test]
async fn a_tool_the_component_no_longer_has_is_an_error_result_saying_so() {
    let calendar = component("cal", calendar_component(), Grants::none());
    let stale = single(&calendar, "calendar_archive", json!({"type": "object"}));
    let result = run(&stale, json!({})).await.unwrap();
    assert!(result.is_error);
    assert_eq!(result.content, "the tool cal__calendar_archive is no longer available from cal");
}

#[tokio::test]
async fn an_internal_failure_of_the_component_is_execution_failed_with_its_words_for_the_host() {
    let tools = calendar(Grants::none()).tools();
    let error = run(&named(&tools, "cal__calendar_query"), json!({"user": "alice"})).await.unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::ExecutionFailed);
    assert_eq!(error.to_string(), "tool execution failed", "all the model reads");
    assert_eq!(error.provider(), Some("cal"));
    assert!(error.detail().contains("no data directory"), "{}", error.detail());
}

#[tokio::test]
async fn a_trapping_spinning_or_oversized_tool_is_execution_failed_naming_the_limit() {
    for (tool, named_in_detail) in [
        ("panic", "panicked on purpose"),
        ("spin", "deadline of 300ms exceeded"),
        ("alloc", "memory limit of"),
        ("huge", "output limit"),
        ("content_untyped", "invalid output"),
    ] {
        let hostile = single(&component("evil", hostile_component(), Grants::none()), tool, json!({"type": "object"}));
        let error = run(&hostile, json!({})).await.unwrap_err();
        assert_eq!(error.kind(), ToolErrorKind::ExecutionFailed, "{tool}");
        assert_eq!(error.provider(), Some("evil"), "{tool}");
        assert!(error.detail().contains(named_in_detail), "{tool}: {}", error.detail());
        assert!(error.detail().contains(&format!("tool {tool} of evil")), "{tool}: {}", error.detail());
    }
}

#[tokio::test]
async fn cancelling_before_the_call_returns_cancelled_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let tools = calendar(data(dir.path(), false)).tools();
    let cancel = CancellationToken::new();
    cancel.cancel();
    let input = json!({"user": "alice", "title": "x", "start": "2030-05-01T09:00", "end": "2030-05-01T10:00"});
    let error = named(&tools, "cal__calendar_create").execute(input, cancel).await.unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
    assert_eq!(error.provider(), Some("cal"));
    assert!(!dir.path().join("events.json").exists(), "the component never ran");
}

#[tokio::test]
async fn cancelling_a_running_call_returns_cancelled_not_the_deadline_it_would_reach() {
    let mut slow = component("evil", hostile_component(), Grants::none());
    std::sync::Arc::make_mut(&mut slow).limits = CallLimits { deadline: Duration::from_secs(3), ..slow.limits.clone() };
    let spin = single(&slow, "spin", json!({"type": "object"}));
    let cancel = CancellationToken::new();
    let running = {
        let cancel = cancel.clone();
        tokio::spawn(async move { spin.execute(json!({}), cancel).await })
    };
    cancel.cancel();
    // Waiting for the spinning call would end at its deadline, an ExecutionFailed error;
    // Cancelled shows the caller got its answer without waiting for the guest.
    let error = running.await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
}

#[tokio::test]
async fn a_call_waiting_for_its_turn_at_a_writable_directory_can_be_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    assert!(!component("evil", hostile_component(), data(dir.path(), true)).one_call_at_a_time(), "read-only");
    assert!(!component("evil", hostile_component(), Grants::none()).one_call_at_a_time());
    let mut slow = component("evil", hostile_component(), data(dir.path(), false));
    assert!(slow.one_call_at_a_time(), "a writable directory orders the calls");
    std::sync::Arc::make_mut(&mut slow).limits = CallLimits { deadline: Duration::from_secs(3), ..slow.limits.clone() };
    let spin = single(&slow, "spin", json!({"type": "object"}));
    let (first_cancel, second_cancel) = (CancellationToken::new(), CancellationToken::new());
    let first = {
        let (spin, cancel) = (spin.clone(), first_cancel.clone());
        tokio::spawn(async move { spin.execute(json!({}), cancel).await })
    };
    // On this single-threaded runtime the first call now takes the turn and runs until
    // its guest yields at an epoch tick.
    tokio::task::yield_now().await;
    let second = {
        let cancel = second_cancel.clone();
        tokio::spawn(async move { spin.execute(json!({}), cancel).await })
    };
    tokio::task::yield_now().await;
    second_cancel.cancel();
    // Waiting out the first call would end the second at its own deadline after the
    // first's, an ExecutionFailed error: Cancelled shows the wait itself was cancelled.
    let error = second.await.unwrap().unwrap_err();
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
    assert!(!first.is_finished(), "the first call still holds the turn");
    first_cancel.cancel();
    assert_eq!(first.await.unwrap().unwrap_err().kind(), ToolErrorKind::Cancelled);
}

#[test]
fn a_tool_whose_input_schema_cannot_be_compiled_is_withheld() {
    let calendar = component("cal", calendar_component(), Grants::none());
    let remote = json!({"type": "object", "$ref": "https://example.invalid/schema.json"});
    let definition = ToolDefinition { name: "calendar_query".into(), description: String::new(), input_schema: remote };
    let formatter = formatters(None).select("cal", "calendar_query");
    let why = component_tool(&calendar, "cal__calendar_query".into(), &definition, formatter).unwrap_err();
    assert!(why.reason().contains("inputSchema is unusable"), "{why}");
}
