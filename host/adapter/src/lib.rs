//! MCP tools and WASM tool components' tools as plain [`Tool`](wasmgate_core::Tool) values.
//!
//! The adapter does shape translation only: a provider's tool becomes a spec under the
//! provider-prefixed name (`wasmgate_policy::prefixed_name`, which no provider can forge
//! for another's tool) and an `execute` that validates the arguments against the tool's
//! `inputSchema`, calls the tool (through the MCP client, or in a fresh sandbox instance
//! of the component), and has the result rendered to text by a formatter component in
//! the sandbox. Failures follow the failure contract of docs/ARCHITECTURE.md (the
//! tables are in the `mcp_tool` and `component_tool` modules).
//!
//! # Layout
//!
//! The modules are private; what a user names is re-exported here.
//!
//! * `provider`: [`McpProvider`], a connected MCP server and its adapted tools;
//! * `component`: [`ComponentProvider`], a WASM tool component and its adapted tools;
//! * `toolbox`: [`Toolbox`] (the current tools of several providers of any kind, for
//!   the agent loop) and [`McpToolset`], a toolbox of MCP servers;
//! * `offer`: making an [`Offer`](wasmgate_core::Offer) of a provider's tool, or saying
//!   why it is [`Withheld`];
//! * `mcp_tool`, `component_tool`: one tool: argument validation, the call, the failure
//!   mapping ([`ComponentRunner`] runs a component's calls, [`component_tool`] makes one
//!   of its tools); `contract` holds what the two share;
//! * `render`: the result through the formatter, the output schema check, [`WITHHELD`];
//! * `media`: images and audio passed after the media check ([`MediaPass`]);
//! * `resources`: the optional `<provider>.read_resource` tool (and why prompts are not
//!   consumed);
//! * `content`: an MCP provider's resources, prompts and completion as a
//!   [`ContentSource`](wasmgate_core::ContentSource);
//! * `supervised`: [`Supervised`], an MCP provider kept running: withheld and retried
//!   when it cannot start ([`Connect`], [`Report`], [`Backoff`]), started again when it
//!   goes down;
//! * `screens`: a screen component as the guard's [`Screener`](wasmgate_guard::Screener);
//! * `formatters`: which formatter renders which provider's and tool's results;
//! * `schema`: compiling untrusted JSON Schemas safely (offline, linear-time regexes);
//! * `error`: [`AdapterError`], what stops start-up.

mod component;
mod component_tool;
mod content;
mod contract;
mod error;
mod formatters;
mod mcp_tool;
mod media;
mod offer;
mod provider;
mod render;
mod resources;
mod schema;
mod screens;
mod supervised;
mod toolbox;

pub use component::ComponentProvider;
pub use component_tool::{ComponentRunner, component_tool};
pub use error::AdapterError;
pub use formatters::{FormatterRule, Formatters};
pub use media::MediaPass;
pub use offer::Withheld;
pub use provider::{McpProvider, OFFER_WAIT};
pub use render::{SCHEMA_MISMATCH, WITHHELD};
pub use resources::read_resource_tool;
pub use screens::ScreenComponent;
pub use supervised::{Backoff, Connect, NotRunning, Report, Supervised};
pub use toolbox::{McpToolset, Toolbox};
