//! `wasmgate doctor`: what this machine enforces on a confined stdio server, measured by
//! starting one, and whether a provider under `confinement = "required"` starts here.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn the_doctor_measures_every_mechanism_and_says_whether_required_servers_start() {
    let out = Command::new(env!("CARGO_BIN_EXE_wasmgate")).arg("doctor").output().unwrap();
    let shown = String::from_utf8(out.stdout).unwrap();
    for mechanism in [
        "Landlock filesystem rules",
        "the seccomp filter",
        "a network namespace",
        "no_new_privs",
        "dropping every capability",
        "resource limits",
        "a process count limit",
    ] {
        assert!(shown.lines().any(|line| line.contains(mechanism)), "{mechanism} missing from:\n{shown}");
    }
    assert!(shown.contains("user.max_user_namespaces") || shown.contains("user: "), "{shown}");
    // The exit status and the verdict agree: 0 and "start here", or 2 and "do NOT start".
    match out.status.code() {
        Some(0) => assert!(shown.contains("Providers under confinement = \"required\" start here."), "{shown}"),
        Some(2) => assert!(shown.contains("do NOT start here"), "{shown}"),
        other => panic!("exit status {other:?}: {shown}"),
    }
    // Egress by host, measured too; without a configuration it says what would show the grants.
    assert!(
        shown.contains("  in force  the egress proxy, and plain connects to addresses")
            || shown.contains("  MISSING   a stdio server granted hosts does not start here"),
        "{shown}"
    );
    assert!(shown.contains("the grants of a configuration are shown with one"), "{shown}");
    // Where a mechanism is missing, the line after it says how to enable it.
    let lines: Vec<&str> = shown.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("MISSING") || line.trim_start().starts_with("covered") {
            assert!(lines[i + 1..].iter().take(2).any(|l| l.contains("to enable:")), "{shown}");
        }
    }
}
