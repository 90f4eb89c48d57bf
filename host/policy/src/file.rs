//! The policy file as written: serde structs that mirror the TOML one to one and reject unknown
//! keys. [`crate::policy`] validates them and builds the [`crate::Policy`] that the host uses.

use crate::provider::{ConfinementLevel, InjectionAction};
use crate::verdict::Verdict;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use std::collections::BTreeMap;
use std::fmt;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPolicy {
    #[serde(default)]
    pub providers: BTreeMap<Spanned<String>, RawProvider>,
    #[serde(default)]
    pub budgets: Vec<Spanned<RawBudget>>,
    pub flow: Option<Spanned<RawFlow>>,
    pub approvals: Option<Spanned<RawApprovals>>,
    pub console: Option<Spanned<RawConsole>>,
}

/// The `[console]` table: who may use the web console, as caller matches.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConsole {
    #[serde(default)]
    pub reviewers: Vec<Spanned<RawCallerMatch>>,
    #[serde(default)]
    pub admins: Vec<Spanned<RawCallerMatch>>,
}

/// Who a `[console]` entry is for: at least one key (checked when the policy is built).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCallerMatch {
    #[serde(default)]
    pub subjects: Vec<Spanned<String>>,
    #[serde(default)]
    pub groups: Vec<Spanned<String>>,
    #[serde(default)]
    pub claims: BTreeMap<String, Spanned<toml::Value>>,
}

/// The `[approvals]` table: how asks routed to the gateway's reviewers wait.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawApprovals {
    pub deadline_seconds: Option<u64>,
}

/// A `flow` table, at any scope: the policy's, a provider's, a tool's. Which keys a scope
/// may have is checked when the policy is built.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFlow {
    pub flagged: Option<crate::flow::FlowAction>,
    pub prose: Option<crate::flow::FlowAction>,
    pub other_provider: Option<crate::flow::FlowAction>,
    pub untrusted: Option<crate::flow::FlowAction>,
    pub sink_flagged: Option<crate::flow::FlowAction>,
    pub sink_prose: Option<crate::flow::FlowAction>,
    pub sink_other_provider: Option<crate::flow::FlowAction>,
    pub sink_untrusted: Option<crate::flow::FlowAction>,
    pub sink_after_flagged: Option<crate::flow::FlowAction>,
    pub sink_after_steered: Option<crate::flow::FlowAction>,
    pub sink_link: Option<crate::flow::FlowAction>,
    #[serde(default)]
    pub after: Vec<Spanned<String>>,
    #[serde(default)]
    pub arguments: Vec<Spanned<RawArgumentFlow>>,
}

/// One argument's rules in a tool's `flow` table.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArgumentFlow {
    pub pointer: Spanned<String>,
    pub flagged: Option<crate::flow::FlowAction>,
    pub prose: Option<crate::flow::FlowAction>,
    pub other_provider: Option<crate::flow::FlowAction>,
    pub untrusted: Option<crate::flow::FlowAction>,
}

/// Who a rule is for, as written: every key optional, none meaning everyone.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCallerRule {
    #[serde(default)]
    pub subjects: Vec<Spanned<String>>,
    #[serde(default)]
    pub groups: Vec<Spanned<String>>,
    #[serde(default)]
    pub claims: BTreeMap<String, Spanned<toml::Value>>,
    pub verdict: Verdict,
    pub note: Option<String>,
}

/// A `[[budgets]]` entry.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBudget {
    pub provider: Option<Spanned<String>>,
    pub tools: Option<Spanned<String>>,
    #[serde(default)]
    pub subjects: Vec<Spanned<String>>,
    #[serde(default)]
    pub groups: Vec<Spanned<String>>,
    #[serde(default)]
    pub claims: BTreeMap<String, Spanned<toml::Value>>,
    pub rate: Spanned<u32>,
    pub per: Option<crate::budget::Per>,
    pub burst: Option<Spanned<u32>>,
    pub each: Option<crate::budget::Each>,
    pub note: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProvider {
    pub unlisted: Option<Verdict>,
    pub injection: Option<InjectionAction>,
    pub secrets: Option<crate::secrets::SecretsAction>,
    pub fetched_code: Option<crate::provider::FetchedCode>,
    pub confinement: Option<ConfinementLevel>,
    #[serde(default)]
    pub read_paths: Vec<Spanned<String>>,
    #[serde(default)]
    pub write_paths: Vec<Spanned<String>>,
    #[serde(default)]
    pub network_ports: Vec<Spanned<u16>>,
    #[serde(default)]
    pub network_hosts: Vec<Spanned<String>>,
    #[serde(default)]
    pub unix_sockets: bool,
    pub limits: Option<RawLimits>,
    #[serde(default)]
    pub formatters: Vec<RawFormatter>,
    #[serde(default)]
    pub screens: Vec<Spanned<String>>,
    pub note: Option<String>,
    pub media: Option<crate::provider::MediaMode>,
    pub media_types: Option<Vec<Spanned<String>>>,
    pub media_max_bytes: Option<Spanned<u32>>,
    pub sampling: Option<Verdict>,
    pub sampling_max_tokens: Option<Spanned<u32>>,
    #[serde(default)]
    pub roots: Vec<Spanned<String>>,
    #[serde(default)]
    pub tools: BTreeMap<Spanned<String>, RawTool>,
    #[serde(default)]
    pub resources: Vec<Spanned<String>>,
    #[serde(default)]
    pub prompts: Vec<Spanned<String>>,
    #[serde(default)]
    pub callers: Vec<Spanned<RawCallerRule>>,
    #[serde(default)]
    pub sinks: Vec<Spanned<String>>,
    #[serde(default)]
    pub fetches: Vec<Spanned<String>>,
    #[serde(default)]
    pub ask_reviewers: Vec<Spanned<String>>,
    pub flow: Option<Spanned<RawFlow>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawLimits {
    pub deadline_ms: Option<Spanned<u64>>,
    pub memory_bytes: Option<Spanned<u64>>,
    pub output_bytes: Option<Spanned<u64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawFormatter {
    pub tools: Spanned<String>,
    pub wasm: Spanned<String>,
}

/// A tool entry: either just a verdict (`calendar_query = "allow"`) or a table with constraints.
#[derive(Debug)]
pub(crate) struct RawTool {
    pub verdict: Verdict,
    pub constraints: Vec<Spanned<RawConstraint>>,
    pub callers: Vec<Spanned<RawCallerRule>>,
    pub note: Option<String>,
    pub flow: Option<Spanned<RawFlow>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolTable {
    verdict: Verdict,
    #[serde(default)]
    constraints: Vec<Spanned<RawConstraint>>,
    #[serde(default)]
    callers: Vec<Spanned<RawCallerRule>>,
    note: Option<String>,
    flow: Option<Spanned<RawFlow>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConstraint {
    pub pointer: Spanned<String>,
    pub equals: Option<Spanned<toml::Value>>,
    pub pattern: Option<Spanned<String>>,
}

impl<'de> Deserialize<'de> for RawTool {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ToolVisitor;
        impl<'de> Visitor<'de> for ToolVisitor {
            type Value = RawTool;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a verdict (\"allow\", \"ask\" or \"deny\") or a table with `verdict`")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawTool, E> {
                let verdict = Verdict::deserialize(de::value::StrDeserializer::<E>::new(v))?;
                Ok(RawTool { verdict, constraints: Vec::new(), callers: Vec::new(), note: None, flow: None })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawTool, A::Error> {
                let t = RawToolTable::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(RawTool {
                    verdict: t.verdict,
                    constraints: t.constraints,
                    callers: t.callers,
                    note: t.note,
                    flow: t.flow,
                })
            }
        }
        deserializer.deserialize_any(ToolVisitor)
    }
}
