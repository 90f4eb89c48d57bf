//! Resources, resource templates, prompts and completion: announced only when the
//! backend offers them, paged like tools, refused with each era's error codes.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::{Map, Value, json};
use tokio::sync::watch;
use wasmgate_core::{
    BoxFuture, CancellationToken, CompleteParams, Completion, CompletionRef, Offers, Prompt, Refusal, ResourceWatch,
    ToolResult, ToolSpec,
};
use wasmgate_protocol::server::GetPromptParams;
use wasmgate_server::{Backend, CallFailure, ServerConfig};

use common::{Fixture, Stdio, config, initialize, plain, stamped};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The resource and prompt change counters.
type Counters = (watch::Sender<u64>, watch::Sender<u64>);

/// Changes to the resources that can be followed (`test://r/*`, all at once, and
/// `test://slow/*`, which subscribe once `opened` is true), a token each watch keeps
/// while it is followed, and how many subscriptions were asked for.
struct Follow {
    updates: watch::Sender<u64>,
    held: Arc<()>,
    opened: watch::Sender<bool>,
    asked: AtomicUsize,
}

/// Three resources, one template, one prompt with an argument, and completion of it.
struct Library {
    changes: watch::Sender<u64>,
    /// The resource and prompt change counters, when it reports those changes.
    content: Option<Arc<Counters>>,
    follow: Arc<Follow>,
}

impl Library {
    fn new() -> Self {
        Self::following().0
    }

    /// A library that reports changes of its resources and prompts through the counters.
    fn changing() -> (Self, Arc<Counters>) {
        let counters = Arc::new((watch::Sender::new(0), watch::Sender::new(0)));
        (Self { content: Some(Arc::clone(&counters)), ..Self::new() }, counters)
    }

    /// A library whose `test://r/*` change through the returned [`Follow`].
    fn following() -> (Self, Arc<Follow>) {
        let follow = Arc::new(Follow {
            updates: watch::Sender::new(0),
            held: Arc::new(()),
            opened: watch::Sender::new(false),
            asked: AtomicUsize::new(0),
        });
        (Self { changes: watch::Sender::new(0), content: None, follow: Arc::clone(&follow) }, follow)
    }
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl Backend for Library {
    fn tools(&self) -> BoxFuture<'_, Vec<ToolSpec>> {
        ready(Vec::new())
    }

    fn call(
        &self,
        name: String,
        _: Map<String, Value>,
        _: CancellationToken,
    ) -> BoxFuture<'_, Result<ToolResult, CallFailure>> {
        ready(Err(CallFailure::UnknownTool(name)))
    }

    fn tool_changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn resource_changes(&self) -> Option<watch::Receiver<u64>> {
        self.content.as_ref().map(|c| c.0.subscribe())
    }

    fn prompt_changes(&self) -> Option<watch::Receiver<u64>> {
        self.content.as_ref().map(|c| c.1.subscribe())
    }

    fn offers(&self) -> Offers {
        Offers { resources: true, prompts: true, completions: true, logging: false, subscriptions: true }
    }

    fn resources(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        ready(Ok((1..=3).map(|i| json!({"uri": format!("test://r/{i}"), "name": format!("r{i}")})).collect()))
    }

    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        ready(Ok(vec![json!({"uriTemplate": "test://r/{id}", "name": "by id"})]))
    }

    fn read_resource(&self, uri: String, _: CancellationToken) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        ready(match uri.as_str() {
            "test://r/1" => Ok(vec![json!({"uri": uri, "text": "one"})]),
            "test://broken" => Err(Refusal::Failed("the provider could not be reached".into())),
            _ => Err(Refusal::ResourceNotFound(uri)),
        })
    }

    fn watch_resource(&self, uri: String) -> BoxFuture<'_, Result<ResourceWatch, Refusal>> {
        self.follow.asked.fetch_add(1, Ordering::SeqCst);
        let watch = || ResourceWatch {
            changes: self.follow.updates.subscribe(),
            keep: Box::new(Arc::clone(&self.follow.held)),
        };
        if uri.starts_with("test://slow/") {
            let mut opened = self.follow.opened.subscribe();
            return Box::pin(async move {
                let _ = opened.wait_for(|open| *open).await;
                Ok(watch())
            });
        }
        ready(match uri.as_str() {
            followed if followed.starts_with("test://r/") => Ok(watch()),
            _ => Err(Refusal::InvalidParams(format!("changes to {uri} cannot be followed"))),
        })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Vec<Value>, Refusal>> {
        ready(Ok(vec![json!({"name": "greet", "arguments": [{"name": "who", "required": true}]})]))
    }

    fn get_prompt(&self, params: GetPromptParams, _: CancellationToken) -> BoxFuture<'_, Result<Prompt, Refusal>> {
        ready(match (params.name.as_str(), params.arguments.get("who").and_then(Value::as_str)) {
            ("greet", Some(who)) => Ok(Prompt {
                description: Some("A greeting".into()),
                messages: vec![json!({"role": "user", "content": {"type": "text", "text": format!("Hello {who}")}})],
            }),
            ("greet", None) => Err(Refusal::InvalidParams("missing argument: who".into())),
            (name, _) => Err(Refusal::InvalidParams(format!("Unknown prompt: {name}"))),
        })
    }

    fn complete(&self, params: CompleteParams, _: CancellationToken) -> BoxFuture<'_, Result<Completion, Refusal>> {
        assert_eq!(params.reference, CompletionRef::Prompt("greet".into()));
        let values = (0..150).map(|i| format!("{}{i}", params.argument_value)).collect();
        ready(Ok(Completion { values, total: Some(150), has_more: None }))
    }
}

fn small_pages() -> ServerConfig {
    ServerConfig { page_size: 2, ..config() }
}

#[tokio::test]
async fn capabilities_name_what_the_backend_offers_and_nothing_else() {
    let mut server = Stdio::start(Library::new(), config());
    let discovered = server.ask(stamped(1, "server/discover", json!({}))).await;
    let caps = &discovered["result"]["capabilities"];
    assert_eq!(caps["resources"], json!({"listChanged": false, "subscribe": true}), "{discovered}");
    assert_eq!(caps["prompts"], json!({"listChanged": false}));
    assert_eq!(caps["completions"], json!({}));

    let mut tools_only = Stdio::start(Fixture::new().backend, config());
    let discovered = tools_only.ask(stamped(1, "server/discover", json!({}))).await;
    let caps = discovered["result"]["capabilities"].as_object().unwrap();
    assert_eq!(caps.keys().collect::<Vec<_>>(), ["tools"], "{discovered}");
    let refused = tools_only.ask(stamped(2, "resources/list", json!({}))).await;
    assert_eq!(refused["error"]["code"], -32601, "a capability not offered is a method not found: {refused}");
}

#[tokio::test]
async fn resource_and_prompt_list_changes_are_announced_in_both_eras() {
    let (library, counters) = Library::changing();
    let mut server = Stdio::start(library, config());
    let initialized = server.ask(initialize(1, "2025-11-25")).await;
    let caps = &initialized["result"]["capabilities"];
    assert_eq!(caps["resources"], json!({"listChanged": true, "subscribe": true}), "{initialized}");
    assert_eq!(caps["prompts"], json!({"listChanged": true}));
    counters.0.send_modify(|n| *n += 1);
    assert_eq!(server.recv().await, json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"}));
    counters.1.send_modify(|n| *n += 1);
    assert_eq!(server.recv().await, json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}));

    let (library, counters) = Library::changing();
    let mut server = Stdio::start(library, config());
    let listen = json!({"notifications": {"resourcesListChanged": true, "promptsListChanged": true}});
    server.send(stamped(7, "subscriptions/listen", listen)).await;
    let id = "io.modelcontextprotocol/subscriptionId";
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "_meta": {id: 7}, "notifications": {"resourcesListChanged": true, "promptsListChanged": true}}})
    );
    counters.1.send_modify(|n| *n += 1);
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {"_meta": {id: 7}}})
    );
    counters.0.send_modify(|n| *n += 1);
    assert_eq!(
        server.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/list_changed", "params": {"_meta": {id: 7}}})
    );
}

#[tokio::test]
async fn resource_lists_are_paged_and_reads_answer_contents() {
    let mut server = Stdio::start(Library::new(), small_pages());
    let first = server.ask(stamped(1, "resources/list", json!({}))).await;
    assert_eq!(first["result"]["resources"].as_array().unwrap().len(), 2, "{first}");
    assert_eq!(first["result"]["resultType"], "complete");
    let cursor = first["result"]["nextCursor"].as_str().unwrap();
    let second = server.ask(stamped(2, "resources/list", json!({"cursor": cursor}))).await;
    assert_eq!(second["result"]["resources"][0]["uri"], "test://r/3", "{second}");
    assert!(second["result"].get("nextCursor").is_none());
    let bad = server.ask(stamped(3, "resources/list", json!({"cursor": "99"}))).await;
    assert_eq!(bad["error"]["code"], -32602);

    let templates = server.ask(stamped(4, "resources/templates/list", json!({}))).await;
    assert_eq!(templates["result"]["resourceTemplates"][0]["uriTemplate"], "test://r/{id}", "{templates}");

    let read = server.ask(stamped(5, "resources/read", json!({"uri": "test://r/1"}))).await;
    assert_eq!(read["result"]["contents"], json!([{"uri": "test://r/1", "text": "one"}]), "{read}");
    let missing = server.ask(stamped(6, "resources/read", json!({}))).await;
    assert_eq!(missing["error"]["code"], -32602, "a read without a uri: {missing}");
    let failed = server.ask(stamped(7, "resources/read", json!({"uri": "test://broken"}))).await;
    assert_eq!(failed["error"]["code"], -32603);
    assert_eq!(failed["error"]["message"], "the provider could not be reached");
}

#[tokio::test]
async fn an_unknown_resource_is_invalid_params_in_2026_and_resource_not_found_before() {
    let mut server = Stdio::start(Library::new(), config());
    let stateless = server.ask(stamped(1, "resources/read", json!({"uri": "test://nope"}))).await;
    assert_eq!(stateless["error"]["code"], -32602, "{stateless}");
    assert_eq!(stateless["error"]["data"]["uri"], "test://nope");

    let mut server = Stdio::start(Library::new(), config());
    server.ask(initialize(1, "2025-11-25")).await;
    server.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await;
    let legacy = server.ask(plain(2, "resources/read", json!({"uri": "test://nope"}))).await;
    assert_eq!(legacy["error"]["code"], -32002, "{legacy}");
    assert_eq!(legacy["error"]["data"]["uri"], "test://nope");
    assert!(legacy["result"].get("resultType").is_none());
}

#[tokio::test]
async fn prompts_are_listed_fetched_and_checked() {
    let mut server = Stdio::start(Library::new(), config());
    let list = server.ask(stamped(1, "prompts/list", json!({}))).await;
    assert_eq!(list["result"]["prompts"][0]["name"], "greet", "{list}");
    let got = server.ask(stamped(2, "prompts/get", json!({"name": "greet", "arguments": {"who": "Ada"}}))).await;
    assert_eq!(got["result"]["description"], "A greeting", "{got}");
    assert_eq!(got["result"]["messages"][0]["content"]["text"], "Hello Ada");
    let missing = server.ask(stamped(3, "prompts/get", json!({"name": "greet"}))).await;
    assert_eq!(missing["error"]["code"], -32602);
    assert_eq!(missing["error"]["message"], "missing argument: who");
    let wrong_type = server.ask(stamped(4, "prompts/get", json!({"name": "greet", "arguments": {"who": 3}}))).await;
    assert_eq!(wrong_type["error"]["code"], -32602, "argument values must be strings: {wrong_type}");
}

#[tokio::test]
async fn completions_are_capped_at_one_hundred_values() {
    let mut server = Stdio::start(Library::new(), config());
    let params = json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "who", "value": "A"}});
    let answer = server.ask(stamped(1, "completion/complete", params)).await;
    let completion = &answer["result"]["completion"];
    assert_eq!(completion["values"].as_array().unwrap().len(), 100, "{answer}");
    assert_eq!(completion["values"][0], "A0");
    assert_eq!((completion["total"].clone(), completion["hasMore"].clone()), (json!(150), json!(true)));
    let bad = server.ask(stamped(2, "completion/complete", json!({"ref": {"type": "ref/tool"}}))).await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[tokio::test]
async fn a_handshake_era_client_follows_a_resource_until_it_unsubscribes() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, config());
    let initialized = server.ask(initialize(1, "2025-11-25")).await;
    assert_eq!(initialized["result"]["capabilities"]["resources"]["subscribe"], true, "{initialized}");
    let answer = server.ask(plain(2, "resources/subscribe", json!({"uri": "test://r/1"}))).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    let again = server.ask(plain(3, "resources/subscribe", json!({"uri": "test://r/1"}))).await;
    assert_eq!(again["result"], json!({}), "a second subscribe changes nothing");
    assert_eq!(Arc::strong_count(&follow.held), 2, "one watch for the URI");

    follow.updates.send_modify(|n| *n += 1);
    let updated =
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "test://r/1"}});
    assert_eq!(server.recv().await, updated);

    let refused = server.ask(plain(4, "resources/subscribe", json!({"uri": "test://elsewhere"}))).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let malformed = server.ask(plain(5, "resources/subscribe", json!({}))).await;
    assert_eq!(malformed["error"]["code"], -32602, "{malformed}");

    let answer = server.ask(plain(6, "resources/unsubscribe", json!({"uri": "test://r/1"}))).await;
    assert_eq!(answer["result"], json!({}), "{answer}");
    // The watch goes with its task, which unsubscribing aborts; wait (bounded) for it.
    eventually("the watch was dropped", || Arc::strong_count(&follow.held) == 1).await;
    let stateless = server.ask(stamped(7, "resources/subscribe", json!({"uri": "test://r/1"}))).await;
    assert_eq!(stateless["error"]["code"], -32601, "2026-07-28 has no resources/subscribe: {stateless}");
}

#[tokio::test]
async fn a_connection_follows_at_most_sixty_four_resources() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, config());
    server.ask(initialize(1, "2025-11-25")).await;
    for n in 1..=64 {
        let answer = server.ask(plain(n + 1, "resources/subscribe", json!({"uri": format!("test://r/{n}")}))).await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    let over = server.ask(plain(100, "resources/subscribe", json!({"uri": "test://r/65"}))).await;
    assert_eq!(over["error"]["code"], -32602, "{over}");
    assert!(over["error"]["message"].as_str().unwrap().contains("unsubscribe from one first"), "{over}");
    assert_eq!(Arc::strong_count(&follow.held), 65, "the 65th was never followed");
    server.ask(plain(101, "resources/unsubscribe", json!({"uri": "test://r/1"}))).await;
    let room = server.ask(plain(102, "resources/subscribe", json!({"uri": "test://r/65"}))).await;
    assert_eq!(room["result"], json!({}), "{room}");
}

#[tokio::test]
async fn a_2026_subscription_follows_the_resources_it_names_that_the_backend_follows() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, config());
    let uris = json!(["test://r/1", "test://elsewhere", "test://r/1"]);
    server.send(stamped(1, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}}))).await;
    let acknowledged = server.recv().await;
    assert_eq!(acknowledged["method"], "notifications/subscriptions/acknowledged", "{acknowledged}");
    assert_eq!(
        acknowledged["params"]["notifications"],
        json!({"resourceSubscriptions": ["test://r/1"]}),
        "only what is followed, once"
    );
    assert_eq!(Arc::strong_count(&follow.held), 2);
    follow.updates.send_modify(|n| *n += 1);
    let updated = server.recv().await;
    assert_eq!(updated["method"], "notifications/resources/updated", "{updated}");
    assert_eq!(updated["params"]["uri"], "test://r/1");
    assert_eq!(updated["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 1);
    server.send(plain_notification("notifications/cancelled", json!({"requestId": 1}))).await;
    eventually("the subscription's watch was dropped with it", || Arc::strong_count(&follow.held) == 1).await;
}

#[tokio::test]
async fn subscriptions_being_opened_count_against_both_bounds() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, ServerConfig { max_calls_in_flight: 70, ..config() });
    server.ask(initialize(1, "2025-11-25")).await;
    // 72 at once, none answered until the upstream opens them: two are over the calls in
    // flight, and of the 70 in flight, 64 may be opened and six are over what a
    // connection follows.
    for n in 0..72 {
        server.send(plain(n + 2, "resources/subscribe", json!({"uri": format!("test://slow/{n}")}))).await;
    }
    let mut refused = Vec::new();
    for _ in 0..8 {
        refused.push(server.recv().await["error"]["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(refused.iter().filter(|m| m.starts_with("Too many requests in flight")).count(), 2, "{refused:?}");
    assert_eq!(refused.iter().filter(|m| m.contains("unsubscribe from one first")).count(), 6, "{refused:?}");
    assert_eq!(follow.asked.load(Ordering::SeqCst), 64, "only 64 were asked for upstream");
    follow.opened.send_replace(true);
    for _ in 0..64 {
        let answer = server.recv().await;
        assert_eq!(answer["result"], json!({}), "{answer}");
    }
    assert_eq!(Arc::strong_count(&follow.held), 65, "64 followed");
    let over = server.ask(plain(100, "resources/subscribe", json!({"uri": "test://r/1"}))).await;
    assert!(over["error"]["message"].as_str().unwrap().contains("unsubscribe from one first"), "{over}");
}

#[tokio::test]
async fn a_subscription_tries_at_most_sixty_four_resources_and_names_at_most_256() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, config());
    // Each refused by the backend, and each named twice: only the first 64 distinct are tried.
    let refused: Vec<String> = (0..200)
        .flat_map(|n| {
            let uri = format!("test://elsewhere/{n}");
            [uri.clone(), uri]
        })
        .take(256)
        .collect();
    let mut uris = refused.clone();
    uris.push("test://r/1".into());
    server.send(stamped(1, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": refused}}))).await;
    let acknowledged = server.recv().await;
    assert_eq!(acknowledged["params"]["notifications"], json!({}), "{acknowledged}");
    assert_eq!(follow.asked.load(Ordering::SeqCst), 64);
    let too_many =
        server.ask(stamped(2, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}}))).await;
    assert_eq!(too_many["error"]["code"], -32602, "{too_many}");
    assert!(too_many["error"]["message"].as_str().unwrap().contains("over the limit of 256"), "{too_many}");
    assert_eq!(follow.asked.load(Ordering::SeqCst), 64, "nothing tried for a filter refused");
}

#[tokio::test]
async fn a_subscription_cancelled_while_it_opens_tries_no_more() {
    let (library, follow) = Library::following();
    let mut server = Stdio::start(library, config());
    let uris = json!(["test://slow/1", "test://slow/2", "test://slow/3"]);
    server.send(stamped(1, "subscriptions/listen", json!({"notifications": {"resourceSubscriptions": uris}}))).await;
    eventually("the first was asked for", || follow.asked.load(Ordering::SeqCst) > 0).await;
    server.send(plain_notification("notifications/cancelled", json!({"requestId": 1}))).await;
    // Lines are read in order: once this is answered, the cancel has been seen.
    server.ask(stamped(2, "tools/list", json!({}))).await;
    follow.opened.send_replace(true);
    server.ask(stamped(3, "tools/list", json!({}))).await;
    eventually("nothing stays followed", || Arc::strong_count(&follow.held) == 1).await;
    assert_eq!(follow.asked.load(Ordering::SeqCst), 1, "no URI after the first was tried");
}

/// Waits (at most 10 s, yielding to the server) until `done`, which `what` says.
async fn eventually(what: &str, done: impl Fn() -> bool) {
    let waited = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while !done() {
            tokio::task::yield_now().await;
        }
    });
    assert!(waited.await.is_ok(), "{what}");
}

fn plain_notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}
