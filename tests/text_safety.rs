//! The host and the formatter components screen text the same way: every row of the
//! shared table (`text_safety::cases`), sent as a tool result's text block, comes out
//! of the json-text and calendar-text components in the sandbox exactly as the host's
//! sanitizer cleans it. Each component's code runs the table natively in its own crate
//! too; this is the same promise kept by the compiled components.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;

use wasmgate_guests::{CALENDAR_TEXT_PATH, JSON_TEXT};
use wasmgate_policy::sanitize;
use wasmgate_sandbox::{CallLimits, FormatRequest, Formatter, Sandbox, SandboxConfig};

fn render(formatter: &Formatter, text: &str) -> String {
    let content = serde_json::json!([{ "type": "text", "text": text }]).to_string();
    let request = FormatRequest {
        tool_name: "t".into(),
        provider: "p".into(),
        content,
        structured_content: None,
        is_error: false,
    };
    formatter.format(request).unwrap()
}

#[test]
fn host_and_formatter_components_agree_on_every_row_of_the_shared_table() {
    let sandbox = Sandbox::new(SandboxConfig { cache_dir: None, ..SandboxConfig::default() }).unwrap();
    let json_text = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let calendar_text = sandbox.load_formatter_file(Path::new(CALENDAR_TEXT_PATH), CallLimits::default()).unwrap();
    for case in text_safety::cases::CASES {
        let host = sanitize(case.input).text;
        assert_eq!(host, case.clean, "host: {}", case.name);
        assert_eq!(render(&json_text, case.input), host, "json-text: {}", case.name);
        assert_eq!(render(&calendar_text, case.input), host, "calendar-text: {}", case.name);
    }
}
