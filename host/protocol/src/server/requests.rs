//! Reading a client's requests: the parameters a server needs, checked strictly.
//!
//! The era of a request is decided by one fact: whether its `params._meta` names a
//! protocol version ([`has_stateless_meta`]). A stateless (2026-07-28) request must then
//! carry a well-formed stamp ([`parse_stateless_meta`]): the version a string, the client
//! capabilities an object. Whether the version is one the server speaks is the caller's
//! check, since the answer (-32022 with the supported list) depends on its configuration.

use serde_json::Value;
use wasmgate_core::{CompleteParams, CompletionRef};

use crate::fields::{Object, as_object, opt_object, opt_str, req_object, req_str, required};
use crate::mcp::{META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION};
use crate::{Id, ProtocolError, ProtocolVersion};

/// The `_meta` stamp every 2026-07-28 request carries.
#[derive(Debug, Clone, PartialEq)]
pub struct StatelessMeta {
    /// `io.modelcontextprotocol/protocolVersion`, as sent (maybe a version nobody knows).
    pub protocol_version: String,
    /// `io.modelcontextprotocol/clientCapabilities` (`{}` declares none).
    pub client_capabilities: Object,
    /// `io.modelcontextprotocol/clientInfo`, self-reported, for logs only.
    pub client_info: Option<Value>,
}

/// Whether `params._meta` carries a protocol version key: the mark of a stateless request.
/// A malformed `_meta` does not count; [`parse_stateless_meta`] reports it.
#[must_use]
pub fn has_stateless_meta(params: Option<&Object>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(|meta| meta.contains_key(META_PROTOCOL_VERSION))
}

/// Reads the stateless stamp of a request's `params`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params, `_meta`, the version or the
/// capabilities; [`WrongType`](ProtocolError::WrongType) for a version that is not a string,
/// capabilities or client info that are not objects. All map to -32602.
pub fn parse_stateless_meta(params: Option<&Object>) -> Result<StatelessMeta, ProtocolError> {
    let at = "params._meta";
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let meta = req_object(params, "params", "_meta")?;
    let protocol_version = req_str(meta, at, META_PROTOCOL_VERSION)?.to_owned();
    let client_capabilities = req_object(meta, at, META_CLIENT_CAPABILITIES)?.clone();
    let client_info = opt_object(meta, at, META_CLIENT_INFO)?.map(|info| Value::Object(info.clone()));
    Ok(StatelessMeta { protocol_version, client_capabilities, client_info })
}

/// The parameters of `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeParams {
    /// The version the client offers, as sent.
    pub protocol_version: String,
    /// `ClientCapabilities`.
    pub capabilities: Object,
    /// `clientInfo`, self-reported, for logs only.
    pub client_info: Value,
}

/// Reads the parameters of `initialize`.
///
/// # Errors
///
/// Field errors for a missing or mistyped `protocolVersion`, `capabilities` or `clientInfo`.
pub fn parse_initialize_params(params: Option<&Object>) -> Result<InitializeParams, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let client_info = required(params, "params", "clientInfo")?;
    as_object(client_info, "params.clientInfo")?;
    Ok(InitializeParams {
        protocol_version: req_str(params, "params", "protocolVersion")?.to_owned(),
        capabilities: req_object(params, "params", "capabilities")?.clone(),
        client_info: client_info.clone(),
    })
}

/// The version to answer an `initialize` offering `offered` with: the offered one when it
/// is a handshake version in `ours`, otherwise our newest handshake version (the client
/// then decides whether it can speak it). `None` when `ours` has no handshake version.
#[must_use]
pub fn answer_initialize_version(ours: &[ProtocolVersion], offered: &str) -> Option<ProtocolVersion> {
    let handshake = |v: &ProtocolVersion| !v.is_stateless() && ours.contains(v);
    ProtocolVersion::parse(offered).filter(handshake).or_else(|| ours.iter().copied().filter(handshake).max())
}

/// The parameters of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolParams {
    /// The tool's name, never empty.
    pub name: String,
    /// The arguments (`{}` when absent).
    pub arguments: Object,
    /// `_meta.progressToken`: the client wants `notifications/progress` under it.
    pub progress_token: Option<Id>,
    /// `inputResponses` of a 2026-07-28 retry: the client's answers, by the keys of the
    /// `inputRequests` it was sent.
    pub input_responses: Option<Object>,
    /// `requestState` of a 2026-07-28 retry, echoed from the `input_required` result.
    pub request_state: Option<String>,
    /// `_meta["wasmgate/context"]`: the conversation the client says the request belongs
    /// to, within its own ([`CONTEXT_META`]).
    pub context: Option<String>,
}

/// Reads the parameters of `tools/call`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params or a name,
/// [`WrongType`](ProtocolError::WrongType) for a name that is not a string or arguments
/// that are not an object, [`InvalidValue`](ProtocolError::InvalidValue) for an empty name,
/// [`BadId`](ProtocolError::BadId) for a progress token that is not a string or an integer;
/// `inputResponses` that is not an object or `requestState` that is not a string are
/// [`WrongType`](ProtocolError::WrongType).
pub fn parse_call_tool_params(params: Option<&Object>) -> Result<CallToolParams, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let name = req_str(params, "params", "name")?;
    if name.is_empty() {
        return Err(crate::fields::invalid("params.name".into(), "is empty"));
    }
    let arguments = opt_object(params, "params", "arguments")?.cloned().unwrap_or_default();
    let progress_token = match opt_object(params, "params", "_meta")?.and_then(|meta| meta.get("progressToken")) {
        Some(token) => Some(Id::from_value(token)?),
        None => None,
    };
    let input_responses = opt_object(params, "params", "inputResponses")?.cloned();
    let request_state = opt_str(params, "params", "requestState")?.map(str::to_owned);
    let context = meta_context(params)?;
    Ok(CallToolParams { name: name.to_owned(), arguments, progress_token, input_responses, request_state, context })
}

/// The `cursor` of a paginated request, if any.
///
/// # Errors
///
/// [`WrongType`](ProtocolError::WrongType) for a cursor that is not a string.
pub fn parse_cursor(params: Option<&Object>) -> Result<Option<String>, ProtocolError> {
    Ok(match params {
        Some(params) => opt_str(params, "params", "cursor")?.map(str::to_owned),
        None => None,
    })
}

/// Reads the `uri` of `resources/read` (and `resources/subscribe`).
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params or a URI,
/// [`WrongType`](ProtocolError::WrongType) for a URI that is not a string,
/// [`InvalidValue`](ProtocolError::InvalidValue) for an empty one.
pub fn parse_resource_uri(params: Option<&Object>) -> Result<String, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let uri = req_str(params, "params", "uri")?;
    if uri.is_empty() {
        return Err(crate::fields::invalid("params.uri".into(), "is empty"));
    }
    Ok(uri.to_owned())
}

/// The parameters of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadResourceParams {
    /// The resource's URI, never empty.
    pub uri: String,
    /// `inputResponses` of a 2026-07-28 retry (as for `tools/call`).
    pub input_responses: Option<Object>,
    /// `requestState` of a 2026-07-28 retry (as for `tools/call`).
    pub request_state: Option<String>,
    /// `_meta["wasmgate/context"]`: the conversation the client says the request belongs
    /// to, within its own ([`CONTEXT_META`]).
    pub context: Option<String>,
}

/// Reads the parameters of `resources/read`.
///
/// # Errors
///
/// As [`parse_resource_uri`]; `inputResponses` that is not an object or `requestState`
/// that is not a string are [`WrongType`](ProtocolError::WrongType).
pub fn parse_read_resource_params(params: Option<&Object>) -> Result<ReadResourceParams, ProtocolError> {
    let uri = parse_resource_uri(params)?;
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let input_responses = opt_object(params, "params", "inputResponses")?.cloned();
    let request_state = opt_str(params, "params", "requestState")?.map(str::to_owned);
    let context = meta_context(params)?;
    Ok(ReadResourceParams { uri, input_responses, request_state, context })
}

/// The parameters of `prompts/get`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GetPromptParams {
    /// The prompt's name, never empty.
    pub name: String,
    /// The arguments, every value a string (`{}` when absent).
    pub arguments: Object,
    /// `inputResponses` of a 2026-07-28 retry (as for `tools/call`).
    pub input_responses: Option<Object>,
    /// `requestState` of a 2026-07-28 retry (as for `tools/call`).
    pub request_state: Option<String>,
    /// `_meta["wasmgate/context"]`: the conversation the client says the request belongs
    /// to, within its own ([`CONTEXT_META`]).
    pub context: Option<String>,
}

/// Reads the parameters of `prompts/get`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params or a name,
/// [`WrongType`](ProtocolError::WrongType) for a name that is not a string, arguments
/// that are not an object or an argument value that is not a string, `inputResponses`
/// that is not an object or `requestState` that is not a string,
/// [`InvalidValue`](ProtocolError::InvalidValue) for an empty name.
pub fn parse_get_prompt_params(params: Option<&Object>) -> Result<GetPromptParams, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let name = req_str(params, "params", "name")?;
    if name.is_empty() {
        return Err(crate::fields::invalid("params.name".into(), "is empty"));
    }
    let arguments = opt_object(params, "params", "arguments")?.cloned().unwrap_or_default();
    string_values(&arguments, "params.arguments")?;
    let input_responses = opt_object(params, "params", "inputResponses")?.cloned();
    let request_state = opt_str(params, "params", "requestState")?.map(str::to_owned);
    let context = meta_context(params)?;
    Ok(GetPromptParams { name: name.to_owned(), arguments, input_responses, request_state, context })
}

/// The `_meta` key under which a client names the conversation a request belongs to,
/// within its own: the gateway's data-flow rules remember what results said per
/// conversation.
pub const CONTEXT_META: &str = "wasmgate/context";

/// The longest conversation name a client may send under [`CONTEXT_META`], in bytes.
pub const MAX_CONTEXT_BYTES: usize = 256;

/// `params._meta["wasmgate/context"]`, if sent: a string of 1 to [`MAX_CONTEXT_BYTES`]
/// bytes without control characters.
fn meta_context(params: &Object) -> Result<Option<String>, ProtocolError> {
    let at = || format!("params._meta.{CONTEXT_META}");
    let Some(value) = opt_object(params, "params", "_meta")?.and_then(|meta| meta.get(CONTEXT_META)) else {
        return Ok(None);
    };
    let name = value.as_str().ok_or_else(|| crate::fields::wrong_type(at(), "string"))?;
    if name.is_empty() || name.len() > MAX_CONTEXT_BYTES || name.chars().any(char::is_control) {
        let reason = format!("must be 1 to {MAX_CONTEXT_BYTES} bytes without control characters");
        return Err(crate::fields::invalid(at(), reason));
    }
    Ok(Some(name.to_owned()))
}

/// Checks that every value of `map` is a string, as prompt and completion arguments are.
fn string_values(map: &Object, at: &str) -> Result<(), ProtocolError> {
    for (key, value) in map {
        if !value.is_string() {
            return Err(crate::fields::wrong_type(crate::fields::join(at, key), "string"));
        }
    }
    Ok(())
}

/// Reads the parameters of `completion/complete`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params, `ref`, `argument` or
/// their fields; [`WrongType`](ProtocolError::WrongType) for fields of the wrong type;
/// [`InvalidValue`](ProtocolError::InvalidValue) for a `ref.type` other than
/// `ref/prompt` and `ref/resource`.
pub fn parse_complete_params(params: Option<&Object>) -> Result<CompleteParams, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let reference = req_object(params, "params", "ref")?;
    let reference = match req_str(reference, "params.ref", "type")? {
        "ref/prompt" => CompletionRef::Prompt(req_str(reference, "params.ref", "name")?.to_owned()),
        "ref/resource" => CompletionRef::Resource(req_str(reference, "params.ref", "uri")?.to_owned()),
        other => {
            return Err(crate::fields::invalid(
                "params.ref.type".into(),
                format!("is {other:?}, not \"ref/prompt\" or \"ref/resource\""),
            ));
        }
    };
    let argument = req_object(params, "params", "argument")?;
    let argument_name = req_str(argument, "params.argument", "name")?.to_owned();
    let argument_value = req_str(argument, "params.argument", "value")?.to_owned();
    let context_arguments = match opt_object(params, "params", "context")? {
        Some(context) => opt_object(context, "params.context", "arguments")?.cloned(),
        None => None,
    };
    if let Some(arguments) = &context_arguments {
        string_values(arguments, "params.context.arguments")?;
    }
    Ok(CompleteParams { reference, argument_name, argument_value, context_arguments })
}

/// `notifications/cancelled`: which request, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancelled {
    /// The request to cancel.
    pub request_id: Id,
    /// The client's reason, for logs.
    pub reason: Option<String>,
}

/// Reads the parameters of `notifications/cancelled`.
///
/// # Errors
///
/// [`MissingField`](ProtocolError::MissingField) without params or `requestId`,
/// [`BadId`](ProtocolError::BadId) for an id that is not a string or an integer,
/// [`WrongType`](ProtocolError::WrongType) for a reason that is not a string.
pub fn parse_cancelled(params: Option<&Object>) -> Result<Cancelled, ProtocolError> {
    let params = params.ok_or_else(|| ProtocolError::MissingField { at: "params".into() })?;
    let request_id = Id::from_value(required(params, "params", "requestId")?)?;
    let reason = opt_str(params, "params", "reason")?.map(str::to_owned);
    Ok(Cancelled { request_id, reason })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::ProtocolVersion as V;

    fn obj(value: Value) -> Object {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn a_conversation_name_in_meta_is_read_for_calls_reads_and_prompts_and_bounded() {
        let named = |name: Value| obj(json!({"name": "t", "uri": "file:///a", "_meta": {CONTEXT_META: name}}));
        let call = parse_call_tool_params(Some(&named(json!("run-7")))).unwrap();
        assert_eq!(call.context.as_deref(), Some("run-7"));
        assert_eq!(parse_read_resource_params(Some(&named(json!("r")))).unwrap().context.as_deref(), Some("r"));
        assert_eq!(parse_get_prompt_params(Some(&named(json!("p")))).unwrap().context.as_deref(), Some("p"));
        assert_eq!(parse_call_tool_params(Some(&obj(json!({"name": "t"})))).unwrap().context, None);
        let longest = "x".repeat(MAX_CONTEXT_BYTES);
        assert!(parse_call_tool_params(Some(&named(json!(longest)))).is_ok());
        for bad in [json!(""), json!("x".repeat(MAX_CONTEXT_BYTES + 1)), json!("a\nb"), json!(7)] {
            let error = parse_call_tool_params(Some(&named(bad.clone()))).unwrap_err().to_string();
            assert!(error.contains("wasmgate/context"), "{bad}: {error}");
        }
    }

    #[test]
    fn a_request_is_stateless_exactly_when_its_meta_names_a_version() {
        let stamped = obj(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}));
        assert!(has_stateless_meta(Some(&stamped)));
        assert!(!has_stateless_meta(Some(&obj(json!({"_meta": {"progressToken": 1}})))));
        assert!(!has_stateless_meta(Some(&obj(json!({"_meta": []})))));
        assert!(!has_stateless_meta(None));
    }

    #[test]
    fn the_stateless_stamp_needs_a_string_version_and_object_capabilities() {
        let good = obj(json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}}));
        let meta = parse_stateless_meta(Some(&good)).unwrap();
        assert_eq!((meta.protocol_version.as_str(), meta.client_info), ("2026-07-28", None));
        for bad in [
            json!({}),
            json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}),
            json!({"_meta": {META_PROTOCOL_VERSION: 2026, META_CLIENT_CAPABILITIES: {}}}),
            json!({"_meta": {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: []}}),
        ] {
            let err = parse_stateless_meta(Some(&obj(bad.clone()))).unwrap_err();
            assert_eq!(err.jsonrpc_code(), crate::codes::INVALID_PARAMS, "{bad}: {err}");
        }
        assert!(parse_stateless_meta(None).is_err());
    }

    #[test]
    fn initialize_answers_the_offered_handshake_version_or_our_newest() {
        let ours = crate::SUPPORTED;
        assert_eq!(answer_initialize_version(&ours, "2025-06-18"), Some(V::V2025_06_18));
        assert_eq!(answer_initialize_version(&ours, "2099-01-01"), Some(V::V2025_11_25));
        assert_eq!(answer_initialize_version(&ours, "2026-07-28"), Some(V::V2025_11_25));
        assert_eq!(answer_initialize_version(&[V::V2025_03_26, V::V2026_07_28], "2025-11-25"), Some(V::V2025_03_26));
        assert_eq!(answer_initialize_version(&[V::V2026_07_28], "2025-11-25"), None);
    }

    #[test]
    fn initialize_params_are_read_strictly() {
        let good = obj(json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c"}}));
        assert_eq!(parse_initialize_params(Some(&good)).unwrap().protocol_version, "2025-11-25");
        assert!(parse_initialize_params(Some(&obj(json!({"protocolVersion": "x", "capabilities": {}})))).is_err());
        assert!(parse_initialize_params(None).is_err());
    }

    #[test]
    fn call_params_need_a_name_and_default_to_no_arguments() {
        let call = parse_call_tool_params(Some(&obj(json!({"name": "echo"})))).unwrap();
        assert_eq!((call.name.as_str(), call.arguments.len()), ("echo", 0));
        for bad in [json!({}), json!({"name": ""}), json!({"name": 1}), json!({"name": "e", "arguments": [1]})] {
            assert!(parse_call_tool_params(Some(&obj(bad.clone()))).is_err(), "{bad}");
        }
    }

    #[test]
    fn cursors_and_cancellations_are_typed() {
        assert_eq!(parse_cursor(Some(&obj(json!({"cursor": "2"})))), Ok(Some("2".into())));
        assert_eq!(parse_cursor(None), Ok(None));
        assert!(parse_cursor(Some(&obj(json!({"cursor": 2})))).is_err());
        let cancelled = parse_cancelled(Some(&obj(json!({"requestId": 7, "reason": "user"})))).unwrap();
        assert_eq!(cancelled, Cancelled { request_id: Id::Int(7), reason: Some("user".into()) });
        assert!(parse_cancelled(Some(&obj(json!({"requestId": 1.5})))).is_err());
        assert!(parse_cancelled(Some(&obj(json!({"requestId": 1, "reason": 2})))).is_err());
    }

    #[test]
    fn resource_prompt_and_completion_params_are_read_strictly() {
        assert_eq!(parse_resource_uri(Some(&obj(json!({"uri": "test://a"})))).unwrap(), "test://a");
        assert!(parse_resource_uri(Some(&obj(json!({"uri": ""})))).is_err());
        assert!(parse_resource_uri(Some(&obj(json!({"uri": 7})))).is_err());
        assert!(parse_resource_uri(None).is_err());

        let get = parse_get_prompt_params(Some(&obj(json!({"name": "p", "arguments": {"a": "x"}})))).unwrap();
        assert_eq!((get.name.as_str(), get.arguments.len()), ("p", 1));
        let bad = parse_get_prompt_params(Some(&obj(json!({"name": "p", "arguments": {"a": 1}})))).unwrap_err();
        assert!(bad.to_string().contains("params.arguments.a"), "{bad}");
        assert!(parse_get_prompt_params(Some(&obj(json!({"name": ""})))).is_err());

        let params = json!({"ref": {"type": "ref/resource", "uri": "test://t/{id}"},
                            "argument": {"name": "id", "value": "4"}, "context": {"arguments": {"k": "v"}}});
        let complete = parse_complete_params(Some(&obj(params))).unwrap();
        assert_eq!(complete.reference, CompletionRef::Resource("test://t/{id}".into()));
        assert_eq!((complete.argument_name.as_str(), complete.argument_value.as_str()), ("id", "4"));
        assert_eq!(complete.context_arguments.unwrap().len(), 1);
        let params = json!({"ref": {"type": "ref/tool", "name": "x"}, "argument": {"name": "a", "value": ""}});
        assert!(parse_complete_params(Some(&obj(params))).unwrap_err().to_string().contains("ref/prompt"));
        let params = json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a"}});
        assert!(parse_complete_params(Some(&obj(params))).is_err());
    }
}
