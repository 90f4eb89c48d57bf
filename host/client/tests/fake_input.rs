//! `input_required` (2026-07-28 multi round-trip requests) against a scripted fake
//! server: answered by a handler and retried under a new id, bounded in rounds, and a
//! clear `Unsupported` error (never an empty result) when nobody can answer.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{connected, expect_request, text_args, text_result};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, ClientError, InputDeclined, InputHandler, InputRequest};
use wasmgate_core::{BoxFuture, CancellationToken};
use wasmgate_protocol::ContentBlock;

/// Accepts every elicitation with `{"confirm": true}`; declines everything else.
#[derive(Debug)]
struct Confirmer;

impl InputHandler for Confirmer {
    fn answer(&self, request: InputRequest) -> BoxFuture<'_, Result<Value, InputDeclined>> {
        Box::pin(async move {
            match request.method.as_str() {
                "elicitation/create" => Ok(json!({"action": "accept", "content": {"confirm": true}})),
                _ => Err(InputDeclined::Unsupported),
            }
        })
    }
}

fn input_required(method: &str, state: &str) -> Value {
    json!({"resultType": "input_required", "requestState": state,
           "inputRequests": {"ask": {"method": method, "params": {"message": "Delete it?"}}}})
}

fn with_handler() -> ClientConfig {
    ClientConfig { input_handler: Some(Arc::new(Confirmer)), ..ClientConfig::default() }
}

#[tokio::test]
async fn input_required_is_answered_and_retried_under_a_new_id_with_the_state() {
    let (client, mut server) = connected(with_handler()).await;
    let call = tokio::spawn(async move { client.call_tool("delete", text_args("e1"), CancellationToken::new()).await });
    let (first, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&first, input_required("elicitation/create", "opaque-1")).await;
    let (retry, params) = expect_request(&mut server, "tools/call").await;
    assert_ne!(retry, first, "a retry is a new request");
    assert_eq!(params["name"], "delete");
    assert_eq!(params["arguments"], json!({"text": "e1"}));
    assert_eq!(params["requestState"], "opaque-1");
    assert_eq!(params["inputResponses"], json!({"ask": {"action": "accept", "content": {"confirm": true}}}));
    server.respond(&retry, text_result("deleted", false)).await;
    let result = call.await.unwrap().unwrap();
    assert_eq!(result.content.first().and_then(ContentBlock::text), Some("deleted"));
}

#[tokio::test]
async fn input_required_without_a_handler_is_unsupported_not_an_empty_result() {
    let (client, mut server) = connected(ClientConfig::default()).await;
    let call = tokio::spawn(async move { client.call_tool("delete", text_args("e1"), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&id, input_required("elicitation/create", "s")).await;
    match call.await.unwrap() {
        Err(ClientError::Unsupported(why)) => {
            assert!(why.contains("elicitation/create") && why.contains("no input handler"), "{why}");
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_the_handler_declines_is_unsupported() {
    let (client, mut server) = connected(with_handler()).await;
    let call = tokio::spawn(async move { client.call_tool("draft", text_args(""), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    server.respond(&id, input_required("sampling/createMessage", "s")).await;
    assert!(
        matches!(call.await.unwrap(), Err(ClientError::Unsupported(why)) if why.contains("sampling/createMessage"))
    );
}

#[tokio::test]
async fn a_server_that_keeps_asking_is_cut_off_after_the_round_limit() {
    let config = ClientConfig { max_input_rounds: 2, ..with_handler() };
    let (client, mut server) = connected(config).await;
    let call = tokio::spawn(async move { client.call_tool("ask", text_args(""), CancellationToken::new()).await });
    for round in 0..3 {
        let (id, _) = expect_request(&mut server, "tools/call").await;
        server.respond(&id, input_required("elicitation/create", &format!("s{round}"))).await;
    }
    assert_eq!(call.await.unwrap(), Err(ClientError::LimitExceeded { what: "input_required rounds".into(), limit: 2 }));
}

#[tokio::test]
async fn an_elicitation_request_from_a_handshake_era_server_goes_to_the_handler() {
    let (_client, mut server) = connected(with_handler()).await;
    server.send(json!({"jsonrpc": "2.0", "id": 7, "method": "elicitation/create", "params": {"message": "ok?"}})).await;
    let answer = server.recv().await.unwrap();
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["result"], json!({"action": "accept", "content": {"confirm": true}}));
}
