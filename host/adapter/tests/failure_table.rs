//! The failure table of docs/ARCHITECTURE.md, one agent turn per row: a scripted model drives
//! `run_agent` through real adapters, over the in-memory transport, with real
//! formatter components in the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Reply, Upstream, formatters, provider, text, tool};
use serde_json::{Value, json};
use wasmgate_adapter::{AdapterError, McpToolset, WITHHELD};
use wasmgate_agent::{
    AgentConfig, AgentError, AllowAll, CallStatus, Message, ModelTurn, SKIPPED, ScriptedModel, run_agent,
};
use wasmgate_client::{ClientConfig, CloseReason, FakeTransport, McpClient};
use wasmgate_core::{CancellationToken, ToolErrorKind};

async fn turn(
    model: &ScriptedModel,
    toolset: &McpToolset,
    cancel: &CancellationToken,
) -> (Result<String, AgentError>, Vec<Message>) {
    let mut conversation = vec![Message::User("go".into())];
    let outcome = run_agent(model, toolset, &AllowAll, &mut conversation, &AgentConfig::default(), cancel).await;
    (outcome, conversation)
}

fn results(conversation: &[Message]) -> Vec<(String, bool, CallStatus)> {
    conversation
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { content, is_error, status, .. } => Some((content.clone(), *is_error, *status)),
            _ => None,
        })
        .collect()
}

fn search() -> Value {
    tool("search", json!({"q": {"type": "string"}}))
}

#[tokio::test]
async fn provider_is_error_is_a_formatted_result_and_the_loop_continues() {
    let upstream =
        Upstream::new(vec![search()], |_, _| Reply::Result(text("no results for \u{1b}[31mthat\u{1b}[0m", true)));
    let toolset = McpToolset::new(vec![provider(upstream, formatters(None)).await]);
    let model =
        ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": "x"}))]), ModelTurn::answer("sorry")]);
    let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "sorry");
    let (content, is_error, status) = &results(&conversation)[0];
    assert!(*is_error);
    assert_eq!(*status, CallStatus::Completed);
    assert!(content.contains("no results for"), "{content}");
    assert!(!content.contains('\u{1b}'), "the formatter removes escape sequences: {content:?}");
}

#[tokio::test]
async fn transport_failure_mid_call_ends_the_turn_with_tool_execution_failed() {
    let upstream = Upstream::new(vec![search(), tool("other", json!({}))], |_, _| Reply::Die);
    let toolset = McpToolset::new(vec![provider(upstream.clone(), formatters(None)).await]);
    let model = ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": "x"})), ("p__other", json!({}))])]);
    let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
    let Err(AgentError::Tool { call, error }) = outcome else { panic!("expected a tool error: {outcome:?}") };
    assert_eq!(call.name, "p__search");
    assert_eq!(error.kind(), ToolErrorKind::ExecutionFailed);
    assert_eq!(error.provider(), Some("p"));
    assert!(error.detail().contains("status 1"), "the host sees why: {}", error.detail());
    let results = results(&conversation);
    assert_eq!(results[0], ("tool execution failed".into(), true, CallStatus::Failed));
    assert_eq!(results[1], (SKIPPED.into(), true, CallStatus::Skipped));
    assert_eq!(upstream.call_count(), 1);
    assert!(!format!("{conversation:?}").contains("status 1"), "the exit status stays out of the conversation");
}

#[tokio::test]
async fn a_tool_that_is_gone_is_reported_to_the_model_and_the_list_is_refreshed() {
    let upstream =
        Upstream::new(vec![search(), tool("keep", json!({}))], |_, _| Reply::RpcError(-32602, "Unknown tool: search"));
    let toolset = McpToolset::new(vec![provider(upstream.clone(), formatters(None)).await]);
    upstream.tools.lock().unwrap().retain(|t| t["name"] != "search");
    let model = ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": "x"}))]), ModelTurn::answer("ok")]);
    let lists_before = *upstream.lists.lock().unwrap();
    let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "ok");
    let (content, is_error, _) = &results(&conversation)[0];
    assert!(*is_error);
    assert_eq!(content, "the tool p__search is no longer available from p");
    assert!(*upstream.lists.lock().unwrap() > lists_before, "the tool list was fetched again");
    let seen = model.seen();
    assert_eq!(seen[0].tools, ["p__search", "p__keep"]);
    assert_eq!(seen[1].tools, ["p__keep"], "the next turn offers the refreshed list");
}

#[tokio::test]
async fn formatter_failures_withhold_the_result_and_the_loop_continues() {
    use wasmgate_guests::hostile;
    for (name, formatter) in [
        ("trap", hostile::PANIC),
        ("deadline", hostile::SPIN_FOREVER),
        ("memory", hostile::ALLOC_1GIB),
        ("output cap", hostile::HUGE_OUTPUT),
    ] {
        let upstream = Upstream::new(vec![search()], |_, _| Reply::Result(text("secret result", false)));
        let toolset = McpToolset::new(vec![provider(upstream.clone(), formatters(Some(formatter))).await]);
        let model = ScriptedModel::new([
            ModelTurn::calls("", [("p__search", json!({"q": "x"}))]),
            ModelTurn::answer("went on"),
        ]);
        let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
        assert_eq!(outcome.unwrap(), "went on", "{name}: the loop continues");
        assert_eq!(results(&conversation)[0], (WITHHELD.into(), true, CallStatus::Completed), "{name}");
        assert_eq!(upstream.call_count(), 1, "{name}: the call did run");
    }
}

#[tokio::test]
async fn input_required_that_nobody_can_answer_is_unsupported() {
    let upstream = Upstream::new(vec![search()], |_, _| {
        Reply::Result(json!({"resultType": "input_required", "requestState": "s",
            "inputRequests": {"ask": {"method": "elicitation/create", "params": {"message": "Sure?"}}}}))
    });
    let toolset = McpToolset::new(vec![provider(upstream, formatters(None)).await]);
    let model = ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": "x"}))])]);
    let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
    let Err(AgentError::Tool { error, .. }) = outcome else { panic!("expected a tool error: {outcome:?}") };
    assert_eq!(error.kind(), ToolErrorKind::Unsupported);
    let (content, is_error, status) = &results(&conversation)[0];
    assert!(content.starts_with("unsupported"), "never an empty result: {content}");
    assert!(*is_error);
    assert_eq!(*status, CallStatus::Failed);
}

#[tokio::test]
async fn a_provider_that_cannot_be_reached_at_start_up_fails_it_naming_the_provider() {
    let (transport, server) = FakeTransport::pair();
    server.close(CloseReason::Exited { code: Some(127), signal: None }).await;
    let error =
        wasmgate_adapter::McpProvider::connect("calendar", transport, ClientConfig::default(), formatters(None))
            .await
            .unwrap_err();
    assert!(matches!(&error, AdapterError::Unreachable { provider, .. } if provider == "calendar"));
    assert!(error.to_string().contains("\"calendar\""), "{error}");
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream_and_ends_the_turn() {
    let upstream = Upstream::new(vec![search()], |_, _| Reply::Hang);
    let toolset = McpToolset::new(vec![provider(upstream.clone(), formatters(None)).await]);
    let model = ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": "x"}))])]);
    let cancel = CancellationToken::new();
    let running = {
        let cancel = cancel.clone();
        let toolset = toolset.clone();
        tokio::spawn(async move {
            let mut conversation = vec![Message::User("go".into())];
            let outcome =
                run_agent(&model, &toolset, &AllowAll, &mut conversation, &AgentConfig::default(), &cancel).await;
            (outcome, conversation)
        })
    };
    upstream.called.notified().await;
    cancel.cancel();
    let (outcome, conversation) = running.await.unwrap();
    let Err(AgentError::Tool { error, .. }) = outcome else { panic!("expected a tool error: {outcome:?}") };
    assert_eq!(error.kind(), ToolErrorKind::Cancelled);
    assert_eq!(results(&conversation)[0], ("tool call cancelled".into(), true, CallStatus::Failed));
    let client: &McpClient = toolset.providers()[0].client();
    client.close().await;
    let cancelled = upstream.cancelled.lock().unwrap().clone();
    assert_eq!(cancelled.len(), 1, "notifications/cancelled reached the upstream: {cancelled:?}");
}

#[tokio::test]
async fn invalid_arguments_are_an_error_result_and_never_reach_the_provider() {
    let upstream = Upstream::new(vec![search()], |_, _| Reply::Result(text("found", false)));
    let toolset = McpToolset::new(vec![provider(upstream.clone(), formatters(None)).await]);
    let model =
        ScriptedModel::new([ModelTurn::calls("", [("p__search", json!({"q": 5}))]), ModelTurn::answer("fixed")]);
    let (outcome, conversation) = turn(&model, &toolset, &CancellationToken::new()).await;
    assert_eq!(outcome.unwrap(), "fixed");
    let (content, is_error, _) = &results(&conversation)[0];
    assert!(*is_error);
    assert!(content.starts_with("invalid arguments:\n/q: "), "{content}");
    assert_eq!(upstream.call_count(), 0, "invalid arguments never reach the provider");
}
