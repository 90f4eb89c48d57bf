//! The MCP request headers of Streamable HTTP, derived from the JSON-RPC body.
//!
//! 2026-07-28 mirrors body fields into headers so intermediaries can route without
//! parsing JSON, and servers reject a request whose headers disagree with its body
//! (-32020). Deriving the headers *from the body* that is about to be sent, in one
//! function, is what keeps them from disagreeing:
//!
//! * `MCP-Protocol-Version`: the body's `_meta["io.modelcontextprotocol/protocolVersion"]`;
//! * `Mcp-Method`: the body's `method`;
//! * `Mcp-Name`: `params.name` for `tools/call` and `prompts/get`, `params.uri` for
//!   `resources/read`, Base64-wrapped (`=?base64?...?=`) when the value is not a plain,
//!   visible ASCII header value or looks like the wrapper itself.
//!
//! Handshake-era requests carry no `_meta` stamp; for them the transport sends the
//! negotiated version (from 2025-06-18 on, when the header was introduced) on every
//! request after `initialize`, and no `Mcp-Method`/`Mcp-Name`, which those versions do
//! not define.

use base64::Engine;
use serde_json::Value;
use wasmgate_protocol::{META_PROTOCOL_VERSION, ProtocolVersion};

/// `MCP-Protocol-Version`.
pub(crate) const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`.
pub(crate) const METHOD: &str = "mcp-method";
/// `Mcp-Name`.
pub(crate) const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (handshake era).
pub(crate) const SESSION_ID: &str = "mcp-session-id";
/// The event id a resumed event stream continues after (WHATWG SSE, SEP-1699).
pub(crate) const LAST_EVENT_ID: &str = "last-event-id";

/// The MCP headers for `body`. `negotiated` is the handshake-era version, if one was
/// negotiated; it is ignored for bodies that carry their own version stamp.
pub(crate) fn mcp_headers(body: &Value, negotiated: Option<ProtocolVersion>) -> Vec<(&'static str, String)> {
    let method = body.get("method").and_then(Value::as_str);
    let params = body.get("params");
    let stamped =
        params.and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION)).and_then(Value::as_str);
    let mut headers = Vec::new();
    match stamped {
        Some(version) => {
            headers.push((PROTOCOL_VERSION, version.to_owned()));
            if let Some(method) = method {
                headers.push((METHOD, method.to_owned()));
                let name_field = match method {
                    "tools/call" | "prompts/get" => Some("name"),
                    "resources/read" => Some("uri"),
                    _ => None,
                };
                if let Some(name) = name_field.and_then(|f| params?.get(f)).and_then(Value::as_str) {
                    headers.push((NAME, encode_value(name)));
                }
            }
        }
        None => {
            if let Some(version) = negotiated.filter(|v| *v >= ProtocolVersion::V2025_06_18)
                && method != Some("initialize")
            {
                headers.push((PROTOCOL_VERSION, version.as_str().to_owned()));
            }
        }
    }
    headers
}

/// A header value as-is when it is plain visible ASCII (spaces allowed inside, not at
/// the ends) and does not look like the Base64 wrapper; otherwise the wrapper.
pub(crate) fn encode_value(value: &str) -> String {
    let plain = !value.is_empty()
        && value.bytes().all(|b| b == b' ' || b.is_ascii_graphic())
        && !value.starts_with(' ')
        && !value.ends_with(' ');
    let looks_wrapped = value.starts_with("=?base64?") && value.ends_with("?=");
    if plain && !looks_wrapped {
        value.to_owned()
    } else {
        format!("=?base64?{}?=", base64::engine::general_purpose::STANDARD.encode(value.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn values_follow_the_specification_examples() {
        assert_eq!(encode_value("us-west1"), "us-west1");
        assert_eq!(encode_value("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(encode_value("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
    }

    #[test]
    fn a_stamped_tools_call_gets_version_method_and_name() {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "get_weather", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        assert_eq!(
            mcp_headers(&body, None),
            vec![
                (PROTOCOL_VERSION, "2026-07-28".to_owned()),
                (METHOD, "tools/call".to_owned()),
                (NAME, "get_weather".to_owned())
            ]
        );
    }

    #[test]
    fn handshake_requests_carry_only_the_negotiated_version_and_not_on_initialize() {
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        let v = Some(ProtocolVersion::V2025_11_25);
        assert_eq!(mcp_headers(&list, v), vec![(PROTOCOL_VERSION, "2025-11-25".to_owned())]);
        assert!(mcp_headers(&init, v).is_empty());
        assert!(mcp_headers(&list, Some(ProtocolVersion::V2025_03_26)).is_empty());
    }
}
