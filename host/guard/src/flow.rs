//! The data-flow rules applied to one call: the values its arguments carry of what
//! results read earlier in its conversation said (`Provenance`), and the sequence
//! rule, judged by the policy's `flow` rules; and what a result leaves behind for the
//! calls after it.

use wasmgate_audit::CarriedValue;
use wasmgate_policy::{Decision, FlowAction, FlowRule, Policy, Seen, ValueKind, Verdict};

use crate::provenance::{Carried, Sequence, Source, rank};

/// The conversation of a call made outside any that the one serving it names (a library
/// user's own calls, `wasmgate call`): one for the whole guard.
pub(crate) const UNNAMED: &str = "-";

/// What the data-flow rules say about a call.
#[derive(Debug)]
pub(crate) struct Judged {
    /// The strictest action of the rules that apply.
    pub(crate) action: FlowAction,
    /// Why, naming the argument, the kind of value and where it was first seen; empty
    /// when nothing applies.
    pub(crate) reason: String,
    /// Every argument that carries a remembered value.
    pub(crate) carried: Vec<Carried>,
}

/// Judges a call of `tool` of `provider` (a `sink` or not) that `carried` values of
/// its conversation's results, after what started the sequence rules there, if anything
/// did ([`Provenance::recall`]).
pub(crate) fn judge(
    policy: &Policy,
    (provider, tool): (&str, &str),
    sink: bool,
    carried: Vec<Carried>,
    sequence: Sequence,
) -> Judged {
    let mut action = FlowAction::Allow;
    let mut reason = String::new();
    // Of the values whose rules are equally strict, the message names the most telling.
    let mut named = u8::MAX;
    for value in &carried {
        let origin = &value.origin;
        let seen = Seen {
            flagged: origin.flagged,
            prose: origin.prose,
            other_provider: origin.source.provider != provider,
            link: is_link(value),
        };
        let decided = policy.flow_decision(provider, tool, &value.pointer, seen, sink);
        let telling = rank(value.kind);
        if decided.action > action || decided.action == action && action > FlowAction::Allow && telling < named {
            named = telling;
            action = decided.action;
            let link = decided.rule == FlowRule::Link;
            reason =
                format!("{}; the policy's flow rule `{}` {}", carries(value, link), decided.key, does(decided.action));
        }
    }
    if !sink {
        return Judged { action, reason, carried };
    }
    // The sequence rules, the stricter first: being seen to follow an injected passage
    // says more than having read one.
    if let Some(source) = sequence.steered {
        let after = policy.after_steered(provider);
        if after > action {
            action = after;
            reason = format!(
                "`{tool}` is a sink, and a call earlier in this conversation carried a value from the flagged \
                 result of {}; the policy's flow rule `sink_after_steered` {}",
                place(&source),
                does(after)
            );
        }
    }
    if let Some((source, flagged)) = sequence.after {
        let after = policy.after_flagged(provider);
        if after > action {
            action = after;
            let what = if flagged { "a flagged result" } else { "a result the policy names" };
            reason = format!(
                "`{tool}` is a sink, and this conversation has read {what} ({}); the policy's flow rule \
                 `sink_after_flagged` {}",
                place(&source),
                does(after)
            );
        }
    }
    Judged { action, reason, carried }
}

/// `decision` with the data-flow rules' `judged` action: a denied call stays denied; a
/// `deny` refuses the call, an `ask` asks about it, a `flag` notes why in its reason.
pub(crate) fn with_flow(decision: Decision, judged: &Judged) -> Decision {
    match judged.action {
        FlowAction::Allow => decision,
        _ if decision.verdict == Verdict::Deny => decision,
        FlowAction::Deny => Decision { verdict: Verdict::Deny, reason: judged.reason.clone() },
        FlowAction::Ask if decision.verdict == Verdict::Ask => {
            Decision { verdict: Verdict::Ask, reason: format!("{}; {}", judged.reason, decision.reason) }
        }
        FlowAction::Ask => Decision { verdict: Verdict::Ask, reason: judged.reason.clone() },
        FlowAction::Flag => {
            Decision { verdict: decision.verdict, reason: format!("{}; flagged: {}", decision.reason, judged.reason) }
        }
    }
}

/// The audit record's account of what a call carried: where, never what.
pub(crate) fn recorded(carried: &[Carried]) -> Vec<CarriedValue> {
    carried
        .iter()
        .map(|c| CarriedValue {
            argument: c.pointer.clone(),
            kind: c.kind.id().to_owned(),
            provider: c.origin.source.provider.clone(),
            tool: c.origin.source.tool.clone(),
            record: c.origin.source.record,
            flagged: c.origin.flagged,
            prose: c.origin.prose,
        })
        .collect()
}

/// Whether the argument is a link a result wrote, unchanged: a URL or a host name, and
/// nothing else.
fn is_link(value: &Carried) -> bool {
    value.whole && matches!(value.kind, ValueKind::Url | ValueKind::Host)
}

/// The most characters of an argument's name a message shows.
const MAX_ARGUMENT_SHOWN: usize = 80;

/// "argument `calendarUrl` carries a URL first seen in the flagged result of caldav
/// `list-events`, audit record 14".
fn carries(value: &Carried, link: bool) -> String {
    // The model chose the argument's name: shown escaped and cut, as any text it wrote.
    let argument = value.pointer.strip_prefix('/').unwrap_or(&value.pointer);
    let argument = text_safety::escape_for_log_cut(argument, MAX_ARGUMENT_SHOWN);
    let which = match (value.origin.flagged, value.origin.prose) {
        (true, _) => "the flagged result",
        (false, true) => "the running text of a result",
        (false, false) => "a result",
    };
    // A fetch following a link: the argument is the link itself.
    let verb = if link { "is" } else { "carries" };
    format!("argument `{argument}` {verb} {} first seen in {which} of {}", value.kind.a(), place(&value.origin.source))
}

/// "caldav `list-events`, audit record 14".
fn place(source: &Source) -> String {
    match source.record {
        Some(record) => format!("{} `{}`, audit record {record}", source.provider, source.tool),
        None => format!("{} `{}`", source.provider, source.tool),
    }
}

fn does(action: FlowAction) -> &'static str {
    match action {
        FlowAction::Allow => "allows it",
        FlowAction::Flag => "lets it run, noted",
        FlowAction::Ask => "asks before it runs",
        FlowAction::Deny => "refuses it",
    }
}
