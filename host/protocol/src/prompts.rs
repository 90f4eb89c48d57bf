//! Prompts: the templates a server offers (`prompts/list`) and the messages one expands
//! to (`prompts/get`).
//!
//! A prompt's messages are put in front of the agent's model as if the user (or the
//! assistant) had written them, which makes them the most direct way for a server to
//! steer the model. So the parsers are as strict as the tool parsers, read each entry
//! into `wasmgate-core`'s types, and keep each result's whole JSON beside them.
//!
//! * `prompts/list`: each prompt has a non-empty string `name` (it is fetched by name,
//!   like a tool is called by name); `title` and `description` are strings, `_meta` an
//!   object, when present. `arguments`, when present, is an array of at most
//!   [`MAX_PROMPT_ARGUMENTS`] entries, each with a non-empty string `name` (unique within
//!   the prompt), optional string `title` and `description`, and an optional boolean
//!   `required` (absent means false). A page is capped at a configurable number of
//!   prompts, two prompts with the same name on one page are rejected, and a list result
//!   may not be `input_required`.
//! * `prompts/get`: a complete result has a `messages` array of at most
//!   [`MAX_PROMPT_MESSAGES`] entries, each with a `role` of `"user"` or `"assistant"` and
//!   a `content` block, checked like a `tools/call` content block (an object with a string
//!   `type`, and the fields its known type requires; an unknown type is kept whole), and
//!   an optional string `description`. Since 2026-07-28 the result may instead be
//!   `input_required` (see [`ResultKind`]); its typed fields are then empty.
//!
//! The request builders are [`ClientContext::prompts_list`](crate::ClientContext::prompts_list)
//! and [`ClientContext::prompts_get`](crate::ClientContext::prompts_get).

use serde_json::Value;
use wasmgate_core::{PromptArgument, PromptInfo, PromptMessage, PromptMessages, Role};

use crate::ProtocolError;
use crate::fields::{as_object, invalid, join, opt_bool, opt_object, opt_str, req_array, req_str, required};
use crate::page::parse_page;
use crate::result::{CacheHints, ResultKind, parse_result_kind};
use crate::tools::parse_content_block;

/// Most arguments one prompt may declare.
pub const MAX_PROMPT_ARGUMENTS: usize = 64;
/// Most messages one `prompts/get` result may hold.
pub const MAX_PROMPT_MESSAGES: usize = 1024;

/// One page of a `prompts/list` result.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptsPage {
    /// The prompts, in the server's order.
    pub prompts: Vec<PromptInfo>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `prompts/list` result, refusing pages of more than `max_prompts` prompts.
///
/// # Errors
///
/// [`TooMany`](ProtocolError::TooMany) (prompts on the page, or arguments of one prompt),
/// [`DuplicateName`](ProtocolError::DuplicateName) (a prompt listed twice, or an argument
/// declared twice by one prompt), an `input_required` result, or the field errors of the
/// first malformed prompt (`at` = `result.prompts[i]...`).
pub fn parse_prompts_list(result: &Value, max_prompts: usize) -> Result<PromptsPage, ProtocolError> {
    let page = parse_page(result, "prompts/list", "prompts", max_prompts, parse_prompt, |p| &p.name)?;
    Ok(PromptsPage { prompts: page.entries, next_cursor: page.next_cursor, cache: page.cache, raw: result.clone() })
}

fn parse_prompt(value: &Value, at: &str) -> Result<PromptInfo, ProtocolError> {
    let obj = as_object(value, at)?;
    let name = req_str(obj, at, "name")?;
    if name.is_empty() {
        return Err(invalid(join(at, "name"), "is empty"));
    }
    opt_object(obj, at, "_meta")?;
    let arguments = match obj.get("arguments") {
        None => Vec::new(),
        Some(_) => parse_arguments(req_array(obj, at, "arguments")?, &join(at, "arguments"))?,
    };
    Ok(PromptInfo {
        name: name.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        description: opt_str(obj, at, "description")?.map(str::to_owned),
        arguments,
    })
}

fn parse_arguments(values: &[Value], at: &str) -> Result<Vec<PromptArgument>, ProtocolError> {
    if values.len() > MAX_PROMPT_ARGUMENTS {
        return Err(ProtocolError::TooMany { at: at.to_owned(), count: values.len(), limit: MAX_PROMPT_ARGUMENTS });
    }
    let mut arguments: Vec<PromptArgument> = Vec::with_capacity(values.len());
    for (i, value) in values.iter().enumerate() {
        let argument = parse_argument(value, &format!("{at}[{i}]"))?;
        if arguments.iter().any(|a| a.name == argument.name) {
            return Err(ProtocolError::DuplicateName { at: at.to_owned(), name: argument.name });
        }
        arguments.push(argument);
    }
    Ok(arguments)
}

fn parse_argument(value: &Value, at: &str) -> Result<PromptArgument, ProtocolError> {
    let obj = as_object(value, at)?;
    let name = req_str(obj, at, "name")?;
    if name.is_empty() {
        return Err(invalid(join(at, "name"), "is empty"));
    }
    Ok(PromptArgument {
        name: name.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        description: opt_str(obj, at, "description")?.map(str::to_owned),
        required: opt_bool(obj, at, "required")?.unwrap_or(false),
    })
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq)]
pub struct GetPromptResult {
    /// Complete, or asking for input (then `prompt` is empty).
    pub kind: ResultKind,
    /// The description and the messages, in order.
    pub prompt: PromptMessages,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `prompts/get` result.
///
/// # Errors
///
/// The [`parse_result_kind`] errors; for a complete result, a missing `messages`, more
/// than `MAX_PROMPT_MESSAGES` of them ([`TooMany`](ProtocolError::TooMany)), a message
/// with a malformed `role` or `content` (`at` = `result.messages[i]...`), or a
/// non-string `description`.
pub fn parse_get_prompt_result(result: &Value) -> Result<GetPromptResult, ProtocolError> {
    let kind = parse_result_kind(result)?;
    let obj = as_object(result, "result")?;
    let (description, messages) = match kind {
        ResultKind::InputRequired(_) => (None, Vec::new()),
        ResultKind::Complete => {
            let values = req_array(obj, "result", "messages")?;
            if values.len() > MAX_PROMPT_MESSAGES {
                return Err(ProtocolError::TooMany {
                    at: "result.messages".into(),
                    count: values.len(),
                    limit: MAX_PROMPT_MESSAGES,
                });
            }
            let messages = values
                .iter()
                .enumerate()
                .map(|(i, message)| parse_message(message, &format!("result.messages[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            (opt_str(obj, "result", "description")?.map(str::to_owned), messages)
        }
    };
    Ok(GetPromptResult { kind, prompt: PromptMessages { description, messages }, raw: result.clone() })
}

fn parse_message(value: &Value, at: &str) -> Result<PromptMessage, ProtocolError> {
    let obj = as_object(value, at)?;
    let role = match req_str(obj, at, "role")? {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => return Err(invalid(join(at, "role"), format!("{other:?} is not \"user\" or \"assistant\""))),
    };
    let content_at = join(at, "content");
    let content = required(obj, at, "content")?;
    parse_content_block(content, &content_at)?;
    Ok(PromptMessage { role, content: content.clone() })
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

    fn prompts(entries: Value) -> Result<PromptsPage, ProtocolError> {
        parse_prompts_list(&json!({ "prompts": entries }), 3)
    }

    fn messages(entries: Value) -> Result<GetPromptResult, ProtocolError> {
        parse_get_prompt_result(&json!({ "messages": entries }))
    }

    #[test]
    fn a_prompt_page_keeps_arguments_cursor_and_raw_entries() {
        let entry = json!({"name": "review", "title": "Review", "description": "Reviews code", "icons": [],
                           "arguments": [{"name": "code", "description": "The code", "required": true},
                                         {"name": "style", "title": "Style"}]});
        let result = json!({"prompts": [entry, {"name": "bare"}], "nextCursor": "p2", "cacheScope": "public"});
        let page = parse_prompts_list(&result, 3).unwrap();
        let [review, bare] = &page.prompts[..] else { panic!("two prompts expected") };
        assert_eq!((review.name.as_str(), review.title.as_deref()), ("review", Some("Review")));
        assert_eq!(review.description.as_deref(), Some("Reviews code"));
        let [code, style] = &review.arguments[..] else { panic!("two arguments expected") };
        assert_eq!((code.name.as_str(), code.description.as_deref(), code.required), ("code", Some("The code"), true));
        assert_eq!((style.name.as_str(), style.title.as_deref(), style.required), ("style", Some("Style"), false));
        assert_eq!(page.raw["prompts"][0], entry, "the page's JSON keeps each entry whole");
        assert!(bare.arguments.is_empty());
        assert_eq!(page.next_cursor.as_deref(), Some("p2"));
        assert_eq!(page.cache.cache_scope, Some(crate::CacheScope::Public));
        assert_eq!(page.raw, result);
    }

    #[test]
    fn malformed_prompts_are_rejected_with_their_path() {
        let cases = [
            (json!([{"title": "x"}]), missing("result.prompts[0].name")),
            (json!([{"name": 1}]), wrong("result.prompts[0].name", "a string")),
            (json!([{"name": ""}]), invalid("result.prompts[0].name".into(), "is empty")),
            (json!([{"name": "p", "title": null}]), wrong("result.prompts[0].title", "a string")),
            (json!([{"name": "p", "description": 2}]), wrong("result.prompts[0].description", "a string")),
            (json!([{"name": "p", "_meta": []}]), wrong("result.prompts[0]._meta", "an object")),
            (json!([{"name": "p", "arguments": {}}]), wrong("result.prompts[0].arguments", "an array")),
            (json!([{"name": "p", "arguments": null}]), wrong("result.prompts[0].arguments", "an array")),
            (json!([{"name": "p", "arguments": ["a"]}]), wrong("result.prompts[0].arguments[0]", "an object")),
            (json!([{"name": "p", "arguments": [{}]}]), missing("result.prompts[0].arguments[0].name")),
            (
                json!([{"name": "p", "arguments": [{"name": ""}]}]),
                invalid("result.prompts[0].arguments[0].name".into(), "is empty"),
            ),
            (
                json!([{"name": "p", "arguments": [{"name": "a", "required": "yes"}]}]),
                wrong("result.prompts[0].arguments[0].required", "a boolean"),
            ),
            (
                json!([{"name": "p", "arguments": [{"name": "a", "description": []}]}]),
                wrong("result.prompts[0].arguments[0].description", "a string"),
            ),
            (
                json!([{"name": "p", "arguments": [{"name": "a"}, {"name": "a", "required": true}]}]),
                ProtocolError::DuplicateName { at: "result.prompts[0].arguments".into(), name: "a".into() },
            ),
            (
                json!([{"name": "p"}, {"name": "p"}]),
                ProtocolError::DuplicateName { at: "result.prompts".into(), name: "p".into() },
            ),
            (
                json!([{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]),
                ProtocolError::TooMany { at: "result.prompts".into(), count: 4, limit: 3 },
            ),
            (json!("p"), wrong("result.prompts", "an array")),
        ];
        for (entries, expected) in cases {
            assert_eq!(prompts(entries.clone()), Err(expected), "{entries}");
        }
        assert_eq!(parse_prompts_list(&json!({}), 3), Err(missing("result.prompts")));
    }

    #[test]
    fn a_prompt_with_too_many_arguments_is_rejected() {
        let arguments = |n: usize| -> Vec<Value> { (0..n).map(|i| json!({"name": format!("a{i}")})).collect() };
        let most = prompts(json!([{"name": "p", "arguments": arguments(MAX_PROMPT_ARGUMENTS)}])).unwrap();
        assert_eq!(most.prompts[0].arguments.len(), MAX_PROMPT_ARGUMENTS);
        assert_eq!(
            prompts(json!([{"name": "p", "arguments": arguments(MAX_PROMPT_ARGUMENTS + 1)}])),
            Err(ProtocolError::TooMany {
                at: "result.prompts[0].arguments".into(),
                count: MAX_PROMPT_ARGUMENTS + 1,
                limit: MAX_PROMPT_ARGUMENTS,
            })
        );
    }

    #[test]
    fn a_prompt_list_may_not_be_input_required() {
        let result = json!({"resultType": "input_required", "requestState": "s", "prompts": []});
        assert!(matches!(
            parse_prompts_list(&result, 3),
            Err(ProtocolError::InvalidValue { at, .. }) if at == "result.resultType"
        ));
    }

    #[test]
    fn a_prompt_expands_to_typed_messages_with_their_raw_content() {
        let text = json!({"type": "text", "text": "Review this"});
        let image = json!({"type": "image", "data": "aGk=", "mimeType": "image/png"});
        let future = json!({"type": "hologram", "anything": 1});
        let result = json!({"resultType": "complete", "description": "A review",
                            "messages": [{"role": "user", "content": text},
                                         {"role": "assistant", "content": image},
                                         {"role": "user", "content": future}]});
        let got = parse_get_prompt_result(&result).unwrap();
        assert_eq!(got.kind, ResultKind::Complete);
        assert_eq!(got.prompt.description.as_deref(), Some("A review"));
        let roles: Vec<&str> = got.prompt.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(got.prompt.messages[0].content, text);
        assert_eq!(got.prompt.messages[1].content, image);
        assert_eq!(got.prompt.messages[2].content, future);
        assert_eq!(got.raw, result);
        assert_eq!(messages(json!([])).map(|r| r.prompt.messages.len()), Ok(0));
    }

    #[test]
    fn malformed_prompt_messages_are_rejected_with_their_path() {
        let text = json!({"type": "text", "text": "hi"});
        let cases = [
            (json!([{"content": text}]), missing("result.messages[0].role")),
            (json!([{"role": "user"}]), missing("result.messages[0].content")),
            (
                json!([{"role": "system", "content": text}]),
                invalid("result.messages[0].role".into(), "\"system\" is not \"user\" or \"assistant\""),
            ),
            (json!([{"role": 1, "content": text}]), wrong("result.messages[0].role", "a string")),
            (json!([{"role": "user", "content": "hi"}]), wrong("result.messages[0].content", "an object")),
            (json!([{"role": "user", "content": [text]}]), wrong("result.messages[0].content", "an object")),
            (json!([{"role": "user", "content": {"text": "hi"}}]), missing("result.messages[0].content.type")),
            (json!([{"role": "user", "content": {"type": 7}}]), wrong("result.messages[0].content.type", "a string")),
            (json!([{"role": "user", "content": {"type": "text"}}]), missing("result.messages[0].content.text")),
            (json!([{"role": "user", "content": text}, "hi"]), wrong("result.messages[1]", "an object")),
            (json!({"role": "user", "content": text}), wrong("result.messages", "an array")),
        ];
        for (entries, expected) in cases {
            assert_eq!(messages(entries.clone()), Err(expected), "{entries}");
        }
        assert_eq!(parse_get_prompt_result(&json!({})), Err(missing("result.messages")));
        assert_eq!(
            parse_get_prompt_result(&json!({"messages": [], "description": 5})),
            Err(wrong("result.description", "a string"))
        );
        assert_eq!(parse_get_prompt_result(&json!([])), Err(wrong("result", "an object")));
    }

    #[test]
    fn too_many_prompt_messages_are_rejected() {
        let message = json!({"role": "user", "content": {"type": "text", "text": "x"}});
        let most = vec![message.clone(); MAX_PROMPT_MESSAGES];
        assert_eq!(messages(Value::Array(most)).map(|r| r.prompt.messages.len()), Ok(MAX_PROMPT_MESSAGES));
        let over = vec![message; MAX_PROMPT_MESSAGES + 1];
        assert_eq!(
            messages(Value::Array(over)),
            Err(ProtocolError::TooMany {
                at: "result.messages".into(),
                count: MAX_PROMPT_MESSAGES + 1,
                limit: MAX_PROMPT_MESSAGES,
            })
        );
    }

    #[test]
    fn a_prompt_that_asks_for_input_has_no_messages() {
        let result = json!({"resultType": "input_required", "requestState": "s"});
        let got = parse_get_prompt_result(&result).unwrap();
        assert!(matches!(got.kind, ResultKind::InputRequired(_)));
        assert_eq!((got.prompt.description, got.prompt.messages), (None, Vec::new()));
        let unknown = json!({"resultType": "later", "messages": []});
        assert_eq!(parse_get_prompt_result(&unknown), Err(ProtocolError::UnknownResultType("later".into())));
    }
}
