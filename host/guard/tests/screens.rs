//! A provider's own screens run beside the built-in detector: what they find flags a
//! result like the detector does, and a screen that fails flags it too.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::{Setup, Source, definition};
use serde_json::json;
use wasmgate_core::{BoxFuture, CancellationToken, Toolset};
use wasmgate_guard::{INJECTION_WITHHELD, SCREEN_FAILED, Screener, Unattended};

/// Finds `needle`, or fails when there is no needle.
#[derive(Debug)]
struct Needle(Option<&'static str>);

impl Screener for Needle {
    fn name(&self) -> &str {
        "needle"
    }

    fn screen<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<Vec<(String, String)>, wasmgate_core::BoxError>> {
        Box::pin(async move {
            let Some(needle) = self.0 else { return Err("trapped: unreachable".into()) };
            Ok(if text.contains(needle) {
                vec![("found-needle".into(), "mentions the needle".into())]
            } else {
                Vec::new()
            })
        })
    }
}

async fn call(provider: &str, reply: &str, screener: Needle) -> (Setup, String) {
    // The test policy allows `calendar_query` of `calendar` (flag) and `read` of `strict` (withhold).
    let tool = if provider == "strict" { "read" } else { "calendar_query" };
    let query = definition(tool, "Reads something.");
    let source = Source::new(provider, vec![query.clone()]);
    *source.reply.lock().unwrap() = reply.into();
    let setup = Setup::new(&[(&source, query)], Arc::new(Unattended));
    setup.guard.add_screener(provider, Arc::new(screener));
    let tools = setup.toolset(std::slice::from_ref(&source)).current().await;
    let result = tools[0].execute(json!({}), CancellationToken::new()).await.unwrap();
    (setup, result.content)
}

fn finished_flags(setup: &Setup) -> serde_json::Value {
    let records = setup.records();
    let end = records.iter().rev().find(|r| r["event"] == "finished" || r["event"] == "withheld").unwrap();
    end["flags"].clone()
}

#[tokio::test]
async fn a_screens_finding_flags_the_result_with_its_own_sentence() {
    let (setup, content) = call("calendar", "a haystack with a needle", Needle(Some("needle"))).await;
    assert!(
        content.starts_with("warning: this result contains text that looks like instructions (mentions the needle)"),
        "{content}"
    );
    assert_eq!(finished_flags(&setup), json!(["needle:found-needle"]));
    let (setup, content) = call("calendar", "just hay", Needle(Some("needle"))).await;
    assert!(content.starts_with("<untrusted-data"), "{content}");
    assert!(finished_flags(&setup).is_null(), "nothing found, no flags");
}

#[tokio::test]
async fn under_withhold_a_screens_finding_withholds_the_result() {
    let (setup, content) = call("strict", "a needle", Needle(Some("needle"))).await;
    assert_eq!(content, INJECTION_WITHHELD);
    assert_eq!(finished_flags(&setup), json!(["needle:found-needle"]));
}

#[tokio::test]
async fn a_screen_that_fails_flags_the_text_rather_than_letting_it_pass() {
    let (setup, content) = call("calendar", "anything", Needle(None)).await;
    assert!(content.contains(SCREEN_FAILED), "{content}");
    assert_eq!(finished_flags(&setup), json!(["needle:screen-failed"]));
    let (_, content) = call("strict", "anything", Needle(None)).await;
    assert_eq!(content, INJECTION_WITHHELD);
}
