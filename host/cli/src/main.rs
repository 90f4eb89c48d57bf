//! `wasmgate`: the command-line face of the gateway.
//!
//! * `wasmgate format`: render a tool result through a sandboxed formatter component and
//!   print what a model would read ([`format`]);
//! * `wasmgate audit verify FILE`: check an audit log's hash chain ([`audit`]).
//!
//! Logs go to stderr (set `WASMGATE_LOG=debug` to see guest stderr); stdout carries only
//! the command's output, because it carries the MCP stdio protocol under `serve`.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod audit;
mod format;

#[derive(Debug, Parser)]
#[command(name = "wasmgate", version, about = "Let an agent use tools written by strangers without trusting them")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Render one MCP tool result as plain text in the WebAssembly sandbox,
    /// the way every tool result is rendered before a model sees it.
    Format(format::FormatArgs),
    /// Work with audit logs.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("WASMGATE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Format(args) => format::run(args),
        Command::Audit(command) => audit::run(command),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wasmgate: {e:#}");
            ExitCode::FAILURE
        }
    }
}
