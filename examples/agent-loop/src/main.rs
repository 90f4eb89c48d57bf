//! An agent loop over a real MCP server: a scripted model calls the tools of
//! `@modelcontextprotocol/server-everything` (installed by `scripts/install-peers.sh`)
//! through the adapter, every result is rendered by the json-text formatter in the
//! sandbox (resources too, through the optional `read_resource` tool), and the program
//! prints what the model sees, turn by turn.
//!
//! Run: `cargo run -p wasmgate-example-agent-loop [PATH-TO-server-everything/dist/index.js]`

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::json;
use wasmgate_adapter::{Formatters, McpProvider, McpToolset};
use wasmgate_agent::{AgentConfig, AllowAll, Message, ModelTurn, ScriptedModel, run_agent};
use wasmgate_client::{ClientConfig, StdioConfig, StdioTransport};
use wasmgate_confine::{Confinement, provider_workdir};
use wasmgate_core::CancellationToken;
use wasmgate_sandbox::{CallLimits, Sandbox, SandboxConfig};

const EVERYTHING: &str = "target/peers/npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js";

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt().with_writer(std::io::stderr).with_env_filter("warn").init();
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let entry = std::env::args().nth(1).map_or_else(|| workspace.join(EVERYTHING), PathBuf::from);
    if !entry.is_file() {
        bail!("{} not found: run scripts/install-peers.sh first, or pass the server's path", entry.display());
    }

    let sandbox = Sandbox::new(SandboxConfig::default())?;
    let json_text = sandbox.load_formatter("json-text", wasmgate_guests::JSON_TEXT, CallLimits::default())?;
    let formatters = Arc::new(Formatters::new(json_text));
    // The server runs confined (the default): its own working directory under the
    // gateway's state directory, read-only access to its `node_modules`, nothing else.
    let state = workspace.join("target/agent-loop-state");
    let workdir = provider_workdir(&state, "everything")?;
    let modules = entry.ancestors().find(|dir| dir.ends_with("node_modules")).unwrap_or(&entry).canonicalize()?;
    let confinement = Confinement::default().read_only(modules);
    let server =
        StdioConfig::new("everything", "node", workdir).arg(&entry).arg("stdio").confinement(Some(confinement));
    let transport = StdioTransport::spawn(&server).context("starting server-everything")?;
    let provider = McpProvider::connect("everything", transport, ClientConfig::default(), formatters).await?;
    let read_resource = provider.resource_tool().await?.context("server-everything lists resources")?;
    let toolset = McpToolset::new(vec![provider.clone()]).with_tools([read_resource]);

    let model = ScriptedModel::new([
        ModelTurn::calls("Let me say hello.", [("everything__echo", json!({"message": "hello from the agent"}))]),
        ModelTurn::calls(
            "Now the weather, and a picture.",
            [
                ("everything__get-structured-content", json!({"location": "Chicago"})),
                ("everything__get-tiny-image", json!({})),
            ],
        ),
        ModelTurn::calls("And a sum, with a mistake.", [("everything__get-sum", json!({"a": "one", "b": 2}))]),
        ModelTurn::calls("Fixed.", [("everything__get-sum", json!({"a": 1, "b": 2}))]),
        ModelTurn::calls(
            "And one of its documents.",
            [("everything.read_resource", json!({"uri": "demo://resource/static/document/extension.md"}))],
        ),
        ModelTurn::answer("All done."),
    ]);
    let mut conversation = vec![Message::User("Show me what these tools do.".into())];
    let outcome =
        run_agent(&model, &toolset, &AllowAll, &mut conversation, &AgentConfig::default(), &CancellationToken::new())
            .await;

    let offered = model.seen().first().map(|seen| seen.tools.len()).unwrap_or_default();
    println!("The model was offered {offered} tools of server-everything.\n");
    for message in &conversation {
        print_message(message);
    }
    provider.close().await;
    let answer = outcome?;
    println!("\nThe loop ended with the model's answer: {answer}");
    Ok(())
}

fn print_message(message: &Message) {
    match message {
        Message::User(text) => println!("user> {text}"),
        Message::Assistant(turn) => {
            println!("model> {}", turn.text);
            for call in &turn.tool_calls {
                println!("  calls {} {}", call.name, call.input);
            }
        }
        Message::ToolResult { call_id, content, is_error, status } => {
            let marker = if *is_error { " (error)" } else { "" };
            println!("tool result for {call_id}{marker} [{status:?}]:");
            for line in content.lines() {
                println!("  | {line}");
            }
        }
    }
}
