//! A connected MCP provider and its tools as [`Tool`]s.
//!
//! Tools are re-adapted only when the provider's definitions change, so a turn costs
//! one look at the client's cache. A tool whose name cannot be exposed or whose schema
//! cannot be compiled is withheld, with a warning in the logs.

use std::sync::{Arc, Mutex};

use serde_json::Value;
use wasmgate_client::{ClientConfig, ClientError, McpClient, Transport};
use wasmgate_core::{BoxFuture, Offer, Tool, ToolSource};
use wasmgate_policy::validate_provider;

use crate::error::AdapterError;
use crate::formatters::Formatters;
use crate::mcp_tool::adapt;
use crate::offer::offer;
use crate::resources::{READ_RESOURCE, read_resource_tool};

/// One upstream MCP server, adapted. Clones share the connection.
#[derive(Debug, Clone)]
pub struct McpProvider {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    name: String,
    client: McpClient,
    formatters: Arc<Formatters>,
    /// The definitions last adapted (raw JSON, to notice any change) and the offers made of them.
    adapted: Mutex<(Vec<Value>, Vec<Offer>)>,
}

impl McpProvider {
    /// Connects to a provider and lists its tools: any failure stops start-up with an
    /// error naming the provider.
    ///
    /// # Errors
    ///
    /// [`AdapterError::ProviderName`] or [`AdapterError::Unreachable`].
    pub async fn connect(
        name: &str,
        transport: impl Transport,
        config: ClientConfig,
        formatters: Arc<Formatters>,
    ) -> Result<Self, AdapterError> {
        validate_provider(name)?;
        let client = McpClient::connect(name, transport, config)
            .await
            .map_err(|source| AdapterError::Unreachable { provider: name.to_owned(), source: Box::new(source) })?;
        let provider = Self::new(name, client.clone(), formatters)?;
        if let Err(source) = provider.tools().await {
            client.close().await;
            return Err(AdapterError::Unreachable { provider: name.to_owned(), source: Box::new(source) });
        }
        Ok(provider)
    }

    /// Adapts an already connected client.
    ///
    /// # Errors
    ///
    /// [`AdapterError::ProviderName`] for a name that would make ambiguous tool names.
    pub fn new(name: &str, client: McpClient, formatters: Arc<Formatters>) -> Result<Self, AdapterError> {
        validate_provider(name)?;
        let adapted = Mutex::new((Vec::new(), Vec::new()));
        Ok(Self { inner: Arc::new(Inner { name: name.to_owned(), client, formatters, adapted }) })
    }

    /// The provider's configured name (the prefix of its tools' names).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The names its tools and prompts are shown under.
    #[must_use]
    pub fn naming(&self) -> wasmgate_core::Naming {
        self.inner.formatters.naming()
    }

    /// The client, for hosts that need more than tools.
    #[must_use]
    pub fn client(&self) -> &McpClient {
        &self.inner.client
    }

    /// The provider's tools now (from the client's cache unless it is stale).
    ///
    /// # Errors
    ///
    /// The client's, when the list cannot be fetched.
    pub async fn tools(&self) -> Result<Vec<Tool>, ClientError> {
        Ok(self.fetch_offers().await?.into_iter().map(|offer| offer.tool).collect())
    }

    /// The provider's tools with their definitions.
    ///
    /// # Errors
    ///
    /// The client's, when the list cannot be fetched.
    pub async fn fetch_offers(&self) -> Result<Vec<Offer>, ClientError> {
        let definitions = self.inner.client.list_tools().await?;
        let raw: Vec<Value> = definitions.iter().map(|d| d.raw.clone()).collect();
        if let Ok(adapted) = self.inner.adapted.lock()
            && adapted.0 == raw
        {
            return Ok(adapted.1.clone());
        }
        let name = &self.inner.name;
        let offers: Vec<Offer> = definitions
            .iter()
            .filter_map(|definition| {
                offer(name, &definition.name, self.inner.formatters.naming(), definition.raw.clone(), |exposed| {
                    let formatter = self.inner.formatters.select(name, &definition.name);
                    adapt(name, exposed, &self.inner.client, definition, formatter, self.inner.formatters.media())
                })
            })
            .collect();
        if let Ok(mut adapted) = self.inner.adapted.lock() {
            *adapted = (raw, offers.clone());
        }
        Ok(offers)
    }

    /// The optional `<provider>.read_resource` tool (see `resources`),
    /// or `None` when the provider has no resources. It is not guarded: behind a guard,
    /// offer it through `Guard::guard_resource_reads`, which applies the policy's
    /// `resources` globs, the audit log and result screening to every read.
    ///
    /// # Errors
    ///
    /// The client's, when the resource list cannot be fetched.
    pub async fn resource_tool(&self) -> Result<Option<Tool>, ClientError> {
        let formatter = self.inner.formatters.select(&self.inner.name, READ_RESOURCE);
        read_resource_tool(&self.inner.name, &self.inner.client, formatter).await
    }

    /// The offers adapted last, without asking the provider.
    fn last_offers(&self) -> Vec<Offer> {
        self.inner.adapted.lock().map(|a| a.1.clone()).unwrap_or_default()
    }

    /// Closes the connection.
    pub async fn close(&self) {
        let reason = self.inner.client.close().await;
        tracing::debug!(provider = %self.inner.name, %reason, "provider closed");
    }
}

impl ToolSource for McpProvider {
    fn provider(&self) -> &str {
        self.name()
    }

    /// Waits at most `OFFER_WAIT` for the provider's list: one that does not answer
    /// in time keeps offering what it offered last, so it cannot hold up a listing of
    /// every provider's tools. Its request is then given up: the client forgets it and
    /// tells the server (`notifications/cancelled`, or over stateless HTTP by closing its
    /// stream), and the next look asks again.
    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        Box::pin(async move {
            match tokio::time::timeout(OFFER_WAIT, self.fetch_offers()).await {
                Ok(Ok(offers)) => (offers, None),
                Ok(Err(why)) => (self.last_offers(), Some(format!("cannot refresh the tool list: {why}"))),
                Err(_) => {
                    let why = format!("the tool list did not arrive within {} s", OFFER_WAIT.as_secs());
                    (self.last_offers(), Some(why))
                }
            }
        })
    }
}

/// How long a look at the tools waits for one provider's list.
pub const OFFER_WAIT: std::time::Duration = std::time::Duration::from_secs(5);
