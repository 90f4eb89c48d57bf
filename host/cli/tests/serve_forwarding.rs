//! Resources, resource templates, prompts and completion forwarded by `wasmgate serve`
//! from an upstream MCP server (tests/fixtures/conformance_upstream.py, spawned confined),
//! as a stock client (ours, over stdio) sees them: deny unless the policy allows,
//! names prefixed, text framed, every read audited.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{python, stderr, wasmgate};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};

use wasmgate_client::{CallOptions, ClientConfig, ClientError, McpClient, ProgressFn, StdioConfig, StdioTransport};
use wasmgate_core::{CancellationToken, CompletionRequest, Contents};

/// A gateway fronting the fixture with `policy_extra` added to its provider's policy.
fn gateway(policy_extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").canonicalize().unwrap();
    let (python, dirs) = python();
    let config = format!(
        "state_dir = \"state\"\n\n[providers.up]\ncommand = {python:?}\nargs = [{upstream:?}]\nread_exec = {dirs:?}\n",
        python = python.display().to_string(),
        upstream = fixtures.join("conformance_upstream.py").display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let policy = format!(
        "[providers.up]\nread_paths = [{:?}]\n{policy_extra}\n[providers.up.tools]\ntest_simple_text = \"allow\"\n\
         test_tool_with_progress = \"allow\"\n",
        fixtures.display().to_string()
    );
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

async fn serve(dir: &Path) -> McpClient {
    let server = StdioConfig::new("wasmgate", env!("CARGO_BIN_EXE_wasmgate"), dir)
        .arg("serve")
        .env("WASMGATE_CONFIG", dir.join("wasmgate.toml"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .confinement(None);
    McpClient::connect("wasmgate", StdioTransport::spawn(&server).unwrap(), ClientConfig::default()).await.unwrap()
}

fn rpc_code(error: &ClientError) -> i64 {
    match error {
        ClientError::Rpc { code, .. } => *code,
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
}

fn audit_lines(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("state/audit.jsonl")).unwrap();
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[tokio::test]
async fn allowed_resources_are_listed_read_framed_and_audited() {
    let dir = gateway("resources = [\"test://static-*\", \"test://template/*\"]\n");
    let client = serve(dir.path()).await;
    assert!(client.server_capabilities().contains_key("resources"), "{:?}", client.server_capabilities());
    assert!(!client.server_capabilities().contains_key("prompts"), "no `prompts` globs: no prompts capability");

    let resources = client.list_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary"], "only URIs the globs allow");
    assert!(resources.iter().all(|r| r.name.starts_with("up__")), "names are prefixed: {resources:?}");
    let templates = client.list_resource_templates().await.unwrap();
    assert_eq!(templates.len(), 1);
    assert_eq!(templates[0].uri_template, "test://template/{id}/data");

    let read = client.read_resource("test://static-text", CancellationToken::new()).await.unwrap();
    let Contents::Text { text, .. } = &read.contents[0] else { panic!("text expected: {read:?}") };
    assert!(text.contains("<untrusted-data boundary="), "resource text is framed: {text}");
    assert!(text.contains("This is the content of the static text resource."), "{text}");

    let binary = client.read_resource("test://static-binary", CancellationToken::new()).await.unwrap();
    assert!(matches!(&binary.contents[0], Contents::Blob { mime_type: Some(m), .. } if m == "image/png"));

    let templated = client.read_resource("test://template/42/data", CancellationToken::new()).await.unwrap();
    let Contents::Text { text, .. } = &templated.contents[0] else { panic!("{templated:?}") };
    assert!(text.contains("Data for ID: 42"), "{text}");

    let denied = client.read_resource("test://other", CancellationToken::new()).await.unwrap_err();
    assert_eq!(rpc_code(&denied), -32602, "a URI the policy does not allow is not found: {denied}");
    let climbing = client.read_resource("test://template/%2e%2e/static-text", CancellationToken::new()).await;
    let climbing = climbing.unwrap_err();
    assert_eq!(rpc_code(&climbing), -32602, "{climbing}");
    assert!(climbing.to_string().contains("`..` path segment"), "the refusal says why: {climbing}");
    let missing = client.read_resource("test://static-nothing", CancellationToken::new()).await.unwrap_err();
    assert_eq!(rpc_code(&missing), -32602, "allowed, but the upstream has none: {missing}");
    client.close().await;

    let reads: Vec<Value> = audit_lines(dir.path()).into_iter().filter(|l| l["tool"] == "resources/read").collect();
    let events: Vec<&str> = reads.iter().filter_map(|l| l["event"].as_str()).collect();
    assert_eq!(events.iter().filter(|e| **e == "started").count(), 4, "one started record per routed read: {reads:?}");
    assert_eq!(events.iter().filter(|e| **e == "finished").count(), 3, "{reads:?}");
    assert_eq!(events.iter().filter(|e| **e == "failed").count(), 1, "{reads:?}");
    assert!(reads.iter().any(|l| l["arguments"]["uri"] == "test://template/42/data"));
    let verify =
        wasmgate(dir.path(), &["audit", "verify", &dir.path().join("state/audit.jsonl").display().to_string()]);
    assert!(verify.status.success(), "{}", stderr(&verify));
}

#[tokio::test]
async fn allowed_prompts_are_listed_fetched_and_framed_and_others_are_unknown() {
    let dir = gateway("prompts = [\"test_simple_prompt\", \"test_prompt_with_*\"]\n");
    let client = serve(dir.path()).await;
    assert!(!client.server_capabilities().contains_key("resources"));
    let prompts = client.list_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "up__test_simple_prompt",
            "up__test_prompt_with_arguments",
            "up__test_prompt_with_embedded_resource",
            "up__test_prompt_with_image"
        ]
    );
    let with_args = &prompts[1];
    assert_eq!(with_args.arguments.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["arg1", "arg2"]);

    let mut arguments = Map::new();
    arguments.insert("arg1".into(), json!("one"));
    arguments.insert("arg2".into(), json!("two"));
    let got = client.get_prompt("up__test_prompt_with_arguments", arguments, CancellationToken::new()).await.unwrap();
    let text = got.prompt.messages[0].content["text"].as_str().unwrap();
    assert!(text.contains("<untrusted-data boundary=") && text.contains("arg1='one'"), "{text}");

    let image = client.get_prompt("up__test_prompt_with_image", Map::new(), CancellationToken::new()).await.unwrap();
    assert_eq!(image.prompt.messages[0].content["type"], "image", "images pass as sent: {:?}", image.prompt.messages);
    assert_eq!(image.prompt.messages[0].content["mimeType"], "image/png");

    for name in ["test_simple_prompt", "other__test_simple_prompt", "up__missing"] {
        let unknown = client.get_prompt(name, Map::new(), CancellationToken::new()).await.unwrap_err();
        assert_eq!(rpc_code(&unknown), -32602, "{name}: {unknown}");
    }

    let request = CompletionRequest {
        reference: json!({"type": "ref/prompt", "name": "up__test_prompt_with_arguments"}),
        argument_name: "arg1".into(),
        argument_value: "o".into(),
        context_arguments: None,
    };
    let completion = client.complete(request, CancellationToken::new()).await.unwrap();
    assert!(completion.values.is_empty(), "the fixture completes nothing: {completion:?}");
    let request = CompletionRequest {
        reference: json!({"type": "ref/prompt", "name": "up__not_allowed"}),
        argument_name: "a".into(),
        argument_value: String::new(),
        context_arguments: None,
    };
    let refused = client.complete(request, CancellationToken::new()).await.unwrap_err();
    assert_eq!(rpc_code(&refused), -32602, "{refused}");
    client.close().await;
}

#[tokio::test]
async fn without_resource_or_prompt_globs_nothing_but_tools_is_served() {
    let dir = gateway("");
    let client = serve(dir.path()).await;
    let caps = client.server_capabilities();
    assert!(caps.contains_key("tools") && !caps.contains_key("resources") && !caps.contains_key("prompts"), "{caps:?}");
    assert!(!caps.contains_key("completions"), "{caps:?}");
    client.close().await;
}

#[tokio::test]
async fn upstream_progress_reaches_the_client_through_the_whole_pipeline() {
    let dir = gateway("");
    let client = serve(dir.path()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let progress: ProgressFn =
        Arc::new(move |p: wasmgate_client::Progress| log.lock().unwrap().push((p.progress, p.total)));
    let options = CallOptions { progress: Some(progress), ..CallOptions::default() };
    let result = client
        .call_tool_with("up__test_tool_with_progress", Map::new(), CancellationToken::new(), options)
        .await
        .unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(*seen.lock().unwrap(), [(0.0, Some(100.0)), (50.0, Some(100.0)), (100.0, Some(100.0))]);
    client.close().await;
}
