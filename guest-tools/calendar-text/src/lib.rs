//! A formatter for calendar tools: renders the events of a calendar result
//! (`structuredContent.events`, the shape both `guest-tools/calendar` and
//! `examples/calendar/server.py` emit) as one readable agenda line per event:
//!
//! ```text
//! 2 events:
//! Tue 2026-12-01 10:00–11:00  Team sync — Weekly planning  [evt-2]
//! Thu 2026-12-03 22:00 – Fri 2026-12-04 06:00  Night shift  [evt-5]
//! ```
//!
//! Every field is untrusted: it is cleaned of control, escape, invisible and
//! bidi characters, put on one line, and cut to a bounded length; the whole
//! output stays within the host's byte budget. A result without events (an
//! error, another tool's result) is rendered as its plain text content.
//!
//! Layout:
//! - [`render`]: the result-level rules (agenda or plain text, the budget);
//! - [`clean`]: removal of unsafe characters and bounding of one field;
//! - [`when`]: the `YYYY-MM-DDTHH:MM` times, their weekdays and spans;
//! - `component` (wasm32 only): the `formatter` world's export, a thin shell
//!   over [`render::render`].

pub mod clean;
pub mod render;
pub mod when;

#[cfg(target_arch = "wasm32")]
// The bindings wit-bindgen generates export the component's functions by name, which is
// unsafe code by the compiler's definition; nothing else here is.
#[allow(unsafe_code)]
mod component {
    wit_bindgen::generate!({ world: "formatter", path: "../../wit" });

    use crate::render::{Input, RenderError, render};
    use exports::wasmgate::sandbox::format::{FormatError, Guest, ToolResult};

    struct CalendarText;

    impl Guest for CalendarText {
        fn format(result: ToolResult) -> Result<String, FormatError> {
            let input = Input {
                tool_name: &result.tool_name,
                content: &result.content,
                structured: result.structured_content.as_deref(),
                is_error: result.is_error,
                max_output_bytes: result.max_output_bytes as usize,
            };
            render(input).map_err(|RenderError::InvalidInput(why)| FormatError::InvalidInput(why))
        }
    }

    export!(CalendarText);
}
