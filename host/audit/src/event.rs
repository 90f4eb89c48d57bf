//! What one record says: an [`Entry`] names the call and carries one [`Event`].
//!
//! Free text (reasons, error messages, a provider's egress host) has its control, invisible and
//! bidi characters shown as escapes and is cut to [`MAX_TEXT_CHARS`]; arguments whose JSON is
//! longer than [`MAX_ARGUMENTS_BYTES`] are shrunk field by field (or, failing that, replaced by a
//! marker), so one record stays small and a model cannot make the log grow without bound with one
//! call, nor hide one field behind another that it pads. Text is escaped by JSON, so a record
//! is always exactly one line whatever it contains.

use serde::Serialize;
use serde_json::Value;
use text_safety::CUT_MARK;

/// Longest free-text field kept, in characters.
pub const MAX_TEXT_CHARS: usize = 4096;
/// Longest arguments value kept, as JSON bytes after redaction.
pub const MAX_ARGUMENTS_BYTES: usize = 64 * 1024;
/// Most flags kept per record.
pub const MAX_FLAGS: usize = 64;

/// One argument's value that an earlier result carried (see [`Event::Carried`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CarriedValue {
    /// The argument, as a JSON pointer.
    pub argument: String,
    /// What kind of value (`url`, `email`, `text`, ...).
    pub kind: String,
    /// The provider whose result carried it first.
    pub provider: String,
    /// The tool (or what was read) of that result.
    pub tool: String,
    /// The audit record (`seq`) of the call whose result carried it, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<u64>,
    /// Whether it stood in a passage the injection detector flagged.
    pub flagged: bool,
    /// Whether it stood inside running text (not a field or list item of its own).
    pub prose: bool,
}

/// The most [`CarriedValue`]s one record keeps.
pub const MAX_CARRIED_VALUES: usize = 64;

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
    /// Values of the call's arguments that earlier untrusted results carried (the
    /// data-flow rules), written with `requested`: where each was first seen, never the
    /// value itself.
    Carried {
        /// One entry per argument that carries such a value.
        values: Vec<CarriedValue>,
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
    /// A provider asked, during the call, for input from the caller's side
    /// (`elicitation/create`, `sampling/createMessage`, `roots/list`), and what became of it.
    Input {
        /// What it asked.
        method: String,
        /// `answered`, `answered by the gateway`, `put off to the client`, or `declined: WHY`.
        outcome: String,
        /// Injection flags raised on the text it asked with.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        flags: Vec<String>,
    },
    /// The call was refused before it ran: the caller has used up a rate limit or call
    /// budget of the policy.
    Limited {
        /// Which budget (`budgets[0] (10 calls per minute)`).
        budget: String,
        /// Milliseconds until a call may succeed again.
        retry_after_ms: u64,
    },
    /// The configuration, the policy and the lock were read again while running
    /// (SIGHUP, `wasmgate reload`).
    Reload {
        /// Why the files were refused and the rules kept (absent: the new rules apply).
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
        /// What changed that applies only when the gateway starts again.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        restart: Vec<String>,
        /// The providers started (added, or changed and started anew).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        started: Vec<String>,
        /// The providers stopped (removed, or changed and replaced).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        stopped: Vec<String>,
    },
    /// A reviewer decided on a tool definition (the record names its provider and
    /// tool) or on a provider's code (the provider only), through a running gateway.
    Review {
        /// `definition` or `code`.
        subject: String,
        /// The hash of what was shown and decided on.
        hash: String,
        /// Approved (pinned in the lock file), or refused (left withheld).
        approved: bool,
        /// Who decided (the local user of the control socket, `local user alice (uid 1000)`).
        reviewer: String,
    },
    /// A provider's way out: a stdio server's connection through the egress proxy, once it
    /// ended; a component's connection or name lookup, once decided (`kind`).
    Egress {
        /// `connect` or `lookup` for a component (absent: through the proxy).
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        /// The host it asked for.
        host: String,
        /// The port it asked for.
        port: u16,
        /// The address connected to (absent when refused before connecting).
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        /// Why it was refused or failed (absent: allowed and connected).
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
        /// Bytes from the server to the host.
        bytes_up: u64,
        /// Bytes from the host to the server.
        bytes_down: u64,
        /// Milliseconds from the request to the end of the connection.
        duration_ms: u64,
    },
    /// A provider's connections or lookups beyond the rate at which each has a record of
    /// its own, coalesced: one record per kind, host, port and outcome, written at most
    /// every few seconds and when the provider stops, so a flood is counted, not dropped.
    EgressSummary {
        /// `connect` or `lookup` for a component (absent: through the proxy).
        #[serde(skip_serializing_if = "Option::is_none")]
        kind: Option<String>,
        /// The host asked for.
        host: String,
        /// The port asked for.
        port: u16,
        /// Why the first of them was refused (absent: they were allowed).
        #[serde(skip_serializing_if = "Option::is_none")]
        refused: Option<String>,
        /// How many.
        count: u64,
        /// Bytes up, all of them together.
        bytes_up: u64,
        /// Bytes down, all of them together.
        bytes_down: u64,
        /// When the first and the last of them were reported (Unix milliseconds).
        first_ms: u64,
        /// See `first_ms`.
        last_ms: u64,
    },
}

/// One record's content, before the log adds `seq`, `time` and `prev`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Entry {
    /// The call this record belongs to (absent for log-level warnings).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<String>,
    /// Who made the call: the caller's subject (an access token's `sub` over HTTP, the
    /// local user over stdio); absent when nobody is named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The provider.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The provider's tool name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
    /// For `requested`: the SHA-256 of the arguments' JSON after redaction and before they are
    /// shrunk to fit the record, so shrinking cannot hide a field from whoever holds the
    /// arguments and checks them against the log. Set by the log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments_sha256: Option<String>,
}

impl Entry {
    /// A record about one call.
    pub fn call(call: impl Into<String>, provider: impl Into<String>, tool: impl Into<String>, event: Event) -> Self {
        Entry {
            call: Some(call.into()),
            caller: None,
            provider: Some(provider.into()),
            tool: Some(tool.into()),
            event,
            arguments_sha256: None,
        }
    }

    /// A record about the log or the host, not about one call.
    pub fn log(event: Event) -> Self {
        Entry { call: None, caller: None, provider: None, tool: None, event, arguments_sha256: None }
    }

    /// Applies the size bounds from the module docs.
    pub(crate) fn bounded(mut self) -> Self {
        for s in [&mut self.call, &mut self.caller, &mut self.provider, &mut self.tool].into_iter().flatten() {
            cut(s);
        }
        match &mut self.event {
            Event::Requested { verdict, reason, arguments } => {
                cut(verdict);
                cut(reason);
                let len = json_len(arguments);
                if len > MAX_ARGUMENTS_BYTES {
                    *arguments = shrunk(arguments, len);
                }
            }
            Event::Approval { approver, .. } => cut(approver),
            Event::Review { subject, hash, reviewer, .. } => {
                cut(subject);
                cut(hash);
                cut(reviewer);
            }
            Event::Carried { values } => {
                values.truncate(MAX_CARRIED_VALUES);
                for value in values {
                    cut(&mut value.argument);
                    cut(&mut value.kind);
                    cut(&mut value.provider);
                    cut(&mut value.tool);
                }
            }
            Event::Failed { error: s }
            | Event::Cancelled { reason: s }
            | Event::Warning { message: s }
            | Event::Limited { budget: s, .. } => cut(s),
            Event::Withheld { reason, flags } => {
                cut(reason);
                cut_flags(flags);
            }
            Event::Finished { flags, .. } => cut_flags(flags),
            Event::Input { method, outcome, flags } => {
                cut(method);
                cut(outcome);
                cut_flags(flags);
            }
            Event::Reload { refused, restart, started, stopped } => {
                refused.iter_mut().for_each(cut);
                cut_flags(restart);
                cut_flags(started);
                cut_flags(stopped);
            }
            Event::Egress { kind, host, address, refused, .. } => {
                kind.iter_mut().for_each(cut);
                cut(host);
                address.iter_mut().chain(refused.iter_mut()).for_each(cut);
            }
            Event::EgressSummary { kind, host, refused, .. } => {
                kind.iter_mut().chain(refused.iter_mut()).for_each(cut);
                cut(host);
            }
            Event::Started => {}
        }
        self
    }
}

/// Fields of an object (items of an array) kept when shrinking, the most characters of a
/// kept name, and how deep shrinking goes before a value is replaced by a marker.
const MAX_SHRUNK_FIELDS: usize = 128;
const MAX_FIELD_NAME_CHARS: usize = 128;
const MAX_SHRUNK_DEPTH: usize = 8;
/// The least share of the bound an object's field or an array's item is shrunk into; with
/// less, the whole object or array becomes a marker.
const MIN_SHARE: usize = 48;

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |v| v.len())
}

/// Arguments over [`MAX_ARGUMENTS_BYTES`], made to fit. Objects and arrays are shrunk
/// member by member, each within an equal share of what their parent has: a long string is
/// cut, a long object or array is shrunk the same way (up to [`MAX_SHRUNK_DEPTH`] deep), and
/// anything else too long becomes a marker. So a padded field, nested or not, cannot hide
/// the others (the recipient after a 100 KB subject) from the record.
fn shrunk(arguments: &Value, len: usize) -> Value {
    let kept = shrink(arguments, len, MAX_ARGUMENTS_BYTES, 0);
    // The shares add up to the bound; this only guards that arithmetic.
    if json_len(&kept) <= MAX_ARGUMENTS_BYTES {
        kept
    } else {
        Value::String(format!("[omitted: {len} bytes of arguments]"))
    }
}

/// `value`, of `size` bytes of JSON, in at most `budget` bytes (for a `budget` of at least
/// [`MIN_SHARE`]).
fn shrink(value: &Value, size: usize, budget: usize, depth: usize) -> Value {
    if size <= budget {
        return value.clone();
    }
    let marker = || Value::String(format!("[omitted: {size} bytes]"));
    match value {
        Value::String(text) => {
            let mut text = text.clone();
            cut_to_json_bytes(&mut text, budget);
            Value::String(text)
        }
        Value::Object(fields) if depth < MAX_SHRUNK_DEPTH => {
            let Some(share) = share_of(budget, fields.len()) else { return marker() };
            let mut kept = serde_json::Map::new();
            for (name, value) in fields.iter().take(MAX_SHRUNK_FIELDS) {
                let mut name = name.clone();
                text_safety::truncate(&mut name, MAX_FIELD_NAME_CHARS);
                cut_to_json_bytes(&mut name, share / 2);
                // Names that were the same up to the cut stay apart.
                let base = name.clone();
                let mut n = kept.len();
                while kept.contains_key(&name) {
                    name = format!("{base}#{n}");
                    n += 1;
                }
                // The name's quotes, its colon and the comma after the value.
                let room = share.saturating_sub(json_str_len(&name) + 2);
                kept.insert(name, shrink(value, json_len(value), room, depth + 1));
            }
            if fields.len() > MAX_SHRUNK_FIELDS {
                let more = format!("{} more fields", fields.len() - MAX_SHRUNK_FIELDS);
                kept.insert("[omitted]".into(), Value::String(more));
            }
            Value::Object(kept)
        }
        Value::Array(items) if depth < MAX_SHRUNK_DEPTH => {
            let Some(share) = share_of(budget, items.len()) else { return marker() };
            // Each item's comma comes out of its share.
            let mut kept: Vec<Value> = items
                .iter()
                .take(MAX_SHRUNK_FIELDS)
                .map(|item| shrink(item, json_len(item), share - 1, depth + 1))
                .collect();
            if items.len() > MAX_SHRUNK_FIELDS {
                kept.push(Value::String(format!("[omitted: {} more items]", items.len() - MAX_SHRUNK_FIELDS)));
            }
            Value::Array(kept)
        }
        _ => marker(),
    }
}

/// Each member's share of `budget` when an object or array of `members` is shrunk: one
/// share more than the members kept, for the brackets and the "[omitted]" entry. `None`
/// when that is less than [`MIN_SHARE`].
fn share_of(budget: usize, members: usize) -> Option<usize> {
    let share = budget.saturating_sub(2) / (members.min(MAX_SHRUNK_FIELDS) + 1);
    (share >= MIN_SHARE).then_some(share)
}

/// The most bytes `c` takes in a JSON string (serde_json escapes `"`, `\` and C0 controls).
fn json_char_len(c: char) -> usize {
    match c {
        '"' | '\\' => 2,
        c if u32::from(c) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The most bytes `s` takes as a JSON string, quotes included.
fn json_str_len(s: &str) -> usize {
    2 + s.chars().map(json_char_len).sum::<usize>()
}

/// Cuts `s`, marking the cut, so that it takes at most `max` bytes as a JSON string, quotes
/// included, however many bytes its characters and their escapes take.
fn cut_to_json_bytes(s: &mut String, max: usize) {
    if json_str_len(s) <= max {
        return;
    }
    let budget = max.saturating_sub(2 + CUT_MARK.len());
    let mut used = 0;
    let end = s.char_indices().find(|&(_, c)| {
        used += json_char_len(c);
        used > budget
    });
    if let Some((i, _)) = end {
        s.truncate(i);
    }
    s.push_str(CUT_MARK);
}

/// A free-text field as it may stand in the log: much of it is a provider's text (an
/// egress host, an error, a reason naming what it sent), so control, invisible and bidi
/// characters are shown as `\u{…}` escapes (`text_safety::escape_for_log_cut`), and the
/// text is cut to [`MAX_TEXT_CHARS`]. Printable ASCII within the bound is kept as it is.
fn cut(s: &mut String) {
    if s.len() <= MAX_TEXT_CHARS && text_safety::is_plain(s.as_bytes()) {
        return;
    }
    *s = text_safety::escape_for_log_cut(s, MAX_TEXT_CHARS);
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
        assert_eq!(reason.chars().count(), MAX_TEXT_CHARS + CUT_MARK.chars().count());
        let x = arguments["x"].as_str().unwrap();
        assert!(x.ends_with(CUT_MARK) && x.len() > MAX_ARGUMENTS_BYTES / 2 - 16, "{}", x.len());
        assert!(json_len(&arguments) <= MAX_ARGUMENTS_BYTES);
        let list = json!(["y".repeat(100_000)]);
        let e =
            Entry::call("c", "p", "t", Event::Requested { verdict: "a".into(), reason: "r".into(), arguments: list });
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(json_len(&arguments) <= MAX_ARGUMENTS_BYTES);
        assert!(arguments[0].as_str().unwrap().ends_with(CUT_MARK), "an array is shrunk like an object");
    }

    #[test]
    fn oversized_arguments_keep_every_field_so_padding_one_hides_nothing() {
        let arguments = json!({"subject": "y".repeat(100_000), "to": "evil@example.com",
            "attachments": vec!["z".repeat(100); 1000], "cc": ["a@example.com"]});
        let e = Entry::call("c", "p", "t", Event::Requested { verdict: "a".into(), reason: "r".into(), arguments });
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(serde_json::to_vec(&arguments).unwrap().len() <= MAX_ARGUMENTS_BYTES);
        assert_eq!(arguments["to"], "evil@example.com");
        assert_eq!(arguments["cc"], json!(["a@example.com"]));
        assert!(arguments["subject"].as_str().unwrap().ends_with(CUT_MARK));
        let attachments = arguments["attachments"].as_array().unwrap();
        assert_eq!(attachments.len(), MAX_SHRUNK_FIELDS + 1);
        assert_eq!(attachments[MAX_SHRUNK_FIELDS], "[omitted: 872 more items]");
        let many: serde_json::Map<String, Value> =
            (0..1000).map(|n| (format!("{n:04}{}", "k".repeat(200)), json!("v".repeat(100)))).collect();
        let e = Entry::call(
            "c",
            "p",
            "t",
            Event::Requested { verdict: "a".into(), reason: "r".into(), arguments: Value::Object(many) },
        );
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(serde_json::to_vec(&arguments).unwrap().len() <= MAX_ARGUMENTS_BYTES);
        assert_eq!(arguments.as_object().unwrap().len(), MAX_SHRUNK_FIELDS + 1);
        assert_eq!(arguments["[omitted]"], "872 more fields");
    }

    #[test]
    fn padding_nested_in_an_object_or_an_array_hides_nothing_either() {
        let pad = "y".repeat(100_000);
        let deep = json!({"message": {"subject": pad, "to": "evil@example.com"}, "list": ["evil@example.com", pad]});
        let e =
            Entry::call("c", "p", "t", Event::Requested { verdict: "a".into(), reason: "r".into(), arguments: deep });
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(json_len(&arguments) <= MAX_ARGUMENTS_BYTES);
        assert_eq!(arguments["message"]["to"], "evil@example.com");
        assert_eq!(arguments["list"][0], "evil@example.com");
        assert!(arguments["list"][1].as_str().unwrap().ends_with(CUT_MARK));
        // Past the depth limit a value is a marker, and the record still fits.
        let mut nested = json!(pad);
        for _ in 0..MAX_SHRUNK_DEPTH + 2 {
            nested = json!({ "a": nested });
        }
        let e =
            Entry::call("c", "p", "t", Event::Requested { verdict: "a".into(), reason: "r".into(), arguments: nested });
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(json_len(&arguments) <= MAX_ARGUMENTS_BYTES);
        let mut inner = &arguments;
        for _ in 0..MAX_SHRUNK_DEPTH {
            inner = &inner["a"];
        }
        assert!(inner.as_str().unwrap().starts_with("[omitted: "), "{inner}");
    }

    #[test]
    fn a_providers_text_is_kept_with_its_hidden_characters_shown() {
        let egress = Event::Egress {
            kind: None,
            host: "evil\u{202e}moc.example".into(),
            port: 443,
            address: None,
            refused: Some("evil\u{202e}moc.example:443 is not a granted host".into()),
            bytes_up: 0,
            bytes_down: 0,
            duration_ms: 0,
        };
        let Event::Egress { host, refused, .. } = Entry::log(egress).bounded().event else { unreachable!() };
        assert_eq!(host, "evil\\u{202e}moc.example");
        assert_eq!(refused.as_deref(), Some("evil\\u{202e}moc.example:443 is not a granted host"));
        let failed = Entry::call("c", "p", "t", Event::Failed { error: "bad\u{1b}[2J\u{200b}\nline".into() }).bounded();
        assert_eq!(failed.event, Event::Failed { error: "bad\\u{1b}[2J\\u{200b}\\u{a}line".into() });
        let plain = Entry::call("c", "p", "t", Event::Cancelled { reason: "caller cancelled".into() }).bounded();
        assert_eq!(plain.event, Event::Cancelled { reason: "caller cancelled".into() }, "plain text is kept as is");
    }

    #[test]
    fn text_that_escapes_or_takes_many_bytes_is_cut_to_fit_and_cut_names_stay_apart() {
        let long = "k".repeat(300);
        let arguments = json!({"subject": "\u{1}\"é😀".repeat(30_000), "to": "evil@example.com",
            format!("{long}a"): "first", format!("{long}b"): "second"});
        let e = Entry::call("c", "p", "t", Event::Requested { verdict: "a".into(), reason: "r".into(), arguments });
        let Event::Requested { arguments, .. } = e.bounded().event else { panic!() };
        assert!(json_len(&arguments) <= MAX_ARGUMENTS_BYTES, "{}", json_len(&arguments));
        assert_eq!(arguments["to"], "evil@example.com");
        assert!(arguments["subject"].as_str().unwrap().ends_with(CUT_MARK));
        let values: Vec<_> = arguments.as_object().unwrap().values().collect();
        assert!(values.contains(&&json!("first")) && values.contains(&&json!("second")), "{arguments}");
    }

    #[test]
    fn flags_are_bounded_in_number_and_length() {
        let flags = vec!["f".repeat(MAX_TEXT_CHARS + 1); MAX_FLAGS + 5];
        let e = Entry::log(Event::Withheld { reason: "r".into(), flags }).bounded();
        let Event::Withheld { flags, .. } = e.event else { panic!() };
        assert_eq!(flags.len(), MAX_FLAGS);
        assert!(flags[0].ends_with(CUT_MARK));
    }

    #[test]
    fn a_record_is_one_line_whatever_its_text() {
        let e = Entry::call("c\n", "p", "t", Event::Failed { error: "a\nb\r\u{2028}\u{0}".into() });
        let line = serde_json::to_string(&e).unwrap();
        assert!(!line.contains('\n') && !line.contains('\r'));
    }
}
