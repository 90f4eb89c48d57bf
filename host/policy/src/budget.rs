//! [`Budget`]: a rate limit or call budget of the policy (`[[budgets]]`), as a token
//! bucket: `burst` calls at once, refilled at `rate` calls `per` second, minute, hour or
//! day. Each caller has its own bucket (and with `each = "tool"`, one per tool). The
//! buckets themselves live with whoever counts the calls (the guard).

use serde::Deserialize;
use serde_json::{Map, Value};
use std::time::Duration;

use crate::callers::CallerMatch;
use crate::glob::Glob;

/// The period a budget's `rate` is counted over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Calls per second.
    Second,
    /// Calls per minute (the default).
    Minute,
    /// Calls per hour.
    Hour,
    /// Calls per day: a daily call budget.
    Day,
}

impl Per {
    /// Its length.
    #[must_use]
    pub fn duration(self) -> Duration {
        Duration::from_secs(match self {
            Per::Second => 1,
            Per::Minute => 60,
            Per::Hour => 3600,
            Per::Day => 86_400,
        })
    }

    /// Its name, as written in the policy.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Per::Second => "second",
            Per::Minute => "minute",
            Per::Hour => "hour",
            Per::Day => "day",
        }
    }
}

/// What one bucket counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Each {
    /// One bucket per caller, for every tool the budget covers (the default).
    Caller,
    /// One bucket per caller and tool.
    Tool,
}

/// One `[[budgets]]` entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Where it was written (`budgets[0]`), for reasons and logs.
    pub name: String,
    /// The provider it covers (none: every provider).
    pub provider: Option<String>,
    /// The provider's own tool names it covers (none: every tool).
    pub tools: Option<Glob>,
    /// The callers it covers.
    pub callers: CallerMatch,
    /// Calls refilled per period.
    pub rate: u32,
    /// The period.
    pub per: Per,
    /// The most calls at once (a full bucket).
    pub burst: u32,
    /// What one bucket counts.
    pub each: Each,
    /// The reviewer's note, for humans only.
    pub note: Option<String>,
    /// [`fingerprint`](Self::fingerprint), made once when the policy is read: every call
    /// a budget covers looks its buckets up by it.
    fingerprint: String,
}

impl Budget {
    /// A budget `name` with these terms.
    pub(crate) fn new(
        name: String,
        provider: Option<String>,
        tools: Option<Glob>,
        callers: CallerMatch,
        (rate, per, burst): (u32, Per, u32),
        each: Each,
        note: Option<String>,
    ) -> Self {
        Budget { name, provider, tools, callers, rate, per, burst, each, note, fingerprint: String::new() }
            .fingerprinted()
    }

    /// Whether it covers a call of `provider`'s `tool` by the caller with `facts`.
    #[must_use]
    pub fn covers(&self, provider: &str, tool: &str, facts: Option<&Map<String, Value>>) -> bool {
        self.provider.as_deref().is_none_or(|p| p == provider)
            && self.tools.as_ref().is_none_or(|g| g.matches(tool))
            && self.callers.matches(facts)
    }

    /// The time one call's token takes to come back.
    #[must_use]
    pub fn interval(&self) -> Duration {
        self.per.duration() / self.rate.max(1)
    }

    /// What tells one budget from another across a reload: a budget written the same
    /// way keeps its buckets (and what they hold) when the policy is read again.
    #[must_use]
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// Its fingerprint, from what it says (everything but its name and note).
    fn fingerprinted(mut self) -> Self {
        self.fingerprint = format!(
            "{:?}|{:?}|{}|{}/{}|{}|{:?}",
            self.provider,
            self.tools.as_ref().map(Glob::as_str),
            self.callers.describe(),
            self.rate,
            self.per.as_str(),
            self.burst,
            self.each
        );
        self
    }

    /// A short description: `budgets[0] (10 calls per minute)`.
    #[must_use]
    pub fn describe(&self) -> String {
        format!("{} ({} calls per {})", self.name, self.rate, self.per.as_str())
    }
}
