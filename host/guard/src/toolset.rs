//! [`GuardedToolset`]: the tools of every source, admitted by the guard, fresh for each
//! model turn. A new or changed definition is withheld (and the change recorded once in
//! the audit log) until someone reviews it.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use wasmgate_adapter::{Offer, ToolSource};
use wasmgate_agent::{BoxFuture, Tool, Toolset};
use wasmgate_audit::{Entry, Event};
use wasmgate_policy::{ReviewState, definition_hash};

use crate::guard::{Admission, Guard};

/// A tool that is not offered, and why.
#[derive(Debug, Clone)]
pub struct WithheldTool {
    /// The offer as the provider made it.
    pub offer: Offer,
    /// New, or changed (with what changed).
    pub state: ReviewState,
}

/// Every source's reviewed tools, guarded.
#[derive(Debug)]
pub struct GuardedToolset {
    guard: Arc<Guard>,
    sources: Vec<Arc<dyn ToolSource>>,
    withheld: Mutex<Vec<WithheldTool>>,
    /// The hashes of the last [`REPORTED_PER_TOOL`] definitions reported per (provider,
    /// tool), so a change is recorded once, and a tool that changes at every listing
    /// costs a bounded amount of memory.
    reported: Mutex<HashMap<(String, String), VecDeque<String>>>,
}

/// Definitions of one tool remembered as reported: a provider flipping between a few
/// is recorded once for each, one changing at every listing is recorded every time.
pub const REPORTED_PER_TOOL: usize = 8;

impl GuardedToolset {
    /// The tools of `sources`, admitted by `guard`.
    #[must_use]
    pub fn new(guard: Arc<Guard>, sources: Vec<Arc<dyn ToolSource>>) -> Self {
        Self { guard, sources, withheld: Mutex::default(), reported: Mutex::default() }
    }

    /// The tools withheld at the last look, for review.
    #[must_use]
    pub fn withheld(&self) -> Vec<WithheldTool> {
        self.withheld.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Asks every source again, all at once (so one slow provider delays the look by
    /// its own wait only), and admits what they offer.
    pub async fn refresh(&self) -> Vec<Tool> {
        let mut offered = Vec::new();
        let mut withheld = Vec::new();
        let answers = futures_util::future::join_all(self.sources.iter().map(|source| source.offers())).await;
        for (source, (offers, trouble)) in self.sources.iter().zip(answers) {
            if let Some(why) = trouble {
                tracing::warn!(provider = source.provider(), %why, "offering the last known tools");
            }
            for offer in offers {
                match self.guard.admit(offer.clone()) {
                    Admission::Offered(tool) => offered.push(tool),
                    Admission::Withheld(state) => {
                        self.report(&offer, &state);
                        withheld.push(WithheldTool { offer, state });
                    }
                }
            }
        }
        if let Ok(mut slot) = self.withheld.lock() {
            *slot = withheld;
        }
        offered
    }

    fn report(&self, offer: &Offer, state: &ReviewState) {
        let hash = definition_hash(&offer.definition);
        let first_time = self.reported.lock().is_ok_and(|mut reported| {
            let seen = reported.entry((offer.provider.clone(), offer.name.clone())).or_default();
            if seen.contains(&hash) {
                return false;
            }
            if seen.len() == REPORTED_PER_TOOL {
                seen.pop_front();
            }
            seen.push_back(hash);
            true
        });
        if !first_time {
            return;
        }
        let message = match state {
            ReviewState::Changed { diff } => {
                format!("tool {} changed since it was reviewed; withheld until reviewed again: {diff}", offer.name)
            }
            _ => format!("tool {} has not been reviewed; withheld until reviewed", offer.name),
        };
        tracing::warn!(provider = %offer.provider, tool = %offer.name, "{message}");
        let mut entry = Entry::log(Event::Warning { message });
        entry.provider = Some(offer.provider.clone());
        entry.tool = Some(offer.name.clone());
        if let Err(e) = self.guard.audit().record_later([entry]) {
            tracing::error!(error = %e, "audit log cannot be written");
        }
    }
}

impl Toolset for GuardedToolset {
    fn current(&self) -> BoxFuture<'_, Vec<Tool>> {
        Box::pin(self.refresh())
    }
}
