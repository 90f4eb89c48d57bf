//! What a provider offers besides tools, in the terms every layer shares: resources,
//! resource templates, prompts and completion, the [`ContentSource`] trait a provider
//! implements to offer them, and [`Naming`], how its names are shown.
//!
//! The protocol crate reads these from the wire (strictly, and keeping each result's
//! whole JSON beside them); the adapter hands them up from an MCP server; the guard
//! decides what of them is served, cleaned and framed; the server face sends what the
//! guard serves ([`Offers`](crate::Offers), [`Prompt`](crate::Prompt)). Nothing maps one
//! copy onto another on the way.

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::tool::BoxFuture;

/// The most completion values one answer may hold (the protocol's own cap).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// How a provider's tool and prompt names are shown to clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Naming {
    /// `<provider>__<tool>` (the default): no provider can shadow another's names.
    #[default]
    Prefixed,
    /// The provider's own names, unchanged (`prefix = false`, the drop-in mode): the
    /// gateway refuses to start when one of them is also another provider's name, and
    /// withholds every tool of a name two providers offer.
    AsIs,
}

/// A resource as its provider lists it (`resources/list`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resource {
    /// The URI to read it by (any scheme; the provider interprets it).
    pub uri: String,
    /// The provider's name for it (untrusted text).
    pub name: String,
    /// A title for people (untrusted text).
    pub title: Option<String>,
    /// What it is (untrusted text).
    pub description: Option<String>,
    /// Its media type, if the provider knows it.
    pub mime_type: Option<String>,
    /// Its size in bytes, if the provider knows it (a claim, not a limit).
    pub size: Option<u64>,
}

/// A resource template as its provider lists it (`resources/templates/list`): a family
/// of resources whose URIs fill in the template's variables.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceTemplate {
    /// Its RFC 6570 URI template, as sent (not expanded or validated).
    pub uri_template: String,
    /// The provider's name for it (untrusted text).
    pub name: String,
    /// A title for people (untrusted text).
    pub title: Option<String>,
    /// What it is (untrusted text).
    pub description: Option<String>,
    /// The media type of what it reads, if they share one.
    pub mime_type: Option<String>,
}

/// One entry of what a resource read returned: text or binary, with the entry's JSON
/// kept as it was sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Contents {
    /// `TextResourceContents`: `{"uri", "mimeType"?, "text"}`.
    Text {
        /// The URI the provider says it is of.
        uri: String,
        /// Its media type, if given.
        mime_type: Option<String>,
        /// The text (untrusted).
        text: String,
        /// The whole entry (`_meta`, ...).
        raw: Value,
    },
    /// `BlobResourceContents`: `{"uri", "mimeType"?, "blob"}`.
    Blob {
        /// The URI the provider says it is of.
        uri: String,
        /// Its media type, if given.
        mime_type: Option<String>,
        /// The data, base64 as sent (not decoded or checked).
        blob: String,
        /// The whole entry (`_meta`, ...).
        raw: Value,
    },
}

impl Contents {
    /// The URI the provider says the entry is of.
    #[must_use]
    pub fn uri(&self) -> &str {
        match self {
            Self::Text { uri, .. } | Self::Blob { uri, .. } => uri,
        }
    }

    /// Its media type, if the provider gave one.
    #[must_use]
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Text { mime_type, .. } | Self::Blob { mime_type, .. } => mime_type.as_deref(),
        }
    }

    /// The entry's JSON, exactly as sent.
    #[must_use]
    pub fn raw(&self) -> &Value {
        match self {
            Self::Text { raw, .. } | Self::Blob { raw, .. } => raw,
        }
    }
}

/// A prompt as its provider lists it (`prompts/list`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptInfo {
    /// The name to get it by; never empty.
    pub name: String,
    /// A title for people (untrusted text).
    pub title: Option<String>,
    /// What it is for (untrusted text).
    pub description: Option<String>,
    /// Its arguments, in the provider's order, names unique.
    pub arguments: Vec<PromptArgument>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptArgument {
    /// Its name, which the client sends back to fill the prompt; never empty.
    pub name: String,
    /// A title for people (untrusted text).
    pub title: Option<String>,
    /// What it means (untrusted text).
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// Who a prompt message speaks as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `"user"`.
    User,
    /// `"assistant"`.
    Assistant,
}

impl Role {
    /// The role as it is written on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Assistant => "assistant",
        }
    }
}

/// One message of a prompt the provider produced.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptMessage {
    /// Who it speaks as.
    pub role: Role,
    /// One content block, as sent (untrusted; checked like a tool result's block).
    pub content: Value,
}

/// A prompt the provider produced (`prompts/get`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PromptMessages {
    /// A description of the filled prompt (untrusted text).
    pub description: Option<String>,
    /// Its messages, in order.
    pub messages: Vec<PromptMessage>,
}

/// What a client asks to complete.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// An argument of a prompt, by the prompt's served name.
    Prompt(String),
    /// A variable of a resource template, by the template.
    Resource(String),
}

/// A `completion/complete` request from a client.
#[derive(Debug, Clone, PartialEq)]
pub struct CompleteParams {
    /// The prompt or resource template.
    pub reference: CompletionRef,
    /// The argument being completed.
    pub argument_name: String,
    /// What the user has typed so far.
    pub argument_value: String,
    /// Arguments already resolved, every value a string.
    pub context_arguments: Option<Map<String, Value>>,
}

/// A completion request as sent to one provider: the reference in its own names.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// `{"type": "ref/prompt", "name"}` or `{"type": "ref/resource", "uri"}`.
    pub reference: Value,
    /// The argument being completed.
    pub argument_name: String,
    /// What the user has typed so far.
    pub argument_value: String,
    /// Arguments already resolved (each a string).
    pub context_arguments: Option<Map<String, Value>>,
}

/// Suggested values for an argument.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The values, at most [`MAX_COMPLETION_VALUES`] (untrusted text from a provider).
    pub values: Vec<String>,
    /// How many there are in all, if known.
    pub total: Option<u64>,
    /// Whether there are more than those given.
    pub has_more: Option<bool>,
}

/// Why a provider gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// The provider refused what was asked: it does not exist, or the arguments are
    /// not valid (JSON-RPC -32602, -32002).
    #[error("the provider refused the request: {0}")]
    Refused(String),
    /// The provider does not offer this at all.
    #[error("the provider does not support it: {0}")]
    Unsupported(String),
    /// The provider asked for input that went to the caller, who answers it with its
    /// next request (the 2026-07-28 `input_required` round trip, carried on).
    #[error("the provider asked for input, which the caller answers with its next request: {0}")]
    InputDeferred(String),
    /// Anything else: the connection, a malformed answer, a timeout, a cancellation.
    #[error("{0}")]
    Failed(String),
}

/// Changes to one resource's content, followed until dropped.
pub struct ResourceWatch {
    /// Moves on each change (changes that come faster than they are seen collapse).
    pub changes: tokio::sync::watch::Receiver<u64>,
    /// Kept while the resource is followed: dropping it ends the subscription.
    pub keep: Box<dyn std::any::Any + Send + Sync>,
}

impl std::fmt::Debug for ResourceWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceWatch").field("changes", &*self.changes.borrow()).finish_non_exhaustive()
    }
}

/// A provider of resources, prompts and completion.
pub trait ContentSource: Send + Sync + std::fmt::Debug {
    /// The provider's configured name.
    fn provider(&self) -> &str;

    /// The names its prompts are shown under. Default: prefixed with the provider.
    fn naming(&self) -> Naming {
        Naming::Prefixed
    }

    /// Its resources.
    fn resources(&self) -> BoxFuture<'_, Result<Vec<Resource>, SourceError>>;

    /// Its resource templates.
    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<ResourceTemplate>, SourceError>>;

    /// Reads the resource at `uri`.
    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Contents>, SourceError>>;

    /// Follows changes to the content of the resource at `uri`. Default: the provider
    /// offers no subscriptions.
    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<ResourceWatch, SourceError>> {
        let refused = SourceError::Unsupported(format!("no subscription to {uri}"));
        Box::pin(std::future::ready(Err(refused)))
    }

    /// Its prompts.
    fn prompts(&self) -> BoxFuture<'_, Result<Vec<PromptInfo>, SourceError>>;

    /// The prompt `name` (the provider's own name) filled with `arguments`.
    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<PromptMessages, SourceError>>;

    /// Completes an argument.
    fn complete(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, SourceError>>;
}
