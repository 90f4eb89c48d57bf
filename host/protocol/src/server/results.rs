//! Building a server's answers, in the shape each era's schema gives them.
//!
//! Every builder takes the protocol version of the request it answers and applies the
//! era rules of the [module docs](super): `resultType` and the cache hints only for
//! stateless versions. Tool results are text: the gateway hands downstream clients the
//! same plain text its agent loop would read.

use serde_json::{Map, Value};
use wasmgate_core::MAX_COMPLETION_VALUES;

use crate::fields::Object;
use crate::jsonrpc::{error_response, notification};
use crate::mcp::META_SERVER_INFO;
use crate::result::{CacheHints, CacheScope, RESULT_TYPE_COMPLETE};
use crate::subscriptions::{ACKNOWLEDGED, META_SUBSCRIPTION_ID, SubscriptionFilter};
use crate::{Id, ProtocolVersion, codes};

/// The server's identity (`Implementation`): self-reported, for the client's logs.
pub type ServerIdentity = crate::mcp::Implementation;

/// Stamps `result` as complete when `version` is stateless; handshake-era results are
/// returned unchanged.
#[must_use]
pub fn complete(mut result: Object, version: ProtocolVersion) -> Object {
    if version.is_stateless() {
        result.insert("resultType".into(), Value::String(RESULT_TYPE_COMPLETE.into()));
    }
    result
}

fn cacheable(mut result: Object, version: ProtocolVersion, cache: CacheHints) -> Object {
    if version.is_stateless() {
        result.insert("ttlMs".into(), Value::from(cache.ttl_ms.unwrap_or(0)));
        let scope = match cache.cache_scope {
            Some(CacheScope::Public) => "public",
            Some(CacheScope::Private) | None => "private",
        };
        result.insert("cacheScope".into(), Value::String(scope.into()));
    }
    complete(result, version)
}

fn versions(list: &[ProtocolVersion]) -> Value {
    let mut list = list.to_vec();
    list.sort_unstable_by(|a, b| b.cmp(a));
    list.dedup();
    Value::Array(list.into_iter().map(|v| Value::String(v.as_str().into())).collect())
}

/// The result of `initialize` (`InitializeResult`), answering with `version`.
#[must_use]
pub fn initialize_result(
    version: ProtocolVersion,
    capabilities: Object,
    server: &ServerIdentity,
    instructions: Option<&str>,
) -> Object {
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Value::String(version.as_str().into()));
    result.insert("capabilities".into(), Value::Object(capabilities));
    result.insert("serverInfo".into(), server.to_value());
    if let Some(instructions) = instructions {
        result.insert("instructions".into(), Value::String(instructions.into()));
    }
    result
}

/// The result of `server/discover` (`DiscoverResult`) for a request of `version`:
/// `supported` newest first, the identity in `_meta`, and the cache hints.
#[must_use]
pub fn discover_result(
    version: ProtocolVersion,
    supported: &[ProtocolVersion],
    capabilities: Object,
    server: &ServerIdentity,
    instructions: Option<&str>,
    cache: CacheHints,
) -> Object {
    let mut result = Map::new();
    result.insert("supportedVersions".into(), versions(supported));
    result.insert("capabilities".into(), Value::Object(capabilities));
    if let Some(instructions) = instructions {
        result.insert("instructions".into(), Value::String(instructions.into()));
    }
    let mut meta = Map::new();
    meta.insert(META_SERVER_INFO.into(), server.to_value());
    result.insert("_meta".into(), Value::Object(meta));
    cacheable(result, version, cache)
}

/// One `Tool` of a `tools/list` result.
#[must_use]
pub fn tool_definition(name: &str, description: &str, input_schema: Value) -> Value {
    let mut tool = Map::new();
    tool.insert("name".into(), Value::String(name.into()));
    tool.insert("description".into(), Value::String(description.into()));
    tool.insert("inputSchema".into(), input_schema);
    Value::Object(tool)
}

/// One page of `tools/list` (`ListToolsResult`).
#[must_use]
pub fn tools_list_result(
    version: ProtocolVersion,
    tools: Vec<Value>,
    next_cursor: Option<&str>,
    cache: CacheHints,
) -> Object {
    list_result(version, "tools", tools, next_cursor, cache)
}

/// One page of any paginated list: `items` under `key` (`tools`, `resources`,
/// `resourceTemplates`, `prompts`), the next cursor, and the cache hints.
#[must_use]
pub fn list_result(
    version: ProtocolVersion,
    key: &str,
    items: Vec<Value>,
    next_cursor: Option<&str>,
    cache: CacheHints,
) -> Object {
    let mut result = Map::new();
    result.insert(key.into(), Value::Array(items));
    if let Some(cursor) = next_cursor {
        result.insert("nextCursor".into(), Value::String(cursor.into()));
    }
    cacheable(result, version, cache)
}

/// A `tools/call` result of one text block (`CallToolResult`).
#[must_use]
pub fn call_tool_text_result(version: ProtocolVersion, text: &str, is_error: bool) -> Object {
    call_tool_result(version, text, Vec::new(), is_error)
}

/// A `tools/call` result (`CallToolResult`): one text block, then `blocks` (content
/// blocks passed on beside the text, built by the caller).
#[must_use]
pub fn call_tool_result(version: ProtocolVersion, text: &str, blocks: Vec<Value>, is_error: bool) -> Object {
    let mut block = Map::new();
    block.insert("type".into(), Value::String("text".into()));
    block.insert("text".into(), Value::String(text.into()));
    let mut content = Vec::with_capacity(1 + blocks.len());
    content.push(Value::Object(block));
    content.extend(blocks);
    let mut result = Map::new();
    result.insert("content".into(), Value::Array(content));
    result.insert("isError".into(), Value::Bool(is_error));
    complete(result, version)
}

/// A `resources/read` result (`ReadResourceResult`) holding `contents`, with the cache
/// hints its 2026-07-28 schema requires.
#[must_use]
pub fn read_resource_result(version: ProtocolVersion, contents: Vec<Value>, cache: CacheHints) -> Object {
    let mut result = Map::new();
    result.insert("contents".into(), Value::Array(contents));
    cacheable(result, version, cache)
}

/// A `prompts/get` result (`GetPromptResult`).
#[must_use]
pub fn get_prompt_result(version: ProtocolVersion, description: Option<&str>, messages: Vec<Value>) -> Object {
    let mut result = Map::new();
    if let Some(description) = description {
        result.insert("description".into(), Value::String(description.into()));
    }
    result.insert("messages".into(), Value::Array(messages));
    complete(result, version)
}

/// A `completion/complete` result (`CompleteResult`); values past
/// [`MAX_COMPLETION_VALUES`] are dropped and `hasMore` set.
#[must_use]
pub fn complete_result(
    version: ProtocolVersion,
    mut values: Vec<String>,
    total: Option<u64>,
    has_more: Option<bool>,
) -> Object {
    let mut has_more = has_more;
    if values.len() > MAX_COMPLETION_VALUES {
        values.truncate(MAX_COMPLETION_VALUES);
        has_more = Some(true);
    }
    let mut completion = Map::new();
    completion.insert("values".into(), Value::Array(values.into_iter().map(Value::String).collect()));
    if let Some(total) = total {
        completion.insert("total".into(), Value::from(total));
    }
    if let Some(has_more) = has_more {
        completion.insert("hasMore".into(), Value::Bool(has_more));
    }
    let mut result = Map::new();
    result.insert("completion".into(), Value::Object(completion));
    complete(result, version)
}

/// The error for a resource nobody serves: since 2026-07-28 `-32602` (invalid params),
/// before it `-32002` (resource not found); both with `data: {uri}`.
#[must_use]
pub fn resource_not_found_error(id: &Id, version: ProtocolVersion, uri: &str) -> Value {
    let code = if version.is_stateless() { codes::INVALID_PARAMS } else { codes::LEGACY_RESOURCE_NOT_FOUND };
    let mut data = Map::new();
    data.insert("uri".into(), Value::String(uri.into()));
    error_response(Some(id), code, &format!("Resource not found: {uri}"), Some(Value::Object(data)))
}

/// A `notifications/progress` for the request that asked for progress under `token`.
#[must_use]
pub fn progress_notification(token: &Id, progress: f64, total: Option<f64>, message: Option<&str>) -> Value {
    let mut params = Map::new();
    params.insert("progressToken".into(), token.to_value());
    params.insert("progress".into(), Value::from(progress));
    if let Some(total) = total {
        params.insert("total".into(), Value::from(total));
    }
    if let Some(message) = message {
        params.insert("message".into(), Value::String(message.into()));
    }
    notification("notifications/progress", Some(params))
}

/// An `input_required` result (2026-07-28): the client answers `input_requests` (key to
/// `{method, params}`) and calls again with `inputResponses` and `request_state` echoed.
#[must_use]
pub fn input_required_result(input_requests: Object, request_state: &str) -> Object {
    let mut result = Map::new();
    result.insert("resultType".into(), Value::String(crate::result::RESULT_TYPE_INPUT_REQUIRED.into()));
    result.insert("inputRequests".into(), Value::Object(input_requests));
    result.insert("requestState".into(), Value::String(request_state.into()));
    result
}

/// The `params` of an `elicitation/create` (form mode) asking a yes-or-no question:
/// `message`, and a schema of one required boolean, `approve`.
#[must_use]
pub fn confirm_elicitation_params(message: &str) -> Object {
    let schema = serde_json::json!({
        "type": "object",
        "properties": { "approve": { "type": "boolean", "title": "Allow", "description": "Allow this" } },
        "required": ["approve"],
    });
    let mut params = Map::new();
    params.insert("message".into(), Value::String(message.into()));
    params.insert("requestedSchema".into(), schema);
    params
}

/// Whether an `ElicitResult` answering [`confirm_elicitation_params`] says yes: the
/// action is `accept` and `content.approve` is `true`. Anything else (decline, cancel,
/// a malformed answer) is no.
#[must_use]
pub fn confirmed(elicit_result: &Value) -> bool {
    elicit_result.get("action").and_then(Value::as_str) == Some("accept")
        && elicit_result.get("content").and_then(|c| c.get("approve")) == Some(&Value::Bool(true))
}

/// The `UnsupportedProtocolVersionError` response: code -32022, `data: {supported, requested}`.
#[must_use]
pub fn unsupported_version_error(id: Option<&Id>, supported: &[ProtocolVersion], requested: &str) -> Value {
    let mut data = Map::new();
    data.insert("supported".into(), versions(supported));
    data.insert("requested".into(), Value::String(requested.into()));
    let message = format!("Unsupported protocol version: {requested}");
    error_response(id, codes::UNSUPPORTED_PROTOCOL_VERSION, &message, Some(Value::Object(data)))
}

fn subscription_meta(listen: &Id) -> Value {
    let mut meta = Map::new();
    meta.insert(META_SUBSCRIPTION_ID.into(), listen.to_value());
    Value::Object(meta)
}

/// `notifications/subscriptions/acknowledged` for the `subscriptions/listen` request
/// `listen`, honoring `honored`.
#[must_use]
pub fn listen_acknowledged(listen: &Id, honored: &SubscriptionFilter) -> Value {
    let mut params = Map::new();
    params.insert("_meta".into(), subscription_meta(listen));
    params.insert("notifications".into(), honored.to_value());
    notification(ACKNOWLEDGED, Some(params))
}

/// A change notification (`method`, e.g. `notifications/tools/list_changed`) on the
/// subscription opened by `listen`.
#[must_use]
pub fn subscription_notification(listen: &Id, method: &str) -> Value {
    let mut params = Map::new();
    params.insert("_meta".into(), subscription_meta(listen));
    notification(method, Some(params))
}

/// The result that ends the subscription `listen` gracefully (`SubscriptionsListenResult`).
#[must_use]
pub fn listen_closed_result(version: ProtocolVersion, listen: &Id) -> Object {
    let mut result = Map::new();
    result.insert("_meta".into(), subscription_meta(listen));
    complete(result, version)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::ProtocolVersion as V;
    use crate::{parse_call_tool_result, parse_discover_result, parse_initialize_result, parse_tools_list};

    fn server() -> ServerIdentity {
        ServerIdentity::new("wasmgate", "0.1.0")
    }

    #[test]
    fn stateless_results_are_complete_and_handshake_results_are_plain() {
        let modern = call_tool_text_result(V::V2026_07_28, "hi", false);
        assert_eq!(
            Value::Object(modern),
            json!({"content": [{"type": "text", "text": "hi"}], "isError": false, "resultType": "complete"})
        );
        let legacy = call_tool_text_result(V::V2025_11_25, "no", true);
        assert_eq!(Value::Object(legacy), json!({"content": [{"type": "text", "text": "no"}], "isError": true}));
    }

    #[test]
    fn built_results_read_back_with_the_client_parsers() {
        let caps = json!({"tools": {"listChanged": true}}).as_object().cloned().unwrap();
        let init = initialize_result(V::V2025_11_25, caps.clone(), &server(), Some("be nice"));
        let init = parse_initialize_result(&Value::Object(init)).unwrap();
        assert_eq!((init.protocol_version.as_str(), init.server_info.name.as_str()), ("2025-11-25", "wasmgate"));

        let supported = [V::V2025_06_18, V::V2026_07_28, V::V2025_11_25];
        let found = discover_result(V::V2026_07_28, &supported, caps, &server(), None, CacheHints::default());
        assert_eq!(found["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18"]));
        assert_eq!((&found["ttlMs"], &found["cacheScope"]), (&json!(0), &json!("private")));
        let found = parse_discover_result(&Value::Object(found)).unwrap();
        assert_eq!(found.server_info.map(|i| i.version), Some("0.1.0".into()));

        let tool = tool_definition("echo", "Echoes", json!({"type": "object"}));
        let page = tools_list_result(V::V2026_07_28, vec![tool], Some("1"), CacheHints::default());
        let page = parse_tools_list(&Value::Object(page), 10).unwrap();
        assert_eq!((page.tools[0].name.as_str(), page.next_cursor.as_deref()), ("echo", Some("1")));
        let call = parse_call_tool_result(&Value::Object(call_tool_text_result(V::V2026_07_28, "x", true))).unwrap();
        assert!(call.is_error);
    }

    #[test]
    fn handshake_list_pages_carry_no_cache_hints() {
        let page = tools_list_result(V::V2025_06_18, vec![], None, CacheHints::default());
        assert_eq!(Value::Object(page), json!({"tools": []}));
    }

    #[test]
    fn the_unsupported_version_error_names_both_sides() {
        let error = unsupported_version_error(Some(&Id::Int(3)), &[V::V2025_11_25, V::V2026_07_28], "1900-01-01");
        assert_eq!(error["error"]["code"], json!(-32022));
        assert_eq!(
            error["error"]["data"],
            json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"})
        );
        assert_eq!(error["id"], json!(3));
    }

    #[test]
    fn subscription_messages_carry_the_listen_id() {
        let listen = Id::from("l-1");
        let ack = listen_acknowledged(&listen, &SubscriptionFilter::tools());
        let params = ack["params"].as_object().unwrap();
        let parsed = crate::parse_acknowledged(params).unwrap();
        assert_eq!(parsed.subscription_id, listen);
        let change = subscription_notification(&listen, "notifications/tools/list_changed");
        assert_eq!(change["params"]["_meta"][META_SUBSCRIPTION_ID], json!("l-1"));
        let closed = listen_closed_result(V::V2026_07_28, &listen);
        assert_eq!(Value::Object(closed), json!({"_meta": {META_SUBSCRIPTION_ID: "l-1"}, "resultType": "complete"}));
    }
}
