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

/// The same worlds with async exports, for calls run on an async task (the guest on
/// a fiber that yields at each epoch tick; WASI from the async linker).
mod formatter_async {
    wasmtime::component::bindgen!({
        world: "formatter",
        path: "../../wit",
        imports: { default: async },
        exports: { default: async },
    });
}

mod screen_async {
    wasmtime::component::bindgen!({
        world: "screen",
        path: "../../wit",
        imports: { default: async },
        exports: { default: async },
    });
}

mod media_async {
    wasmtime::component::bindgen!({
        world: "media-check",
        path: "../../wit",
        imports: { default: async },
        exports: { default: async },
    });
}

mod tool_provider_async {
    wasmtime::component::bindgen!({
        world: "tool-provider",
        path: "../../wit",
        imports: { default: async },
        exports: { default: async },
    });
}

pub(crate) use formatter::FormatterPre;
pub use formatter::exports::wasmgate::sandbox::format::{FormatError, ToolResult};
pub(crate) use formatter_async::{Formatter as FormatterAsync, FormatterPre as FormatterPreAsync};
pub(crate) use media_async::MediaCheckPre as MediaCheckPreAsync;
pub(crate) use media_async::exports::wasmgate::sandbox::media::MediaRequest;
pub(crate) use screen_async::ScreenPre as ScreenPreAsync;
pub(crate) use screen_async::exports::wasmgate::sandbox::screening::{
    Finding as GuestFinding, ProviderText, ScreenError,
};
pub use tool_provider::exports::wasmgate::sandbox::tools::CallError;
pub(crate) use tool_provider::exports::wasmgate::sandbox::tools::{CallOutcome, ToolDefinition};
pub(crate) use tool_provider::{ToolProvider, ToolProviderPre};
pub(crate) use tool_provider_async::{ToolProvider as ToolProviderAsync, ToolProviderPre as ToolProviderPreAsync};

// The async bindings' types are their own; these carry values across, field by field.

impl From<ToolResult> for formatter_async::exports::wasmgate::sandbox::format::ToolResult {
    fn from(r: ToolResult) -> Self {
        Self {
            tool_name: r.tool_name,
            provider: r.provider,
            content: r.content,
            structured_content: r.structured_content,
            is_error: r.is_error,
            max_output_bytes: r.max_output_bytes,
        }
    }
}

impl From<formatter_async::exports::wasmgate::sandbox::format::FormatError> for FormatError {
    fn from(e: formatter_async::exports::wasmgate::sandbox::format::FormatError) -> Self {
        use formatter_async::exports::wasmgate::sandbox::format::FormatError as E;
        match e {
            E::InvalidInput(why) => FormatError::InvalidInput(why),
            E::Unsupported(why) => FormatError::Unsupported(why),
            E::Internal(why) => FormatError::Internal(why),
        }
    }
}

impl From<tool_provider_async::exports::wasmgate::sandbox::tools::CallOutcome> for CallOutcome {
    fn from(o: tool_provider_async::exports::wasmgate::sandbox::tools::CallOutcome) -> Self {
        CallOutcome { content: o.content, structured_content: o.structured_content, is_error: o.is_error }
    }
}

impl From<tool_provider_async::exports::wasmgate::sandbox::tools::CallError> for CallError {
    fn from(e: tool_provider_async::exports::wasmgate::sandbox::tools::CallError) -> Self {
        use tool_provider_async::exports::wasmgate::sandbox::tools::CallError as E;
        match e {
            E::UnknownTool(name) => CallError::UnknownTool(name),
            E::InvalidArguments(why) => CallError::InvalidArguments(why),
            E::Internal(why) => CallError::Internal(why),
        }
    }
}
