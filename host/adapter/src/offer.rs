//! [`Offer`]: a tool as a provider offers it, with the definition it was made from, and
//! [`ToolSource`], what every kind of provider (an MCP server, a WASM tool component)
//! implements so the trust layer above can review, pin and guard its tools alike.

use std::sync::Arc;

use serde_json::Value;
use wasmgate_agent::{BoxFuture, Tool};
use wasmgate_policy::prefixed_name;

/// Why a tool was not offered to the agent (for logs).
pub type Withheld = String;

/// One tool of one provider.
#[derive(Debug, Clone)]
pub struct Offer {
    /// The provider's configured name.
    pub provider: String,
    /// The provider's own name for the tool (the agent sees the prefixed one).
    pub name: String,
    /// The tool's definition as the provider sent it (`name`, `description`,
    /// `inputSchema`, `outputSchema`, `annotations`, ...): what review hashes and pins.
    pub definition: Value,
    /// The tool, named `<provider>__<name>`.
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

/// Shared sources (`Arc<dyn ToolSource>` mixes kinds of provider in one toolbox).
impl<T: ToolSource + ?Sized> ToolSource for Arc<T> {
    fn provider(&self) -> &str {
        (**self).provider()
    }

    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        (**self).offers()
    }
}

/// The offer of `provider`'s tool `name`, made by `adapt` from its exposed name, or
/// `None` (with a warning in the logs) when the name cannot be exposed or `adapt`
/// withholds the tool.
pub(crate) fn offer(
    provider: &str,
    name: &str,
    definition: Value,
    adapt: impl FnOnce(String) -> Result<Tool, Withheld>,
) -> Option<Offer> {
    match prefixed_name(provider, name).map_err(|e| e.to_string()).and_then(adapt) {
        Ok(tool) => Some(Offer { provider: provider.to_owned(), name: name.to_owned(), definition, tool }),
        Err(why) => {
            tracing::warn!(%provider, tool = %name, %why, "tool withheld");
            None
        }
    }
}
