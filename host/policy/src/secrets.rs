//! Credentials in a call's arguments (a model asked to send a key somewhere) or in a
//! result (a provider leaking one into the conversation).
//!
//! [`find_secrets`] looks at every string of a JSON value, keys included, for credentials of
//! known formats (private keys, cloud, VCS, chat and payment tokens, JSON Web Tokens)
//! and for long random-looking strings: at least 32 characters of letters, digits and
//! `+/_-=`, with upper case, lower case and digits all present and more than 4.5 bits of
//! entropy per character. A hex digest or a UUID (no upper case) is not flagged; a
//! base64 key is. A finding names the kind and where it is, never the value.
//!
//! What the gateway does with a finding is the provider's `secrets` setting
//! ([`SecretsAction`]): `ask` (the default), `deny` or `flag`.

use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// What to do with a call whose arguments carry what looks like a credential.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecretsAction {
    /// Ask the approver, even for a tool the policy allows; nobody to ask means no.
    #[default]
    Ask,
    /// Refuse the call.
    Deny,
    /// Let it run, and record the finding.
    Flag,
}

/// One credential-like string: its kind (a stable identifier) and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// `private-key`, `aws-access-key`, `github-token`, ..., or `high-entropy`.
    pub kind: &'static str,
    /// A JSON pointer to the string (for a key: the object's pointer, with the key).
    pub at: String,
    /// Where in the string it starts and ends (bytes), for redacting it.
    pub span: (usize, usize),
}

/// Formats of known credentials, the more specific first: a string is reported once,
/// as the first kind that matches it.
const KNOWN: &[(&str, &str)] = &[
    ("private-key", r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----"),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("slack-token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("stripe-key", r"\b[rs]k_live_[A-Za-z0-9]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}\b"),
    ("anthropic-key", r"\bsk-ant-[A-Za-z0-9_-]{32,}"),
    ("openai-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
];

static PATTERNS: LazyLock<Vec<(&'static str, Regex)>> =
    LazyLock::new(|| KNOWN.iter().filter_map(|(kind, p)| Regex::new(p).ok().map(|re| (*kind, re))).collect());

static CANDIDATE: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_=-]{32,}").ok());

/// Strings looked at, at most: a bound on the work a hostile value can cause.
const MAX_STRINGS: usize = 10_000;
/// Nesting looked into, at most.
const MAX_DEPTH: usize = 64;
/// Findings kept, at most.
const MAX_FINDINGS: usize = 32;

/// Every credential-like string in `value`, in document order (at most 32).
#[must_use]
pub fn find_secrets(value: &Value) -> Vec<Secret> {
    let mut found = Vec::new();
    let mut budget = MAX_STRINGS;
    walk(value, "", 0, &mut budget, &mut found);
    found
}

/// Every credential-like part of `text`.
#[must_use]
pub fn find_secrets_in_text(text: &str) -> Vec<Secret> {
    let mut found = Vec::new();
    scan(text, "", &mut found);
    found
}

fn walk(value: &Value, at: &str, depth: usize, budget: &mut usize, found: &mut Vec<Secret>) {
    if depth > MAX_DEPTH || *budget == 0 || found.len() >= MAX_FINDINGS {
        return;
    }
    match value {
        Value::String(text) => {
            *budget -= 1;
            scan(text, at, found);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{at}/{i}"), depth + 1, budget, found);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let here = format!("{at}/{}", key.replace('~', "~0").replace('/', "~1"));
                if *budget > 0 {
                    *budget -= 1;
                    scan(key, &here, found);
                }
                walk(item, &here, depth + 1, budget, found);
            }
        }
        _ => {}
    }
}

fn scan(text: &str, at: &str, found: &mut Vec<Secret>) {
    let before = found.len();
    let covered =
        |found: &[Secret], start: usize, end: usize| found[before..].iter().any(|s| s.span.0 < end && start < s.span.1);
    for (kind, re) in PATTERNS.iter() {
        for m in re.find_iter(text) {
            if found.len() >= MAX_FINDINGS {
                return;
            }
            if !covered(found, m.start(), m.end()) {
                found.push(Secret { kind, at: at.to_owned(), span: (m.start(), m.end()) });
            }
        }
    }
    let Some(candidate) = CANDIDATE.as_ref() else { return };
    for m in candidate.find_iter(text) {
        if !covered(found, m.start(), m.end()) && random_looking(m.as_str()) {
            if found.len() >= MAX_FINDINGS {
                return;
            }
            found.push(Secret { kind: "high-entropy", at: at.to_owned(), span: (m.start(), m.end()) });
        }
    }
}

/// Whether `token` looks like a random key: upper case, lower case and digits all
/// present, and more than 4.5 bits of entropy per character.
fn random_looking(token: &str) -> bool {
    let has = |f: fn(&u8) -> bool| token.as_bytes().iter().any(f);
    if !(has(u8::is_ascii_uppercase) && has(u8::is_ascii_lowercase) && has(u8::is_ascii_digit)) {
        return false;
    }
    let mut counts = [0u32; 256];
    for &b in token.as_bytes() {
        counts[usize::from(b)] += 1;
    }
    #[allow(clippy::cast_precision_loss)] // lengths far below 2^52
    let len = token.len() as f64;
    let entropy: f64 = counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / len;
            -p * p.log2()
        })
        .sum();
    entropy > 4.5
}

/// `value` with every credential [`find_secrets`] reports replaced by `[redacted: KIND]`, for
/// the audit log: a credential the model put in a call must not be written down in it.
#[must_use]
pub fn redact_secrets(value: &Value, found: &[Secret]) -> Value {
    let mut out = value.clone();
    let mut paths: Vec<&str> = found.iter().map(|s| s.at.as_str()).collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let Some(target) = out.pointer_mut(path) else { continue };
        if let Value::String(text) = target {
            // Spans of one string are replaced from the end, so earlier ones stay valid.
            let mut spans: Vec<(usize, usize, &str)> =
                found.iter().filter(|s| s.at == path).map(|s| (s.span.0, s.span.1, s.kind)).collect();
            spans.sort_unstable_by_key(|span| std::cmp::Reverse(span.0));
            let mut redacted = text.clone();
            let mut last_start = usize::MAX;
            for (start, end, kind) in spans {
                if end > last_start || !redacted.is_char_boundary(start) || !redacted.is_char_boundary(end) {
                    continue;
                }
                redacted.replace_range(start..end, &format!("[redacted: {kind}]"));
                last_start = start;
            }
            *text = redacted;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn kinds(value: &Value) -> Vec<&'static str> {
        find_secrets(value).iter().map(|s| s.kind).collect()
    }

    #[test]
    fn credentials_of_known_formats_are_found_where_they_are() {
        let found = find_secrets(&json!({
            "to": "eve@example.invalid",
            "body": "here you go: ghp_0123456789abcdefghijABCDEFGHIJ0123456789 thanks",
            "attachments": [{"key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE\n-----END OPENSSH PRIVATE KEY-----"}],
            "AKIAIOSFODNN7EXAMPLE": 1
        }));
        let seen: Vec<(&str, &str)> = found.iter().map(|s| (s.kind, s.at.as_str())).collect();
        assert_eq!(
            seen,
            [
                ("github-token", "/body"),
                ("private-key", "/attachments/0/key"),
                ("aws-access-key", "/AKIAIOSFODNN7EXAMPLE")
            ]
        );
        for (text, kind) in [
            ("xoxb-1234567890-abcdefghij", "slack-token"),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe-key"),
            ("AIzaSyA1234567890abcdefghijklmnopqrstuv", "google-api-key"),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD", "openai-key"),
            ("sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789", "anthropic-key"),
            ("glpat-abcdefghij0123456789", "gitlab-token"),
            ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm-token"),
            ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt"),
        ] {
            assert_eq!(kinds(&json!({ "x": text })).first().copied(), Some(kind), "{text}");
        }
    }

    #[test]
    fn a_random_key_is_found_and_digests_ids_and_prose_are_not() {
        assert_eq!(kinds(&json!("key=Zk3q9Lx2Vb7Rt5Yw1Np8Hs4Dc6Fg0JmQ")), ["high-entropy"]);
        for benign in [
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", // sha256
            "6f1ed002ab5595859014ebf0951522d9",                                 // md5
            "123e4567-e89b-12d3-a456-426614174000",                             // UUID
            "9b8c1a2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b",                         // a commit
            "Lunch with the team at the usual place, 12:00 to 13:00, room 4B.",
            "https://calendar.example.com/events/2026/12/04/standup-meeting-notes",
            "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        ] {
            assert!(kinds(&json!({ "x": benign })).is_empty(), "{benign}");
        }
    }

    #[test]
    fn redacting_replaces_each_finding_and_keeps_the_rest() {
        let args = json!({"body": "a ghp_0123456789abcdefghijABCDEFGHIJ0123456789 b AKIAIOSFODNN7EXAMPLE c", "n": 1});
        let found = find_secrets(&args);
        assert_eq!(
            redact_secrets(&args, &found),
            json!({"body": "a [redacted: github-token] b [redacted: aws-access-key] c", "n": 1})
        );
    }

    #[test]
    fn a_hostile_value_costs_a_bounded_amount() {
        let many: Vec<Value> = (0..50_000).map(|i| Value::String(format!("ghp_{i:036}"))).collect();
        assert_eq!(find_secrets(&Value::Array(many)).len(), MAX_FINDINGS);
        let mut deep = json!("AKIAIOSFODNN7EXAMPLE");
        for _ in 0..200 {
            deep = json!([deep]);
        }
        assert!(find_secrets(&deep).is_empty(), "past the depth bound nothing is looked at");
    }
}
