//! Reviewing through a running `wasmgate serve`: `wasmgate review` asks the gateway over
//! its control socket, the gateway writes the lock file and the decision in its audit
//! log with who made it, and a client is served the approved tool without a restart.
//! A decision on what changed since it was shown, or on nothing pending, is refused.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead as _, BufReader, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{changed, following, own_echo_server, serve_stdio, setup, stderr, stdout, wasmgate};
use serde_json::{Value, json};
use wasmgate_client::{ClientConfig, McpClient, StdioTransport};
use wasmgate_core::CancellationToken;

/// The control socket of the one gateway running on `dir`, once it listens (at most 30 s).
fn socket(dir: &Path) -> PathBuf {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let found: Vec<PathBuf> = std::fs::read_dir(dir.join("state/control"))
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        if let [one] = found.as_slice() {
            return one.clone();
        }
        assert!(std::time::Instant::now() < deadline, "no control socket: {found:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The gateway's answer to one request line.
fn ask(socket: &Path, request: &str) -> String {
    let mut stream = UnixStream::connect(socket).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    stream.write_all(format!("{request}\n").as_bytes()).unwrap();
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).unwrap();
    line.trim_end().to_owned()
}

fn records(dir: &Path, event: &str) -> Vec<Value> {
    let audit = std::fs::read_to_string(dir.join("state/audit.jsonl")).unwrap_or_default();
    audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["event"] == event).collect()
}

async fn names(client: &McpClient) -> Vec<String> {
    client.list_tools().await.unwrap().into_iter().map(|t| t.name).collect()
}

#[tokio::test]
async fn a_review_through_the_running_gateway_is_served_at_once_and_audited_with_its_reviewer() {
    let dir = setup();
    let transport = StdioTransport::spawn(&serve_stdio(dir.path())).unwrap();
    let client = McpClient::connect("wasmgate", transport, ClientConfig::default()).await.unwrap();
    assert!(names(&client).await.is_empty(), "nothing is reviewed yet");
    let mut changes = following(&client).await;
    let socket = socket(dir.path());

    // What waits, as the gateway shows it.
    let reviews: Value = serde_json::from_str(&ask(&socket, "reviews")).unwrap();
    let echo = reviews["definitions"].as_array().unwrap().iter().find(|d| d["tool"] == "echo").unwrap().clone();
    assert_eq!(echo["provider"], "echo");
    assert_eq!(echo["changed"], false);
    assert!(reviews["code"].as_array().unwrap().iter().any(|c| c["provider"] == "echo" && c["hash"].is_string()));

    // Refused: a hash that is not what was shown, nothing pending of that name, and a
    // request that is none.
    let decide = |hash: &str, tool: &str, approve: bool| {
        format!("decide {}", json!({"provider": "echo", "tool": tool, "hash": hash, "approve": approve}))
    };
    let stale = ask(&socket, &decide(&"0".repeat(64), "echo", true));
    assert!(stale.starts_with("refused: ") && stale.contains("changed since it was shown"), "{stale}");
    let none = ask(&socket, &decide(echo["hash"].as_str().unwrap(), "nosuch", true));
    assert!(none.contains("does not wait for review"), "{none}");
    assert!(ask(&socket, "decide {").starts_with("refused: not a decision"));
    assert!(ask(&socket, "approve everything").starts_with("refused: the requests are"));
    // A refusal is audited, and the tool stays withheld.
    let refused = ask(&socket, &decide(echo["hash"].as_str().unwrap(), "echo", false));
    assert_eq!(refused, "refused as asked: echo__echo");
    assert!(!names(&client).await.contains(&"echo__echo".to_owned()));

    // `wasmgate review` goes through the gateway: no terminal, so `--yes` is needed.
    let asked = wasmgate(dir.path(), &["review"]);
    assert!(!asked.status.success() && stderr(&asked).contains("no terminal to ask on"), "{}", stderr(&asked));
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}\n{}", stdout(&review), stderr(&review));
    let shown = stdout(&review);
    assert!(shown.contains("reviewing through the running gateway"), "{shown}");
    assert!(shown.contains("approved: echo__echo") && shown.contains("approved: calendar__calendar_query"), "{shown}");

    // Served without a restart: the client heard the list change, and the call runs.
    changed(&mut changes).await;
    assert!(names(&client).await.contains(&"echo__echo".to_owned()));
    let arguments = json!({"text": "reviewed"}).as_object().cloned().unwrap();
    let echoed = client.call_tool("echo__echo", arguments, CancellationToken::new()).await.unwrap();
    assert!(!echoed.is_error, "{echoed:?}");

    // The gateway wrote the lock, and each decision is audited with its reviewer.
    let lock = std::fs::read_to_string(dir.path().join("wasmgate.lock")).unwrap();
    assert!(lock.contains(echo["hash"].as_str().unwrap()), "{lock}");
    let decisions = records(dir.path(), "review");
    let user = rustix::process::getuid().as_raw();
    assert!(
        decisions.iter().all(|r| r["reviewer"].as_str().unwrap().ends_with(&format!("(uid {user})"))),
        "{decisions:?}"
    );
    let echo_decisions: Vec<bool> = decisions
        .iter()
        .filter(|r| r["provider"] == "echo" && r["tool"] == "echo")
        .map(|r| r["approved"].as_bool().unwrap())
        .collect();
    assert_eq!(echo_decisions, [false, true]);
    assert!(decisions.iter().any(|r| r["subject"] == "code" && r["provider"] == "echo" && r["approved"] == true));
    // Nothing waits now.
    let reviews: Value = serde_json::from_str(&ask(&socket, "reviews")).unwrap();
    assert_eq!(reviews["definitions"].as_array().unwrap().len(), 0, "{reviews}");
    client.close().await;
}

#[tokio::test]
async fn code_approved_through_the_running_gateway_starts_its_provider() {
    let dir = setup();
    let script = own_echo_server(dir.path());
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    std::fs::write(&script, std::fs::read_to_string(&script).unwrap() + "\n# changed after review\n").unwrap();

    // The gateway starts without it: its code changed since review.
    let transport = StdioTransport::spawn(&serve_stdio(dir.path())).unwrap();
    let client = McpClient::connect("wasmgate", transport, ClientConfig::default()).await.unwrap();
    let served = names(&client).await;
    assert!(served.contains(&"calendar__calendar_query".to_owned()), "{served:?}");
    assert!(!served.contains(&"echo__echo".to_owned()), "{served:?}");
    let mut changes = following(&client).await;
    let socket = socket(dir.path());
    let reviews: Value = serde_json::from_str(&ask(&socket, "reviews")).unwrap();
    let code = reviews["code"].as_array().unwrap().iter().find(|c| c["provider"] == "echo").unwrap().clone();
    assert_eq!(code["changed"], true, "{code}");

    // A stale hash is refused; the one shown starts the provider.
    let decide = |hash: &str| format!("decide {}", json!({"provider": "echo", "hash": hash, "approve": true}));
    assert!(ask(&socket, &decide(&"1".repeat(64))).contains("changed since it was shown"));
    let approved = ask(&socket, &decide(code["hash"].as_str().unwrap()));
    assert_eq!(approved, "approved: the code of echo; started echo");
    changed(&mut changes).await;
    assert!(names(&client).await.contains(&"echo__echo".to_owned()), "its definition was reviewed before");
    let again = stdout(&wasmgate(dir.path(), &["review", "--yes"]));
    assert!(again.contains("nothing to review"), "{again}");
    assert!(records(dir.path(), "review").iter().any(|r| r["subject"] == "code" && r["approved"] == true));
    client.close().await;
}
