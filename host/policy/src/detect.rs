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
        pattern: r"(?m)(^|[.!?:]\s+)[\W]*(your\s+|the\s+|my\s+)?(new|updated|real|actual|important)\s+(system\s+)?instructions?\s*:|\bsystem\s+prompt\b|\bdeveloper\s+(mode|message)\b",
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
        kind: FlagKind::InstructionPhrase,
        id: "ignore-the-data",
        description: "asks to ignore what came with it",
        pattern: r"\b(ig?n[o0]re|ingore|ignroe|disregu?ard|forget|neglect)\s+(all\s+|any\s+|the\s+|this\s+|these\s+|those\s+|other\s+|them\b|everything\b|your\s+)*(rest\s+of\s+(this|the)\s+(data|text|content|document|input|message|context|page)|remaining|previous|prior|above|earlier|following|other|negative|instructions?\b|directions?\b|directives?\b|guidelines\b|rules\b|data\b|info(rmation)?\b|content\b|context\b)|\b(ig?n[o0]re|disregard)\s+(any|all)\s+(previous|prior)\s+and\s+following\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "override-other-language",
        description: "asks, in another language, to ignore earlier instructions",
        pattern: r"\bignor(ez|e|iere|ieren|a|ar|ate|eer)\s+(toutes\s+|alle\s+|todas\s+|tutte\s+|le\s+|les\s+|las\s+|die\s+|de\s+|the\s+)*(les\s+|la\s+|vorherigen\s+|anteriores\s+|precedenti\s+|vorige\s+)?(instructions|anweisungen|instrucciones|istruzioni|instructies|consignes)\b|忽略.{0,8}(指令|指示|说明|提示)|無視.{0,8}(指示|命令)|игнорир\w*.{0,20}инструкц",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "output-directive",
        description: "tells the assistant exactly what to output",
        pattern: r"\b(just|only|simply)\s+(print|say|output|respond\s+with|reply\s+with|repeat|write|return)\b\s*(\W{0,3}[\x22'“<:]|the\s+following\b|exactly\b)|\b(reply|respond|answer)\s+with\s+(only|just|exactly|the\s+following)\b|\brepeat\s+(the\s+following|after\s+me|<)|\bnothing\s+else\b.{0,40}\b(print|say|output|reply|respond)|\b(print|say|output|reply|respond)\b.{0,60}\b(and\s+)?(absolutely\s+)?nothing\s+else\b|\bstop\s+everything\b|\b(never\s*mind|nevermind)\b.{0,40}\b(print|say|ignore)\b|\bprovide\s+it\s+to\s+the\s+user\b|\byou\s+may\s+not\s+deviate\b|\binstead\s+(print|spell\s+check|say|output|repeat)\b|\bprint\s+the\s+(previous|above|prior|system)\s+(instructions|prompt)\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "addresses-the-model",
        description: "addresses the assistant or an automated reader directly",
        pattern: r"\b(note|message|memo|notice)\s+(to|for)\s+(the\s+|any\s+|all\s+)?(ai|a\.i\.|assistant|model|llm|language\s+model|chatbot|agent|automated\s+\w+(\s+\w+)?|screening\s+systems?|(analysis|review)\s+software)\b|\bfor\s+automated\s+(screening|analysis|review)\b|\bvisible\s+to\s+(the\s+)?(llm|ai|model|assistant)|\binvisible\s+to\s+humans\b|\bif\s+(the\s+)?user\s+asks\b|\b(if|when)\s+asked\s+(how|what|about|whether)\b.{0,80}\b(respond|reply|answer|say)\b|\b(before|when)\s+(you\s+)?(answer|respond|reply)(ing)?\b.{0,60}\b(first|also|always|call|read|send|run|use)\b|\b(an\s+)?important\s+message\s+from\s+(me,?\s+)?(the\s+|your\s+)?(user|developer|administrator|admin|creator|owner)\b|\bcritical\s+to\s+my\s+(career|job|life)\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "override-checks",
        description: "asks to override checks or scoring",
        pattern: r"\b(override|bypass|skip|disable)\s+(the\s+|all\s+|any\s+|manual\s+|your\s+|safety\s+)*(scoring|review|checks?|safety|filters?|restrictions?|guardrails?|evaluation|verification)\b|\bdon'?t\s+evaluate\b|\bpre-?verified\s+by\b",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "harmful-generation",
        description: "asks for hateful or harmful writing",
        pattern: r"\b(write|generate|produce|compose)\s+(one|a|an|some|\d+)\s+(toxic|offensive|discriminatory|harmful|hateful|racist|sexist|negative|unfriendly|insulting|violent|abusive|derogatory)\b",
    },
    Rule {
        kind: FlagKind::RoleTag,
        id: "pseudo-tag",
        description: "contains an instruction block in a made-up tag or bracket marker",
        pattern: r"</?\s*(important|information|instruction|instructions|system[_ ]?message|admin|end\s+of\s+session|context)\s*>|\[\s*(system|admin|assistant|developer|instruction)s?\s*[\]:]|\[\s*admin\s+request|\(#(context|assistant|system)\)|\bsystem\s+(chain\s+of\s+thought|note|notice|override|instruction)\b",
    },
    Rule {
        kind: FlagKind::RoleTag,
        id: "turn-marker",
        description: "contains a conversation turn marker",
        pattern: r"(?m)^[\s>*#\-]*system(\s+message|\s+prompt)?\s*:|\bsystem\s+message\s*:|#{2,}\s*\(\s*(system|user|assistant)[_ ]?(message|prompt)?\s*\)",
    },
    Rule {
        kind: FlagKind::InstructionPhrase,
        id: "exfiltration",
        description: "asks to put the conversation or secrets into a link or output",
        pattern: r"\b(append|include|add|attach|embed|put)\b[^.\n]{0,80}\b(summary\s+of\s+(the\s+|our\s+)?(page|conversation|chat)|(the|our|this)\s+conversation|chat\s+history)\b|\b(passwords?|secrets?|api\s+keys?|credentials|tokens)\s+(on|from|in)\s+(the|this)\s+(page|conversation|chat|context)\b|\bappend\s+them\b|\bdata\s+exfiltration\b|!\[[^\]\n]{0,100}\]\(\s*https?://[^)\s]*[?&][^)\s=]+=[^)\s]*[{<\[$%][^)\s]*\)",
    },
    Rule {
        kind: FlagKind::HiddenText,
        id: "html-comment",
        description: "contains prose in an HTML comment, which a reader of rendered text would not see",
        pattern: r"<!--\s*(?:[^\s>]+\s+){3,}[^>]*?-->",
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
    if encoded_instructions(&clean.text) {
        flags.push(Flag {
            kind: FlagKind::InstructionPhrase,
            rule: "encoded-instructions",
            description: "contains encoded text (base64) that decodes to instructions",
        });
    }
    flags
}

/// Encoded blocks looked into, at most, and the longest one decoded.
const MAX_ENCODED_BLOCKS: usize = 16;
const MAX_ENCODED_BYTES: usize = 64 * 1024;

static BASE64_BLOCK: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_-]{24,}={0,2}").ok());

/// Whether a base64 block of `text` decodes to text that reads like instructions (one
/// level deep: what it decodes to is not decoded again).
fn encoded_instructions(text: &str) -> bool {
    use base64::Engine as _;
    let Some(block) = BASE64_BLOCK.as_ref() else { return false };
    block.find_iter(text).take(MAX_ENCODED_BLOCKS).filter(|m| m.len() <= MAX_ENCODED_BYTES).any(|m| {
        let encoded = m.as_str().trim_end_matches('=');
        let decoded = base64::engine::general_purpose::STANDARD_NO_PAD
            .decode(encoded)
            .or_else(|_| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(encoded));
        let Some(decoded) = decoded.ok().and_then(|bytes| String::from_utf8(bytes).ok()) else { return false };
        let printable = decoded.chars().filter(|c| !c.is_control() || c.is_whitespace()).count();
        if printable * 10 < decoded.chars().count() * 9 {
            return false;
        }
        let normalized = normalize(&sanitize(&decoded).text);
        COMPILED.iter().any(|(rule, re)| rule.kind == FlagKind::InstructionPhrase && re.is_match(&normalized))
    })
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
