//! Host bindings generated from `wit/`, one module per world. Private: the
//! crate re-exports only the types callers need.

mod formatter {
    wasmtime::component::bindgen!({
        world: "formatter",
        path: "../../wit",
    });
}

mod tool_provider {
    wasmtime::component::bindgen!({
        world: "tool-provider",
        path: "../../wit",
    });
}

pub(crate) use formatter::FormatterPre;
pub use formatter::exports::wasmgate::sandbox::format::{FormatError, ToolResult};
pub use tool_provider::exports::wasmgate::sandbox::tools::CallError;
pub(crate) use tool_provider::exports::wasmgate::sandbox::tools::{CallOutcome, ToolDefinition};
pub(crate) use tool_provider::{ToolProvider, ToolProviderPre};
