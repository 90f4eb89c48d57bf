//! What the demo prints: section headers, the providers and tools, and the agent's
//! turn as the model saw it (tool results indented under the call they answer).

use std::path::Path;

use serde_json::Value;
use wasmgate_agent::Message;
use wasmgate_gateway::{ProviderInfo, ProviderKind, ToolStatus};

/// One tool call and what came back, as the model read it.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The tool's name as the model saw it.
    pub tool: String,
    /// The arguments the model sent.
    pub input: Value,
    /// The text the model read back.
    pub content: String,
    /// Whether it reported a failure.
    pub is_error: bool,
}

/// The tool calls of `conversation`, each with its answer.
#[must_use]
pub fn exchanges(conversation: &[Message]) -> Vec<Exchange> {
    let mut calls = Vec::new();
    let mut found = Vec::new();
    for message in conversation {
        match message {
            Message::Assistant(turn) => calls.clone_from(&turn.tool_calls),
            Message::ToolResult { call_id, content, is_error, .. } => {
                if let Some(call) = calls.iter().find(|c| &c.id == call_id) {
                    let (tool, input) = (call.name.clone(), call.input.clone());
                    found.push(Exchange { tool, input, content: content.clone(), is_error: *is_error });
                }
            }
            Message::User(_) => {}
        }
    }
    found
}

/// A section header.
pub fn heading(title: &str) {
    println!("\n== {title}\n");
}

/// `path` relative to the working directory when it is under it.
#[must_use]
pub fn short(path: &Path) -> String {
    let cwd = std::env::current_dir().ok().and_then(|d| d.canonicalize().ok());
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    cwd.and_then(|cwd| path.strip_prefix(cwd).ok().map(|p| p.display().to_string()))
        .unwrap_or_else(|| path.display().to_string())
}

/// Every provider, how it runs (`stdio` says what a stdio server is) and how it is
/// confined.
pub fn providers(providers: &[ProviderInfo], stdio: &str) {
    for provider in providers {
        let kind = match provider.kind {
            ProviderKind::Stdio => stdio,
            ProviderKind::Http => "Streamable HTTP MCP server",
            ProviderKind::Component => "WASM tool component (guest-tools/calendar), in the sandbox",
        };
        println!("  {:<10} {kind}", provider.name);
        if let Some(confinement) = &provider.confinement {
            println!("  {:<10} confinement: {confinement}", "");
        }
    }
}

/// Every tool and whether the agent may call it.
pub fn tools(statuses: &[ToolStatus]) {
    let mut sorted: Vec<&ToolStatus> = statuses.iter().collect();
    sorted.sort_by(|a, b| a.exposed.cmp(&b.exposed));
    for status in sorted {
        println!("  {:<28} {}", status.exposed, status.state);
    }
}

/// The conversation, turn by turn.
pub fn conversation(conversation: &[Message]) {
    let mut names = Vec::new();
    for message in conversation {
        match message {
            Message::User(text) => println!("user> {text}\n"),
            Message::Assistant(turn) => {
                println!("model> {}", turn.text);
                names.clear();
                for call in &turn.tool_calls {
                    println!("  calls {} {}", call.name, call.input);
                    names.push((call.id.clone(), call.name.clone()));
                }
                println!();
            }
            Message::ToolResult { call_id, content, is_error, .. } => {
                let name = names.iter().find(|(id, _)| id == call_id).map_or("?", |(_, name)| name.as_str());
                let kind = if *is_error { "error result" } else { "result" };
                println!("  {kind} of {name}, as the model reads it:");
                for line in content.lines() {
                    println!("    | {line}");
                }
                println!();
            }
        }
    }
}

/// One line per audit record: sequence number, provider, tool, event and its gist.
pub fn audit_records(path: &Path) -> std::io::Result<()> {
    let text = std::fs::read_to_string(path)?;
    for record in text.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()) {
        let field = |key: &str| record.get(key).and_then(Value::as_str).unwrap_or("-").to_owned();
        let gist = match field("event").as_str() {
            "requested" => format!("({})", field("verdict")),
            "approval" => format!("(approved: {}, by {})", record["approved"], field("approver")),
            "carried" => {
                let values = record.get("values").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
                let each: Vec<String> = values
                    .iter()
                    .map(|v| {
                        let text = |key: &str| v.get(key).and_then(Value::as_str).unwrap_or("-").to_owned();
                        let flagged = if v["flagged"] == true { "flagged " } else { "" };
                        format!("{} {}: {flagged}result of record {}", text("argument"), text("kind"), v["record"])
                    })
                    .collect();
                format!("({})", each.join("; "))
            }
            "egress" => {
                let target = format!("{}:{}", field("host"), record["port"]);
                match record.get("refused").and_then(Value::as_str) {
                    Some(why) => format!("({target}, refused: {why})"),
                    None => format!("({target}, {} bytes up, {} down)", record["bytes_up"], record["bytes_down"]),
                }
            }
            "finished" => match record.get("flags").and_then(Value::as_array) {
                Some(flags) if !flags.is_empty() => {
                    let flags: Vec<&str> = flags.iter().filter_map(Value::as_str).collect();
                    format!("(flags: {})", flags.join(", "))
                }
                _ => String::new(),
            },
            _ => String::new(),
        };
        let seq = record.get("seq").and_then(Value::as_u64).unwrap_or_default();
        let line = format!("  {seq:>4}  {:<8}  {:<15}  {} {gist}", field("provider"), field("tool"), field("event"));
        println!("{}", line.trim_end());
    }
    Ok(())
}

/// The connections a server made, from the `egress` records of the audit log at `path`.
pub fn connections(path: &Path) -> std::io::Result<Vec<crate::checks::Connection>> {
    let text = std::fs::read_to_string(path)?;
    Ok(text
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|record| record["event"] == "egress")
        .map(|record| crate::checks::Connection {
            target: format!("{}:{}", record["host"].as_str().unwrap_or("?"), record["port"]),
            refused: record.get("refused").and_then(Value::as_str).map(str::to_owned),
        })
        .collect())
}

/// The connections, allowed ones counted per target, refused ones each with why.
pub fn connection_summary(connections: &[crate::checks::Connection]) {
    let mut allowed: Vec<(&str, usize)> = Vec::new();
    for connection in connections.iter().filter(|c| c.refused.is_none()) {
        match allowed.iter_mut().find(|(target, _)| *target == connection.target) {
            Some((_, count)) => *count += 1,
            None => allowed.push((&connection.target, 1)),
        }
    }
    for (target, count) in allowed {
        println!("  {target:<20} allowed  ({count} connections)");
    }
    for connection in connections {
        if let Some(why) = &connection.refused {
            println!("  {:<20} refused: {why}", connection.target);
        }
    }
}
