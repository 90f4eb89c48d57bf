//! What one record says: an [`Entry`] names the call and carries one [`Event`].
//!
//! Free text (reasons, error messages) is cut to [`MAX_TEXT_CHARS`] and arguments whose JSON is
//! longer than [`MAX_ARGUMENTS_BYTES`] are replaced by a marker, so one record stays small and a
//! model cannot make the log grow without bound with one call. Text is escaped by JSON, so a record
//! is always exactly one line whatever it contains.

use serde::Serialize;
use serde_json::Value;

/// Longest free-text field kept, in characters.
pub const MAX_TEXT_CHARS: usize = 4096;
/// Longest arguments value kept, as JSON bytes after redaction.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Most flags kept per record.
pub const MAX_FLAGS: usize = 64;

/// One thing that happened to a call (or to the log itself, for [`Event::Warning`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The call was asked for, and the policy answered. `arguments` are redacted before writing.
    Requested {
        /// `allow`, `ask` or `deny`.
        verdict: String,
        /// The policy's reason.
        reason: String,
        /// The call's arguments, redacted.
        arguments: Value,
    },
    /// An approver answered an `ask`.
    Approval {
        /// Whether the call may run.
        approved: bool,
        /// Who answered (e.g. `terminal`, `elicitation`, `nobody`).
        approver: String,
    },
    /// The call is about to run. Written ahead: durable before the call starts.
    Started,
    /// The call returned a result.
    Finished {
        /// Whether the provider marked the result as an error.
        is_error: bool,
        /// Injection flags raised on the result (rule identifiers).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        flags: Vec<String>,
    },
    /// The call failed (transport, protocol, timeout).
    Failed {
        /// Host-side details; never shown to the model.
        error: String,
    },
    /// The caller cancelled the call. Its remote effects are unknown.
    Cancelled {
        /// Why, e.g. `caller cancelled`.
        reason: String,
    },
    /// The result was not delivered to the model (formatter failure, injection policy, unreviewed tool).
    Withheld {
        /// Why.
        reason: String,
        /// Injection flags, when those were the reason.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        flags: Vec<String>,
    },
    /// Something an operator should know, e.g. best-effort confinement or a repaired log tail.
    Warning {
        /// What.
        message: String,
    },
}

/// One record's content, before the log adds `seq`, `time` and `prev`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The call this record belongs to (absent for log-level warnings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// The provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

impl Entry {
    /// A record about one call.
    pub fn call(call: impl Into<String>, provider: impl Into<String>, tool: impl Into<String>, event: Event) -> Self {
        Entry { call: Some(call.into()), provider: Some(provider.into()), tool: Some(tool.into()), event }
    }

    /// A record about the log or the host, not about one call.
    pub fn log(event: Event) -> Self {
        Entry { call: None, provider: None, tool: None, event }
    }

    /// Applies the size bounds from the module docs.
    pub(crate) fn bounded(mut self) -> Self {
        for s in [&mut self.call, &mut self.provider, &mut self.tool].into_iter().flatten() {
            cut(s);
        }
        match &mut self.event {
            Event::Requested { verdict, reason, arguments } => {
                cut(verdict);
                cut(reason);
                let len = serde_json::to_vec(arguments).map_or(usize::MAX, |v| v.len());
                if len > MAX_ARGUMENTS_BYTES {
                    *arguments = Value::String(format!("[omitted: {len} bytes of arguments]"));
                }
            }
            Event::Approval { approver, .. } => cut(approver),
            Event::Failed { error: s } | Event::Cancelled { reason: s } | Event::Warning { message: s } => cut(s),
            Event::Withheld { reason, flags } => {
                cut(reason);
                cut_flags(flags);
            }
            Event::Finished { flags, .. } => cut_flags(flags),
            Event::Started => {}
        }
        self
    }
}

fn cut(s: &mut String) {
    if let Some((i, _)) = s.char_indices().nth(MAX_TEXT_CHARS) {
        s.truncate(i);
        s.push_str("…[cut]");
    }
}

fn cut_flags(flags: &mut Vec<String>) {
    flags.truncate(MAX_FLAGS);
    flags.iter_mut().for_each(cut);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn an_entry_serializes_flat_with_the_event_name() {
        let e = Entry::call("c1", "calendar", "calendar_query", Event::Finished { is_error: false, flags: vec![] });
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"call":"c1","provider":"calendar","tool":"calendar_query","event":"finished","is_error":false}"#
        );
        let w = Entry::log(Event::Warning { message: "m".into() });
        assert_eq!(serde_json::to_string(&w).unwrap(), r#"{"event":"warning","message":"m"}"#);
    }

    #[test]
    fn long_text_and_large_arguments_are_bounded() {
        let e = Entry::call(
            "c",
            "p",
            "t",
            Event::Requested {
                verdict: "allow".into(),
                reason: "r".repeat(10_000),
                arguments: json!({"x": "y".repeat(100_000)}),
            },
        )
        .bounded();
        let Event::Requested { reason, arguments, .. } = e.event else { panic!() };
        assert_eq!(reason.chars().count(), MAX_TEXT_CHARS + "…[cut]".chars().count());
        assert_eq!(arguments, json!("[omitted: 100008 bytes of arguments]"));
    }

    #[test]
    fn flags_are_bounded_in_number_and_length() {
        let flags = vec!["f".repeat(MAX_TEXT_CHARS + 1); MAX_FLAGS + 5];
        let e = Entry::log(Event::Withheld { reason: "r".into(), flags }).bounded();
        let Event::Withheld { flags, .. } = e.event else { panic!() };
        assert_eq!(flags.len(), MAX_FLAGS);
        assert!(flags[0].ends_with("…[cut]"));
    }

    #[test]
    fn a_record_is_one_line_whatever_its_text() {
        let e = Entry::call("c\n", "p", "t", Event::Failed { error: "a\nb\r\u{2028}\u{0}".into() });
        let line = serde_json::to_string(&e).unwrap();
        assert!(!line.contains('\n') && !line.contains('\r'));
    }
}
