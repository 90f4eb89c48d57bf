//! The answers that take time: list pages, tool calls, resource reads, prompts and
//! completions, each asked of the backend.

use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;
use wasmgate_core::{
    Ask, Attachment, CallContext, Caller, CancellationToken, Input, LogLevel, LogMessage, LogSink, Progress,
    ProgressSink, Refusal, Resume, ToolErrorKind, conversation_name,
};
use wasmgate_protocol::codes::{
    INTERNAL_ERROR, INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY, RATE_LIMITED, UNAVAILABLE,
};
use wasmgate_protocol::server::{
    CallToolParams, GetPromptParams, ReadResourceParams, call_tool_result, call_tool_text_result, complete_result,
    get_prompt_result, input_required_result, list_result, progress_notification, read_resource_result,
    resource_not_found_error, tool_definition,
};
use wasmgate_protocol::{CacheHints, Id, ProtocolVersion, error_response, result_response};

use super::ask::{self, Carried, Deferred, Live, Requester, Round, Subject, Unredeemed};
use super::follow::Followed;
use super::{Caps, Engine, Job};

use crate::backend::CallFailure;

impl Engine {
    /// Runs `job` and builds its response, with what it can reach ([`Around`]). The
    /// work is boxed: a call's future is kilobytes, which the runtime would otherwise
    /// copy each time it moves the task awaiting it, or that task's stages.
    pub(crate) async fn run(
        &self,
        id: &Id,
        version: ProtocolVersion,
        job: Job,
        cancel: CancellationToken,
        around: Around,
    ) -> Value {
        Box::pin(self.answer(id, version, job, cancel, around)).await
    }

    async fn answer(
        &self,
        id: &Id,
        version: ProtocolVersion,
        job: Job,
        cancel: CancellationToken,
        around: Around,
    ) -> Value {
        let Around { notify, live, caller, conversation: base } = around;
        let conversation = |named: &Option<String>| conversation(base.as_ref(), named.as_deref());
        let backend = &self.backend;
        let listed = |key: &str, cursor: Option<String>, items: Result<Vec<Value>, Refusal>| match items {
            Ok(items) => self.page(id, version, key, items, cursor.as_deref()),
            Err(refusal) => refused(id, version, refusal),
        };
        match job {
            Job::ListTools(cursor) => {
                // The list may depend on who asks (a tool denied to the caller is left out).
                let context = CallContext { caller, ..CallContext::default() };
                let tools = CallContext::scope(context, backend.tools()).await;
                let tools = tools
                    .into_iter()
                    .map(|spec| tool_definition(&spec.name, &spec.description, spec.input_schema))
                    .collect();
                listed("tools", cursor, Ok(tools))
            }
            Job::Call { params, caps, log } => {
                let log = log.zip(notify.clone()).map(|(level, out)| log_sink(level, out));
                let progress = params.progress_token.clone().zip(notify).map(|(token, out)| progress_sink(token, out));
                let conversation = conversation(&params.context);
                let context = CallContext { progress, log, conversation, ..asked(live, caller) };
                self.call(id, version, params, caps, cancel, context).await
            }
            Job::ListResources(cursor) => listed("resources", cursor, backend.resources().await),
            Job::ListTemplates(cursor) => listed("resourceTemplates", cursor, backend.resource_templates().await),
            Job::ListPrompts(cursor) => listed("prompts", cursor, backend.prompts().await),
            Job::Read { params, caps } => {
                let context = CallContext { conversation: conversation(&params.context), ..asked(live, caller) };
                self.read(id, version, params, caps, cancel, context).await
            }
            Job::GetPrompt { params, caps } => {
                let context = CallContext { conversation: conversation(&params.context), ..asked(live, caller) };
                self.get_prompt(id, version, params, caps, cancel, context).await
            }
            Job::Complete(params) => match backend.complete(params, cancel).await {
                Ok(c) => result_response(id, complete_result(version, c.values, c.total, c.has_more)),
                Err(refusal) => refused(id, version, refusal),
            },
        }
    }

    /// One page of a list. The cursor is the offset of the page's first entry, as text:
    /// opaque to the client, and refused (-32602) when it is not one we could have
    /// issued for the current list.
    fn page(&self, id: &Id, version: ProtocolVersion, key: &str, items: Vec<Value>, cursor: Option<&str>) -> Value {
        let start = match cursor.map(str::parse::<usize>) {
            None => 0,
            Some(Ok(start)) if start > 0 && start < items.len() => start,
            Some(_) => return error_response(Some(id), INVALID_PARAMS, "Invalid cursor", None),
        };
        let end = start.saturating_add(self.config.page_size.max(1)).min(items.len());
        let next = (end < items.len()).then(|| end.to_string());
        let page = items.into_iter().skip(start).take(end - start).collect();
        result_response(id, list_result(version, key, page, next.as_deref(), CacheHints::default()))
    }

    /// Runs a `tools/call` and builds its response; see [`CallFailure`] for the mapping,
    /// and [`asking`](Self::asking) for the provider's or the gateway's questions.
    async fn call(
        &self,
        id: &Id,
        version: ProtocolVersion,
        params: CallToolParams,
        caps: Caps,
        cancel: CancellationToken,
        context: CallContext,
    ) -> Value {
        let CallToolParams { name, arguments, input_responses, request_state, .. } = params;
        let requester = Requester::of(&context);
        let subject = Subject { requester: &requester, method: "tools/call", name: &name, arguments: &arguments };
        let asked = Asked { subject, input_responses, request_state, caps };
        let work = self.backend.call(name.clone(), arguments.clone(), cancel);
        let outcome = match self.asking(id, asked, version, context, work).await {
            Ok(outcome) => outcome,
            Err(Early::Answer(answer)) => return answer,
            Err(Early::TooLarge(message)) => return result_response(id, call_tool_text_result(version, message, true)),
        };
        match outcome {
            Ok(result) => {
                let blocks = result.attachments.into_iter().map(block).collect();
                result_response(id, call_tool_result(version, &result.content, blocks, result.is_error))
            }
            Err(CallFailure::UnknownTool(name)) => {
                error_response(Some(id), INVALID_PARAMS, &format!("Unknown tool: {name}"), None)
            }
            // A 2026-07-28 client learns which capability to declare; an older one
            // declared its capabilities once, for the session, and gets the text below.
            Err(CallFailure::Tool(error))
                if error.kind() == ToolErrorKind::MissingCapability && version.is_stateless() =>
            {
                let names = error.capabilities();
                let required: serde_json::Map<String, Value> =
                    names.iter().map(|name| (name.clone(), Value::Object(serde_json::Map::new()))).collect();
                let message = format!("Missing required client capability: {}", names.join(", "));
                let data = serde_json::json!({ "requiredCapabilities": required });
                error_response(Some(id), MISSING_REQUIRED_CLIENT_CAPABILITY, &message, Some(data))
            }
            // A used-up budget is the caller's to wait out: a JSON-RPC error that says how
            // long (over HTTP, a 2026-07-28 request also gets 429 and `Retry-After`).
            Err(CallFailure::Tool(error)) if error.kind() == ToolErrorKind::RateLimited => {
                let wait = error.retry_after().map_or(1, |wait| wait.as_secs() + u64::from(wait.subsec_nanos() > 0));
                let message = format!("Rate limited: the caller's budget for this tool is used up; retry in {wait} s");
                error_response(Some(id), RATE_LIMITED, &message, Some(serde_json::json!({ "retryAfter": wait })))
            }
            // The same for a gateway that cannot count the call now (its shared store is
            // unreachable): nothing ran, and the same request may be sent again.
            Err(CallFailure::Tool(error)) if error.kind() == ToolErrorKind::Unavailable => {
                tracing::warn!(tool = %name, detail = error.detail(), "refused: the shared store cannot be reached");
                // What could not be done, without the store's own words (where it is).
                let what = error.detail().split(':').next().unwrap_or("the call cannot be judged");
                unavailable(id, what, error.retry_after())
            }
            Err(CallFailure::Tool(error)) => {
                tracing::warn!(
                    tool = %name,
                    kind = ?error.kind(),
                    provider = error.provider().unwrap_or("-"),
                    detail = error.detail(),
                    "tool call produced no result"
                );
                result_response(id, call_tool_text_result(version, &error.to_string(), true))
            }
        }
    }

    /// Runs a `resources/read` and builds its response; a provider that needs input to
    /// read it asks as during a call ([`asking`](Self::asking)).
    async fn read(
        &self,
        id: &Id,
        version: ProtocolVersion,
        params: ReadResourceParams,
        caps: Caps,
        cancel: CancellationToken,
        context: CallContext,
    ) -> Value {
        let ReadResourceParams { uri, input_responses, request_state, .. } = params;
        let none = serde_json::Map::new();
        let requester = Requester::of(&context);
        let subject = Subject { requester: &requester, method: "resources/read", name: &uri, arguments: &none };
        let asked = Asked { subject, input_responses, request_state, caps };
        let work = self.backend.read_resource(uri.clone(), cancel);
        match self.asking(id, asked, version, context, work).await {
            Ok(Ok(contents)) => result_response(id, read_resource_result(version, contents, CacheHints::default())),
            Ok(Err(refusal)) => refused(id, version, refusal),
            Err(Early::Answer(answer)) => answer,
            Err(Early::TooLarge(message)) => error_response(Some(id), INTERNAL_ERROR, message, None),
        }
    }

    /// Runs a `prompts/get` and builds its response; a provider that needs input to fill
    /// the prompt asks as during a call ([`asking`](Self::asking)).
    async fn get_prompt(
        &self,
        id: &Id,
        version: ProtocolVersion,
        params: GetPromptParams,
        caps: Caps,
        cancel: CancellationToken,
        context: CallContext,
    ) -> Value {
        let GetPromptParams { name, arguments, input_responses, request_state, .. } = params;
        let requester = Requester::of(&context);
        let subject = Subject { requester: &requester, method: "prompts/get", name: &name, arguments: &arguments };
        let asked = Asked { subject, input_responses, request_state, caps };
        let plain = GetPromptParams { name: name.clone(), arguments: arguments.clone(), ..GetPromptParams::default() };
        let work = self.backend.get_prompt(plain, cancel);
        match self.asking(id, asked, version, context, work).await {
            Ok(Ok(prompt)) => {
                result_response(id, get_prompt_result(version, prompt.description.as_deref(), prompt.messages))
            }
            Ok(Err(refusal)) => refused(id, version, refusal),
            Err(Early::Answer(answer)) => answer,
            Err(Early::TooLarge(message)) => error_response(Some(id), INTERNAL_ERROR, message, None),
        }
    }

    /// Runs `work` (a call, a prompt) with the client's side in its `context`. A stateless
    /// request from a client that can be asked asks by `input_required` (see the `ask`
    /// module): a retry's `requestState` is checked before anything runs, and a request
    /// whose questions were put off ends in `input_required` instead of its outcome.
    async fn asking<T>(
        &self,
        id: &Id,
        asked: Asked<'_>,
        version: ProtocolVersion,
        mut context: CallContext,
        work: impl Future<Output = T>,
    ) -> Result<T, Early> {
        let Asked { subject, input_responses, request_state, caps } = asked;
        let deferred = match &self.approvals {
            Some(approvals) if version.is_stateless() && caps.any() => {
                let (answer, resume) = match request_state {
                    Some(state) => match approvals.redeem(&state, subject).await {
                        Ok(carried) => {
                            let responses = input_responses.unwrap_or_default();
                            let answer = carried.approved || ask::approved(&responses);
                            (Some(answer), carried.round.map(|round| resume(round, responses)))
                        }
                        Err(Unredeemed::Invalid(why)) => {
                            let message = format!(
                                "Invalid requestState: {why}; send the request again without it to be asked afresh"
                            );
                            return Err(Early::Answer(error_response(Some(id), INVALID_PARAMS, &message, None)));
                        }
                        // Not spent: the same request, state and all, may come again.
                        Err(Unredeemed::Unavailable(why)) => {
                            tracing::warn!(detail = %why, "refused: the shared store cannot be reached");
                            let why = "whether the requestState was used cannot be checked";
                            return Err(Early::Answer(unavailable(id, why, None)));
                        }
                    },
                    None => (None, None),
                };
                context.resume = resume;
                Some(Arc::new(Deferred::new(answer, caps)))
            }
            _ => None,
        };
        if let Some(deferred) = &deferred {
            // Approval is asked only of a client that can be asked questions; otherwise
            // the gateway's own approver answers, as for any client that cannot.
            if caps.elicitation {
                context.ask = Some(Arc::clone(deferred) as Arc<dyn Ask>);
            }
            context.input = Some(Arc::clone(deferred) as Arc<dyn Input>);
        }
        let outcome = CallContext::scope(context, work).await;
        if let (Some(deferred), Some(approvals)) = (deferred, &self.approvals) {
            // A question of the gateway's own (approval) comes first: the call never ran.
            if let Some(question) = deferred.pending()
                && let Some(state) = approvals.issue(subject, &Carried::default())
            {
                return Err(Early::Answer(result_response(
                    id,
                    input_required_result(ask::input_requests(&question), &state),
                )));
            }
            if let Some(round) = deferred.round() {
                let keys = round.requests.keys().cloned().collect();
                let carried = Carried {
                    approved: deferred.approved(),
                    round: Some(Round { keys, answered: round.answered, state: round.state }),
                };
                return Err(match approvals.issue(subject, &carried) {
                    Some(state) => Early::Answer(result_response(id, input_required_result(round.requests, &state))),
                    None => Early::TooLarge("the provider's request for input is too large to carry"),
                });
            }
        }
        Ok(outcome)
    }
}

/// What a job can reach besides its answer.
#[derive(Default)]
pub(crate) struct Around {
    /// Where the request's own notifications go (progress, log messages), when the
    /// transport has such a place.
    pub(crate) notify: Option<mpsc::Sender<Value>>,
    /// The client, to ask while the call waits (handshake-era elicitation), when it can.
    pub(crate) live: Option<Arc<Live>>,
    /// Who made the request, when known (it rides in the call context).
    pub(crate) caller: Option<Arc<Caller>>,
    /// The conversation of the transport (a stdio connection, a session, a caller),
    /// which a request's `_meta` may narrow ([`conversation`]).
    pub(crate) conversation: Option<Arc<str>>,
}

/// A request a provider may ask input for, as the client sent it.
struct Asked<'a> {
    subject: Subject<'a>,
    input_responses: Option<serde_json::Map<String, Value>>,
    request_state: Option<String>,
    /// What the client declared it can be asked.
    caps: Caps,
}

/// How [`Engine::asking`] ends a request before its outcome is answered.
enum Early {
    /// With this response (`input_required`, or a refused `requestState`).
    Answer(Value),
    /// With this failure: a round too large to carry in a request state.
    TooLarge(&'static str),
}

/// The context of a request made by `caller`, whose provider may ask the client live
/// (handshake era) when `live` is there.
fn asked(live: Option<Arc<Live>>, caller: Option<Arc<Caller>>) -> CallContext {
    let ask = live.clone().map(|live| live as Arc<dyn Ask>);
    let input = live.map(|live| live as Arc<dyn Input>);
    CallContext { ask, input, caller, ..CallContext::default() }
}

/// The conversation of a request: the transport's (`base`), narrowed by the name the
/// client sent in `_meta` (`named`), if it sent one ([`conversation_name`]).
fn conversation(base: Option<&Arc<str>>, named: Option<&str>) -> Option<Arc<str>> {
    match (base, named) {
        (Some(base), None) => Some(Arc::clone(base)),
        (base, named) => conversation_name(base.map(|b| &**b), named),
    }
}

/// Where a call's log messages go: `notifications/message` on `out`, each message as
/// the backend cleaned it, dropped when the stream is full (a log never holds up a call).
fn log_sink(level: LogLevel, out: mpsc::Sender<Value>) -> LogSink {
    let send = move |message: LogMessage| {
        let mut params = serde_json::Map::new();
        params.insert("level".into(), Value::String(message.level.as_str().into()));
        params.insert("logger".into(), Value::String(message.logger));
        params.insert("data".into(), message.data);
        let _ = out.try_send(wasmgate_protocol::notification("notifications/message", Some(params)));
    };
    LogSink { level, send: Arc::new(send) }
}

/// Sends each progress update as `notifications/progress` under the client's token.
/// Updates that find the channel full are dropped, never waited for: progress is
/// advisory, and a flood from upstream must not hold the call back.
fn progress_sink(token: Id, out: mpsc::Sender<Value>) -> ProgressSink {
    Arc::new(move |update: Progress| {
        let message = progress_notification(&token, update.progress, update.total, update.message.as_deref());
        if out.try_send(message).is_err() {
            tracing::debug!(token = %token, "progress update dropped: the client is not reading");
        }
    })
}

impl Engine {
    /// Follows `uri` for a handshake-era connection or session (`resources/subscribe`)
    /// and builds the answer: `{}`, or the refusal.
    pub(crate) async fn subscribe(&self, followed: &Followed, id: &Id, version: ProtocolVersion, uri: String) -> Value {
        match followed.subscribe(self.backend.as_ref(), uri).await {
            Ok(()) => result_response(id, serde_json::Map::new()),
            Err(refusal) => refused(id, version, refusal),
        }
    }
}

/// The error response for a [`Refusal`].
fn refused(id: &Id, version: ProtocolVersion, refusal: Refusal) -> Value {
    match refusal {
        Refusal::ResourceNotFound(uri) => resource_not_found_error(id, version, &uri),
        Refusal::InvalidParams(message) => error_response(Some(id), INVALID_PARAMS, &message, None),
        Refusal::Failed(message) => error_response(Some(id), INTERNAL_ERROR, &message, None),
    }
}

/// The content block of a result's attachment (checked and framed by the backend).
fn block(attachment: Attachment) -> Value {
    match attachment {
        Attachment::Media { kind, mime_type, data } => {
            serde_json::json!({ "type": kind.as_str(), "mimeType": mime_type, "data": data })
        }
        Attachment::Blob { uri, mime_type, blob } => {
            serde_json::json!({ "type": "resource", "resource": { "uri": uri, "mimeType": mime_type, "blob": blob } })
        }
        Attachment::Text { uri, text } => {
            serde_json::json!({ "type": "resource", "resource": { "uri": uri, "mimeType": "text/plain", "text": text } })
        }
    }
}

/// What a retry carries on: the answers given before, and the client's answers to the
/// keys the round asked it (answers to keys it was not asked are dropped).
fn resume(round: Round, responses: serde_json::Map<String, Value>) -> Resume {
    let mut answers = round.answered;
    for (key, answer) in responses {
        if round.keys.contains(&key) {
            answers.insert(key, answer);
        }
    }
    Resume { responses: answers, state: round.state }
}

/// A JSON-RPC error saying the gateway cannot serve the request now, for `what` (which
/// names no host: where the store is stays in the log): the client may send the same
/// request again after `retry_after` (one second if unsaid).
pub(crate) fn unavailable(id: &Id, what: &str, retry_after: Option<std::time::Duration>) -> Value {
    let wait = retry_after.map_or(1, |wait| wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let message = format!(
        "Unavailable: {what}, as the gateway's shared store cannot be reached; send the request again in {wait} s"
    );
    error_response(Some(id), UNAVAILABLE, &message, Some(serde_json::json!({ "retryAfter": wait })))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn a_retry_carries_on_with_the_answers_to_the_keys_the_round_asked_only() {
        let mut answered = serde_json::Map::new();
        answered.insert("roots".into(), json!({"roots": [{"uri": "file:///srv"}]}));
        let round = Round { keys: vec!["name".into()], answered, state: Some("s".into()) };
        let client = json!({"name": {"action": "accept"}, "roots": {"roots": [{"uri": "file:///home"}]}, "x": 1});
        let resumed = resume(round, client.as_object().cloned().unwrap());
        assert_eq!(resumed.state.as_deref(), Some("s"));
        assert_eq!(
            Value::Object(resumed.responses),
            json!({"name": {"action": "accept"},
            "roots": {"roots": [{"uri": "file:///srv"}]}}),
            "the client cannot answer what the gateway answered"
        );
    }
}
