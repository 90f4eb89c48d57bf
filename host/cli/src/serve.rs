//! `wasmgate serve`: the gateway as an MCP server, over stdio (the default) or
//! Streamable HTTP (`--http ADDR`), serving every provider's vetted tools.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use wasmgate_audit::AuditLog;
use wasmgate_gateway::{ApprovalsConfig, JwtAuthenticator, Webhook};
use wasmgate_guard::{CallerApprover, PendingAsk, Unattended};
use wasmgate_protocol::server::ServerIdentity;
use wasmgate_server::{Authenticator, HttpConfig, ServerConfig, serve_http, serve_stdio};

use crate::control::{self, Controller};
use crate::logs::LogFormat;
use crate::open::ConfigArgs;
use crate::spin;
use crate::traces::Traces;

#[derive(Debug, Args)]
pub struct ServeArgs {
    #[command(flatten)]
    config: ConfigArgs,
    /// Serve Streamable HTTP on this address instead of stdio (the path is /mcp).
    /// Use a loopback address unless clients elsewhere need it: any other address
    /// requires --token-env.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The environment variable holding the bearer token clients must send over HTTP.
    #[arg(long, value_name = "VAR")]
    token_env: Option<String>,
    /// An extra allowed `Origin` for browser clients (loopback origins are always allowed).
    #[arg(long, value_name = "ORIGIN")]
    allow_origin: Vec<String>,
    /// Requests one client address may have open at once over HTTP, long-lived streams
    /// included (default 16); beyond it, 429. Every local client shares the address
    /// 127.0.0.1, so raise it when many local clients (or a load test) use one gateway.
    #[arg(long, value_name = "N")]
    per_client_requests: Option<usize>,
    /// Over stdio: microseconds the runtime may stay awake, polling for its next event,
    /// before it sleeps (at most 10000; 0: always sleep at once). A request that arrives
    /// within it is handled without a wake-up, which on a VM is most of a small call's
    /// latency. It spins only after a wait that was this short (calls close together),
    /// and never while an upstream server's answer is awaited (docs/SERVER.md).
    /// Not used over HTTP.
    #[arg(long, value_name = "MICROSECONDS", env = "WASMGATE_SPIN_US", default_value_t = 300,
          value_parser = clap::value_parser!(u64).range(..=10_000))]
    spin_us: u64,
}

impl ServeArgs {
    /// The runtime `serve` runs on. Over stdio it serves one client, whose messages
    /// arrive one at a time: a single-threaded runtime reads a request, runs its call
    /// and writes the answer on one thread, where a multi-threaded one hands each step
    /// to another worker (a thread wake-up each, most of a call's latency on a small
    /// machine). Guest code (a tool component's call, formatting) yields at every
    /// epoch tick, and file operations go to the blocking pool, so one slow call does
    /// not hold up the others. HTTP serves many clients: one worker per core.
    pub fn runtime(&self) -> anyhow::Result<tokio::runtime::Runtime> {
        let builder = match self.http {
            Some(_) => tokio::runtime::Builder::new_multi_thread(),
            None => tokio::runtime::Builder::new_current_thread(),
        };
        // A multi-threaded runtime parks a worker while it still counts as searching for
        // work, so tasks woken from other threads (the audit writer, the blocking pool)
        // would wait out the spin: only the single-threaded stdio runtime spins.
        let budget = if self.http.is_some() { Duration::ZERO } else { Duration::from_micros(self.spin_us) };
        let (runtime, spin) = spin::runtime(builder, budget, wasmgate_client::awaiting_answers)
            .context("cannot start the async runtime")?;
        if !budget.is_zero() && !spin.is_on() {
            tracing::debug!("--spin-us has no effect: one core, or the runtime's epoll descriptors were not found");
        }
        Ok(runtime)
    }
}

/// The shortest bearer token accepted: a guessable one would stand for none.
const MIN_TOKEN_CHARS: usize = 16;

/// The bearer token in the environment variable `var`: set, and not short. `what` names
/// the setting that named it.
/// The webhook of `[serve.approvals]`, if it names one.
fn approvals_webhook(config: &ApprovalsConfig) -> anyhow::Result<Option<Webhook>> {
    let Some(url) = &config.webhook else { return Ok(None) };
    let var = config.secret_env.as_deref().context(
        "[serve.approvals] webhook needs secret_env: the environment variable holding the secret announcements are \
         signed with",
    )?;
    let secret =
        std::env::var(var).with_context(|| format!("[serve.approvals] secret_env {var}: the variable is not set"))?;
    Ok(Some(Webhook::new(url, secret.trim().as_bytes())?))
}

/// The web console of `[serve.console]`, as routes of the HTTP face.
fn console(
    settings: &wasmgate_gateway::ConsoleConfig,
    bound: SocketAddr,
    loaded: &wasmgate_gateway::Config,
    gateway: &Arc<wasmgate_gateway::Gateway>,
    backend: &Arc<wasmgate_gateway::GatewayBackend>,
    authenticator: &Arc<dyn Authenticator>,
) -> anyhow::Result<axum::Router> {
    let audit_key = match &loaded.audit.key_file {
        Some(path) => {
            Some(wasmgate_audit::ChainKey::load(path).with_context(|| format!("[audit] key_file {}", path.display()))?)
        }
        None => None,
    };
    let resource = loaded.serve.oauth.as_ref().map(|oauth| oauth.resource.clone()).unwrap_or_default();
    let parts = wasmgate_console::Parts {
        gateway: Arc::clone(gateway),
        backend: Arc::clone(backend),
        config_path: loaded.path.clone(),
        authenticator: Arc::clone(authenticator),
        resource,
        audit_key,
    };
    let console = wasmgate_console::Console::new(settings, bound, parts)?;
    Ok(Arc::new(console).router())
}

fn bearer_token(what: &str, var: &str) -> anyhow::Result<String> {
    let token = std::env::var(var).with_context(|| format!("{what} {var}: the variable is not set"))?;
    let length = token.trim().chars().count();
    if length < MIN_TOKEN_CHARS {
        bail!(
            "{what} {var}: the token is {length} characters; at least {MIN_TOKEN_CHARS} are needed \
             (make one with `openssl rand -hex 32`)"
        );
    }
    // The server compares it with the presented token, which it trims.
    Ok(token.trim().to_owned())
}

/// `wasmgate serve`. The gateway's audit log is left in `audit`, for [`close_audit`] once
/// the runtime has stopped: the tasks that write to it on their way out (a provider's
/// last egress summary) have then written.
pub async fn run(args: ServeArgs, log_format: LogFormat, audit: &mut Option<Arc<AuditLog>>) -> anyhow::Result<()> {
    // The log starts once the configuration says whether spans go to a collector too
    // (an error before it is printed all the same).
    let loaded = args.config.load()?;
    let (traces, layer) = match loaded.serve.traces.clone() {
        Some(config) => {
            let (traces, layer) = Traces::start(config).await?;
            (Some(traces), Some(layer))
        }
        None => (None, None),
    };
    crate::logs::init(log_format, layer);
    let served = serve(args, loaded, audit).await;
    if let Some(traces) = traces {
        traces.shutdown().await;
    }
    served
}

/// Closes the log [`run`] left, once nothing else writes to it, rather than let it drop:
/// a stop while the disk is full says which records the log does not hold, and fails.
pub fn close_audit(audit: Option<Arc<AuditLog>>, served: anyhow::Result<()>) -> anyhow::Result<()> {
    let closed = audit.map_or(Ok(()), |audit| audit.close());
    if let (Err(_), Err(error)) = (&served, &closed) {
        // Only one error is returned: the other is not lost.
        tracing::error!(%error, "the audit log did not close cleanly");
    }
    served?;
    Ok(closed?)
}

async fn serve(
    args: ServeArgs,
    loaded: wasmgate_gateway::Config,
    audit: &mut Option<Arc<AuditLog>>,
) -> anyhow::Result<()> {
    let token = args.token_env.as_deref().map(|var| bearer_token("--token-env", var)).transpose()?;
    if args.per_client_requests == Some(0) {
        bail!("--per-client-requests 0 would refuse every request: pass at least 1");
    }
    // `[serve.oauth]` makes the HTTP face an OAuth 2.1 resource server (docs/SERVER.md).
    let authenticator = match (&args.http, loaded.serve.oauth.clone()) {
        (Some(_), Some(oauth)) => {
            let server = JwtAuthenticator::new(oauth).context("[serve.oauth] in the configuration")?;
            Some(Arc::new(server) as Arc<dyn Authenticator>)
        }
        _ => None,
    };
    if token.is_some() && authenticator.is_some() {
        bail!("--token-env and [serve.oauth] both say which bearer tokens to accept: keep one of them");
    }
    if let Some(addr) = args.http
        && !addr.ip().is_loopback()
        && token.is_none()
        && authenticator.is_none()
    {
        bail!(
            "--http {addr} is not a loopback address: anyone who can reach it could call tools; pass --token-env VAR, \
             or set [serve.oauth] in the configuration"
        );
    }
    // Nobody can answer `ask` at a terminal while stdin and stdout carry the protocol:
    // the client's user is asked when the client can elicit (input_required on
    // 2026-07-28, elicitation/create on a handshake-era stdio connection), and
    // otherwise `ask` is denied.
    // Bound before any provider starts: a taken address fails here, with nothing to stop.
    let listener = match args.http {
        Some(addr) => {
            let listener =
                tokio::net::TcpListener::bind(addr).await.with_context(|| format!("cannot listen on {addr}"))?;
            let bound = listener.local_addr().context("the listener has no address")?;
            Some((listener, bound))
        }
        None => None,
    };
    // Counting starts before any provider does (docs/SERVER.md, "Metrics").
    let metrics = match &listener {
        Some(_) if loaded.serve.metrics.enabled => Some(crate::metrics::install()?),
        _ => None,
    };
    let metrics_token = match (&metrics, &loaded.serve.metrics.token_env) {
        (Some(_), Some(var)) => Some(bearer_token("[serve.metrics] token_env", var)?),
        _ => None,
    };
    // Checked before any provider starts: a webhook that cannot be used stops start-up.
    let webhook = approvals_webhook(&loaded.serve.approvals)?;
    // Installed before any provider starts too, so a SIGTERM is never the default exit.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot watch for SIGTERM")?;
    let hangup = control::hangups()?;
    // A SIGTERM while providers start stops there: those started so far are dropped,
    // which kills their processes and cgroups.
    let gateway = tokio::select! {
        started = args.config.start_loaded(&loaded, Arc::new(CallerApprover::new(Arc::new(Unattended)))) => started?,
        _ = terminate.recv() => bail!("stopped by SIGTERM while starting the providers"),
    };
    let gateway = Arc::new(gateway);
    *audit = Some(Arc::clone(gateway.guard.audit()));
    if let Some(webhook) = webhook {
        gateway.guard.reviewers().announce_with(Arc::new(move |ask: &PendingAsk| webhook.announce(ask)));
    }
    let backend = gateway.backend();
    // SIGHUP and `wasmgate reload` read the rules again (docs/SERVER.md).
    let controller = Arc::new(Controller {
        gateway: Arc::clone(&gateway),
        backend: Arc::clone(&backend),
        path: loaded.path.clone(),
    });
    control::on_hangup(hangup, Arc::clone(&controller));
    // With replicas, the review decisions the others take (docs/DEPLOY.md).
    let following = wasmgate_gateway::follow_reviews(Arc::clone(&gateway), Arc::clone(&backend), loaded.path.clone());
    let control = control::listen(&loaded.state_dir, controller);
    let mut config = ServerConfig::new(ServerIdentity::new("wasmgate", env!("CARGO_PKG_VERSION")));
    // `[cluster]`: request states signed with the shared key, spent in the shared store.
    config.cluster = gateway.member.as_ref().map(|member| member.server());
    // SIGINT or SIGTERM: stop taking requests, finish what runs within the grace period,
    // and close every provider (their process groups and cgroups too) before exiting.
    let shutdown = async move {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
    };
    let served = match listener {
        Some((listener, bound)) => {
            let routes = match (&loaded.serve.console, &authenticator) {
                (Some(settings), Some(authenticator)) => {
                    let console = console(settings, bound, &loaded, &gateway, &backend, authenticator)?;
                    eprintln!("wasmgate: the console is at http://{bound}{}", wasmgate_console::PATH);
                    Some(console)
                }
                (Some(_), None) => bail!(
                    "[serve.console] needs [serve.oauth]: the console signs people in through the authorization \
                     server whose tokens the gateway takes"
                ),
                (None, _) => None,
            };
            let defaults = HttpConfig::new();
            let http = HttpConfig {
                metrics: metrics.map(|handle| crate::metrics::render(handle, Arc::clone(&gateway))),
                metrics_token,
                bearer_token: token,
                authenticator,
                allowed_origins: args.allow_origin,
                per_client_concurrency: args.per_client_requests.unwrap_or(defaults.per_client_concurrency),
                trusted_proxies: loaded.serve.trusted_proxies.clone(),
                routes,
                ..defaults
            };
            eprintln!("wasmgate: serving MCP on http://{bound}{}", http.path);
            serve_http(backend, listener, config, http, shutdown).await
        }
        None => {
            let stdin = tokio::io::BufReader::new(crate::stdio::input());
            serve_stdio(backend, stdin, crate::stdio::output(), config, shutdown).await
        }
    };
    drop(control);
    drop(following);
    gateway.close().await;
    Ok(served?)
}
