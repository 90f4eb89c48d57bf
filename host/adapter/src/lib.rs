//! MCP tools and WASM tool components' tools as plain [`Tool`](wasmgate_core::Tool) values.
//!
//! The adapter does shape translation only: a provider's tool becomes a spec under the
//! provider-prefixed name (`wasmgate_policy::prefixed_name`, which no provider can forge
//! for another's tool) and an `execute` that validates the arguments against the tool's
//! `inputSchema`, calls the tool (through the MCP client, or in a fresh sandbox instance
//! of the component), and has the result rendered to text by a formatter component in
//! the sandbox. Failures follow DESIGN.md's contract (the tables are in [`mcp_tool`] and
//! [`component_tool`]).
//!
//! # Layout
//!
//! * [`provider`]: [`McpProvider`], a connected MCP server and its adapted tools;
//! * [`component`]: [`ComponentProvider`], a WASM tool component and its adapted tools;
//! * [`toolbox`]: [`Toolbox`] (the current tools of several providers of any kind, for
//!   the agent loop) and [`McpToolset`], a toolbox of MCP servers;
//! * [`offer`]: making an [`Offer`](wasmgate_core::Offer) of a provider's tool, or
//!   saying why it is [`Withheld`];
//! * [`mcp_tool`], [`component_tool`]: one tool: argument validation, the call, the
//!   failure mapping; `contract` holds what the two share;
//! * [`render`]: the result through the formatter, the output schema check, [`WITHHELD`];
//! * [`resources`]: the optional `<provider>.read_resource` tool (and why prompts are not consumed);
//! * [`content`]: an MCP provider's resources, prompts and completion as the guard's
//!   [`ContentSource`](wasmgate_guard::ContentSource);
//! * [`supervised`]: [`Supervised`], an MCP provider kept running: withheld and retried
//!   when it cannot start, started again when it goes down;
//! * [`screens`]: a screen component as the guard's [`Screener`](wasmgate_guard::Screener);
//! * [`formatters`]: which formatter renders which provider's and tool's results;
//! * [`schema`]: compiling untrusted JSON Schemas safely (offline, linear-time regexes);
//! * [`error`]: [`AdapterError`], what stops start-up.

pub mod component;
pub mod component_tool;
pub mod content;
mod contract;
pub mod error;
pub mod formatters;
pub mod mcp_tool;
pub mod media;
pub mod offer;
pub mod provider;
pub mod render;
pub mod resources;
pub mod schema;
pub mod screens;
pub mod supervised;
pub mod toolbox;

pub use component::ComponentProvider;

pub use error::AdapterError;
pub use formatters::{FormatterRule, Formatters};
pub use media::MediaPass;
pub use offer::Withheld;
pub use provider::McpProvider;
pub use render::{SCHEMA_MISMATCH, WITHHELD};
pub use resources::read_resource_tool;
pub use screens::ScreenComponent;
pub use supervised::{Backoff, NotRunning, Supervised};
pub use toolbox::{McpToolset, Toolbox};
/// What every kind of provider implements, and one tool with its definition (defined
/// where the trust boundary can name them without this crate).
pub use wasmgate_core::{Offer, ToolSource};
