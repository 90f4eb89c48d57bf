//! Tool names as the agent sees them: `<provider>__<tool>`, within MCP's name rules
//! (`[A-Za-z0-9_.-]`, at most 128 characters).
//!
//! Provider names are limited to `[a-z0-9-]`, so the first `__` of an exposed name
//! always ends the provider: two providers can never produce the same exposed name,
//! whatever their tools are called. A tool name outside the rules is not mangled into
//! one (which could collide): the tool is withheld.

use crate::error::AdapterError;

/// Separates the provider from the tool in an exposed name.
pub const SEPARATOR: &str = "__";
/// MCP's longest tool name.
pub const MAX_NAME: usize = 128;
/// Longest provider name, leaving room for tool names.
pub const MAX_PROVIDER: usize = 32;

/// Checks a configured provider name.
///
/// # Errors
///
/// [`AdapterError::ProviderName`] saying what the rule is.
pub fn check_provider_name(name: &str) -> Result<(), AdapterError> {
    let why = if name.is_empty() || name.len() > MAX_PROVIDER {
        Some("a provider name has 1 to 32 characters")
    } else if !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-') {
        Some("a provider name uses only a-z, 0-9 and '-'")
    } else {
        None
    };
    why.map_or(Ok(()), |why| Err(AdapterError::ProviderName { name: name.to_owned(), why }))
}

/// The exposed name of `provider`'s tool `tool`.
///
/// # Errors
///
/// Why the tool cannot be exposed (a name outside MCP's rules, or too long).
pub fn exposed_name(provider: &str, tool: &str) -> Result<String, String> {
    if tool.is_empty() || !tool.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) {
        return Err("its name is outside MCP's tool name rules ([A-Za-z0-9_.-])".into());
    }
    let exposed = format!("{provider}{SEPARATOR}{tool}");
    if exposed.len() > MAX_NAME {
        return Err(format!("its prefixed name would exceed {MAX_NAME} characters"));
    }
    Ok(exposed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_are_checked() {
        assert!(check_provider_name("calendar-2").is_ok());
        for bad in ["", "Calendar", "cal_endar", "a b", &"x".repeat(33)] {
            assert!(check_provider_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn no_two_providers_make_the_same_name() {
        // "a" + "b__c" and "a__b" + "c" would collide, but "a__b" is not a provider name.
        assert_eq!(exposed_name("a", "b__c").ok().as_deref(), Some("a__b__c"));
        assert!(check_provider_name("a__b").is_err());
    }

    #[test]
    fn tools_outside_the_rules_are_withheld_not_mangled() {
        assert!(exposed_name("p", "get weather").is_err());
        assert!(exposed_name("p", "").is_err());
        assert!(exposed_name("p", "ok.tool-1_x").is_ok());
        assert!(exposed_name("p", &"t".repeat(126)).is_err());
    }
}
