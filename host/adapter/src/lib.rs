//! MCP tools as plain [`Tool`](wasmgate_agent::Tool) values.
//!
//! The adapter does shape translation only: a provider's tool becomes a spec under the
//! provider-prefixed name (`wasmgate_policy::prefixed_name`, which no provider can forge
//! for another's tool) and an `execute` that validates the arguments against the tool's
//! `inputSchema`, calls the tool through the MCP client, and has the result
//! rendered to text by a formatter component in the sandbox. Failures follow DESIGN.md's
//! contract (the table is in [`mcp_tool`]).
//!
//! # Layout
//!
//! * [`provider`]: [`McpProvider`] (a connected provider and its adapted tools) and
//!   [`McpToolset`] (the current tools of several providers, for the agent loop);
//! * [`offer`]: [`Offer`], a tool with the definition it was made from (what review pins),
//!   and the [`ToolSource`] trait every kind of provider implements;
//! * [`mcp_tool`]: one tool: argument validation, the call, the failure mapping;
//! * [`render`]: the result through the formatter, the output schema check, [`WITHHELD`];
//! * [`resources`]: the optional `<provider>.read_resource` tool (and why prompts are not consumed);
//! * [`formatters`]: which formatter renders which provider's and tool's results;
//! * [`schema`]: compiling untrusted JSON Schemas safely (offline, linear-time regexes);
//! * [`error`]: [`AdapterError`], what stops start-up.

pub mod error;
pub mod formatters;
pub mod mcp_tool;
pub mod offer;
pub mod provider;
pub mod render;
pub mod resources;
pub mod schema;

pub use error::AdapterError;
pub use formatters::{FormatterRule, Formatters};
pub use offer::{Offer, ToolSource};
pub use provider::{McpProvider, McpToolset};
pub use render::{SCHEMA_MISMATCH, WITHHELD};
pub use resources::read_resource_tool;
