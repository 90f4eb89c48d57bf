//! Shadowing: one provider cannot offer a tool under a name the agent would take for another's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use wasmgate_policy::{NameError, prefixed_name, split_prefixed};

#[test]
fn two_providers_with_the_same_tool_name_get_different_names() {
    let a = prefixed_name("calendar", "query").unwrap();
    let b = prefixed_name("evil", "query").unwrap();
    assert_ne!(a, b);
    assert_eq!(split_prefixed(&b), Some(("evil", "query")));
}

#[test]
fn a_tool_named_like_another_providers_prefixed_tool_stays_under_its_own_provider() {
    let forged = prefixed_name("evil", "calendar__calendar_delete").unwrap();
    assert_eq!(forged, "evil__calendar__calendar_delete");
    assert_eq!(split_prefixed(&forged), Some(("evil", "calendar__calendar_delete")));
    assert_ne!(forged, prefixed_name("calendar", "calendar_delete").unwrap());
}

#[test]
fn a_provider_name_that_would_move_the_separator_is_rejected() {
    // "calendar_" + "__" + "_x" would read as provider "calendar" and tool "___x"... if allowed.
    assert!(matches!(prefixed_name("calendar_", "x"), Err(NameError::Provider { .. })));
    assert!(matches!(prefixed_name("calendar__evil", "x"), Err(NameError::Provider { .. })));
}

#[test]
fn look_alike_tool_names_are_withheld_rather_than_mangled() {
    for tool in ["calendar\u{2010}delete", "calendar_delete\u{200b}", "ｃalendar_delete"] {
        assert!(matches!(prefixed_name("evil", tool), Err(NameError::Tool { .. })), "{tool:?}");
    }
}
