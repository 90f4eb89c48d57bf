//! Finding `wasmgate.toml` and starting the gateway from it, for the commands that need
//! the providers.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Args;
use wasmgate_gateway::{Config, Gateway};
use wasmgate_guard::{Approver, TerminalApprover, Unattended};

/// Where the configuration is.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// The gateway's configuration (providers, policy, lock, audit).
    #[arg(long, short, value_name = "FILE", env = "WASMGATE_CONFIG", default_value = "wasmgate.toml")]
    pub config: PathBuf,
}

impl ConfigArgs {
    /// Loads the configuration.
    pub fn load(&self) -> anyhow::Result<Config> {
        if !self.config.exists() {
            anyhow::bail!(
                "no configuration at {}: pass --config FILE or set WASMGATE_CONFIG (docs/CONFIG.md shows one)",
                self.config.display()
            );
        }
        Ok(Config::load(&self.config)?)
    }

    /// Loads the configuration and starts every provider.
    pub async fn start(&self, approver: Arc<dyn Approver>) -> anyhow::Result<Gateway> {
        self.start_loaded(&self.load()?, approver).await
    }

    /// Starts the gateway from `config`, loaded from this configuration already.
    pub async fn start_loaded(&self, config: &Config, approver: Arc<dyn Approver>) -> anyhow::Result<Gateway> {
        Gateway::start(config, approver).await.with_context(|| format!("starting from {}", self.config.display()))
    }
}

/// A person at the terminal when there is one, and otherwise nobody (every `ask` is no).
pub fn approver() -> Arc<dyn Approver> {
    match TerminalApprover::open_tty() {
        Some(terminal) => Arc::new(terminal),
        None => Arc::new(Unattended),
    }
}
