//! Asks answered out of band: with `ask_reviewers`, a caller's `ask` waits at the
//! gateway for a reviewer (`wasmgate approvals`) instead of asking the caller's client;
//! an approval lets it run, a denial fails it, nobody answering by the deadline denies
//! it, nobody answers their own call, and the audit log names who answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::console::create;
use common::{Person, serve_http_with, setup, stderr, stdout, wasmgate};
use hmac::Mac as _;
use serde_json::{Map, Value, json};
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, InputHandler, McpClient};
use wasmgate_oauth::SecretSource;
use wasmgate_testing::{Issuer, Loopback, Response};

/// The secret the webhook signs with.
const SECRET: &str = "webhook-secret-0123456789abcdef0123";

/// A client of the gateway at `url` with `token`, whose person approves every question
/// put to them (so an ask that reached them would run).
async fn client(url: &str, token: &str) -> McpClient {
    let mut capabilities = Map::new();
    capabilities.insert("elicitation".into(), json!({}));
    let config = ClientConfig {
        capabilities,
        input_handler: Some(Arc::new(Person) as Arc<dyn InputHandler>),
        ..ClientConfig::default()
    };
    let http = HttpConfig { bearer: Some(SecretSource::Value(token.to_owned())), ..HttpConfig::new("wasmgate", url) };
    McpClient::connect("wasmgate", HttpTransport::new(&http).unwrap(), config).await.unwrap()
}

/// The asks waiting at the gateway on `dir`, once there are `count` (at most 60 s).
async fn waiting(dir: &std::path::Path, count: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let out = wasmgate(dir, &["approvals"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let shown: Vec<String> = stdout(&out).lines().filter(|l| l.contains(" wants to ")).map(str::to_owned).collect();
        if shown.len() == count {
            return shown.into_iter().map(Value::String).collect();
        }
        assert!(std::time::Instant::now() < deadline, "{count} asks did not come: {}", stdout(&out));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `count`th request the relay received, once it has (at most 60 s).
async fn until_heard(
    heard: &std::sync::Mutex<Vec<wasmgate_testing::Request>>,
    count: usize,
) -> wasmgate_testing::Request {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(request) = heard.lock().unwrap().get(count - 1) {
            return request.clone();
        }
        assert!(std::time::Instant::now() < deadline, "the webhook was not called");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The id an `approvals` line starts with.
fn id(line: &Value) -> String {
    line.as_str().unwrap().split_once(' ').unwrap().0.to_owned()
}

fn approvals(dir: &std::path::Path) -> Vec<Value> {
    let audit = std::fs::read_to_string(dir.join("state/audit.jsonl")).unwrap_or_default();
    audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).filter(|r| r["event"] == "approval").collect()
}

#[tokio::test]
async fn an_ask_routed_to_reviewers_waits_for_one_who_did_not_make_the_call() {
    let dir = setup();
    let issuer = Issuer::start().await;
    // The webhook's relay: keeps what it is sent.
    let heard = Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = Arc::clone(&heard);
    let relay = Loopback::start(move |request| {
        keep.lock().unwrap().push(request);
        Response::json(&json!({}))
    })
    .await;
    let config = dir.path().join("wasmgate.toml");
    let webhook =
        format!("\n[serve.approvals]\nwebhook = {:?}\nsecret_env = \"WASMGATE_TEST_WEBHOOK\"\n", relay.url("/hook"));
    let text = std::fs::read_to_string(&config).unwrap() + &issuer.serve_oauth() + &webhook;
    std::fs::write(&config, text).unwrap();
    let policy = dir.path().join("policy.toml");
    let rules = std::fs::read_to_string(&policy).unwrap();
    assert!(rules.contains("calendar_create = \"ask\""), "{rules}");
    let routed =
        rules.replacen("[providers.calendar]\n", "[providers.calendar]\nask_reviewers = [\"calendar_create\"]\n", 1);
    std::fs::write(&policy, format!("{routed}\n[approvals]\ndeadline_seconds = 600\n")).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let (_served, url) = serve_http_with(dir.path(), &[], &[("WASMGATE_TEST_WEBHOOK", SECRET)]);
    let bob = Arc::new(client(&url, &issuer.token("bob", &["staff"])).await);
    let none = wasmgate(dir.path(), &["approvals"]);
    assert_eq!(stdout(&none), "no call waits for a reviewer\n");

    // Approved by a reviewer: the call runs, though bob's client was never asked.
    let approved = create(&bob, "approved");
    let shown = waiting(dir.path(), 1).await;
    let line = shown[0].as_str().unwrap();
    assert!(line.contains("bob wants to run calendar_create of calendar with {"), "{line}");
    assert!(line.contains("\"title\":\"approved\"") && line.contains("the policy says: "), "{line}");
    // The relay heard of it, signed over the timestamp and the body.
    let announced = until_heard(&heard, 1).await;
    let header = |name: &str| {
        let line = announced.head.lines().find(|l| l.to_ascii_lowercase().starts_with(&format!("{name}: "))).unwrap();
        line.split_once(": ").unwrap().1.trim().to_owned()
    };
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(format!("{}.", header("x-wasmgate-timestamp")).as_bytes());
    mac.update(&announced.body);
    assert_eq!(header("x-wasmgate-signature"), format!("sha256={}", hex::encode(mac.finalize().into_bytes())));
    let body = announced.json();
    assert_eq!(body["event"], "approval_pending");
    assert_eq!(
        (body["ask"]["id"].as_str().unwrap(), body["ask"]["caller"].as_str()),
        (id(&shown[0]).as_str(), Some("bob"))
    );
    let out = wasmgate(dir.path(), &["approvals", "--approve", &id(&shown[0])]);
    assert_eq!(stdout(&out), format!("approved: {}\n", id(&shown[0])));
    let (is_error, text) = approved.await.unwrap();
    assert!(!is_error, "{text}");

    // Denied by a reviewer: the call fails as denied.
    let denied = create(&bob, "denied");
    let shown = waiting(dir.path(), 1).await;
    let out = wasmgate(dir.path(), &["approvals", "--deny", &id(&shown[0])]);
    assert_eq!(stdout(&out), format!("denied: {}\n", id(&shown[0])));
    let (is_error, text) = denied.await.unwrap();
    assert!(is_error && text.contains("denied") && text.contains("a reviewer declined"), "{text}");
    let again = wasmgate(dir.path(), &["approvals", "--approve", &id(&shown[0])]);
    assert_eq!(again.status.code(), Some(2), "answered once: {}", stdout(&again));

    // Nobody answers their own call, and nobody answering by the deadline denies it.
    std::fs::write(&policy, format!("{routed}\n[approvals]\ndeadline_seconds = 2\n")).unwrap();
    let reload = wasmgate(dir.path(), &["reload"]);
    assert!(reload.status.success(), "{}", stdout(&reload));
    let me = String::from_utf8(std::process::Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    let mine = Arc::new(client(&url, &issuer.token(me.trim(), &["staff"])).await);
    let own = create(&mine, "own");
    let shown = waiting(dir.path(), 1).await;
    let out = wasmgate(dir.path(), &["approvals", "--approve", &id(&shown[0])]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stdout(&out).contains("nobody answers their own call"), "{}", stdout(&out));
    let (is_error, text) = own.await.unwrap();
    assert!(is_error && text.contains("no reviewer answered within 2 s"), "{text}");

    // The audit log names who answered, and nobody for the deadline.
    let uid = rustix::process::getuid().as_raw();
    let answered: Vec<(bool, String)> = approvals(dir.path())
        .iter()
        .map(|r| (r["approved"].as_bool().unwrap(), r["approver"].as_str().unwrap().to_owned()))
        .collect();
    let reviewer = format!("local user {} (uid {uid})", me.trim());
    assert_eq!(answered, [(true, reviewer.clone()), (false, reviewer), (false, "nobody".to_owned())]);
    bob.close().await;
    mine.close().await;
}

#[test]
fn a_webhook_without_its_secret_or_off_the_egress_rules_stops_start_up() {
    let dir = setup();
    let config = dir.path().join("wasmgate.toml");
    let base = std::fs::read_to_string(&config).unwrap();
    for (table, says) in [
        ("webhook = \"http://127.0.0.1:9/hook\"\n", "needs secret_env"),
        ("webhook = \"http://127.0.0.1:9/hook\"\nsecret_env = \"WASMGATE_TEST_UNSET\"\n", "is not set"),
        ("webhook = \"http://relay.example/hook\"\nsecret_env = \"WASMGATE_TEST_WEBHOOK\"\n", "not https"),
    ] {
        std::fs::write(&config, format!("{base}\n[serve.approvals]\n{table}")).unwrap();
        let out = common::command(dir.path())
            .env("WASMGATE_TEST_WEBHOOK", SECRET)
            .env_remove("WASMGATE_TEST_UNSET")
            .args(["serve", "--http", "127.0.0.1:0"])
            .output()
            .unwrap();
        assert!(!out.status.success() && stderr(&out).contains(says), "{table}: {}", stderr(&out));
    }
}
