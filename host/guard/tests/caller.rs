//! Policy by caller: a constraint whose value is `"{caller.NAME}"` holds only for the
//! caller the call context names, and every record of the call names that caller.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Setup, Source, definition};
use serde_json::json;
use wasmgate_agent::{CallContext, Caller, CancellationToken, Offer, Tool, ToolResult, ToolSpec};
use wasmgate_guard::{Admission, Unattended};

fn own_calendar() -> (Setup, Tool) {
    let source = Source::new("p", vec![definition("query", "reads a calendar")]);
    let policy = "[providers.p.tools.query]\nverdict = \"allow\"\n\
                  constraints = [{ pointer = \"/user\", equals = \"{caller.email}\" }]\n";
    let setup = Setup::with_policy(
        tempfile::tempdir().unwrap(),
        policy,
        &[(&source, definition("query", "reads a calendar"))],
        Arc::new(Unattended),
        None,
    );
    let spec =
        ToolSpec { name: "p__query".into(), description: "reads".into(), input_schema: json!({"type": "object"}) };
    let tool =
        Tool::from_fn(spec, |input, _| async move { Ok(ToolResult::text(format!("events of {}", input["user"]))) });
    let offer =
        Offer { provider: "p".into(), name: "query".into(), definition: definition("query", "reads a calendar"), tool };
    let Admission::Offered(tool) = setup.guard.admit(offer) else { panic!("reviewed and allowed") };
    (setup, tool)
}

async fn call_as(tool: &Tool, caller: Option<Caller>, user: &str) -> ToolResult {
    let context = CallContext { caller: caller.map(Arc::new), ..CallContext::default() };
    let call = tool.execute(json!({"user": user}), CancellationToken::new());
    wasmgate_agent::context::scope(context, call).await.unwrap()
}

#[tokio::test]
async fn a_rule_about_the_caller_lets_each_caller_read_only_their_own() {
    let (setup, tool) = own_calendar();
    let alice =
        Caller { subject: "u1".into(), claims: json!({"email": "alice@example.com"}).as_object().cloned().unwrap() };
    let own = call_as(&tool, Some(alice.clone()), "alice@example.com").await;
    assert!(!own.is_error && own.content.contains("events of \"alice@example.com\""), "{}", own.content);
    let other = call_as(&tool, Some(alice), "bob@example.com").await;
    assert!(other.is_error && other.content.contains("must equal the caller's email"), "{}", other.content);
    let nobody = call_as(&tool, None, "alice@example.com").await;
    assert!(nobody.is_error && nobody.content.contains("the caller has none"), "{}", nobody.content);

    let records = setup.records();
    let requested: Vec<String> = records
        .iter()
        .filter(|r| r["event"] == "requested")
        .map(|r| format!("{} {}", r["caller"].as_str().unwrap_or("-"), r["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(requested, ["u1 allow", "u1 deny", "- deny"], "{records:?}");
}
