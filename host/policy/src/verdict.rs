//! What the policy says about one call: [`Verdict`] and the [`Decision`] that carries its reason.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Whether a call may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Ask an approver first; deny when nobody can answer.
    Ask,
    /// Do not run it; the reason goes back to the model as a tool error.
    Deny,
}

impl Verdict {
    /// The word used in policy files and audit records.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Allow => "allow",
            Verdict::Ask => "ask",
            Verdict::Deny => "deny",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The policy's answer for one call. `reason` is short, names the rule that decided, and is safe
/// to show the model (it contains only names and values from the policy file, never host paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allow, ask or deny.
    pub verdict: Verdict,
    /// Why, in one sentence.
    pub reason: String,
}

impl Decision {
    pub(crate) fn new(verdict: Verdict, reason: impl Into<String>) -> Self {
        Decision { verdict, reason: reason.into() }
    }
}
