//! Reviewing through a running gateway ([`Gateway::reviews`], [`Gateway::decide`]):
//! what waits for review (new and changed tool definitions, new and changed code) and
//! the decisions on it, made while the gateway serves, without a restart.
//!
//! * The gateway alone writes the lock file: atomically (a new file renamed over the
//!   old), one decision at a time, from the lock it holds in memory, so two decisions
//!   never lose each other.
//! * A definition or code is approved only as it was shown: a decision names its hash,
//!   and one whose definition or code changed since is refused (`changed since it was
//!   shown`), so what a provider sends between the look and the answer is never
//!   approved unseen.
//! * Every decision, approval or refusal, is in the audit log (a `review` record) with
//!   who made it. A refused definition stays withheld; it is shown again at the next
//!   review.
//! * An approved definition is served from the next look at the tools (the server face
//!   tells clients the list changed); approved code is pinned, and a provider whose
//!   changed code kept it from starting is started, with a reload of the
//!   configuration (new code runs already, and runs on).

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wasmgate_audit::{Entry, Event};
use wasmgate_policy::{CodePin, CodeState, LockError, ReviewState, clean_schema, definition_hash, poisoned};

use crate::config::Config;
use crate::error::StartError;
use crate::gateway::Gateway;
use crate::reload::Reloaded;

/// What waits for review.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reviews {
    /// Providers whose code is new or changed since review (or cannot be read).
    pub code: Vec<CodeReview>,
    /// Tool definitions that are new or changed since review, or withheld for a reason
    /// review cannot change.
    pub definitions: Vec<DefinitionReview>,
}

/// A provider's code waiting for review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CodeReview {
    /// The provider.
    pub provider: String,
    /// What a decision names: the hash of the pins shown (absent when the code cannot be
    /// read: there is nothing to approve).
    pub hash: Option<String>,
    /// Reviewed before, and changed since (it does not run until approved); else new.
    pub changed: bool,
    /// Each file of its code by role: path, SHA-256 and size.
    pub pins: BTreeMap<String, CodePin>,
    /// What changed, one line a role, when `changed`.
    pub changes: Vec<String>,
    /// What its policy grants the code beyond its own directory.
    pub grants: Vec<String>,
    /// What it fetches at start, which no pin covers.
    pub fetches: Option<String>,
    /// Why its code cannot be read.
    pub unreadable: Option<String>,
}

/// A tool definition waiting for review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DefinitionReview {
    /// The provider.
    pub provider: String,
    /// The provider's name for the tool.
    pub tool: String,
    /// What a decision names: the hash of the reviewed fields of the definition shown.
    pub hash: String,
    /// Reviewed before and changed since; else new.
    pub changed: bool,
    /// What changed, when `changed`.
    pub diff: Option<String>,
    /// The definition as the provider sent it (untrusted text: show it escaped).
    pub definition: Value,
    /// Why the tool is a sink for the data-flow rules, if it is one.
    pub sink: Option<String>,
    /// Why it stays withheld even if approved: its input schema.
    pub schema: Option<String>,
    /// Its texts that read like instructions to the model: where, and what they say.
    pub warnings: Vec<String>,
    /// Set when it is reviewed but withheld for a reason review cannot change: why.
    pub unusable: Option<String>,
}

/// One reviewer's decision on a definition (`tool` set) or on a provider's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The provider.
    pub provider: String,
    /// The tool, for a definition; absent for code.
    #[serde(default)]
    pub tool: Option<String>,
    /// The hash the review showed.
    pub hash: String,
    /// Approve, or refuse.
    pub approve: bool,
}

/// What a decision did.
#[derive(Debug, Default)]
pub struct Decided {
    /// A reload that approved code caused (its provider started), for the server face.
    pub reloaded: Option<Reloaded>,
}

/// Why a decision was not taken.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// Nothing of that name waits for review.
    #[error("{0} does not wait for review (approved already, or not offered now); look again")]
    NotPending(String),
    /// What was shown changed since.
    #[error("{0} changed since it was shown; look again and decide on what it is now")]
    Changed(String),
    /// The lock file cannot be written: nothing changed.
    #[error(transparent)]
    Lock(#[from] LockError),
    /// The configuration cannot be read, or the provider approved cannot start.
    #[error(transparent)]
    Start(#[from] StartError),
    /// The decision cannot be recorded in the audit log: nothing changed.
    #[error("the audit log cannot be written, so nothing was decided: {0}")]
    Audit(String),
}

impl Gateway {
    /// What waits for review now: every provider's code against the lock, with the
    /// configuration at `path` (the lock file stays the one the gateway started with),
    /// and the definitions withheld at a fresh look at every provider's tools.
    ///
    /// # Errors
    ///
    /// The configuration or the policy cannot be read.
    pub async fn reviews(&self, path: &Path) -> Result<Reviews, StartError> {
        let code = self.code_reviews(path)?;
        self.toolset.refresh().await;
        let policy = self.guard.policy();
        let definitions = self
            .toolset
            .withheld()
            .into_iter()
            .map(|item| {
                let offer = &item.offer;
                let definition = &offer.definition;
                let (changed, diff) = match &item.state {
                    ReviewState::Changed { diff } => (true, Some(diff.to_string())),
                    _ => (false, None),
                };
                DefinitionReview {
                    provider: offer.provider.clone(),
                    tool: offer.name.clone(),
                    hash: definition_hash(definition),
                    changed,
                    diff,
                    definition: definition.clone(),
                    sink: policy.sink_reason(&offer.provider, &offer.name, definition),
                    schema: definition
                        .get("inputSchema")
                        .map(clean_schema)
                        .and_then(Result::err)
                        .map(|e| e.to_string()),
                    warnings: poisoned(definition)
                        .into_iter()
                        .map(|(at, found)| format!("{at}: {}", found.join("; ")))
                        .collect(),
                    unusable: item.unusable,
                }
            })
            .collect();
        Ok(Reviews { code, definitions })
    }

    fn code_reviews(&self, path: &Path) -> Result<Vec<CodeReview>, StartError> {
        let mut config = Config::load(path)?;
        config.lock.clone_from(&self.config.lock);
        code_reviews(&config)
    }

    /// Takes `decision`, made by `reviewer`, on what waits for review now (the
    /// configuration at `path`): pins the definition or code approved in the lock file,
    /// or leaves a refused one withheld; either way audited. Approved code that had
    /// changed since review has its provider started, with a reload of `path`.
    ///
    /// # Errors
    ///
    /// A [`ReviewError`]: nothing was decided.
    pub async fn decide(&self, path: &Path, decision: &Decision, reviewer: &str) -> Result<Decided, ReviewError> {
        // One decision at a time, and none during a reload: each starts from the lock
        // the last one left.
        let one = self.reloading.lock().await;
        let subject = match &decision.tool {
            Some(tool) => format!("the definition of {tool} of provider {}", decision.provider),
            None => format!("the code of provider {}", decision.provider),
        };
        let record = |approved: bool| {
            let event = Event::Review {
                subject: if decision.tool.is_some() { "definition" } else { "code" }.to_owned(),
                hash: decision.hash.clone(),
                approved,
                reviewer: reviewer.to_owned(),
            };
            let mut entry = Entry::log(event);
            entry.provider = Some(decision.provider.clone());
            entry.tool.clone_from(&decision.tool);
            entry
        };
        match &decision.tool {
            Some(tool) => {
                // What the tool's provider offers now.
                self.toolset.refresh().await;
                let withheld = self.toolset.withheld();
                let offer = withheld
                    .iter()
                    .find(|w| w.offer.provider == decision.provider && w.offer.name == *tool && w.unusable.is_none())
                    .map(|w| &w.offer)
                    .ok_or_else(|| ReviewError::NotPending(subject.clone()))?;
                if definition_hash(&offer.definition) != decision.hash {
                    return Err(ReviewError::Changed(subject));
                }
                self.audited(record(decision.approve)).await?;
                if decision.approve {
                    self.guard.approve_definition(offer).map_err(|e| self.unsaved(&subject, e))?;
                }
                Ok(Decided::default())
            }
            None => {
                let code = self.code_reviews(path)?;
                let pending = code
                    .iter()
                    .find(|c| c.provider == decision.provider)
                    .ok_or_else(|| ReviewError::NotPending(subject.clone()))?;
                if pending.hash.as_deref() != Some(decision.hash.as_str()) {
                    return Err(ReviewError::Changed(subject));
                }
                self.audited(record(decision.approve)).await?;
                if !decision.approve {
                    return Ok(Decided::default());
                }
                self.guard
                    .approve_code(&decision.provider, pending.pins.clone())
                    .map_err(|e| self.unsaved(&subject, e))?;
                // New code runs already; changed code kept its provider from starting.
                if !pending.changed {
                    return Ok(Decided::default());
                }
                drop(one);
                let reloaded = self.reload_anew(path, Some(&decision.provider)).await?;
                Ok(Decided { reloaded: Some(reloaded) })
            }
        }
    }

    /// Writes `entry` durably before the decision takes effect: a decision the audit
    /// log cannot hold is not taken.
    async fn audited(&self, entry: Entry) -> Result<(), ReviewError> {
        let pending = self.guard.audit().submit([entry]).map_err(|e| ReviewError::Audit(e.to_string()))?;
        pending.await.map(drop).map_err(|e| ReviewError::Audit(e.to_string()))
    }
}

impl Gateway {
    /// `error`, after a warning in the audit log that the approval of `subject` it
    /// holds did not take effect.
    fn unsaved(&self, subject: &str, error: LockError) -> ReviewError {
        let message = format!("the approval of {subject} above did not take effect: {error}");
        if let Err(e) = self.guard.audit().record_later([Entry::log(Event::Warning { message })]) {
            tracing::error!(error = %e, "a failed approval could not be recorded in the audit log");
        }
        ReviewError::Lock(error)
    }
}

/// Every provider's code of `config` that waits for review: new, changed since
/// review, or unreadable.
///
/// # Errors
///
/// The policy or the lock file cannot be read.
pub fn code_reviews(config: &Config) -> Result<Vec<CodeReview>, StartError> {
    Ok(crate::code::review_code(config)?
        .into_iter()
        .filter(|review| review.state != CodeState::Reviewed || review.code.is_err())
        .map(|review| {
            let (pins, fetches, unreadable) = match review.code {
                Ok(code) => (code.pins, code.fetches, None),
                Err(why) => (BTreeMap::new(), None, Some(wasmgate_core::report(&why))),
            };
            let changes = match &review.state {
                CodeState::Changed(changes) => changes.iter().map(ToString::to_string).collect(),
                _ => Vec::new(),
            };
            CodeReview {
                provider: review.provider,
                hash: unreadable.is_none().then(|| pins_hash(&pins)),
                changed: matches!(review.state, CodeState::Changed(_)),
                pins,
                changes,
                grants: review.grants,
                fetches,
                unreadable,
            }
        })
        .collect())
}

/// What a decision on code names: the SHA-256 of its pins, as JSON in role order.
fn pins_hash(pins: &BTreeMap<String, CodePin>) -> String {
    use sha2::Digest as _;
    let json = serde_json::to_string(pins).unwrap_or_default();
    hex::encode(sha2::Sha256::digest(json.as_bytes()))
}
