//! One gateway for many people, end to end: `wasmgate serve --http` with
//! `[serve.oauth]`, four callers with access tokens signed by a key pair this test makes
//! (its JWKS served on loopback), a policy by caller, a budget that trips for one of
//! them, `/metrics` read by Prometheus's own parser (`prometheus_client`), and the audit
//! log naming every caller.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use common::{serve_http_with, setup, stderr, wasmgate};
use serde_json::{Map, Value, json};
use wasmgate_client::{
    ClientConfig, ClientError, HttpConfig, HttpTransport, InputDeclined, InputHandler, InputRequest, McpClient,
};
use wasmgate_core::CancellationToken;
use wasmgate_oauth::SecretSource;
use wasmgate_testing::Issuer;

const METRICS_TOKEN: &str = "scraper-token-0123456789abcdef";

/// The team's rules, added to the common policy: the calendar's query rule names the caller, contractors may
/// not use the echo server, and carol has a budget of three echo calls an hour.
const TEAM_POLICY: &str = r#"
[providers.calendar.tools.calendar_query]
verdict = "allow"
constraints = [{ pointer = "/user", equals = "{caller.email}" }]

[[providers.echo.callers]]
groups = ["contractors"]
verdict = "deny"

[[budgets]]
provider = "echo"
subjects = ["carol"]
rate = 3
per = "hour"
"#;

/// Answers every elicitation yes, and counts the questions.
#[derive(Debug, Default)]
struct Person {
    asked: Mutex<usize>,
}

impl InputHandler for Person {
    fn answer(&self, request: InputRequest) -> wasmgate_core::BoxFuture<'_, Result<Value, InputDeclined>> {
        *self.asked.lock().unwrap() += 1;
        let answer = json!({"action": "accept", "content": {"approve": true}});
        Box::pin(std::future::ready(if request.method == "elicitation/create" {
            Ok(answer)
        } else {
            Err(InputDeclined::Unsupported)
        }))
    }
}

/// A client of the gateway at `url` with `token`, whose person is `person`.
async fn client(url: &str, token: &str, person: Arc<Person>) -> McpClient {
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    let config =
        ClientConfig { capabilities, input_handler: Some(person as Arc<dyn InputHandler>), ..ClientConfig::default() };
    let http = HttpConfig { bearer: Some(SecretSource::Value(token.to_owned())), ..HttpConfig::new("wasmgate", url) };
    McpClient::connect("wasmgate", HttpTransport::new(&http).unwrap(), config).await.unwrap()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn call(client: &McpClient, tool: &str, arguments: Value) -> Result<(bool, String), ClientError> {
    let result = client.call_tool(tool, args(arguments), CancellationToken::new()).await?;
    Ok((result.is_error, result.content.iter().filter_map(|b| b.text()).collect()))
}

/// Every sample of the Prometheus text `text`, as `prometheus_client`'s parser reads it.
fn parse_metrics(text: &str) -> Vec<Value> {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let python = workspace.join("target/peers/prometheus/bin/python");
    assert!(python.exists(), "prometheus_client is not installed: run scripts/install-peers.sh");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/parse_metrics.py");
    let mut child = Command::new(python)
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the parser refused the text: {}\n{text}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The value of the sample `name` whose labels include `labels`, summed.
fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s["name"] == name && labels.iter().all(|(k, v)| s["labels"][*k] == *v))
        .map(|s| s["value"].as_f64().unwrap())
        .sum()
}

async fn get_metrics(url: &str, token: Option<&str>) -> (u16, String) {
    let metrics = url.replace("/mcp", "/metrics");
    let mut request = reqwest::Client::new().get(metrics);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

#[tokio::test]
async fn four_callers_get_their_own_verdicts_budgets_questions_and_audit_records() {
    let dir = setup();
    let issuer = Issuer::start().await;
    let config = dir.path().join("wasmgate.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&issuer.serve_oauth());
    text.push_str("\n[serve.metrics]\ntoken_env = \"WASMGATE_TEST_METRICS\"\n");
    std::fs::write(&config, text).unwrap();
    let policy = dir.path().join("policy.toml");
    // The common policy's calendar_query rule gives way to the team's.
    let mut rules = std::fs::read_to_string(&policy).unwrap().replace("calendar_query = \"allow\"\n", "");
    rules.push_str(TEAM_POLICY);
    std::fs::write(&policy, rules).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let (_served, url) = serve_http_with(dir.path(), &[], &[("WASMGATE_TEST_METRICS", METRICS_TOKEN)]);

    let people: BTreeMap<&str, Arc<Person>> =
        ["alice", "bob", "carol", "dave"].into_iter().map(|name| (name, Arc::new(Person::default()))).collect();
    let groups = |name: &str| if name == "dave" { vec!["contractors"] } else { vec!["staff"] };
    let mut clients = BTreeMap::new();
    for (name, person) in &people {
        let token = issuer.token(name, &groups(name));
        clients.insert(*name, client(&url, &token, Arc::clone(person)).await);
    }

    // The calendar rule names the caller: each reads only their own events.
    let own = call(&clients["alice"], "calendar__calendar_query", json!({"user": "alice@example.com"})).await.unwrap();
    assert!(!own.0 && own.1.contains("No events for alice@example.com"), "{}", own.1);
    let other = call(&clients["alice"], "calendar__calendar_query", json!({"user": "bob@example.com"})).await.unwrap();
    assert!(other.0 && other.1.contains("must equal the caller's email"), "{}", other.1);

    // An ask goes to the caller who made the call, and nobody else.
    let create = json!({"user": "bob", "title": "x", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    let created = call(&clients["bob"], "calendar__calendar_create", create).await.unwrap();
    assert!(!created.0, "bob approved his own call: {}", created.1);
    let asked: BTreeMap<&str, usize> = people.iter().map(|(n, p)| (*n, *p.asked.lock().unwrap())).collect();
    assert_eq!(asked, BTreeMap::from([("alice", 0), ("bob", 1), ("carol", 0), ("dave", 0)]));

    // Each caller's list leaves out what the policy denies that caller.
    let listed = |tools: Vec<wasmgate_protocol::ToolDefinition>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
    let alice_sees = listed(clients["alice"].list_tools().await.unwrap());
    let dave_sees = listed(clients["dave"].list_tools().await.unwrap());
    assert!(alice_sees.contains(&"echo__echo".to_owned()), "{alice_sees:?}");
    assert!(!dave_sees.contains(&"echo__echo".to_owned()), "{dave_sees:?}");
    assert!(dave_sees.contains(&"calendar__calendar_query".to_owned()), "{dave_sees:?}");

    // Contractors may not use the echo server, listed or not.
    let refused = call(&clients["dave"], "echo__echo", json!({"text": "hi-dave"})).await.unwrap();
    assert!(refused.0 && refused.1.contains("denies this provider's tools to group \"contractors\""), "{}", refused.1);

    // Carol's budget trips; bob is unaffected.
    for i in 0..3 {
        let echoed = call(&clients["carol"], "echo__echo", json!({"text": format!("hi-secret-{i}")})).await.unwrap();
        assert!(!echoed.0, "{}", echoed.1);
    }
    match call(&clients["carol"], "echo__echo", json!({"text": "one too many"})).await {
        Err(ClientError::Rpc { code, data, .. }) => {
            assert_eq!(code, -32010);
            let wait = data.as_ref().and_then(|d| d["retryAfter"].as_u64()).unwrap();
            assert!((1100..=1200).contains(&wait), "a third of an hour: {wait}");
        }
        other => panic!("carol's fourth call: {other:?}"),
    }
    for _ in 0..4 {
        assert!(!call(&clients["bob"], "echo__echo", json!({"text": "hi"})).await.unwrap().0);
    }
    // On the wire: 429 with Retry-After.
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
        "name": "echo__echo", "arguments": {"text": "raw"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}}}});
    let response = reqwest::Client::new()
        .post(&url)
        .bearer_auth(issuer.token("carol", &["staff"]))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "echo__echo")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 429);
    let retry: u64 = response.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1100..=1200).contains(&retry), "{retry}");
    let answer: Value = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    assert_eq!(answer["error"]["code"], -32010, "{answer}");

    // /metrics: for the scraper's token or a caller's, never for nobody.
    assert_eq!(get_metrics(&url, None).await.0, 401);
    assert_eq!(get_metrics(&url, Some("not-the-token-at-all-0000")).await.0, 401);
    let (status, _) = get_metrics(&url, Some(&issuer.token("alice", &["staff"]))).await;
    assert_eq!(status, 200);
    let (status, text) = get_metrics(&url, Some(METRICS_TOKEN)).await;
    assert_eq!(status, 200);
    for secret in ["hi-secret", "alice@example.com", "hi-dave", "raw"] {
        assert!(!text.contains(secret), "metrics carry no argument ({secret}): {text}");
    }
    let samples = parse_metrics(&text);
    let calls = |verdict, outcome| {
        sample(
            &samples,
            "wasmgate_calls_total",
            &[("provider", "echo"), ("tool", "echo"), ("verdict", verdict), ("outcome", outcome)],
        )
    };
    assert_eq!(calls("allow", "finished"), 7.0, "carol 3, bob 4");
    assert_eq!(calls("allow", "limited"), 2.0, "carol's fourth, twice");
    assert_eq!(calls("deny", "denied"), 1.0, "dave");
    let query = [("provider", "calendar"), ("tool", "calendar_query"), ("verdict", "deny"), ("outcome", "denied")];
    assert_eq!(sample(&samples, "wasmgate_calls_total", &query), 1.0);
    for stage in ["policy", "approval", "audit", "call", "format", "screen"] {
        let count = sample(&samples, "wasmgate_stage_duration_seconds_count", &[("stage", stage)]);
        assert!(count >= 1.0, "stage {stage}: {count}");
    }
    assert!(sample(&samples, "wasmgate_audit_fsync_duration_seconds_count", &[]) >= 1.0);
    assert_eq!(sample(&samples, "wasmgate_provider_up", &[("provider", "echo")]), 1.0);
    assert_eq!(sample(&samples, "wasmgate_provider_up", &[("provider", "calendar")]), 1.0);
    let families: Vec<&str> =
        samples.iter().filter(|s| s["type"] == "histogram").filter_map(|s| s["name"].as_str()).collect();
    assert!(families.iter().any(|n| n.ends_with("_bucket")), "histograms, not summaries: {families:?}");

    for client in clients.values() {
        client.close().await;
    }
    // Every record of a call names its caller; carol's refusals are `limited` records.
    let audit = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    let records: Vec<Value> = audit.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let calls: Vec<&Value> = records.iter().filter(|r| r["call"].is_string()).collect();
    assert!(calls.iter().all(|r| r["caller"].is_string()), "{audit}");
    let limited: Vec<&&Value> = calls.iter().filter(|r| r["event"] == "limited").collect();
    assert_eq!(limited.len(), 2, "{audit}");
    assert!(limited.iter().all(|r| r["caller"] == "carol" && r["budget"] == "budgets[0] (3 calls per hour)"));
    let by: std::collections::BTreeSet<&str> = calls.iter().filter_map(|r| r["caller"].as_str()).collect();
    assert_eq!(by, ["alice", "bob", "carol", "dave"].into_iter().collect());
}
