//! [`Gateway::start`]: from a [`Config`] to guarded tools. Every provider is started or
//! reached before anything is served (the MCP servers all at once). One that fails is
//! withheld, its reason logged and audited, and an MCP server is tried again with
//! backoff; the others are served. A provider marked `required` that fails stops
//! start-up with an error that names it and what is wrong, as does a broken file.

use std::collections::BTreeMap;
use std::os::unix::fs::DirBuilderExt as _;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use wasmgate_adapter::Supervised;
use wasmgate_audit::{AuditLog, ChainKey, Options, Redaction};
use wasmgate_core::{Naming, SharedBuckets, ToolSource};
use wasmgate_guard::{Approver, Budgets, Guard, GuardedToolset, Provenance};
use wasmgate_policy::{Lock, Policy};
use wasmgate_sandbox::{Sandbox, SandboxConfig};

use crate::cluster::{Anchoring, Member};
use crate::config::{Config, ProviderConfig};
use crate::error::StartError;
use crate::providers::{ProviderInfo, Starter, cache_dir, limits, refuse_collisions};

/// A started gateway: the guard, every provider, and their guarded tools.
#[derive(Debug)]
pub struct Gateway {
    /// The policy, the reviewed definitions, the approver and the audit log.
    pub guard: Arc<Guard>,
    /// The reviewed tools of every provider, guarded.
    pub toolset: Arc<GuardedToolset>,
    /// The providers now (a reload may start and stop some).
    pub(crate) running: Arc<RwLock<Running>>,
    /// What starts providers, at start-up and at a reload.
    pub(crate) starter: Starter,
    /// Held by a reload while it runs: two at once would start the same providers twice.
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// The configuration it started from ([`Gateway::reload`] names what it cannot change).
    pub(crate) config: Config,
    /// Its part in a cluster of replicas, when it is one.
    pub member: Option<Arc<Member>>,
    /// Anchors the audit log in the cluster's store while the gateway runs.
    _anchoring: Option<Anchoring>,
}

/// The providers of a running gateway.
#[derive(Debug, Default)]
pub(crate) struct Running {
    /// What was started, per provider, in the configuration's order.
    pub(crate) providers: Vec<ProviderInfo>,
    /// Every provider's tool source.
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    /// The MCP servers among them.
    pub(crate) mcp: Vec<Arc<Supervised>>,
    /// Each provider's configuration, as it was started.
    pub(crate) configs: BTreeMap<String, ProviderConfig>,
}

/// Whether the gateway should take calls now.
#[derive(Debug, Clone)]
pub struct Readiness {
    guard: Arc<Guard>,
    running: Arc<RwLock<Running>>,
    member: Option<Arc<Member>>,
}

impl Readiness {
    /// Why not, if anything: the audit log failed or its writes fail now (every call
    /// would be refused), or a provider marked `required` is not running. Empty when it
    /// is ready.
    #[must_use]
    pub fn unready(&self) -> Vec<String> {
        let mut reasons = Vec::new();
        let audit = self.guard.audit();
        if audit.is_poisoned() {
            reasons.push("the audit log cannot be written".to_owned());
        } else if audit.is_stalled() {
            reasons
                .push("the audit log cannot be written now (a full disk?): calls are refused until it can".to_owned());
        }
        if let Some(member) = &self.member {
            reasons.extend(member.unready());
        }
        let running = self.running.read().unwrap_or_else(PoisonError::into_inner);
        for provider in running.providers.iter().filter(|p| p.required) {
            let supervised = running.mcp.iter().find(|s| s.name() == provider.name);
            if provider.withheld.is_some() || supervised.is_some_and(|s| s.running().is_err()) {
                reasons.push(format!("the required provider {} is not running", provider.name));
            }
        }
        reasons
    }
}

impl Gateway {
    /// Starts every provider of `config` under the policy, with `approver` answering `ask`.
    ///
    /// # Errors
    ///
    /// [`StartError`], naming what failed.
    pub async fn start(config: &Config, approver: Arc<dyn Approver>) -> Result<Self, StartError> {
        let policy = Policy::load(&config.policy)?;
        let lock = if config.lock.exists() { Lock::load(&config.lock)? } else { Lock::default() };
        let redaction = config.audit.redact.iter().fold(Redaction::default(), |r, key| r.with_key(key));
        let key = config.audit.key_file.as_deref().map(ChainKey::load).transpose().map_err(StartError::AuditKey)?;
        // A replica joins its cluster first: without the store it does not start.
        let member = match &config.cluster {
            Some(cluster) => Some(Arc::new(Member::join(cluster).await?)),
            None => None,
        };
        let replica = member.as_ref().map(|m| m.replica().to_owned());
        let rotate_bytes = config.audit.rotate_bytes;
        let options = Options { durability: config.audit.durability, redaction, key, replica, rotate_bytes };
        if let Some(parent) = config.audit.path.parent() {
            // Directories it creates are its owner's only: the audit log and the
            // state beside it hold call arguments.
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(|source| StartError::AuditDir { path: parent.to_owned(), source })?;
        }
        let audit = Arc::new(AuditLog::open(&config.audit.path, options).map_err(StartError::Audit)?);
        if let Some(member) = &member {
            member.check(&audit).await?;
        }
        let cache_dir =
            if config.sandbox.no_cache { None } else { config.sandbox.cache_dir.clone().or_else(cache_dir) };
        let mut sandbox_config = SandboxConfig { cache_dir, ..SandboxConfig::default() };
        if let Some(prepared) = config.sandbox.prepared_instances {
            sandbox_config.prepared_instances = prepared;
        }
        let sandbox = Sandbox::new(sandbox_config).map_err(StartError::Sandbox)?;
        // Loaded once; each provider gets it under its own limits.
        let json_text = sandbox
            .load_formatter("json-text", wasmgate_guests::JSON_TEXT, limits(&config.limits, None))
            .map_err(StartError::Sandbox)?;
        let starter = Starter { sandbox, json_text, media_check: Mutex::new(None), audit: Arc::clone(&audit) };
        let started = starter.start(config, config.providers.keys(), &policy, &lock).await?;
        if config.providers.values().any(|p| p.naming() == Naming::AsIs) {
            refuse_collisions(&started.sources, &started.mcp).await?;
        }
        let budgets = match &member {
            Some(member) => Budgets::shared(Arc::clone(&member.store) as Arc<dyn SharedBuckets>),
            None => Budgets::default(),
        };
        let anchoring = member.as_ref().map(|member| member.anchoring(Arc::clone(&audit)));
        let provenance = member.as_ref().map_or_else(Provenance::default, |member| member.provenance());
        let guard = Guard::with_shared(policy, lock, Some(config.lock.clone()), approver, audit, (budgets, provenance));
        if let Some(member) = &member {
            guard.reviewers().share_with(member.asks());
        }
        for (provider, screens) in &started.screens {
            guard.set_screeners(provider, screens.clone());
        }
        let toolset = Arc::new(GuardedToolset::new(Arc::clone(&guard), started.sources.clone()));
        let running = Running {
            providers: started.providers,
            sources: started.sources,
            mcp: started.mcp,
            configs: config.providers.clone(),
        };
        let running = Arc::new(RwLock::new(running));
        Ok(Self {
            guard,
            toolset,
            running,
            starter,
            reloading: tokio::sync::Mutex::new(()),
            config: config.clone(),
            member,
            _anchoring: anchoring,
        })
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Running> {
        self.running.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// What was started, per provider.
    #[must_use]
    pub fn providers(&self) -> Vec<ProviderInfo> {
        self.read().providers.clone()
    }

    /// The upstream MCP servers, kept running.
    #[must_use]
    pub fn mcp_providers(&self) -> Vec<Arc<Supervised>> {
        self.read().mcp.clone()
    }

    /// Why provider `name` is not served now, if it is not: it could not be set up, or
    /// it is down and being started again.
    #[must_use]
    pub fn provider_trouble(&self, name: &str) -> Option<String> {
        let running = self.read();
        if let Some(why) = running.providers.iter().find(|p| p.name == name).and_then(|p| p.withheld.clone()) {
            return Some(why);
        }
        running.mcp.iter().find(|s| s.name() == name).and_then(|s| s.running().err().map(|e| e.to_string()))
    }

    /// What says whether the gateway should take calls now ([`Readiness`]).
    #[must_use]
    pub fn readiness(&self) -> Readiness {
        Readiness { guard: Arc::clone(&self.guard), running: Arc::clone(&self.running), member: self.member.clone() }
    }

    /// Every provider's tool source.
    #[must_use]
    pub fn sources(&self) -> Vec<Arc<dyn ToolSource>> {
        self.read().sources.clone()
    }

    /// Closes every MCP connection (a stdio server's whole process group ends) and stops
    /// starting them again.
    pub async fn close(&self) {
        for provider in self.mcp_providers() {
            provider.close().await;
        }
        if let Some(member) = &self.member {
            member.anchor_now(self.guard.audit()).await;
        }
    }
}
