//! `tools/call`: one call, its outcome split per the failure contract
//! (docs/ARCHITECTURE.md), and `input_required` rounds.
//!
//! * A complete result is `Ok`, whatever its `isError`: a tool that ran and failed is a
//!   result the model reads.
//! * An unknown tool is a JSON-RPC error -32602 (Invalid params), but so are other
//!   argument problems on some servers. The rule used here: -32602 whose message or
//!   `data` (lowercased) contains "unknown tool", "tool not found", "no such tool" or
//!   "tool does not exist", or contains the tool's name together with "not found",
//!   "unknown", "does not exist" or "no such". That matches the specification's example
//!   (`Unknown tool: invalid_tool_name`) and the SDKs' wording (`Tool x not found`), and
//!   leaves "invalid arguments for tool x" a plain [`ClientError::Rpc`]. An unknown
//!   tool also marks the tool list stale.
//! * `input_required` (2026-07-28): the [`InputHandler`](super::InputHandler) answers
//!   every `inputRequests` entry, and the call is retried under a new id with
//!   `inputResponses` and the echoed `requestState` (built by the protocol crate), at
//!   most `max_input_rounds` times. No handler, or a declined request, ends in
//!   [`ClientError::Unsupported`]. The time limit applies to each round trip, not to the
//!   time a person takes to answer an elicitation; the cancel token covers both.
//!   The call's own handler ([`CallOptions::input`]) answers instead of the client's;
//!   one that puts a request off to its caller ([`InputDeclined::Deferred`]) ends the
//!   call in [`ClientError::InputDeferred`], and a later call carries on from that round
//!   with [`CallOptions::resume`].
//! * Over Streamable HTTP, parameters the tool's schema marks with `x-mcp-header` go
//!   out as `Mcp-Param-*` headers, taken from the cached definition; a `HeaderMismatch`
//!   (-32020) answer refreshes the tool list and retries once, as the spec suggests.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;
use wasmgate_protocol::codes::{HEADER_MISMATCH, INVALID_PARAMS};
use wasmgate_protocol::{
    CallToolResult, Id, InputRequired, META_CLIENT_CAPABILITIES, META_LOG_LEVEL, ResultKind, parse_call_tool_result,
};

use super::config::CallOptions;
use super::connect::request;
use super::input::{InputDeclined, InputHandler, InputRequest, Resume};
use super::router::Reply;
use super::{Session, Shared, param_headers, tools};
use crate::error::{ClientError, asked};

/// Stands in for the first round's id when rebuilding the request for a retry; never
/// equal to a real id, which are integers.
const ORIGINAL: &str = "wasmgate-original-request";

pub(crate) async fn call_tool(
    shared: &Arc<Shared>,
    name: &str,
    arguments: Map<String, Value>,
    cancel: &CancellationToken,
    options: CallOptions,
) -> Result<CallToolResult, ClientError> {
    let timeout = options.timeout.unwrap_or(shared.config.call_timeout);
    let token = options.progress.clone().map(|callback| {
        let token = shared.next_id();
        shared.watch_progress(&token, callback);
        token
    });
    let asking = Asking::new(shared, "tools/call", format!("tool {name:?}"), cancel, timeout, options);
    let call = Call { name, arguments: &arguments, token: token.as_ref() };
    let outcome = rounds(shared, &asking, call).await;
    if let Some(token) = &token {
        shared.unwatch_progress(token);
    }
    asking.end(shared);
    outcome
}

/// One `tools/call`.
struct Call<'a> {
    name: &'a str,
    arguments: &'a Map<String, Value>,
    token: Option<&'a Id>,
}

/// What a call's requests declare besides the client's own stamp.
struct Stamp {
    capabilities: Option<Map<String, Value>>,
    log_level: Option<String>,
}

impl Stamp {
    /// `request` with this call's capabilities and log level in its `_meta`, when the
    /// session's version stamps requests.
    fn apply(&self, session: &Session, mut request: Value) -> Value {
        if !session.context.version().is_stateless() {
            return request;
        }
        let Some(meta) = request.pointer_mut("/params/_meta").and_then(Value::as_object_mut) else { return request };
        if let Some(capabilities) = &self.capabilities {
            meta.insert(META_CLIENT_CAPABILITIES.into(), Value::Object(capabilities.clone()));
        }
        if let Some(level) = &self.log_level {
            meta.insert(META_LOG_LEVEL.into(), Value::String(level.clone()));
        }
        request
    }
}

/// A result that may ask for input instead (`input_required`).
pub(crate) trait Rounded: Sized {
    /// Reads a reply's result.
    fn parse(reply: Reply) -> Result<Self, ClientError>;
    /// Whether it is complete or asks for input.
    fn kind(&mut self) -> &mut ResultKind;
}

impl Rounded for CallToolResult {
    fn parse(reply: Reply) -> Result<Self, ClientError> {
        Ok(parse_call_tool_result(&Value::Object(reply.result))?)
    }

    fn kind(&mut self) -> &mut ResultKind {
        &mut self.kind
    }
}

/// A request that may go through `input_required` rounds (`tools/call`, `prompts/get`,
/// `resources/read`):
/// what stays the same from one round to the next.
pub(crate) struct Asking<'a> {
    method: &'static str,
    /// What is asked, for messages: `tool "x"`, `prompt "y"`.
    subject: String,
    cancel: &'a CancellationToken,
    timeout: Duration,
    handler: Option<Arc<dyn InputHandler>>,
    resume: Option<Resume>,
    stamp: Stamp,
    registered: u64,
}

impl<'a> Asking<'a> {
    /// Registers the request with the calls in flight (see [`Asking::end`]).
    pub(crate) fn new(
        shared: &Shared,
        method: &'static str,
        subject: String,
        cancel: &'a CancellationToken,
        timeout: Duration,
        options: CallOptions,
    ) -> Self {
        let handler = options.input.clone().or_else(|| shared.config.input_handler.clone());
        let registered = shared.calls_in_flight.register(options.input, options.log);
        let stamp = Stamp { capabilities: options.capabilities, log_level: options.log_level };
        Asking { method, subject, cancel, timeout, handler, resume: options.resume, stamp, registered }
    }

    /// Takes the request off the calls in flight.
    pub(crate) fn end(&self, shared: &Shared) {
        shared.calls_in_flight.unregister(self.registered);
    }

    /// The first request under `id`: as `build` makes it, or, carrying on from an
    /// earlier call's round, its retry with that round's answers.
    pub(crate) fn first(
        &self,
        session: &Session,
        id: &Id,
        build: &dyn Fn(&Session, &Id) -> Result<Value, ClientError>,
    ) -> Result<Value, ClientError> {
        let request = match &self.resume {
            None => build(session, id)?,
            Some(resume) => {
                let asked = resume.responses.keys().map(|k| (k.clone(), Value::Null)).collect();
                let required = InputRequired { input_requests: Some(asked), request_state: resume.state.clone() };
                let responses = Some(resume.responses.clone()).filter(|r| !r.is_empty());
                session.context.retry_with_input(&build(session, &Id::from(ORIGINAL))?, id, &required, responses)?
            }
        };
        Ok(self.stamp.apply(session, request))
    }

    /// The whole request, built by `build`: the first round, the rounds of input that
    /// follow, and the request taken off the calls in flight at the end (for requests
    /// without `tools/call`'s headers and unknown-tool rule).
    pub(crate) async fn through<T: Rounded>(
        self,
        shared: &Arc<Shared>,
        build: &(dyn Fn(&Session, &Id) -> Result<Value, ClientError> + Sync),
    ) -> Result<T, ClientError> {
        let outcome = async {
            let first = |session: &Session, id: &Id| self.first(session, id, build);
            let (reply, session) = request(shared, self.method, &first, &[], self.timeout, Some(self.cancel)).await?;
            let result = T::parse(reply)?;
            let original = build(&session, &Id::from(ORIGINAL))?;
            self.rounds(shared, &original, &[], result, |e| e).await
        }
        .await;
        self.end(shared);
        outcome
    }

    /// Answers `result`'s rounds of input and retries `original` (the first request,
    /// built with the id [`ORIGINAL`]) until a result is complete, at most `max_input_rounds` times.
    /// `failed` maps a retry's failure, as for the first request.
    pub(crate) async fn rounds<T: Rounded>(
        &self,
        shared: &Arc<Shared>,
        original: &Value,
        headers: &[(String, String)],
        mut result: T,
        failed: impl Fn(ClientError) -> ClientError,
    ) -> Result<T, ClientError> {
        let mut round = 0;
        loop {
            let required = match std::mem::replace(result.kind(), ResultKind::Complete) {
                ResultKind::Complete => return Ok(result),
                ResultKind::InputRequired(required) => required,
            };
            round += 1;
            if round > shared.config.max_input_rounds {
                let limit = shared.config.max_input_rounds;
                return Err(ClientError::LimitExceeded { what: "input_required rounds".into(), limit });
            }
            let Some(handler) = &self.handler else {
                return Err(ClientError::Unsupported(format!(
                    "{} needs input ({}) and no input handler is configured",
                    self.subject,
                    asked(&required)
                )));
            };
            let responses = match answer_all(handler.as_ref(), &required, self.cancel).await? {
                Answers::All(responses) => responses,
                Answers::Deferred(answered) => {
                    return Err(ClientError::InputDeferred { required: Box::new(required), answered });
                }
            };
            let retry = |session: &Session, id: &Id| {
                let request = session.context.retry_with_input(original, id, &required, responses.clone())?;
                Ok(self.stamp.apply(session, request))
            };
            let (reply, _) = request(shared, self.method, &retry, headers, self.timeout, Some(self.cancel))
                .await
                .map_err(&failed)?;
            result = T::parse(reply)?;
        }
    }
}

async fn rounds(shared: &Arc<Shared>, asking: &Asking<'_>, call: Call<'_>) -> Result<CallToolResult, ClientError> {
    let Call { name, arguments, token } = call;
    let build = |session: &Session, id: &Id| Ok(session.context.tools_call(id, name, Some(arguments.clone()), token));
    let first = |session: &Session, id: &Id| asking.first(session, id, &build);
    let mut headers = param_headers_for(shared, name, arguments);
    let timeout = asking.timeout;
    let (reply, session) = match request(shared, "tools/call", &first, &headers, timeout, Some(asking.cancel)).await {
        // The headers came from a stale or missing definition: refresh it and retry once.
        Err(ClientError::Rpc { code: HEADER_MISMATCH, .. }) if shared.transport.mirrors_param_headers() => {
            shared.tools_changed();
            tools::list(shared).await?;
            headers = param_headers_for(shared, name, arguments);
            request(shared, "tools/call", &first, &headers, timeout, Some(asking.cancel)).await
        }
        outcome => outcome,
    }
    .map_err(|e| unknown_tool(shared, name, e))?;
    let result = CallToolResult::parse(reply)?;
    let original = build(&session, &Id::from(ORIGINAL))?;
    asking.rounds(shared, &original, &headers, result, |e| unknown_tool(shared, name, e)).await
}

/// The `Mcp-Param-*` headers of a call, from the tool's cached definition.
fn param_headers_for(shared: &Shared, name: &str, arguments: &Map<String, Value>) -> Vec<(String, String)> {
    if !shared.transport.mirrors_param_headers() {
        return Vec::new();
    }
    tools::cached_definition(shared, name)
        .and_then(|tool| param_headers::header_params(&tool.input_schema).ok())
        .map(|params| param_headers::headers(&params, arguments))
        .unwrap_or_default()
}

/// What the handler made of one round.
enum Answers {
    /// Every request answered: the `inputResponses` (`None` when it asked for nothing).
    All(Option<Map<String, Value>>),
    /// Some put off to the caller: the answers it did give.
    Deferred(Map<String, Value>),
}

/// The handler's answers to every request of `required`.
async fn answer_all(
    handler: &dyn InputHandler,
    required: &InputRequired,
    cancel: &CancellationToken,
) -> Result<Answers, ClientError> {
    let Some(requests) = required.input_requests.as_ref().filter(|r| !r.is_empty()) else {
        return Ok(Answers::All(None));
    };
    let mut responses = Map::new();
    let mut deferred = false;
    for (key, request) in requests {
        let method = request.get("method").and_then(Value::as_str).unwrap_or_default().to_owned();
        let params = request.get("params").and_then(Value::as_object).cloned();
        let answer = tokio::select! {
            answer = handler.answer(InputRequest { method: method.clone(), params }) => answer,
            () = cancel.cancelled() => return Err(ClientError::Cancelled),
        };
        match answer {
            Ok(answer) => {
                responses.insert(key.clone(), answer);
            }
            Err(InputDeclined::Deferred) => deferred = true,
            Err(why) => {
                return Err(ClientError::Unsupported(format!("the input handler did not answer {method}: {why}")));
            }
        }
    }
    Ok(if deferred { Answers::Deferred(responses) } else { Answers::All(Some(responses)) })
}

fn unknown_tool(shared: &Shared, name: &str, error: ClientError) -> ClientError {
    match error {
        ClientError::Rpc { code: INVALID_PARAMS, message, data }
            if names_unknown_tool(name, &message, data.as_ref()) =>
        {
            shared.tools_changed();
            ClientError::UnknownTool { name: name.to_owned(), message }
        }
        other => other,
    }
}

/// The unknown-tool rule of the module docs (the code is checked by the caller).
pub(crate) fn names_unknown_tool(name: &str, message: &str, data: Option<&Value>) -> bool {
    const ABOUT_TOOLS: [&str; 4] = ["unknown tool", "tool not found", "no such tool", "tool does not exist"];
    const NEAR_NAME: [&str; 4] = ["not found", "unknown", "does not exist", "no such"];
    let mut text = message.to_lowercase();
    match data {
        Some(Value::String(data)) => text.push_str(&format!(" {}", data.to_lowercase())),
        Some(data) => text.push_str(&format!(" {}", data.to_string().to_lowercase())),
        None => {}
    }
    ABOUT_TOOLS.iter().any(|p| text.contains(p))
        || (!name.is_empty() && text.contains(&name.to_lowercase()) && NEAR_NAME.iter().any(|p| text.contains(p)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_specification_and_sdk_wordings_name_an_unknown_tool() {
        assert!(names_unknown_tool("invalid_tool_name", "Unknown tool: invalid_tool_name", None));
        assert!(names_unknown_tool("x", "Tool x not found", None));
        assert!(names_unknown_tool("x", "Invalid params", Some(&json!({"reason": "no such tool"}))));
    }

    #[test]
    fn argument_errors_that_mention_the_tool_are_not_unknown_tools() {
        assert!(!names_unknown_tool("echo", "Invalid arguments for tool echo: missing message", None));
        assert!(!names_unknown_tool("echo", "Invalid params", None));
    }
}
