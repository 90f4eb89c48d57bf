//! Progress: a call whose client sent a progress token gets the tool's updates as
//! `notifications/progress` under that token, before its answer, over stdio and over
//! HTTP (as an SSE response), in both eras. Without a token, nothing is sent.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};

use serde_json::{Map, Value, json};
use wasmgate_client::{CallOptions, McpClient, ProgressFn};
use wasmgate_core::{CallContext, CancellationToken, Progress, Tool, ToolResult, ToolSpec};
use wasmgate_protocol::ProtocolVersion;
use wasmgate_server::{HttpConfig, ToolsBackend};

use common::{Http, Stdio, bounded, config, stamped, stdio_client};

/// `steps` reports progress 1..=3 of 3 when its caller wants it, then answers.
fn backend() -> ToolsBackend {
    let spec = ToolSpec {
        name: "steps".into(),
        description: "Reports progress".into(),
        input_schema: json!({"type": "object"}),
    };
    ToolsBackend::new(vec![Tool::from_fn(spec, |_, _| async {
        let wanted = CallContext::current().progress;
        if let Some(sink) = &wanted {
            for step in 1..=3 {
                sink(Progress { progress: f64::from(step), total: Some(3.0), message: Some(format!("step {step}")) });
            }
        }
        Ok(ToolResult::text(if wanted.is_some() { "done with progress" } else { "done" }))
    })])
}

/// Calls `steps` with a progress callback; the updates seen and the result text.
async fn call_with_progress(client: &McpClient) -> (Vec<(f64, Option<String>)>, String) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let progress: ProgressFn =
        Arc::new(move |p: wasmgate_client::Progress| log.lock().unwrap().push((p.progress, p.message)));
    let options = CallOptions { progress: Some(progress), ..CallOptions::default() };
    let result = bounded("the call", client.call_tool_with("steps", Map::new(), CancellationToken::new(), options))
        .await
        .unwrap();
    let text = result.content.iter().filter_map(|b| b.text()).collect();
    let seen = seen.lock().unwrap().clone();
    (seen, text)
}

fn expected() -> Vec<(f64, Option<String>)> {
    (1..=3).map(|s| (f64::from(s), Some(format!("step {s}")))).collect()
}

#[tokio::test]
async fn progress_reaches_a_stdio_client_before_the_answer_in_both_eras() {
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let (client, _bridge) = stdio_client(backend(), &[version]).await;
        let (seen, text) = call_with_progress(&client).await;
        assert_eq!(seen, expected(), "{version}");
        assert_eq!(text, "done with progress");
    }
}

#[tokio::test]
async fn progress_reaches_an_http_client_on_the_calls_stream_in_both_eras() {
    let http = Http::start(backend(), config(), HttpConfig::default()).await;
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let client = wasmgate_testing::http_client(&http.url, &[version], None).await;
        let (seen, text) = call_with_progress(&client).await;
        assert_eq!(seen, expected(), "{version}");
        assert_eq!(text, "done with progress");
    }
}

#[tokio::test]
async fn without_a_token_no_progress_is_sent_and_a_bad_token_is_refused() {
    let mut server = Stdio::start(backend(), config());
    let answer = server.ask(stamped(1, "tools/call", json!({"name": "steps"}))).await;
    assert_eq!(answer["result"]["content"][0]["text"], "done", "the tool saw no sink: {answer}");
    let mut request = stamped(2, "tools/call", json!({"name": "steps"}));
    request["params"]["_meta"]["progressToken"] = json!("t1");
    server.send(request).await;
    for step in 1..=3 {
        let note: Value = server.recv().await;
        assert_eq!(note["method"], "notifications/progress", "{note}");
        assert_eq!(note["params"]["progressToken"], "t1");
        assert_eq!(note["params"]["progress"], json!(f64::from(step)));
    }
    assert_eq!(server.recv().await["result"]["content"][0]["text"], "done with progress");
    let mut bad = stamped(3, "tools/call", json!({"name": "steps"}));
    bad["params"]["_meta"]["progressToken"] = json!(1.5);
    let refused = server.ask(bad).await;
    assert_eq!(refused["error"]["code"], -32602, "a token must be a string or an integer: {refused}");
}
