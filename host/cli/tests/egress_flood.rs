//! A stdio server that floods the egress proxy with refused connections, through the
//! gateway: the audit log grows by a bounded number of records, every connection is
//! still accounted for, the server is withheld once it goes over the rate of refusals
//! (audited once), and the gateway goes on serving the other providers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::time::Duration;

use common::{python, serve_stdio, setup, stderr, stdout, wasmgate};
use serde_json::{Map, Value, json};
use wasmgate_client::{ClientConfig, McpClient, StdioTransport};
use wasmgate_core::CancellationToken;

const PATIENCE: Duration = Duration::from_secs(120);
const FLOOD: u64 = 10_000;

fn records(dir: &Path) -> Vec<Value> {
    let log = std::fs::read_to_string(dir.join("state/audit.jsonl")).unwrap();
    log.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

async fn call(client: &McpClient, tool: &str, args: Value) -> (bool, String) {
    let args: Map<String, Value> = args.as_object().cloned().unwrap();
    match client.call_tool(tool, args, CancellationToken::new()).await {
        Ok(result) => (!result.is_error, result.content.iter().filter_map(|b| b.text()).collect()),
        Err(e) => (false, e.to_string()),
    }
}

#[tokio::test]
async fn a_server_flooding_the_proxy_with_refused_connections_is_withheld_and_the_others_are_served() {
    let dir = setup();
    let dir = dir.path();
    // The one host it is granted; the flood asks for another.
    let granted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let port = granted.local_addr().unwrap().port();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../client/tests/fixtures").canonicalize().unwrap();
    let (python, dirs) = python();
    let mut config = std::fs::read_to_string(dir.join("wasmgate.toml")).unwrap();
    config.push_str(&format!(
        "\n[providers.hostile]\ncommand = {:?}\nargs = [{:?}]\nread_exec = {:?}\n",
        python.display().to_string(),
        fixtures.join("hostile_server.py").display().to_string(),
        dirs.iter().map(|d| d.display().to_string()).collect::<Vec<_>>(),
    ));
    std::fs::write(dir.join("wasmgate.toml"), config).unwrap();
    let mut policy = std::fs::read_to_string(dir.join("policy.toml")).unwrap();
    policy.push_str(&format!(
        "\n[providers.hostile]\nread_paths = [{:?}]\nnetwork_hosts = [\"127.0.0.1:{port}\"]\n\n\
         [providers.hostile.tools]\necho = \"allow\"\nproxy_flood = \"allow\"\n",
        fixtures.display().to_string()
    ));
    std::fs::write(dir.join("policy.toml"), policy).unwrap();
    let review = wasmgate(dir, &["review", "--yes"]);
    assert!(review.status.success(), "{}{}", stdout(&review), stderr(&review));

    let transport = StdioTransport::spawn(&serve_stdio(dir)).unwrap();
    let config = ClientConfig { request_timeout: PATIENCE, call_timeout: PATIENCE, ..ClientConfig::default() };
    let client = McpClient::connect("wasmgate", transport, config).await.unwrap();
    let (up, said) = call(&client, "hostile__echo", json!({"text": "up"})).await;
    assert!(up, "the hostile server starts confined, with its proxy: {said}");

    let (_, said) = call(&client, "hostile__proxy_flood", json!({"target": "evil.example:443", "count": FLOOD})).await;
    // Withheld part-way: the call in flight fails, or ends with what it managed, and
    // the provider's tools are gone from the list.
    let mut gone = String::new();
    for _ in 0..600 {
        let (ok, said) = call(&client, "hostile__echo", json!({"text": "still here?"})).await;
        if !ok && said.contains("no tool \"hostile__echo\"") {
            gone = said;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!gone.is_empty(), "the flooder is withheld (flood: {said})");
    let (ok, said) = call(&client, "echo__echo", json!({"text": "others are served"})).await;
    assert!(ok && said.contains("others are served"), "{said}");
    client.close().await;

    // Every connection is accounted for, in a bounded number of records.
    let records = records(dir);
    let hostile: Vec<&Value> = records.iter().filter(|r| r["provider"] == "hostile").collect();
    let own = hostile.iter().filter(|r| r["event"] == "egress").count() as u64;
    let summaries = hostile.iter().filter(|r| r["event"] == "egress_summary");
    let coalesced: u64 = summaries.clone().map(|r| r["count"].as_u64().unwrap()).sum();
    assert!(own < 1_000, "{own} records of their own for the flood");
    assert!(summaries.count() < 50);
    assert!(own + coalesced >= 500, "the burst of refusals, at least, was accounted for: {own} + {coalesced}");
    let warnings: Vec<&&Value> = hostile
        .iter()
        .filter(|r| r["event"] == "warning" && r["message"].as_str().unwrap().contains("is withheld"))
        .collect();
    assert_eq!(warnings.len(), 1, "withheld once, audited once: {warnings:?}");
    let why = warnings[0]["message"].as_str().unwrap();
    assert!(why.contains("refused connections or lookups") && why.contains("over the rate"), "{why}");
    assert!(granted.set_nonblocking(true).is_ok() && granted.accept().is_err(), "the granted host saw nothing");
}
