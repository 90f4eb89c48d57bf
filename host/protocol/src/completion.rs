//! Completion (`completion/complete`): suggestions for the value of one argument of a
//! prompt or a resource template, as the user types it.
//!
//! * The request names what is being completed with a `ref`: a `PromptReference`
//!   (`{"type": "ref/prompt", "name"}`) or a `ResourceTemplateReference`
//!   (`{"type": "ref/resource", "uri"}`, the template's `uriTemplate`); the argument's
//!   `name` and its `value` so far; and, optionally, `context.arguments`, the values
//!   already given for the other arguments (strings, as prompt arguments are). What the
//!   caller asks for is checked before it is sent ([`check_completion_request`]): a
//!   reference of another type or a non-string argument value is something no server
//!   can answer, and the gateway does not send what it cannot vouch for.
//! * A result has a `completion` object with a `values` array of at most
//!   [`MAX_COMPLETION_VALUES`] strings (the spec's limit), an optional non-negative
//!   integer `total` (which may exceed the values sent, but not fall short of them) and
//!   an optional boolean `hasMore`. `completion/complete` may not answer
//!   `input_required`.
//!
//! The request builder is
//! [`ClientContext::completion_complete`](crate::ClientContext::completion_complete).

use serde_json::{Map, Value};
use wasmgate_core::{Completion, CompletionRequest, MAX_COMPLETION_VALUES};

use crate::ProtocolError;
use crate::fields::{Object, as_object, invalid, join, opt_bool, opt_u64, req_array, req_object, req_str, wrong_type};
use crate::result::require_complete;

/// `ref.type` of a reference to a prompt.
pub const REF_PROMPT: &str = "ref/prompt";
/// `ref.type` of a reference to a resource template.
pub const REF_RESOURCE: &str = "ref/resource";

/// Checks that `request` can be sent: its `reference` is an object whose `type` is
/// `REF_PROMPT` with a string `name` or `REF_RESOURCE` with a string `uri`, and every
/// context argument is a string.
///
/// # Errors
///
/// [`WrongType`](ProtocolError::WrongType), [`MissingField`](ProtocolError::MissingField)
/// or [`InvalidValue`](ProtocolError::InvalidValue) at `params.ref...` or
/// `params.context.arguments[...]`.
pub fn check_completion_request(request: &CompletionRequest) -> Result<(), ProtocolError> {
    let reference = as_object(&request.reference, "params.ref")?;
    match req_str(reference, "params.ref", "type")? {
        REF_PROMPT => req_str(reference, "params.ref", "name").map(drop),
        REF_RESOURCE => req_str(reference, "params.ref", "uri").map(drop),
        other => Err(invalid("params.ref.type".into(), format!("{other:?} is not {REF_PROMPT:?} or {REF_RESOURCE:?}"))),
    }?;
    if let Some(arguments) = &request.context_arguments {
        strings_only(arguments, "params.context.arguments")?;
    }
    Ok(())
}

/// The request's `params` (without `_meta`), after [`check_completion_request`].
pub(crate) fn completion_params(request: &CompletionRequest) -> Result<Object, ProtocolError> {
    check_completion_request(request)?;
    let mut argument = Map::new();
    argument.insert("name".into(), Value::String(request.argument_name.clone()));
    argument.insert("value".into(), Value::String(request.argument_value.clone()));
    let mut params = Map::new();
    params.insert("ref".into(), request.reference.clone());
    params.insert("argument".into(), Value::Object(argument));
    if let Some(arguments) = &request.context_arguments {
        let mut context = Map::new();
        context.insert("arguments".into(), Value::Object(arguments.clone()));
        params.insert("context".into(), Value::Object(context));
    }
    Ok(params)
}

/// Fails unless every value of `arguments` (at `at`) is a string.
pub(crate) fn strings_only(arguments: &Object, at: &str) -> Result<(), ProtocolError> {
    match arguments.iter().find(|(_, value)| !value.is_string()) {
        None => Ok(()),
        Some((key, _)) => Err(wrong_type(format!("{at}[{}]", Value::String(key.clone())), "a string")),
    }
}

/// Parses a `completion/complete` result.
///
/// # Errors
///
/// An `input_required` result or the other [`parse_result_kind`](crate::parse_result_kind)
/// errors; a missing `completion` or `completion.values`, more than
/// [`MAX_COMPLETION_VALUES`] values ([`TooMany`](ProtocolError::TooMany)), a value that
/// is not a string (`at` = `result.completion.values[i]`), a `total` that is not a
/// non-negative integer or is smaller than the number of values, or a non-boolean
/// `hasMore`.
pub fn parse_complete_result(result: &Value) -> Result<Completion, ProtocolError> {
    require_complete(result, "completion/complete")?;
    let obj = as_object(result, "result")?;
    let at = "result.completion";
    let completion = req_object(obj, "result", "completion")?;
    let values = req_array(completion, at, "values")?;
    let values_at = join(at, "values");
    if values.len() > MAX_COMPLETION_VALUES {
        return Err(ProtocolError::TooMany { at: values_at, count: values.len(), limit: MAX_COMPLETION_VALUES });
    }
    let values = values
        .iter()
        .enumerate()
        .map(|(i, value)| {
            value.as_str().map(str::to_owned).ok_or_else(|| wrong_type(format!("{values_at}[{i}]"), "a string"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let total = opt_u64(completion, at, "total")?;
    if let Some(total) = total
        && usize::try_from(total).is_ok_and(|total| total < values.len())
    {
        return Err(invalid(join(at, "total"), format!("{total} is fewer than the {} values sent", values.len())));
    }
    let has_more = opt_bool(completion, at, "hasMore")?;
    Ok(Completion { values, total, has_more })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn wrong(at: &str, expected: &'static str) -> ProtocolError {
        ProtocolError::WrongType { at: at.into(), expected }
    }

    fn missing(at: &str) -> ProtocolError {
        ProtocolError::MissingField { at: at.into() }
    }

    fn completion(completion: Value) -> Result<Completion, ProtocolError> {
        parse_complete_result(&json!({ "completion": completion }))
    }

    fn request(reference: Value, context: Option<Value>) -> CompletionRequest {
        CompletionRequest {
            reference,
            argument_name: "language".into(),
            argument_value: "py".into(),
            context_arguments: context.map(|c| c.as_object().unwrap().clone()),
        }
    }

    #[test]
    fn a_completion_keeps_its_values_total_and_has_more() {
        let result = json!({"resultType": "complete",
                            "completion": {"values": ["python", "pytorch"], "total": 10, "hasMore": true}});
        let got = parse_complete_result(&result).unwrap();
        assert_eq!(got.values, ["python", "pytorch"]);
        assert_eq!((got.total, got.has_more), (Some(10), Some(true)));
        let bare = completion(json!({"values": []})).unwrap();
        assert_eq!((bare.values.len(), bare.total, bare.has_more), (0, None, None));
        let exact = completion(json!({"values": ["a", "b"], "total": 2})).unwrap();
        assert_eq!(exact.total, Some(2));
    }

    #[test]
    fn malformed_completions_are_rejected_with_their_path() {
        let cases = [
            (json!({}), missing("result.completion.values")),
            (json!({"values": "python"}), wrong("result.completion.values", "an array")),
            (json!({"values": ["a", 1]}), wrong("result.completion.values[1]", "a string")),
            (json!({"values": [null]}), wrong("result.completion.values[0]", "a string")),
            (json!({"values": [], "total": -1}), wrong("result.completion.total", "a non-negative integer")),
            (json!({"values": [], "total": 1.5}), wrong("result.completion.total", "a non-negative integer")),
            (
                json!({"values": ["a", "b"], "total": 1}),
                invalid("result.completion.total".into(), "1 is fewer than the 2 values sent"),
            ),
            (json!({"values": [], "hasMore": "no"}), wrong("result.completion.hasMore", "a boolean")),
            (json!(["a"]), wrong("result.completion", "an object")),
        ];
        for (value, expected) in cases {
            assert_eq!(completion(value.clone()), Err(expected), "{value}");
        }
        assert_eq!(parse_complete_result(&json!({})), Err(missing("result.completion")));
        assert_eq!(parse_complete_result(&json!("x")), Err(wrong("result", "an object")));
    }

    #[test]
    fn more_than_a_hundred_values_are_rejected() {
        let values = |n: usize| Value::Array((0..n).map(|i| json!(format!("v{i}"))).collect());
        assert_eq!(completion(json!({"values": values(100)})).map(|c| c.values.len()), Ok(100));
        assert_eq!(
            completion(json!({"values": values(101)})),
            Err(ProtocolError::TooMany { at: "result.completion.values".into(), count: 101, limit: 100 })
        );
    }

    #[test]
    fn a_completion_may_not_be_input_required() {
        let result = json!({"resultType": "input_required", "requestState": "s"});
        assert!(matches!(
            parse_complete_result(&result),
            Err(ProtocolError::InvalidValue { at, .. }) if at == "result.resultType"
        ));
    }

    #[test]
    fn requests_for_prompts_and_resource_templates_are_accepted() {
        let prompt = request(json!({"type": "ref/prompt", "name": "code_review"}), None);
        assert_eq!(check_completion_request(&prompt), Ok(()));
        let params = completion_params(&prompt).unwrap();
        assert_eq!(
            Value::Object(params),
            json!({"ref": {"type": "ref/prompt", "name": "code_review"},
                   "argument": {"name": "language", "value": "py"}})
        );
        let template = request(json!({"type": "ref/resource", "uri": "file:///{path}"}), Some(json!({"a": "b"})));
        assert_eq!(completion_params(&template).unwrap()["context"], json!({"arguments": {"a": "b"}}));
    }

    #[test]
    fn requests_that_no_server_could_answer_are_refused() {
        let cases = [
            (request(json!("ref/prompt"), None), wrong("params.ref", "an object")),
            (request(json!({"name": "p"}), None), missing("params.ref.type")),
            (request(json!({"type": "ref/prompt"}), None), missing("params.ref.name")),
            (request(json!({"type": "ref/resource", "uri": 3}), None), wrong("params.ref.uri", "a string")),
            (
                request(json!({"type": "ref/tool", "name": "t"}), None),
                invalid("params.ref.type".into(), "\"ref/tool\" is not \"ref/prompt\" or \"ref/resource\""),
            ),
            (
                request(json!({"type": "ref/prompt", "name": "p"}), Some(json!({"n": 1}))),
                wrong("params.context.arguments[\"n\"]", "a string"),
            ),
        ];
        for (request, expected) in cases {
            assert_eq!(check_completion_request(&request), Err(expected.clone()), "{request:?}");
            assert_eq!(completion_params(&request), Err(expected));
        }
    }
}
