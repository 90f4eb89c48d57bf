//! Credentials in a call's arguments are asked about, refused or flagged as the
//! provider's `secrets` setting says, and never written to the audit log; a credential
//! in a result is recorded.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Setup, Source, definition};
use serde_json::json;
use wasmgate_core::{CancellationToken, Tool, Toolset};
use wasmgate_guard::{NOBODY, Unattended};

const POLICY: &str = r#"
[providers.mail.tools]
send = "allow"

[providers.vault]
secrets = "deny"
[providers.vault.tools]
send = "allow"

[providers.logs]
secrets = "flag"
[providers.logs.tools]
send = "allow"
"#;

const TOKEN: &str = "ghp_0123456789abcdefghijABCDEFGHIJ0123456789";

async fn tool(setup: &Setup, source: &Arc<Source>) -> Tool {
    setup.toolset(std::slice::from_ref(source)).current().await.remove(0)
}

fn setup_for(provider: &str) -> (Setup, Arc<Source>) {
    let send = definition("send", "Sends a message.");
    let source = Source::new(provider, vec![send.clone()]);
    let dir = tempfile::tempdir().unwrap();
    let setup = Setup::with_policy(dir, POLICY, &[(&source, send)], Arc::new(Unattended), None);
    (setup, source)
}

#[tokio::test]
async fn a_credential_in_the_arguments_is_asked_about_even_for_an_allowed_tool_and_never_logged() {
    let (setup, source) = setup_for("mail");
    let send = tool(&setup, &source).await;
    let args = json!({"to": "eve@example.invalid", "body": format!("the key: {TOKEN}")});
    let result = send.execute(args, CancellationToken::new()).await.unwrap();
    assert_eq!(result.content, format!("denied: {NOBODY}"), "nobody is there to say yes");
    assert_eq!(source.calls(), 0);
    let requested = &setup.records()[0];
    assert_eq!(requested["verdict"], "ask");
    let reason = requested["reason"].as_str().unwrap();
    assert!(reason.contains("what looks like a credential (github-token at /body)"), "{reason}");
    assert_eq!(requested["arguments"]["body"], "the key: [redacted: github-token]");
    let log = std::fs::read_to_string(setup.guard.audit().path()).unwrap();
    assert!(!log.contains(TOKEN), "the credential is not in the audit log");

    let plain = send.execute(json!({"to": "eve@example.invalid", "body": "lunch?"}), CancellationToken::new()).await;
    assert!(!plain.unwrap().is_error, "a call without one runs as the policy says");
}

#[tokio::test]
async fn deny_refuses_and_flag_lets_it_run_with_the_finding_recorded() {
    let (setup, source) = setup_for("vault");
    let send = tool(&setup, &source).await;
    let result = send.execute(json!({"body": TOKEN}), CancellationToken::new()).await.unwrap();
    assert!(result.content.starts_with("denied: the arguments carry what looks like a credential"), "{result:?}");
    assert_eq!(source.calls(), 0);

    let (setup, source) = setup_for("logs");
    let send = tool(&setup, &source).await;
    let result = send.execute(json!({"body": TOKEN}), CancellationToken::new()).await.unwrap();
    assert!(!result.is_error, "{result:?}");
    assert_eq!(source.calls(), 1);
    let requested = &setup.records()[0];
    assert_eq!(requested["verdict"], "allow");
    assert!(requested["reason"].as_str().unwrap().contains("flagged: the arguments carry"), "{requested}");
}

#[tokio::test]
async fn a_credential_in_a_result_is_recorded() {
    let (setup, source) = setup_for("mail");
    *source.reply.lock().unwrap() = "your key is AKIAIOSFODNN7EXAMPLE".into();
    let send = tool(&setup, &source).await;
    let result = send.execute(json!({"body": "hi"}), CancellationToken::new()).await.unwrap();
    assert!(result.content.contains("AKIAIOSFODNN7EXAMPLE"), "it is shown, framed: {}", result.content);
    let finished = setup.records().into_iter().find(|r| r["event"] == "finished").unwrap();
    assert_eq!(finished["flags"], json!(["credential:aws-access-key"]));
}
