//! The process-wide count of requests awaiting an answer (`awaiting_answers`), which
//! `wasmgate serve` reads before it spins: it counts a request from when it is sent
//! until it ends, however it ends. A binary of its own, because the count is the
//! process's: another test's requests would move it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{connected, expect_notification, expect_request, text_args, text_result};
use wasmgate_client::{ClientConfig, ClientError, awaiting_answers};
use wasmgate_core::CancellationToken;

#[tokio::test(start_paused = true)]
async fn a_request_is_awaited_from_its_send_until_it_ends_however_it_ends() {
    let config = ClientConfig { call_timeout: Duration::from_secs(30), ..ClientConfig::default() };
    let (client, mut server) = connected(config).await;
    assert_eq!(awaiting_answers(), 0, "the handshake's requests were answered");

    // Answered.
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool("echo", text_args("a"), CancellationToken::new()).await });
    let (id, _) = expect_request(&mut server, "tools/call").await;
    assert_eq!(awaiting_answers(), 1);
    server.respond(&id, text_result("a", false)).await;
    call.await.unwrap().unwrap();
    assert_eq!(awaiting_answers(), 0);

    // Cancelled by the caller.
    let (caller, cancel) = (client.clone(), CancellationToken::new());
    let token = cancel.clone();
    let call = tokio::spawn(async move { caller.call_tool("slow", text_args(""), token).await });
    expect_request(&mut server, "tools/call").await;
    assert_eq!(awaiting_answers(), 1);
    cancel.cancel();
    assert_eq!(call.await.unwrap().unwrap_err(), ClientError::Cancelled);
    assert_eq!(awaiting_answers(), 0);
    expect_notification(&mut server, "notifications/cancelled").await;

    // Timed out.
    let caller = client.clone();
    let call = tokio::spawn(async move { caller.call_tool("slow", text_args(""), CancellationToken::new()).await });
    expect_request(&mut server, "tools/call").await;
    assert_eq!(awaiting_answers(), 1);
    assert!(matches!(call.await.unwrap(), Err(ClientError::Timeout { .. })));
    assert_eq!(awaiting_answers(), 0);
    expect_notification(&mut server, "notifications/cancelled").await;

    // The server gone while two wait.
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let caller = client.clone();
            tokio::spawn(async move { caller.call_tool("slow", text_args(""), CancellationToken::new()).await })
        })
        .collect();
    for _ in 0..2 {
        expect_request(&mut server, "tools/call").await;
    }
    assert_eq!(awaiting_answers(), 2);
    drop(server);
    for call in calls {
        assert!(call.await.unwrap().is_err());
    }
    assert_eq!(awaiting_answers(), 0);
}
