//! The data-flow rules: what a call may carry of what untrusted results said.
//!
//! The guard remembers the values each result carried (`values`) and where they stood
//! (in a passage the detector flagged or not), and finds them again in a later call's
//! arguments. These rules say what such a call gets, by where the value was first seen:
//!
//! * `flagged`: in a passage the detector flagged;
//! * `prose`: inside running text (a sentence, not a field or list item of its own,
//!   where a system writes the identifiers it returns): where an injected instruction
//!   puts the values it wants carried;
//! * `other_provider`: in a result of another provider than the one called;
//! * `untrusted`: in any provider's result.
//!
//! A value can be several of these at once; the strictest action that applies is taken.
//! Each has a `sink_` twin for tools that send, write, pay, share or fetch a URL
//! ([`Policy::is_sink`](crate::Policy::is_sink)): a sink gets the stricter of the two.
//! A fetch (a sink that sends nothing but the URL it is given, named in `fetches`) whose
//! argument is, unchanged, a link a result wrote (a URL or a host name, the whole
//! argument) follows that link and carries nothing else out: `sink_link` decides it in
//! place of `sink_prose` (a flagged passage's link stays `flagged`, and the other keys
//! still apply).
//! Two sequence rules act on every call to a sink, whatever it carries:
//! `sink_after_flagged` once a context has read a flagged result (or a result of a tool
//! its provider lists in `after`), and `sink_after_steered` once a call of the context
//! has carried a value from a flagged passage: the model has been seen doing what the
//! injected passage asked, so what it does next is not the user's alone.
//!
//! Rules are written at four scopes, the narrowest that sets a key deciding: an
//! argument of a tool (by JSON pointer), a tool, a provider, and the whole policy
//! (`[flow]`), over the defaults of [`FlowRules::DEFAULTS`].

use serde::Deserialize;

use crate::verdict::Verdict;

/// What a rule does with a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowAction {
    /// Let it run.
    Allow,
    /// Let it run, noting why in the audit record's reason.
    Flag,
    /// Ask an approver first (no one to ask: refused).
    Ask,
    /// Refuse it.
    Deny,
}

impl FlowAction {
    /// The word of the policy file.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            FlowAction::Allow => "allow",
            FlowAction::Flag => "flag",
            FlowAction::Ask => "ask",
            FlowAction::Deny => "deny",
        }
    }

    /// The verdict it comes to: `flag` runs the call.
    #[must_use]
    pub fn verdict(self) -> Verdict {
        match self {
            FlowAction::Allow | FlowAction::Flag => Verdict::Allow,
            FlowAction::Ask => Verdict::Ask,
            FlowAction::Deny => Verdict::Deny,
        }
    }
}

/// Where a value a call carries was first seen, as the rules tell it apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// In a passage the detector flagged.
    pub flagged: bool,
    /// Inside running text.
    pub prose: bool,
    /// In a result of another provider than the one called.
    pub other_provider: bool,
    /// A link (URL or host name) that is the whole argument, unchanged.
    pub link: bool,
}

/// Which rule decided, for the message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowRule {
    /// `flagged` (or `sink_flagged`).
    Flagged,
    /// `prose` (or `sink_prose`).
    Prose,
    /// `other_provider` (or `sink_other_provider`).
    OtherProvider,
    /// `untrusted` (or `sink_untrusted`).
    Untrusted,
    /// `sink_link`: a fetch following a link a result wrote.
    Link,
}

impl FlowRule {
    /// The key of the rule for a tool that is (`sink`) or is not a sink.
    #[must_use]
    pub fn key(self, sink: bool) -> &'static str {
        match (self, sink) {
            (FlowRule::Flagged, false) => "flagged",
            (FlowRule::Prose, false) => "prose",
            (FlowRule::Prose, true) => "sink_prose",
            (FlowRule::OtherProvider, false) => "other_provider",
            (FlowRule::Untrusted, false) => "untrusted",
            (FlowRule::Flagged, true) => "sink_flagged",
            (FlowRule::OtherProvider, true) => "sink_other_provider",
            (FlowRule::Untrusted, true) => "sink_untrusted",
            (FlowRule::Link, _) => "sink_link",
        }
    }
}

/// One scope's rules; a key left unset is decided by the wider scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowRules {
    /// A value from a flagged passage, into any tool.
    pub flagged: Option<FlowAction>,
    /// A value from running text, into any tool.
    pub prose: Option<FlowAction>,
    /// A value from another provider's result, into any tool.
    pub other_provider: Option<FlowAction>,
    /// A value from any untrusted result, into any tool.
    pub untrusted: Option<FlowAction>,
    /// A value from a flagged passage, into a sink.
    pub sink_flagged: Option<FlowAction>,
    /// A value from running text, into a sink.
    pub sink_prose: Option<FlowAction>,
    /// A value from another provider's result, into a sink.
    pub sink_other_provider: Option<FlowAction>,
    /// A value from any untrusted result, into a sink.
    pub sink_untrusted: Option<FlowAction>,
    /// Any call to a sink once the context has read a flagged result.
    pub sink_after_flagged: Option<FlowAction>,
    /// Any call to a sink once a call of the context has carried a value from a
    /// flagged passage.
    pub sink_after_steered: Option<FlowAction>,
    /// A fetch whose argument is, unchanged, a link from outside a flagged passage.
    pub sink_link: Option<FlowAction>,
}

impl FlowRules {
    /// The defaults, under every scope: a value from a flagged passage is refused in
    /// any tool's arguments (a read can carry data out as well as a write); a sink is
    /// asked about when it carries a value from running text, or once a call of the
    /// conversation has carried a value from a flagged passage; a sink carrying any
    /// other value of a result, a sink called after a flagged result was read, and a
    /// fetch following a link a result wrote, are let run and noted. Chosen by the
    /// figures of the AgentDojo replay (docs/POLICY.md).
    pub const DEFAULTS: FlowRules = FlowRules {
        flagged: Some(FlowAction::Deny),
        prose: Some(FlowAction::Allow),
        other_provider: Some(FlowAction::Allow),
        untrusted: Some(FlowAction::Allow),
        sink_flagged: Some(FlowAction::Deny),
        sink_prose: Some(FlowAction::Ask),
        sink_other_provider: Some(FlowAction::Flag),
        sink_untrusted: Some(FlowAction::Flag),
        sink_after_flagged: Some(FlowAction::Flag),
        sink_after_steered: Some(FlowAction::Ask),
        sink_link: Some(FlowAction::Flag),
    };

    /// The action of `rule` at this scope, if it sets one.
    #[must_use]
    pub fn get(&self, rule: FlowRule, sink: bool) -> Option<FlowAction> {
        match (rule, sink) {
            (FlowRule::Flagged, false) => self.flagged,
            (FlowRule::Prose, false) => self.prose,
            (FlowRule::Prose, true) => self.sink_prose,
            (FlowRule::OtherProvider, false) => self.other_provider,
            (FlowRule::Untrusted, false) => self.untrusted,
            (FlowRule::Flagged, true) => self.sink_flagged,
            (FlowRule::OtherProvider, true) => self.sink_other_provider,
            (FlowRule::Untrusted, true) => self.sink_untrusted,
            (FlowRule::Link, false) => None,
            (FlowRule::Link, true) => self.sink_link,
        }
    }

    /// Whether it sets any `sink_` key (a tool's or an argument's rules may not: whether
    /// the tool is a sink is already known there).
    pub(crate) fn sets_sink_keys(&self) -> bool {
        self.sink_flagged.is_some()
            || self.sink_prose.is_some()
            || self.sink_other_provider.is_some()
            || self.sink_untrusted.is_some()
            || self.sink_after_flagged.is_some()
            || self.sink_after_steered.is_some()
            || self.sink_link.is_some()
    }
}

/// One argument's rules of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgumentFlow {
    /// The argument, as a JSON pointer; the rules cover what is under it too.
    pub pointer: String,
    /// Its rules (`flagged`, `prose`, `other_provider`, `untrusted`).
    pub rules: FlowRules,
}

impl ArgumentFlow {
    /// Whether `pointer` (of a value a call carries) is this argument or under it.
    #[must_use]
    pub fn covers(&self, pointer: &str) -> bool {
        pointer.strip_prefix(self.pointer.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    }
}

/// The decision of the rules about one value a call carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowDecision {
    /// What is done.
    pub action: FlowAction,
    /// The rule that decided.
    pub rule: FlowRule,
    /// Its key in the policy file.
    pub key: &'static str,
}

/// Where a `flow` table is written, which decides the keys it may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scope {
    /// `[flow]`: the eleven actions.
    Policy,
    /// `[providers.<name>.flow]`: the eleven actions and `after`.
    Provider,
    /// A tool's `flow`: `flagged`, `prose`, `other_provider`, `untrusted` and `arguments`.
    Tool,
}

/// A `flow` table validated: its rules, `after` (a provider's) and `arguments` (a tool's).
pub(crate) type Validated = (FlowRules, Vec<crate::glob::Glob>, Vec<ArgumentFlow>);

/// Validates the `flow` table at `key`, written at `scope`.
pub(crate) fn validated(
    src: &crate::error::Source<'_>,
    key: &str,
    raw: toml::Spanned<crate::file::RawFlow>,
    scope: Scope,
) -> Result<Validated, crate::error::PolicyError> {
    let span = raw.span();
    let raw = raw.into_inner();
    let rules = FlowRules {
        flagged: raw.flagged,
        prose: raw.prose,
        other_provider: raw.other_provider,
        untrusted: raw.untrusted,
        sink_flagged: raw.sink_flagged,
        sink_prose: raw.sink_prose,
        sink_other_provider: raw.sink_other_provider,
        sink_untrusted: raw.sink_untrusted,
        sink_after_flagged: raw.sink_after_flagged,
        sink_after_steered: raw.sink_after_steered,
        sink_link: raw.sink_link,
    };
    if scope == Scope::Tool && rules.sets_sink_keys() {
        return Err(src.error(
            span,
            key,
            "a tool's flow rules name `sink_` keys",
            "write `flagged`, `prose`, `other_provider` and `untrusted` here (they decide for this tool, sink or not); \
             `sink_` keys belong in a provider's or the policy's `flow` table",
        ));
    }
    if scope != Scope::Provider && !raw.after.is_empty() {
        return Err(src.error(
            span,
            &format!("{key}.after"),
            "`after` outside a provider's flow table",
            "list the tools whose results start the sequence rule under [providers.<name>.flow], by the \
             provider's own names",
        ));
    }
    if scope != Scope::Tool && !raw.arguments.is_empty() {
        return Err(src.error(
            span,
            &format!("{key}.arguments"),
            "`arguments` outside a tool's flow table",
            "write argument rules in the tool's table: flow = { arguments = [{ pointer = \"/url\", ... }] }",
        ));
    }
    let after = raw.after.into_iter().map(|glob| crate::glob::Glob::new(glob.get_ref())).collect();
    let mut arguments = Vec::new();
    for (i, argument) in raw.arguments.into_iter().enumerate() {
        let span = argument.span();
        let argument = argument.into_inner();
        let pointer = argument.pointer.into_inner();
        if !crate::constraint::is_valid_pointer(&pointer) {
            return Err(src.error(
                span,
                &format!("{key}.arguments[{i}].pointer"),
                format!("{pointer:?} is not a JSON pointer"),
                "start it with `/`, e.g. \"/url\" (`~1` for `/` and `~0` for `~` inside a name)",
            ));
        }
        let rules = FlowRules {
            flagged: argument.flagged,
            prose: argument.prose,
            other_provider: argument.other_provider,
            untrusted: argument.untrusted,
            ..FlowRules::default()
        };
        arguments.push(ArgumentFlow { pointer, rules });
    }
    Ok((rules, after, arguments))
}

/// Why a tool's reviewed definition says it is a sink, if it does: its annotations say
/// `destructiveHint: true` or `openWorldHint: true`. Only a hint that is there counts
/// (MCP's defaults for absent hints would make every tool one), and a hint can only
/// make a tool a sink, never take that away from a tool the policy names.
#[must_use]
pub fn annotated_sink(definition: &serde_json::Value) -> Option<&'static str> {
    let hint = |name: &str| definition.pointer(&format!("/annotations/{name}")).and_then(serde_json::Value::as_bool);
    if hint("destructiveHint") == Some(true) {
        Some("its annotations say it is destructive (destructiveHint)")
    } else if hint("openWorldHint") == Some(true) {
        Some("its annotations say it reaches the open world (openWorldHint)")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Policy;
    use serde_json::json;

    const SEEN_FLAGGED: Seen = Seen { flagged: true, prose: false, other_provider: false, link: false };
    const SEEN_OTHER: Seen = Seen { flagged: false, prose: false, other_provider: true, link: false };
    const SEEN_PLAIN: Seen = Seen { flagged: false, prose: false, other_provider: false, link: false };
    const SEEN_PROSE: Seen = Seen { flagged: false, prose: true, other_provider: false, link: false };

    fn policy(text: &str) -> Policy {
        Policy::from_toml(text, "test").unwrap()
    }

    #[test]
    fn the_defaults_refuse_a_flagged_value_anywhere_ask_about_prose_in_a_sink_and_note_the_rest() {
        let p = policy("[providers.mail]\nunlisted = \"allow\"\nsinks = [\"send*\"]\n");
        let action = |tool: &str, seen, sink| p.flow_decision("mail", tool, "/to", seen, sink).action;
        let prose = SEEN_PROSE;
        assert_eq!(action("read", SEEN_FLAGGED, false), FlowAction::Deny);
        assert_eq!(action("read", SEEN_OTHER, false), FlowAction::Allow);
        assert_eq!(action("read", SEEN_PLAIN, false), FlowAction::Allow);
        assert_eq!(action("read", prose, false), FlowAction::Allow);
        assert_eq!(action("send", SEEN_PLAIN, true), FlowAction::Flag);
        assert_eq!(action("send", SEEN_OTHER, true), FlowAction::Flag);
        assert_eq!(action("send", prose, true), FlowAction::Ask);
        assert_eq!(action("send", SEEN_FLAGGED, true), FlowAction::Deny);
        assert_eq!(p.after_flagged("mail"), FlowAction::Flag);
        assert_eq!(p.after_steered("mail"), FlowAction::Ask);
        assert!(p.names_sink("mail", "send_email") && !p.names_sink("mail", "read"));
        assert!(!p.names_sink("other", "send"), "an unknown provider names no sink");
    }

    #[test]
    fn the_narrowest_scope_that_sets_a_key_decides_and_a_sink_takes_the_stricter_of_its_two_keys() {
        let p = policy(
            r#"
[flow]
untrusted = "ask"
sink_untrusted = "allow"

[providers.mail]
unlisted = "allow"
[providers.mail.flow]
other_provider = "deny"
after = ["fetch_*"]
sink_after_flagged = "deny"

[providers.web.flow]
sink_after_steered = "flag"

[providers.mail.tools.send]
verdict = "allow"
flow = { untrusted = "flag", arguments = [{ pointer = "/body", untrusted = "allow", flagged = "ask" }] }
"#,
        );
        let decide = |tool: &str, pointer: &str, seen, sink| p.flow_decision("mail", tool, pointer, seen, sink);
        // The policy's `untrusted`, and for a sink the stricter of it and `sink_untrusted`.
        assert_eq!(decide("read", "/x", SEEN_PLAIN, false).action, FlowAction::Ask);
        let sink = decide("read", "/x", SEEN_PLAIN, true);
        assert_eq!((sink.action, sink.key), (FlowAction::Ask, "untrusted"));
        // The provider's `other_provider`, the strictest that applies, named.
        let other = decide("read", "/x", SEEN_OTHER, false);
        assert_eq!(
            (other.action, other.rule, other.key),
            (FlowAction::Deny, FlowRule::OtherProvider, "other_provider")
        );
        // The tool's own, then its argument's (and what is under it).
        assert_eq!(decide("send", "/to", SEEN_PLAIN, true).action, FlowAction::Flag);
        assert_eq!(decide("send", "/body", SEEN_PLAIN, true).action, FlowAction::Allow);
        assert_eq!(decide("send", "/body/0", SEEN_FLAGGED, true).action, FlowAction::Ask);
        assert_eq!(decide("send", "/bodyguard", SEEN_FLAGGED, true).action, FlowAction::Deny, "not under /body");
        assert_eq!(p.after_flagged("mail"), FlowAction::Deny);
        // The two sequence rules are keys of their own, set per provider.
        assert_eq!((p.after_steered("mail"), p.after_steered("web")), (FlowAction::Ask, FlowAction::Flag));
        assert_eq!(p.after_flagged("web"), FlowAction::Flag);
        assert!(p.starts_sequence("mail", "fetch_page") && !p.starts_sequence("mail", "send"));
    }

    #[test]
    fn a_fetch_following_a_link_of_running_text_is_noted_and_anything_more_is_asked_about() {
        let p = policy("[providers.web]\nunlisted = \"allow\"\nfetches = [\"get_*\"]\nsinks = [\"post\"]\n");
        let decide = |tool: &str, seen, sink| p.flow_decision("web", tool, "/url", seen, sink);
        let link = Seen { link: true, ..SEEN_PROSE };
        assert!(p.names_sink("web", "get_page") && p.names_fetch("web", "get_page") && !p.names_fetch("web", "post"));
        // `wasmgate review` and `wasmgate tools` say why it is a sink.
        let why = p.sink_reason("web", "get_page", &json!({"name": "get_page"}));
        assert_eq!(why.as_deref(), Some("the policy names it a fetch (`fetches`)"));
        let followed = decide("get_page", link, true);
        assert_eq!((followed.action, followed.rule, followed.key), (FlowAction::Flag, FlowRule::Link, "sink_link"));
        // Not the whole argument (a query added, say), or not a fetch: running text's rule.
        assert_eq!(decide("get_page", SEEN_PROSE, true).action, FlowAction::Ask);
        assert_eq!(decide("post", link, true).action, FlowAction::Ask, "a sink that sends more than a URL");
        // A flagged passage's link stays refused, and the sequence rule is not touched.
        assert_eq!(decide("get_page", Seen { flagged: true, ..link }, true).action, FlowAction::Deny);
        assert_eq!((p.after_flagged("web"), p.after_steered("web")), (FlowAction::Flag, FlowAction::Ask));
        // `sink_link` is a key of its own; a rule for any tool still applies.
        let strict = policy("[flow]\nsink_link = \"ask\"\n[providers.web]\nfetches = [\"get\"]\n");
        assert_eq!(strict.flow_decision("web", "get", "/url", link, true).action, FlowAction::Ask);
        let prose = policy("[flow]\nprose = \"deny\"\n[providers.web]\nfetches = [\"get\"]\n");
        let decided = prose.flow_decision("web", "get", "/url", link, true);
        assert_eq!((decided.action, decided.key), (FlowAction::Deny, "prose"));
        let tool = "[providers.web.tools.get]\nverdict = \"allow\"\nflow = { sink_link = \"deny\" }\n";
        let error = Policy::from_toml(tool, "test").unwrap_err().to_string();
        assert!(error.contains("`sink_` keys belong"), "{error}");
    }

    #[test]
    fn a_key_at_a_scope_that_cannot_have_it_is_an_error_that_says_where_it_belongs() {
        let error = |text: &str| Policy::from_toml(text, "test").unwrap_err().to_string();
        let tool_sink =
            error("[providers.mail.tools.send]\nverdict = \"allow\"\nflow = { sink_untrusted = \"deny\" }\n");
        assert!(tool_sink.contains("`sink_` keys belong in a provider's or the policy's `flow` table"), "{tool_sink}");
        let tool_sequence =
            error("[providers.mail.tools.send]\nverdict = \"allow\"\nflow = { sink_after_steered = \"deny\" }\n");
        assert!(tool_sequence.contains("`sink_` keys belong"), "{tool_sequence}");
        let global_after = error("[flow]\nafter = [\"x\"]\n");
        assert!(global_after.contains("`after` outside a provider's flow table"), "{global_after}");
        let provider_arguments = error("[providers.mail.flow]\narguments = [{ pointer = \"/x\" }]\n");
        assert!(provider_arguments.contains("`arguments` outside a tool's flow table"), "{provider_arguments}");
        let pointer = error(
            "[providers.mail.tools.send]\nverdict = \"allow\"\nflow = { arguments = [{ pointer = \"body\" }] }\n",
        );
        assert!(pointer.contains("\"body\" is not a JSON pointer"), "{pointer}");
        let unknown = error("[flow]\nflaged = \"deny\"\n");
        assert!(unknown.contains("flaged"), "{unknown}");
        let action = error("[flow]\nflagged = \"block\"\n");
        assert!(action.contains("block"), "{action}");
    }

    #[test]
    fn annotations_can_make_a_tool_a_sink_only_when_they_say_so() {
        let p = policy("[providers.mail]\nsinks = [\"send\"]\n");
        let plain = json!({"name": "x"});
        let destructive = json!({"name": "x", "annotations": {"destructiveHint": true}});
        let open = json!({"name": "x", "annotations": {"readOnlyHint": true, "openWorldHint": true}});
        let denies = json!({"name": "x", "annotations": {"destructiveHint": false, "openWorldHint": false}});
        assert_eq!(p.sink_reason("mail", "read", &plain), None, "absent hints make no sink");
        assert_eq!(p.sink_reason("mail", "read", &denies), None);
        assert!(p.sink_reason("mail", "read", &destructive).unwrap().contains("destructive (destructiveHint)"));
        assert!(p.sink_reason("mail", "read", &open).unwrap().contains("open world (openWorldHint)"));
        assert_eq!(
            p.sink_reason("mail", "send", &denies).as_deref(),
            Some("the policy names it a sink (`sinks`)"),
            "a hint cannot take away what the policy names"
        );
    }
}

#[cfg(test)]
mod documented {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::Policy;

    /// The example of docs/POLICY.md, "Data-flow rules", as written there.
    const EXAMPLE: &str = r#"
[flow]                               # every provider
sink_untrusted = "ask"               # stricter than the default
sink_after_flagged = "ask"           # after a flagged result, every sink asked about

[providers.web]
fetches = ["fetch"]                  # a sink that sends nothing but the URL it is given
[providers.web.flow]
other_provider = "ask"               # a value of another provider's result, into any of its tools
after = ["fetch"]                    # any result of `fetch` starts `sink_after_flagged`, flagged or not

[providers.mail]
sinks = ["send_email"]
[providers.mail.tools.send_email]
verdict = "allow"
# Its body may quote what a result said, but not a flagged passage.
flow = { arguments = [{ pointer = "/body", prose = "allow", untrusted = "allow" }] }
"#;

    #[test]
    fn the_documented_example_parses_and_decides_as_documented() {
        let p = Policy::from_toml(EXAMPLE, "docs/POLICY.md").unwrap();
        let seen = |flagged, prose, other_provider| Seen { flagged, prose, other_provider, link: false };
        let send = |pointer: &str, seen| p.flow_decision("mail", "send_email", pointer, seen, true).action;
        assert_eq!(send("/to", seen(false, false, false)), FlowAction::Ask, "[flow] sink_untrusted");
        assert_eq!(send("/body", seen(false, true, false)), FlowAction::Allow, "the body's own rules");
        assert_eq!(send("/body", seen(true, true, false)), FlowAction::Deny, "but not a flagged passage");
        let web = |seen, sink| p.flow_decision("web", "search", "/q", seen, sink).action;
        assert_eq!(web(seen(false, false, true), false), FlowAction::Ask, "other_provider, into any of its tools");
        assert!(p.names_sink("web", "fetch") && p.starts_sequence("web", "fetch"));
        assert_eq!((p.after_flagged("mail"), p.after_steered("mail")), (FlowAction::Ask, FlowAction::Ask));
        let link = Seen { link: true, ..seen(false, true, false) };
        assert_eq!(
            p.flow_decision("web", "fetch", "/url", link, true).action,
            FlowAction::Ask,
            "[flow] sink_untrusted"
        );
    }
}
