//! docs/QUICKSTART.md, command by command: a Claude Desktop configuration whose one
//! server is `npx -y @modelcontextprotocol/server-everything`, imported by `wasmgate
//! init`, looked at, reviewed, and used by a client through `wasmgate serve`.
//!
//! The server is installed by `init --install` with npm offline, from the cache that
//! `scripts/install-peers.sh` filled when it installed the same version (the test
//! command runs it first): no test uses the network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use serde_json::{Map, Value, json};
use wasmgate_client::{ClientConfig, McpClient, StdioConfig, StdioTransport};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::ProtocolVersion;

/// The version `scripts/install-peers.sh` pins, so that npm finds it in its cache.
const EVERYTHING: &str = "@modelcontextprotocol/server-everything@2026.8.31";

fn wasmgate(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate")).args(args).env("npm_config_offline", "true").output();
    out.unwrap()
}

#[tokio::test]
async fn the_quick_start_puts_a_clients_server_behind_wasmgate_in_five_commands() {
    let home = tempfile::tempdir().unwrap();
    let claude = home.path().join("claude_desktop_config.json");
    let file = json!({"globalShortcut": "", "mcpServers": {"everything": {"command": "npx", "args": ["-y", EVERYTHING, "stdio"]}}});
    std::fs::write(&claude, file.to_string()).unwrap();
    let dir = home.path().join("wasmgate");
    let (dir_arg, config) = (dir.display().to_string(), dir.join("wasmgate.toml").display().to_string());

    // 1. Import, installing the server once.
    let init = wasmgate(&["init", "--from", &claude.display().to_string(), "--dir", &dir_arg, "--install"]);
    assert!(init.status.success(), "{}", common::text(&init));
    assert!(
        common::text(&init).contains("installed @modelcontextprotocol/server-everything 2026.8.31 (npm)"),
        "{}",
        common::text(&init)
    );
    let policy = std::fs::read_to_string(dir.join("policy.toml")).unwrap();
    assert!(policy.contains("unlisted = \"ask\"") && policy.contains("confinement = \"required\""), "{policy}");
    assert!(!policy.contains("network_hosts ="), "no network granted: {policy}");
    let lock = dir.join("state/packages/everything/package-lock.json");
    assert!(std::fs::read_to_string(&lock).unwrap().contains("\"version\": \"2026.8.31\""), "exact versions recorded");
    let again = wasmgate(&["init", "--from", &claude.display().to_string(), "--dir", &dir_arg]);
    assert!(!again.status.success() && common::text(&again).contains("pass --force"), "{}", common::text(&again));

    // 2. Look: confined, every tool unreviewed.
    let tools = wasmgate(&["tools", "--config", &config]);
    let listed = common::text(&tools);
    assert!(listed.contains("confinement: confined"), "{listed}");
    assert!(listed.contains("everything__echo") && listed.contains("unreviewed"), "{listed}");

    // 3. Review and pin (here without a terminal: --yes).
    let review = wasmgate(&["review", "--config", &config, "--yes"]);
    assert!(review.status.success(), "{}", common::text(&review));
    let tools = common::text(&wasmgate(&["tools", "--config", &config]));
    assert!(tools.lines().any(|l| l.contains("everything__echo") && l.trim_end().ends_with("ask")), "{tools}");

    // 4. The client's JSON.
    let snippet = wasmgate(&["init", "--dir", &dir_arg, "--client-config"]);
    let snippet: Value = serde_json::from_slice(&snippet.stdout).unwrap();
    let server = &snippet["mcpServers"]["wasmgate"];
    assert_eq!(server["args"], json!(["serve", "--config", config]));

    // 5. A client started as that JSON says sees the tools, and a call asks first.
    let command = server["command"].as_str().unwrap();
    let args: Vec<&str> = server["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let serve = args.iter().fold(StdioConfig::new("wasmgate", command, home.path()), |s, a| s.arg(*a));
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    let client_config = ClientConfig {
        versions: vec![ProtocolVersion::V2025_11_25],
        capabilities,
        input_handler: Some(Arc::new(common::Person)),
        ..ClientConfig::default()
    };
    let transport = StdioTransport::spawn(&serve.confinement(None)).unwrap();
    let client = McpClient::connect("wasmgate", transport, client_config).await.unwrap();
    let names: Vec<String> = client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect();
    assert!(names.contains(&"everything__echo".to_owned()) && names.len() > 5, "{names:?}");
    let mut arguments = Map::new();
    arguments.insert("message".into(), json!("hello through the gate"));
    let echoed = client.call_tool("everything__echo", arguments, CancellationToken::new()).await.unwrap();
    let said: String = echoed.content.iter().filter_map(|b| b.text()).collect();
    assert!(!echoed.is_error && said.contains("hello through the gate"), "{said}");
    assert!(said.contains("<untrusted-data"), "framed as untrusted data: {said}");
    client.close().await;
    let audit = std::fs::read_to_string(Path::new(&dir).join("state/audit.jsonl")).unwrap();
    let events: Vec<String> = audit
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|record| record["tool"] == "echo" && record["call"].is_string())
        .map(|record| format!("{} {}", record["event"].as_str().unwrap(), record["approver"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(events, ["requested ", "approval caller", "started ", "finished "], "asked, then run: {audit}");
}
