//! The server side of the protocol: reading what a client asks, building what a server answers.
//!
//! The rest of this crate reads messages a *server* sent; this module is its mirror for
//! a gateway that serves tools to downstream clients. It stays pure like the rest:
//! `Value` in, typed parameters or a precise [`ProtocolError`](crate::ProtocolError) out,
//! and builders that produce the exact shapes of the specification's schemas.
//!
//! * `requests`: the client's request parameters: the 2026-07-28 `_meta` stamp
//!   ([`StatelessMeta`]), `initialize`, `tools/call`, `tools/list` cursors,
//!   `notifications/cancelled`, `resources/read` URIs, `prompts/get` and
//!   `completion/complete`, and the version a handshake answers with.
//! * `results`: `initialize` and `server/discover` results, list pages, text tool
//!   results, resource reads, prompts, completions, the unsupported-version and
//!   resource-not-found errors, and the notifications of a change stream.
//!
//! Era rules the builders apply: a result for a stateless version (2026-07-28) carries
//! `resultType: "complete"`, and the cacheable ones (`server/discover`, `tools/list`)
//! carry `ttlMs` and `cacheScope`, which that version's schema requires; handshake-era
//! results carry none of these, as their schemas do not define them.

mod requests;
mod results;

pub use requests::{
    CONTEXT_META, CallToolParams, Cancelled, GetPromptParams, InitializeParams, MAX_CONTEXT_BYTES, ReadResourceParams,
    StatelessMeta, answer_initialize_version, has_stateless_meta, parse_call_tool_params, parse_cancelled,
    parse_complete_params, parse_cursor, parse_get_prompt_params, parse_initialize_params, parse_read_resource_params,
    parse_resource_uri, parse_stateless_meta,
};
pub use results::{
    ServerIdentity, call_tool_result, call_tool_text_result, complete, complete_result, confirm_elicitation_params,
    confirmed, discover_result, get_prompt_result, initialize_result, input_required_result, list_result,
    listen_acknowledged, listen_closed_result, progress_notification, read_resource_result, resource_not_found_error,
    subscription_notification, tool_definition, tools_list_result, unsupported_version_error,
};
