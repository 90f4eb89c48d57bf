//! WASM tool components through the adapter: offered, called and rendered exactly like
//! MCP tools, with each call's grants, and in an agent turn beside MCP servers.
//! (The failure contract for components is in `component_failures.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::components::{calendar, calendar_component, data, named, run};
use common::{Reply, Upstream, formatters, provider, text, tool};
use serde_json::json;
use wasmgate_adapter::{AdapterError, ComponentProvider, McpToolset, Toolbox};
use wasmgate_agent::{AgentConfig, AllowAll, Message, ModelTurn, ScriptedModel, run_agent};
use wasmgate_core::{CancellationToken, ToolSource, Toolset};
use wasmgate_sandbox::Grants;

fn create(title: &str) -> serde_json::Value {
    json!({"user": "alice", "title": title, "start": "2030-05-01T09:00", "end": "2030-05-01T10:00"})
}

#[tokio::test]
async fn calendar_tools_are_offered_under_the_prefixed_name_with_the_components_own_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let (offers, trouble) = calendar(data(dir.path(), false)).offers().await;
    assert_eq!(trouble, None);
    let listed = calendar_component().list_tools().unwrap();
    let names: Vec<&str> = offers.iter().map(|o| o.tool.spec.name.as_str()).collect();
    assert_eq!(names, ["cal__calendar_query", "cal__calendar_create", "cal__calendar_delete"]);
    for (offer, listed) in offers.iter().zip(&listed) {
        assert_eq!((offer.provider.as_str(), offer.name.as_str()), ("cal", listed.name.as_str()));
        assert_eq!(offer.tool.spec.description, listed.description);
        assert_eq!(offer.tool.spec.input_schema, listed.input_schema);
        let mcp_shaped =
            json!({"name": listed.name, "description": listed.description, "inputSchema": listed.input_schema});
        assert_eq!(offer.definition, mcp_shaped, "review hashes it like an MCP tool definition");
    }
}

#[tokio::test]
async fn create_then_query_round_trips_through_execute_as_readable_text() {
    let dir = tempfile::tempdir().unwrap();
    let tools = calendar(data(dir.path(), false)).tools();
    let created = run(&named(&tools, "cal__calendar_create"), create("Dentist")).await.unwrap();
    assert!(!created.is_error, "{}", created.content);
    assert!(created.content.contains("Created - 2030-05-01T09:00 to 2030-05-01T10:00: Dentist [evt-1]"), "{created:?}");
    let queried = run(&named(&tools, "cal__calendar_query"), json!({"user": "alice"})).await.unwrap();
    assert!(!queried.is_error);
    assert!(queried.content.contains("1 event for alice:"), "{}", queried.content);
    assert!(queried.content.contains("Dentist"), "{}", queried.content);
    assert!(!queried.content.contains("{\""), "rendered as text, not JSON: {}", queried.content);
    let other = run(&named(&tools, "cal__calendar_query"), json!({"user": "bob"})).await.unwrap();
    assert!(other.content.contains("No events for bob."), "{}", other.content);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_in_a_writable_directory_all_land() {
    // Each call is a fresh instance that reads the calendar file, changes it and renames
    // a new copy over it; WASI has no file locks, so only the host can keep two such
    // calls from interleaving and one losing the other's change.
    let dir = tempfile::tempdir().unwrap();
    let tools = calendar(data(dir.path(), false)).tools();
    let create_tool = named(&tools, "cal__calendar_create");
    let calls: Vec<_> = (0..24)
        .map(|n| {
            let tool = create_tool.clone();
            tokio::spawn(async move { run(&tool, create(&format!("Meeting {n}"))).await.unwrap() })
        })
        .collect();
    for call in calls {
        let created = call.await.unwrap();
        assert!(!created.is_error, "{}", created.content);
    }
    let queried = run(&named(&tools, "cal__calendar_query"), json!({"user": "alice"})).await.unwrap();
    assert!(queried.content.contains("24 events for alice:"), "{}", queried.content);
}

#[tokio::test]
async fn a_read_only_grant_makes_create_an_error_result() {
    let dir = tempfile::tempdir().unwrap();
    let tools = calendar(data(dir.path(), true)).tools();
    let result = run(&named(&tools, "cal__calendar_create"), create("Dentist")).await.unwrap();
    assert!(result.is_error);
    assert!(result.content.contains("the calendar is read-only"), "{}", result.content);
    assert!(!dir.path().join("events.json").exists());
}

#[test]
fn a_bad_provider_name_or_a_list_that_breaks_the_contract_stops_start_up_naming_the_provider() {
    let component = calendar_component();
    let limits = component.limits().clone();
    let bad_name = ComponentProvider::new("Cal_1", component, Grants::none(), limits.clone(), formatters(None));
    assert!(matches!(bad_name, Err(AdapterError::ProviderName(_))), "{bad_name:?}");
    let hostile = common::components::hostile_component();
    let error = ComponentProvider::new("evil", hostile, Grants::none(), limits, formatters(None)).unwrap_err();
    assert!(matches!(&error, AdapterError::Component { provider, .. } if provider == "evil"), "{error:?}");
    let report = wasmgate_core::report(&error);
    assert!(report.starts_with("cannot start provider \"evil\": "), "{report}");
    assert!(report.contains("bad name!"), "the host reads what is wrong: {report}");
    assert_eq!(report.matches("evil").count(), 1, "each cause once: {report}");
}

#[tokio::test]
async fn an_agent_turn_creates_and_queries_through_a_component() {
    let dir = tempfile::tempdir().unwrap();
    let toolbox = Toolbox::new(vec![calendar(data(dir.path(), false))]);
    let model = ScriptedModel::new([
        ModelTurn::calls("", [("cal__calendar_create", create("Standup"))]),
        ModelTurn::calls("", [("cal__calendar_query", json!({"user": "alice", "from": "2030-05-01"}))]),
        ModelTurn::answer("done"),
    ]);
    let mut conversation = vec![Message::User("plan my day".into())];
    let cancel = CancellationToken::new();
    let outcome = run_agent(&model, &toolbox, &AllowAll, &mut conversation, &AgentConfig::default(), &cancel).await;
    assert_eq!(outcome.unwrap(), "done");
    let results: Vec<(String, bool)> = conversation
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult { content, is_error, .. } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|(_, is_error)| !is_error), "{results:?}");
    assert!(results[1].0.contains("1 event for alice:") && results[1].0.contains("Standup"), "{results:?}");
    assert_eq!(model.seen()[0].tools, ["cal__calendar_query", "cal__calendar_create", "cal__calendar_delete"]);
}

#[tokio::test]
async fn a_toolbox_offers_mcp_servers_and_components_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let upstream = Upstream::new(vec![tool("search", json!({}))], |_, _| Reply::Result(text("x", false)));
    let mcp = provider(upstream, formatters(None)).await;
    let mixed: Toolbox =
        Toolbox::new(vec![Arc::new(mcp.clone()) as Arc<dyn ToolSource>, Arc::new(calendar(data(dir.path(), false)))]);
    let names: Vec<String> = mixed.current().await.into_iter().map(|t| t.spec.name).collect();
    assert_eq!(names, ["p__search", "cal__calendar_query", "cal__calendar_create", "cal__calendar_delete"]);
    let mcp_only = McpToolset::new(vec![mcp]);
    let _client: &wasmgate_client::McpClient = mcp_only.providers()[0].client();
    assert_eq!(mcp_only.current().await.len(), 1);
}
