//! The client command the official MCP conformance suite runs against wasmgate's client
//! (`conformance client --command ...`): the suite appends the URL of its test server and
//! names the scenario in `MCP_CONFORMANCE_SCENARIO` (with `MCP_CONFORMANCE_CONTEXT`, a
//! JSON object, for scenarios that hand over credentials, and
//! `MCP_CONFORMANCE_PROTOCOL_VERSION`).
//!
//! It uses the client as the gateway does: [`HttpTransport`] with an OAuth
//! [`Authorizer`] for the `auth/*` scenarios, whose user agent follows the test server's
//! redirect (no person at a browser), and [`McpClient`] for the rest. It exits 0 when the
//! scenario's exchange ran to its end and 1 otherwise; the suite judges the exchange
//! itself.

#![allow(clippy::print_stderr)]

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use url::Url;
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, InputDeclined, InputHandler, InputRequest, McpClient};
use wasmgate_core::{BoxFuture, CancellationToken};
use wasmgate_egress::HostGrant;
use wasmgate_oauth::{
    Authorizer, Challenge, ClientIdentity, FollowRedirect, Grant, OAuthConfig, PrivateKey, SecretSource, TokenAuth,
    UserAgent,
};
use wasmgate_protocol::ProtocolVersion;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WASMGATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: conformance_client URL (the suite appends it)");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    match run(&url, &scenario, &context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance_client: {scenario}: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(url: &str, scenario: &str, context: &Value) -> Result<(), String> {
    let mut http = HttpConfig::new("conformance", url);
    if scenario.starts_with("auth/") {
        let granted = named_authorization_servers(url).await;
        http.oauth = Some(authorizer(scenario, context, granted)?);
    }
    let transport = HttpTransport::new(&http).map_err(|e| e.to_string())?;
    let mut config = ClientConfig::default();
    if let Some(version) =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok().and_then(|v| ProtocolVersion::parse(&v))
    {
        config.versions = vec![version];
    }
    config.tools_watch.enabled = false;
    config.input_handler = Some(Arc::new(Answers));
    for capability in ["elicitation", "sampling", "roots"] {
        config.capabilities.insert(capability.into(), json!({}));
    }
    let client = McpClient::connect("conformance", transport, config).await.map_err(|e| e.to_string())?;
    let outcome = exercise(&client, context).await;
    client.close().await;
    outcome
}

/// Makes the calls the scenario's context lists, or else lists the tools and calls each
/// with arguments made from its input schema, as an agent would.
async fn exercise(client: &McpClient, context: &Value) -> Result<(), String> {
    let tools = client.list_tools().await.map_err(|e| e.to_string())?;
    let calls: Vec<(String, Map<String, Value>)> = match context.get("toolCalls").and_then(Value::as_array) {
        Some(calls) => calls
            .iter()
            .filter_map(|call| {
                let name = call.get("name")?.as_str()?.to_owned();
                Some((name, call.get("arguments").and_then(Value::as_object).cloned().unwrap_or_default()))
            })
            .collect(),
        None => tools.iter().map(|tool| (tool.name.clone(), example_arguments(&tool.input_schema))).collect(),
    };
    for (name, arguments) in calls {
        let result = client.call_tool(&name, arguments, CancellationToken::new()).await;
        eprintln!("called {name}: {}", if result.is_ok() { "ok" } else { "failed" });
        result.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Arguments for a schema's properties: each one's `default`, first example or first
/// enum value, else a plain value of its type.
fn example_arguments(schema: &Value) -> Map<String, Value> {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return Map::new() };
    properties.iter().map(|(name, property)| (name.clone(), example_value(property))).collect()
}

fn example_value(property: &Value) -> Value {
    if let Some(value) = property.get("default") {
        return value.clone();
    }
    let first = |key: &str| property.get(key).and_then(Value::as_array).and_then(|v| v.first()).cloned();
    if let Some(value) = first("examples").or_else(|| first("enum")) {
        return value;
    }
    match property.get("type").and_then(Value::as_str) {
        Some("integer" | "number") => json!(1),
        Some("boolean") => json!(true),
        Some("object") => json!({}),
        Some("array") => json!([]),
        _ => json!("conformance"),
    }
}

/// The person behind the client, as a test stands in for one: accepts every form with
/// its defaults (SEP-1034), answers sampling with a fixed text, and shares no roots.
#[derive(Debug)]
struct Answers;

impl InputHandler for Answers {
    fn answer(&self, request: InputRequest) -> BoxFuture<'_, Result<Value, InputDeclined>> {
        Box::pin(async move {
            let params = request.params.unwrap_or_default();
            match request.method.as_str() {
                "elicitation/create" => {
                    let properties = params
                        .get("requestedSchema")
                        .and_then(|s| s.get("properties"))
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    let content: Map<String, Value> = properties
                        .iter()
                        .filter_map(|(name, p)| Some((name.clone(), p.get("default")?.clone())))
                        .collect();
                    Ok(json!({"action": "accept", "content": content}))
                }
                "sampling/createMessage" => Ok(json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "A sampled answer from the conformance client."},
                    "model": "conformance-client",
                    "stopReason": "endTurn"
                })),
                "roots/list" => Ok(json!({"roots": []})),
                _ => Err(InputDeclined::Unsupported),
            }
        })
    }
}

/// The authorization servers the scenario's server names, as an operator grants theirs
/// in `network_hosts`: the suite runs them on loopback ports of its choosing, which the
/// egress rules reach only when granted (a server may name only public https hosts by
/// itself). Found as the client finds them: the challenge's `resource_metadata`, else the
/// well-known URLs; none when there are none (the scenario then tests that).
async fn named_authorization_servers(url: &str) -> Vec<HostGrant> {
    let Ok(endpoint) = Url::parse(url) else { return Vec::new() };
    let http = reqwest::Client::new();
    let ping = http
        .post(endpoint.clone())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .send()
        .await;
    let mut candidates: Vec<String> = ping
        .ok()
        .and_then(|answer| Challenge::from_headers(answer.headers()))
        .and_then(|challenge| challenge.resource_metadata)
        .into_iter()
        .collect();
    let origin = endpoint.origin().ascii_serialization();
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource{}", endpoint.path().trim_end_matches('/')));
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    for candidate in candidates {
        let Ok(answer) = http.get(&candidate).send().await else { continue };
        let Ok(body) = answer.bytes().await else { continue };
        let Ok(metadata) = serde_json::from_slice::<Value>(&body) else { continue };
        let Some(servers) = metadata.get("authorization_servers").and_then(Value::as_array) else { continue };
        return servers
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|server| Url::parse(server).ok())
            .filter_map(|server| {
                let port = server.port_or_known_default()?;
                HostGrant::parse(&format!("{}:{port}", server.host_str()?)).ok()
            })
            .collect();
    }
    Vec::new()
}

fn authorizer(scenario: &str, context: &Value, granted: Vec<HostGrant>) -> Result<Authorizer, String> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig::new("conformance");
    config.granted_hosts = granted;
    config.client_name = "wasmgate conformance client".into();
    config.client_metadata_url = Some("https://conformance-test.local/client-metadata.json".into());
    if let Some(id) = text("client_id") {
        let key = text("private_key_pem").map(|pem| PrivateKey {
            pem: SecretSource::Value(pem),
            algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
        });
        let method = key.as_ref().map(|_| TokenAuth::PrivateKeyJwt);
        config.client =
            ClientIdentity::Registered { id, secret: text("client_secret").map(SecretSource::Value), key, method };
    }
    if scenario.starts_with("auth/client-credentials") {
        config.grant = Grant::ClientCredentials;
    }
    let redirect = Url::parse("http://localhost:3000/callback").map_err(|e| e.to_string())?;
    let agent: Arc<dyn UserAgent> = Arc::new(FollowRedirect::new(redirect).map_err(|e| e.to_string())?);
    Authorizer::new(config, Some(agent)).map_err(|e| e.to_string())
}
