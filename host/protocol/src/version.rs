//! MCP protocol versions and how client and server agree on one.
//!
//! Versions are dates, and the spec orders them as dates. The big split is between
//! *legacy* versions (up to 2025-11-25), negotiated once by `initialize`, and *stateless*
//! ones (2026-07-28 on), where every request names its version in `_meta` and a server
//! that disagrees answers [`UNSUPPORTED_PROTOCOL_VERSION`](crate::codes::UNSUPPORTED_PROTOCOL_VERSION)
//! with the list it supports. Both paths end in [`negotiate`]: the highest version both
//! sides know, or none. Unknown version strings from a server are ignored, never parsed
//! loosely: `"2025-11-25-beta"` is not `2025-11-25`.

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use crate::ProtocolError;
use crate::fields::{as_object, invalid, json_type, req_str, required, wrong_type};
use crate::jsonrpc::ErrorObject;

/// A protocol version this crate implements. Ordered oldest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProtocolVersion {
    /// 2024-11-05, the first published version.
    V2024_11_05,
    /// 2025-03-26 (added JSON-RPC batches, which this crate does not support).
    V2025_03_26,
    /// 2025-06-18 (removed batches; added structured tool output).
    V2025_06_18,
    /// 2025-11-25, the last handshake-era version.
    V2025_11_25,
    /// 2026-07-28, the first stateless version.
    V2026_07_28,
}

/// Every version this crate can speak, oldest first.
pub const SUPPORTED: [ProtocolVersion; 5] = [
    ProtocolVersion::V2024_11_05,
    ProtocolVersion::V2025_03_26,
    ProtocolVersion::V2025_06_18,
    ProtocolVersion::V2025_11_25,
    ProtocolVersion::V2026_07_28,
];

impl ProtocolVersion {
    /// The newest version.
    pub const LATEST: Self = Self::V2026_07_28;

    /// Parses an exact version string; anything else is `None`.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        SUPPORTED.into_iter().find(|v| v.as_str() == s)
    }

    /// The version string as it appears on the wire.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2024_11_05 => "2024-11-05",
            Self::V2025_03_26 => "2025-03-26",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2026_07_28 => "2026-07-28",
        }
    }

    /// Stateless versions: no `initialize`, no sessions, no `ping`; every request carries
    /// its version and the client's capabilities in `params._meta`.
    #[must_use]
    pub fn is_stateless(self) -> bool {
        self >= Self::V2026_07_28
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ProtocolVersion {
    type Err = ProtocolError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s).ok_or_else(|| ProtocolError::UnsupportedVersion(s.to_owned()))
    }
}

/// The highest version in both `ours` and `theirs`, or `None`.
///
/// `theirs` is what the server advertised (`supportedVersions` of `server/discover`, or
/// `data.supported` of an unsupported-version error); strings this crate does not know
/// are skipped.
#[must_use]
pub fn negotiate<S: AsRef<str>>(ours: &[ProtocolVersion], theirs: &[S]) -> Option<ProtocolVersion> {
    theirs.iter().filter_map(|s| ProtocolVersion::parse(s.as_ref())).filter(|v| ours.contains(v)).max()
}

/// Checks the `protocolVersion` a server answered to `initialize`.
///
/// The server either echoes the client's version or proposes another; the client must
/// know it, and it must be a handshake-era version (a stateless version has no
/// `initialize`, so proposing one there is a confused or hostile server).
///
/// # Errors
///
/// [`UnsupportedVersion`](ProtocolError::UnsupportedVersion) if the string is unknown or
/// not in `ours`, [`InvalidValue`](ProtocolError::InvalidValue) if it is stateless.
pub fn check_initialize_version(ours: &[ProtocolVersion], answered: &str) -> Result<ProtocolVersion, ProtocolError> {
    let version = ProtocolVersion::parse(answered)
        .filter(|v| ours.contains(v))
        .ok_or_else(|| ProtocolError::UnsupportedVersion(answered.to_owned()))?;
    if version.is_stateless() {
        return Err(invalid(
            "result.protocolVersion".into(),
            format!("{version} is stateless and cannot be negotiated by initialize"),
        ));
    }
    Ok(version)
}

/// The `data` of an [`UNSUPPORTED_PROTOCOL_VERSION`](crate::codes::UNSUPPORTED_PROTOCOL_VERSION) error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedVersion {
    /// Versions the server supports (as sent, including ones this crate does not know).
    pub supported: Vec<String>,
    /// The version the client asked for.
    pub requested: String,
}

impl UnsupportedVersion {
    /// The version to retry with: [`negotiate`] over the server's list.
    #[must_use]
    pub fn retry_with(&self, ours: &[ProtocolVersion]) -> Option<ProtocolVersion> {
        negotiate(ours, &self.supported)
    }
}

/// Reads the `data` of an unsupported-protocol-version error.
///
/// # Errors
///
/// [`InvalidValue`](ProtocolError::InvalidValue) if the code is not -32022, otherwise the
/// field errors for a `data` that is not `{supported: string[], requested: string}`.
pub fn parse_unsupported_version(error: &ErrorObject) -> Result<UnsupportedVersion, ProtocolError> {
    if error.code != crate::codes::UNSUPPORTED_PROTOCOL_VERSION {
        return Err(invalid("error.code".into(), format!("{} is not the unsupported-version code", error.code)));
    }
    let data = error.data.as_ref().ok_or_else(|| ProtocolError::MissingField { at: "error.data".into() })?;
    let data = as_object(data, "error.data")?;
    let supported = required(data, "error.data", "supported")?
        .as_array()
        .ok_or_else(|| wrong_type("error.data.supported".into(), "an array of strings"))?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::String(s) => Ok(s.clone()),
            other => Err(invalid(
                format!("error.data.supported[{i}]"),
                format!("expected a string, got {}", json_type(other)),
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let requested = req_str(data, "error.data", "requested")?.to_owned();
    Ok(UnsupportedVersion { supported, requested })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_by_date_and_round_trip_through_strings() {
        for window in SUPPORTED.windows(2) {
            assert!(window[0] < window[1]);
            assert!(window[0].as_str() < window[1].as_str());
        }
        for v in SUPPORTED {
            assert_eq!(ProtocolVersion::parse(v.as_str()), Some(v));
            assert_eq!(v.as_str().parse::<ProtocolVersion>(), Ok(v));
        }
    }

    #[test]
    fn only_2026_and_later_are_stateless() {
        assert!(ProtocolVersion::V2026_07_28.is_stateless());
        assert!(!ProtocolVersion::V2025_11_25.is_stateless());
        assert_eq!(ProtocolVersion::LATEST, ProtocolVersion::V2026_07_28);
    }

    #[test]
    fn near_miss_version_strings_are_not_parsed() {
        for s in ["2025-11-25 ", "2025-11-25-beta", "2025-11-5", "", "DRAFT-2026-v1"] {
            assert_eq!(ProtocolVersion::parse(s), None, "{s:?}");
            assert_eq!(s.parse::<ProtocolVersion>(), Err(ProtocolError::UnsupportedVersion(s.into())));
        }
    }

    #[test]
    fn negotiation_picks_the_highest_common_version_or_none() {
        let ours = [ProtocolVersion::V2025_06_18, ProtocolVersion::V2025_11_25];
        assert_eq!(
            negotiate(&ours, &["2024-11-05", "2025-06-18", "2025-11-25", "2099-01-01"]),
            Some(ProtocolVersion::V2025_11_25)
        );
        assert_eq!(negotiate(&ours, &["2026-07-28"]), None);
        assert_eq!(negotiate::<&str>(&ours, &[]), None);
    }

    #[test]
    fn initialize_answer_must_be_known_ours_and_handshake_era() {
        assert_eq!(check_initialize_version(&SUPPORTED, "2025-06-18"), Ok(ProtocolVersion::V2025_06_18));
        assert!(matches!(
            check_initialize_version(&[ProtocolVersion::V2025_11_25], "2025-06-18"),
            Err(ProtocolError::UnsupportedVersion(_))
        ));
        assert!(matches!(check_initialize_version(&SUPPORTED, "2026-07-28"), Err(ProtocolError::InvalidValue { .. })));
    }
}
