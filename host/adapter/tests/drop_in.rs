//! The drop-in presentation of a provider: names shown as the provider wrote them
//! (`prefix = false`), and media passed to clients after the media check in the
//! sandbox (`media = "pass"`): what passes, what is refused and why, and what the
//! text says about it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Reply, SANDBOX, Upstream, formatters, limits, provider, tool};
use serde_json::{Value, json};
use wasmgate_adapter::{Formatters, MediaPass};
use wasmgate_core::{Attachment, CancellationToken, MediaKind, Naming, ToolResult};
use wasmgate_policy::DEFAULT_MEDIA_TYPES;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn passing(max_bytes: u32) -> Arc<Formatters> {
    let check = SANDBOX.load_media_check(wasmgate_guests::MEDIA_CHECK, limits()).unwrap();
    let types = DEFAULT_MEDIA_TYPES.iter().map(|t| (*t).to_owned()).collect();
    Arc::new(Arc::unwrap_or_clone(formatters(None)).with_media(MediaPass::new(check, types, max_bytes)))
}

/// The result of calling the one tool `t` of an upstream answering `content`.
async fn call(presentation: Arc<Formatters>, content: Value) -> ToolResult {
    let upstream =
        Upstream::new(vec![tool("t", json!({}))], move |_, _| Reply::Result(json!({"content": content.clone()})));
    let tools = provider(upstream, presentation).await.tools().await.unwrap();
    tools[0].execute(json!({}), CancellationToken::new()).await.unwrap()
}

#[tokio::test]
async fn as_is_names_are_the_providers_own() {
    let upstream = Upstream::new(vec![tool("search", json!({})), tool("bad name", json!({}))], |_, _| {
        Reply::Result(json!({"content": []}))
    });
    let presentation = Arc::new(Arc::unwrap_or_clone(formatters(None)).with_naming(Naming::AsIs));
    let provider = provider(upstream, presentation).await;
    let names: Vec<String> = provider.tools().await.unwrap().into_iter().map(|t| t.spec.name).collect();
    assert_eq!(names, ["search"], "a name outside MCP's rules is still withheld");
    assert_eq!(provider.naming(), Naming::AsIs);
}

#[tokio::test]
async fn checked_images_audio_and_blobs_pass_beside_the_text() {
    let result = call(
        passing(1 << 20),
        json!([
            {"type": "text", "text": "a picture and a sound"},
            {"type": "image", "mimeType": "image/png", "data": PNG, "annotations": {"audience": ["user"]}},
            {"type": "audio", "mimeType": "audio/wav", "data": WAV},
            {"type": "resource", "resource": {"uri": "test://blob", "mimeType": "image/png", "blob": PNG}},
        ]),
    )
    .await;
    assert!(result.content.contains("a picture and a sound"), "{}", result.content);
    assert!(!result.content.contains("note:"), "{}", result.content);
    assert_eq!(
        result.attachments,
        [
            Attachment::Media { kind: MediaKind::Image, mime_type: "image/png".into(), data: PNG.into() },
            Attachment::Media { kind: MediaKind::Audio, mime_type: "audio/wav".into(), data: WAV.into() },
            Attachment::Blob { uri: "test://blob".into(), mime_type: "image/png".into(), blob: PNG.into() },
        ]
    );
}

#[tokio::test]
async fn blocks_that_fail_the_check_are_named_in_the_text_and_not_passed() {
    let script = "PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg=="; // "<script>alert(1)</script>"
    let result = call(
        passing(1 << 20),
        json!([
            {"type": "image", "mimeType": "image/png", "data": script},
            {"type": "image", "mimeType": "image/png", "data": "%%% not base64"},
            {"type": "audio", "mimeType": "audio/wav", "data": PNG},
            {"type": "image", "mimeType": "image/svg+xml", "data": PNG},
        ]),
    )
    .await;
    assert!(result.attachments.is_empty(), "{:?}", result.attachments);
    for why in [
        "block 0 (image) was not passed on: it says image/png, but its bytes are not",
        "block 1 (image) was not passed on: its data is not valid base64",
        "block 2 (audio) was not passed on: it says audio/wav, but its bytes are image/png",
        "block 3 (image) was not passed on: its declared type is not one this check recognises",
    ] {
        assert!(result.content.contains(&format!("note: {why}")), "{why}: {}", result.content);
    }
}

#[tokio::test]
async fn a_block_over_the_size_cap_is_refused() {
    let result = call(passing(16), json!([{"type": "image", "mimeType": "image/png", "data": PNG}])).await;
    assert!(result.attachments.is_empty());
    assert!(result.content.contains("note: block 0 (image) was not passed on: it holds more than 16 bytes"));
}

#[tokio::test]
async fn embedded_text_resources_pass_as_text_for_the_guard_to_frame() {
    let result = call(
        passing(1 << 20),
        json!([{"type": "resource", "resource": {"uri": "test://doc", "mimeType": "text/markdown", "text": "# hi"}}]),
    )
    .await;
    assert_eq!(result.attachments, [Attachment::Text { uri: "test://doc".into(), text: "# hi".into() }]);
}

#[tokio::test]
async fn without_media_passing_only_text_leaves() {
    let result = call(formatters(None), json!([{"type": "image", "mimeType": "image/png", "data": PNG}])).await;
    assert!(result.attachments.is_empty());
    assert!(!result.content.contains("note:"));
}
