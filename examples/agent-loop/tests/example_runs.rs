//! The agent-loop example runs against server-everything and prints what the model saw.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn the_example_prints_every_kind_of_result_the_model_sees() {
    let output = Command::new(env!("CARGO_BIN_EXE_agent-loop")).output().expect("run the example");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the example failed:\n{stdout}\n{stderr}");
    for line in [
        "  | Echo: hello from the agent",
        "  | conditions: Light rain / drizzle",
        "  | [image: image/png, 3.9 KiB]",
        "  | /a: \"one\" is not of type \"number\"",
        "  | The sum of 1 and 2 is 3.",
        "  | # Everything Server - Extension Points",
        "The loop ended with the model's answer: All done.",
    ] {
        assert!(stdout.lines().any(|l| l == line), "missing {line:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("iVBOR"), "no base64 reaches the model");
}
