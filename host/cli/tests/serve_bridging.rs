//! A provider's own requests for input, carried by `wasmgate serve` to the client that
//! made the call, under the policy, in both eras: a 2026-07-28 client answers them
//! through `input_required` rounds (the gateway signs the round, the provider's state
//! inside), a handshake-era client live, in the middle of the call. The provider is
//! tests/fixtures/conformance_upstream.py (it asks through `input_required`); the client
//! is ours, answering as a person and a model would.
//!
//! What each test holds: the question reaches the client named after the provider and
//! cleaned; sampling is framed and capped, and refused under the default policy; roots
//! come from the policy, never from the client; log messages reach the client cleaned;
//! every request is in the audit log; the provider's resource and prompt list changes
//! reach the client.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{python, serve_stdio, stderr, wasmgate};
use serde_json::{Map, Value, json};
use wasmgate_client::{
    CallOptions, ClientConfig, InputDeclined, InputHandler, InputRequest, LogFn, McpClient, StdioTransport,
};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::{CallToolResult, ProtocolVersion};

const TOOLS: [&str; 8] = [
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_multi_round",
    "test_tool_with_logging",
    "test_announce_list_changes",
    "test_missing_capability",
    "test_update_resource",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").canonicalize().unwrap()
}

/// A reviewed gateway whose provider `up` is the fixture, with `extra` in its policy.
fn gateway(extra: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let (python, dirs) = python();
    let config = format!(
        "state_dir = \"state\"\n\n[providers.up]\ncommand = {python:?}\nargs = [{upstream:?}]\nread_exec = {dirs:?}\n",
        python = python.display().to_string(),
        upstream = fixtures().join("conformance_upstream.py").display().to_string(),
        dirs = dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    );
    std::fs::write(dir.path().join("wasmgate.toml"), config).unwrap();
    let mut policy = format!(
        "[providers.up]\nread_paths = [{:?}]\n{extra}\n[providers.up.tools]\n",
        fixtures().display().to_string()
    );
    for tool in TOOLS {
        policy.push_str(&format!("{tool} = \"allow\"\n"));
    }
    std::fs::write(dir.path().join("policy.toml"), policy).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

/// Answers as a person (elicitation: the name Alice) and a model (sampling: Paris),
/// and keeps what it was asked.
#[derive(Debug, Default)]
struct Answers {
    asked: Mutex<Vec<(String, Value)>>,
}

impl InputHandler for Answers {
    fn answer(&self, request: InputRequest) -> wasmgate_core::BoxFuture<'_, Result<Value, InputDeclined>> {
        let params = Value::Object(request.params.clone().unwrap_or_default());
        self.asked.lock().unwrap().push((request.method.clone(), params));
        let answer = match request.method.as_str() {
            "elicitation/create" => Ok(json!({"action": "accept", "content": {"name": "Alice", "context": "tests"}})),
            "sampling/createMessage" => Ok(json!({"role": "assistant", "model": "test-model",
                "content": {"type": "text", "text": "Paris"}, "stopReason": "endTurn"})),
            _ => Err(InputDeclined::Unsupported),
        };
        Box::pin(std::future::ready(answer))
    }
}

impl Answers {
    fn asked(&self, method: &str) -> Vec<Value> {
        self.asked.lock().unwrap().iter().filter(|(m, _)| m == method).map(|(_, p)| p.clone()).collect()
    }
}

/// Our client over stdio `wasmgate serve`, speaking `version`, able to elicit and sample.
async fn client(dir: &Path, version: ProtocolVersion, answers: Arc<Answers>) -> McpClient {
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    capabilities.insert("sampling".into(), json!({}));
    capabilities.insert("roots".into(), json!({}));
    let config = ClientConfig {
        versions: vec![version],
        capabilities,
        input_handler: Some(answers as Arc<dyn InputHandler>),
        ..ClientConfig::default()
    };
    let server = serve_stdio(dir);
    McpClient::connect("wasmgate", StdioTransport::spawn(&server).unwrap(), config).await.unwrap()
}

async fn call(client: &McpClient, tool: &str) -> CallToolResult {
    client.call_tool(&format!("up__{tool}"), Map::new(), CancellationToken::new()).await.unwrap()
}

fn text(result: &CallToolResult) -> String {
    result.content.iter().filter_map(|b| b.text()).collect()
}

/// The `input` records of the audit log, as `method: outcome`.
fn input_records(dir: &Path) -> Vec<String> {
    std::fs::read_to_string(dir.join("state/audit.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["event"] == "input")
        .map(|record| format!("{}: {}", record["method"].as_str().unwrap(), record["outcome"].as_str().unwrap()))
        .collect()
}

#[tokio::test]
async fn questions_sampling_and_roots_are_carried_under_the_policy_in_both_eras() {
    let policy = "sampling = \"allow\"\nsampling_max_tokens = 40\nroots = [\"file:///srv/shared\"]\n";
    for (version, carried) in
        [(ProtocolVersion::V2026_07_28, "put off to the client"), (ProtocolVersion::V2025_11_25, "answered")]
    {
        let dir = gateway(policy);
        let answers = Arc::new(Answers::default());
        let client = client(dir.path(), version, Arc::clone(&answers)).await;

        let hello = call(&client, "test_input_required_result_elicitation").await;
        assert!(!hello.is_error && text(&hello).contains("Hello, Alice!"), "{version}: {}", text(&hello));
        let asked = answers.asked("elicitation/create");
        assert_eq!(asked.len(), 1, "{version}: {asked:?}");
        assert_eq!(asked[0]["message"], "[up] What is your name?", "named after the provider");

        let two = call(&client, "test_input_required_result_multi_round").await;
        assert!(text(&two).contains("multi-round complete"), "{version}: {}", text(&two));

        let capital = call(&client, "test_input_required_result_sampling").await;
        assert!(text(&capital).contains("Paris"), "{version}: {}", text(&capital));
        let sampled = answers.asked("sampling/createMessage");
        assert_eq!(sampled.len(), 1, "{version}: {sampled:?}");
        let prompt = sampled[0]["messages"][0]["content"]["text"].as_str().unwrap();
        assert!(prompt.starts_with("<untrusted-data boundary=") && prompt.contains("What is the capital of France?"));
        assert_eq!(sampled[0]["maxTokens"], 40, "cut to sampling_max_tokens");
        assert_eq!(sampled[0]["includeContext"], "none");

        let roots = call(&client, "test_input_required_result_list_roots").await;
        assert!(text(&roots).contains("Roots: file:///srv/shared"), "{version}: {}", text(&roots));
        assert!(answers.asked("roots/list").is_empty(), "the client's own roots are never asked for");
        client.close().await;

        let records = input_records(dir.path());
        for expected in [
            format!("elicitation/create: {carried}"),
            format!("sampling/createMessage: {carried}"),
            "roots/list: answered by the gateway: 1 roots from the policy".to_owned(),
        ] {
            assert!(records.contains(&expected), "{version}: {expected} not in {records:?}");
        }
    }
}

#[tokio::test]
async fn a_prompt_or_a_read_that_needs_input_asks_the_client_in_both_eras() {
    for (version, carried) in
        [(ProtocolVersion::V2026_07_28, "put off to the client"), (ProtocolVersion::V2025_11_25, "answered")]
    {
        let dir = gateway("prompts = [\"*\"]\nresources = [\"test://*\"]\n");
        let answers = Arc::new(Answers::default());
        let client = client(dir.path(), version, Arc::clone(&answers)).await;
        let name = "up__test_input_required_result_prompt";
        let prompt = client.get_prompt(name, Map::new(), CancellationToken::new()).await.unwrap();
        let texts: String = prompt.prompt.messages.iter().filter_map(|m| m.content["text"].as_str()).collect();
        assert!(texts.contains("Prompt with context: tests"), "{version}: {texts}");
        let read = client.read_resource("test://ask-first", CancellationToken::new()).await.unwrap();
        let text = match read.contents.first() {
            Some(wasmgate_core::Contents::Text { text, .. }) => text.clone(),
            other => panic!("{version}: expected text, got {other:?}"),
        };
        assert!(text.contains("Read for Alice"), "{version}: {text}");
        let asked: Vec<Value> = answers.asked("elicitation/create").iter().map(|p| p["message"].clone()).collect();
        assert_eq!(
            asked,
            [json!("[up] What context should the prompt use?"), json!("[up] Who is reading?")],
            "{version}: named after the provider"
        );
        client.close().await;
        let records = input_records(dir.path());
        assert_eq!(records, [format!("elicitation/create: {carried}"), format!("elicitation/create: {carried}")]);
    }
}

#[tokio::test]
async fn sampling_is_refused_by_default_and_the_client_is_never_asked() {
    for version in [ProtocolVersion::V2026_07_28, ProtocolVersion::V2025_11_25] {
        let dir = gateway("");
        let answers = Arc::new(Answers::default());
        let client = client(dir.path(), version, Arc::clone(&answers)).await;
        let refused = client
            .call_tool("up__test_input_required_result_sampling", Map::new(), CancellationToken::new())
            .await
            .unwrap();
        assert!(refused.is_error, "{version}: {}", text(&refused));
        assert!(answers.asked("sampling/createMessage").is_empty(), "{version}");
        client.close().await;
        let records = input_records(dir.path());
        let why = "sampling/createMessage: declined: the policy does not let this provider ask the client's model";
        assert!(records.iter().any(|r| r.starts_with(why)), "{version}: {records:?}");
    }
}

#[tokio::test]
async fn a_capability_the_client_lacks_is_named_and_one_the_policy_withholds_is_refused() {
    let bare = ClientConfig { versions: vec![ProtocolVersion::V2026_07_28], ..ClientConfig::default() };
    let connect = |dir: &Path, config: ClientConfig| {
        McpClient::connect("wasmgate", StdioTransport::spawn(&serve_stdio(dir)).unwrap(), config)
    };
    // The policy grants sampling; the client did not declare it: -32021, naming it.
    let dir = gateway("sampling = \"allow\"\n");
    let lacking = connect(dir.path(), bare).await.unwrap();
    let missing = lacking.call_tool("up__test_missing_capability", Map::new(), CancellationToken::new()).await;
    match missing {
        Err(wasmgate_client::ClientError::Rpc { code: -32021, data: Some(data), .. }) => {
            assert_eq!(data, json!({"requiredCapabilities": {"sampling": {}}}));
        }
        other => panic!("expected -32021, got {other:?}"),
    }
    lacking.close().await;

    // The client declares sampling; the policy denies it: no capability the client could
    // add would help, so the call fails as refused by the gateway.
    let dir = gateway("");
    let client = client(dir.path(), ProtocolVersion::V2026_07_28, Arc::new(Answers::default())).await;
    let refused = call(&client, "test_missing_capability").await;
    assert!(refused.is_error && text(&refused).contains("refused by the gateway"), "{}", text(&refused));
    client.close().await;
}

#[tokio::test]
async fn a_providers_log_messages_reach_the_calls_client_cleaned() {
    let dir = gateway("");
    let client = client(dir.path(), ProtocolVersion::V2026_07_28, Arc::new(Answers::default())).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    let log: LogFn = Arc::new(move |params: Map<String, Value>| kept.lock().unwrap().push(params));
    let options = CallOptions { log_level: Some("info".into()), log: Some(log), ..CallOptions::default() };
    let result =
        client.call_tool_with("up__test_tool_with_logging", Map::new(), CancellationToken::new(), options).await;
    assert!(!result.unwrap().is_error);
    {
        let seen = seen.lock().unwrap();
        let data: Vec<&str> = seen.iter().map(|m| m["data"].as_str().unwrap()).collect();
        assert_eq!(data, ["Tool execution started", "Tool processing data", "Tool execution completed"]);
        assert!(seen.iter().all(|m| m["logger"] == "up/conformance" && m["level"] == "info"), "{seen:?}");
    }

    // Without a level, no messages: the provider is not asked for them.
    let quiet = Arc::new(Mutex::new(0));
    let count = Arc::clone(&quiet);
    let log: LogFn = Arc::new(move |_| *count.lock().unwrap() += 1);
    let options = CallOptions { log: Some(log), ..CallOptions::default() };
    client.call_tool_with("up__test_tool_with_logging", Map::new(), CancellationToken::new(), options).await.unwrap();
    assert_eq!(*quiet.lock().unwrap(), 0);
    client.close().await;
}

#[tokio::test]
async fn a_providers_resource_and_prompt_list_changes_reach_the_client() {
    let dir = gateway("resources = [\"test://*\"]\nprompts = [\"*\"]\n");
    let client = client(dir.path(), ProtocolVersion::V2025_11_25, Arc::new(Answers::default())).await;
    let (mut resources, mut prompts) = (client.resource_list_changes(), client.prompt_list_changes());
    let announced = call(&client, "test_announce_list_changes").await;
    assert!(text(&announced).contains("announced"));
    let within = std::time::Duration::from_secs(10);
    tokio::time::timeout(within, resources.changed()).await.expect("resources/list_changed").unwrap();
    tokio::time::timeout(within, prompts.changed()).await.expect("prompts/list_changed").unwrap();
    client.close().await;
}

#[tokio::test]
async fn a_handshake_era_client_follows_a_providers_resource_through_the_gateway() {
    let dir = gateway("resources = [\"test://*\"]\n");
    let client = client(dir.path(), ProtocolVersion::V2025_11_25, Arc::new(Answers::default())).await;
    let update = |client: McpClient| async move {
        let mut arguments = Map::new();
        arguments.insert("uri".into(), json!("test://static-text"));
        let result = client.call_tool("up__test_update_resource", arguments, CancellationToken::new()).await.unwrap();
        text(&result)
    };
    let mut followed = client.subscribe_resource("test://static-text").await.unwrap();
    let said = update(client.clone()).await;
    assert!(said.contains("updated test://static-text"), "the provider follows it: {said}");
    let changed = tokio::time::timeout(std::time::Duration::from_secs(10), followed.changed()).await;
    assert_eq!(changed.ok(), Some(true), "the update reached the client");

    // Unsubscribing reaches the provider: it ends its subscription (a chain of messages,
    // so asked again until it has, within a bound).
    drop(followed);
    let mut said = String::new();
    for _ in 0..100 {
        said = update(client.clone()).await;
        if said.contains("nobody follows") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(said.contains("nobody follows test://static-text"), "{said}");
    let outside = client.subscribe_resource("file:///etc/passwd").await;
    assert!(outside.is_err(), "a URI the policy serves from no provider is refused: {outside:?}");
    client.close().await;
    let records = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    assert!(records.contains("\"tool\":\"resources/subscribe\""), "{records}");
}
