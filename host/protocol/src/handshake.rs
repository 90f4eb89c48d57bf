//! Reading the server's self-description: `server/discover` (stateless era) and the
//! `initialize` result (handshake era).
//!
//! These answers decide which protocol version the gateway speaks, so they are parsed
//! strictly: `supportedVersions` must be a non-empty array of strings, `capabilities` an
//! object, the identity a `name` + `version` pair. The server's self-reported identity
//! and `instructions` are kept for display and logs only; the spec warns against basing
//! behaviour or security decisions on them. Neither method may answer `input_required`.

use serde_json::Value;

use crate::fields::{Object, as_object, invalid, join, opt_object, opt_str, req_array, req_object, req_str};
use crate::mcp::META_SERVER_INFO;
use crate::result::{CacheHints, parse_cache_hints, require_complete};
use crate::version::{ProtocolVersion, negotiate};
use crate::{ProtocolError, fields};

/// The server's identity (`Implementation`), as sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// Programmatic name.
    pub name: String,
    /// Version of the server software.
    pub version: String,
    /// Display name, if sent.
    pub title: Option<String>,
    /// The whole object (icons, description, websiteUrl, ...).
    pub raw: Value,
}

fn parse_server_info(value: &Value, at: &str) -> Result<ServerInfo, ProtocolError> {
    let obj = as_object(value, at)?;
    Ok(ServerInfo {
        name: req_str(obj, at, "name")?.to_owned(),
        version: req_str(obj, at, "version")?.to_owned(),
        title: opt_str(obj, at, "title")?.map(str::to_owned),
        raw: value.clone(),
    })
}

/// The result of `server/discover`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscoverResult {
    /// `supportedVersions`, as sent (may include versions this crate does not know).
    pub supported_versions: Vec<String>,
    /// `capabilities` (`ServerCapabilities`).
    pub capabilities: Object,
    /// `instructions`, natural-language guidance (untrusted text).
    pub instructions: Option<String>,
    /// `ttlMs` / `cacheScope`.
    pub cache: CacheHints,
    /// `_meta["io.modelcontextprotocol/serverInfo"]`, self-reported.
    pub server_info: Option<ServerInfo>,
    /// The whole result.
    pub raw: Value,
}

impl DiscoverResult {
    /// The highest version both sides support.
    #[must_use]
    pub fn negotiate(&self, ours: &[ProtocolVersion]) -> Option<ProtocolVersion> {
        negotiate(ours, &self.supported_versions)
    }
}

/// Parses a `server/discover` result.
///
/// # Errors
///
/// Field errors for missing/mistyped `supportedVersions` (a non-empty string array) or
/// `capabilities`, malformed optional fields, or a result that is not complete.
pub fn parse_discover_result(result: &Value) -> Result<DiscoverResult, ProtocolError> {
    require_complete(result, "server/discover")?;
    let obj = as_object(result, "result")?;
    let versions = req_array(obj, "result", "supportedVersions")?;
    if versions.is_empty() {
        return Err(invalid("result.supportedVersions".into(), "is empty"));
    }
    let supported_versions = versions
        .iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| fields::wrong_type(format!("result.supportedVersions[{i}]"), "a string"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let server_info = match opt_object(obj, "result", "_meta")? {
        Some(meta) => match meta.get(META_SERVER_INFO) {
            Some(info) => Some(parse_server_info(info, &join("result._meta", META_SERVER_INFO))?),
            None => None,
        },
        None => None,
    };
    Ok(DiscoverResult {
        supported_versions,
        capabilities: req_object(obj, "result", "capabilities")?.clone(),
        instructions: opt_str(obj, "result", "instructions")?.map(str::to_owned),
        cache: parse_cache_hints(obj, "result")?,
        server_info,
        raw: result.clone(),
    })
}

/// The result of `initialize`.
#[derive(Debug, Clone, PartialEq)]
pub struct InitializeResult {
    /// The version the server chose; check it with
    /// [`check_initialize_version`](crate::version::check_initialize_version).
    pub protocol_version: String,
    /// `capabilities` (`ServerCapabilities`).
    pub capabilities: Object,
    /// `serverInfo`, self-reported.
    pub server_info: ServerInfo,
    /// `instructions` (untrusted text).
    pub instructions: Option<String>,
    /// The whole result.
    pub raw: Value,
}

/// Parses an `initialize` result.
///
/// # Errors
///
/// Field errors for missing/mistyped `protocolVersion`, `capabilities`, `serverInfo`
/// (`name`, `version`) or `instructions`.
pub fn parse_initialize_result(result: &Value) -> Result<InitializeResult, ProtocolError> {
    require_complete(result, "initialize")?;
    let obj = as_object(result, "result")?;
    Ok(InitializeResult {
        protocol_version: req_str(obj, "result", "protocolVersion")?.to_owned(),
        capabilities: req_object(obj, "result", "capabilities")?.clone(),
        server_info: parse_server_info(fields::required(obj, "result", "serverInfo")?, "result.serverInfo")?,
        instructions: opt_str(obj, "result", "instructions")?.map(str::to_owned),
        raw: result.clone(),
    })
}
