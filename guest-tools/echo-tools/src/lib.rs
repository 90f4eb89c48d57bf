//! The smallest `tool-provider` component: one `echo` tool that returns its
//! `text` argument. It pins the tool-provider world from the guest side, and
//! the sandbox tests use it as a valid component that is not a formatter.

// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#![allow(unsafe_code)]

wit_bindgen::generate!({ world: "tool-provider", path: "../../wit" });

use exports::wasmgate::sandbox::tools::{CallError, CallOutcome, Guest, ToolDefinition};

struct EchoTools;

impl Guest for EchoTools {
    fn list_tools() -> Vec<ToolDefinition> {
        vec![ToolDefinition {
            name: "echo".into(),
            description: "Returns the `text` argument unchanged.".into(),
            input_schema: r#"{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}"#.into(),
        }]
    }

    fn call_tool(name: String, arguments: String) -> Result<CallOutcome, CallError> {
        if name != "echo" {
            return Err(CallError::UnknownTool(name));
        }
        // The arguments are JSON text; this fixture avoids a JSON parser and
        // only accepts the exact shape {"text":"..."} without escapes.
        let text = arguments
            .strip_prefix(r#"{"text":""#)
            .and_then(|rest| rest.strip_suffix(r#""}"#))
            .filter(|text| !text.contains(['"', '\\']))
            .ok_or_else(|| CallError::InvalidArguments("expected {\"text\": \"...\"}".into()))?;
        Ok(CallOutcome {
            content: format!(r#"[{{"type":"text","text":"{text}"}}]"#),
            structured_content: None,
            is_error: false,
        })
    }
}

export!(EchoTools);
