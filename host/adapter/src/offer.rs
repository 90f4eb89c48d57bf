//! Making an [`Offer`] of one provider's tool: its exposed name, and the tool, or why it
//! is withheld.

use serde_json::Value;
use wasmgate_core::{Naming, Offer, Tool};
use wasmgate_policy::exposed_name;

/// Why a tool was not offered to the agent: its name cannot be exposed, or its
/// definition cannot be adapted (a schema that does not compile, say).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Withheld {
    reason: String,
}

impl Withheld {
    /// Withheld for `reason`.
    #[must_use]
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into() }
    }

    /// Why.
    #[must_use]
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

/// The offer of `provider`'s tool `name`, made by `adapt` from its name under `naming`, or
/// `None` (with a warning in the logs) when the name cannot be exposed or `adapt`
/// withholds the tool.
pub(crate) fn offer(
    provider: &str,
    name: &str,
    naming: Naming,
    definition: Value,
    adapt: impl FnOnce(String) -> Result<Tool, Withheld>,
) -> Option<Offer> {
    match exposed_name(provider, name, naming).map_err(|e| Withheld::new(e.to_string())).and_then(adapt) {
        Ok(tool) => Some(Offer { provider: provider.to_owned(), name: name.to_owned(), definition, tool }),
        Err(why) => {
            tracing::warn!(%provider, tool = %name, %why, "tool withheld");
            None
        }
    }
}
