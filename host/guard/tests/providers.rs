//! Deny and ask for real providers: an MCP server (over the in-memory transport) and a
//! WASM tool component (the calendar) go through the same guard.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};
use wasmgate_adapter::{ComponentProvider, Formatters, McpProvider};
use wasmgate_audit::{AuditLog, Options};
use wasmgate_client::{ClientConfig, FakeServer, FakeTransport};
use wasmgate_core::{CancellationToken, Tool, ToolSource, Toolset};
use wasmgate_guard::{Guard, GuardedToolset, NOBODY, Unattended};
use wasmgate_policy::{Lock, Policy};
use wasmgate_protocol::Id;
use wasmgate_sandbox::{CallLimits, DirGrant, Grants, Sandbox, SandboxConfig};

const POLICY: &str = r#"
[providers.calendar.tools]
calendar_query = "allow"
calendar_create = "ask"
calendar_delete = "deny"
"#;

fn formatters(sandbox: &Sandbox) -> Arc<Formatters> {
    let json_text = sandbox.load_formatter("json-text", wasmgate_guests::JSON_TEXT, CallLimits::default()).unwrap();
    Arc::new(Formatters::new(json_text))
}

/// A guard whose lock has reviewed everything `source` offers now, and its toolset.
async fn guarded(source: Arc<dyn ToolSource>, dir: &Path) -> GuardedToolset {
    let mut lock = Lock::default();
    for offer in source.offers().await.0 {
        lock.approve(&offer.provider, &offer.definition).unwrap();
    }
    let audit = Arc::new(AuditLog::open(&dir.join("audit.jsonl"), Options::default()).unwrap());
    let guard = Guard::new(Policy::from_toml(POLICY, "test").unwrap(), lock, None, Arc::new(Unattended), audit);
    GuardedToolset::new(guard, vec![source])
}

fn named<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|t| t.spec.name == name).unwrap()
}

async fn deny_and_ask_paths(tools: &[Tool]) {
    let create = named(tools, "calendar__calendar_create");
    let args = json!({"user": "alice", "title": "lunch", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    let asked = create.execute(args, CancellationToken::new()).await.unwrap();
    assert_eq!(asked.content, format!("denied: {NOBODY}"));
    let delete = named(tools, "calendar__calendar_delete");
    let denied = delete.execute(json!({"user": "alice", "id": "1"}), CancellationToken::new()).await.unwrap();
    assert_eq!(denied.content, "denied: the policy denies `calendar_delete`");
}

#[tokio::test]
async fn a_wasm_component_tool_goes_through_allow_ask_and_deny() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    let component = sandbox
        .load_tool_provider_file("calendar", Path::new(wasmgate_guests::CALENDAR_PATH), CallLimits::default())
        .unwrap();
    let grants = Grants::none().with_dir(DirGrant::read_write(&data, "/data"));
    let calendar =
        ComponentProvider::new("calendar", component, grants, CallLimits::default(), formatters(&sandbox)).unwrap();
    let tools = guarded(Arc::new(calendar), dir.path()).await.current().await;

    deny_and_ask_paths(&tools).await;
    let query = named(&tools, "calendar__calendar_query");
    let listed = query.execute(json!({"user": "alice"}), CancellationToken::new()).await.unwrap();
    assert!(listed.content.contains("<untrusted-data boundary="), "{}", listed.content);
    assert!(!listed.content.contains("lunch"), "the asked-for create never ran: {}", listed.content);
}

/// A calendar MCP server that counts the calls it gets.
async fn serve(mut server: FakeServer, calls: Arc<AtomicUsize>) {
    let tools: Vec<Value> = ["calendar_query", "calendar_create", "calendar_delete"]
        .iter()
        .map(|name| json!({"name": name, "inputSchema": {"type": "object"}}))
        .collect();
    while let Some(message) = server.recv().await {
        let Ok(id) = Id::from_value(&message["id"]) else { continue };
        let result = match message["method"].as_str().unwrap_or_default() {
            "server/discover" => json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
            "tools/list" => json!({"tools": tools}),
            "tools/call" => {
                calls.fetch_add(1, Ordering::SeqCst);
                json!({"content": [{"type": "text", "text": "no events"}]})
            }
            _ => json!({}),
        };
        server.respond(&id, result).await;
    }
}

#[tokio::test]
async fn an_mcp_tool_goes_through_allow_ask_and_deny() {
    let dir = tempfile::tempdir().unwrap();
    let sandbox = Sandbox::new(SandboxConfig::default()).unwrap();
    let (transport, server) = FakeTransport::pair();
    let calls = Arc::new(AtomicUsize::new(0));
    tokio::spawn(serve(server, Arc::clone(&calls)));
    let provider =
        McpProvider::connect("calendar", transport, ClientConfig::default(), formatters(&sandbox)).await.unwrap();
    let tools = guarded(Arc::new(provider), dir.path()).await.current().await;

    deny_and_ask_paths(&tools).await;
    assert_eq!(calls.load(Ordering::SeqCst), 0, "neither the asked nor the denied call reached the server");
    let query = named(&tools, "calendar__calendar_query");
    let result = query.execute(json!({}), CancellationToken::new()).await.unwrap();
    assert!(result.content.contains("no events"));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
