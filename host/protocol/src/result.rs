//! What kind of result a server sent: finished, or asking for more input.
//!
//! Since 2026-07-28 every result carries `resultType`. `"complete"` is an ordinary
//! result; `"input_required"` is a multi round-trip request (MRTR) interim result: the
//! server wants the client to answer `inputRequests` (elicitation, sampling, roots) and
//! retry the original request under a new id, echoing `requestState` verbatim.
//! The spec's rules, all enforced here:
//!
//! * an absent `resultType` means `"complete"` (older servers never send it);
//! * any other unknown value MUST be treated as invalid, so it is an error, not a guess;
//! * an input-required result has at least one of `inputRequests` / `requestState`;
//! * `inputRequests` maps server-chosen keys to `{method, params}` where the method is
//!   `elicitation/create`, `sampling/createMessage` or `roots/list`;
//! * `requestState` is an opaque string the client must not interpret;
//! * only `tools/call`, `prompts/get` and `resources/read` may answer input-required;
//!   other parsers call [`require_complete`].
//!
//! Cacheable list/read/discover results also carry `ttlMs` and `cacheScope` hints,
//! parsed here as [`CacheHints`].

use serde_json::Value;

use crate::ProtocolError;
use crate::fields::{Object, as_object, invalid, join, opt_object, opt_str, opt_u64, req_str};

/// `resultType` of a finished result.
pub const RESULT_TYPE_COMPLETE: &str = "complete";
/// `resultType` of a multi round-trip interim result.
pub const RESULT_TYPE_INPUT_REQUIRED: &str = "input_required";
/// The methods a server may put in `inputRequests`.
pub const INPUT_REQUEST_METHODS: [&str; 3] = ["elicitation/create", "sampling/createMessage", "roots/list"];
/// The client requests a server may answer with an input-required result.
pub const INPUT_REQUIRED_CAPABLE_METHODS: [&str; 3] = ["tools/call", "prompts/get", "resources/read"];

/// The `resultType` of a result.
#[derive(Debug, Clone, PartialEq)]
pub enum ResultKind {
    /// `"complete"`, or no `resultType` at all.
    Complete,
    /// `"input_required"`: answer and retry.
    InputRequired(InputRequired),
}

/// The body of an input-required result.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// Key to `{method, params}` request object, each already checked to be one of
    /// [`INPUT_REQUEST_METHODS`].
    pub input_requests: Option<Object>,
    /// Opaque state to echo back unchanged on the retry.
    pub request_state: Option<String>,
}

/// Reads `resultType` (and, for input-required results, the MRTR fields) of `result`.
///
/// # Errors
///
/// [`WrongType`](ProtocolError::WrongType) / [`InvalidValue`](ProtocolError::InvalidValue)
/// for malformed fields, [`UnknownResultType`](ProtocolError::UnknownResultType) for a
/// value other than `complete` / `input_required`.
pub fn parse_result_kind(result: &Value) -> Result<ResultKind, ProtocolError> {
    let obj = as_object(result, "result")?;
    match opt_str(obj, "result", "resultType")? {
        None | Some(RESULT_TYPE_COMPLETE) => Ok(ResultKind::Complete),
        Some(RESULT_TYPE_INPUT_REQUIRED) => parse_input_required(obj).map(ResultKind::InputRequired),
        Some(other) => Err(ProtocolError::UnknownResultType(other.to_owned())),
    }
}

fn parse_input_required(obj: &Object) -> Result<InputRequired, ProtocolError> {
    let input_requests = opt_object(obj, "result", "inputRequests")?;
    if let Some(requests) = input_requests {
        for (key, request) in requests {
            let at = format!("result.inputRequests[{}]", Value::String(key.clone()));
            let request = as_object(request, &at)?;
            let method = req_str(request, &at, "method")?;
            if !INPUT_REQUEST_METHODS.contains(&method) {
                return Err(invalid(join(&at, "method"), format!("{method:?} is not an input request method")));
            }
            opt_object(request, &at, "params")?;
        }
    }
    let request_state = opt_str(obj, "result", "requestState")?.map(str::to_owned);
    if input_requests.is_none() && request_state.is_none() {
        return Err(invalid("result".into(), "an input_required result needs inputRequests or requestState"));
    }
    Ok(InputRequired { input_requests: input_requests.cloned(), request_state })
}

/// Fails unless `result` is a complete result: for methods that must not answer
/// input-required (`server/discover`, `initialize`, the list methods).
///
/// # Errors
///
/// Those of [`parse_result_kind`], or [`InvalidValue`](ProtocolError::InvalidValue) for an
/// input-required result.
pub fn require_complete(result: &Value, method: &str) -> Result<(), ProtocolError> {
    match parse_result_kind(result)? {
        ResultKind::Complete => Ok(()),
        ResultKind::InputRequired(_) => {
            Err(invalid("result.resultType".into(), format!("{method} may not answer input_required")))
        }
    }
}

/// Who may cache a cacheable result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheScope {
    /// No user-specific data: shareable across authorization contexts.
    Public,
    /// Reusable only within the same authorization context.
    Private,
}

/// The caching hints of a cacheable result (2026-07-28; absent in older versions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHints {
    /// `ttlMs`: how long the result may be considered fresh.
    pub ttl_ms: Option<u64>,
    /// `cacheScope`.
    pub cache_scope: Option<CacheScope>,
}

/// Reads `ttlMs` / `cacheScope`. Both are required in 2026-07-28 but absent from older
/// versions, and they are hints, so absence is allowed; a present value must be well-formed.
pub(crate) fn parse_cache_hints(obj: &Object, at: &str) -> Result<CacheHints, ProtocolError> {
    let ttl_ms = opt_u64(obj, at, "ttlMs")?;
    let cache_scope = match opt_str(obj, at, "cacheScope")? {
        None => None,
        Some("public") => Some(CacheScope::Public),
        Some("private") => Some(CacheScope::Private),
        Some(other) => {
            return Err(invalid(join(at, "cacheScope"), format!("{other:?} is not \"public\" or \"private\"")));
        }
    };
    Ok(CacheHints { ttl_ms, cache_scope })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_result_type_means_complete() {
        assert_eq!(parse_result_kind(&json!({"content": []})), Ok(ResultKind::Complete));
    }

    #[test]
    fn unknown_result_type_is_rejected() {
        assert_eq!(
            parse_result_kind(&json!({"resultType": "task"})),
            Err(ProtocolError::UnknownResultType("task".into()))
        );
        assert!(matches!(parse_result_kind(&json!({"resultType": 1})), Err(ProtocolError::WrongType { .. })));
    }

    #[test]
    fn input_required_with_state_only_is_accepted() {
        let kind = parse_result_kind(&json!({"resultType": "input_required", "requestState": "s"})).unwrap();
        assert_eq!(
            kind,
            ResultKind::InputRequired(InputRequired { input_requests: None, request_state: Some("s".into()) })
        );
    }

    #[test]
    fn input_required_without_requests_or_state_is_rejected() {
        assert!(matches!(
            parse_result_kind(&json!({"resultType": "input_required"})),
            Err(ProtocolError::InvalidValue { .. })
        ));
    }

    #[test]
    fn input_request_with_a_foreign_method_is_rejected() {
        let result =
            json!({"resultType": "input_required", "inputRequests": {"x": {"method": "tools/call", "params": {}}}});
        let err = parse_result_kind(&result).unwrap_err();
        assert!(
            matches!(&err, ProtocolError::InvalidValue { at, .. } if at == "result.inputRequests[\"x\"].method"),
            "{err}"
        );
    }

    #[test]
    fn cache_scope_must_be_public_or_private() {
        let ok = json!({"ttlMs": 5, "cacheScope": "private"});
        let hints = parse_cache_hints(ok.as_object().unwrap(), "result").unwrap();
        assert_eq!(hints, CacheHints { ttl_ms: Some(5), cache_scope: Some(CacheScope::Private) });
        let bad = json!({"cacheScope": "shared"});
        assert!(parse_cache_hints(bad.as_object().unwrap(), "result").is_err());
    }
}
