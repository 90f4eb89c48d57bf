//! [`ToolSource`]: what every kind of provider (an MCP server, a WASM tool component)
//! implements, so the layers above (a plain toolbox, or the trust boundary that
//! reviews, pins and guards tools) treat them alike; [`Offer`], one tool with the
//! definition it was made from; and [`Toolset`], the tools on offer as a loop or a
//! server asks for them.
//!
//! The definition is the provider's own JSON, kept as it was sent: it is what review
//! shows and what the lock file pins. This crate does not look inside it.

use std::sync::Arc;

use serde_json::Value;

use crate::tool::{BoxFuture, Tool};

/// One tool of one provider.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The provider's configured name.
    pub provider: String,
    /// The provider's own name for the tool (the agent sees `tool.spec.name`).
    pub name: String,
    /// The tool's definition as the provider sent it (`name`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`, ...): what review hashes and pins.
    pub definition: Value,
    /// The tool.
    pub tool: Tool,
}

/// A provider of tools.
pub trait ToolSource: Send + Sync + std::fmt::Debug {
    /// The provider's configured name.
    fn provider(&self) -> &str;

    /// The tools on offer now. A provider that cannot be asked keeps offering what it
    /// offered last (a call then fails as the failure contract says), and reports why.
    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)>;
}

/// Shared sources (`Arc<dyn ToolSource>` mixes kinds of provider in one list).
impl<T: ToolSource + ?Sized> ToolSource for Arc<T> {
    fn provider(&self) -> &str {
        (**self).provider()
    }

    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        (**self).offers()
    }
}

/// The tools on offer, asked again before every model turn, so a toolset whose
/// providers changed their lists (an unknown-tool answer, a change notification) can
/// offer the fresh list.
pub trait Toolset: Send + Sync {
    /// The tools on offer now.
    fn current(&self) -> BoxFuture<'_, Vec<Tool>>;
}

impl Toolset for Vec<Tool> {
    fn current(&self) -> BoxFuture<'_, Vec<Tool>> {
        Box::pin(async move { self.clone() })
    }
}
