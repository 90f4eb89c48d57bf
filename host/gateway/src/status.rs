//! What `wasmgate tools` shows: every offered tool and whether the agent gets it.

use wasmgate_policy::{ReviewState, Verdict};

use crate::start::Gateway;

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
}

impl std::fmt::Display for ToolState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Allowed => "allowed",
            Self::Ask => "ask",
            Self::Denied => "denied",
            Self::Unreviewed => "unreviewed",
            Self::Changed(_) => "changed",
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
}

impl Gateway {
    /// Every tool every provider offers now, with its state.
    pub async fn tool_statuses(&self) -> Vec<ToolStatus> {
        let mut all = Vec::new();
        for source in self.sources() {
            let (offers, _) = source.offers().await;
            for offer in offers {
                let state = match self.guard.review_state(&offer) {
                    ReviewState::New => ToolState::Unreviewed,
                    ReviewState::Changed { diff } => ToolState::Changed(diff.to_string()),
                    ReviewState::Reviewed => match self.guard.policy().static_verdict(&offer.provider, &offer.name) {
                        Verdict::Allow => ToolState::Allowed,
                        Verdict::Ask => ToolState::Ask,
                        Verdict::Deny => ToolState::Denied,
                    },
                };
                let exposed = offer.tool.spec.name.clone();
                all.push(ToolStatus { provider: offer.provider, tool: offer.name, exposed, state });
            }
        }
        all
    }
}
