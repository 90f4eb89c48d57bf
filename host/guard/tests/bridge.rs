//! A provider's own requests for input during a guarded call, as the guard answers or
//! passes them: roots from the policy, sampling per `sampling` (refused by default, put
//! to the approver for `ask`), elicitation to the caller's side only when there is one,
//! each request an `input` record of the call.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use common::{Setup, Source, definition};
use serde_json::{Map, Value, json};
use wasmgate_core::{
    BoxFuture, CallContext, CancellationToken, Input, InputRefusal, Offer, Tool, ToolResult, ToolSpec,
};
use wasmgate_guard::{Admission, Unattended};

/// The caller's side: answers everything, and keeps what it was asked.
#[derive(Default)]
struct Caller {
    asked: Mutex<Vec<(String, Value)>>,
}

impl Input for Caller {
    fn can(&self, _: &str) -> bool {
        true
    }

    fn request(&self, method: String, params: Map<String, Value>) -> BoxFuture<'static, Result<Value, InputRefusal>> {
        self.asked.lock().unwrap().push((method, Value::Object(params)));
        Box::pin(std::future::ready(Ok(json!({"answered": true}))))
    }

    fn defer(&self, _: Map<String, Value>, _: Map<String, Value>, _: Option<String>) -> bool {
        false
    }
}

/// A guarded tool of provider `p` whose call makes `requests` (method, params) of
/// the provider's caller's side and answers with what each gave (or why not).
fn asking_tool(setup: &Setup, requests: Vec<(&'static str, Value)>) -> Tool {
    let spec = ToolSpec { name: "p__ask".into(), description: "asks".into(), input_schema: json!({"type": "object"}) };
    let tool = Tool::from_fn(spec, move |_, _| {
        let requests = requests.clone();
        async move {
            let input = wasmgate_core::CallContext::current().input.expect("the guard always offers one");
            let mut answers = Vec::new();
            for (method, params) in requests {
                let answer = input.request(method.to_owned(), params.as_object().cloned().unwrap_or_default()).await;
                answers.push(format!("{method}: {answer:?}"));
            }
            Ok(ToolResult::text(answers.join("\n")))
        }
    });
    let offer = Offer { provider: "p".into(), name: "ask".into(), definition: definition("ask", "asks"), tool };
    match setup.guard.admit(offer) {
        Admission::Offered(tool) => tool,
        _ => panic!("the tool is reviewed and allowed"),
    }
}

fn setup(policy: &str) -> Setup {
    let source = Source::new("p", vec![definition("ask", "asks")]);
    let policy = format!("[providers.p]\n{policy}\n[providers.p.tools]\nask = \"allow\"\n");
    Setup::with_policy(
        tempfile::tempdir().unwrap(),
        &policy,
        &[(&source, definition("ask", "asks"))],
        Arc::new(Unattended),
        None,
    )
}

fn inputs(setup: &Setup) -> Vec<String> {
    setup
        .records()
        .iter()
        .filter(|r| r["event"] == "input")
        .map(|r| format!("{}: {}", r["method"].as_str().unwrap(), r["outcome"].as_str().unwrap()))
        .collect()
}

const SAMPLE: (&str, &str) = (
    "sampling/createMessage",
    r#"{"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 10}"#,
);

fn sample() -> (&'static str, Value) {
    (SAMPLE.0, serde_json::from_str(SAMPLE.1).unwrap())
}

#[tokio::test]
async fn roots_come_from_the_policy_and_sampling_is_refused_by_default() {
    let setup = setup("roots = [\"file:///srv/shared\"]");
    let tool = asking_tool(&setup, vec![("roots/list", json!({})), sample()]);
    let caller = Arc::new(Caller::default());
    let context = CallContext { input: Some(Arc::clone(&caller) as Arc<dyn Input>), ..CallContext::default() };
    let result = wasmgate_core::CallContext::scope(context, tool.execute(json!({}), CancellationToken::new())).await;
    let text = result.unwrap().content;
    assert!(
        text.contains(r#"roots/list: Ok(Object {"roots": Array [Object {"uri": String("file:///srv/shared")}]})"#),
        "{text}"
    );
    assert!(text.contains("sampling/createMessage: Err(Declined(\"the policy does not let this provider"), "{text}");
    assert!(caller.asked.lock().unwrap().is_empty(), "the caller was asked nothing");
    assert_eq!(
        inputs(&setup),
        [
            "roots/list: answered by the gateway: 1 roots from the policy",
            "sampling/createMessage: declined: the policy does not let this provider ask the client's model (sampling)",
        ]
    );
}

#[tokio::test]
async fn sampling_under_ask_goes_to_the_approver_and_nobody_means_no() {
    let setup = setup("sampling = \"ask\"");
    let tool = asking_tool(&setup, vec![sample()]);
    let caller = Arc::new(Caller::default());
    let context = CallContext { input: Some(Arc::clone(&caller) as Arc<dyn Input>), ..CallContext::default() };
    let result = wasmgate_core::CallContext::scope(context, tool.execute(json!({}), CancellationToken::new())).await;
    assert!(result.unwrap().content.contains("sampling was not approved"));
    assert!(caller.asked.lock().unwrap().is_empty());
    let records = setup.records();
    assert!(records.iter().any(|r| r["event"] == "approval" && r["approved"] == false), "{records:?}");
}

#[tokio::test]
async fn with_nobody_behind_the_call_every_request_is_declined_and_recorded() {
    let setup = setup("sampling = \"allow\"");
    let tool = asking_tool(&setup, vec![("elicitation/create", json!({"message": "Your name?"})), sample()]);
    let text = tool.execute(json!({}), CancellationToken::new()).await.unwrap().content;
    assert!(text.contains("elicitation/create: Err(Declined(\"nobody behind this call can be asked\"))"), "{text}");
    assert_eq!(
        inputs(&setup),
        [
            "elicitation/create: declined: nobody behind this call can be asked",
            "sampling/createMessage: declined: nobody behind this call can be asked",
        ]
    );
}

#[tokio::test]
async fn a_question_reaches_the_caller_named_after_the_provider_and_cleaned() {
    let setup = setup("");
    let tool = asking_tool(&setup, vec![("elicitation/create", json!({"message": "Your name?\u{200b}"}))]);
    let caller = Arc::new(Caller::default());
    let context = CallContext { input: Some(Arc::clone(&caller) as Arc<dyn Input>), ..CallContext::default() };
    wasmgate_core::CallContext::scope(context, tool.execute(json!({}), CancellationToken::new())).await.unwrap();
    assert_eq!(caller.asked.lock().unwrap()[0].1["message"], "[p] Your name?");
    assert_eq!(inputs(&setup), ["elicitation/create: answered"]);
}

/// A guarded tool of provider `p` that reports, per method, why the gateway withholds it
/// (what a provider's -32021 is checked against).
fn withholding_tool(setup: &Setup) -> Tool {
    let spec = ToolSpec { name: "p__ask".into(), description: "asks".into(), input_schema: json!({"type": "object"}) };
    let tool = Tool::from_fn(spec, move |_, _| async move {
        let input = wasmgate_core::CallContext::current().input.expect("the guard always offers one");
        let lines: Vec<String> = ["roots/list", "sampling/createMessage", "elicitation/create"]
            .iter()
            .map(|method| format!("{method}: {:?}", input.withheld(method)))
            .collect();
        Ok(ToolResult::text(lines.join("\n")))
    });
    let offer = Offer { provider: "p".into(), name: "ask".into(), definition: definition("ask", "asks"), tool };
    match setup.guard.admit(offer) {
        Admission::Offered(tool) => tool,
        _ => panic!("the tool is reviewed and allowed"),
    }
}

#[tokio::test]
async fn the_policy_names_what_it_withholds_and_leaves_the_rest_to_the_caller() {
    let default = setup("");
    let text = withholding_tool(&default).execute(json!({}), CancellationToken::new()).await.unwrap().content;
    assert!(
        text.contains(
            "roots/list: Some(\"the policy lists no roots for this provider (roots = [...])\")\n\
             sampling/createMessage: Some(\"the policy denies this provider sampling (sampling = \\\"deny\\\")\")\n\
             elicitation/create: None\n"
        ),
        "{text}"
    );
    let granted = setup("sampling = \"ask\"\nroots = [\"file:///srv\"]");
    let text = withholding_tool(&granted).execute(json!({}), CancellationToken::new()).await.unwrap().content;
    assert!(text.contains("roots/list: None\nsampling/createMessage: None\nelicitation/create: None\n"), "{text}");
}
