//! Reloading a running `wasmgate serve`: `wasmgate reload` and SIGHUP read the policy
//! again, a file that does not load is refused with the rules kept, clients over stdio
//! hear that the tool list changed, and each reload is in the audit log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{changed, following, serve_http, serve_stdio, setup, stderr, stdout, wasmgate};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, McpClient, StdioTransport};
use wasmgate_core::CancellationToken;
use wasmgate_testing::children;

fn reviewed() -> tempfile::TempDir {
    let dir = setup();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    dir
}

fn args(value: Value) -> serde_json::Map<String, Value> {
    value.as_object().cloned().unwrap()
}

fn text(result: &wasmgate_protocol::CallToolResult) -> String {
    result.content.iter().filter_map(|b| b.text()).collect()
}

async fn names(client: &McpClient) -> Vec<String> {
    client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect()
}

fn edit_policy(dir: &std::path::Path, from: &str, to: &str) {
    let path = dir.join("policy.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains(from), "{text}");
    std::fs::write(&path, text.replace(from, to)).unwrap();
}

fn reloads(dir: &std::path::Path) -> Vec<Value> {
    let audit = std::fs::read_to_string(dir.join("state/audit.jsonl")).unwrap_or_default();
    audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["event"] == "reload").collect()
}

/// Waits (at most 30 s) until `dir`'s audit log holds `count` reload records.
fn wait_for_reloads(dir: &std::path::Path, count: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let found = reloads(dir);
        if found.len() >= count || Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test]
async fn wasmgate_reload_applies_a_new_policy_and_refuses_one_that_does_not_load() {
    let dir = reviewed();
    let (_served, url) = serve_http(dir.path(), &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    assert!(names(&client).await.contains(&"echo__echo".to_owned()));
    let mut changes = following(&client).await;

    edit_policy(dir.path(), "echo = \"allow\"", "echo = \"deny\"");
    let out = wasmgate(dir.path(), &["reload"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).ends_with(": reloaded\n"), "{}", stdout(&out));
    changed(&mut changes).await;
    assert!(!names(&client).await.contains(&"echo__echo".to_owned()), "denied to everyone: not listed");

    // A policy that does not parse is refused, and the rules in force stay.
    edit_policy(dir.path(), "echo = \"deny\"", "echo = \"allow\"\n[providers.echo.tools.broken");
    let out = wasmgate(dir.path(), &["reload"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stdout(&out).contains(": refused: "), "{}", stdout(&out));
    assert!(stdout(&out).contains("policy.toml"), "the error names the file: {}", stdout(&out));
    assert!(!names(&client).await.contains(&"echo__echo".to_owned()), "the old rules stay");

    // A provider whose start-time settings changed is started anew.
    let fixed =
        std::fs::read_to_string(dir.path().join("policy.toml")).unwrap().replace("\n[providers.echo.tools.broken", "");
    std::fs::write(
        dir.path().join("policy.toml"),
        fixed.replace("[providers.echo]\n", "[providers.echo]\nunix_sockets = true\n"),
    )
    .unwrap();
    let out = wasmgate(dir.path(), &["reload"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).ends_with(": reloaded; started echo; stopped echo\n"), "{}", stdout(&out));
    changed(&mut changes).await;
    assert!(names(&client).await.contains(&"echo__echo".to_owned()));
    let echoed = client.call_tool("echo__echo", args(json!({"text": "anew"})), CancellationToken::new()).await.unwrap();
    assert!(!echoed.is_error && text(&echoed).contains("anew"), "{}", text(&echoed));

    // What the gateway reads only once is named, and the rest applies.
    let config = dir.path().join("wasmgate.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{toml}\n[limits]\ndeadline_ms = 5000\n")).unwrap();
    let out = wasmgate(dir.path(), &["reload"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).ends_with(": reloaded; these apply when it starts again: limits changed\n"),
        "{}",
        stdout(&out)
    );
    client.close().await;

    let records = wait_for_reloads(dir.path(), 4);
    assert_eq!(records.len(), 4, "{records:?}");
    assert!(records[0].get("refused").is_none() && records[0].get("restart").is_none(), "{}", records[0]);
    assert!(records[1]["refused"].as_str().unwrap().contains("policy.toml"), "{}", records[1]);
    assert_eq!((&records[2]["started"], &records[2]["stopped"]), (&json!(["echo"]), &json!(["echo"])));
    assert_eq!(records[3]["restart"], json!(["limits changed"]));
}

/// Adds a second echo server, `twin`, to `dir`'s configuration and policy.
fn add_twin(dir: &std::path::Path) {
    let config = dir.join("wasmgate.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    let echo = &toml[toml.find("[providers.echo]").unwrap()..];
    std::fs::write(&config, format!("{toml}\n{}", echo.replace("[providers.echo]", "[providers.twin]"))).unwrap();
    let policy = dir.join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap();
    let echo = &rules[rules.find("[providers.echo]").unwrap()..];
    let twin = echo
        .replace("[providers.echo]", "[providers.twin]")
        .replace("[providers.echo.tools]", "[providers.twin.tools]");
    std::fs::write(&policy, format!("{rules}\n{twin}")).unwrap();
}

/// Removes `twin` again.
fn remove_twin(dir: &std::path::Path) {
    for file in ["wasmgate.toml", "policy.toml"] {
        let path = dir.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let cut = text.find("\n[providers.twin]").unwrap();
        std::fs::write(&path, &text[..cut]).unwrap();
    }
}

#[tokio::test]
async fn a_reload_starts_a_provider_added_and_stops_one_removed() {
    // The twin is reviewed beforehand (review needs the audit log a running gateway
    // holds), then left out of the configuration the gateway starts with.
    let dir = reviewed();
    add_twin(dir.path());
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    remove_twin(dir.path());
    let (served, url) = serve_http(dir.path(), &[]);
    let client = wasmgate_testing::http_client(&url, &[], None).await;
    let mut changes = following(&client).await;
    let before = children(served.0.id());
    assert!(!names(&client).await.contains(&"twin__echo".to_owned()));

    add_twin(dir.path());
    let out = wasmgate(dir.path(), &["reload"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).ends_with(": reloaded; started twin\n"), "{}", stdout(&out));
    changed(&mut changes).await;
    assert!(names(&client).await.contains(&"twin__echo".to_owned()));
    let echoed = client.call_tool("twin__echo", args(json!({"text": "twin"})), CancellationToken::new()).await.unwrap();
    assert!(!echoed.is_error && text(&echoed).contains("twin"), "{}", text(&echoed));
    assert_eq!(children(served.0.id()).len(), before.len() + 1, "one more server process");

    remove_twin(dir.path());
    let out = wasmgate(dir.path(), &["reload"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(stdout(&out).ends_with(": reloaded; stopped twin\n"), "{}", stdout(&out));
    changed(&mut changes).await;
    assert!(!names(&client).await.contains(&"twin__echo".to_owned()));
    assert!(names(&client).await.contains(&"echo__echo".to_owned()), "the others run on");
    let deadline = Instant::now() + Duration::from_secs(30);
    while children(served.0.id()).len() != before.len() {
        assert!(Instant::now() < deadline, "the removed server's process did not end");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A required provider that cannot start refuses the whole reload.
    add_twin(dir.path());
    let config = dir.path().join("wasmgate.toml");
    let toml = std::fs::read_to_string(&config).unwrap();
    let broken = toml.replace("[providers.twin]\n", "[providers.twin]\nrequired = true\n");
    let (head, tail) = broken.split_once("[providers.twin]").unwrap();
    let tail = tail.replacen("args = [", "args = [\"/nonexistent/server.py\", ", 1);
    std::fs::write(&config, format!("{head}[providers.twin]{tail}")).unwrap();
    let out = wasmgate(dir.path(), &["reload"]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stdout(&out).contains(": refused: ") && stdout(&out).contains("twin"), "{}", stdout(&out));
    assert!(!names(&client).await.contains(&"twin__echo".to_owned()));
    assert_eq!(children(served.0.id()).len(), before.len(), "what it started was stopped again");
    client.close().await;
}

#[test]
fn reload_without_a_running_gateway_says_so() {
    let dir = setup();
    let out = wasmgate(dir.path(), &["reload"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no running gateway of"), "{}", stderr(&out));
    assert!(stderr(&out).contains("wasmgate serve"), "{}", stderr(&out));
}

#[test]
fn a_control_socket_left_by_a_gateway_that_did_not_end_cleanly_is_removed() {
    let dir = setup();
    let control = dir.path().join("state/control");
    std::fs::create_dir_all(&control).unwrap();
    let stale = control.join("1.sock");
    // Bound, then closed: the file stays, and nothing listens on it.
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let out = wasmgate(dir.path(), &["reload"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("no running gateway of"), "{}", stderr(&out));
    assert!(!stale.exists(), "the socket nobody listens on is removed");
}

#[tokio::test]
async fn sighup_reloads_and_a_stdio_client_hears_the_tool_list_changed() {
    let dir = reviewed();
    let server = serve_stdio(dir.path());
    let transport = StdioTransport::spawn(&server).unwrap();
    let pid = transport.pid().expect("a child process");
    let client = McpClient::connect("wasmgate", transport, ClientConfig::default()).await.unwrap();
    assert!(names(&client).await.contains(&"echo__echo".to_owned()));
    let mut changes = following(&client).await;

    edit_policy(dir.path(), "echo = \"allow\"", "echo = \"deny\"");
    let sent = std::process::Command::new("kill").args(["-HUP", &pid.to_string()]).status().unwrap();
    assert!(sent.success());
    changed(&mut changes).await;
    assert!(!names(&client).await.contains(&"echo__echo".to_owned()));
    client.close().await;
    assert_eq!(wait_for_reloads(dir.path(), 1).len(), 1);
}
