//! Asking the client's user: `input_required` with a signed `requestState` on
//! 2026-07-28, `elicitation/create` in the middle of a handshake-era stdio call, and
//! nothing for a client that cannot elicit.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use serde_json::{Value, json};
use wasmgate_core::{CallContext, Tool, ToolResult, ToolSpec};
use wasmgate_server::{ServerConfig, ToolsBackend};

use common::{Stdio, config, initialize, plain};

/// `guarded` asks to be confirmed and says what it heard.
fn backend() -> ToolsBackend {
    let spec =
        ToolSpec { name: "guarded".into(), description: "Asks first".into(), input_schema: json!({"type": "object"}) };
    ToolsBackend::new(vec![Tool::from_fn(spec, |_, _| async {
        let answer = match CallContext::current().ask {
            Some(ask) => ask.confirm("Allow this call?".into(), true).await,
            None => return Ok(ToolResult::text("nobody to ask")),
        };
        Ok(ToolResult::text(format!("{answer:?}")))
    })])
}

/// A 2026-07-28 call of `guarded`, its client declaring `capabilities`.
fn call(id: i64, capabilities: Value, extra: Value) -> Value {
    let mut params = json!({"name": "guarded", "arguments": {"n": 1}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    }});
    for (key, value) in extra.as_object().unwrap() {
        params[key] = value.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap_or_else(|| panic!("a text result: {answer}"))
}

fn accept(approve: bool) -> Value {
    json!({"approval": {"action": "accept", "content": {"approve": approve}}})
}

#[tokio::test]
async fn a_stateless_call_asks_by_input_required_and_its_state_is_spent_once() {
    let mut server = Stdio::start(backend(), config());
    let first = server.ask(call(1, json!({"elicitation": {}}), json!({}))).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    assert_eq!(result["inputRequests"]["approval"]["method"], "elicitation/create");
    assert_eq!(result["inputRequests"]["approval"]["params"]["message"], "Allow this call?");
    let schema = &result["inputRequests"]["approval"]["params"]["requestedSchema"];
    assert_eq!(schema["required"], json!(["approve"]));
    let state = result["requestState"].as_str().unwrap().to_owned();

    let retry = json!({"inputResponses": accept(true), "requestState": state});
    assert_eq!(text(&server.ask(call(2, json!({"elicitation": {}}), retry.clone())).await), "Yes");
    let replay = server.ask(call(3, json!({"elicitation": {}}), retry)).await;
    assert_eq!(replay["error"]["code"], -32602, "{replay}");
    assert!(replay["error"]["message"].as_str().unwrap().contains("used already"));

    let again = server.ask(call(4, json!({"elicitation": {}}), json!({}))).await;
    let state = again["result"]["requestState"].as_str().unwrap().to_owned();
    let declined = json!({"inputResponses": {"approval": {"action": "decline"}}, "requestState": state});
    assert_eq!(text(&server.ask(call(5, json!({"elicitation": {}}), declined)).await), "No");
}

#[tokio::test]
async fn a_state_for_other_arguments_or_tampered_with_is_refused_before_the_call_runs() {
    let mut server = Stdio::start(backend(), config());
    let first = server.ask(call(1, json!({"elicitation": {}}), json!({}))).await;
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let mut other = call(2, json!({"elicitation": {}}), json!({"inputResponses": accept(true), "requestState": state}));
    other["params"]["arguments"] = json!({"n": 2});
    let refused = server.ask(other).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert!(refused["error"]["message"].as_str().unwrap().contains("not issued for this call"));
    // The last character changed, whatever it was (always writing "0" left one state in
    // sixteen untouched).
    let last = if state.ends_with('0') { '1' } else { '0' };
    let forged =
        json!({"inputResponses": accept(true), "requestState": format!("{}{last}", &state[..state.len() - 1])});
    let refused = server.ask(call(3, json!({"elicitation": {}}), forged)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

#[tokio::test]
async fn a_client_that_cannot_elicit_is_not_asked() {
    let mut server = Stdio::start(backend(), config());
    assert_eq!(text(&server.ask(call(1, json!({}), json!({}))).await), "nobody to ask");
    server.ask(initialize(2, "2025-11-25")).await;
    assert_eq!(text(&server.ask(plain(3, "tools/call", json!({"name": "guarded"}))).await), "nobody to ask");
}

/// A handshake-era stdio connection whose client declared elicitation.
async fn eliciting(config: ServerConfig) -> Stdio {
    let mut server = Stdio::start(backend(), config);
    let mut init = initialize(1, "2025-11-25");
    init["params"]["capabilities"] = json!({"elicitation": {}});
    server.ask(init).await;
    server.send(plain(2, "tools/call", json!({"name": "guarded"}))).await;
    server
}

#[tokio::test]
async fn a_handshake_call_asks_by_elicitation_while_it_waits() {
    for (reply, heard) in [
        (json!({"result": {"action": "accept", "content": {"approve": true}}}), "Yes"),
        (json!({"result": {"action": "cancel"}}), "No"),
        (json!({"error": {"code": -32601, "message": "no"}}), "No"),
    ] {
        let mut server = eliciting(config()).await;
        let request = server.recv().await;
        assert_eq!(request["method"], "elicitation/create", "{request}");
        assert_eq!(request["params"]["message"], "Allow this call?");
        let mut response = json!({"jsonrpc": "2.0", "id": request["id"]});
        for (key, value) in reply.as_object().unwrap() {
            response[key] = value.clone();
        }
        server.send(response).await;
        assert_eq!(text(&server.recv().await), heard, "{reply}");
    }
}

#[tokio::test]
async fn an_unanswered_elicitation_is_no_after_the_timeout() {
    let mut server = eliciting(ServerConfig { ask_timeout: Duration::from_millis(50), ..config() }).await;
    assert_eq!(server.recv().await["method"], "elicitation/create");
    assert_eq!(text(&server.recv().await), "No");
}

#[tokio::test]
async fn an_approved_stateless_retry_approves_the_call_but_not_the_release_of_its_flagged_result() {
    // Like a guarded call whose result is then flagged as possible injection: the
    // user's approval of the call must not also release the result.
    let spec = ToolSpec { name: "guarded".into(), description: "Asks twice".into(), input_schema: json!({}) };
    let backend = ToolsBackend::new(vec![Tool::from_fn(spec, |_, _| async {
        let Some(ask) = CallContext::current().ask else { return Ok(ToolResult::text("nobody to ask")) };
        let run = ask.confirm("Allow this call?".into(), true).await;
        let release = ask.confirm("Show its flagged result?".into(), false).await;
        Ok(ToolResult::text(format!("{run:?} {release:?}")))
    })]);
    let mut server = Stdio::start(backend, config());
    let first = server.ask(call(1, json!({"elicitation": {}}), json!({}))).await;
    assert_eq!(first["result"]["inputRequests"]["approval"]["params"]["message"], "Allow this call?", "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let retry = json!({"inputResponses": accept(true), "requestState": state});
    assert_eq!(text(&server.ask(call(2, json!({"elicitation": {}}), retry)).await), "Yes No");
}
