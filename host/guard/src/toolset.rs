//! [`GuardedToolset`]: the tools of every source, admitted by the guard, fresh for each
//! model turn. A new or changed definition is withheld (and the change recorded once in
//! the audit log) until someone reviews it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use wasmgate_audit::{Entry, Event};
use wasmgate_core::{BoxFuture, Offer, Tool, ToolSource, Toolset};
use wasmgate_policy::{ReviewState, definition_hash};

use crate::guard::{Admission, Guard};

/// A tool that is not offered, and why.
#[derive(Debug, Clone)]
pub struct WithheldTool {
    /// The offer as the provider made it.
    pub offer: Offer,
    /// New, changed (with what changed), or reviewed.
    pub state: ReviewState,
    /// Set when the definition is reviewed but cannot be shown safely: why (review
    /// cannot change that; the provider must).
    pub unusable: Option<String>,
}

/// Every source's reviewed tools, guarded.
#[derive(Debug)]
pub struct GuardedToolset {
    guard: Arc<Guard>,
    sources: RwLock<Vec<Arc<dyn ToolSource>>>,
    withheld: Mutex<Vec<WithheldTool>>,
    /// Per provider, the hashes of the last [`REPORTED_PER_TOOL`] definitions reported
    /// per tool, so a change is recorded once, and a tool that changes at every listing
    /// costs a bounded amount of memory.
    reported: Mutex<HashMap<String, Reported>>,
}

/// What was recorded of one provider's withheld tools.
#[derive(Debug, Default)]
struct Reported {
    /// At most [`REPORTED_TOOLS_PER_PROVIDER`] tools.
    tools: HashMap<String, VecDeque<String>>,
    /// Whether the one record saying that there were more has been written.
    overflowed: bool,
}

/// Definitions of one tool remembered as reported: a provider flipping between a few
/// is recorded once for each, one changing at every listing is recorded every time.
pub const REPORTED_PER_TOOL: usize = 8;

/// Withheld tools of one provider recorded one by one. Past them, one record says that
/// there are more, and the rest are withheld without a record each: a provider that
/// lists new names at every look cannot grow the gateway's memory or its audit log
/// without bound.
pub const REPORTED_TOOLS_PER_PROVIDER: usize = 1024;

impl GuardedToolset {
    /// The tools of `sources`, admitted by `guard`.
    #[must_use]
    pub fn new(guard: Arc<Guard>, sources: Vec<Arc<dyn ToolSource>>) -> Self {
        Self { guard, sources: RwLock::new(sources), withheld: Mutex::default(), reported: Mutex::default() }
    }

    /// Asks `sources` from now on, in place of those it had (a reload that started or
    /// stopped providers).
    pub fn set_sources(&self, sources: Vec<Arc<dyn ToolSource>>) {
        *self.sources.write().unwrap_or_else(PoisonError::into_inner) = sources;
    }

    fn sources(&self) -> Vec<Arc<dyn ToolSource>> {
        self.sources.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The tools withheld at the last look, for review.
    #[must_use]
    pub fn withheld(&self) -> Vec<WithheldTool> {
        self.withheld.lock().map(|w| w.clone()).unwrap_or_default()
    }

    /// Asks every source again, all at once (so one slow provider delays the look by
    /// its own wait only), and admits what they offer.
    pub async fn refresh(&self) -> Vec<Tool> {
        self.refresh_offers().await.into_iter().map(|offer| offer.tool).collect()
    }

    /// The same, each admitted tool (guarded) in the offer of its provider and name.
    pub async fn refresh_offers(&self) -> Vec<Offer> {
        let mut offered = Vec::new();
        let mut withheld = Vec::new();
        let sources = self.sources();
        let answers = futures_util::future::join_all(sources.iter().map(|source| source.offers())).await;
        for (source, (offers, trouble)) in sources.iter().zip(answers) {
            if let Some(why) = trouble {
                tracing::warn!(provider = source.provider(), %why, "offering the last known tools");
            }
            for offer in offers {
                match self.guard.admit(offer.clone()) {
                    Admission::Offered(tool) => offered.push((offer, tool)),
                    Admission::Withheld(state) => {
                        self.report(&offer, Why::Review(&state));
                        withheld.push(WithheldTool { offer, state, unusable: None });
                    }
                    Admission::Unusable(why) => {
                        self.report(&offer, Why::Unusable(&why));
                        withheld.push(WithheldTool { offer, state: ReviewState::Reviewed, unusable: Some(why) });
                    }
                }
            }
        }
        // A name two providers show (possible when one shows its names as is) is
        // withheld for both: neither may shadow the other.
        let mut counts = HashMap::<&str, usize>::new();
        for (_, tool) in &offered {
            *counts.entry(tool.spec.name.as_str()).or_default() += 1;
        }
        let shared: HashSet<String> =
            counts.into_iter().filter(|(_, n)| *n > 1).map(|(name, _)| name.to_owned()).collect();
        let mut tools = Vec::with_capacity(offered.len());
        for (mut offer, tool) in offered {
            if shared.contains(&tool.spec.name) {
                let why = format!("another provider offers a tool shown as {:?}", tool.spec.name);
                self.report(&offer, Why::Unusable(&why));
                withheld.push(WithheldTool { offer, state: ReviewState::Reviewed, unusable: Some(why) });
            } else {
                offer.tool = tool;
                tools.push(offer);
            }
        }
        if let Ok(mut slot) = self.withheld.lock() {
            *slot = withheld;
        }
        tools
    }

    fn report(&self, offer: &Offer, why: Why<'_>) {
        let hash = definition_hash(&offer.definition);
        let news = self.reported.lock().map_or(News::Known, |mut reported| {
            let provider = reported.entry(offer.provider.clone()).or_default();
            if !provider.tools.contains_key(&offer.name) && provider.tools.len() >= REPORTED_TOOLS_PER_PROVIDER {
                return if std::mem::replace(&mut provider.overflowed, true) { News::Known } else { News::TooMany };
            }
            let seen = provider.tools.entry(offer.name.clone()).or_default();
            if seen.contains(&hash) {
                return News::Known;
            }
            if seen.len() == REPORTED_PER_TOOL {
                seen.pop_front();
            }
            seen.push_back(hash);
            News::Tool
        });
        let message = match (news, why) {
            (News::Known, _) => return,
            (News::TooMany, _) => format!(
                "more than {REPORTED_TOOLS_PER_PROVIDER} tools of this provider are withheld; the rest are withheld \
                 without a record each (the first of them: {})",
                offer.name
            ),
            (News::Tool, Why::Review(ReviewState::Changed { diff })) => {
                format!("tool {} changed since it was reviewed; withheld until reviewed again: {diff}", offer.name)
            }
            (News::Tool, Why::Review(_)) => {
                format!("tool {} has not been reviewed; withheld until reviewed", offer.name)
            }
            (News::Tool, Why::Unusable(why)) => {
                format!("tool {} is withheld: its definition cannot be shown safely: {why}", offer.name)
            }
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

/// Why a tool is withheld, for its record.
#[derive(Debug, Clone, Copy)]
enum Why<'a> {
    Review(&'a ReviewState),
    Unusable(&'a str),
}

/// Whether a withheld tool is news for the audit log.
enum News {
    /// Recorded before (or the bookkeeping is unavailable).
    Known,
    /// A tool, or a definition of it, not recorded before.
    Tool,
    /// The first tool past [`REPORTED_TOOLS_PER_PROVIDER`].
    TooMany,
}

impl Toolset for GuardedToolset {
    fn current(&self) -> BoxFuture<'_, Vec<Tool>> {
        Box::pin(self.refresh())
    }
}
