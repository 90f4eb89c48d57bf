//! Finding and running the interop peers installed by scripts/install-peers.sh,
//! and the assertions every peer must pass. A missing peer fails the test (it is not
//! skipped): interop that silently does not run proves nothing.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Map, Value, json};
use wasmgate_client::{McpClient, ToolsWatch};
use wasmgate_core::CancellationToken;
use wasmgate_protocol::{CallToolResult, ContentBlock};

pub const INSTALL: &str = "scripts/install-peers.sh";

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// `<workspace>/target/peers`, or `WASMGATE_PEERS_DIR`.
pub fn peers() -> PathBuf {
    std::env::var_os("WASMGATE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/peers"))
}

/// An installed peer file, or a failure that says how to install it.
pub fn peer(relative: &str) -> PathBuf {
    let path = peers().join(relative);
    assert!(path.exists(), "interop peer {} is missing: run {INSTALL}", path.display());
    path
}

/// The Python of the peers' venv (with the `mcp` SDK).
pub fn venv_python() -> PathBuf {
    peer("venv/bin/python")
}

/// A peer HTTP server process, killed when dropped.
pub struct HttpPeer {
    pub url: String,
    _child: tokio::process::Child,
    /// Held open so that the peer never writes into a closed pipe.
    _stdout: tokio::process::ChildStdout,
}

/// Starts the Python peer on HTTP (`json` for JSON bodies instead of SSE) on a port the
/// kernel picks. The peer prints the port only once its socket listens, so there is no
/// window in which another process could take the port or a connection could be refused.
pub async fn python_http_peer(json: bool) -> HttpPeer {
    use tokio::io::AsyncBufReadExt;
    let mut command = tokio::process::Command::new(venv_python());
    command.arg(fixtures().join("python_peer.py")).arg("http");
    if json {
        command.arg("json");
    }
    let mut child = command.stdin(Stdio::null()).stdout(Stdio::piped()).kill_on_drop(true).spawn().unwrap();
    let mut stdout = tokio::io::BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    let read = tokio::time::timeout(GUARD, stdout.read_line(&mut line)).await;
    let port: u16 = match read {
        Ok(Ok(0)) => panic!("the Python peer exited before it listened (its stderr is above)"),
        Ok(Ok(_)) => line.trim().parse().unwrap_or_else(|_| panic!("the Python peer printed {line:?}, not a port")),
        Ok(Err(e)) => panic!("reading the Python peer's port: {e}"),
        Err(_) => panic!("the Python peer did not listen within {GUARD:?}"),
    };
    HttpPeer { url: format!("http://127.0.0.1:{port}/mcp"), _child: child, _stdout: stdout.into_inner() }
}

pub async fn call(client: &McpClient, tool: &str, args: Value) -> CallToolResult {
    let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
    client.call_tool(tool, args, CancellationToken::new()).await.unwrap_or_else(|e| panic!("{tool}: {e}"))
}

pub fn first_text(result: &CallToolResult) -> &str {
    result.content.iter().find_map(ContentBlock::text).unwrap_or_default()
}

/// The Python peer's three tools behave as written, whatever the transport and era.
pub async fn check_python_peer(client: &McpClient) {
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "tiny_image", "fail"] {
        assert!(names.contains(&expected), "{expected} missing from {names:?}");
    }
    let echo = call(client, "echo", serde_json::json!({"text": "hello, peer"})).await;
    assert!(!echo.is_error);
    assert_eq!(first_text(&echo), "hello, peer");

    let image = call(client, "tiny_image", serde_json::json!({})).await;
    assert!(!image.is_error);
    let block = image.content.iter().find(|b| matches!(b, ContentBlock::Image(_))).expect("an image block");
    assert_eq!(block.mime_type(), Some("image/png"));

    let fail = call(client, "fail", serde_json::json!({"reason": "no such calendar"})).await;
    assert!(fail.is_error, "a tool failure is an Ok result with isError");
    assert!(first_text(&fail).contains("no such calendar"), "{fail:?}");
}

/// How long to wait for the peer to do something it should do at once (a failure guard).
const GUARD: Duration = Duration::from_secs(15);

/// The Python peer's `grow` tool registers a tool and announces the change. The client
/// must hear it on whatever stream the era and transport use (`watch` is how: `Active`
/// for a stream it keeps, `Off` where changes arrive anyway), and list the new tool next.
pub async fn check_tool_list_change(client: &McpClient, watch: ToolsWatch) {
    let mut state = client.tools_watch();
    let reached = tokio::time::timeout(GUARD, state.wait_for(|s| *s == watch)).await.is_ok_and(|r| r.is_ok());
    assert!(reached, "the tool watch never became {watch:?}; it is {:?}", *state.borrow());
    let before = client.list_tools().await.unwrap();
    assert!(before.iter().all(|t| t.name != "grown"), "{before:?}");
    assert!(!client.tools_stale());

    let mut changes = client.tool_list_changes();
    changes.borrow_and_update();
    let grow = call(client, "grow", json!({"name": "grown"})).await;
    assert!(!grow.is_error, "{grow:?}");
    let announced = tokio::time::timeout(GUARD, changes.changed()).await.is_ok_and(|r| r.is_ok());
    assert!(announced, "no tools/list_changed reached the client");
    assert!(client.tools_stale());
    let after = client.list_tools().await.unwrap();
    assert!(after.iter().any(|t| t.name == "grown"), "{after:?}");
    assert_eq!(first_text(&call(client, "grown", json!({"text": "new here"})).await), "new here");
}
