//! Providers built from the configuration: each one's code checked against the lock, its
//! screens, formatters and media check loaded into the sandbox under its limits, and
//! then its client (a confined stdio child with its egress grant, or HTTP with its OAuth
//! authorizer) or its component, the MCP servers all started at once. What cannot be set
//! up is withheld (its reason logged and audited) unless it is `required`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use wasmgate_adapter::{
    AdapterError, Backoff, ComponentProvider, Connect, FormatterRule, Formatters, McpProvider, MediaPass, Report,
    ScreenComponent, Supervised,
};
use wasmgate_audit::{AuditLog, Entry, Event};

use crate::egress_log::OnFlood;
use wasmgate_client::{ClientConfig, HttpConfig, HttpTransport, StdioConfig, StdioTransport};
use wasmgate_confine::{Confinement, Enforcement, Network, provider_workdir};
use wasmgate_core::{ContentSource, ToolSource, report};
use wasmgate_egress::{EgressGrant, EgressObserver, HostGrant};
use wasmgate_guard::Screener;
use wasmgate_oauth::SecretSource;
use wasmgate_policy::{
    CodePin, CodeState, ConfinementLevel, Lock, MediaMode, Policy, ProviderPolicy, Verdict, exposed_name,
};
use wasmgate_sandbox::{CallLimits, DirGrant, Formatter, Grants, MediaCheck, NetworkGrant, Sandbox};

use crate::code;
use crate::config::{Config, HeaderConfig, LimitsConfig, ProviderConfig, ProviderKind};
use crate::diagnose::{Setup, likely_cause};
use crate::error::StartError;

/// One started provider.
#[derive(Debug, Clone)]
pub struct ProviderInfo {
    /// Its name.
    pub name: String,
    /// How it is reached.
    pub kind: ProviderKind,
    /// For a stdio server: what the kernel confines (the report's one-line summary of
    /// its last start).
    pub confinement: Option<String>,
    /// Why it is not served, when it could not be set up at all (a formatter or a
    /// component that would not load, a working directory that cannot be made): it is
    /// not tried again. An MCP server that cannot be reached is tried again instead; see
    /// [`Gateway::provider_trouble`](crate::Gateway::provider_trouble).
    pub withheld: Option<String>,
    /// Whether the gateway is not ready without it (`required = true`).
    pub required: bool,
}

/// What starts providers: the sandbox and what every provider shares.
pub(crate) struct Starter {
    pub(crate) sandbox: Sandbox,
    /// The built-in formatter, loaded once; each provider gets it under its own limits.
    pub(crate) json_text: Formatter,
    /// The media check, loaded when the first provider passes media.
    pub(crate) media_check: Mutex<Option<MediaCheck>>,
    pub(crate) audit: Arc<AuditLog>,
}

impl std::fmt::Debug for Starter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Starter").finish_non_exhaustive()
    }
}

/// Providers started together.
#[derive(Default)]
pub(crate) struct Started {
    pub(crate) providers: Vec<ProviderInfo>,
    pub(crate) sources: Vec<Arc<dyn ToolSource>>,
    pub(crate) mcp: Vec<Arc<Supervised>>,
    /// The screens of each provider started.
    pub(crate) screens: BTreeMap<String, Vec<Arc<dyn Screener>>>,
}

impl Started {
    /// Closes every MCP server started (a reload that is refused).
    pub(crate) async fn close(&self) {
        for provider in &self.mcp {
            provider.close().await;
        }
    }
}

impl Starter {
    /// Starts the providers `names` of `config` under `policy`, their code checked
    /// against `lock`: each one set up (or withheld, with its reason logged and audited),
    /// the MCP servers all at once.
    ///
    /// # Errors
    ///
    /// [`StartError`] when a provider marked `required` cannot be started (what was
    /// started is closed first).
    pub(crate) async fn start<'a>(
        &self,
        config: &Config,
        names: impl Iterator<Item = &'a String>,
        policy: &Policy,
        lock: &Lock,
    ) -> Result<Started, StartError> {
        let (sandbox, json_text, audit) = (&self.sandbox, &self.json_text, &self.audit);
        let mut started = Started::default();
        let mut servers = Vec::new();
        for name in names {
            let Some(provider) = config.providers.get(name) else { continue };
            let rules = policy.provider(name);
            if rules.is_none() {
                tracing::warn!(provider = %name, "the policy does not mention this provider: all its tools are denied");
            }
            let kind = provider.kind();
            let mut info = ProviderInfo {
                name: name.clone(),
                kind: kind.clone(),
                confinement: None,
                withheld: None,
                required: provider.required,
            };
            let limits = limits(&config.limits, rules);
            let planned = reviewed_code(lock, name, provider, policy, &code::installs(config))
                .and_then(|pins| {
                    let screens = load_screens(sandbox, name, rules, &limits)?;
                    let screens = screens.into_iter().map(|(_, screen)| Arc::new(screen) as Arc<dyn Screener>);
                    started.screens.insert(name.clone(), screens.collect());
                    Ok(pins)
                })
                .and_then(|pins| Ok((pins, formatters(sandbox, json_text, name, rules, &limits)?)))
                .and_then(|(pins, formatters)| {
                    let formatters = Arc::unwrap_or_clone(formatters).with_naming(provider.naming());
                    let formatters = match rules.filter(|r| r.media == MediaMode::Pass) {
                        Some(rules) => {
                            let mut loaded = self.media_check.lock().unwrap_or_else(PoisonError::into_inner);
                            formatters.with_media(media_pass(sandbox, &mut loaded, rules, &limits)?)
                        }
                        None => formatters,
                    };
                    Ok((pins, Arc::new(formatters)))
                })
                .and_then(|(pins, formatters)| match kind {
                    ProviderKind::Component => {
                        // A component's calls are instances of their own, each with a
                        // deadline: its refusals are counted, and it is not withheld.
                        let observer = crate::egress_log::observer(audit, name, OnFlood::default());
                        let component = component(sandbox, name, provider, rules, limits, formatters, observer)?;
                        Ok(Planned::Component(Box::new(component)))
                    }
                    ProviderKind::Stdio | ProviderKind::Http => {
                        let confined = Arc::new(Mutex::new(None));
                        let on_flood = OnFlood::default();
                        let starts = Starts { audit, confined: &confined, pins, on_flood: on_flood.clone() };
                        let connect = connector(config, name, provider, rules, formatters, starts)?;
                        Ok(Planned::Server(connect, confined, on_flood))
                    }
                });
            match planned {
                Ok(Planned::Component(component)) => started.sources.push(Arc::new(*component)),
                Ok(Planned::Server(connect, confined, on_flood)) => {
                    servers.push((started.providers.len(), connect, confined, on_flood));
                }
                Err(error) if provider.required => {
                    started.close().await;
                    return Err(error);
                }
                Err(error) => {
                    let why = report(&error);
                    withhold(audit, name, &format!("provider {name} is withheld: {why}"));
                    started.screens.remove(name);
                    info.withheld = Some(why);
                }
            }
            started.providers.push(info);
        }
        // Every server's first start at once: a slow one delays start-up by its own wait only.
        let firsts = futures_util::future::join_all(servers.iter().map(|(_, connect, _, _)| connect())).await;
        let mut failed = None;
        for ((index, connect, confined, on_flood), first) in servers.into_iter().zip(firsts) {
            let name = started.providers[index].name.clone();
            let first = match first {
                Err(error) if config.providers.get(&name).is_some_and(|p| p.required) => {
                    failed.get_or_insert(StartError::Adapter(error));
                    continue;
                }
                first => first,
            };
            let audit = Arc::clone(audit);
            let report: Report = Arc::new(move |provider: &str, message: &str| withhold(&audit, provider, message));
            let naming = config.providers.get(&name).map(ProviderConfig::naming).unwrap_or_default();
            let supervised = Supervised::start(&name, first, connect, Backoff::default(), report, naming);
            let withheld = Arc::downgrade(&supervised);
            on_flood.set(move |why| {
                if let Some(supervised) = withheld.upgrade() {
                    supervised.withhold(why);
                }
            });
            started.providers[index].confinement = confined.lock().ok().and_then(|c| c.clone());
            started.sources.push(Arc::clone(&supervised) as Arc<dyn ToolSource>);
            started.mcp.push(supervised);
        }
        if let Some(error) = failed {
            started.close().await;
            return Err(error);
        }
        Ok(started)
    }
}

/// Refuses to start when two providers show a tool, or a prompt, under one name (one of
/// them shows its names as is), naming both.
pub(crate) async fn refuse_collisions(
    sources: &[Arc<dyn ToolSource>],
    mcp: &[Arc<Supervised>],
) -> Result<(), StartError> {
    let mut shown: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut check =
        |what: &str, exposed: String, provider: &str, own: &str| match shown.get(&format!("{what} {exposed}")) {
            Some((other, other_own)) if other != provider || other_own != own => Err(StartError::Collision {
                what: what.to_owned(),
                name: exposed,
                first: format!("{other}'s {what} {other_own:?}"),
                second: format!("{provider}'s {what} {own:?}"),
            }),
            _ => {
                shown.insert(format!("{what} {exposed}"), (provider.to_owned(), own.to_owned()));
                Ok(())
            }
        };
    for source in sources {
        for offer in source.offers().await.0 {
            check("tool", offer.tool.spec.name.clone(), &offer.provider, &offer.name)?;
        }
    }
    for provider in mcp {
        for prompt in provider.prompts().await.unwrap_or_default() {
            let Ok(exposed) = exposed_name(provider.name(), &prompt.name, ContentSource::naming(provider.as_ref()))
            else {
                continue;
            };
            check("prompt", exposed, provider.name(), &prompt.name)?;
        }
    }
    Ok(())
}

/// Whether `provider`'s code may run: it is the reviewed code (or none was reviewed yet,
/// and review will pin it), and it does not fetch code the policy refuses. What was
/// checked, so that every restart checks it again.
fn reviewed_code(
    lock: &Lock,
    name: &str,
    provider: &ProviderConfig,
    policy: &Policy,
    installs: &std::path::Path,
) -> Result<BTreeMap<String, CodePin>, StartError> {
    let found = code::of(name, provider, policy, installs).map_err(|why| StartError::provider(name, why))?;
    if let Some(fetches) = &found.fetches
        && code::refuses_fetching(policy.provider(name))
    {
        return Err(StartError::provider(name, format!("the policy refuses code fetched at start: {fetches}")));
    }
    match lock.code_status(name, &found.pins) {
        CodeState::Reviewed | CodeState::New => Ok(found.pins),
        CodeState::Changed(changes) => {
            let changes: Vec<String> = changes.iter().map(ToString::to_string).collect();
            Err(StartError::provider(
                name,
                format!(
                    "its code changed since it was reviewed ({}); it does not run until `wasmgate review` approves it",
                    changes.join("; ")
                ),
            ))
        }
    }
}

/// The screen components the policy selects for `provider`, each under the provider's
/// limits. One that cannot be loaded withholds the provider: its texts are not served
/// unscreened.
fn load_screens(
    sandbox: &Sandbox,
    provider: &str,
    rules: Option<&ProviderPolicy>,
    limits: &CallLimits,
) -> Result<Vec<(String, ScreenComponent)>, StartError> {
    let paths = rules.map(|r| r.screens.as_slice()).unwrap_or_default();
    paths
        .iter()
        .map(|path| {
            let screen =
                sandbox.load_screen_file(path, limits.clone()).map_err(|e| StartError::provider(provider, e))?;
            let name = path.file_stem().map_or_else(|| "screen".to_owned(), |s| s.to_string_lossy().into_owned());
            Ok((provider.to_owned(), ScreenComponent::new(&name, screen)))
        })
        .collect()
}

/// What to do with one configured provider.
enum Planned {
    Component(Box<ComponentProvider>),
    Server(Connect, Arc<Mutex<Option<String>>>, OnFlood),
}

/// Records that a provider is withheld, down or up again: in the log and the audit log.
fn withhold(audit: &AuditLog, provider: &str, message: &str) {
    tracing::warn!(provider, "{message}");
    let mut entry = Entry::log(Event::Warning { message: message.to_owned() });
    entry.provider = Some(provider.to_owned());
    if let Err(e) = audit.record_later([entry]) {
        tracing::error!(error = %e, "audit log cannot be written");
    }
}

/// How to start an MCP server provider, each time: its transport (a confined child
/// process, or HTTP), then the connection and its first listing. `confined` holds the
/// summary of the last start's confinement.
/// What each start of a server reports to, and checks first.
struct Starts<'a> {
    /// The audit log, for an incomplete confinement.
    audit: &'a Arc<AuditLog>,
    /// Where the confinement of its last start is reported.
    confined: &'a Arc<Mutex<Option<String>>>,
    /// The code checked at start ([`reviewed_code`]), checked again before every start.
    pins: BTreeMap<String, CodePin>,
    /// What withholds the provider when its egress goes over the rate of refusals.
    on_flood: OnFlood,
}

fn connector(
    config: &Config,
    name: &str,
    provider: &ProviderConfig,
    rules: Option<&ProviderPolicy>,
    formatters: Arc<Formatters>,
    starts: Starts<'_>,
) -> Result<Connect, StartError> {
    let Starts { audit, confined, pins, on_flood } = starts;
    let mut client = ClientConfig::default();
    // What a handshake-era server is told at `initialize` that it may ask during a call
    // (each call's own requests declare what its caller's side can answer).
    client.capabilities.insert("elicitation".into(), serde_json::json!({}));
    if rules.is_some_and(|r| r.sampling != Verdict::Deny) {
        client.capabilities.insert("sampling".into(), serde_json::json!({}));
    }
    if rules.is_some_and(|r| !r.roots.is_empty()) {
        client.capabilities.insert("roots".into(), serde_json::json!({}));
    }
    if let Some(ms) = provider.call_timeout_ms {
        client.call_timeout = Duration::from_millis(ms);
    }
    let transport = match provider.kind() {
        ProviderKind::Http => Transport::Http(Box::new(http(config, name, provider, rules)?)),
        _ => Transport::Stdio(Box::new(stdio(config, name, provider, rules, audit, on_flood)?)),
    };
    let network = rules.is_some_and(|r| !r.network_hosts.is_empty() || !r.network_ports.is_empty());
    let command = provider.command.clone().unwrap_or_default();
    let setup = Setup::new(name, &command, &provider.args, network);
    let (name, audit, confined) = (name.to_owned(), Arc::clone(audit), Arc::clone(confined));
    let pins = Arc::new(pins);
    Ok(Arc::new(move || {
        let (name, transport, client, formatters) =
            (name.clone(), transport.clone(), client.clone(), Arc::clone(&formatters));
        let (audit, confined, setup, pins) =
            (Arc::clone(&audit), Arc::clone(&confined), setup.clone(), Arc::clone(&pins));
        Box::pin(async move {
            // Every start, the first and each restart after a crash, runs the code the
            // gateway checked, or nothing: whoever can write the files meanwhile does
            // not get a restart of theirs.
            let program = match code::unchanged(&pins) {
                Ok(program) => program,
                Err(reason) => return Err(AdapterError::Refused { provider: name.clone(), reason }),
            };
            let failed = |source| AdapterError::Transport { provider: name.clone(), source };
            match transport {
                Transport::Http(http) => {
                    let transport = HttpTransport::new(&http).map_err(failed)?;
                    McpProvider::connect(&name, transport, client, formatters).await
                }
                Transport::Stdio(stdio) => {
                    // A native program runs as the file just checked, not by its path.
                    let stdio = match program {
                        Some(file) => Box::new(stdio.program_file(Arc::new(file))),
                        None => stdio,
                    };
                    let transport = StdioTransport::spawn(&stdio).map_err(failed)?;
                    if let Some(report) = transport.confinement() {
                        if let Ok(mut slot) = confined.lock() {
                            *slot = Some(report.to_string());
                        }
                        if !report.is_complete() {
                            warn_incomplete(&audit, &name, &report.to_string());
                        }
                    }
                    let tail = transport.stderr_tail();
                    match McpProvider::connect(&name, transport, client, formatters).await {
                        Err(AdapterError::Unreachable { provider, source }) => {
                            let stderr = tail.lines(STDERR_WAIT).await;
                            let cause = likely_cause(&setup, &stderr, source.to_string().contains("timed out"));
                            Err(AdapterError::Silent { provider, error: source, stderr, cause })
                        }
                        outcome => outcome,
                    }
                }
            }
        })
    }))
}

/// How long a server that did not answer is given to finish writing its stderr before
/// its last lines are quoted in the error.
const STDERR_WAIT: Duration = Duration::from_secs(1);

/// A provider's transport settings.
#[derive(Clone)]
enum Transport {
    Stdio(Box<StdioConfig>),
    Http(Box<HttpConfig>),
}

fn warn_incomplete(audit: &AuditLog, provider: &str, report: &str) {
    let message = format!("provider {provider} runs with best-effort confinement: {report}");
    tracing::warn!("{message}");
    let mut entry = Entry::log(Event::Warning { message });
    entry.provider = Some(provider.to_owned());
    if let Err(e) = audit.submit([entry]) {
        tracing::error!(error = %e, "audit log cannot be written");
    }
}

pub(crate) fn limits(config: &LimitsConfig, rules: Option<&ProviderPolicy>) -> CallLimits {
    let over = rules.map(|r| r.limits).unwrap_or_default();
    let mut limits = CallLimits::default();
    if let Some(ms) = over.deadline_ms.or(config.deadline_ms) {
        limits.deadline = Duration::from_millis(ms);
    }
    if let Some(bytes) = over.memory_bytes.or(config.memory_bytes) {
        limits.memory_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    if let Some(bytes) = over.output_bytes.or(config.output_bytes) {
        limits.output_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
    }
    limits
}

fn formatters(
    sandbox: &Sandbox,
    json_text: &Formatter,
    provider: &str,
    rules: Option<&ProviderPolicy>,
    limits: &CallLimits,
) -> Result<Arc<Formatters>, StartError> {
    let json_text = json_text.with_limits(limits.clone()).map_err(StartError::Sandbox)?;
    let rules = rules.map(|r| r.formatters.clone()).unwrap_or_default().into_iter().map(|rule| FormatterRule {
        provider: provider.to_owned(),
        tool: rule.tools.as_str().to_owned(),
        path: rule.wasm,
    });
    Ok(Arc::new(Formatters::load(sandbox, json_text, rules, limits)?))
}

/// The media passing of a provider whose policy passes media, under its limits; the
/// media check component is loaded into `loaded` the first time.
fn media_pass(
    sandbox: &Sandbox,
    loaded: &mut Option<MediaCheck>,
    rules: &ProviderPolicy,
    limits: &CallLimits,
) -> Result<MediaPass, StartError> {
    let check = match loaded {
        Some(check) => check.with_limits(limits.clone()).map_err(StartError::Sandbox)?,
        None => {
            let check =
                sandbox.load_media_check(wasmgate_guests::MEDIA_CHECK, limits.clone()).map_err(StartError::Sandbox)?;
            *loaded = Some(check.clone());
            check
        }
    };
    Ok(MediaPass::new(check, rules.media_types.clone(), rules.media_max_bytes))
}

fn component(
    sandbox: &Sandbox,
    name: &str,
    provider: &ProviderConfig,
    rules: Option<&ProviderPolicy>,
    limits: CallLimits,
    formatters: Arc<Formatters>,
    observer: EgressObserver,
) -> Result<ComponentProvider, StartError> {
    let path = provider.component.clone().unwrap_or_default();
    let loaded =
        sandbox.load_tool_provider_file(name, &path, limits.clone()).map_err(|e| StartError::provider(name, e))?;
    let mut grants = provider.dirs.iter().fold(Grants::none(), |grants, dir| {
        grants.with_dir(DirGrant {
            host_path: dir.host.clone(),
            guest_path: dir.guest.clone(),
            read_only: dir.read_only,
        })
    });
    let hosts = granted_hosts(rules);
    if !hosts.is_empty() {
        grants.network = Some(NetworkGrant { hosts: hosts.into(), observer: Some(observer) });
    }
    Ok(ComponentProvider::new(name, loaded, grants, limits, formatters)?)
}

fn http(
    config: &Config,
    name: &str,
    provider: &ProviderConfig,
    rules: Option<&ProviderPolicy>,
) -> Result<HttpConfig, StartError> {
    let mut http = HttpConfig::new(name, provider.url.clone().unwrap_or_default());
    http.bearer = provider.token_env.clone().map(SecretSource::FromEnv);
    http.oauth = crate::oauth::authorizer(config, name, rules, None).map_err(|e| StartError::provider(name, e))?;
    http.headers = provider
        .headers
        .iter()
        .map(|(name, value)| {
            let source = match value {
                HeaderConfig::Value(value) => SecretSource::Value(value.clone()),
                HeaderConfig::Env { env } => SecretSource::FromEnv(env.clone()),
            };
            (name.clone(), source)
        })
        .collect();
    Ok(http)
}

fn stdio(
    config: &Config,
    name: &str,
    provider: &ProviderConfig,
    rules: Option<&ProviderPolicy>,
    audit: &Arc<AuditLog>,
    on_flood: OnFlood,
) -> Result<StdioConfig, StartError> {
    let workdir = provider_workdir(&config.state_dir, name).map_err(|e| StartError::provider(name, e))?;
    let mut confinement = provider.read_exec.iter().fold(Confinement::default(), |c, p| c.read_exec(p));
    if let Some(rules) = rules {
        confinement = rules.read_paths.iter().fold(confinement, |c, p| c.read_only(p));
        confinement = rules.write_paths.iter().fold(confinement, |c, p| c.read_write(p));
        if !rules.network_ports.is_empty() {
            confinement = confinement.network(Network::Tcp { connect: rules.network_ports.clone(), bind: Vec::new() });
        }
        if rules.unix_sockets {
            confinement = confinement.unix_sockets();
        }
        if rules.confinement == ConfinementLevel::BestEffort {
            confinement.enforcement = Enforcement::BestEffort;
        }
    }
    let command = provider.command.clone().unwrap_or_default();
    let mut server = StdioConfig::new(name, command, workdir).confinement(Some(confinement));
    let hosts = granted_hosts(rules);
    if !hosts.is_empty() {
        let observer = crate::egress_log::observer(audit, name, on_flood);
        server = server.egress(EgressGrant { hosts, observer: Some(observer) });
    }
    let server = provider.args.iter().fold(server, |s, a| s.arg(a));
    Ok(provider.env.iter().fold(server, |s, (k, v)| s.env(k, v)))
}

/// The hosts provider `name`'s policy grants (none without a policy).
fn granted_hosts(rules: Option<&ProviderPolicy>) -> Vec<HostGrant> {
    rules.map(|r| r.network_hosts.clone()).unwrap_or_default()
}

pub(crate) fn cache_dir() -> Option<std::path::PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| std::path::PathBuf::from(home).join(".cache")))?;
    Some(base.join("wasmgate").join("components"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use wasmgate_audit::Options;
    use wasmgate_egress::{EgressKind, EgressRecord};

    #[tokio::test]
    async fn a_start_after_the_checked_code_changed_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.py");
        std::fs::write(&script, "print('reviewed')\n").unwrap();
        let path = dir.path().join("wasmgate.toml");
        let toml = format!("state_dir = \"state\"\n[providers.s]\ncommand = \"/bin/true\"\nargs = [{:?}]\n", script);
        std::fs::write(&path, toml).unwrap();
        let config = Config::load(&path).unwrap();
        let policy = Policy::from_toml("[providers.s]\n", "p").unwrap();
        let pins = code::of("s", &config.providers["s"], &policy, &code::installs(&config)).unwrap().pins;
        assert!(pins.contains_key("arg:0"), "{pins:?}");
        let audit = Arc::new(AuditLog::open(&dir.path().join("audit.jsonl"), Options::default()).unwrap());
        let sandbox = Sandbox::new(wasmgate_sandbox::SandboxConfig::default()).unwrap();
        let json_text = sandbox.load_formatter("json-text", wasmgate_guests::JSON_TEXT, CallLimits::default()).unwrap();
        let formatters = Arc::new(Formatters::new(json_text));
        let confined = Arc::new(Mutex::new(None));
        let starts = Starts { audit: &audit, confined: &confined, pins, on_flood: OnFlood::default() };
        let connect = connector(&config, "s", &config.providers["s"], None, formatters, starts).unwrap();
        // Swapped after the check, before a restart.
        std::fs::write(&script, "print('swapped')\n").unwrap();
        let refused = connect().await.err().unwrap().to_string();
        assert!(refused.contains("arg:0") && refused.contains("changed since the gateway checked it"), "{refused}");
        assert!(confined.lock().unwrap().is_none(), "nothing was spawned");
    }

    #[test]
    fn best_effort_confinement_is_recorded_in_the_audit_log() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = AuditLog::open(&path, Options::default()).unwrap();
        warn_incomplete(&audit, "calendar", "landlock: missing");
        audit.close().unwrap();
        let log = std::fs::read_to_string(&path).unwrap();
        let record: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
        assert_eq!(record["event"], "warning");
        assert_eq!(record["provider"], "calendar");
        assert!(record["message"].as_str().unwrap().contains("best-effort confinement: landlock: missing"));
    }

    #[test]
    fn a_stdio_server_granted_hosts_gets_the_egress_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wasmgate.toml");
        std::fs::write(&path, "state_dir = \"state\"\n[providers.cal]\ncommand = \"/bin/true\"\n").unwrap();
        let config = Config::load(&path).unwrap();
        let audit = Arc::new(AuditLog::open(&dir.path().join("audit.jsonl"), Options::default()).unwrap());
        let provider = &config.providers["cal"];
        let hosts = "[providers.cal]\nnetwork_hosts = [\"Calendar.example.com:443\", \"127.0.0.1:5232\"]\n";
        let policy = Policy::from_toml(hosts, "p").unwrap();
        let server = stdio(&config, "cal", provider, policy.provider("cal"), &audit, OnFlood::default()).unwrap();
        let grant = server.egress.unwrap();
        let granted: Vec<(String, u16)> = grant.hosts.iter().map(|h| (h.host.clone(), h.port)).collect();
        assert_eq!(granted, [("calendar.example.com".to_owned(), 443), ("127.0.0.1".to_owned(), 5232)]);
        assert!(grant.observer.is_some(), "its connections are audited");
        let none = Policy::from_toml("[providers.cal]\n", "p").unwrap();
        assert!(
            stdio(&config, "cal", provider, none.provider("cal"), &audit, OnFlood::default()).unwrap().egress.is_none()
        );
    }

    #[test]
    fn each_egress_connection_is_an_audit_record_of_the_provider() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = Arc::new(AuditLog::open(&path, Options::default()).unwrap());
        let observer = crate::egress_log::observer(&audit, "calendar", OnFlood::default());
        observer(EgressRecord {
            kind: EgressKind::Proxied,
            host: "calendar.example.com".into(),
            port: 443,
            address: Some("93.184.216.34:443".parse().unwrap()),
            refused: None,
            bytes_up: 517,
            bytes_down: 4096,
            duration: Duration::from_millis(1500),
        });
        observer(EgressRecord {
            kind: EgressKind::Proxied,
            host: "evil.example".into(),
            port: 443,
            address: None,
            refused: Some("evil.example:443 is not a granted host".into()),
            bytes_up: 0,
            bytes_down: 0,
            duration: Duration::ZERO,
        });
        drop(observer);
        Arc::try_unwrap(audit).unwrap().close().unwrap();
        let log = std::fs::read_to_string(&path).unwrap();
        let records: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(records.len(), 2);
        let (allowed, refused) = (&records[0], &records[1]);
        assert_eq!((allowed["event"].as_str(), allowed["provider"].as_str()), (Some("egress"), Some("calendar")));
        assert_eq!(allowed["address"], "93.184.216.34:443");
        assert_eq!((allowed["bytes_up"].as_u64(), allowed["bytes_down"].as_u64()), (Some(517), Some(4096)));
        assert_eq!(allowed["duration_ms"], 1500);
        assert!(allowed.get("refused").is_none());
        assert_eq!(refused["refused"], "evil.example:443 is not a granted host");
        assert!(wasmgate_audit::verify(&path).is_ok(), "the chain holds");
    }

    #[test]
    fn policy_limits_override_the_configured_ones() {
        let config = LimitsConfig { deadline_ms: Some(500), memory_bytes: Some(1 << 20), output_bytes: None };
        let policy = Policy::from_toml("[providers.p.limits]\ndeadline_ms = 200\n", "p").unwrap();
        let limits = limits(&config, policy.provider("p"));
        assert_eq!(limits.deadline, Duration::from_millis(200));
        assert_eq!(limits.memory_bytes, 1 << 20);
        assert_eq!(limits.output_bytes, CallLimits::default().output_bytes);
    }
}
