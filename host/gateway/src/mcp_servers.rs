//! Importing the `mcpServers` JSON that desktop MCP clients use (and VS Code's
//! `servers` layouts, see [`read`]):
//!
//! ```json
//! {"mcpServers": {"files": {"command": "npx", "args": ["-y", "some-server"], "env": {"K": "v"}},
//!                 "search": {"url": "https://search.example/mcp"}}}
//! ```
//!
//! Each entry becomes a provider of the same name (which must follow the provider name
//! rules) and is started like one declared in `wasmgate.toml`: confined, and allowed
//! nothing until the policy says so. An entry may not redefine a provider of
//! `wasmgate.toml`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use wasmgate_policy::{PolicyError, Source, validate_provider};

use crate::config::{ProviderConfig, file_relative_command};

/// The layouts clients write: `{"mcpServers": {...}}` (Claude Desktop, Cursor, and most
/// others), `{"servers": {...}}` (VS Code's `mcp.json`) and `{"mcp": {"servers": {...}}}`
/// (VS Code's settings). Other top-level keys are the client's own, and left alone.
#[derive(Debug, Deserialize)]
struct File {
    #[serde(rename = "mcpServers")]
    mcp_servers: Option<BTreeMap<String, Entry>>,
    servers: Option<BTreeMap<String, Entry>>,
    mcp: Option<Nested>,
}

#[derive(Debug, Deserialize)]
struct Nested {
    servers: BTreeMap<String, Entry>,
}

/// What every layout's error says the file should hold.
const LAYOUTS: &str = "the file must hold {\"mcpServers\": {\"name\": {...}}} (Claude Desktop, Cursor), \
                       {\"servers\": {...}} (VS Code's mcp.json) or {\"mcp\": {\"servers\": {...}}} (VS Code's settings)";

/// One server. Keys wasmgate does not know are refused rather than ignored: a setting
/// that silently did nothing (a header, a transport type) would leave the server other
/// than its author meant.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// `true` leaves the server out, as the clients that write these files do.
    #[serde(default)]
    disabled: bool,
    /// The transport, as some clients write it on every entry: checked against the
    /// entry's `command` or `url`.
    #[serde(rename = "type")]
    transport: Option<String>,
    command: Option<PathBuf>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    url: Option<String>,
    /// Extra headers of an HTTP server: a value, or `${VAR}` / `${env:VAR}` for a variable.
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// A header value as desktop clients write it: `${VAR}` or `${env:VAR}` names a variable.
fn header(value: String) -> crate::config::HeaderConfig {
    let var = value.strip_prefix("${").and_then(|v| v.strip_suffix('}')).map(|v| v.strip_prefix("env:").unwrap_or(v));
    match var.filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')) {
        Some(var) => crate::config::HeaderConfig::Env { env: var.to_owned() },
        None => crate::config::HeaderConfig::Value(value),
    }
}

/// Adds the servers of `path` to `providers`.
///
/// # Errors
///
/// The file cannot be read or parsed, or an entry is unusable; the error names the file,
/// the entry and the fix.
pub(crate) fn import(path: &Path, providers: &mut BTreeMap<String, ProviderConfig>) -> Result<(), PolicyError> {
    let read = read_mcp_servers(path, providers)?;
    providers.extend(read);
    Ok(())
}

/// The servers of a client's file at `path`, as providers; `existing` names the
/// providers an entry may not redefine.
///
/// # Errors
///
/// As `import`.
pub fn read_mcp_servers(
    path: &Path,
    existing: &BTreeMap<String, ProviderConfig>,
) -> Result<BTreeMap<String, ProviderConfig>, PolicyError> {
    let text =
        crate::config::read_bounded(path).map_err(|source| PolicyError::Read { path: path.to_owned(), source })?;
    let origin = path.display().to_string();
    let src = Source { text: &text, origin: &origin };
    let file: File = serde_json::from_str(&text).map_err(|e| {
        let offset = offset_of(&text, e.line(), e.column());
        src.error(offset..offset, "mcpServers", e.to_string(), LAYOUTS)
    })?;
    let (layout, entries) = match (file.mcp_servers, file.servers, file.mcp) {
        (Some(entries), None, None) => ("mcpServers", entries),
        (None, Some(entries), None) => ("servers", entries),
        (None, None, Some(nested)) => ("mcp.servers", nested.servers),
        (None, None, None) => return Err(src.error(0..0, "mcpServers", "no servers in the file", LAYOUTS)),
        _ => {
            let problem = "the file holds servers in more than one layout".to_owned();
            return Err(src.error(0..0, "mcpServers", problem, "keep one of them"));
        }
    };
    let base = path.parent().unwrap_or(Path::new(""));
    let mut providers = BTreeMap::new();
    for (name, entry) in entries {
        if entry.disabled {
            continue;
        }
        let at = text.find(&format!("\"{name}\"")).unwrap_or(0);
        let key = format!("{layout}.{name}");
        let problem = if let Err(e) = validate_provider(&name) {
            Some((e.to_string(), "rename the entry: it becomes the provider's name and its tools' prefix".to_owned()))
        } else if existing.contains_key(&name) {
            Some((
                format!("wasmgate.toml already defines a provider {name:?}"),
                "rename one of them, or remove the entry you do not want".to_owned(),
            ))
        } else if entry.command.is_some() == entry.url.is_some() {
            Some((
                "an entry needs exactly one of `command` or `url`".to_owned(),
                "give a stdio server's `command` (with `args`), or a Streamable HTTP server's `url`".to_owned(),
            ))
        } else {
            match (entry.transport.as_deref(), entry.command.is_some()) {
                (None | Some("stdio"), true) | (None | Some("http" | "streamable-http" | "streamableHttp"), false) => {
                    None
                }
                (Some(other), _) => Some((
                    format!("`type` {other:?} does not fit an entry with a `{}`", if entry.command.is_some() { "command" } else { "url" }),
                    "use \"stdio\" with `command` or \"http\" with `url` (the older HTTP+SSE transport is not supported)"
                        .to_owned(),
                )),
            }
        };
        if let Some((problem, fix)) = problem {
            return Err(src.error(at..at, &key, problem, fix));
        }
        let entry_is_http = entry.url.is_some();
        let command = entry.command.map(|c| file_relative_command(base, c));
        let headers = entry.headers.into_iter().map(|(name, value)| (name, header(value))).collect();
        let provider = ProviderConfig {
            command,
            args: entry.args,
            env: entry.env,
            url: entry.url,
            headers,
            ..ProviderConfig::default()
        };
        if let Some(unused) = crate::config::misplaced_key(&provider) {
            let reached = if entry_is_http { "a server reached by `url`" } else { "a stdio server" };
            let problem = format!("`{unused}` does nothing for {reached}, so it would be silently ignored");
            return Err(src.error(at..at, &key, problem, "remove it"));
        }
        providers.insert(name, provider);
    }
    Ok(providers)
}

fn offset_of(text: &str, line: usize, column: usize) -> usize {
    let start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    (start + column.saturating_sub(1)).min(text.len())
}
