//! JSON-RPC 2.0 and MCP messages for wasmgate, as pure functions over `serde_json::Value`.
//!
//! wasmgate sits between an AI agent and MCP servers it does not trust. Everything a
//! server sends passes through this crate first, so it is written for a hostile peer:
//! no I/O, no async, no panics on any input, no guessing (an ambiguous message is an
//! error, not a best effort), and no silently dropped fields (each page and result keeps
//! the whole JSON it was read from). What it reads is put in `wasmgate-core`'s types
//! where the gateway has one (resources, prompts, completion), and in this crate's own
//! views where only the wire has it (pages, results, handshakes).
//!
//! Every module is private and its API is re-exported here, except two namespaces:
//! [`codes`], the JSON-RPC and MCP error codes, and [`server`], the server side.
//!
//! # Layout
//!
//! The modules, in the order a message meets them:
//!
//! * `limits`: raw bytes to `Value`, after size, UTF-8, depth and duplicate-key checks
//!   ([`parse_message`], [`MessageLimits`]); `scan`: the depth and duplicate-key scanner.
//! * `jsonrpc`: `Value` to one of the four JSON-RPC message kinds ([`classify`],
//!   [`Message`]) and the envelope builders; `id`: the request [`Id`].
//! * `fields`: reading a message's fields strictly, each error naming its path.
//! * [`codes`]: JSON-RPC and MCP error codes.
//! * `version`: [`ProtocolVersion`], the legacy/stateless split, and negotiation.
//! * `result`: `resultType` and the multi round-trip `input_required` results
//!   ([`ResultKind`]), plus cache hints.
//! * `mcp`: client-side request builders for both eras ([`ClientContext`]).
//! * `handshake`: the `server/discover` and `initialize` result parsers.
//! * `tools`: `tools/list` definitions and `tools/call` results; `page`: the shape list
//!   pages share (capped, no repeated key, cursor and cache hints).
//! * `param_headers`: `x-mcp-header` parameters of a tool and their values
//!   ([`header_params`], [`header_values`]), which a client mirrors into `Mcp-Param-*`
//!   headers and a server checks.
//! * `resources`: `resources/list`, `resources/templates/list` and `resources/read`.
//! * `prompts`: `prompts/list` and `prompts/get`.
//! * `completion`: `completion/complete` requests (checked before they are built) and
//!   results.
//! * `subscriptions`: `subscriptions/listen` filters, acknowledgments and the
//!   `subscriptionId` stamp of 2026-07-28 change notifications.
//! * [`server`]: the server side, for serving tools to downstream clients: reading the
//!   client's requests (the stateless `_meta` stamp, `initialize`, `tools/call`, ...) and
//!   building each era's results.
//! * `batch`: outgoing newline-delimited JSON, the lines queued together in one write
//!   ([`LineBatch`]).
//! * `error`: [`ProtocolError`], the one error type.
//!
//! [`parse_message`] and [`classify`] (or [`decode`], which chains them) are the entry
//! points for fuzzing: they take arbitrary input and must only ever return.

mod batch;
pub mod codes;
mod completion;
mod error;
mod fields;
mod handshake;
mod id;
mod jsonrpc;
mod limits;
mod mcp;
mod page;
mod param_headers;
mod prompts;
mod resources;
mod result;
mod scan;
pub mod server;
mod subscriptions;
mod tools;
mod version;

pub use batch::LineBatch;
pub use completion::{check_completion_request, parse_complete_result};
pub use error::ProtocolError;
pub use handshake::{DiscoverResult, InitializeResult, ServerInfo, parse_discover_result, parse_initialize_result};
pub use id::Id;
pub use jsonrpc::{
    ErrorObject, ErrorResponse, Message, Notification, Request, Response, classify, error_response, notification,
    request, result_response,
};
pub use limits::{MessageLimits, decode, parse_message};
pub use mcp::{ClientContext, ClientInfo, Implementation};
pub use mcp::{META_CLIENT_CAPABILITIES, META_LOG_LEVEL, META_PROTOCOL_VERSION};
pub use param_headers::{AnnotationError, HeaderParam, header_params, header_values};
pub use prompts::{GetPromptResult, PromptsPage, parse_get_prompt_result, parse_prompts_list};
pub use resources::{
    ReadResourceResult, ResourceTemplatesPage, ResourcesPage, parse_read_resource_result,
    parse_resource_templates_list, parse_resources_list,
};
pub use result::{CacheHints, CacheScope, INPUT_REQUEST_METHODS, InputRequired, ResultKind, parse_result_kind};
pub use subscriptions::{
    ACKNOWLEDGED, Acknowledged, LISTEN, SubscriptionFilter, declares_list_changed, parse_acknowledged, subscription_id,
};
pub use tools::{CallToolResult, ContentBlock, ToolDefinition, ToolsPage, parse_call_tool_result, parse_tools_list};
pub use version::{
    ProtocolVersion, SUPPORTED, UnsupportedVersion, check_initialize_version, negotiate, parse_unsupported_version,
};
