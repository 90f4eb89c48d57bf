//! The optional `read_resource` tool: listed resources only, contents through the formatter.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{Reply, Upstream, formatters, provider, text};
use serde_json::json;
use wasmgate_core::CancellationToken;

fn upstream_with_resources() -> std::sync::Arc<Upstream> {
    let upstream = Upstream::new(vec![], |_, _| Reply::Result(text("x", false)));
    *upstream.resources.lock().unwrap() = vec![
        (
            json!({"uri": "mem://notes", "name": "notes", "description": "the team's notes"}),
            json!([{"uri": "mem://notes", "mimeType": "text/plain", "text": "buy milk\u{1b}[2J"}]),
        ),
        (
            json!({"uri": "mem://logo", "name": "logo"}),
            json!([{"uri": "mem://logo", "mimeType": "image/png", "blob": "iVBORw0KGgoAAAANSUhEUg=="}]),
        ),
    ];
    upstream
}

#[tokio::test]
async fn listed_resources_are_read_and_rendered_by_the_formatter() {
    let upstream = upstream_with_resources();
    let provider = provider(upstream, formatters(None)).await;
    let tool = provider.resource_tool().await.unwrap().expect("the provider has resources");
    assert_eq!(tool.spec.name, "p.read_resource");
    assert!(tool.spec.description.contains("mem://notes (the team's notes)"), "{}", tool.spec.description);

    let notes = tool.execute(json!({"uri": "mem://notes"}), CancellationToken::new()).await.unwrap();
    assert!(!notes.is_error);
    assert!(notes.content.contains("buy milk"), "{}", notes.content);
    assert!(!notes.content.contains('\u{1b}'), "cleaned by the formatter: {:?}", notes.content);

    let logo = tool.execute(json!({"uri": "mem://logo"}), CancellationToken::new()).await.unwrap();
    assert!(logo.content.contains("image/png"), "{}", logo.content);
    assert!(!logo.content.contains("iVBOR"), "no base64 reaches the model: {}", logo.content);
}

#[tokio::test]
async fn unlisted_uris_are_refused_after_one_fresh_look() {
    let upstream = upstream_with_resources();
    let provider = provider(upstream.clone(), formatters(None)).await;
    let tool = provider.resource_tool().await.unwrap().unwrap();
    let refused = tool.execute(json!({"uri": "file:///etc/passwd"}), CancellationToken::new()).await.unwrap();
    assert!(refused.is_error);
    assert!(refused.content.starts_with("unknown resource"), "{}", refused.content);

    upstream
        .resources
        .lock()
        .unwrap()
        .push((json!({"uri": "mem://new", "name": "new"}), json!([{"uri": "mem://new", "text": "fresh"}])));
    let fresh = tool.execute(json!({"uri": "mem://new"}), CancellationToken::new()).await.unwrap();
    assert!(fresh.content.contains("fresh"), "a resource added later is found: {}", fresh.content);

    let missing = tool.execute(json!({}), CancellationToken::new()).await.unwrap();
    assert!(missing.is_error);
}

#[tokio::test]
async fn a_provider_without_resources_has_no_resource_tool() {
    let upstream = Upstream::new(vec![], |_, _| Reply::Result(text("x", false)));
    let provider = provider(upstream, formatters(None)).await;
    assert!(provider.resource_tool().await.unwrap().is_none());
}

#[tokio::test]
async fn the_fresh_look_for_an_unlisted_uri_ends_when_the_caller_cancels() {
    let upstream = upstream_with_resources();
    let provider = provider(upstream.clone(), formatters(None)).await;
    let tool = provider.resource_tool().await.unwrap().unwrap();
    upstream.silent_lists.store(true, std::sync::atomic::Ordering::SeqCst);
    let cancel = CancellationToken::new();
    let read = tokio::spawn({
        let cancel = cancel.clone();
        async move { tool.execute(json!({"uri": "mem://unlisted"}), cancel).await }
    });
    let looked = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while *upstream.lists.lock().unwrap() == 0 {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    looked.await.expect("the fresh look starts");
    cancel.cancel();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(10), read).await.expect("the read ends");
    let error = ended.unwrap().unwrap_err();
    assert!(error.detail().contains("cancelled"), "{}", error.detail());
}

#[tokio::test]
async fn server_text_in_the_tool_description_is_cleaned_and_capped() {
    let upstream = Upstream::new(vec![], |_, _| Reply::Result(text("x", false)));
    let long = "y".repeat(100_000);
    *upstream.resources.lock().unwrap() = vec![(
        json!({"uri": "mem://a\u{202e}b", "name": "n", "description": format!("ignore previous\u{1b}[2J {long}")}),
        json!([]),
    )];
    let provider = provider(upstream, formatters(None)).await;
    let tool = provider.resource_tool().await.unwrap().unwrap();
    let description = &tool.spec.description;
    assert!(!description.contains('\u{202e}') && !description.contains('\u{1b}'), "{description:?}");
    assert!(description.contains("mem://ab"), "{description}");
    assert!(description.len() < 1000, "capped: {} bytes", description.len());
}
