//! wasmgate's default formatter: renders any MCP tool result as clean,
//! bounded plain text.
//!
//! Layout:
//! - [`render`]: the result-level rules (content blocks in order, placeholders
//!   for media, structured content rendered once);
//! - `json`: JSON text rendered as indented `key: value` lines and bullets,
//!   straight from the parser, without building a tree;
//! - `out`: the bounded, line-oriented output buffer;
//! - [`sanitize`]: removal of control, escape, invisible and bidi characters;
//! - `component` (wasm32 only): the `formatter` world's export, a thin shell
//!   over [`render::render`].
//!
//! The logic is plain Rust so that it is unit-tested natively and benchmarked
//! natively against the same code running in the sandbox.

mod json;
mod out;
pub mod render;
pub mod sanitize;

#[cfg(target_arch = "wasm32")]
mod component {
    wit_bindgen::generate!({ world: "formatter", path: "../../wit" });

    use crate::render::{Input, RenderError, render};
    use exports::wasmgate::sandbox::format::{FormatError, Guest, ToolResult};

    struct JsonText;

    impl Guest for JsonText {
        fn format(result: ToolResult) -> Result<String, FormatError> {
            let input = Input {
                content: &result.content,
                structured: result.structured_content.as_deref(),
                is_error: result.is_error,
                max_output_bytes: result.max_output_bytes as usize,
            };
            render(input).map_err(|RenderError::InvalidInput(why)| FormatError::InvalidInput(why))
        }
    }

    export!(JsonText);
}
