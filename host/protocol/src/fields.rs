//! Small typed accessors over JSON objects, with path-precise errors (crate-private).
//!
//! Every MCP parser in this crate goes through these, so the rules are uniform:
//! a required field that is absent is [`MissingField`](ProtocolError::MissingField), a field
//! of the wrong JSON type is [`WrongType`](ProtocolError::WrongType), and an explicit
//! `null` for an optional field is a wrong type, not "absent": the schema says the
//! member is omitted, and guessing what a `null` meant is how two readers end up
//! disagreeing about one message.

use serde_json::{Map, Value};

use crate::ProtocolError;

pub(crate) type Object = Map<String, Value>;

/// The JSON type of `value`, with an article, for error messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(crate) fn join(at: &str, key: &str) -> String {
    format!("{at}.{key}")
}

pub(crate) fn wrong_type(at: String, expected: &'static str) -> ProtocolError {
    ProtocolError::WrongType { at, expected }
}

pub(crate) fn invalid(at: String, reason: impl Into<String>) -> ProtocolError {
    ProtocolError::InvalidValue { at, reason: reason.into() }
}

/// `value` as an object, or `WrongType` at `at`.
pub(crate) fn as_object<'a>(value: &'a Value, at: &str) -> Result<&'a Object, ProtocolError> {
    value.as_object().ok_or_else(|| wrong_type(at.to_owned(), "an object"))
}

pub(crate) fn required<'a>(obj: &'a Object, at: &str, key: &str) -> Result<&'a Value, ProtocolError> {
    obj.get(key).ok_or_else(|| ProtocolError::MissingField { at: join(at, key) })
}

pub(crate) fn req_str<'a>(obj: &'a Object, at: &str, key: &str) -> Result<&'a str, ProtocolError> {
    required(obj, at, key)?.as_str().ok_or_else(|| wrong_type(join(at, key), "a string"))
}

pub(crate) fn opt_str<'a>(obj: &'a Object, at: &str, key: &str) -> Result<Option<&'a str>, ProtocolError> {
    obj.get(key).map(|v| v.as_str().ok_or_else(|| wrong_type(join(at, key), "a string"))).transpose()
}

pub(crate) fn req_object<'a>(obj: &'a Object, at: &str, key: &str) -> Result<&'a Object, ProtocolError> {
    as_object(required(obj, at, key)?, &join(at, key))
}

pub(crate) fn opt_object<'a>(obj: &'a Object, at: &str, key: &str) -> Result<Option<&'a Object>, ProtocolError> {
    obj.get(key).map(|v| as_object(v, &join(at, key))).transpose()
}

pub(crate) fn req_array<'a>(obj: &'a Object, at: &str, key: &str) -> Result<&'a [Value], ProtocolError> {
    required(obj, at, key)?.as_array().map(Vec::as_slice).ok_or_else(|| wrong_type(join(at, key), "an array"))
}

pub(crate) fn opt_bool(obj: &Object, at: &str, key: &str) -> Result<Option<bool>, ProtocolError> {
    obj.get(key).map(|v| v.as_bool().ok_or_else(|| wrong_type(join(at, key), "a boolean"))).transpose()
}

/// A non-negative integer (serde_json parses `5.0` as a float, which is rejected).
pub(crate) fn opt_u64(obj: &Object, at: &str, key: &str) -> Result<Option<u64>, ProtocolError> {
    obj.get(key).map(|v| v.as_u64().ok_or_else(|| wrong_type(join(at, key), "a non-negative integer"))).transpose()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn null_is_not_the_same_as_absent() {
        let obj = json!({"a": null});
        let obj = obj.as_object().unwrap();
        assert_eq!(opt_str(obj, "r", "b"), Ok(None));
        assert_eq!(opt_str(obj, "r", "a"), Err(ProtocolError::WrongType { at: "r.a".into(), expected: "a string" }));
    }

    #[test]
    fn fractional_and_negative_numbers_are_not_counts() {
        let obj = json!({"a": 1.0, "b": -1, "c": 7});
        let obj = obj.as_object().unwrap();
        assert!(opt_u64(obj, "r", "a").is_err());
        assert!(opt_u64(obj, "r", "b").is_err());
        assert_eq!(opt_u64(obj, "r", "c"), Ok(Some(7)));
    }
}
