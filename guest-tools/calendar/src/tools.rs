//! The calendar's tools: their definitions, as listed to agents, and one call.
//!
//! Arguments that do not fit a tool's schema (a missing or unknown field, a
//! malformed date, a bad user name) are [`CallFailure::InvalidArguments`].
//! Failures the model can act on (an end before the start, an unknown event,
//! a read-only calendar) are results with `is_error` set. A calendar that
//! cannot be read at all (no data directory, a corrupt file) is
//! [`CallFailure::Internal`].

use serde::Deserialize;
use serde_json::{Value, json};

use crate::date::{Date, DateTime};
use crate::events::{Calendar, Event, NewEvent, check_text, check_user};
use crate::storage::{Storage, StorageError};
use crate::tools::schema::{CREATE, DELETE, QUERY};

mod schema;

/// Where the component expects its granted data directory.
pub const DATA_DIR: &str = "/data";
/// Most events one query returns.
pub const MAX_RESULTS: usize = 100;

/// A tool as listed: name, description for a model, JSON Schema of its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    pub input_schema: Value,
}

/// The result of a call that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// MCP content blocks, as JSON array text.
    pub content: String,
    /// `{"events": [...]}` as JSON object text.
    pub structured_content: Option<String>,
    /// The call failed in a way the model should read.
    pub is_error: bool,
}

/// A call that could not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    UnknownTool(String),
    InvalidArguments(String),
    Internal(String),
}

/// The three tools.
pub fn definitions() -> Vec<ToolDef> {
    [QUERY, CREATE, DELETE]
        .into_iter()
        .map(|(name, description, schema)| ToolDef { name, description, input_schema: schema() })
        .collect()
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct QueryArgs {
    user: String,
    from: Option<String>,
    to: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateArgs {
    user: String,
    title: String,
    start: String,
    end: String,
    #[serde(default)]
    description: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DeleteArgs {
    user: String,
    id: String,
}

/// Runs the tool `name` with `arguments` (JSON object text) against `storage`.
pub fn call(name: &str, arguments: &str, storage: &mut dyn Storage) -> Result<Outcome, CallFailure> {
    match name {
        "calendar_query" => query(parse(arguments)?, storage),
        "calendar_create" => create(parse(arguments)?, storage),
        "calendar_delete" => delete(parse(arguments)?, storage),
        _ => Err(CallFailure::UnknownTool(name.to_owned())),
    }
}

fn parse<T: for<'de> Deserialize<'de>>(arguments: &str) -> Result<T, CallFailure> {
    serde_json::from_str(arguments).map_err(|e| CallFailure::InvalidArguments(e.to_string()))
}

fn invalid(why: String) -> CallFailure {
    CallFailure::InvalidArguments(why)
}

fn query(args: QueryArgs, storage: &mut dyn Storage) -> Result<Outcome, CallFailure> {
    check_user(&args.user).map_err(invalid)?;
    let from = args.from.as_deref().map(Date::parse).transpose().map_err(invalid)?;
    let to = args.to.as_deref().map(Date::parse).transpose().map_err(invalid)?;
    if let (Some(from), Some(to)) = (&from, &to)
        && from > to
    {
        return Ok(error_outcome(format!("`from` ({}) is after `to` ({})", from.as_str(), to.as_str())));
    }
    let calendar = load(storage)?;
    let found =
        calendar.query(&args.user, from.map(|d| d.first_minute()).as_ref(), to.map(|d| d.last_minute()).as_ref());
    let shown = &found[..found.len().min(MAX_RESULTS)];
    let mut text = match found.len() {
        0 => format!("No events for {}.", args.user),
        1 => format!("1 event for {}:", args.user),
        n => format!("{n} events for {}:", args.user),
    };
    for event in shown {
        text.push('\n');
        text.push_str(&line(event));
    }
    if found.len() > shown.len() {
        text.push_str(&format!("\n(showing the first {MAX_RESULTS}; narrow `from` and `to` to see the rest)"));
    }
    Ok(outcome(text, shown))
}

fn create(args: CreateArgs, storage: &mut dyn Storage) -> Result<Outcome, CallFailure> {
    check_user(&args.user).map_err(invalid)?;
    check_text(&args.title, &args.description).map_err(invalid)?;
    let start = DateTime::parse(&args.start).map_err(invalid)?;
    let end = DateTime::parse(&args.end).map_err(invalid)?;
    if end < start {
        return Ok(error_outcome(format!("the end ({}) is before the start ({})", end.as_str(), start.as_str())));
    }
    let mut calendar = load(storage)?;
    let new = NewEvent { title: args.title, start, end, description: args.description };
    let event = match calendar.create(&args.user, new) {
        Ok(event) => event,
        Err(why) => return Ok(error_outcome(why)),
    };
    if let Some(refused) = save(&calendar, storage)? {
        return Ok(refused);
    }
    Ok(outcome(format!("Created {}", line(&event)), &[&event]))
}

fn delete(args: DeleteArgs, storage: &mut dyn Storage) -> Result<Outcome, CallFailure> {
    check_user(&args.user).map_err(invalid)?;
    let mut calendar = load(storage)?;
    let Some(event) = calendar.delete(&args.user, &args.id) else {
        return Ok(error_outcome(format!("{} has no event with id {:?}", args.user, args.id)));
    };
    if let Some(refused) = save(&calendar, storage)? {
        return Ok(refused);
    }
    Ok(outcome(format!("Deleted {}", line(&event)), &[&event]))
}

fn load(storage: &dyn Storage) -> Result<Calendar, CallFailure> {
    match storage.read() {
        Ok(None) => Ok(Calendar::default()),
        Ok(Some(text)) => serde_json::from_str(&text)
            .map_err(|e| CallFailure::Internal(format!("the calendar file is not a valid calendar: {e}"))),
        Err(StorageError::NoDataDir(why) | StorageError::Io(why)) => Err(CallFailure::Internal(why)),
        Err(StorageError::ReadOnly) => Err(CallFailure::Internal("the calendar cannot be read".into())),
    }
}

/// Writes the calendar back; a refusal the model should read comes back as
/// `Some(outcome)`.
fn save(calendar: &Calendar, storage: &mut dyn Storage) -> Result<Option<Outcome>, CallFailure> {
    let text = serde_json::to_string_pretty(calendar).map_err(|e| CallFailure::Internal(e.to_string()))?;
    match storage.write(&text) {
        Ok(()) => Ok(None),
        Err(StorageError::ReadOnly) => Ok(Some(error_outcome("the calendar is read-only".into()))),
        Err(StorageError::NoDataDir(why) | StorageError::Io(why)) => Err(CallFailure::Internal(why)),
    }
}

/// One event on one line (and its description indented below).
fn line(event: &Event) -> String {
    let mut text = format!("- {} to {}: {} [{}]", event.start, event.end, event.title, event.id);
    for part in event.description.lines() {
        text.push_str("\n    ");
        text.push_str(part);
    }
    text
}

fn outcome(text: String, events: &[&Event]) -> Outcome {
    let events: Vec<Value> = events
        .iter()
        .map(|e| json!({"id": e.id, "title": e.title, "start": e.start, "end": e.end, "description": e.description}))
        .collect();
    Outcome {
        content: json!([{"type": "text", "text": text}]).to_string(),
        structured_content: Some(json!({ "events": events }).to_string()),
        is_error: false,
    }
}

fn error_outcome(text: String) -> Outcome {
    Outcome { content: json!([{"type": "text", "text": text}]).to_string(), structured_content: None, is_error: true }
}

#[cfg(test)]
mod tests;
