//! One MCP tool as a [`Tool`]: shape translation and the failure contract, nothing else.
//!
//! | upstream outcome | what the agent gets |
//! |---|---|
//! | a result (`isError` or not) | `Ok`, rendered by the formatter in the sandbox |
//! | arguments that fail `inputSchema` | `Ok(is_error)` with the validator's message; no call |
//! | JSON-RPC "invalid params" for the arguments | `Ok(is_error)`, the server's text rendered like a result |
//! | the tool no longer exists | `Ok(is_error)` saying so; the provider's list is refreshed |
//! | cancelled | `Err` [`ToolErrorKind::Cancelled`] |
//! | `input_required` nobody can answer | `Err` [`ToolErrorKind::Unsupported`] |
//! | -32021, a client capability the caller did not declare | `Err` [`ToolErrorKind::MissingCapability`] naming it |
//! | -32021 for one the gateway's policy withholds | `Err` [`ToolErrorKind::Refused`] |
//! | anything else (transport, timeout, malformed, other RPC errors) | `Err` [`ToolErrorKind::ExecutionFailed`] |

use std::sync::Arc;
use std::time::Duration;

use jsonschema::Validator;
use serde_json::Value;
use wasmgate_client::{
    CallOptions, ClientError, InputDeclined, InputHandler, InputRequest, LogFn, McpClient, ProgressFn, Resume,
};
use wasmgate_core::{
    BoxFuture, CallContext, CancellationToken, Input, InputRefusal, LogLevel, LogMessage, LogSink, Tool, ToolError,
    ToolErrorKind, ToolExecute, ToolResult, ToolSpec,
};
use wasmgate_policy::sanitize;
use wasmgate_protocol::{InputRequired, ToolDefinition};
use wasmgate_sandbox::Formatter;

use crate::contract::{checked_arguments, gone, rejected};
use crate::media::MediaPass;
use crate::render::{Origin, render};
use crate::schema;

/// JSON-RPC "invalid params": how some servers reject arguments.
const INVALID_PARAMS: i64 = -32602;

/// 2026-07-28's "missing required client capability".
const MISSING_CAPABILITY: i64 = -32021;

/// The client capabilities a provider may require, and the request each one lets it make.
const CLIENT_CAPABILITIES: [(&str, &str); 3] =
    [("elicitation", "elicitation/create"), ("sampling", "sampling/createMessage"), ("roots", "roots/list")];

use crate::offer::Withheld;

/// Makes `definition` of `provider` a [`Tool`] named `exposed`.
///
/// # Errors
///
/// Why the tool is withheld: a schema that cannot be compiled (invalid, or referring to
/// something outside itself).
pub fn adapt(
    provider: &str,
    exposed: String,
    client: &McpClient,
    definition: &ToolDefinition,
    formatter: Arc<Formatter>,
    media: Option<Arc<MediaPass>>,
) -> Result<Tool, Withheld> {
    let input = schema::compile(&definition.input_schema)
        .map_err(|e| Withheld::new(format!("its inputSchema is unusable: {e}")))?;
    let output = match &definition.output_schema {
        Some(schema) => {
            Some(schema::compile(schema).map_err(|e| Withheld::new(format!("its outputSchema is unusable: {e}")))?)
        }
        None => None,
    };
    let spec = ToolSpec {
        name: exposed.clone(),
        // Only the reviewed description: `title` is outside the pinned fields
        // (wasmgate_policy::canonical), so a provider could change it after review.
        description: definition.description.clone().unwrap_or_default(),
        input_schema: definition.input_schema.clone(),
    };
    let executor = McpTool {
        provider: provider.to_owned(),
        upstream: definition.name.clone(),
        exposed,
        client: client.clone(),
        input,
        output,
        formatter,
        media,
    };
    Ok(Tool::new(spec, Arc::new(executor)))
}

struct McpTool {
    provider: String,
    /// The provider's own name for the tool.
    upstream: String,
    /// The name the agent knows.
    exposed: String,
    client: McpClient,
    input: Validator,
    output: Option<Validator>,
    formatter: Arc<Formatter>,
    /// Passes its media to clients, when its policy says so.
    media: Option<Arc<MediaPass>>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool").field("provider", &self.provider).field("upstream", &self.upstream).finish()
    }
}

impl ToolExecute for McpTool {
    fn execute(&self, input: Value, cancel: CancellationToken) -> BoxFuture<'_, Result<ToolResult, ToolError>> {
        Box::pin(self.call(input, cancel))
    }
}

impl McpTool {
    fn origin(&self) -> Origin<'_> {
        Origin { provider: &self.provider, tool: &self.exposed }
    }

    async fn call(&self, input: Value, cancel: CancellationToken) -> Result<ToolResult, ToolError> {
        let arguments = match checked_arguments(&self.input, input) {
            Ok(arguments) => arguments,
            Err(invalid) => return Ok(invalid),
        };
        let options = CallOptions { progress: progress_relay(), ..caller_options() };
        match self.client.call_tool_with(&self.upstream, arguments, cancel.clone(), options).await {
            Ok(result) => {
                let rendered = render(self.origin(), &self.formatter, self.output.as_ref(), &result).await;
                Ok(match &self.media {
                    Some(media) => media.attach(self.origin(), &result, rendered).await,
                    None => rendered,
                })
            }
            Err(error) => self.failed(error, &cancel).await,
        }
    }

    async fn failed(&self, error: ClientError, cancel: &CancellationToken) -> Result<ToolResult, ToolError> {
        match error {
            ClientError::UnknownTool { .. } => {
                tracing::info!(provider = %self.provider, tool = %self.upstream, "tool is gone; refreshing the list");
                // The answer does not wait on the refresh for long: a server can make the
                // walk over its pages last for as many request timeouts as it has pages.
                let refresh = tokio::time::timeout(REFRESH_LIMIT, self.client.list_tools());
                match cancel.run_until_cancelled(refresh).await {
                    Some(Ok(Ok(_))) => {}
                    Some(Ok(Err(why))) => {
                        tracing::warn!(provider = %self.provider, %why, "refreshing the tool list failed")
                    }
                    Some(Err(_)) => {
                        tracing::warn!(provider = %self.provider, "refreshing the tool list took over {REFRESH_LIMIT:?}; left to the next look")
                    }
                    None => tracing::info!(provider = %self.provider, "call cancelled while refreshing the tool list"),
                }
                Ok(gone(self.origin()))
            }
            ClientError::Rpc { code: INVALID_PARAMS, ref message, .. } => {
                Ok(rejected(self.origin(), &self.formatter, message).await)
            }
            _ => Err(tool_error(&self.provider, error)),
        }
    }
}

/// The longest a call whose tool is gone waits for the fresh tool list before it answers.
const REFRESH_LIMIT: Duration = Duration::from_secs(10);

/// The most characters of a progress message passed on.
const MAX_PROGRESS_MESSAGE: usize = 256;

/// When the caller wants progress ([`CallContext::current`]), a callback that passes the
/// upstream's updates on, their messages sanitized and capped (they are server text).
fn progress_relay() -> Option<ProgressFn> {
    let sink = CallContext::current().progress?;
    Some(Arc::new(move |update: wasmgate_client::Progress| {
        let message = update.message.map(|m| text_safety::truncated(&sanitize(&m).text, MAX_PROGRESS_MESSAGE));
        sink(wasmgate_core::Progress { progress: update.progress, total: update.total, message });
    }))
}

/// The options of a request made for the caller in the call context (a tool call, a
/// prompt): its side answers the provider's requests for input, a round put off to it
/// carries on, it declares what that side can answer, and it gets the log messages it
/// asked for. Without a caller's side, the client's own configuration stands.
pub(crate) fn caller_options() -> CallOptions {
    let context = CallContext::current();
    CallOptions {
        input: context.input.clone().map(|input| Arc::new(Relay(input)) as Arc<dyn InputHandler>),
        resume: context.resume.map(|r| Resume { responses: r.responses, state: r.state }),
        capabilities: context.input.as_deref().map(capabilities),
        log_level: context.log.as_ref().map(|log| log.level.as_str().to_owned()),
        log: context.log.clone().map(log_relay),
        ..CallOptions::default()
    }
}

/// Puts a round of input the client's handler deferred off to the caller in the call
/// context: the requests not yet answered, the answers given, the provider's state.
/// False when the caller cannot be asked later.
pub(crate) fn put_off(required: &InputRequired, answered: &serde_json::Map<String, Value>) -> bool {
    let mut requests = required.input_requests.clone().unwrap_or_default();
    requests.retain(|key, _| !answered.contains_key(key));
    CallContext::current()
        .input
        .is_some_and(|input| input.defer(requests, answered.clone(), required.request_state.clone()))
}

/// The capabilities a -32021's `data.requiredCapabilities` names, of those a client can
/// have (others are dropped: nobody here could declare them).
fn required_capabilities(data: Option<&Value>) -> Vec<&'static str> {
    let Some(required) = data.and_then(|d| d.get("requiredCapabilities")).and_then(Value::as_object) else {
        return Vec::new();
    };
    CLIENT_CAPABILITIES.iter().filter(|(name, _)| required.contains_key(*name)).map(|(name, _)| *name).collect()
}

/// What a provider's -32021 means for the caller: the capabilities it must declare, or a
/// refusal when the gateway's own rules withhold one (no client could change that).
fn missing_capability(named: Vec<&'static str>, input: Option<&dyn Input>) -> ToolError {
    if named.is_empty() {
        let detail = "the provider needs a client capability that no client here can declare";
        return ToolError::new(ToolErrorKind::ExecutionFailed, detail);
    }
    for (name, method) in CLIENT_CAPABILITIES.iter().filter(|(name, _)| named.contains(name)) {
        if let Some(why) = input.and_then(|input| input.withheld(method)) {
            let detail = format!("the provider needs the client capability {name}, but {why}");
            return ToolError::new(ToolErrorKind::Refused, detail);
        }
    }
    let detail =
        format!("the provider needs the client capabilities {}, which the caller did not declare", named.join(", "));
    ToolError::new(ToolErrorKind::MissingCapability, detail)
        .with_capabilities(named.into_iter().map(str::to_owned).collect())
}

/// A client failure that produced no result, as the loop's [`ToolError`]. A round of
/// input the caller's side put off is handed to it here ([`put_off`]); a provider's
/// -32021 names what the caller must declare ([`missing_capability`]).
pub(crate) fn tool_error(provider: &str, error: ClientError) -> ToolError {
    let kind = match error {
        ClientError::Cancelled => ToolErrorKind::Cancelled,
        ClientError::Unsupported(_) => ToolErrorKind::Unsupported,
        ClientError::InputDeferred { ref required, ref answered } if put_off(required, answered) => {
            ToolErrorKind::InputDeferred
        }
        ClientError::InputDeferred { .. } => ToolErrorKind::Unsupported,
        ClientError::Rpc { code: MISSING_CAPABILITY, ref data, .. } => {
            let named = required_capabilities(data.as_ref());
            return missing_capability(named, CallContext::current().input.as_deref())
                .with_provider(provider)
                .with_source(error);
        }
        _ => ToolErrorKind::ExecutionFailed,
    };
    ToolError::new(kind, error.to_string()).with_provider(provider).with_source(error)
}

/// The caller's side, as the client's input handler for one call: each request the
/// provider makes goes to the call context's [`Input`].
struct Relay(Arc<dyn Input>);

impl std::fmt::Debug for Relay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Relay")
    }
}

impl InputHandler for Relay {
    fn answer(&self, request: InputRequest) -> BoxFuture<'_, Result<Value, InputDeclined>> {
        let asked = self.0.request(request.method, request.params.unwrap_or_default());
        Box::pin(async move {
            asked.await.map_err(|refusal| match refusal {
                InputRefusal::Deferred => InputDeclined::Deferred,
                InputRefusal::Declined(why) => InputDeclined::Failed(why),
            })
        })
    }
}

/// The client capabilities a call declares: what its caller's side can answer.
fn capabilities(input: &dyn Input) -> serde_json::Map<String, Value> {
    let mut capabilities = serde_json::Map::new();
    for (method, capability) in
        [("elicitation/create", "elicitation"), ("sampling/createMessage", "sampling"), ("roots/list", "roots")]
    {
        if input.can(method) {
            capabilities.insert(capability.into(), Value::Object(serde_json::Map::new()));
        }
    }
    if input.can("elicitation/create:url") {
        capabilities.insert("elicitation".into(), serde_json::json!({"form": {}, "url": {}}));
    }
    capabilities
}

/// A provider's log messages, as the call context's sink takes them (cleaned above,
/// by the guard). A message without a known level is dropped.
fn log_relay(sink: LogSink) -> LogFn {
    Arc::new(move |params: serde_json::Map<String, Value>| {
        let Some(level) = params.get("level").and_then(Value::as_str).and_then(LogLevel::parse) else { return };
        let logger = params.get("logger").and_then(Value::as_str).unwrap_or_default().to_owned();
        let data = params.get("data").cloned().unwrap_or(Value::Null);
        (sink.send)(LogMessage { level, logger, data });
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;

    /// A caller's side whose gateway withholds sampling and nothing else.
    struct NoSampling;

    impl Input for NoSampling {
        fn can(&self, _: &str) -> bool {
            false
        }

        fn request(&self, _: String, _: Map<String, Value>) -> BoxFuture<'static, Result<Value, InputRefusal>> {
            Box::pin(std::future::ready(Err(InputRefusal::Declined("no".into()))))
        }

        fn defer(&self, _: Map<String, Value>, _: Map<String, Value>, _: Option<String>) -> bool {
            false
        }

        fn withheld(&self, method: &str) -> Option<String> {
            (method == "sampling/createMessage").then(|| "the policy denies sampling".into())
        }
    }

    #[test]
    fn a_missing_capability_names_only_what_a_client_can_declare() {
        let data = json!({"requiredCapabilities": {"elicitation": {"form": {}}, "roots": {}, "x-telepathy": {}}});
        assert_eq!(required_capabilities(Some(&data)), ["elicitation", "roots"]);
        assert!(required_capabilities(Some(&json!({"requiredCapabilities": ["sampling"]}))).is_empty());
        assert!(required_capabilities(None).is_empty());

        let error = missing_capability(vec!["elicitation", "roots"], Some(&NoSampling));
        assert_eq!(error.kind(), ToolErrorKind::MissingCapability);
        assert_eq!(error.capabilities(), ["elicitation", "roots"]);
        let unknown = missing_capability(Vec::new(), None);
        assert_eq!(unknown.kind(), ToolErrorKind::ExecutionFailed, "nothing a client could declare");
    }

    #[test]
    fn a_capability_the_policy_withholds_is_a_refusal_no_client_can_lift() {
        let error = missing_capability(vec!["sampling"], Some(&NoSampling));
        assert_eq!(error.kind(), ToolErrorKind::Refused);
        assert!(error.capabilities().is_empty());
        assert!(error.detail().contains("needs the client capability sampling, but the policy denies sampling"));
        let caller_decides = missing_capability(vec!["sampling"], None);
        assert_eq!(caller_decides.kind(), ToolErrorKind::MissingCapability);
    }
}
