//! Host bindings generated from `wit/`. Private: the crate re-exports only
//! the types callers need.

mod generated {
    wasmtime::component::bindgen!({
        world: "formatter",
        path: "../../wit",
    });
}

pub(crate) use generated::FormatterPre;
pub use generated::exports::wasmgate::sandbox::format::{FormatError, ToolResult};
