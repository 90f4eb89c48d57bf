//! The instruction detector: flags text that reads like instructions to the model rather than data
//! for it. It works on the [`sanitize`]d text after [`normalize`] (confusables folded, lowercase,
//! spaces collapsed), and also reports what sanitizing removed, since hidden text is itself a sign.
//!
//! A flag is a warning, not a verdict: the provider's `injection` setting decides whether a flagged
//! result is delivered with the warning, withheld, or sent to the approver. Rules are chosen to stay
//! quiet on ordinary tool output (calendars, files, search results); each flag's description is a
//! fixed sentence, safe to show the model, that never quotes the content.

use crate::fold::normalize;
use crate::sanitize::sanitize;
use regex::Regex;
use std::sync::LazyLock;

/// What kind of thing was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FlagKind {
    /// A phrase that addresses the model: "ignore previous instructions", "you are now ...".
    InstructionPhrase,
    /// A chat-template role marker: `<|im_start|>`, `<system>`, `[INST]`, `assistant:` ...
    RoleTag,
    /// Something shaped like a tool call: `<tool_call>`, `{"name": .., "arguments": ..}` ...
    ToolCallLookalike,
    /// Content a human reader would not see: invisible characters, HTML comments, whitespace walls.
    HiddenText,
}

/// One finding. `rule` is a stable identifier for logs; `description` is a stable sentence.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Flag {
    /// The kind of finding.
    pub kind: FlagKind,
    /// Stable rule identifier, e.g. `ignore-previous`.
    pub rule: &'static str,
    /// A short fixed description, safe to show the model.
    pub description: &'static str,
}

/// A whitespace run at least this long is a hiding place (it pushes text out of view).
pub const WHITESPACE_RUN: usize = 200;

struct Rule {
    kind: FlagKind,
    id: &'static str,
    description: &'static str,
    pattern: &'static str,
}

const RULES: &[Rule] = &[
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "ignore-previous",
        description: "asks to ignore or replace earlier instructions",
        pattern: r"\b(ignore|disregard|forget|override|skip)\s+(all\s+|any\s+|the\s+|of\s+|your\s+|my\s+|these\s+|those\s+)*(previous|prior|above|earlier|preceding|former|original|system)\s+(instructions?|prompts?|directions?|rules|messages|context|guidelines)\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "disregard-above",
        description: "asks to disregard what came before",
        pattern: r"\b(disregard|ignore|forget)\s+(everything\s+|all\s+)?(the\s+)?(above|before this|said before)\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "role-reassignment",
        description: "tries to give the assistant a new role or mode",
        pattern: r"\b(you\s+are\s+now\s+(a|an|the|my|no\s+longer|free|unrestricted|jailbroken|dan\b|in\s+\w+\s+mode|acting)|from\s+now\s+on,?\s+you\s+(are|will|must|shall)|pretend\s+(to\s+be|you\s+are)|act\s+as\s+(if\s+you\s+are\s+)?(a|an|the)\s+\w+\s+(with(out)?|that|who)\b)",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "new-instructions",
        description: "announces new instructions",
        pattern: r"\b(new|updated|real|actual|important)\s+(system\s+)?instructions?\s*:|\bsystem\s+prompt\b|\bdeveloper\s+(mode|message)\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "conceal-from-user",
        description: "asks to hide something from the user",
        pattern: r"\b(do\s+not|don't|never)\s+(tell|inform|mention\s+(this\s+)?to|reveal\s+(this\s+)?to|alert)\s+the\s+user\b",
    },
    Rule {
        kind: FlagKind::RoleTag,
        id: "chat-template-token",
        description: "contains a chat-template control token",
        pattern: r"<\|\s*(im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id|begin_of_text)\s*\|>|\[/?inst\]|<</?sys>>",
    },
    Rule {
        kind: FlagKind::RoleTag,
        id: "role-tag",
        description: "contains a conversation role marker",
        pattern: r"</?\s*(system|assistant|developer|system_prompt|instructions?)\s*>|(?m)^\s*#{1,6}\s*(system|instruction|instructions|assistant|response)\s*:|(?m)^\s*(assistant|human|system\s+message)\s*:",
    },
    Rule {
        kind: FlagKind::ToolCallLookalike,
        id: "tool-call-markup",
        description: "contains markup that looks like a tool call",
        pattern: r"</?\s*(tool_call|tool_use|tool_calls|function_calls?|function_results?|invoke|antml:invoke|antml:function_calls)\b|<function\s*=",
    },
    Rule {
        kind: FlagKind::ToolCallLookalike,
        id: "tool-call-json",
        description: "contains JSON that looks like a tool call",
        pattern: r#""(name|tool|function)"\s*:\s*"[^"]*"\s*,\s*"(arguments|parameters|input|args)"\s*:|"(tool_calls|function_call)"\s*:"#,
    },
    Rule {
        kind: FlagKind::HiddenText,
        id: "html-comment",
        description: "contains an HTML comment, which a reader of rendered text would not see",
        pattern: r"<!--",
    },
];

static COMPILED: LazyLock<Vec<(&'static Rule, Regex)>> =
    LazyLock::new(|| RULES.iter().filter_map(|r| Regex::new(r.pattern).ok().map(|re| (r, re))).collect());

/// Flags instruction-like or hidden content in `text` (the raw result text, before framing), at
/// most one flag per rule, in rule order.
pub fn detect(text: &str) -> Vec<Flag> {
    let clean = sanitize(text);
    let mut flags = Vec::new();
    if clean.invisible > 0 {
        flags.push(Flag {
            kind: FlagKind::HiddenText,
            rule: "invisible-characters",
            description: "contained invisible or text-reordering characters, which were removed",
        });
    }
    if clean.escapes > 0 {
        flags.push(Flag {
            kind: FlagKind::HiddenText,
            rule: "terminal-escapes",
            description: "contained terminal escape sequences, which were removed",
        });
    }
    if longest_whitespace_run(&clean.text) >= WHITESPACE_RUN {
        flags.push(Flag {
            kind: FlagKind::HiddenText,
            rule: "whitespace-run",
            description: "contains a very long run of whitespace that can push text out of view",
        });
    }
    let normalized = normalize(&clean.text);
    for (rule, re) in COMPILED.iter() {
        if re.is_match(&normalized) {
            flags.push(Flag { kind: rule.kind, rule: rule.id, description: rule.description });
        }
    }
    flags
}

fn longest_whitespace_run(text: &str) -> usize {
    let (mut best, mut run) = (0, 0);
    for c in text.chars() {
        run = if c.is_whitespace() { run + 1 } else { 0 };
        best = best.max(run);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_compiles() {
        assert_eq!(COMPILED.len(), RULES.len());
    }
}
