//! Reading the rules and the providers again while running ([`Gateway::reload`]):
//! `wasmgate.toml`, the policy and the lock file, on SIGHUP or `wasmgate reload`.
//!
//! * Files that do not load are refused as a whole, and the rules in force stay: the
//!   error is logged and audited (a `reload` record with `refused`). So is a reload
//!   whose new or changed provider marked `required` cannot start, or whose providers
//!   would show one name twice; what it started is closed again.
//! * Otherwise the new policy and lock apply to every call that starts from now on
//!   (verdicts, constraints, caller rules, budgets, resource and prompt globs,
//!   sampling, roots, injection and secrets actions, and which definitions are
//!   reviewed), while a call in flight finishes under the rules it started with.
//! * A provider added to `wasmgate.toml` is started; one removed is stopped; one whose
//!   table changed, or whose settings in the policy that are read when it starts
//!   changed (sandbox limits, formatters, screens, confinement, reach, media), is
//!   started anew and the old one stopped. A call in flight to a provider that is
//!   stopped ends as its connection does. The others keep running untouched.
//! * What the gateway reads only once (the audit, sandbox, limits and serve settings,
//!   the state directory, the lock file's path) is not changed; each such difference is
//!   named in the `reload` record's `restart` and in the log.
//!
//! The server face then tells clients what changed (list-changed notices:
//! [`GatewayBackend::reloaded`](crate::GatewayBackend::reloaded)).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, PoisonError};

use wasmgate_adapter::Supervised;
use wasmgate_audit::{Entry, Event};
use wasmgate_core::Naming;
use wasmgate_policy::{Lock, Policy, ProviderPolicy};

use crate::config::Config;
use crate::error::StartError;
use crate::gateway::{Gateway, Running};
use crate::providers::refuse_collisions;

/// A reload that applied.
#[derive(Debug, Clone, Default)]
pub struct Reloaded {
    /// What changed that applies only when the gateway starts again.
    pub restart: Vec<String>,
    /// The providers started (added, or changed and started anew).
    pub started: Vec<String>,
    /// The providers stopped (removed, or changed and replaced).
    pub stopped: Vec<String>,
    /// The MCP servers among those started, for the server face to follow.
    pub servers: Vec<Arc<Supervised>>,
}

impl Gateway {
    /// Reads `wasmgate.toml` at `path` (and the policy and lock it names) again, puts
    /// the new rules in place, and starts and stops providers as the file now says;
    /// see the module docs.
    ///
    /// # Errors
    ///
    /// A [`StartError`], why the reload was refused (the rules and providers in force
    /// stay).
    pub async fn reload(&self, path: &Path) -> Result<Reloaded, StartError> {
        self.reload_anew(path, None).await
    }

    /// [`reload`](Self::reload), with the provider `anew` started anew even if its
    /// settings did not change (its code was approved since it was refused).
    pub(crate) async fn reload_anew(&self, path: &Path, anew: Option<&str>) -> Result<Reloaded, StartError> {
        // One at a time: each reads the providers the last one left.
        let _one = self.reloading.lock().await;
        let outcome = self.apply(path, anew).await;
        let event = match &outcome {
            Ok(r) => Event::Reload {
                refused: None,
                restart: r.restart.clone(),
                started: r.started.clone(),
                stopped: r.stopped.clone(),
            },
            Err(error) => Event::Reload {
                refused: Some(error.one_line()),
                restart: Vec::new(),
                started: Vec::new(),
                stopped: Vec::new(),
            },
        };
        let counted = if outcome.is_ok() { "applied" } else { "refused" };
        metrics::counter!("wasmgate_reloads_total", "outcome" => counted).increment(1);
        match &outcome {
            Ok(r) if r.restart.is_empty() => tracing::info!(
                started = %r.started.join(", "),
                stopped = %r.stopped.join(", "),
                "reloaded the rules"
            ),
            Ok(r) => tracing::warn!(
                started = %r.started.join(", "),
                stopped = %r.stopped.join(", "),
                restart = %r.restart.join("; "),
                "reloaded the rules; some changes apply only when the gateway starts again"
            ),
            Err(error) => tracing::error!(error = %error.one_line(), "reload refused: the rules in force stay"),
        }
        if let Err(e) = self.guard.audit().record_later([Entry::log(event)]) {
            tracing::error!(error = %e, "the reload could not be recorded in the audit log");
        }
        outcome
    }

    async fn apply(&self, path: &Path, anew: Option<&str>) -> Result<Reloaded, StartError> {
        let (config, policy, lock) = load(path, &self.config.lock)?;
        let running_policy = self.guard.policy();
        // Which providers to start and stop, and those that run on. Reloads run one at a
        // time, so what is read here is still so when the new ones have started.
        let (to_start, to_stop, kept_sources, kept_mcp, kept_infos) = {
            let running = self.running.read().unwrap_or_else(PoisonError::into_inner);
            let mut to_start = BTreeSet::new();
            let mut to_stop = BTreeSet::new();
            for (name, provider) in &config.providers {
                let changed = anew == Some(name.as_str())
                    || running.configs.get(name).is_none_or(|old| {
                        old != provider || start_rules_differ(running_policy.provider(name), policy.provider(name))
                    });
                if changed {
                    to_start.insert(name.clone());
                    if running.configs.contains_key(name) {
                        to_stop.insert(name.clone());
                    }
                }
            }
            to_stop.extend(running.configs.keys().filter(|name| !config.providers.contains_key(*name)).cloned());
            let kept = |name: &str| !to_stop.contains(name);
            let kept_sources: Vec<_> = running.sources.iter().filter(|s| kept(s.provider())).cloned().collect();
            let kept_mcp: Vec<_> = running.mcp.iter().filter(|s| kept(s.name())).cloned().collect();
            let kept_infos: Vec<_> = running.providers.iter().filter(|p| kept(&p.name)).cloned().collect();
            (to_start, to_stop, kept_sources, kept_mcp, kept_infos)
        };
        let started = self.starter.start(&config, to_start.iter(), &policy, &lock).await?;
        let sources: Vec<_> = kept_sources.into_iter().chain(started.sources.iter().cloned()).collect();
        let mcp: Vec<_> = kept_mcp.into_iter().chain(started.mcp.iter().cloned()).collect();
        if config.providers.values().any(|p| p.naming() == Naming::AsIs)
            && let Err(e) = refuse_collisions(&sources, &mcp).await
        {
            started.close().await;
            return Err(e);
        }
        let restart = restart_needed(&self.config, &config);
        self.guard.reload(policy, lock);
        for name in &to_stop {
            self.guard.set_screeners(name, Vec::new());
        }
        for (name, screens) in &started.screens {
            self.guard.set_screeners(name, screens.clone());
        }
        let providers = config
            .providers
            .keys()
            .filter_map(|name| started.providers.iter().chain(kept_infos.iter()).find(|p| &p.name == name).cloned())
            .collect();
        let stopped: Vec<Arc<Supervised>> = {
            let mut running = self.running.write().unwrap_or_else(PoisonError::into_inner);
            let stopped = running.mcp.iter().filter(|s| to_stop.contains(s.name())).cloned().collect();
            *running = Running { providers, sources: sources.clone(), mcp, configs: config.providers.clone() };
            stopped
        };
        self.toolset.set_sources(sources);
        for server in stopped {
            server.close().await;
        }
        Ok(Reloaded {
            restart,
            started: to_start.into_iter().collect(),
            stopped: to_stop.into_iter().collect(),
            servers: started.mcp.clone(),
        })
    }
}

/// Whether a provider's policy differs in what is read when it starts (or it is in one
/// policy only).
fn start_rules_differ(old: Option<&ProviderPolicy>, new: Option<&ProviderPolicy>) -> bool {
    match (old, new) {
        (Some(old), Some(new)) => !old.start_settings_changed(new).is_empty(),
        (old, new) => old.is_some() != new.is_some(),
    }
}

/// The configuration at `path`, its policy, and the lock at `lock` (the running one:
/// approvals are saved there), or why not.
fn load(path: &Path, lock: &Path) -> Result<(Config, Policy, Lock), StartError> {
    let config = Config::load(path)?;
    let policy = Policy::load(&config.policy)?;
    let lock = if lock.exists() { Lock::load(lock)? } else { Lock::default() };
    Ok((config, policy, lock))
}

/// What differs between the running configuration and the new one among the settings
/// the gateway reads only once.
fn restart_needed(running: &Config, new: &Config) -> Vec<String> {
    let sections = [
        ("audit", running.audit != new.audit),
        ("limits", running.limits != new.limits),
        ("sandbox", running.sandbox != new.sandbox),
        ("serve", running.serve != new.serve),
        ("state_dir", running.state_dir != new.state_dir),
        ("cluster", running.cluster != new.cluster),
        ("lock (its path: the running lock file was read)", running.lock != new.lock),
    ];
    sections.iter().filter(|(_, changed)| *changed).map(|(name, _)| format!("{name} changed")).collect()
}
