//! Argument redaction: values under sensitive keys, or at configured JSON pointers, become
//! `"[redacted]"` before a record is written.
//!
//! Key rules match by substring after normalizing the key (lowercase, `_`, `-`, `.` and spaces
//! removed), so the default `apikey` rule catches `api_key`, `X-Api-Key`, `api.key` and
//! `openaiApiKey` alike. The default set is [`DEFAULT_KEYS`], and [`DEFAULT_EXACT_KEYS`] for
//! short words that are secrets alone but too common inside other names to match as part of one
//! (`auth`, not `author`). By default a header-like pair whose `name` (or `key`) is such a key has
//! its `value` redacted (`{"name": "Authorization", "value": "Bearer …"}`), and so is any string
//! that starts as a credential does (`Bearer `, `Basic `). Values nested deeper than
//! [`MAX_DEPTH`] are redacted whole: a structure that deep is not worth the risk of missing a
//! secret in it.

use std::borrow::Cow;

use serde_json::Value;

/// The replacement text.
pub const REDACTED: &str = "[redacted]";
/// Nesting depth below which everything is redacted.
pub const MAX_DEPTH: usize = 32;
/// Key fragments redacted by default (compared after normalizing; see the module docs).
pub const DEFAULT_KEYS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "passcode",
    "token",
    "secret",
    "apikey",
    "authorization",
    "bearer",
    "cookie",
    "privatekey",
    "credential",
];
/// Whole keys redacted by default (compared after normalizing).
pub const DEFAULT_EXACT_KEYS: &[&str] = &["auth", "pass", "pwd", "pin", "otp", "key", "session", "sessionid"];

/// Which argument values are redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redaction {
    keys: Vec<String>,
    exact: Vec<String>,
    pointers: Vec<String>,
    /// Whether a string that starts as a credential does is redacted wherever it is.
    credentials: bool,
}

impl Default for Redaction {
    fn default() -> Self {
        Redaction {
            keys: DEFAULT_KEYS.iter().map(|k| normalize(k).into_owned()).collect(),
            exact: DEFAULT_EXACT_KEYS.iter().map(|k| normalize(k).into_owned()).collect(),
            pointers: Vec::new(),
            credentials: true,
        }
    }
}

impl Redaction {
    /// No rules at all: arguments are written as they are.
    pub fn none() -> Self {
        Redaction { keys: Vec::new(), exact: Vec::new(), pointers: Vec::new(), credentials: false }
    }

    /// Also redacts values under keys containing `fragment` (normalized).
    pub fn with_key(mut self, fragment: &str) -> Self {
        self.keys.push(normalize(fragment).into_owned());
        self
    }

    /// Also redacts the value at this JSON pointer (e.g. `/event/attendees`).
    pub fn with_pointer(mut self, pointer: &str) -> Self {
        self.pointers.push(pointer.to_owned());
        self
    }

    /// `args` with the rules applied.
    #[must_use]
    pub fn apply(&self, args: &Value) -> Value {
        let mut out = args.clone();
        self.apply_in_place(&mut out);
        out
    }

    /// The rules applied to `args` where it stands: what is not redacted is neither
    /// copied nor moved.
    pub fn apply_in_place(&self, args: &mut Value) {
        self.walk(args, 0);
        for p in &self.pointers {
            if let Some(v) = args.pointer_mut(p) {
                *v = Value::String(REDACTED.to_owned());
            }
        }
    }

    fn walk(&self, v: &mut Value, depth: usize) {
        match v {
            Value::Object(_) | Value::Array(_) if depth >= MAX_DEPTH => *v = Value::String(REDACTED.to_owned()),
            Value::Object(map) => {
                // A header-like pair: `{"name": "Authorization", "value": "…"}`.
                let named = ["name", "key", "header"]
                    .iter()
                    .filter_map(|field| map.get(*field).and_then(Value::as_str))
                    .any(|name| self.sensitive(name));
                for (k, v) in map.iter_mut() {
                    if self.sensitive(k) || named && k == "value" {
                        *v = Value::String(REDACTED.to_owned());
                    } else {
                        self.walk(v, depth + 1);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.walk(v, depth + 1)),
            Value::String(text) if self.credentials && credential(text) => *v = Value::String(REDACTED.to_owned()),
            _ => {}
        }
    }

    fn sensitive(&self, key: &str) -> bool {
        let key = normalize(key);
        self.keys.iter().any(|k| !k.is_empty() && key.contains(k.as_str())) || self.exact.iter().any(|k| *k == *key)
    }
}

/// Whether `text` starts as an HTTP credential does (`Bearer …`, `Basic …`).
fn credential(text: &str) -> bool {
    let head = text.trim_start().as_bytes();
    [b"bearer ".as_slice(), b"basic "]
        .iter()
        .any(|scheme| head.get(..scheme.len()).is_some_and(|h| h.eq_ignore_ascii_case(scheme)))
}

/// `key` without `_`, `-`, `.` and spaces, in lower case; most keys already are, and are
/// not copied.
fn normalize(key: &str) -> Cow<'_, str> {
    if key.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
        return Cow::Borrowed(key);
    }
    Cow::Owned(key.chars().filter(|c| !matches!(c, '_' | '-' | '.' | ' ')).flat_map(char::to_lowercase).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn default_rules_redact_secret_looking_keys_at_any_depth() {
        let args = json!({"query": "standup", "api_key": "k", "auth": {"Authorization": "Bearer x", "X-Api-Key": "y"},
                          "list": [{"password": "p", "user": "u"}], "accessToken": "t", "client_secret": "s"});
        assert_eq!(
            Redaction::default().apply(&args),
            json!({"query": "standup", "api_key": REDACTED, "auth": REDACTED,
                   "list": [{"password": REDACTED, "user": "u"}], "accessToken": REDACTED, "client_secret": REDACTED})
        );
    }

    #[test]
    fn short_secret_words_pairs_and_credentials_in_values_are_redacted_and_lookalikes_kept() {
        let args = json!({
            "author": "ann", "keyboard": "qwerty", "keys": ["a"], "pin": "1234", "api.key": "k", "Session": "s",
            "headers": [{"name": "Authorization", "value": "Bearer sk-1"}, {"name": "Accept", "value": "text/plain"}],
            "note": "bearer abc", "other": "Bearers of news", "basic": "ok"
        });
        assert_eq!(
            Redaction::default().apply(&args),
            json!({
                "author": "ann", "keyboard": "qwerty", "keys": ["a"], "pin": REDACTED, "api.key": REDACTED,
                "Session": REDACTED,
                "headers": [{"name": "Authorization", "value": REDACTED}, {"name": "Accept", "value": "text/plain"}],
                "note": REDACTED, "other": "Bearers of news", "basic": "ok"
            })
        );
        assert_eq!(Redaction::none().apply(&json!({"auth": "Bearer x"})), json!({"auth": "Bearer x"}));
    }

    #[test]
    fn configured_keys_and_pointers_are_redacted_too() {
        let r = Redaction::none().with_key("ssn").with_pointer("/event/attendees").with_pointer("/missing");
        let args = json!({"SSN": "1", "event": {"attendees": ["a", "b"], "title": "t"}, "token": "kept"});
        assert_eq!(
            r.apply(&args),
            json!({"SSN": REDACTED, "event": {"attendees": REDACTED, "title": "t"}, "token": "kept"})
        );
    }

    #[test]
    fn structures_nested_too_deep_are_redacted_whole() {
        let mut v = json!("secret-in-the-deep");
        for _ in 0..MAX_DEPTH + 5 {
            v = json!({"x": v});
        }
        let out = Redaction::none().apply(&v).to_string();
        assert!(!out.contains("secret-in-the-deep") && out.contains(REDACTED));
    }
}
