//! Tool schemas from untrusted providers, compiled for validation only: no remote or
//! file references are fetched, and `pattern` uses the linear-time `regex` engine with a
//! size cap, so a hostile schema cannot hang or balloon the gateway.

use jsonschema::{PatternOptions, Validator};
use serde_json::Value;

/// Largest compiled regex of one `pattern`, in bytes.
const MAX_REGEX_BYTES: usize = 1 << 20;
/// Most validation messages reported for one value.
const MAX_MESSAGES: usize = 5;
/// Longest validation message kept.
const MAX_MESSAGE_CHARS: usize = 300;

/// A provider's schema that cannot be used: the validator's message, bounded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnusableSchema(String);

/// What a value gets wrong against a schema: the first few problems, one per line,
/// each naming where and bounded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", .0.join("\n"))]
pub struct Violations(Vec<String>);

/// Compiles a provider's schema.
///
/// # Errors
///
/// [`UnusableSchema`] when the schema is invalid or needs an external reference.
pub fn compile(schema: &Value) -> Result<Validator, UnusableSchema> {
    jsonschema::options()
        .offline()
        .with_pattern_options(PatternOptions::regex().size_limit(MAX_REGEX_BYTES).dfa_size_limit(MAX_REGEX_BYTES))
        .build(schema)
        .map_err(|e| UnusableSchema(text_safety::truncated(&e.to_string(), MAX_MESSAGE_CHARS)))
}

/// Checks `value` against `validator`.
///
/// # Errors
///
/// The [`Violations`] found.
pub fn check(validator: &Validator, value: &Value) -> Result<(), Violations> {
    // The common case without collecting errors: every call's arguments, and every
    // structured result, pass through here.
    if validator.is_valid(value) {
        return Ok(());
    }
    let problems: Vec<String> = validator
        .iter_errors(value)
        .take(MAX_MESSAGES)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_owned() } else { at };
            text_safety::truncated(&format!("{at}: {e}"), MAX_MESSAGE_CHARS)
        })
        .collect();
    if problems.is_empty() { Ok(()) } else { Err(Violations(problems)) }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn a_remote_reference_is_refused_not_fetched() {
        let schema = json!({"$ref": "https://example.invalid/schema.json"});
        assert!(compile(&schema).is_err());
    }

    #[test]
    fn problems_name_where_they_are() {
        let validator = compile(&json!({"type": "object", "properties": {"n": {"type": "integer"}}})).unwrap();
        assert!(check(&validator, &json!({"n": 1})).is_ok());
        let problem = check(&validator, &json!({"n": "x"})).unwrap_err().to_string();
        assert!(problem.starts_with("/n: "), "{problem}");
    }

    #[test]
    fn an_oversized_pattern_is_refused() {
        let schema = json!({"type": "string", "pattern": "(\\w{1000}){1000}"});
        assert!(compile(&schema).is_err());
    }
}
