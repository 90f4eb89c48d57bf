//! [`Offer`]: a tool as a provider offers it, with the definition it was made from, and
//! [`ToolSource`], what every kind of provider (an MCP server, a WASM tool component)
//! implements so the trust layer above can review, pin and guard its tools alike.

use serde_json::Value;
use wasmgate_agent::{BoxFuture, Tool};

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
