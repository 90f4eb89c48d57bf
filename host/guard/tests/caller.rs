//! Policy by caller: a constraint whose value is `"{caller.NAME}"` holds only for the
//! caller the call context names, and every record of the call names that caller; a
//! caller's budget is its own; a reload changes the rules of calls that start after it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Setup, Source, definition};
use serde_json::json;
use wasmgate_core::{CallContext, Caller, CancellationToken, Offer, Tool, ToolResult, ToolSpec};
use wasmgate_guard::{Admission, Unattended};

const OWN_CALENDAR: &str = "[providers.p.tools.query]\nverdict = \"allow\"\n\
                            constraints = [{ pointer = \"/user\", equals = \"{caller.email}\" }]\n";

fn own_calendar() -> (Setup, Tool) {
    calendar_with(OWN_CALENDAR)
}

fn calendar_with(policy: &str) -> (Setup, Tool) {
    let source = Source::new("p", vec![definition("query", "reads a calendar")]);
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
    wasmgate_core::CallContext::scope(context, call).await.unwrap()
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

fn caller(subject: &str, email: &str) -> Caller {
    Caller { subject: subject.into(), claims: json!({"email": email}).as_object().cloned().unwrap() }
}

#[tokio::test]
async fn a_caller_over_its_budget_is_refused_with_the_wait_and_others_are_not() {
    let policy = format!("{OWN_CALENDAR}\n[[budgets]]\nrate = 2\nper = \"hour\"\n");
    let (setup, tool) = calendar_with(&policy);
    let (ann, bob) = (caller("ann", "ann@example.com"), caller("bob", "bob@example.com"));
    for _ in 0..2 {
        assert!(!call_as(&tool, Some(ann.clone()), "ann@example.com").await.is_error);
    }
    let context = CallContext { caller: Some(Arc::new(ann.clone())), ..CallContext::default() };
    let call = tool.execute(json!({"user": "ann@example.com"}), CancellationToken::new());
    let limited = wasmgate_core::CallContext::scope(context, call).await.unwrap_err();
    assert_eq!(limited.kind(), wasmgate_core::ToolErrorKind::RateLimited);
    let wait = limited.retry_after().unwrap();
    assert!(wait > std::time::Duration::from_secs(1700) && wait <= std::time::Duration::from_secs(1800), "{wait:?}");
    assert!(!call_as(&tool, Some(bob), "bob@example.com").await.is_error, "bob has his own budget");
    // A call the policy denies takes nothing from the budget: it never runs anyway.
    let denied = call_as(&tool, Some(ann), "bob@example.com").await;
    assert!(denied.is_error && denied.content.contains("must equal the caller's email"), "{}", denied.content);

    let records = setup.records();
    let limited: Vec<&serde_json::Value> = records.iter().filter(|r| r["event"] == "limited").collect();
    assert_eq!(limited.len(), 1, "{records:?}");
    assert_eq!(limited[0]["caller"], "ann");
    assert_eq!(limited[0]["budget"], "budgets[0] (2 calls per hour)");
    assert!(limited[0]["retry_after_ms"].as_u64().unwrap() > 1_700_000);
    let started = records.iter().filter(|r| r["event"] == "started").count();
    assert_eq!(started, 3, "ann twice and bob once ran: {records:?}");
}

#[tokio::test]
async fn a_providers_caller_rules_deny_those_they_name() {
    let policy = format!("{OWN_CALENDAR}\n[[providers.p.callers]]\nsubjects = [\"eve\"]\nverdict = \"deny\"\n");
    let (_setup, tool) = calendar_with(&policy);
    let eve = call_as(&tool, Some(caller("eve", "eve@example.com")), "eve@example.com").await;
    assert!(eve.is_error && eve.content.contains("denies this provider's tools to subject \"eve\""), "{}", eve.content);
    assert!(!call_as(&tool, Some(caller("ann", "ann@example.com")), "ann@example.com").await.is_error);
}

#[tokio::test]
async fn a_reload_decides_calls_that_start_after_it_and_not_those_in_flight() {
    let source = Source::new("p", vec![definition("query", "reads a calendar")]);
    let setup = Setup::with_policy(
        tempfile::tempdir().unwrap(),
        "[providers.p.tools]\nquery = \"allow\"\n",
        &[(&source, definition("query", "reads a calendar"))],
        Arc::new(Unattended),
        None,
    );
    let (entered, mut inside) = tokio::sync::mpsc::channel::<()>(1);
    let release = Arc::new(tokio::sync::Notify::new());
    let gate = Arc::clone(&release);
    let spec =
        ToolSpec { name: "p__query".into(), description: "reads".into(), input_schema: json!({"type": "object"}) };
    let inner = Tool::from_fn(spec, move |_, _| {
        let (entered, gate) = (entered.clone(), Arc::clone(&gate));
        async move {
            let _ = entered.send(()).await;
            gate.notified().await;
            Ok(ToolResult::text("done"))
        }
    });
    let offer = Offer {
        provider: "p".into(),
        name: "query".into(),
        definition: definition("query", "reads a calendar"),
        tool: inner,
    };
    let Admission::Offered(tool) = setup.guard.admit(offer) else { panic!("reviewed and allowed") };
    let in_flight = tokio::spawn({
        let tool = tool.clone();
        async move { tool.execute(json!({}), CancellationToken::new()).await }
    });
    inside.recv().await.unwrap();
    let denying = wasmgate_policy::Policy::from_toml("[providers.p.tools]\nquery = \"deny\"\n", "p").unwrap();
    let mut lock = wasmgate_policy::Lock::default();
    lock.approve("p", &definition("query", "reads a calendar")).unwrap();
    setup.guard.reload(denying, lock);
    release.notify_one();
    let finished = in_flight.await.unwrap().unwrap();
    assert!(!finished.is_error && finished.content.contains("\ndone\n"), "{}", finished.content);
    let after = tool.execute(json!({}), CancellationToken::new()).await.unwrap();
    assert!(after.is_error && after.content.contains("the policy denies `query`"), "{}", after.content);
}
