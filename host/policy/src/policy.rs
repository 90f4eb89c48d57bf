//! [`Policy`]: the validated policy file, and [`Policy::decide`], the pure function that answers
//! allow, ask or deny for one call.

use crate::budget::{Budget, Each, Per};
use crate::callers::{CallerMatch, CallerRule, first_for};
use crate::constraint::{Constraint, is_valid_pointer};
use crate::error::{MAX_POLICY_BYTES, PolicyError, Source};
use crate::file::{RawBudget, RawCallerRule, RawConstraint, RawPolicy, RawProvider};
use crate::flow::{FlowAction, FlowDecision, FlowRule, FlowRules, Scope, Seen};
use crate::glob::Glob;
use crate::name::{MAX_PROVIDER_NAME, is_valid_tool_name, validate_provider};
use crate::provider::{
    DEFAULT_MEDIA_MAX_BYTES, DEFAULT_MEDIA_TYPES, DEFAULT_SAMPLING_MAX_TOKENS, FormatterRule, LimitOverrides,
    ProviderPolicy, ToolRule,
};
use crate::verdict::{Decision, Verdict};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use toml::Spanned;
use wasmgate_egress::HostGrant;

/// The whole policy: one [`ProviderPolicy`] per configured provider.
#[derive(Debug, Clone)]
pub struct Policy {
    providers: BTreeMap<String, ProviderPolicy>,
    budgets: Vec<Budget>,
    /// The `[flow]` rules, over the defaults.
    flow: FlowRules,
    /// How long an ask routed to reviewers waits for an answer (`[approvals]`).
    approval_deadline: std::time::Duration,
    /// Who may use the web console (`[console]`).
    console: ConsoleRoles,
}

/// What a caller may do in the web console: a reviewer decides reviews and answers
/// asks; an admin does that and reads the audit log too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConsoleRole {
    /// Reviews and approvals.
    Reviewer,
    /// Reviews, approvals and the audit log.
    Admin,
}

/// The `[console]` table: the callers who are reviewers, and those who are admins.
#[derive(Debug, Clone, Default, PartialEq)]
struct ConsoleRoles {
    reviewers: Vec<CallerMatch>,
    admins: Vec<CallerMatch>,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            providers: BTreeMap::new(),
            budgets: Vec::new(),
            flow: FlowRules::default(),
            approval_deadline: std::time::Duration::from_secs(DEFAULT_APPROVAL_DEADLINE_SECONDS),
            console: ConsoleRoles::default(),
        }
    }
}

/// How long an ask routed to reviewers waits, unless `[approvals] deadline_seconds` says.
pub const DEFAULT_APPROVAL_DEADLINE_SECONDS: u64 = 300;

/// The longest `[approvals] deadline_seconds` (a day): a call holds its caller's
/// request open while it waits.
pub const MAX_APPROVAL_DEADLINE_SECONDS: u64 = 86_400;

impl Policy {
    /// Reads and validates a policy file. Relative formatter paths are resolved against the file's
    /// directory.
    pub fn load(path: &Path) -> Result<Policy, PolicyError> {
        let read = |source| PolicyError::Read { path: path.to_owned(), source };
        let origin = path.display().to_string();
        let limit = MAX_POLICY_BYTES as u64;
        let text = std::fs::File::open(path).and_then(|f| crate::capped::read_capped_text(f, limit)).map_err(read)?;
        let Some(text) = text else {
            return Err(PolicyError::TooLarge { origin, len: MAX_POLICY_BYTES + 1 });
        };
        let mut policy = Policy::from_toml(&text, &origin)?;
        let base = path.parent().unwrap_or(Path::new(""));
        for provider in policy.providers.values_mut() {
            for rule in &mut provider.formatters {
                if rule.wasm.is_relative() {
                    rule.wasm = base.join(&rule.wasm);
                }
            }
            for screen in &mut provider.screens {
                if screen.is_relative() {
                    *screen = base.join(&*screen);
                }
            }
        }
        Ok(policy)
    }

    /// Parses and validates policy text; `origin` names it in errors (usually the file path).
    pub fn from_toml(text: &str, origin: &str) -> Result<Policy, PolicyError> {
        if text.len() > MAX_POLICY_BYTES {
            return Err(PolicyError::TooLarge { origin: origin.to_owned(), len: text.len() });
        }
        let src = Source { text, origin };
        let raw: RawPolicy = toml::from_str(text).map_err(|e| src.toml_error(&e))?;
        let mut providers = BTreeMap::new();
        for (name, raw) in raw.providers {
            let key = format!("providers.{}", name.get_ref());
            validate_provider(name.get_ref()).map_err(|_| {
                src.error(
                    name.span(),
                    &key,
                    format!("provider name {:?} is not allowed", name.get_ref()),
                    format!(
                        "use 1 to {MAX_PROVIDER_NAME} characters from a-z, 0-9 and '-', starting with a letter or \
                         digit (it becomes the `<provider>__` prefix of every tool name)"
                    ),
                )
            })?;
            let provider = provider(&src, name.get_ref(), &key, raw)?;
            providers.insert(name.into_inner(), provider);
        }
        let mut budgets = Vec::new();
        for (i, raw) in raw.budgets.into_iter().enumerate() {
            budgets.push(budget(&src, i, raw, &providers)?);
        }
        let flow = match raw.flow {
            Some(raw) => crate::flow::validated(&src, "flow", raw, Scope::Policy)?.0,
            None => FlowRules::default(),
        };
        let deadline = match raw.approvals {
            Some(raw) => match raw.get_ref().deadline_seconds {
                Some(seconds) if !(1..=MAX_APPROVAL_DEADLINE_SECONDS).contains(&seconds) => {
                    return Err(src.error(
                        raw.span(),
                        "approvals.deadline_seconds",
                        format!("{seconds} seconds is out of range"),
                        format!("write 1 to {MAX_APPROVAL_DEADLINE_SECONDS} (a day)"),
                    ));
                }
                Some(seconds) => seconds,
                None => DEFAULT_APPROVAL_DEADLINE_SECONDS,
            },
            None => DEFAULT_APPROVAL_DEADLINE_SECONDS,
        };
        let approval_deadline = std::time::Duration::from_secs(deadline);
        let console = match raw.console {
            Some(raw) => {
                let raw = raw.into_inner();
                ConsoleRoles {
                    reviewers: console_matches(&src, "console.reviewers", raw.reviewers)?,
                    admins: console_matches(&src, "console.admins", raw.admins)?,
                }
            }
            None => ConsoleRoles::default(),
        };
        Ok(Policy { providers, budgets, flow, approval_deadline, console })
    }

    /// What the caller with `facts` (`subject` and its token's claims) may do in the web
    /// console (`[console]`): `None` when the policy names them neither reviewer nor
    /// admin. An admin is a reviewer too.
    #[must_use]
    pub fn console_role(&self, facts: &serde_json::Map<String, Value>) -> Option<ConsoleRole> {
        let named = |matches: &[CallerMatch]| matches.iter().any(|m| m.matches(Some(facts)));
        if named(&self.console.admins) {
            Some(ConsoleRole::Admin)
        } else if named(&self.console.reviewers) {
            Some(ConsoleRole::Reviewer)
        } else {
            None
        }
    }

    /// Whether an `ask` of `provider`'s `tool` goes to the gateway's reviewers (the
    /// provider's `ask_reviewers`) instead of the caller's client.
    #[must_use]
    pub fn asks_reviewers(&self, provider: &str, tool: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| p.asks_reviewers(tool))
    }

    /// How long an ask routed to reviewers waits for an answer before it is denied.
    #[must_use]
    pub fn approval_deadline(&self) -> std::time::Duration {
        self.approval_deadline
    }

    /// The `[flow]` rules as written (unset keys take [`FlowRules::DEFAULTS`]).
    #[must_use]
    pub fn flow(&self) -> &FlowRules {
        &self.flow
    }

    /// Whether the policy names `tool` of `provider` a sink (the provider's `sinks`, or
    /// `fetches`).
    #[must_use]
    pub fn names_sink(&self, provider: &str, tool: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| p.names_sink(tool))
    }

    /// Whether the policy names `tool` of `provider` a fetch (the provider's `fetches`):
    /// a sink that sends nothing but the URL it is given.
    #[must_use]
    pub fn names_fetch(&self, provider: &str, tool: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| p.names_fetch(tool))
    }

    /// Why `tool` of `provider`, whose reviewed definition is `definition`, is a sink, if it
    /// is: the policy names it (`sinks`), or its annotations say it destroys or reaches the
    /// open world ([`annotated_sink`](crate::annotated_sink)), which can only add sinks.
    #[must_use]
    pub fn sink_reason(&self, provider: &str, tool: &str, definition: &Value) -> Option<String> {
        if self.names_fetch(provider, tool) {
            return Some("the policy names it a fetch (`fetches`)".to_owned());
        }
        if self.names_sink(provider, tool) {
            return Some("the policy names it a sink (`sinks`)".to_owned());
        }
        crate::flow::annotated_sink(definition).map(|why| {
            format!("{why}; the guard treats it as a sink (name it in the provider's `sinks` to say so in the policy)")
        })
    }

    /// What the data-flow rules do with a call of `tool` of `provider` (a sink or not)
    /// whose argument at `pointer` carries a value first `seen` as given: the strictest
    /// of the rules that apply, each from the narrowest scope that sets it (the
    /// argument's, the tool's, then the provider's and the policy's, whose `sink_` keys
    /// a sink also obeys; a fetch following a link obeys `sink_link` in place of
    /// `sink_prose`).
    #[must_use]
    pub fn flow_decision(&self, provider: &str, tool: &str, pointer: &str, seen: Seen, sink: bool) -> FlowDecision {
        let p = self.providers.get(provider);
        let rule = p.and_then(|p| p.tools.get(tool));
        let wider = [p.map(|p| &p.flow), Some(&self.flow), Some(&FlowRules::DEFAULTS)];
        // A fetch following a link: `sink_link` decides in place of `sink_prose`.
        let link = seen.link && sink && self.names_fetch(provider, tool);
        let resolve = |which: FlowRule| -> (FlowAction, &'static str) {
            let narrow = rule.and_then(|rule| {
                let argument = rule.flow_arguments.iter().filter(|a| a.covers(pointer)).max_by_key(|a| a.pointer.len());
                argument.and_then(|a| a.rules.get(which, false)).or_else(|| rule.flow.get(which, false))
            });
            if let Some(action) = narrow {
                return (action, which.key(false));
            }
            let first = |sink| wider.iter().flatten().find_map(|rules| rules.get(which, sink));
            let base = first(false).unwrap_or(FlowAction::Allow);
            let twin = sink && !(link && which == FlowRule::Prose);
            match first(true) {
                Some(own) if twin && own > base => (own, which.key(true)),
                _ => (base, which.key(false)),
            }
        };
        let mut applies = vec![FlowRule::Untrusted];
        if link {
            applies.push(FlowRule::Link);
        }
        if seen.other_provider {
            applies.push(FlowRule::OtherProvider);
        }
        if seen.prose {
            applies.push(FlowRule::Prose);
        }
        if seen.flagged {
            applies.push(FlowRule::Flagged);
        }
        // The strictest; of equals, the most particular (the last pushed).
        let mut decided = FlowDecision { action: FlowAction::Allow, rule: FlowRule::Untrusted, key: "untrusted" };
        for which in applies {
            let (action, key) = resolve(which);
            if action >= decided.action {
                decided = FlowDecision { action, rule: which, key };
            }
        }
        decided
    }

    /// What the sequence rule does with a call of a sink of `provider` once the context
    /// has read a flagged result (`sink_after_flagged`).
    #[must_use]
    pub fn after_flagged(&self, provider: &str) -> FlowAction {
        self.sequence_rule(provider, |rules| rules.sink_after_flagged)
    }

    /// What the sequence rule does with a call of a sink of `provider` once a call of the
    /// context has carried a value from a flagged passage (`sink_after_steered`).
    #[must_use]
    pub fn after_steered(&self, provider: &str) -> FlowAction {
        self.sequence_rule(provider, |rules| rules.sink_after_steered)
    }

    /// A sequence rule's key as the provider's rules, the policy's or the defaults set it.
    fn sequence_rule(&self, provider: &str, key: impl Fn(&FlowRules) -> Option<FlowAction>) -> FlowAction {
        let p = self.providers.get(provider).map(|p| &p.flow);
        [p, Some(&self.flow), Some(&FlowRules::DEFAULTS)]
            .into_iter()
            .flatten()
            .find_map(key)
            .unwrap_or(FlowAction::Allow)
    }

    /// Whether a result of `tool` of `provider` starts the sequence rule as a flagged
    /// result does (the provider's `flow.after`).
    #[must_use]
    pub fn starts_sequence(&self, provider: &str, tool: &str) -> bool {
        self.providers.get(provider).is_some_and(|p| p.flow_after.iter().any(|g| g.matches(tool)))
    }

    /// The rate limits and call budgets (`[[budgets]]`), in file order.
    pub fn budgets(&self) -> &[Budget] {
        &self.budgets
    }

    /// The policy for one provider.
    pub fn provider(&self, name: &str) -> Option<&ProviderPolicy> {
        self.providers.get(name)
    }

    /// Every configured provider, by name.
    pub fn providers(&self) -> impl Iterator<Item = (&str, &ProviderPolicy)> {
        self.providers.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The providers whose policy allows reading the resource at `uri`. A read is routed
    /// only when exactly one does, so one provider can never answer for another's URIs.
    pub fn resource_readers(&self, uri: &str) -> Vec<&str> {
        self.providers.iter().filter(|(_, p)| p.allows_resource(uri)).map(|(k, _)| k.as_str()).collect()
    }

    /// Allow or deny (never ask) for reading the resource at `uri` from `provider` through a
    /// tool: allowed only when one of the provider's `resources` globs matches, and never
    /// for a URI with a `..` segment ([`climbs`](crate::climbs)).
    /// The provider's caller rules apply: one that denies the caller denies the read.
    pub fn decide_read(&self, provider: &str, uri: &str, caller: Option<&serde_json::Map<String, Value>>) -> Decision {
        match self.providers.get(provider) {
            None => Decision::new(Verdict::Deny, "this resource's provider is not in the policy"),
            Some(_) if crate::climbs(uri) => Decision::new(
                Verdict::Deny,
                "the URI has a `..` path segment: resource globs match URIs as written, so such a URI is never read",
            ),
            Some(p) if p.allows_resource(uri) => match self.refuses_caller(provider, caller) {
                Some(why) => Decision::new(Verdict::Deny, why),
                None => Decision::new(Verdict::Allow, "the policy allows this URI"),
            },
            Some(_) => {
                Decision::new(Verdict::Deny, "no `resources` glob of the policy for this provider matches the URI")
            }
        }
    }

    /// The verdict for `tool` of `provider` before any argument is seen: the tool's rule,
    /// or the provider's verdict for unlisted tools, or deny for an unknown provider.
    /// Argument constraints may still deny a call the rule allows or asks for.
    pub fn static_verdict(&self, provider: &str, tool: &str) -> Verdict {
        self.providers.get(provider).map_or(Verdict::Deny, |p| p.tools.get(tool).map_or(p.unlisted, |r| r.verdict))
    }

    /// Why the caller with `facts` may not use `provider` at all, if the provider's
    /// caller rules deny it (for reads and prompts, which have no verdict of their own).
    pub fn refuses_caller(&self, provider: &str, facts: Option<&serde_json::Map<String, Value>>) -> Option<String> {
        let rule = first_for(&self.providers.get(provider)?.callers, facts)?;
        (rule.verdict == Verdict::Deny)
            .then(|| format!("the policy denies the provider {provider} to {}", rule.callers.describe()))
    }

    /// Whether every call of `tool` of `provider` by the caller with `facts` is denied,
    /// whatever its arguments: the provider's caller rules deny the caller, or the tool's
    /// verdict for the caller is deny. Such a tool is left out of the caller's list.
    pub fn denies_caller(&self, provider: &str, tool: &str, facts: Option<&serde_json::Map<String, Value>>) -> bool {
        let Some(p) = self.providers.get(provider) else { return true };
        if first_for(&p.callers, facts).is_some_and(|rule| rule.verdict == Verdict::Deny) {
            return true;
        }
        match p.tools.get(tool) {
            None => p.unlisted == Verdict::Deny,
            Some(rule) => first_for(&rule.callers, facts).map_or(rule.verdict, |own| own.verdict) == Verdict::Deny,
        }
    }

    /// Whether every call of `tool` of `provider` is denied, whoever makes it: its
    /// verdict (or the provider's for unlisted tools) is deny and no caller rule of the
    /// tool gives anyone more, or the provider's caller rules deny everyone. A tool
    /// that is denied to everyone is not listed.
    pub fn denies_everyone(&self, provider: &str, tool: &str) -> bool {
        let Some(p) = self.providers.get(provider) else { return true };
        if p.callers.iter().find(|rule| rule.callers.is_everyone()).is_some_and(|rule| rule.verdict == Verdict::Deny)
            && p.callers.iter().all(|rule| rule.verdict == Verdict::Deny)
        {
            return true;
        }
        match p.tools.get(tool) {
            None => p.unlisted == Verdict::Deny,
            Some(rule) => {
                rule.verdict == Verdict::Deny && rule.callers.iter().all(|caller| caller.verdict == Verdict::Deny)
            }
        }
    }

    /// Allow, ask or deny for calling `tool` (the provider's own, unprefixed name) of `provider`
    /// with `args`. Pure: the same inputs always give the same decision. Tool annotations are not
    /// an input, so nothing a provider claims about its tools can loosen a verdict.
    pub fn decide(&self, provider: &str, tool: &str, args: &Value) -> Decision {
        self.decide_as(provider, tool, args, None)
    }

    /// [`decide`](Self::decide) for a call made by `caller` (its facts: `subject` and its
    /// token's claims), for constraints that name the caller
    /// ([`Constraint::check_as`](crate::Constraint::check_as)).
    #[must_use]
    pub fn decide_as(
        &self,
        provider: &str,
        tool: &str,
        args: &Value,
        caller: Option<&serde_json::Map<String, Value>>,
    ) -> Decision {
        let Some(p) = self.providers.get(provider) else {
            return Decision::new(Verdict::Deny, "this tool's provider is not in the policy");
        };
        if !is_valid_tool_name(tool) {
            return Decision::new(Verdict::Deny, "the tool name is outside MCP's name rules");
        }
        // The provider's caller rules cap every verdict below: at most what the first
        // rule for this caller gives.
        let ceiling = first_for(&p.callers, caller);
        let capped = |decision: Decision| match ceiling {
            Some(rule) if stricter(rule.verdict, decision.verdict) != decision.verdict => {
                let who = rule.callers.describe();
                let reason = match rule.verdict {
                    Verdict::Deny => format!("the policy denies this provider's tools to {who}"),
                    _ => format!("the policy requires approval for this provider's tools for {who}"),
                };
                Decision::new(rule.verdict, reason)
            }
            _ => decision,
        };
        let Some(rule) = p.tools.get(tool) else {
            let reason = match p.unlisted {
                Verdict::Deny => format!("`{tool}` is not listed in the policy, and unlisted tools are denied"),
                Verdict::Ask => format!("`{tool}` is not listed in the policy; unlisted tools need approval"),
                Verdict::Allow => format!("`{tool}` is not listed in the policy; unlisted tools are allowed"),
            };
            return capped(Decision::new(p.unlisted, reason));
        };
        // A caller rule of the tool's own replaces its verdict for the callers it is for.
        let (verdict, whom) = match first_for(&rule.callers, caller) {
            Some(own) => (own.verdict, format!(" for {}", own.callers.describe())),
            None => (rule.verdict, String::new()),
        };
        if verdict == Verdict::Deny {
            return Decision::new(Verdict::Deny, format!("the policy denies `{tool}`{whom}"));
        }
        if let Some(why) = rule.constraints.iter().find_map(|c| c.check_as(args, caller).err()) {
            return Decision::new(Verdict::Deny, format!("{why} (policy for `{tool}`)"));
        }
        capped(match verdict {
            Verdict::Allow => Decision::new(Verdict::Allow, format!("the policy allows `{tool}`{whom}")),
            _ => Decision::new(Verdict::Ask, format!("the policy requires approval for `{tool}`{whom}")),
        })
    }
}

/// The policy of provider `provider_name`, whose table is `key` (`providers.<name>`).
fn provider(src: &Source<'_>, provider_name: &str, key: &str, raw: RawProvider) -> Result<ProviderPolicy, PolicyError> {
    let absolute = |paths: Vec<Spanned<String>>, field: &str| -> Result<Vec<PathBuf>, PolicyError> {
        paths
            .into_iter()
            .map(|p| {
                if Path::new(p.get_ref()).is_absolute() {
                    return Ok(p.into_inner().into());
                }
                Err(src.error(
                    p.span(),
                    &format!("{key}.{field}"),
                    format!("{:?} is not an absolute path", p.get_ref()),
                    "give absolute paths; confinement rules cannot depend on the working directory",
                ))
            })
            .collect()
    };
    let read_paths = absolute(raw.read_paths, "read_paths")?;
    let write_paths = absolute(raw.write_paths, "write_paths")?;
    let mut network_ports = Vec::new();
    for port in raw.network_ports {
        if *port.get_ref() == 0 {
            return Err(src.error(
                port.span(),
                &format!("{key}.network_ports"),
                "port 0",
                "use a port from 1 to 65535",
            ));
        }
        network_ports.push(port.into_inner());
    }
    let mut network_hosts = Vec::new();
    let hosts_span = raw.network_hosts.first().map_or(0..0, Spanned::span);
    for host in raw.network_hosts {
        match HostGrant::parse(host.get_ref()) {
            Ok(grant) => network_hosts.push(grant),
            Err(e) => {
                let fix = "give host:port, e.g. \"calendar.example.com:443\", \"[::1]:8080\", \"*.example.com:443\" (any \
                           name under it) or \"*:443\" (any public address)";
                return Err(src.error(host.span(), &format!("{key}.network_hosts"), e.to_string(), fix));
            }
        }
    }
    if !network_hosts.is_empty() && !network_ports.is_empty() {
        return Err(src.error(
            hosts_span,
            &format!("{key}.network_hosts"),
            "both network_hosts and network_ports",
            "grant hosts (through the egress proxy) or ports (any address), not both",
        ));
    }
    let limits = match raw.limits {
        None => LimitOverrides::default(),
        Some(l) => LimitOverrides {
            deadline_ms: positive(src, &format!("{key}.limits.deadline_ms"), l.deadline_ms)?,
            memory_bytes: positive(src, &format!("{key}.limits.memory_bytes"), l.memory_bytes)?,
            output_bytes: positive(src, &format!("{key}.limits.output_bytes"), l.output_bytes)?,
        },
    };
    let mut formatters = Vec::new();
    for (i, f) in raw.formatters.into_iter().enumerate() {
        if f.wasm.get_ref().is_empty() {
            let fix = "give the path of a formatter component (.wasm)";
            return Err(src.error(f.wasm.span(), &format!("{key}.formatters[{i}].wasm"), "empty path", fix));
        }
        formatters.push(FormatterRule { tools: Glob::new(f.tools.get_ref()), wasm: f.wasm.into_inner().into() });
    }
    let mut screens = Vec::new();
    for (i, s) in raw.screens.into_iter().enumerate() {
        if s.get_ref().is_empty() {
            let fix = "give the path of a screen component (.wasm)";
            return Err(src.error(s.span(), &format!("{key}.screens[{i}]"), "empty path", fix));
        }
        screens.push(s.into_inner().into());
    }
    let mut tools = BTreeMap::new();
    for (name, t) in raw.tools {
        let tkey = format!("{key}.tools.{}", name.get_ref());
        if !is_valid_tool_name(name.get_ref()) {
            return Err(src.error(
                name.span(),
                &tkey,
                format!("{:?} can never be a tool name", name.get_ref()),
                "use the provider's tool name exactly (1 to 128 characters from A-Z, a-z, 0-9, '_', '.', '-')",
            ));
        }
        // A rule for `<name>__tool` is for a name the gateway shows, which is never
        // looked up here, so it would silently never apply.
        if let Some(tool) = name.get_ref().strip_prefix(&format!("{provider_name}{}", crate::name::SEPARATOR)) {
            return Err(src.error(
                name.span(),
                &tkey,
                format!("{:?} is the name the gateway shows, which this rule would never match", name.get_ref()),
                format!("write the provider's own tool name: {tool:?}"),
            ));
        }
        let mut constraints = Vec::new();
        for (i, c) in t.constraints.into_iter().enumerate() {
            constraints.push(constraint(src, &format!("{tkey}.constraints[{i}]"), c)?);
        }
        let callers = caller_rules(src, &format!("{tkey}.callers"), t.callers)?;
        let (flow, _, flow_arguments) = match t.flow {
            Some(raw) => crate::flow::validated(src, &format!("{tkey}.flow"), raw, Scope::Tool)?,
            None => Default::default(),
        };
        let rule = ToolRule { verdict: t.verdict, constraints, callers, note: t.note, flow, flow_arguments };
        tools.insert(name.into_inner(), rule);
    }
    let media_types = match raw.media_types {
        None => DEFAULT_MEDIA_TYPES.iter().map(|t| (*t).to_owned()).collect(),
        Some(types) => {
            let mut kept = Vec::new();
            for (i, t) in types.into_iter().enumerate() {
                let plain = t.get_ref().split_once('/').is_some_and(|(kind, sub)| {
                    let token = |s: &str| {
                        !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
                    };
                    token(kind) && token(sub)
                });
                if !plain {
                    return Err(src.error(
                        t.span(),
                        &format!("{key}.media_types[{i}]"),
                        format!("{:?} is not a MIME type", t.get_ref()),
                        "write a type such as \"image/png\" (no parameters)",
                    ));
                }
                kept.push(t.into_inner().to_ascii_lowercase());
            }
            kept
        }
    };
    let media_max_bytes = count_or(
        src,
        &format!("{key}.media_max_bytes"),
        raw.media_max_bytes,
        DEFAULT_MEDIA_MAX_BYTES,
        ("0 would pass nothing", "size in bytes"),
    )?;
    let sampling_max_tokens = count_or(
        src,
        &format!("{key}.sampling_max_tokens"),
        raw.sampling_max_tokens,
        DEFAULT_SAMPLING_MAX_TOKENS,
        ("0 would allow no completion", "number of tokens"),
    )?;
    let mut roots = Vec::new();
    for (i, root) in raw.roots.into_iter().enumerate() {
        if !root.get_ref().starts_with("file:///") || root.get_ref().chars().any(char::is_control) {
            return Err(src.error(
                root.span(),
                &format!("{key}.roots[{i}]"),
                format!("{:?} is not a file:// URI", root.get_ref()),
                "write the directory the provider may be told of as \"file:///absolute/path\"",
            ));
        }
        roots.push(root.into_inner());
    }
    let resources = globs(src, &format!("{key}.resources"), raw.resources, "a URI glob such as \"file:///docs/*\"")?;
    let prompts = globs(src, &format!("{key}.prompts"), raw.prompts, "a prompt name or glob such as \"summarize_*\"")?;
    let callers = caller_rules(src, &format!("{key}.callers"), raw.callers)?;
    let sinks = raw.sinks.iter().map(|glob| Glob::new(glob.get_ref())).collect();
    let fetches = raw.fetches.iter().map(|glob| Glob::new(glob.get_ref())).collect();
    let ask_reviewers = raw.ask_reviewers.iter().map(|glob| Glob::new(glob.get_ref())).collect();
    let (flow, flow_after, _) = match raw.flow {
        Some(raw) => crate::flow::validated(src, &format!("{key}.flow"), raw, Scope::Provider)?,
        None => Default::default(),
    };
    Ok(ProviderPolicy {
        callers,
        unlisted: raw.unlisted.unwrap_or(Verdict::Deny),
        injection: raw.injection.unwrap_or_default(),
        secrets: raw.secrets.unwrap_or_default(),
        fetched_code: raw.fetched_code.unwrap_or_default(),
        limits,
        formatters,
        screens,
        confinement: raw.confinement.unwrap_or_default(),
        read_paths,
        write_paths,
        network_ports,
        network_hosts,
        unix_sockets: raw.unix_sockets,
        note: raw.note,
        media: raw.media.unwrap_or_default(),
        media_types,
        media_max_bytes,
        sampling: raw.sampling.unwrap_or(Verdict::Deny),
        sampling_max_tokens,
        roots,
        tools,
        resources,
        prompts,
        sinks,
        fetches,
        ask_reviewers,
        flow,
        flow_after,
    })
}

/// The stricter of two verdicts: deny over ask over allow.
fn stricter(a: Verdict, b: Verdict) -> Verdict {
    let rank = |v| match v {
        Verdict::Allow => 0,
        Verdict::Ask => 1,
        Verdict::Deny => 2,
    };
    if rank(a) >= rank(b) { a } else { b }
}

/// The `callers` rules at `key`, in order.
fn caller_rules(src: &Source<'_>, key: &str, raw: Vec<Spanned<RawCallerRule>>) -> Result<Vec<CallerRule>, PolicyError> {
    raw.into_iter()
        .enumerate()
        .map(|(i, rule)| {
            let rule = rule.into_inner();
            let callers = caller_match(src, &format!("{key}[{i}]"), rule.subjects, rule.groups, rule.claims)?;
            Ok(CallerRule { callers, verdict: rule.verdict, note: rule.note })
        })
        .collect()
}

/// Who a rule at `key` is for: non-empty names, and claims JSON can hold.
fn caller_match(
    src: &Source<'_>,
    key: &str,
    subjects: Vec<Spanned<String>>,
    groups: Vec<Spanned<String>>,
    claims: BTreeMap<String, Spanned<toml::Value>>,
) -> Result<CallerMatch, PolicyError> {
    let names = |list: Vec<Spanned<String>>, field: &str| {
        list.into_iter()
            .enumerate()
            .map(|(i, name)| {
                if name.get_ref().is_empty() {
                    Err(src.error(
                        name.span(),
                        &format!("{key}.{field}[{i}]"),
                        "empty name",
                        "give a name, or remove it",
                    ))
                } else {
                    Ok(name.into_inner())
                }
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let subjects = names(subjects, "subjects")?;
    let groups = names(groups, "groups")?;
    let mut facts = BTreeMap::new();
    for (name, value) in claims {
        let json = to_json(value.get_ref()).ok_or_else(|| {
            src.error(
                value.span(),
                &format!("{key}.claims.{name}"),
                "dates, times, NaN and infinities have no JSON equivalent",
                "quote the value as a string",
            )
        })?;
        facts.insert(name, json);
    }
    Ok(CallerMatch { subjects, groups, claims: facts })
}

/// The `[console]` entries at `key`: each names someone, since an entry that names
/// nothing would match every caller.
fn console_matches(
    src: &Source<'_>,
    key: &str,
    raw: Vec<Spanned<crate::file::RawCallerMatch>>,
) -> Result<Vec<CallerMatch>, PolicyError> {
    raw.into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let span = entry.span();
            let entry = entry.into_inner();
            let at = format!("{key}[{i}]");
            let callers = caller_match(src, &at, entry.subjects, entry.groups, entry.claims)?;
            if callers.is_everyone() {
                return Err(src.error(
                    span,
                    &at,
                    "the entry names nobody, so it would match every caller",
                    "name `subjects`, `groups` or `claims`",
                ));
            }
            Ok(callers)
        })
        .collect()
}

/// The budget `budgets[i]`: a positive rate and burst, a provider the policy names.
fn budget(
    src: &Source<'_>,
    i: usize,
    raw: Spanned<RawBudget>,
    providers: &BTreeMap<String, ProviderPolicy>,
) -> Result<Budget, PolicyError> {
    let name = format!("budgets[{i}]");
    let raw = raw.into_inner();
    if *raw.rate.get_ref() == 0 {
        let fix = "give the calls allowed per period (a positive number), or deny the tool instead";
        return Err(src.error(raw.rate.span(), &format!("{name}.rate"), "a rate of 0 would refuse every call", fix));
    }
    let burst = match raw.burst {
        Some(b) if *b.get_ref() == 0 => {
            let fix = "give the most calls at once (at least 1), or leave it out for the rate";
            return Err(src.error(b.span(), &format!("{name}.burst"), "a burst of 0 would refuse every call", fix));
        }
        Some(b) => b.into_inner(),
        None => *raw.rate.get_ref(),
    };
    if let Some(provider) = &raw.provider
        && !providers.contains_key(provider.get_ref())
    {
        return Err(src.error(
            provider.span(),
            &format!("{name}.provider"),
            format!("the policy has no provider {:?}", provider.get_ref()),
            "name a provider of this policy, or leave `provider` out to cover every provider",
        ));
    }
    if let Some(tools) = raw.tools.as_ref().filter(|t| t.get_ref().is_empty()) {
        let fix = "give a tool name or glob such as \"delete_*\", or leave `tools` out to cover every tool";
        return Err(src.error(tools.span(), &format!("{name}.tools"), "empty pattern", fix));
    }
    let callers = caller_match(src, &name, raw.subjects, raw.groups, raw.claims)?;
    Ok(Budget::new(
        name,
        raw.provider.map(Spanned::into_inner),
        raw.tools.map(|t| Glob::new(t.get_ref())),
        callers,
        (raw.rate.into_inner(), raw.per.unwrap_or(Per::Minute), burst),
        raw.each.unwrap_or(Each::Caller),
        raw.note,
    ))
}

/// A list of allow globs; an empty glob would match nothing but the empty string, so it
/// is refused as a likely mistake.
fn globs(src: &Source<'_>, key: &str, raw: Vec<Spanned<String>>, example: &str) -> Result<Vec<Glob>, PolicyError> {
    raw.into_iter()
        .enumerate()
        .map(|(i, g)| {
            if g.get_ref().is_empty() {
                Err(src.error(
                    g.span(),
                    &format!("{key}[{i}]"),
                    "empty pattern",
                    format!("give {example}, or remove it"),
                ))
            } else {
                Ok(Glob::new(g.get_ref()))
            }
        })
        .collect()
}

/// A positive count, or `default` when it is left out; `(problem, unit)`: what 0 would
/// mean, and what the count counts.
fn count_or(
    src: &Source<'_>,
    key: &str,
    v: Option<Spanned<u32>>,
    default: u32,
    (problem, unit): (&str, &str),
) -> Result<u32, PolicyError> {
    match v {
        None => Ok(default),
        Some(n) if *n.get_ref() == 0 => Err(src.error(
            n.span(),
            key,
            problem,
            format!("give a positive {unit}, or leave it out for the default ({default})"),
        )),
        Some(n) => Ok(n.into_inner()),
    }
}

fn positive(src: &Source<'_>, key: &str, v: Option<Spanned<u64>>) -> Result<Option<u64>, PolicyError> {
    match v {
        Some(v) if *v.get_ref() == 0 => {
            Err(src.error(v.span(), key, "0 would make every call fail", "give a positive number, or remove the key"))
        }
        v => Ok(v.map(Spanned::into_inner)),
    }
}

fn constraint(src: &Source<'_>, key: &str, c: Spanned<RawConstraint>) -> Result<Constraint, PolicyError> {
    let span = c.span();
    let c = c.into_inner();
    if !is_valid_pointer(c.pointer.get_ref()) {
        return Err(src.error(
            c.pointer.span(),
            &format!("{key}.pointer"),
            format!("{:?} is not a JSON pointer", c.pointer.get_ref()),
            "write it as in RFC 6901, starting with '/', e.g. \"/calendar_id\" or \"/event/owner\"",
        ));
    }
    match (c.equals, c.pattern) {
        (Some(v), None) => {
            let value = to_json(v.get_ref()).ok_or_else(|| {
                src.error(
                    v.span(),
                    &format!("{key}.equals"),
                    "dates, times, NaN and infinities have no JSON equivalent",
                    "quote the value as a string, or use a finite number",
                )
            })?;
            Ok(Constraint::equals(c.pointer.get_ref(), value))
        }
        (None, Some(p)) => Constraint::pattern(c.pointer.get_ref(), p.get_ref()).map_err(|why| {
            src.error(
                p.span(),
                &format!("{key}.pattern"),
                why.to_string(),
                "simplify the pattern (it must match the whole value)",
            )
        }),
        _ => Err(src.error(
            span,
            key,
            "a constraint needs exactly one of `equals` and `pattern`",
            "keep `equals = <value>` or `pattern = \"<regex>\"`, not both or neither",
        )),
    }
}

/// A TOML value as JSON; `None` for datetimes, which JSON cannot express.
fn to_json(v: &toml::Value) -> Option<Value> {
    Some(match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => serde_json::Number::from_f64(*f).map(Value::Number)?,
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(_) => return None,
        toml::Value::Array(a) => Value::Array(a.iter().map(to_json).collect::<Option<_>>()?),
        toml::Value::Table(t) => {
            Value::Object(t.iter().map(|(k, v)| Some((k.clone(), to_json(v)?))).collect::<Option<_>>()?)
        }
    })
}
