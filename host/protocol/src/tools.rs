//! Tools: the definitions a server advertises and the results its calls return.
//!
//! These are the messages an untrusted server controls most, and what the agent's model
//! ends up reading, so the parsers check every MUST of the schema and keep the raw JSON
//! next to the typed fields: the policy layer sees exactly what will be forwarded.
//!
//! * `tools/list`: each tool has a non-empty string `name` and an `inputSchema` object
//!   whose `type` is `"object"` (required by every version); `outputSchema`,
//!   `annotations` and `_meta`, when present, are objects. A tool that breaks these is
//!   left out of the page alone, with what is wrong ([`ToolsPage::rejected`]): one bad
//!   definition does not cost a server its other tools. A page is capped at a
//!   configurable number of tools, and two tools with the same name on one page refuse
//!   the page: a call by name would be ambiguous. The naming *recommendations* (1-128
//!   chars of `[A-Za-z0-9_.-]`) are only a SHOULD, so they are reported by
//!   [`ToolDefinition::name_follows_guidance`], not enforced.
//! * `tools/call`: a complete result has a `content` array of typed blocks, an optional
//!   `structuredContent` (any JSON since 2026-07-28), and `isError` (absent means false).
//!   Tool failures arrive as `isError: true` results; an unknown tool is a JSON-RPC error
//!   (-32602) and never reaches this parser. An input-required result carries none of
//!   those fields; see [`ResultKind`].

use serde_json::Value;

use crate::ProtocolError;
use crate::fields::{Object, as_object, invalid, join, opt_bool, opt_object, opt_str, req_array, req_str, required};
use crate::page::parse_page;
use crate::result::{CacheHints, ResultKind, parse_result_kind};

/// One tool from `tools/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The name to call it by; never empty.
    pub name: String,
    /// Display name.
    pub title: Option<String>,
    /// Description for the model (untrusted text).
    pub description: Option<String>,
    /// JSON Schema of the arguments; an object with `"type": "object"`.
    pub input_schema: Value,
    /// JSON Schema of `structuredContent`, if declared.
    pub output_schema: Option<Value>,
    /// `ToolAnnotations`: hints only, never to be trusted from an untrusted server.
    pub annotations: Option<Value>,
    /// The whole definition (icons, `_meta`, `execution`, ...).
    pub raw: Value,
}

impl ToolDefinition {
    /// Whether the name follows the spec's SHOULD-level guidance: 1 to 128 characters,
    /// only ASCII letters, digits, `_`, `-` and `.`.
    #[must_use]
    pub fn name_follows_guidance(&self) -> bool {
        (1..=128).contains(&self.name.len())
            && self.name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    }
}

/// One page of a `tools/list` result.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolsPage {
    /// The tools, in the server's order.
    pub tools: Vec<ToolDefinition>,
    /// The entries that are not valid tool definitions, each with what is wrong (its
    /// `at` names the entry), left out of `tools`.
    pub rejected: Vec<ProtocolError>,
    /// Cursor for the next page, if there is one.
    pub next_cursor: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `tools/list` result, refusing pages of more than `max_tools` tools.
///
/// # Errors
///
/// [`TooMany`](ProtocolError::TooMany), [`DuplicateName`](ProtocolError::DuplicateName),
/// or the field errors of the first malformed tool (`at` = `result.tools[i]...`).
pub fn parse_tools_list(result: &Value, max_tools: usize) -> Result<ToolsPage, ProtocolError> {
    let page = parse_page(result, "tools/list", "tools", max_tools, lenient, |tool| match tool {
        Ok(tool) => tool.name.as_str(),
        Err(_) => "",
    })?;
    let (mut tools, mut rejected) = (Vec::new(), Vec::new());
    for entry in page.entries {
        match entry {
            Ok(tool) => tools.push(tool),
            Err(error) => rejected.push(error),
        }
    }
    Ok(ToolsPage { tools, rejected, next_cursor: page.next_cursor, cache: page.cache, raw: result.clone() })
}

/// One entry of a page: the tool, or what is wrong with it (never an error of the page).
#[allow(clippy::unnecessary_wraps)] // the page parser takes entry parsers that may fail
fn lenient(value: &Value, at: &str) -> Result<Result<ToolDefinition, ProtocolError>, ProtocolError> {
    Ok(parse_tool(value, at))
}

fn parse_tool(value: &Value, at: &str) -> Result<ToolDefinition, ProtocolError> {
    let obj = as_object(value, at)?;
    let name = req_str(obj, at, "name")?;
    if name.is_empty() {
        return Err(invalid(join(at, "name"), "is empty"));
    }
    let schema_at = join(at, "inputSchema");
    let input_schema = as_object(required(obj, at, "inputSchema")?, &schema_at)?;
    match input_schema.get("type") {
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => return Err(invalid(join(&schema_at, "type"), format!("must be \"object\", got {other}"))),
        None => return Err(ProtocolError::MissingField { at: join(&schema_at, "type") }),
    }
    let output_schema = opt_object(obj, at, "outputSchema")?;
    let annotations = opt_object(obj, at, "annotations")?;
    opt_object(obj, at, "_meta")?;
    Ok(ToolDefinition {
        name: name.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        description: opt_str(obj, at, "description")?.map(str::to_owned),
        input_schema: Value::Object(input_schema.clone()),
        output_schema: output_schema.map(|s| Value::Object(s.clone())),
        annotations: annotations.map(|a| Value::Object(a.clone())),
        raw: value.clone(),
    })
}

/// One block of tool output, each variant holding the block's raw JSON, validated for
/// its type's required fields. Accessors read the typed fields back out.
#[derive(Debug, Clone, PartialEq)]
pub enum ContentBlock {
    /// `{"type": "text", "text": ...}`.
    Text(Value),
    /// `{"type": "image", "data": base64, "mimeType": ...}`.
    Image(Value),
    /// `{"type": "audio", "data": base64, "mimeType": ...}`.
    Audio(Value),
    /// `{"type": "resource_link", "uri": ..., "name": ...}`: a reference, not content.
    ResourceLink(Value),
    /// `{"type": "resource", "resource": {"uri": ..., "text" | "blob": ...}}`: embedded.
    Resource(Value),
    /// A `type` this crate does not know (newer spec, extension, or nonsense): kept whole
    /// for the policy layer to decide.
    Unknown(Value),
}

impl ContentBlock {
    /// The block's JSON, exactly as sent.
    #[must_use]
    pub fn raw(&self) -> &Value {
        match self {
            Self::Text(v)
            | Self::Image(v)
            | Self::Audio(v)
            | Self::ResourceLink(v)
            | Self::Resource(v)
            | Self::Unknown(v) => v,
        }
    }

    /// The `type` string.
    #[must_use]
    pub fn kind(&self) -> &str {
        self.raw().get("type").and_then(Value::as_str).unwrap_or_default()
    }

    /// The text of a text block, or of an embedded text resource.
    #[must_use]
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Text(v) => v.get("text"),
            Self::Resource(v) => v.get("resource").and_then(|r| r.get("text")),
            _ => None,
        }
        .and_then(Value::as_str)
    }

    /// The URI of a resource link or embedded resource.
    #[must_use]
    pub fn uri(&self) -> Option<&str> {
        match self {
            Self::ResourceLink(v) => v.get("uri"),
            Self::Resource(v) => v.get("resource").and_then(|r| r.get("uri")),
            _ => None,
        }
        .and_then(Value::as_str)
    }

    /// The MIME type of an image or audio block (or of a resource, if it declares one).
    #[must_use]
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Self::Image(v) | Self::Audio(v) | Self::ResourceLink(v) => v.get("mimeType"),
            Self::Resource(v) => v.get("resource").and_then(|r| r.get("mimeType")),
            _ => None,
        }
        .and_then(Value::as_str)
    }
}

pub(crate) fn parse_content_block(value: &Value, at: &str) -> Result<ContentBlock, ProtocolError> {
    let obj = as_object(value, at)?;
    let kind = req_str(obj, at, "type")?;
    let wrap: fn(Value) -> ContentBlock = match kind {
        "text" => {
            req_str(obj, at, "text")?;
            ContentBlock::Text
        }
        "image" | "audio" => {
            req_str(obj, at, "data")?;
            req_str(obj, at, "mimeType")?;
            if kind == "image" { ContentBlock::Image } else { ContentBlock::Audio }
        }
        "resource_link" => {
            req_str(obj, at, "uri")?;
            req_str(obj, at, "name")?;
            ContentBlock::ResourceLink
        }
        "resource" => {
            check_embedded_resource(obj, at)?;
            ContentBlock::Resource
        }
        _ => return Ok(ContentBlock::Unknown(value.clone())),
    };
    opt_object(obj, at, "annotations")?;
    opt_object(obj, at, "_meta")?;
    Ok(wrap(value.clone()))
}

fn check_embedded_resource(block: &Object, block_at: &str) -> Result<(), ProtocolError> {
    let at = join(block_at, "resource");
    let resource = as_object(required(block, block_at, "resource")?, &at)?;
    req_str(resource, &at, "uri")?;
    opt_str(resource, &at, "mimeType")?;
    match (opt_str(resource, &at, "text")?, opt_str(resource, &at, "blob")?) {
        (Some(_), None) | (None, Some(_)) => Ok(()),
        (Some(_), Some(_)) => Err(invalid(at, "has both text and blob")),
        (None, None) => Err(invalid(at, "has neither text nor blob")),
    }
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub struct CallToolResult {
    /// Complete, or asking for input (then the other typed fields are empty).
    pub kind: ResultKind,
    /// The unstructured output.
    pub content: Vec<ContentBlock>,
    /// `structuredContent`, any JSON.
    pub structured_content: Option<Value>,
    /// `isError`: the tool ran and failed (absent means false).
    pub is_error: bool,
    /// The whole result.
    pub raw: Value,
}

/// Parses a `tools/call` result.
///
/// # Errors
///
/// The [`parse_result_kind`] errors; for a complete result, a missing or mistyped
/// `content` (`at` = `result.content[i]...`) or a non-boolean `isError`.
pub fn parse_call_tool_result(result: &Value) -> Result<CallToolResult, ProtocolError> {
    let kind = parse_result_kind(result)?;
    let obj = as_object(result, "result")?;
    let (content, structured_content, is_error) = match kind {
        ResultKind::InputRequired(_) => (Vec::new(), None, false),
        ResultKind::Complete => {
            let content = req_array(obj, "result", "content")?
                .iter()
                .enumerate()
                .map(|(i, block)| parse_content_block(block, &format!("result.content[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            let is_error = opt_bool(obj, "result", "isError")?.unwrap_or(false);
            (content, obj.get("structuredContent").cloned(), is_error)
        }
    };
    Ok(CallToolResult { kind, content, structured_content, is_error, raw: result.clone() })
}
