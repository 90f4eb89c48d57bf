//! MCP client-side requests for both protocol eras.
//!
//! The era difference lives in one place, [`ClientContext`]: under a stateless version
//! (2026-07-28) every request's `params._meta` gets the protocol version, the client's
//! capabilities and the client's identity; under a legacy version requests carry none of
//! that (it was said once, in `initialize`). The per-method builders then look the same
//! for both eras, and a builder for a method that does not exist in the era (`initialize`
//! when stateless, `server/discover` when legacy) returns
//! [`WrongEra`](ProtocolError::WrongEra) instead of sending something the server cannot
//! understand.
//!
//! Stamping *merges* into an existing `_meta` (a `progressToken`, trace context) and the
//! three reserved keys always get the context's values: the gateway is the client, and
//! nobody upstream of it gets to declare a different version or capabilities.

use serde_json::{Map, Value};

use wasmgate_core::CompletionRequest;

use crate::completion::{completion_params, strings_only};
use crate::fields::{Object, invalid};
use crate::id::Id;
use crate::jsonrpc::{Message, classify, notification, request};
use crate::result::{INPUT_REQUIRED_CAPABLE_METHODS, InputRequired};
use crate::subscriptions::{LISTEN, SubscriptionFilter};
use crate::version::ProtocolVersion;
use crate::{ProtocolError, fields};

/// `_meta` key: the request's protocol version (2026-07-28, required).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request (2026-07-28, required).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's `Implementation` (2026-07-28, SHOULD be sent on every request).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Result `_meta` key: the server's `Implementation` (2026-07-28, SHOULD).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key: per-request log level (2026-07-28, deprecated).
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key: the progress token of a request (all versions).
pub const META_PROGRESS_TOKEN: &str = "progressToken";

/// An MCP `Implementation`: a program's self-reported name and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version of the software.
    pub version: String,
}

/// The client's identity, sent in `initialize` and `_meta`.
pub type ClientInfo = Implementation;

impl Implementation {
    /// An identity.
    #[must_use]
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Self { name: name.into(), version: version.into() }
    }

    /// As an `Implementation` object.
    #[must_use]
    pub fn to_value(&self) -> Value {
        let mut obj = Map::new();
        obj.insert("name".into(), Value::String(self.name.clone()));
        obj.insert("version".into(), Value::String(self.version.clone()));
        Value::Object(obj)
    }
}

/// Who the client is and which version it speaks: everything a builder needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientContext {
    version: ProtocolVersion,
    info: ClientInfo,
    capabilities: Object,
}

impl ClientContext {
    /// A context; `capabilities` is the `ClientCapabilities` object (`{}` declares none).
    #[must_use]
    pub fn new(version: ProtocolVersion, info: ClientInfo, capabilities: Object) -> Self {
        Self { version, info, capabilities }
    }

    /// The protocol version requests are built for.
    #[must_use]
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    fn era(&self, what: &'static str, stateless: bool) -> Result<(), ProtocolError> {
        if self.version.is_stateless() == stateless {
            Ok(())
        } else {
            Err(ProtocolError::WrongEra { what, version: self.version.as_str() })
        }
    }

    /// Builds a request, stamping `params._meta` for stateless versions. `meta` is the
    /// caller's `_meta`, if any; it is kept even when empty.
    fn build(&self, id: &Id, method: &str, mut params: Object, mut meta: Option<Object>) -> Value {
        if self.version.is_stateless() {
            let meta = meta.get_or_insert_default();
            meta.insert(META_PROTOCOL_VERSION.into(), Value::String(self.version.as_str().into()));
            meta.insert(META_CLIENT_INFO.into(), self.info.to_value());
            meta.insert(META_CLIENT_CAPABILITIES.into(), Value::Object(self.capabilities.clone()));
        }
        if let Some(meta) = meta {
            params.insert("_meta".into(), Value::Object(meta));
        }
        request(id, method, Some(params))
    }

    /// Any request, with `_meta` stamped (merged into `params._meta` if present).
    ///
    /// # Errors
    ///
    /// [`WrongType`](ProtocolError::WrongType) if `params._meta` is not an object.
    pub fn request(&self, id: &Id, method: &str, mut params: Object) -> Result<Value, ProtocolError> {
        let meta = match params.remove("_meta") {
            None => None,
            Some(Value::Object(meta)) => Some(meta),
            Some(_) => return Err(fields::wrong_type("params._meta".into(), "an object")),
        };
        Ok(self.build(id, method, params, meta))
    }

    /// `server/discover` (stateless versions only).
    ///
    /// # Errors
    ///
    /// [`WrongEra`](ProtocolError::WrongEra) under a legacy version.
    pub fn discover(&self, id: &Id) -> Result<Value, ProtocolError> {
        self.era("server/discover", true)?;
        Ok(self.build(id, "server/discover", Map::new(), None))
    }

    /// `initialize` (legacy versions only), offering this context's version.
    ///
    /// # Errors
    ///
    /// [`WrongEra`](ProtocolError::WrongEra) under a stateless version.
    pub fn initialize(&self, id: &Id) -> Result<Value, ProtocolError> {
        self.era("initialize", false)?;
        let mut params = Map::new();
        params.insert("protocolVersion".into(), Value::String(self.version.as_str().into()));
        params.insert("capabilities".into(), Value::Object(self.capabilities.clone()));
        params.insert("clientInfo".into(), self.info.to_value());
        Ok(request(id, "initialize", Some(params)))
    }

    /// `notifications/initialized` (legacy versions only).
    ///
    /// # Errors
    ///
    /// [`WrongEra`](ProtocolError::WrongEra) under a stateless version.
    pub fn initialized(&self) -> Result<Value, ProtocolError> {
        self.era("notifications/initialized", false)?;
        Ok(notification("notifications/initialized", None))
    }

    fn paginated(&self, id: &Id, method: &str, cursor: Option<&str>) -> Value {
        let mut params = Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), Value::String(cursor.into()));
        }
        self.build(id, method, params, None)
    }

    /// `tools/list`, from the start or from `cursor` (a previous page's `nextCursor`).
    #[must_use]
    pub fn tools_list(&self, id: &Id, cursor: Option<&str>) -> Value {
        self.paginated(id, "tools/list", cursor)
    }

    /// `resources/list`.
    #[must_use]
    pub fn resources_list(&self, id: &Id, cursor: Option<&str>) -> Value {
        self.paginated(id, "resources/list", cursor)
    }

    /// `prompts/list`.
    #[must_use]
    pub fn prompts_list(&self, id: &Id, cursor: Option<&str>) -> Value {
        self.paginated(id, "prompts/list", cursor)
    }

    /// `resources/read`.
    #[must_use]
    pub fn resources_read(&self, id: &Id, uri: &str) -> Value {
        let mut params = Map::new();
        params.insert("uri".into(), Value::String(uri.into()));
        self.build(id, "resources/read", params, None)
    }

    /// `resources/templates/list`.
    #[must_use]
    pub fn resources_templates_list(&self, id: &Id, cursor: Option<&str>) -> Value {
        self.paginated(id, "resources/templates/list", cursor)
    }

    /// `prompts/get` for the prompt `name`; `arguments` (each value a string, as the
    /// schema requires) are sent when there are any.
    ///
    /// # Errors
    ///
    /// [`WrongType`](ProtocolError::WrongType) at `params.arguments["key"]` for a value that
    /// is not a string.
    pub fn prompts_get(&self, id: &Id, name: &str, arguments: &Object) -> Result<Value, ProtocolError> {
        strings_only(arguments, "params.arguments")?;
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.into()));
        if !arguments.is_empty() {
            params.insert("arguments".into(), Value::Object(arguments.clone()));
        }
        Ok(self.build(id, "prompts/get", params, None))
    }

    /// `completion/complete`: `ref`, `argument` `{name, value}` and, when given,
    /// `context` `{arguments}`.
    ///
    /// # Errors
    ///
    /// The [`check_completion_request`](crate::check_completion_request) errors: a
    /// reference that is not a prompt or resource template reference, or a context
    /// argument that is not a string.
    pub fn completion_complete(&self, id: &Id, complete: &CompletionRequest) -> Result<Value, ProtocolError> {
        Ok(self.build(id, "completion/complete", completion_params(complete)?, None))
    }

    /// `tools/call`; `progress_token` asks for `notifications/progress` (in `_meta.progressToken`).
    #[must_use]
    pub fn tools_call(&self, id: &Id, name: &str, arguments: Option<Object>, progress_token: Option<&Id>) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), Value::String(name.into()));
        if let Some(arguments) = arguments {
            params.insert("arguments".into(), Value::Object(arguments));
        }
        let meta = progress_token.map(|token| {
            let mut meta = Map::new();
            meta.insert(META_PROGRESS_TOKEN.into(), token.to_value());
            meta
        });
        self.build(id, "tools/call", params, meta)
    }

    /// `subscriptions/listen` (stateless versions only): opens a subscription stream for
    /// the kinds in `filter` (see `subscriptions`).
    ///
    /// # Errors
    ///
    /// [`WrongEra`](ProtocolError::WrongEra) under a legacy version, which has no such method.
    pub fn subscriptions_listen(&self, id: &Id, filter: &SubscriptionFilter) -> Result<Value, ProtocolError> {
        self.era(LISTEN, true)?;
        let mut params = Map::new();
        params.insert("notifications".into(), filter.to_value());
        Ok(self.build(id, LISTEN, params, None))
    }

    /// `notifications/cancelled` for a request this client sent. Notifications carry no
    /// version stamp in any era.
    #[must_use]
    pub fn cancelled(&self, request_id: &Id, reason: Option<&str>) -> Value {
        let mut params = Map::new();
        params.insert("requestId".into(), request_id.to_value());
        if let Some(reason) = reason {
            params.insert("reason".into(), Value::String(reason.into()));
        }
        notification("notifications/cancelled", Some(params))
    }

    /// The retry of `original` (a `tools/call`, `prompts/get` or `resources/read` this
    /// client built) after the server answered `required`: same method and params, a
    /// new id, `inputResponses` as given, and `requestState` echoed exactly when (and only
    /// when) the server sent one. Earlier rounds' `inputResponses`/`requestState` are replaced.
    ///
    /// # Errors
    ///
    /// [`WrongEra`](ProtocolError::WrongEra) under a legacy version; the [`classify`] errors
    /// if `original` is not a request; [`InvalidValue`](ProtocolError::InvalidValue) if its
    /// method cannot answer input-required, `new_id` equals its id, `input_responses` is
    /// missing although the server asked for input, or answers a key it did not ask for.
    pub fn retry_with_input(
        &self,
        original: &Value,
        new_id: &Id,
        required: &InputRequired,
        input_responses: Option<Object>,
    ) -> Result<Value, ProtocolError> {
        self.era("input_required retry", true)?;
        let Message::Request(original) = classify(original.clone())? else {
            return Err(invalid("original".into(), "is not a request"));
        };
        if !INPUT_REQUIRED_CAPABLE_METHODS.contains(&original.method.as_str()) {
            return Err(invalid("original.method".into(), format!("{} cannot answer input_required", original.method)));
        }
        if original.id == *new_id {
            return Err(invalid("id".into(), format!("a retry needs a new request id, {new_id} was the original's")));
        }
        let asked = required.input_requests.as_ref().filter(|a| !a.is_empty());
        if asked.is_some() && input_responses.is_none() {
            return Err(invalid(
                "inputResponses".into(),
                "the server asked for input; the retry must carry the answers",
            ));
        }
        if let Some(responses) = &input_responses
            && let Some(key) = responses.keys().find(|k| !asked.is_some_and(|a| a.contains_key(*k)))
        {
            return Err(invalid("inputResponses".into(), format!("answers {key:?}, which the server did not ask for")));
        }
        let mut params = original.params.unwrap_or_default();
        params.remove("inputResponses");
        params.remove("requestState");
        if let Some(responses) = input_responses {
            params.insert("inputResponses".into(), Value::Object(responses));
        }
        if let Some(state) = &required.request_state {
            params.insert("requestState".into(), Value::String(state.clone()));
        }
        Ok(request(new_id, &original.method, Some(params)))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn context(version: ProtocolVersion) -> ClientContext {
        let capabilities = json!({"elicitation": {}}).as_object().unwrap().clone();
        ClientContext::new(version, ClientInfo::new("wasmgate", "0.1.0"), capabilities)
    }

    fn stamp() -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientInfo": {"name": "wasmgate", "version": "0.1.0"},
               "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}})
    }

    fn object(value: Value) -> Object {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn prompt_template_and_completion_requests_are_stamped_when_stateless() {
        let c = context(ProtocolVersion::V2026_07_28);
        assert_eq!(
            c.resources_templates_list(&Id::Int(1), Some("t2")),
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list",
                   "params": {"cursor": "t2", "_meta": stamp()}})
        );
        let arguments = object(json!({"code": "fn main() {}"}));
        assert_eq!(
            c.prompts_get(&Id::Int(2), "review", &arguments).unwrap(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                   "params": {"name": "review", "arguments": {"code": "fn main() {}"}, "_meta": stamp()}})
        );
        let complete = CompletionRequest {
            reference: json!({"type": "ref/prompt", "name": "review"}),
            argument_name: "language".into(),
            argument_value: "ru".into(),
            context_arguments: Some(object(json!({"code": "x"}))),
        };
        assert_eq!(
            c.completion_complete(&Id::Int(3), &complete).unwrap(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "completion/complete",
                   "params": {"ref": {"type": "ref/prompt", "name": "review"},
                              "argument": {"name": "language", "value": "ru"},
                              "context": {"arguments": {"code": "x"}}, "_meta": stamp()}})
        );
    }

    #[test]
    fn legacy_requests_carry_no_stamp_and_empty_prompt_arguments_are_omitted() {
        let c = context(ProtocolVersion::V2025_11_25);
        assert_eq!(
            c.resources_templates_list(&Id::Int(1), None),
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/templates/list", "params": {}})
        );
        assert_eq!(
            c.prompts_get(&Id::Int(2), "bare", &Map::new()).unwrap(),
            json!({"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "bare"}})
        );
        let complete = CompletionRequest {
            reference: json!({"type": "ref/resource", "uri": "file:///{path}"}),
            argument_name: "path".into(),
            argument_value: "sr".into(),
            context_arguments: None,
        };
        assert_eq!(
            c.completion_complete(&Id::Int(3), &complete).unwrap(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "completion/complete",
                   "params": {"ref": {"type": "ref/resource", "uri": "file:///{path}"},
                              "argument": {"name": "path", "value": "sr"}}})
        );
    }

    #[test]
    fn requests_the_schema_cannot_carry_are_not_built() {
        let c = context(ProtocolVersion::V2026_07_28);
        assert_eq!(
            c.prompts_get(&Id::Int(1), "review", &object(json!({"n": 5}))),
            Err(ProtocolError::WrongType { at: "params.arguments[\"n\"]".into(), expected: "a string" })
        );
        let complete = CompletionRequest {
            reference: json!({"type": "ref/tool", "name": "t"}),
            argument_name: "a".into(),
            argument_value: String::new(),
            context_arguments: None,
        };
        assert!(matches!(
            c.completion_complete(&Id::Int(2), &complete),
            Err(ProtocolError::InvalidValue { at, .. }) if at == "params.ref.type"
        ));
    }
}
