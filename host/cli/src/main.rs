//! `wasmgate`: the command-line face of the gateway.
//!
//! * `wasmgate format`: render a tool result through a sandboxed formatter component and
//!   print what a model would read (`format`);
//! * `wasmgate serve [--http ADDR]`: the MCP server face ([`serve`]);
//! * `wasmgate reload`: running gateways read their rules and providers again ([`reload`]);
//! * `wasmgate tools`, `review`, `call`: the configured providers' tools, their review,
//!   and one call through the whole pipeline ([`tools`], [`review`], [`call`]);
//! * `wasmgate scan FILE`: the injection detector on a text ([`scan`]);
//! * `wasmgate doctor`: what this machine can enforce on a stdio server ([`doctor`]);
//! * `wasmgate audit verify FILE`: check an audit log's hash chain ([`audit`]);
//! * `wasmgate init --from FILE`: a desktop client's servers, behind wasmgate ([`init`]).
//!
//! Logs go to stderr, one line per event (set `WASMGATE_LOG=debug` to see guest stderr,
//! `--log-format json` for JSON lines; see [`logs`]); stdout carries only the command's
//! output, because it carries the MCP stdio protocol under `serve`.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use logs::LogFormat;

mod approvals;
mod audit;
mod call;
mod control;
mod doctor;
mod format;
mod init;
mod install;
mod login;
mod logs;
mod metrics;
mod open;
mod review;
mod scan;
mod serve;
mod spin;
mod stdio;
mod tools;
mod traces;

/// `wasmgate --version`: the package's version and the commit it was built from
/// (`build.rs`).
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (commit ", env!("WASMGATE_COMMIT"), ")");

#[derive(Debug, Parser)]
#[command(name = "wasmgate", version = VERSION, about = "Let an agent use tools written by strangers without trusting them")]
struct Cli {
    /// How log lines on stderr look: `text` (one line per event; coloured only on a
    /// terminal) or `json` (one JSON object per line). `WASMGATE_LOG` sets the level.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Render one MCP tool result as plain text in the WebAssembly sandbox,
    /// the way every tool result is rendered before a model sees it.
    Format(format::FormatArgs),
    /// Serve every provider's vetted tools as an MCP server, over stdio or Streamable HTTP.
    Serve(serve::ServeArgs),
    /// Make every running `wasmgate serve` of the configuration read wasmgate.toml, the
    /// policy and the lock again (as SIGHUP does), starting and stopping providers as it
    /// now says, and print each one's answer; files that do not load are refused and the
    /// rules in force stay (exit status 2).
    Reload(control::ReloadArgs),
    /// List every provider's tools and their state: allowed, ask, denied, unreviewed or
    /// changed, and how each stdio server is confined.
    Tools(open::ConfigArgs),
    /// Review new and changed tool definitions and code; approved ones are pinned in the
    /// lock file (by the running gateway, when one runs: it serves them at once).
    Review(review::ReviewArgs),
    /// List the calls waiting at the running gateways for a reviewer's answer (the
    /// policy's `ask_reviewers`), or answer one with `--approve ID` or `--deny ID`.
    Approvals(approvals::ApprovalsArgs),
    /// Call one tool through the whole pipeline and print what an agent would see.
    Call(call::CallArgs),
    /// Run the injection detector on a text (exit status 2 when it flags it), or on a
    /// JSON-lines corpus with `--corpus`.
    Scan(scan::ScanArgs),
    /// Report what this machine can enforce on a confined stdio server, mechanism by
    /// mechanism, and how to enable what is missing (exit status 2: a provider under
    /// confinement = "required" would not start here).
    Doctor(doctor::DoctorArgs),
    /// Work with audit logs.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Log in to an HTTP provider that uses OAuth 2.1: prints the URL to open, waits for
    /// the redirect on a loopback port, and keeps the tokens for the gateway.
    Login(login::LoginArgs),
    /// Forget an OAuth provider's tokens.
    Logout(login::LogoutArgs),
    /// Put the MCP servers of a desktop client's configuration behind wasmgate: writes
    /// `wasmgate.toml` and a `policy.toml` in which every tool asks and every server is
    /// confined with no network; installs servers that download themselves at each start.
    Init(init::InitArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // `serve` starts the log itself, once it knows whether it also sends traces.
    if !matches!(cli.command, Command::Serve(_)) {
        logs::init(cli.log_format, None);
    }
    let outcome = match cli.command {
        Command::Format(args) => format::run(args).map(|()| true),
        Command::Scan(args) => scan::run(args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Audit(command) => audit::run(command).map(|()| true),
        Command::Serve(args) => args
            .runtime()
            .and_then(|rt| {
                let mut audit = None;
                let served = rt.block_on(serve::run(args, cli.log_format, &mut audit));
                // Every task stops with the runtime, and writes what it holds as it does.
                drop(rt);
                serve::close_audit(audit, served)
            })
            .map(|()| true),
        Command::Reload(args) => runtime().and_then(|rt| rt.block_on(control::run(args))),
        Command::Tools(args) => runtime().and_then(|rt| rt.block_on(tools::run(args))).map(|()| true),
        Command::Review(args) => runtime().and_then(|rt| rt.block_on(review::run(args))).map(|()| true),
        Command::Approvals(args) => runtime().and_then(|rt| rt.block_on(approvals::run(args))),
        Command::Call(args) => runtime().and_then(|rt| rt.block_on(call::run(args))),
        Command::Login(args) => runtime().and_then(|rt| rt.block_on(login::login(args))).map(|()| true),
        Command::Logout(args) => login::logout(&args).map(|()| true),
        Command::Init(args) => init::run(&args).map(|()| true),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(2),
        Err(e) => {
            eprintln!("wasmgate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")
}
