//! [`ComponentProvider`]: a WASM tool component (WIT world `tool-provider`) as a provider
//! of [`Tool`]s, offered, reviewed and called exactly like an MCP server's tools.
//!
//! The component lists its tools once, at start-up. Each becomes an [`Offer`] named
//! `<provider>__<tool>` whose definition is the MCP shape (`name`, `description`,
//! `inputSchema`), so review hashes and pins it as it would an MCP tool. A tool whose
//! name cannot be exposed or whose schema cannot be compiled is withheld, with a
//! warning in the logs. Every call runs in a fresh instance with only the provider's
//! [`Grants`], under its [`CallLimits`] (see [`component_tool`](crate::component_tool)).

use std::sync::Arc;

use serde_json::json;
use wasmgate_core::{BoxFuture, Offer, Tool, ToolSource};
use wasmgate_policy::validate_provider;
use wasmgate_sandbox::{CallLimits, Grants, ToolDefinition, ToolProvider};

use crate::component_tool::{ComponentRunner, component_tool};
use crate::error::AdapterError;
use crate::formatters::Formatters;
use crate::offer::offer;

/// A WASM tool component, adapted. Clones share the component and its offers.
#[derive(Debug, Clone)]
pub struct ComponentProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    component: Arc<ComponentRunner>,
    /// The tools listed at start-up, adapted.
    offers: Vec<Offer>,
}

impl ComponentProvider {
    /// Adapts the loaded `provider` under the name `name`: lists its tools (in a fresh
    /// instance with nothing granted) and makes each a tool whose calls get `grants`
    /// and run under `limits`, with results rendered by the formatter `formatters`
    /// selects for the provider and tool.
    ///
    /// # Errors
    ///
    /// [`AdapterError::ProviderName`] for a name that would make ambiguous tool names;
    /// [`AdapterError::Component`], naming the provider, when the component will not
    /// list its tools (a trap, a limit, a list that breaks the contract).
    pub fn new(
        name: &str,
        provider: ToolProvider,
        grants: Grants,
        limits: CallLimits,
        formatters: Arc<Formatters>,
    ) -> Result<Self, AdapterError> {
        validate_provider(name)?;
        let definitions =
            provider.list_tools().map_err(|source| AdapterError::Component { provider: name.to_owned(), source })?;
        let component = Arc::new(ComponentRunner::new(name.to_owned(), provider, grants, limits));
        let offers = definitions.iter().filter_map(|definition| adapted(&component, definition, &formatters)).collect();
        Ok(Self { inner: Arc::new(Inner { component, offers }) })
    }

    /// The provider's configured name (the prefix of its tools' names).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.component.provider
    }

    /// The component's tools (those not withheld).
    #[must_use]
    pub fn tools(&self) -> Vec<Tool> {
        self.inner.offers.iter().map(|offer| offer.tool.clone()).collect()
    }

    /// What every call gets: the grants.
    #[must_use]
    pub fn grants(&self) -> &Grants {
        &self.inner.component.grants
    }
}

/// The offer of one listed tool, or `None` when it is withheld.
fn adapted(component: &Arc<ComponentRunner>, definition: &ToolDefinition, formatters: &Formatters) -> Option<Offer> {
    let name = &component.provider;
    let mcp_shaped = json!({
        "name": definition.name,
        "description": definition.description,
        "inputSchema": definition.input_schema,
    });
    offer(name, &definition.name, formatters.naming(), mcp_shaped, |exposed| {
        component_tool(component, exposed, definition, formatters.select(name, &definition.name))
    })
}

impl ToolSource for ComponentProvider {
    fn provider(&self) -> &str {
        self.name()
    }

    /// The tools listed at start-up: a component's list does not change while it runs.
    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        Box::pin(async move { (self.inner.offers.clone(), None) })
    }
}
