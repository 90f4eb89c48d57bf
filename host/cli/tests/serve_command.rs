//! `wasmgate serve` as an MCP server to a stock client (ours), over stdio and over
//! Streamable HTTP: vetted tools only, every call through the whole pipeline.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{command, serve_http, serve_stdio, setup, stderr, wasmgate};
use serde_json::{Map, Value, json};
use std::sync::Arc;

use wasmgate_client::{
    ClientConfig, HttpConfig, HttpTransport, InputDeclined, InputHandler, InputRequest, McpClient, StdioTransport,
};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::ProtocolVersion;

fn reviewed() -> tempfile::TempDir {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

fn text(result: &wasmgate_protocol::CallToolResult) -> String {
    result.content.iter().filter_map(|b| b.text()).collect()
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn exercise(client: &McpClient) {
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"calendar__calendar_query".to_owned()), "{names:?}");
    assert!(names.contains(&"calendar__calendar_create".to_owned()), "ask tools are served: {names:?}");
    assert!(!names.iter().any(|n| n == "calendar__calendar_delete"), "denied tools are not served: {names:?}");
    assert!(!names.iter().any(|n| n == "echo__env"), "unlisted tools are not served: {names:?}");

    let query = client
        .call_tool("calendar__calendar_query", args(json!({"user": "alice"})), CancellationToken::new())
        .await
        .unwrap();
    assert!(!query.is_error);
    assert!(text(&query).contains("<untrusted-data boundary="), "{}", text(&query));
    // Rendered by the formatter in the sandbox, not passed on raw.
    assert!(text(&query).contains("No events for alice.\nevents: (none)"), "{}", text(&query));
    assert!(!text(&query).contains("\"events\""), "{}", text(&query));

    let create = json!({"user": "alice", "title": "x", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    let asked = client.call_tool("calendar__calendar_create", args(create), CancellationToken::new()).await.unwrap();
    assert!(asked.is_error);
    assert!(text(&asked).starts_with("denied: approval is required"), "{}", text(&asked));

    let echo = client.call_tool("echo__echo", args(json!({"text": "hi"})), CancellationToken::new()).await.unwrap();
    assert!(text(&echo).contains("hi"));
}

#[tokio::test]
async fn a_stock_client_uses_the_gateway_over_stdio() {
    let dir = reviewed();
    // wasmgate itself is trusted here: it confines the servers it starts.
    let server = serve_stdio(dir.path()).env("USER", "tester");
    let client =
        McpClient::connect("wasmgate", StdioTransport::spawn(&server).unwrap(), ClientConfig::default()).await.unwrap();
    exercise(&client).await;
    client.close().await;
    // Over stdio the caller is the local user, and every record of a call names it.
    let audit = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    let calls: Vec<Value> =
        audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["call"].is_string()).collect();
    assert!(calls.len() >= 6, "{audit}");
    assert!(calls.iter().all(|r| r["caller"] == "tester"), "{audit}");
}

#[tokio::test]
async fn a_stock_client_uses_the_gateway_over_http() {
    let dir = reviewed();
    let (_served, url) = serve_http(dir.path(), &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    exercise(&client).await;
    client.close().await;
}

#[test]
fn http_on_a_public_address_without_a_token_is_refused() {
    let dir = setup();
    let out = wasmgate(dir.path(), &["serve", "--http", "0.0.0.0:0"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("pass --token-env"), "{}", stderr(&out));
}

#[test]
fn sigterm_closes_the_gateway_and_its_providers_and_exits_cleanly() {
    let dir = setup();
    let (mut served, _url) = serve_http(dir.path(), &[]);
    let pid = served.0.id().to_string();
    let sent = std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(sent.success());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let status = loop {
        if let Some(status) = served.0.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "still running 60 s after SIGTERM");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    // Killed by the signal's default action, it would have no exit code.
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn a_taken_address_fails_before_any_provider_starts() {
    let dir = setup();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = wasmgate(dir.path(), &["serve", "--http", &addr]);
    assert!(!out.status.success());
    let message = stderr(&out);
    assert!(message.contains(&format!("cannot listen on {addr}")), "{message}");
    assert!(!dir.path().join("state/providers/echo").exists(), "no provider was started: {message}");
}

#[test]
fn a_bearer_token_that_is_empty_or_short_is_refused() {
    let dir = setup();
    for token in ["", "   ", "short-token"] {
        let out = command(dir.path())
            .env("WASMGATE_TEST_TOKEN", token)
            .args(["serve", "--http", "0.0.0.0:0", "--token-env", "WASMGATE_TEST_TOKEN"])
            .output()
            .unwrap();
        assert!(!out.status.success(), "{token:?}");
        assert!(stderr(&out).contains("at least 16 are needed"), "{token:?}: {}", stderr(&out));
    }
}

/// Answers every elicitation with `approve` (accept with `{approve}`), and records
/// the questions.
#[derive(Debug)]
struct Person {
    approve: bool,
    asked: std::sync::Mutex<Vec<String>>,
}

impl InputHandler for Person {
    fn answer(&self, request: InputRequest) -> wasmgate_core::BoxFuture<'_, Result<Value, InputDeclined>> {
        let message = request.params.as_ref().and_then(|p| p["message"].as_str()).unwrap_or_default().to_owned();
        self.asked.lock().unwrap().push(message);
        let answer = json!({"action": "accept", "content": {"approve": self.approve}});
        Box::pin(std::future::ready(if request.method == "elicitation/create" {
            Ok(answer)
        } else {
            Err(InputDeclined::Unsupported)
        }))
    }
}

/// Our client, able to elicit, over stdio (`url` `None`) or HTTP.
async fn with_person(
    dir: &std::path::Path,
    url: Option<&str>,
    version: ProtocolVersion,
    person: Arc<Person>,
) -> McpClient {
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    let config = ClientConfig {
        versions: vec![version],
        capabilities,
        input_handler: Some(person as Arc<dyn InputHandler>),
        ..ClientConfig::default()
    };
    match url {
        Some(url) => {
            let transport = HttpTransport::new(&HttpConfig::new("wasmgate", url)).unwrap();
            McpClient::connect("wasmgate", transport, config).await.unwrap()
        }
        None => {
            let server = serve_stdio(dir);
            McpClient::connect("wasmgate", StdioTransport::spawn(&server).unwrap(), config).await.unwrap()
        }
    }
}

#[tokio::test]
async fn an_ask_verdict_is_put_to_the_clients_user_in_both_eras_over_stdio_and_http() {
    // Two gateways: one holds its state directory (audit log) while it serves.
    let (dir, http_dir) = (reviewed(), reviewed());
    let (_served, url) = serve_http(http_dir.path(), &[]);
    let create = json!({"user": "alice", "title": "x", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    for (version, url) in [
        (ProtocolVersion::V2026_07_28, None),
        (ProtocolVersion::V2025_11_25, None),
        (ProtocolVersion::V2026_07_28, Some(url.as_str())),
        (ProtocolVersion::V2025_11_25, Some(url.as_str())),
    ] {
        for approve in [true, false] {
            let person = Arc::new(Person { approve, asked: std::sync::Mutex::default() });
            let client = with_person(dir.path(), url, version, Arc::clone(&person)).await;
            let result = client
                .call_tool("calendar__calendar_create", args(create.clone()), CancellationToken::new())
                .await
                .unwrap();
            let asked = person.asked.lock().unwrap().clone();
            assert_eq!(asked.len(), 1, "{version} {url:?}: one question: {asked:?}");
            assert!(asked[0].contains("calendar_create") && asked[0].contains("Allow this call?"), "{}", asked[0]);
            if approve {
                assert!(!result.is_error, "{version}: approved, the call runs: {}", text(&result));
            } else {
                assert!(result.is_error, "{version}");
                assert!(text(&result).contains("denied: the user declined"), "{version}: {}", text(&result));
            }
            client.close().await;
        }
    }
    let mut log = std::fs::read_to_string(dir.path().join("state/audit.jsonl")).unwrap();
    log.push_str(&std::fs::read_to_string(http_dir.path().join("state/audit.jsonl")).unwrap());
    let approvals: Vec<Value> =
        log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|l| l["event"] == "approval").collect();
    assert!(approvals.iter().all(|a| a["approver"] == "caller"), "{approvals:?}");
    let approved = approvals.iter().filter(|a| a["approved"] == true).count();
    assert_eq!(approved, 4, "one approved call per era and transport: {approvals:?}");
}

/// What a client sends first, one message per line: the handshake and one call.
fn opening_lines() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "echo__echo", "arguments": {"text": "over any stdio"}}}),
    ]
    .iter()
    .map(|m| format!("{m}\n"))
    .collect()
}

fn answered_the_call(output: &str) {
    let answer = output
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|m| m["id"] == 2)
        .unwrap_or_else(|| panic!("no answer to the call in {output:?}"));
    assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("over any stdio"), "{answer}");
}

#[test]
fn stdio_serve_works_with_files_as_well_as_pipes() {
    // A pipe is polled by the reactor; a regular file cannot be, and keeps tokio's
    // blocking streams. Reading to the end, the gateway answers, then exits.
    let dir = reviewed();
    std::fs::write(dir.path().join("in.jsonl"), opening_lines()).unwrap();
    let input = std::fs::File::open(dir.path().join("in.jsonl")).unwrap();
    let output = std::fs::File::create(dir.path().join("out.jsonl")).unwrap();
    let status = common::command(dir.path()).arg("serve").stdin(input).stdout(output).status().unwrap();
    assert!(status.success());
    answered_the_call(&std::fs::read_to_string(dir.path().join("out.jsonl")).unwrap());
}

#[test]
fn stdio_serve_works_over_a_socket_pair_as_node_clients_start_servers() {
    use std::io::{BufRead, BufReader, Write};
    let dir = reviewed();
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let mut served = common::command(dir.path())
        .arg("serve")
        .stdin(std::process::Stdio::from(std::os::fd::OwnedFd::from(theirs)))
        .stdout(std::process::Stdio::from(std::os::fd::OwnedFd::from(theirs_out)))
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(std::time::Duration::from_secs(60))).unwrap();
    (&ours).write_all(opening_lines().as_bytes()).unwrap();
    let mut output = String::new();
    let mut lines = BufReader::new(&ours);
    while !output.lines().any(|l| l.contains(r#""id":2"#)) {
        assert!(lines.read_line(&mut output).unwrap() > 0, "the gateway closed the socket: {output}");
    }
    answered_the_call(&output);
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    assert!(served.wait().unwrap().success());
}

#[test]
fn listing_and_calling_announce_no_tool_list_change() {
    // A handshake-era client over stdio hears list changes unasked: one that nothing
    // caused would send it to list again. Each request waits for its answer, so anything
    // the earlier ones set off has been written before the last answer.
    use std::io::{BufRead, BufReader, Write};
    let dir = reviewed();
    let mut served = common::command(dir.path())
        .arg("serve")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = served.stdin.take().unwrap();
    let mut output = BufReader::new(served.stdout.take().unwrap());
    let mut heard = Vec::new();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": {"name": "echo__echo", "arguments": {"text": "hi"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"}),
    ];
    for request in requests {
        writeln!(input, "{request}").unwrap();
        if request["id"] == 1 {
            writeln!(input, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
        }
        loop {
            let mut line = String::new();
            assert!(output.read_line(&mut line).unwrap() > 0, "the gateway ended; heard {heard:?}");
            let message: Value = serde_json::from_str(&line).unwrap();
            let answered = message["id"] == request["id"];
            heard.push(message);
            if answered {
                break;
            }
        }
    }
    drop(input);
    assert!(served.wait().unwrap().success());
    let unasked: Vec<&Value> = heard.iter().filter_map(|m| m.get("method")).collect();
    assert!(unasked.is_empty(), "unasked messages: {unasked:?}");
    assert_eq!(heard[3]["result"]["tools"], heard[1]["result"]["tools"]);
}

/// One raw HTTP/1.1 exchange with `url`'s server: `method` on `path`, `body` as JSON;
/// the answer's status line and headers, lowercased names.
fn exchange(url: &str, method: &str, path: &str, body: &str) -> (String, Vec<(String, String)>, String) {
    use std::io::{Read as _, Write as _};
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    let mut lines = head.lines();
    let status = lines.next().unwrap().to_owned();
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(name, value)| (name.to_ascii_lowercase(), value.to_owned()))
        .collect();
    (status, headers, rest.to_owned())
}

/// Adds `[serve.oauth]` with `jwks_uri` (and the scope `mcp`) to the configuration in
/// `dir`; returns the configuration's path.
fn with_serve_oauth(dir: &std::path::Path, jwks_uri: &str) -> std::path::PathBuf {
    let config = dir.join("wasmgate.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "\n[serve.oauth]\nissuer = \"https://as.example\"\nresource = \"https://gw.example/mcp\"\n\
         jwks_uri = {jwks_uri:?}\nscopes = [\"mcp\"]\n"
    ));
    std::fs::write(&config, text).unwrap();
    config
}

#[test]
fn with_serve_oauth_the_http_face_asks_for_an_access_token_and_says_where_to_get_one() {
    let dir = setup();
    with_serve_oauth(dir.path(), "https://as.example/jwks.json");
    let (_served, url) = serve_http(dir.path(), &[]);

    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}).to_string();
    let (status, headers, _) = exchange(&url, "POST", "/mcp", &list);
    assert!(status.starts_with("HTTP/1.1 401"), "{status}");
    let challenge = headers.iter().find(|(name, _)| name == "www-authenticate").map(|(_, v)| v.as_str());
    assert_eq!(
        challenge,
        Some("Bearer resource_metadata=\"https://gw.example/.well-known/oauth-protected-resource/mcp\""),
        "{headers:?}"
    );

    let (status, _, body) = exchange(&url, "GET", "/.well-known/oauth-protected-resource/mcp", "");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let metadata: Value = serde_json::from_str(body.trim()).unwrap();
    assert_eq!(metadata["resource"], "https://gw.example/mcp");
    assert_eq!(metadata["authorization_servers"], json!(["https://as.example"]));
    assert_eq!(metadata["scopes_supported"], json!(["mcp"]));
}

#[test]
fn serve_oauth_with_a_plain_http_jwks_or_beside_a_static_token_is_refused() {
    let dir = setup();
    let config = with_serve_oauth(dir.path(), "http://as.example/jwks.json");
    let out = wasmgate(dir.path(), &["serve", "--http", "127.0.0.1:0"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("jwks_uri") && stderr(&out).contains("must be https"), "{}", stderr(&out));

    let text = std::fs::read_to_string(&config).unwrap().replace("http://as.example", "https://as.example");
    std::fs::write(&config, text).unwrap();
    let both = command(dir.path())
        .env("WASMGATE_TEST_TOKEN", "0123456789abcdef0123")
        .args(["serve", "--http", "127.0.0.1:0", "--token-env", "WASMGATE_TEST_TOKEN"])
        .output()
        .unwrap();
    assert!(!both.status.success() && stderr(&both).contains("keep one of them"), "{}", stderr(&both));
}
