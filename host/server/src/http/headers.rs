//! The 2026-07-28 request headers, checked against the body they mirror.
//!
//! Intermediaries route on `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` without
//! reading the body, so a request whose headers disagree with its body is refused
//! (400, -32020 `HeaderMismatch`): otherwise a proxy could allow one tool while the
//! server ran another. A missing header is a mismatch too. `Mcp-Name` may carry the
//! Base64 wrapper `=?base64?...?=`, decoded before comparing.
//!
//! A `tools/call` of a tool whose `inputSchema` marks parameters with `x-mcp-header`
//! must also mirror each such argument in `Mcp-Param-<Name>` ([`check_params`]): a
//! present argument needs its header with the same value, and an absent one must not
//! have one.
//!
//! Each of these headers, and `Mcp-Session-Id`, may be sent once ([`single`]): with two
//! values an intermediary may act on one while the server checks the other.

use axum::http::{HeaderMap, HeaderValue};
use base64::Engine as _;
use serde_json::{Map, Value};
use wasmgate_protocol::{META_PROTOCOL_VERSION, Request, header_params, header_values};

/// Checks the headers of a stamped request; the error says what disagreed.
pub(crate) fn check_stateless(headers: &HeaderMap, request: &Request) -> Result<(), String> {
    let params = request.params.as_ref();
    let stamped = params.and_then(|p| p.get("_meta")).and_then(|m| m.get(META_PROTOCOL_VERSION));
    let Some(Value::String(stamped)) = stamped else {
        // A malformed stamp is refused (-32602) when the request is routed.
        return Ok(());
    };
    mirrored(headers, "MCP-Protocol-Version", stamped, false)?;
    mirrored(headers, "Mcp-Method", &request.method, false)?;
    let name_field = match request.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    match params.and_then(|p| p.get(name_field)).and_then(Value::as_str) {
        Some(name) => mirrored(headers, "Mcp-Name", name, true),
        None => Ok(()),
    }
}

/// Checks the `Mcp-Param-*` headers of a call with `arguments` of a tool whose input
/// schema is `schema`. A schema whose annotations break the rules has nothing a client
/// could mirror (clients drop such tools), so it is not checked.
pub(crate) fn check_params(headers: &HeaderMap, schema: &Value, arguments: &Map<String, Value>) -> Result<(), String> {
    let Ok(params) = header_params(schema) else { return Ok(()) };
    for (param, value) in header_values(&params, arguments) {
        let name = param.header_name();
        match (headers.contains_key(name.as_str()), value) {
            (_, Some(body)) => mirrored(headers, &name, &body, true)?,
            (true, None) => return Err(format!("the {name} header is sent, but its parameter is absent")),
            (false, None) => {}
        }
    }
    Ok(())
}

/// The value of header `name`, if it is sent; sent more than once, it is refused.
pub(crate) fn single<'a>(headers: &'a HeaderMap, name: &str) -> Result<Option<&'a HeaderValue>, String> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    match values.next() {
        Some(_) => Err(format!("the {name} header is sent more than once")),
        None => Ok(first),
    }
}

/// Header `name` must be present once, valid and equal to `body` (after Base64 decoding
/// when `encoded` allows the wrapper).
fn mirrored(headers: &HeaderMap, name: &str, body: &str, encoded: bool) -> Result<(), String> {
    let value = single(headers, name)?.ok_or_else(|| format!("the {name} header is missing"))?;
    let value = value.to_str().map_err(|_| format!("the {name} header is not visible ASCII"))?;
    let value = if encoded {
        decode(value).ok_or_else(|| format!("the {name} header is badly encoded"))?
    } else {
        value.to_owned()
    };
    if value == body {
        Ok(())
    } else {
        Err(format!("{name} header value {value:?} does not match body value {body:?}"))
    }
}

/// A header value, unwrapped from `=?base64?...?=` when wrapped.
fn decode(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|v| v.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(base64::engine::general_purpose::STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use axum::http::HeaderValue;
    use serde_json::json;
    use wasmgate_protocol::{Message, classify};

    use super::*;

    fn call(name: &str) -> Request {
        let message = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": name, "_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}});
        let Ok(Message::Request(request)) = classify(message) else { panic!("not a request") };
        request
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs.iter().map(|(k, v)| (axum::http::HeaderName::from_static(k), HeaderValue::from_static(v))).collect()
    }

    #[test]
    fn matching_headers_pass_and_the_name_may_be_base64_wrapped() {
        let plain = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
        assert_eq!(check_stateless(&headers(&plain), &call("echo")), Ok(()));
        let wrapped =
            [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "=?base64?IGVjaG8g?=")];
        assert_eq!(check_stateless(&headers(&wrapped), &call(" echo ")), Ok(()));
    }

    #[test]
    fn a_missing_or_different_header_is_a_mismatch() {
        let other_tool = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "rm")];
        assert!(check_stateless(&headers(&other_tool), &call("echo")).unwrap_err().contains("Mcp-Name"));
        let no_method = [("mcp-protocol-version", "2026-07-28"), ("mcp-name", "echo")];
        assert!(check_stateless(&headers(&no_method), &call("echo")).unwrap_err().contains("Mcp-Method"));
        let old = [("mcp-protocol-version", "2025-11-25"), ("mcp-method", "tools/call"), ("mcp-name", "echo")];
        assert!(check_stateless(&headers(&old), &call("echo")).unwrap_err().contains("MCP-Protocol-Version"));
    }

    #[test]
    fn a_header_sent_twice_is_a_mismatch_even_when_its_first_value_matches() {
        let base = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "rm")];
        for (name, second) in [("mcp-name", "safe"), ("mcp-name", "rm"), ("mcp-method", "tools/list")] {
            let mut twice = headers(&base);
            twice.append(axum::http::HeaderName::from_static(name), HeaderValue::from_static(second));
            let error = check_stateless(&twice, &call("rm")).unwrap_err();
            assert!(error.contains("more than once"), "{name}: {second}: {error}");
        }
    }
}
