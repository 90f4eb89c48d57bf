//! The Streamable HTTP transport against a scripted loopback endpoint: what a real peer
//! will not do on demand. Era fallback on 405, handshake sessions and their expiry, the
//! 2026-07-28 request headers and bearer token, SSE answers, size caps, and
//! cancellation by closing the response stream.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod http_script;

use http_script::{Endpoint, event};
use serde_json::{Map, Value, json};
use tokio::io::AsyncReadExt;
use wasmgate_client::{ClientConfig, ClientError, HttpConfig, HttpTransport, McpClient};
use wasmgate_core::CancellationToken;
use wasmgate_oauth::SecretSource;
use wasmgate_protocol::{ContentBlock, ProtocolVersion};

fn transport(endpoint: &Endpoint) -> HttpTransport {
    HttpTransport::new(&HttpConfig::new("scripted", &endpoint.url)).unwrap()
}

fn init_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}})
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

async fn modern(endpoint: &Endpoint, config: HttpConfig) -> McpClient {
    let transport = HttpTransport::new(&config).unwrap();
    let connecting = tokio::spawn(McpClient::connect("scripted", transport, ClientConfig::default()));
    let discover = endpoint.expect("server/discover").await;
    discover.result(json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}), &[]).await;
    connecting.await.unwrap().unwrap()
}

fn call(client: &McpClient, tool: &str) -> tokio::task::JoinHandle<Result<String, ClientError>> {
    let client = client.clone();
    let tool = tool.to_owned();
    tokio::spawn(async move {
        let result = client.call_tool(&tool, Map::new(), CancellationToken::new()).await?;
        Ok(result.content.first().and_then(ContentBlock::text).unwrap_or_default().to_owned())
    })
}

#[tokio::test]
async fn a_405_to_discover_falls_back_to_initialize_and_the_session_is_sent_afterwards() {
    let endpoint = Endpoint::bind().await;
    let connecting = tokio::spawn(McpClient::connect("old", transport(&endpoint), ClientConfig::default()));
    let discover = endpoint.expect("server/discover").await;
    assert_eq!(discover.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(discover.header("accept"), Some("application/json, text/event-stream"));
    discover.reply(405, &[], b"").await;
    let init = endpoint.expect("initialize").await;
    assert_eq!(init.header("mcp-session-id"), None);
    assert_eq!(init.header("mcp-protocol-version"), None, "the version header starts after initialize");
    init.result(init_result(), &[("mcp-session-id", "s-1")]).await;
    let initialized = endpoint.expect("notifications/initialized").await;
    assert_eq!(initialized.header("mcp-session-id"), Some("s-1"));
    initialized.reply(202, &[], b"").await;
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(client.protocol_version(), Some(ProtocolVersion::V2025_11_25));

    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let list = endpoint.expect("tools/list").await;
    assert_eq!(list.header("mcp-session-id"), Some("s-1"));
    assert_eq!(list.header("mcp-protocol-version"), Some("2025-11-25"));
    assert_eq!(list.header("mcp-method"), None, "handshake-era requests carry no Mcp-Method");
    list.result(json!({"tools": []}), &[]).await;
    assert!(listing.await.unwrap().unwrap().is_empty());
}

#[tokio::test]
async fn a_404_on_a_session_request_initializes_again_and_retries_under_a_new_id() {
    let endpoint = Endpoint::bind().await;
    let config = ClientConfig { versions: vec![ProtocolVersion::V2025_11_25], ..ClientConfig::default() };
    let connecting = tokio::spawn(McpClient::connect("old", transport(&endpoint), config));
    endpoint.expect("initialize").await.result(init_result(), &[("mcp-session-id", "s-1")]).await;
    endpoint.expect("notifications/initialized").await.reply(202, &[], b"").await;
    let client = connecting.await.unwrap().unwrap();

    let answer = call(&client, "echo");
    let first = endpoint.expect("tools/call").await;
    let first_id = first.id();
    assert_eq!(first.header("mcp-session-id"), Some("s-1"));
    first.reply(404, &[], b"").await;
    let init = endpoint.expect("initialize").await;
    assert_eq!(init.header("mcp-session-id"), None, "the expired session is forgotten");
    init.result(init_result(), &[("mcp-session-id", "s-2")]).await;
    endpoint.expect("notifications/initialized").await.reply(202, &[], b"").await;
    let retry = endpoint.expect("tools/call").await;
    assert_eq!(retry.header("mcp-session-id"), Some("s-2"));
    assert_ne!(retry.id(), first_id);
    retry.result(text("again"), &[]).await;
    assert_eq!(answer.await.unwrap().unwrap(), "again");
}

#[tokio::test]
async fn a_404_to_a_notification_keeps_the_session_so_the_next_request_can_renew_it() {
    use wasmgate_client::{Inbound, Transport, TransportError};
    let endpoint = Endpoint::bind().await;
    let mut transport = transport(&endpoint);
    let mut inbound = transport.take_inbound().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
        "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    transport.send(init).await.unwrap();
    endpoint.expect("initialize").await.result(init_result(), &[("mcp-session-id", "s-1")]).await;
    // The answer is delivered after its session is recorded.
    assert!(matches!(inbound.recv().await, Some(Inbound::Frame(_))));

    // A notification (here a cancellation) is the first to learn that the session is gone.
    let cancelled = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let (sent, ()) = tokio::join!(transport.send(cancelled), async {
        endpoint.expect("notifications/cancelled").await.reply(404, &[], b"").await;
    });
    assert!(matches!(sent, Err(TransportError::SessionExpired)), "{sent:?}");

    // The next request still names it, so its own 404 is the session's end, which the
    // client answers by initializing again.
    transport.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await.unwrap();
    let next = endpoint.expect("tools/list").await;
    assert_eq!(next.header("mcp-session-id"), Some("s-1"), "the session is still named");
}

#[tokio::test]
async fn modern_requests_carry_version_method_name_and_bearer_and_sse_answers_are_read() {
    let endpoint = Endpoint::bind().await;
    let mut config = HttpConfig::new("scripted", &endpoint.url);
    config.bearer = Some(SecretSource::Value("t0ken".into()));
    let client = modern(&endpoint, config).await;
    let answer = call(&client, "get weather");
    let exchange = endpoint.expect("tools/call").await;
    assert_eq!(exchange.header("authorization"), Some("Bearer t0ken"));
    assert_eq!(exchange.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(exchange.header("mcp-method"), Some("tools/call"));
    assert_eq!(exchange.header("mcp-name"), Some("get weather"));
    let id = exchange.id();
    let mut stream = exchange.sse().await;
    let log = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}});
    event(&mut stream, &log).await;
    event(&mut stream, &json!({"jsonrpc": "2.0", "id": id, "result": text("sunny")})).await;
    drop(stream);
    assert_eq!(answer.await.unwrap().unwrap(), "sunny");
}

#[tokio::test]
async fn an_sse_stream_that_ends_without_the_response_fails_the_call() {
    let endpoint = Endpoint::bind().await;
    let client = modern(&endpoint, HttpConfig::new("scripted", &endpoint.url)).await;
    let answer = call(&client, "echo");
    let mut stream = endpoint.expect("tools/call").await.sse().await;
    event(&mut stream, &json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {}})).await;
    drop(stream);
    match answer.await.unwrap() {
        Err(ClientError::MalformedMessage { detail }) => assert!(detail.contains("without a response"), "{detail}"),
        other => panic!("expected MalformedMessage, got {other:?}"),
    }
}

#[tokio::test]
async fn a_json_answer_over_the_message_cap_fails_the_call() {
    let endpoint = Endpoint::bind().await;
    let mut config = HttpConfig::new("scripted", &endpoint.url);
    config.max_message_bytes = 1024;
    let client = modern(&endpoint, config).await;
    let answer = call(&client, "big");
    let exchange = endpoint.expect("tools/call").await;
    let big = "x".repeat(4096);
    exchange.result(text(&big), &[]).await;
    assert_eq!(
        answer.await.unwrap(),
        Err(ClientError::MalformedMessage { detail: "message exceeds the limit of 1024 bytes".into() })
    );
}

#[tokio::test]
async fn cancel_in_the_2026_era_closes_the_response_stream_and_sends_no_notification() {
    let endpoint = Endpoint::bind().await;
    let client = modern(&endpoint, HttpConfig::new("scripted", &endpoint.url)).await;
    let cancel = CancellationToken::new();
    let answer = tokio::spawn({
        let (client, cancel) = (client.clone(), cancel.clone());
        async move { client.call_tool("slow", Map::new(), cancel).await }
    });
    let mut stream = endpoint.expect("tools/call").await.sse().await;
    cancel.cancel();
    assert_eq!(answer.await.unwrap().unwrap_err(), ClientError::Cancelled);
    let mut buf = [0u8; 16];
    assert_eq!(stream.read(&mut buf).await.unwrap(), 0, "the client closed the response stream");
    // The next request on the endpoint is the next call, not a notifications/cancelled.
    let next = call(&client, "echo");
    endpoint.expect("tools/call").await.result(text("ok"), &[]).await;
    assert_eq!(next.await.unwrap().unwrap(), "ok");
}

#[tokio::test]
async fn x_mcp_header_parameters_are_mirrored_and_invalid_annotations_drop_the_tool() {
    let endpoint = Endpoint::bind().await;
    let client = modern(&endpoint, HttpConfig::new("scripted", &endpoint.url)).await;
    let listing = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let region = json!({"type": "string", "x-mcp-header": "Region"});
    let tools = json!({"tools": [
        {"name": "sql", "inputSchema": {"type": "object", "properties": {"region": region, "query": {"type": "string"}}}},
        {"name": "broken", "inputSchema": {"type": "object", "properties": {"n": {"type": "number", "x-mcp-header": "N"}}}}
    ]});
    endpoint.expect("tools/list").await.result(tools, &[]).await;
    let names: Vec<String> = listing.await.unwrap().unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["sql"], "a tool with an invalid x-mcp-header is excluded");

    let answer = tokio::spawn({
        let client = client.clone();
        let args = json!({"region": "us-west1", "query": "SELECT 1"}).as_object().cloned().unwrap();
        async move { client.call_tool("sql", args, CancellationToken::new()).await }
    });
    let exchange = endpoint.expect("tools/call").await;
    assert_eq!(exchange.header("mcp-param-region"), Some("us-west1"));
    exchange.result(text("1"), &[]).await;
    assert!(!answer.await.unwrap().unwrap().is_error);
}

#[tokio::test]
async fn a_missing_bearer_variable_is_a_configuration_error_naming_it() {
    let mut config = HttpConfig::new("scripted", "http://127.0.0.1:9/mcp");
    config.bearer = Some(SecretSource::FromEnv("WASMGATE_TEST_TOKEN_THAT_IS_NOT_SET".into()));
    let error = HttpTransport::new(&config).unwrap_err();
    assert!(error.to_string().contains("WASMGATE_TEST_TOKEN_THAT_IS_NOT_SET"), "{error}");
}

#[tokio::test]
async fn extra_headers_go_with_every_request_from_their_values_or_variables() {
    // A variable nobody sets, for the missing case; PATH stands in for a set one.
    let var = "WASMGATE_TEST_API_KEY_FOR_HEADERS";
    let endpoint = Endpoint::bind().await;
    let mut config = HttpConfig::new("scripted", &endpoint.url);
    config.headers = vec![
        ("X-Api-Key".into(), SecretSource::FromEnv("PATH".into())),
        ("X-Team".into(), SecretSource::Value("blue".into())),
    ];
    let client = modern(&endpoint, config).await;
    let answer = call(&client, "t");
    let exchange = endpoint.expect("tools/call").await;
    assert_eq!(exchange.header("x-api-key").map(str::to_owned), std::env::var("PATH").ok());
    assert_eq!(exchange.header("x-team"), Some("blue"));
    exchange.result(text("ok"), &[]).await;
    assert_eq!(answer.await.unwrap().unwrap(), "ok");

    let refused = |headers: Vec<(&str, SecretSource)>, url: &str, bearer: bool| {
        let mut config = HttpConfig::new("scripted", url);
        config.headers = headers.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
        if bearer {
            config.bearer = Some(SecretSource::Value("t".into()));
        }
        HttpTransport::new(&config).err().map(|e| e.to_string()).unwrap_or_default()
    };
    let value = || SecretSource::Value("v".into());
    let local = "http://127.0.0.1:9/mcp";
    assert!(refused(vec![("X-Key", SecretSource::FromEnv(var.into()))], local, false).contains(var));
    for reserved in ["Mcp-Session-Id", "MCP-Protocol-Version", "Content-Type", "Host", "Accept"] {
        assert!(refused(vec![(reserved, value())], local, false).contains("cannot be set"), "{reserved}");
    }
    assert!(refused(vec![("Authorization", value())], local, true).contains("set twice"));
    assert!(refused(vec![("Bad Name", value())], local, false).contains("not a header name"));
    let cleartext = refused(vec![("X-Key", value())], "http://calendar.example.com/mcp", false);
    assert!(cleartext.contains("clear text") && cleartext.contains("https"), "{cleartext}");
    assert!(refused(vec![], "http://calendar.example.com/mcp", true).contains("clear text"), "a bearer token too");
    assert!(refused(vec![("X-Key", value())], "https://calendar.example.com/mcp", true).is_empty());
    assert!(refused(vec![("X-Key", value())], "http://[::1]:9/mcp", false).is_empty(), "loopback");
}
