//! JSON-RPC and MCP error codes, as named constants.
//!
//! Magic numbers in error handling are how a gateway ends up answering
//! "header mismatch" when it meant "unsupported version". The values are the
//! ones in `schema/2026-07-28/schema.ts` and `schema/2025-11-25/schema.ts` of
//! the MCP specification; the two codes that only older versions define are
//! kept (and marked) because servers speaking those versions still send them.
//!
//! MCP splits the JSON-RPC server-error range `-32000..=-32099`:
//! `-32000..=-32019` is legacy/implementation-defined and carries no shared
//! meaning, `-32020..=-32099` is reserved for codes the MCP spec defines.

/// Invalid JSON was received (JSON-RPC 2.0).
pub const PARSE_ERROR: i64 = -32700;
/// The JSON is not a valid request object (JSON-RPC 2.0).
pub const INVALID_REQUEST: i64 = -32600;
/// The method does not exist or is not available (JSON-RPC 2.0).
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Invalid method parameters (JSON-RPC 2.0). MCP also uses it for an unknown tool or prompt,
/// an invalid cursor, and (since 2026-07-28) a resource that does not exist.
pub const INVALID_PARAMS: i64 = -32602;
/// Internal error on the receiver (JSON-RPC 2.0).
pub const INTERNAL_ERROR: i64 = -32603;

/// HTTP headers of a request disagree with its body, or are missing/malformed (2026-07-28).
pub const HEADER_MISMATCH: i64 = -32020;
/// The server needs a client capability the request's `clientCapabilities` did not declare
/// (2026-07-28; the schema calls it `MISSING_REQUIRED_CLIENT_CAPABILITY`).
/// `data` is `{requiredCapabilities: ClientCapabilities}`.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// The request's protocol version is not supported (2026-07-28).
/// `data` is `{supported: string[], requested: string}`; see
/// [`parse_unsupported_version`](crate::version::parse_unsupported_version).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Resource not found, 2025-11-25 and earlier only; 2026-07-28 uses [`INVALID_PARAMS`]
/// and forbids emitting this code, but clients should still accept it from older servers.
pub const LEGACY_RESOURCE_NOT_FOUND: i64 = -32002;
/// URL elicitation required, 2025-11-25 only (reserved, never reused, afterwards).
pub const LEGACY_URL_ELICITATION_REQUIRED: i64 = -32042;

/// wasmgate's own (in the implementation-defined range): the caller has used up a rate
/// limit or call budget of the policy. `data` is `{retryAfter: seconds}`; over HTTP a
/// 2026-07-28 request is answered 429 with `Retry-After`.
pub const RATE_LIMITED: i64 = -32010;

/// wasmgate's own: the gateway cannot serve the request now, because a store it shares
/// with its other replicas cannot be reached (it refuses rather than decide alone).
/// `data` is `{retryAfter: seconds}`; over HTTP a 2026-07-28 request is answered 503 with
/// `Retry-After`.
pub const UNAVAILABLE: i64 = -32011;

/// First code of the range the MCP specification reserves for itself.
pub const MCP_RESERVED_MIN: i64 = -32099;
/// Last code of the range the MCP specification reserves for itself.
pub const MCP_RESERVED_MAX: i64 = -32020;

/// The specification's name for a code this crate knows, for logs.
#[must_use]
pub fn name(code: i64) -> Option<&'static str> {
    Some(match code {
        PARSE_ERROR => "ParseError",
        INVALID_REQUEST => "InvalidRequest",
        METHOD_NOT_FOUND => "MethodNotFound",
        INVALID_PARAMS => "InvalidParams",
        INTERNAL_ERROR => "InternalError",
        HEADER_MISMATCH => "HeaderMismatch",
        MISSING_REQUIRED_CLIENT_CAPABILITY => "MissingRequiredClientCapability",
        UNSUPPORTED_PROTOCOL_VERSION => "UnsupportedProtocolVersion",
        LEGACY_RESOURCE_NOT_FOUND => "ResourceNotFound (legacy)",
        LEGACY_URL_ELICITATION_REQUIRED => "UrlElicitationRequired (legacy)",
        _ => return None,
    })
}

/// Whether `code` lies in the range reserved for MCP-defined codes (`-32099..=-32020`).
#[must_use]
pub fn is_mcp_reserved(code: i64) -> bool {
    (MCP_RESERVED_MIN..=MCP_RESERVED_MAX).contains(&code)
}

/// Whether `code` is one of the errors only a stateless-era (2026-07-28+) server sends.
///
/// This is the era probe of the stdio transport: a `server/discover` answered with one
/// of these means "modern server, retry with a supported version", while any other error
/// means "legacy server, fall back to `initialize`".
#[must_use]
pub fn is_modern_error(code: i64) -> bool {
    matches!(code, HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_match_the_specification() {
        assert_eq!((PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND), (-32700, -32600, -32601));
        assert_eq!((INVALID_PARAMS, INTERNAL_ERROR), (-32602, -32603));
        assert_eq!(
            (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION),
            (-32020, -32021, -32022)
        );
        assert_eq!((LEGACY_RESOURCE_NOT_FOUND, LEGACY_URL_ELICITATION_REQUIRED), (-32002, -32042));
    }

    #[test]
    fn only_the_three_modern_codes_identify_a_modern_server() {
        assert!(is_modern_error(-32022) && is_modern_error(-32021) && is_modern_error(-32020));
        assert!(!is_modern_error(METHOD_NOT_FOUND) && !is_modern_error(INVALID_PARAMS) && !is_modern_error(-32042));
    }

    #[test]
    fn reserved_range_is_the_upper_part_of_the_server_error_range() {
        assert!(is_mcp_reserved(-32020) && is_mcp_reserved(-32099) && is_mcp_reserved(-32042));
        assert!(!is_mcp_reserved(-32019) && !is_mcp_reserved(-32002) && !is_mcp_reserved(-32100));
    }

    #[test]
    fn every_named_code_has_a_name_and_no_two_share_one() {
        let named = [
            PARSE_ERROR,
            INVALID_REQUEST,
            METHOD_NOT_FOUND,
            INVALID_PARAMS,
            INTERNAL_ERROR,
            HEADER_MISMATCH,
            MISSING_REQUIRED_CLIENT_CAPABILITY,
            UNSUPPORTED_PROTOCOL_VERSION,
            LEGACY_RESOURCE_NOT_FOUND,
            LEGACY_URL_ELICITATION_REQUIRED,
        ];
        let mut names: Vec<&str> = named.iter().map(|&code| name(code).unwrap_or_default()).collect();
        assert!(names.iter().all(|n| !n.is_empty()), "{names:?}");
        assert_eq!(name(UNSUPPORTED_PROTOCOL_VERSION), Some("UnsupportedProtocolVersion"));
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), named.len(), "{names:?}");
        assert_eq!(name(-1), None);
    }
}
