//! The audit log as the guard uses it: write-ahead, fail closed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Setup, Source, definition};
use serde_json::json;
use wasmgate_core::{CancellationToken, Tool, ToolErrorKind, ToolResult, Toolset};
use wasmgate_guard::Unattended;

#[tokio::test]
async fn a_full_audit_device_refuses_the_call_before_it_runs() {
    let query = definition("calendar_query", "Lists your events.");
    let source = Source::new("calendar", vec![query.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::with_audit(dir, &[(&source, query)], Arc::new(Unattended), Some("/dev/full".into()));
    let tools = setup.toolset(std::slice::from_ref(&source)).current().await;
    for _ in 0..2 {
        let error = tools[0].execute(json!({}), CancellationToken::new()).await.unwrap_err();
        assert_eq!(error.kind(), ToolErrorKind::Refused);
        assert_eq!(error.to_string(), "tool call refused by the gateway");
        assert!(error.detail().contains("audit log cannot be written"), "{}", error.detail());
    }
    assert_eq!(source.calls(), 0, "nothing ran without its start record");
}

#[tokio::test]
async fn the_start_record_is_durable_before_the_call_runs_at_the_cost_of_one_fsync() {
    let query = definition("calendar_query", "Lists your events.");
    let source = Source::new("calendar", vec![query.clone()]);
    let setup = Setup::new(&[(&source, query.clone())], Arc::new(Unattended));
    let audit = Arc::clone(setup.guard.audit());
    let before = audit.fsyncs();
    let mut offer = source.offer(&query);
    // The call itself looks at the log: its start record must already be on disk, and
    // exactly one fsync must have happened on the way (requested + started together).
    offer.tool = Tool::from_fn(offer.tool.spec.clone(), move |_, _| {
        let seen = std::fs::read_to_string(audit.path()).unwrap_or_default();
        let report = format!("started={} fsyncs={}", seen.matches("\"started\"").count(), audit.fsyncs() - before);
        async move { Ok(ToolResult::text(report)) }
    });
    let wasmgate_guard::Admission::Offered(guarded) = setup.guard.admit(offer) else { panic!("reviewed") };
    let result = guarded.execute(json!({}), CancellationToken::new()).await.unwrap();
    assert!(result.content.contains("started=1 fsyncs=1"), "{}", result.content);
}

#[tokio::test]
async fn a_started_call_whose_caller_drops_it_is_recorded_as_cancelled() {
    // A host may wrap a call in its own timeout, or a server leave it behind at shutdown:
    // the call may have had effects, so the log must not look as if it crashed.
    let query = definition("calendar_query", "Lists your events.");
    let source = Source::new("calendar", vec![query.clone()]);
    let setup = Setup::new(&[(&source, query.clone())], Arc::new(Unattended));
    let mut offer = source.offer(&query);
    let running = Arc::new(tokio::sync::Notify::new());
    let started = Arc::clone(&running);
    offer.tool = Tool::from_fn(offer.tool.spec.clone(), move |_, _| {
        started.notify_one();
        std::future::pending()
    });
    let wasmgate_guard::Admission::Offered(guarded) = setup.guard.admit(offer) else { panic!("reviewed") };
    // Dropped once the tool runs (its start record durable), however long that takes.
    tokio::select! {
        _ = guarded.execute(json!({}), CancellationToken::new()) => panic!("the call never answers"),
        () = running.notified() => {}
    }
    assert_eq!(setup.events(), ["requested", "started", "cancelled"]);
    let reason = setup.records()[2]["reason"].as_str().unwrap().to_owned();
    assert!(reason.contains("remote effects are unknown"), "{reason}");
}
