//! The loop's side of the failure contract, with local tools and a scripted model.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wasmgate_agent::{
    AgentConfig, AgentError, AllowAll, CallStatus, HookDecision, Hooks, Message, ModelTurn, SKIPPED, ScriptedModel,
    ToolCall, run_agent,
};
use wasmgate_core::{BoxFuture, CancellationToken, Tool, ToolError, ToolErrorKind, ToolResult, ToolSpec};

fn spec(name: &str) -> ToolSpec {
    ToolSpec { name: name.into(), description: format!("the {name} tool"), input_schema: json!({"type": "object"}) }
}

fn echo(counter: Arc<AtomicUsize>) -> Tool {
    Tool::from_fn(spec("echo"), move |input: Value, _| {
        counter.fetch_add(1, Ordering::SeqCst);
        async move { Ok(ToolResult::text(format!("echo {input}"))) }
    })
}

fn failing() -> Tool {
    Tool::from_fn(spec("broken"), |_, _| async {
        Err(ToolError::new(ToolErrorKind::ExecutionFailed, "server exited with status 3").with_provider("p"))
    })
}

fn tool_results(conversation: &[Message]) -> Vec<(String, String, bool, CallStatus)> {
    conversation
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { call_id, content, is_error, status } => {
                Some((call_id.clone(), content.clone(), *is_error, *status))
            }
            _ => None,
        })
        .collect()
}

async fn run(model: &ScriptedModel, tools: Vec<Tool>, hooks: &dyn Hooks) -> (Result<String, AgentError>, Vec<Message>) {
    let mut conversation = vec![Message::User("go".into())];
    let outcome =
        run_agent(model, &tools, hooks, &mut conversation, &AgentConfig::default(), &CancellationToken::new()).await;
    (outcome, conversation)
}

#[tokio::test]
async fn results_go_back_to_the_model_and_the_loop_ends_on_an_answer() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([ModelTurn::calls("", [("echo", json!({"a": 1}))]), ModelTurn::answer("done")]);
    let (outcome, conversation) = run(&model, vec![echo(count.clone())], &AllowAll).await;
    assert_eq!(outcome.unwrap(), "done");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let seen = model.seen();
    assert_eq!(seen[0].tools, ["echo"]);
    assert_eq!(
        tool_results(&seen[1].conversation),
        [("call-1".into(), "echo {\"a\":1}".into(), false, CallStatus::Completed)]
    );
    assert_eq!(conversation.len(), 4);
}

#[tokio::test]
async fn a_tool_error_ends_the_turn_records_failed_and_skipped_and_returns_the_error() {
    let count = Arc::new(AtomicUsize::new(0));
    let model =
        ScriptedModel::new([ModelTurn::calls("", [("echo", json!(1)), ("broken", json!(2)), ("echo", json!(3))])]);
    let (outcome, conversation) = run(&model, vec![echo(count.clone()), failing()], &AllowAll).await;
    let Err(AgentError::Tool { call, error }) = outcome else { panic!("expected a tool error, got {outcome:?}") };
    assert_eq!(call.name, "broken");
    assert_eq!(error.kind(), ToolErrorKind::ExecutionFailed);
    assert_eq!(error.detail(), "server exited with status 3");
    assert_eq!(count.load(Ordering::SeqCst), 1, "the call after the failure never ran");
    let results = tool_results(&conversation);
    assert_eq!(results[1], ("call-2".into(), "tool execution failed".into(), true, CallStatus::Failed));
    assert_eq!(results[2], ("call-3".into(), SKIPPED.into(), true, CallStatus::Skipped));
    assert!(!format!("{conversation:?}").contains("status 3"), "host detail must not reach the conversation");
}

struct DenyEcho;
impl Hooks for DenyEcho {
    fn before_tool_call<'a>(&'a self, call: &'a ToolCall, _: &'a ToolSpec) -> BoxFuture<'a, HookDecision> {
        let deny = call.name == "echo";
        Box::pin(async move {
            if deny { HookDecision::Deny { reason: "echo is not allowed here".into() } } else { HookDecision::Allow }
        })
    }
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_reads_the_reason() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new([ModelTurn::calls("", [("echo", json!({}))]), ModelTurn::answer("ok")]);
    let (outcome, conversation) = run(&model, vec![echo(count.clone())], &DenyEcho).await;
    assert_eq!(outcome.unwrap(), "ok");
    assert_eq!(count.load(Ordering::SeqCst), 0);
    assert_eq!(
        tool_results(&conversation),
        [("call-1".into(), "denied: echo is not allowed here".into(), true, CallStatus::Denied)]
    );
}

#[tokio::test]
async fn a_call_to_a_tool_nobody_offers_is_a_tool_error_the_model_reads() {
    let model = ScriptedModel::new([ModelTurn::calls("", [("nope", json!({}))]), ModelTurn::answer("ok")]);
    let (outcome, conversation) = run(&model, vec![], &AllowAll).await;
    assert_eq!(outcome.unwrap(), "ok");
    let results = tool_results(&conversation);
    assert_eq!(results[0].3, CallStatus::UnknownTool);
    assert!(results[0].2);
}

#[tokio::test]
async fn a_model_that_never_stops_hits_the_turn_limit() {
    let count = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new((0..5).map(|_| ModelTurn::calls("", [("echo", json!({}))])));
    let mut conversation = vec![Message::User("go".into())];
    let config = AgentConfig { max_turns: 3 };
    let outcome =
        run_agent(&model, &vec![echo(count.clone())], &AllowAll, &mut conversation, &config, &CancellationToken::new())
            .await;
    assert!(matches!(outcome, Err(AgentError::TurnLimit { limit: 3 })));
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn a_model_failure_is_returned() {
    let model = ScriptedModel::new([]);
    let (outcome, _) = run(&model, vec![], &AllowAll).await;
    assert!(matches!(outcome, Err(AgentError::Model(_))));
}

#[tokio::test]
async fn a_cancelled_run_stops_before_asking_the_model() {
    let model = ScriptedModel::new([ModelTurn::answer("never")]);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let mut conversation = vec![Message::User("go".into())];
    let outcome = run_agent(&model, &Vec::new(), &AllowAll, &mut conversation, &AgentConfig::default(), &cancel).await;
    assert!(matches!(outcome, Err(AgentError::Cancelled)));
    assert!(model.seen().is_empty());
}
