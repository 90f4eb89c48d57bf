//! What `wasmgate tools` shows: every offered tool and whether the agent gets it.

use wasmgate_guard::Admission;
use wasmgate_policy::{ReviewState, Verdict};

use crate::gateway::Gateway;

/// Where a tool stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolState {
    /// Reviewed; the policy allows it.
    Allowed,
    /// Reviewed; each call needs approval.
    Ask,
    /// Reviewed; the policy denies it (it is offered, and every call is refused).
    Denied,
    /// Never reviewed: withheld.
    Unreviewed,
    /// Changed since it was reviewed: withheld; what changed.
    Changed(String),
    /// Reviewed, but its definition cannot be shown safely: withheld; why.
    Unusable(String),
}

impl std::fmt::Display for ToolState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Allowed => "allowed",
            Self::Ask => "ask",
            Self::Denied => "denied",
            Self::Unreviewed => "unreviewed",
            Self::Changed(_) => "changed",
            Self::Unusable(_) => "unusable",
        })
    }
}

/// One tool of one provider.
#[derive(Debug, Clone)]
pub struct ToolStatus {
    /// The provider.
    pub provider: String,
    /// The provider's own name for it.
    pub tool: String,
    /// The name the agent sees.
    pub exposed: String,
    /// Where it stands.
    pub state: ToolState,
    /// Why it is a sink for the data-flow rules (it sends, writes, pays, shares or
    /// fetches a URL), if it is.
    pub sink: Option<String>,
}

impl Gateway {
    /// Every tool every provider offers now, with its state.
    pub async fn tool_statuses(&self) -> Vec<ToolStatus> {
        let mut all = Vec::new();
        for source in self.sources() {
            let (offers, _) = source.offers().await;
            for offer in offers {
                let exposed = offer.tool.spec.name.clone();
                let (provider, tool) = (offer.provider.clone(), offer.name.clone());
                let sink = self.guard.policy().sink_reason(&provider, &tool, &offer.definition);
                let state = match self.guard.admit(offer) {
                    Admission::Withheld(ReviewState::Changed { diff }) => ToolState::Changed(diff.to_string()),
                    Admission::Withheld(_) => ToolState::Unreviewed,
                    Admission::Unusable(why) => ToolState::Unusable(why),
                    Admission::Offered(_) => match self.guard.policy().static_verdict(&provider, &tool) {
                        Verdict::Allow => ToolState::Allowed,
                        Verdict::Ask => ToolState::Ask,
                        Verdict::Deny => ToolState::Denied,
                    },
                };
                all.push(ToolStatus { provider, tool, exposed, state, sink });
            }
        }
        all
    }
}
