//! Reading the rules again while running ([`Gateway::reload`]): `wasmgate.toml`, the
//! policy and the lock file, on SIGHUP or `wasmgate reload`.
//!
//! * Files that do not load are refused as a whole, and the rules in force stay: the
//!   error is logged and audited (a `reload` record with `refused`).
//! * Otherwise the new policy and lock apply to every call that starts from now on
//!   (verdicts, constraints, caller rules, budgets, resource and prompt globs,
//!   sampling, roots, injection and secrets actions, and which definitions are
//!   reviewed), while a call in flight finishes under the rules it started with.
//! * What is read only when a provider starts (the providers of `wasmgate.toml`, the
//!   audit, sandbox, limits and serve settings, and a provider's sandbox limits,
//!   formatters, screens, confinement and reach in the policy) is not changed; each
//!   such difference is named in the `reload` record's `restart` and in the log.
//!
//! The server face then tells clients what changed (list-changed notices:
//! [`GatewayBackend::rules_changed`](crate::GatewayBackend::rules_changed)).

use std::path::Path;

use wasmgate_audit::{Entry, Event};
use wasmgate_policy::{Lock, Policy};

use crate::config::Config;
use crate::start::Gateway;

/// A reload that applied.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// What changed that applies only when the gateway starts again.
    pub restart: Vec<String>,
}

impl Gateway {
    /// Reads `wasmgate.toml` at `path` (and the policy and lock it names) again, and
    /// puts the new rules in place; see the module docs.
    ///
    /// # Errors
    ///
    /// Why the files were refused (the rules in force stay).
    pub fn reload(&self, path: &Path) -> Result<Reloaded, String> {
        let loaded = load(path, &self.config.lock);
        let (outcome, event) = match loaded {
            Ok((config, policy, lock)) => {
                let restart = restart_needed(&self.config, &config, &self.guard.policy(), &policy);
                self.guard.reload(policy, lock);
                let event = Event::Reload { refused: None, restart: restart.clone() };
                (Ok(Reloaded { restart }), event)
            }
            Err(why) => {
                let event = Event::Reload { refused: Some(why.clone()), restart: Vec::new() };
                (Err(why), event)
            }
        };
        let counted = if outcome.is_ok() { "applied" } else { "refused" };
        metrics::counter!("wasmgate_reloads_total", "outcome" => counted).increment(1);
        match &outcome {
            Ok(reloaded) if reloaded.restart.is_empty() => tracing::info!("reloaded the rules"),
            Ok(reloaded) => tracing::warn!(
                restart = %reloaded.restart.join("; "),
                "reloaded the rules; some changes apply only when the gateway starts again"
            ),
            Err(why) => tracing::error!(error = %why, "reload refused: the rules in force stay"),
        }
        if let Err(e) = self.guard.audit().record_later([Entry::log(event)]) {
            tracing::error!(error = %e, "the reload could not be recorded in the audit log");
        }
        outcome
    }
}

/// The configuration at `path`, its policy, and the lock at `lock` (the running one:
/// approvals are saved there), or why not.
fn load(path: &Path, lock: &Path) -> Result<(Config, Policy, Lock), String> {
    let config = Config::load(path).map_err(|e| e.to_string())?;
    let policy = Policy::load(&config.policy).map_err(|e| e.to_string())?;
    let lock = if lock.exists() { Lock::load(lock).map_err(|e| e.to_string())? } else { Lock::default() };
    Ok((config, policy, lock))
}

/// What differs between the running configuration and policy and the new ones, among
/// the settings read only at start.
fn restart_needed(running: &Config, new: &Config, policy: &Policy, next: &Policy) -> Vec<String> {
    let mut restart = Vec::new();
    for (name, provider) in &new.providers {
        match running.providers.get(name) {
            None => restart.push(format!("provider {name} is new")),
            Some(old) if old != provider => restart.push(format!("provider {name} changed in {}", new.path.display())),
            Some(_) => {}
        }
    }
    for name in running.providers.keys().filter(|name| !new.providers.contains_key(*name)) {
        restart.push(format!("provider {name} was removed"));
    }
    let sections = [
        ("audit", running.audit != new.audit),
        ("limits", running.limits != new.limits),
        ("sandbox", running.sandbox != new.sandbox),
        ("serve", running.serve != new.serve),
        ("state_dir", running.state_dir != new.state_dir),
        ("lock (its path: the running lock file was read)", running.lock != new.lock),
    ];
    restart.extend(sections.iter().filter(|(_, changed)| *changed).map(|(name, _)| format!("{name} changed")));
    for (name, rules) in next.providers() {
        if let Some(old) = policy.provider(name) {
            let changed = old.start_settings_changed(rules);
            if !changed.is_empty() {
                restart.push(format!("the policy of provider {name} changed {}", changed.join(", ")));
            }
        }
    }
    restart
}
