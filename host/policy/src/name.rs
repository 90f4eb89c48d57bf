//! Provider-prefixed tool names: `calendar__calendar_query`.
//!
//! MCP allows tool names of 1 to 128 characters from `[A-Za-z0-9_.-]`. Every tool the agent sees
//! is renamed to `<provider>__<tool>` so that two providers offering a tool of the same name cannot
//! shadow each other. The mapping is injective because provider names are restricted to
//! `[a-z0-9-]`: they never contain `_`, so the first `__` in a prefixed name always ends the
//! provider part, and [`split_prefixed`] recovers exactly the pair that was joined. Tool names are
//! kept as the provider wrote them when they fit the rules; one that does not fit (or becomes too
//! long once prefixed) is an error, and the adapter withholds that tool rather than mangle its name
//! into something that might collide with another.

use thiserror::Error;
use wasmgate_core::Naming;

/// The separator between provider and tool. Provider names cannot contain `_`, so it is unambiguous.
pub const SEPARATOR: &str = "__";
/// MCP's upper bound on a tool name, in characters (all allowed characters are ASCII).
pub const MAX_TOOL_NAME: usize = 128;
/// The upper bound on a provider name, chosen so that tools keep at least 94 characters.
pub const MAX_PROVIDER_NAME: usize = 32;

/// Why a name cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum NameError {
    /// The provider name is empty, too long, or has a character outside `[a-z0-9-]`.
    #[error(
        "provider name {name:?} is invalid: use 1 to {MAX_PROVIDER_NAME} characters from a-z, 0-9 and '-', \
         starting with a letter or digit"
    )]
    Provider {
        /// The offending name, as given.
        name: String,
    },
    /// The tool name has a character outside MCP's `[A-Za-z0-9_.-]`, or is empty.
    #[error("tool name {name:?} is outside MCP's name rules ([A-Za-z0-9_.-], 1 to {MAX_TOOL_NAME} characters)")]
    Tool {
        /// The offending name, as given (it may contain anything the provider sent).
        name: String,
    },
    /// The prefixed name would exceed MCP's 128-character limit.
    #[error("tool name {tool:?} is too long once prefixed with provider {provider:?} ({len} > {MAX_TOOL_NAME})")]
    TooLong {
        /// The provider.
        provider: String,
        /// The tool.
        tool: String,
        /// The length the prefixed name would have.
        len: usize,
    },
}

/// Checks a provider name: 1..=32 characters of `[a-z0-9-]`, not starting with `-`.
pub fn validate_provider(name: &str) -> Result<(), NameError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_PROVIDER_NAME
        && !name.starts_with('-')
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok { Ok(()) } else { Err(NameError::Provider { name: name.to_owned() }) }
}

/// Whether `name` fits MCP's tool name rules on its own.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The name the agent sees for `tool` of `provider`, or why the tool must be withheld.
pub fn prefixed_name(provider: &str, tool: &str) -> Result<String, NameError> {
    validate_provider(provider)?;
    if !is_valid_tool_name(tool) {
        return Err(NameError::Tool { name: tool.to_owned() });
    }
    let len = provider.len() + SEPARATOR.len() + tool.len();
    if len > MAX_TOOL_NAME {
        return Err(NameError::TooLong { provider: provider.to_owned(), tool: tool.to_owned(), len });
    }
    Ok(format!("{provider}{SEPARATOR}{tool}"))
}

/// The name shown for `provider`'s tool (or prompt) `tool` under `naming`, or why it
/// must be withheld.
pub fn exposed_name(provider: &str, tool: &str, naming: Naming) -> Result<String, NameError> {
    match naming {
        Naming::Prefixed => prefixed_name(provider, tool),
        Naming::AsIs if is_valid_tool_name(tool) => Ok(tool.to_owned()),
        Naming::AsIs => Err(NameError::Tool { name: tool.to_owned() }),
    }
}

/// The inverse of [`prefixed_name`]: `Some((provider, tool))` exactly when `name` is the prefixed
/// name of that pair, `None` for anything else (an unprefixed or malformed name).
pub fn split_prefixed(name: &str) -> Option<(&str, &str)> {
    if name.len() > MAX_TOOL_NAME {
        return None;
    }
    let (provider, tool) = name.split_once(SEPARATOR)?;
    validate_provider(provider).ok()?;
    is_valid_tool_name(tool).then_some((provider, tool))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn as_is_names_are_the_providers_own_and_still_follow_mcp_rules() {
        assert_eq!(exposed_name("calendar", "query", Naming::AsIs).unwrap(), "query");
        assert_eq!(exposed_name("calendar", "query", Naming::Prefixed).unwrap(), "calendar__query");
        assert!(matches!(exposed_name("calendar", "bad name", Naming::AsIs), Err(NameError::Tool { .. })));
        assert!(exposed_name("calendar", &"t".repeat(MAX_TOOL_NAME), Naming::AsIs).is_ok());
        assert!(exposed_name("calendar", &"t".repeat(MAX_TOOL_NAME + 1), Naming::AsIs).is_err());
    }

    #[test]
    fn a_fitting_tool_name_is_kept_after_the_provider_prefix() {
        assert_eq!(prefixed_name("calendar", "calendar_query").unwrap(), "calendar__calendar_query");
        assert_eq!(split_prefixed("calendar__calendar_query"), Some(("calendar", "calendar_query")));
    }

    #[test]
    fn tool_names_with_leading_or_doubled_underscores_round_trip() {
        for tool in ["_x", "__x", "x__y", "x_", "___", "."] {
            let name = prefixed_name("p-1", tool).unwrap();
            assert_eq!(split_prefixed(&name), Some(("p-1", tool)), "{name}");
        }
    }

    #[test]
    fn provider_names_outside_lowercase_digits_and_dash_are_rejected() {
        for bad in ["", "Cal", "cal_x", "cal.x", "-cal", "cal x", "ca\u{0142}", &"a".repeat(33)] {
            assert!(matches!(validate_provider(bad), Err(NameError::Provider { .. })), "{bad:?}");
        }
        assert!(validate_provider(&"a".repeat(32)).is_ok());
        assert!(validate_provider("9-lives").is_ok());
    }

    #[test]
    fn tool_names_outside_mcp_rules_are_an_error_not_mangled() {
        for bad in ["", "a b", "a/b", "caf\u{e9}", "a\u{200b}b", "a\nb", "\u{ff41}"] {
            assert_eq!(prefixed_name("p", bad), Err(NameError::Tool { name: bad.to_owned() }));
        }
    }

    #[test]
    fn a_tool_name_too_long_once_prefixed_is_an_error() {
        let tool = "t".repeat(MAX_TOOL_NAME - 3); // "p" + "__" + 125 = 128: fits
        assert_eq!(prefixed_name("p", &tool).unwrap().len(), MAX_TOOL_NAME);
        let tool = "t".repeat(MAX_TOOL_NAME - 2);
        assert!(matches!(prefixed_name("p", &tool), Err(NameError::TooLong { len: 129, .. })));
    }

    #[test]
    fn split_rejects_names_that_no_pair_maps_to() {
        for name in ["calendar", "__tool", "Cal__tool", "cal__", "cal__a b", "a_b__c", &"a".repeat(129)] {
            assert_eq!(split_prefixed(name), None, "{name}");
        }
    }

    /// Exhaustive over a small alphabet chosen to contain the separator's parts: every pair maps to
    /// a distinct name, and every name splits back to its pair.
    #[test]
    fn prefixing_is_injective_over_every_small_provider_and_tool() {
        let providers = words(&["a", "-", "0"], 3);
        let tools = words(&["a", "_", ".", "-", "A"], 4);
        let mut seen: HashMap<String, (String, String)> = HashMap::new();
        for p in providers.iter().filter(|p| validate_provider(p).is_ok()) {
            for t in tools.iter().filter(|t| !t.is_empty()) {
                let name = prefixed_name(p, t).unwrap();
                assert_eq!(split_prefixed(&name), Some((p.as_str(), t.as_str())));
                if let Some(prev) = seen.insert(name.clone(), (p.clone(), t.clone())) {
                    panic!("{name} is produced by both {prev:?} and {:?}", (p, t));
                }
            }
        }
        assert!(seen.len() > 10_000, "the alphabet should give a meaningful search: {}", seen.len());
    }

    /// Random long names, from a fixed-seed generator so a failure reproduces.
    #[test]
    fn prefixing_round_trips_for_random_long_names() {
        let mut next = crate::generated::xorshift(0x9e37_79b9_7f4a_7c15);
        let provider_chars = b"abcz09-";
        let tool_chars = b"aZ09_.-";
        for _ in 0..20_000 {
            let plen = 1 + (next() % 32) as usize;
            let tlen = 1 + (next() % 100) as usize;
            let mut p: String = (0..plen).map(|_| provider_chars[(next() % 7) as usize] as char).collect();
            if p.starts_with('-') {
                p.replace_range(0..1, "a");
            }
            let t: String = (0..tlen).map(|_| tool_chars[(next() % 7) as usize] as char).collect();
            match prefixed_name(&p, &t) {
                Ok(name) => assert_eq!(split_prefixed(&name), Some((p.as_str(), t.as_str()))),
                Err(NameError::TooLong { len, .. }) => assert!(len > MAX_TOOL_NAME),
                Err(e) => panic!("{e}"),
            }
        }
    }

    fn words(alphabet: &[&str], max_len: usize) -> Vec<String> {
        let mut all = vec![String::new()];
        let mut layer = vec![String::new()];
        for _ in 0..max_len {
            layer = layer.iter().flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}"))).collect();
            all.extend(layer.iter().cloned());
        }
        all
    }
}
