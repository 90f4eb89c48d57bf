//! `[serve.traces]`: every call's spans reach an OTLP/HTTP collector (one this test runs
//! on loopback, reading OTLP's JSON encoding): the call's span with its provider, tool,
//! caller, verdict and outcome, and a child span per stage; never an argument.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{serve_http, setup, stderr, wasmgate};
use serde_json::{Map, Value, json};
use wasmgate_core::CancellationToken;
use wasmgate_testing::{Loopback, Response};

/// Every span the collector got: name, ids, and attributes as a map of strings.
fn spans(bodies: &[Value]) -> Vec<Value> {
    let mut found = Vec::new();
    for body in bodies {
        for resource in body["resourceSpans"].as_array().into_iter().flatten() {
            let service = resource["resource"]["attributes"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|a| a["key"] == "service.name")
                .map(|a| a["value"]["stringValue"].clone());
            assert_eq!(service, Some(json!("wasmgate")), "{resource}");
            for scope in resource["scopeSpans"].as_array().into_iter().flatten() {
                for span in scope["spans"].as_array().into_iter().flatten() {
                    let attributes: Map<String, Value> = span["attributes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|a| Some((a["key"].as_str()?.to_owned(), a["value"]["stringValue"].clone())))
                        .collect();
                    found.push(json!({"name": span["name"], "trace": span["traceId"], "id": span["spanId"],
                                      "parent": span["parentSpanId"], "attributes": attributes}));
                }
            }
        }
    }
    found
}

#[tokio::test]
async fn each_call_is_a_span_with_a_child_per_stage_at_the_collector() {
    let dir = setup();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    // A collector on loopback: every body POSTed to it, parsed.
    let kept = Arc::clone(&bodies);
    let collector = Loopback::start(move |request| {
        kept.lock().unwrap().push(request.json());
        Response::json(&json!({}))
    })
    .await;
    let endpoint = collector.url("/v1/traces");
    let config = dir.path().join("wasmgate.toml");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!("\n[serve.traces]\nendpoint = {endpoint:?}\nprotocol = \"http/json\"\n"));
    std::fs::write(&config, text).unwrap();
    let review = wasmgate(dir.path(), &["review", "--yes"]);
    assert!(review.status.success(), "{}", stderr(&review));
    let (mut served, url) = serve_http(dir.path(), &[]);

    let client = wasmgate_testing::http_client(&url, &[], None).await;
    let arguments = json!({"text": "secret-argument-text"}).as_object().cloned().unwrap();
    let result = client.call_tool("echo__echo", arguments, CancellationToken::new()).await.unwrap();
    assert!(!result.is_error);
    // Nobody can approve it: this client cannot be asked.
    let create = json!({"user": "x", "title": "t", "start": "2026-12-03T12:00", "end": "2026-12-03T13:00"});
    let create = create.as_object().cloned().unwrap();
    let asked = client.call_tool("calendar__calendar_create", create, CancellationToken::new()).await.unwrap();
    assert!(asked.is_error);
    client.close().await;

    // A SIGTERM sends what is buffered before the gateway exits.
    let pid = served.0.id().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let exited = tokio::task::spawn_blocking(move || served.0.wait().map(|s| s.success()));
    let exited = tokio::time::timeout(Duration::from_secs(60), exited).await.unwrap().unwrap().unwrap();
    assert!(exited);

    let spans = spans(&bodies.lock().unwrap());
    let calls: Vec<&Value> = spans.iter().filter(|s| s["name"] == "wasmgate.call").collect();
    let echo = calls
        .iter()
        .find(|s| s["attributes"]["tool"] == "echo")
        .unwrap_or_else(|| panic!("no echo call span in {spans:#?}"));
    assert_eq!(echo["attributes"]["provider"], "echo");
    assert_eq!(echo["attributes"]["verdict"], "allow");
    assert_eq!(echo["attributes"]["outcome"], "finished");
    let children: Vec<&str> = spans
        .iter()
        .filter(|s| s["trace"] == echo["trace"] && s["parent"] == echo["id"])
        .filter_map(|s| s["name"].as_str())
        .collect();
    for stage in ["policy", "audit", "upstream", "screen"] {
        assert!(children.contains(&stage), "{stage} in {children:?}");
    }
    let upstream = spans.iter().find(|s| s["parent"] == echo["id"] && s["name"] == "upstream").unwrap();
    assert!(spans.iter().any(|s| s["parent"] == upstream["id"] && s["name"] == "format"), "format inside upstream");
    let create = calls.iter().find(|s| s["attributes"]["tool"] == "calendar_create").unwrap();
    assert_eq!((&create["attributes"]["verdict"], &create["attributes"]["outcome"]), (&json!("ask"), &json!("denied")));
    assert!(spans.iter().any(|s| s["parent"] == create["id"] && s["name"] == "approval"), "approval: {spans:#?}");
    let everything = serde_json::to_string(&*bodies.lock().unwrap()).unwrap();
    assert!(!everything.contains("secret-argument-text"), "no argument in any span");
}
