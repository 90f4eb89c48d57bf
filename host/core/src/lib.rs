//! The vocabulary every layer of wasmgate speaks: tools, their results and errors, who
//! calls and what a call carries besides its arguments, and what a provider offers
//! besides tools.
//!
//! This crate knows nothing of MCP, HTTP, child processes or WebAssembly: a [`Tool`] is
//! a [`ToolSpec`] and an `execute` that returns a [`ToolResult`] (text for the model) or
//! a [`ToolError`] (no result; its `Display` is a stable, model-safe sentence and the
//! details are for the host). The protocol crate reads the wire into these types, the
//! adapter turns providers into them, the guard decides on them, and the server face and
//! the agent loop (`wasmgate-agent`) consume them: each type is defined here once.
//!
//! # Layout
//!
//! * `tool`: [`Tool`], [`ToolSpec`], [`ToolResult`] and its [`Attachment`]s, the
//!   [`ToolExecute`] trait, [`BoxFuture`];
//! * `error`: [`ToolError`] and its [`ToolErrorKind`]; [`BoxError`] and [`report`],
//!   an error written with its causes;
//! * `context`: [`CallContext`], what a caller offers a call besides its arguments (a
//!   progress sink, a person to [`Ask`], a place for the provider's own requests for
//!   [`Input`], its log messages) and who the [`Caller`] is, carried as a task-local;
//! * `source`: [`ToolSource`], what every kind of provider implements, [`Offer`], a
//!   tool with the definition it was made from (what review pins), and [`Toolset`], the
//!   tools on offer now;
//! * `content`: resources, templates, prompts and completion as a provider offers them,
//!   the [`ContentSource`] trait, and [`Naming`];
//! * `offers`: what a gateway serves besides tools ([`Offers`], [`Prompt`]) and why a
//!   request for it got no answer ([`Refusal`]);
//! * `shared`: what replicas of one gateway keep in a shared store ([`SharedStore`],
//!   [`SharedBuckets`]) and [`StoreUnavailable`].

mod content;
mod context;
mod error;
mod offers;
mod shared;
mod source;
mod tool;

pub use content::{
    CompleteParams, Completion, CompletionRef, CompletionRequest, ContentSource, Contents, MAX_COMPLETION_VALUES,
    Naming, PromptArgument, PromptInfo, PromptMessage, PromptMessages, Resource, ResourceTemplate, ResourceWatch, Role,
    SourceError,
};
pub use context::{
    Answer, Ask, CallContext, Caller, Input, InputRefusal, LogLevel, LogMessage, LogSink, Progress, ProgressSink,
    Resume, conversation_name, conversation_owner,
};
pub use error::{BoxError, ToolError, ToolErrorKind, report};
pub use offers::{Offers, Prompt, Refusal};
pub use shared::{BucketSpec, SharedAsks, SharedBuckets, SharedMemory, SharedStore, StoreUnavailable};
pub use source::{Offer, ToolSource, Toolset};
pub use tokio_util::sync::CancellationToken;
pub use tool::{Attachment, BoxFuture, MediaKind, Tool, ToolExecute, ToolResult, ToolSpec};
