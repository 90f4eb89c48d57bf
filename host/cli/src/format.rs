//! `wasmgate format`: one tool result through a formatter component in the sandbox.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Args;
use serde_json::Value;
use wasmgate_sandbox::{CallLimits, FormatRequest, Sandbox, SandboxConfig};

#[derive(Debug, Args)]
pub struct FormatArgs {
    /// A JSON file holding an MCP tool result: `content` (an array of
    /// content blocks), optionally `structuredContent` and `isError`. Use `-`
    /// for standard input.
    result: PathBuf,
    /// A formatter component (`.wasm`, world `wasmgate:sandbox/formatter`).
    /// Default: the built-in json-text formatter.
    #[arg(long, value_name = "FILE")]
    formatter: Option<PathBuf>,
    /// The tool name passed to the formatter.
    #[arg(long, default_value = "demo_tool")]
    tool: String,
    /// The provider name passed to the formatter.
    #[arg(long, default_value = "demo")]
    provider: String,
    /// Wall-clock limit for the formatter, in milliseconds.
    #[arg(long, default_value_t = 1000, value_name = "MS")]
    deadline_ms: u64,
    /// Largest text the formatter may return, in bytes.
    #[arg(long, default_value_t = 1 << 20, value_name = "BYTES")]
    max_output: usize,
    /// Where compiled components are cached. Default:
    /// `$XDG_CACHE_HOME/wasmgate/components` or `~/.cache/wasmgate/components`.
    #[arg(long, value_name = "DIR", conflicts_with = "no_cache")]
    cache_dir: Option<PathBuf>,
    /// Compile the formatter in memory and cache nothing.
    #[arg(long)]
    no_cache: bool,
}

pub fn run(args: FormatArgs) -> anyhow::Result<()> {
    let request = read_result(&args.result, args.tool, args.provider)?;
    let cache_dir = if args.no_cache { None } else { args.cache_dir.or_else(default_cache_dir) };
    let sandbox = Sandbox::new(SandboxConfig { cache_dir, max_concurrent_calls: 4, ..SandboxConfig::default() })?;
    let limits = CallLimits {
        deadline: Duration::from_millis(args.deadline_ms),
        output_bytes: args.max_output,
        ..CallLimits::default()
    };
    let formatter = match &args.formatter {
        Some(path) => sandbox.load_formatter_file(path, limits)?,
        None => sandbox.load_formatter("built-in json-text formatter", wasmgate_guests::JSON_TEXT, limits)?,
    };
    let text = formatter.format(request).with_context(|| format!("formatter {} failed", formatter.name()))?;
    println!("{text}");
    Ok(())
}

/// Reads an MCP tool result file into a request, passing its parts on as
/// JSON text: rendering them is the formatter's job, not the host's.
fn read_result(path: &Path, tool_name: String, provider: String) -> anyhow::Result<FormatRequest> {
    let text = if path == Path::new("-") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("cannot read the tool result from standard input")?;
        text
    } else {
        std::fs::read_to_string(path).with_context(|| format!("cannot read the tool result file {}", path.display()))?
    };
    let value: Value = serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let Some(content) = value.get("content").filter(|c| c.is_array()) else {
        bail!(
            "{} has no `content` array: a tool result looks like {{\"content\": [{{\"type\": \"text\", \"text\": \"...\"}}]}}",
            path.display()
        );
    };
    Ok(FormatRequest {
        tool_name,
        provider,
        content: content.to_string(),
        structured_content: value.get("structuredContent").map(Value::to_string),
        is_error: value.get("isError").and_then(Value::as_bool).unwrap_or(false),
    })
}

fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))?;
    Some(base.join("wasmgate").join("components"))
}
