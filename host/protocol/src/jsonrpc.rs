//! JSON-RPC 2.0 envelopes: classify an incoming `Value`, build outgoing ones.
//!
//! [`classify`] decides which of the four message kinds a value is, or says precisely
//! why it is none of them. The rules, and the choices where JSON-RPC leaves room:
//!
//! * The message is an object. An array is a batch: JSON-RPC allows them, MCP 2025-03-26
//!   did too, but MCP removed them in 2025-06-18 and the gateway never sends one, so a
//!   batch is refused ([`Batch`](ProtocolError::Batch)) rather than half-supported.
//! * `"jsonrpc"` is exactly the string `"2.0"`.
//! * **No other top-level members** than `jsonrpc`, `id`, `method`, `params`, `result`,
//!   `error`. JSON-RPC is silent on extras; we refuse them because a forwarder must either
//!   drop them (silently changing the message) or pass them (a smuggling channel the
//!   policy never looked at). Refusing also makes [`Message::into_value`] reproduce the
//!   input exactly, so keeping the typed parts is keeping everything.
//! * `id` is a string or an integer in i64 range. Never `null` in a request or a result
//!   (MCP forbids it), never a float (`1.0`, `1e2` and `-0` included: serde_json reads
//!   them as floats, and we do not guess that one was meant), never a boolean/array/object.
//! * An error response may lack an id, or carry `null`, when the request's id could not be
//!   read; both are accepted and remembered so the message re-serialises as it came.
//! * `method` is a non-empty string; `params`, if present, is an object (MCP never uses
//!   by-position array params).
//! * A response has exactly one of `result` (an object, as every MCP result is) and
//!   `error` (`{code: integer, message: string, data?: any}`, nothing else).

use serde_json::{Map, Value};

use crate::ProtocolError;
use crate::fields::{Object, json_type};
use crate::id::Id;

/// The only `"jsonrpc"` value accepted or produced.
pub const JSONRPC_VERSION: &str = "2.0";

const ALLOWED_MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// A request: expects exactly one response with the same id.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id the response must carry.
    pub id: Id,
    /// The method name, never empty.
    pub method: String,
    /// The params object, if the message had one.
    pub params: Option<Object>,
}

/// A notification: a one-way message, never answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method name, never empty.
    pub method: String,
    /// The params object, if the message had one.
    pub params: Option<Object>,
}

/// A successful response.
#[derive(Debug, Clone, PartialEq)]
pub struct Response {
    /// The id of the request answered.
    pub id: Id,
    /// The result object.
    pub result: Object,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorObject {
    /// The error code (see [`codes`](crate::codes)).
    pub code: i64,
    /// A short description.
    pub message: String,
    /// Extra information, as sent.
    pub data: Option<Value>,
}

/// An error response.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorResponse {
    /// The id of the request answered; `None` if the sender could not read it.
    pub id: Option<Id>,
    /// When `id` is `None`: whether the message said `"id": null` (true) or had no id
    /// member at all (false). Only kept so [`Message::into_value`] is exact.
    pub id_was_null: bool,
    /// The error.
    pub error: ErrorObject,
}

/// One JSON-RPC 2.0 message, as classified by [`classify`].
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request.
    Request(Request),
    /// A notification.
    Notification(Notification),
    /// A successful response.
    Response(Response),
    /// An error response.
    ErrorResponse(ErrorResponse),
}

impl Message {
    /// The id, for requests and responses (`None` for notifications and id-less errors).
    #[must_use]
    pub fn id(&self) -> Option<&Id> {
        match self {
            Self::Request(r) => Some(&r.id),
            Self::Response(r) => Some(&r.id),
            Self::ErrorResponse(e) => e.id.as_ref(),
            Self::Notification(_) => None,
        }
    }

    /// The method, for requests and notifications.
    #[must_use]
    pub fn method(&self) -> Option<&str> {
        match self {
            Self::Request(r) => Some(&r.method),
            Self::Notification(n) => Some(&n.method),
            Self::Response(_) | Self::ErrorResponse(_) => None,
        }
    }

    /// The message as JSON: exactly the value it was classified from.
    #[must_use]
    pub fn into_value(self) -> Value {
        match self {
            Self::Request(r) => envelope([("id", r.id.to_value()), ("method", Value::String(r.method))], r.params),
            Self::Notification(n) => envelope([("method", Value::String(n.method))], n.params),
            Self::Response(r) => envelope([("id", r.id.to_value()), ("result", Value::Object(r.result))], None),
            Self::ErrorResponse(e) => {
                let mut obj = error_envelope(e.id.as_ref(), e.error.code, &e.error.message, e.error.data);
                if e.id.is_none() && e.id_was_null {
                    obj.insert("id".into(), Value::Null);
                }
                Value::Object(obj)
            }
        }
    }
}

impl From<Message> for Value {
    fn from(message: Message) -> Self {
        message.into_value()
    }
}

/// Classifies a parsed JSON value as one JSON-RPC message, enforcing the rules in the
/// module docs. Never panics; one of the two fuzzing entry points.
///
/// # Errors
///
/// The envelope variants of [`ProtocolError`], from [`Batch`](ProtocolError::Batch) to
/// [`BadError`](ProtocolError::BadError).
pub fn classify(value: Value) -> Result<Message, ProtocolError> {
    let mut obj = match value {
        Value::Object(obj) => obj,
        Value::Array(_) => return Err(ProtocolError::Batch),
        other => return Err(ProtocolError::NotAnObject { found: json_type(&other) }),
    };
    match obj.get("jsonrpc") {
        Some(Value::String(v)) if v == JSONRPC_VERSION => {}
        Some(Value::String(v)) => return Err(ProtocolError::BadVersion(format!("expected \"2.0\", got {v:?}"))),
        Some(other) => {
            return Err(ProtocolError::BadVersion(format!("expected the string \"2.0\", got {}", json_type(other))));
        }
        None => return Err(ProtocolError::BadVersion("member is missing".into())),
    }
    if let Some(key) = obj.keys().find(|k| !ALLOWED_MEMBERS.contains(&k.as_str())) {
        return Err(ProtocolError::UnknownMember(key.clone()));
    }
    let (has_result, has_error) = (obj.contains_key("result"), obj.contains_key("error"));

    if let Some(method) = obj.remove("method") {
        if has_result || has_error {
            return Err(ProtocolError::MixedKinds("\"method\" together with \"result\" or \"error\"".into()));
        }
        let method = match method {
            Value::String(m) if !m.is_empty() => m,
            Value::String(_) => return Err(ProtocolError::BadMethod("empty string".into())),
            other => return Err(ProtocolError::BadMethod(format!("expected a string, got {}", json_type(&other)))),
        };
        let params = match obj.remove("params") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(Value::Array(_)) => {
                return Err(ProtocolError::BadParams(
                    "MCP params are an object, got an array (by-position params)".into(),
                ));
            }
            Some(other) => {
                return Err(ProtocolError::BadParams(format!("expected an object, got {}", json_type(&other))));
            }
        };
        return Ok(match obj.remove("id") {
            None => Message::Notification(Notification { method, params }),
            Some(id) => Message::Request(Request { id: Id::from_value(&id)?, method, params }),
        });
    }
    if obj.contains_key("params") {
        return Err(ProtocolError::MixedKinds("\"params\" without \"method\"".into()));
    }
    match (obj.remove("result"), obj.remove("error")) {
        (Some(_), Some(_)) => Err(ProtocolError::BothResultAndError),
        (None, None) if obj.contains_key("id") => Err(ProtocolError::NeitherResultNorError),
        (None, None) => Err(ProtocolError::MissingMethod),
        (Some(result), None) => {
            let id = match obj.remove("id") {
                Some(id) => Id::from_value(&id)?,
                None => return Err(ProtocolError::BadId("a result response must carry the request's id".into())),
            };
            match result {
                Value::Object(result) => Ok(Message::Response(Response { id, result })),
                other => Err(ProtocolError::BadResult(format!("expected an object, got {}", json_type(&other)))),
            }
        }
        (None, Some(error)) => {
            let (id, id_was_null) = match obj.remove("id") {
                None => (None, false),
                Some(Value::Null) => (None, true),
                Some(id) => (Some(Id::from_value(&id)?), false),
            };
            Ok(Message::ErrorResponse(ErrorResponse { id, id_was_null, error: error_object(error)? }))
        }
    }
}

fn error_object(error: Value) -> Result<ErrorObject, ProtocolError> {
    let mut obj = match error {
        Value::Object(obj) => obj,
        other => return Err(ProtocolError::BadError(format!("expected an object, got {}", json_type(&other)))),
    };
    if let Some(key) = obj.keys().find(|k| !["code", "message", "data"].contains(&k.as_str())) {
        return Err(ProtocolError::BadError(format!("unknown member {key:?} (allowed: code, message, data)")));
    }
    let code = match obj.remove("code") {
        Some(Value::Number(n)) => {
            n.as_i64().ok_or_else(|| ProtocolError::BadError(format!("code {n} is not an integer")))?
        }
        Some(other) => {
            return Err(ProtocolError::BadError(format!("code must be an integer, got {}", json_type(&other))));
        }
        None => return Err(ProtocolError::BadError("code is missing".into())),
    };
    let message = match obj.remove("message") {
        Some(Value::String(m)) => m,
        Some(other) => {
            return Err(ProtocolError::BadError(format!("message must be a string, got {}", json_type(&other))));
        }
        None => return Err(ProtocolError::BadError("message is missing".into())),
    };
    Ok(ErrorObject { code, message, data: obj.remove("data") })
}

fn envelope<const N: usize>(members: [(&str, Value); N], params: Option<Object>) -> Value {
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Value::String(JSONRPC_VERSION.into()));
    for (key, value) in members {
        obj.insert(key.into(), value);
    }
    if let Some(params) = params {
        obj.insert("params".into(), Value::Object(params));
    }
    Value::Object(obj)
}

fn error_envelope(id: Option<&Id>, code: i64, message: &str, data: Option<Value>) -> Object {
    let mut error = Map::new();
    error.insert("code".into(), Value::from(code));
    error.insert("message".into(), Value::String(message.into()));
    if let Some(data) = data {
        error.insert("data".into(), data);
    }
    let mut obj = Map::new();
    obj.insert("jsonrpc".into(), Value::String(JSONRPC_VERSION.into()));
    if let Some(id) = id {
        obj.insert("id".into(), id.to_value());
    }
    obj.insert("error".into(), Value::Object(error));
    obj
}

/// Builds a request. `params` is an object by construction; `None` omits the member.
#[must_use]
pub fn request(id: &Id, method: &str, params: Option<Object>) -> Value {
    envelope([("id", id.to_value()), ("method", Value::String(method.into()))], params)
}

/// Builds a notification.
#[must_use]
pub fn notification(method: &str, params: Option<Object>) -> Value {
    envelope([("method", Value::String(method.into()))], params)
}

/// Builds a successful response.
#[must_use]
pub fn result_response(id: &Id, result: Object) -> Value {
    envelope([("id", id.to_value()), ("result", Value::Object(result))], None)
}

/// Builds an error response. With `id: None` (the request's id was unreadable) the `id`
/// member is omitted, as the MCP schema (`id?: RequestId`, no null) requires.
#[must_use]
pub fn error_response(id: Option<&Id>, code: i64, message: &str, data: Option<Value>) -> Value {
    Value::Object(error_envelope(id, code, message, data))
}
