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

use serde_json::{Map, Value};
use wasmgate_client::oauth::{
    Authorizer, ClientIdentity, FollowRedirect, Grant, OAuthConfig, PrivateKey, TokenAuth, Url, UserAgent,
};
use wasmgate_client::{CancellationToken, ClientConfig, HeaderValueSource, HttpConfig, HttpTransport, McpClient};
use wasmgate_protocol::ProtocolVersion;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
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
        http.oauth = Some(authorizer(scenario, context)?);
    }
    let transport = HttpTransport::new(&http).map_err(|e| e.to_string())?;
    let mut config = ClientConfig::default();
    if let Some(version) =
        std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").ok().and_then(|v| ProtocolVersion::parse(&v))
    {
        config.versions = vec![version];
    }
    config.tools_watch.enabled = false;
    let client = McpClient::connect("conformance", transport, config).await.map_err(|e| e.to_string())?;
    let outcome = exercise(&client).await;
    client.close().await;
    outcome
}

/// Lists the tools and calls each one the suite's servers offer with no required
/// argument, as an agent would.
async fn exercise(client: &McpClient) -> Result<(), String> {
    let tools = client.list_tools().await.map_err(|e| e.to_string())?;
    for tool in tools {
        let result = client.call_tool(&tool.name, Map::new(), CancellationToken::new()).await;
        eprintln!("called {}: {}", tool.name, if result.is_ok() { "ok" } else { "failed" });
        result.map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn authorizer(scenario: &str, context: &Value) -> Result<Authorizer, String> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let mut config = OAuthConfig::new("conformance");
    config.client_name = "wasmgate conformance client".into();
    config.client_metadata_url = Some("https://conformance-test.local/client-metadata.json".into());
    if let Some(id) = text("client_id") {
        let key = text("private_key_pem").map(|pem| PrivateKey {
            pem: HeaderValueSource::Value(pem),
            algorithm: text("signing_algorithm").unwrap_or_else(|| "ES256".into()),
        });
        let method = key.as_ref().map(|_| TokenAuth::PrivateKeyJwt);
        config.client =
            ClientIdentity::Registered { id, secret: text("client_secret").map(HeaderValueSource::Value), key, method };
    }
    if scenario.starts_with("auth/client-credentials") {
        config.grant = Grant::ClientCredentials;
    }
    let redirect = Url::parse("http://localhost:3000/callback").map_err(|e| e.to_string())?;
    let agent: Arc<dyn UserAgent> = Arc::new(FollowRedirect::new(redirect).map_err(|e| e.to_string())?);
    Authorizer::new(config, Some(agent)).map_err(|e| e.to_string())
}
