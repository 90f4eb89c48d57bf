//! [`AdapterError`]: what stops start-up. Per-call failures are not here: they are
//! tool results or [`ToolError`](wasmgate_agent::ToolError)s, as the failure contract says.

use std::path::PathBuf;

use wasmgate_client::ClientError;
use wasmgate_policy::NameError;
use wasmgate_sandbox::{LoadError, SandboxError};

/// Start-up failed; the text names the provider or the file and what is wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdapterError {
    /// A provider could not be connected to, or would not list its tools.
    #[error("cannot start provider {provider:?}")]
    Unreachable {
        /// The provider's configured name.
        provider: String,
        /// What the client reported (boxed: it is large, and start-up errors are rare).
        source: Box<ClientError>,
    },
    /// A provider's transport could not be set up (a stdio server not spawned, a bad URL).
    #[error("cannot start provider {provider:?}")]
    Transport {
        /// The provider's configured name.
        provider: String,
        /// What the transport reported.
        source: wasmgate_client::TransportError,
    },
    /// A configured formatter file is not a usable formatter component.
    #[error("cannot load the formatter {}", path.display())]
    Formatter {
        /// The configured file.
        path: PathBuf,
        /// What is wrong with it.
        source: LoadError,
    },
    /// A WASM tool component would not list its tools (a trap, a limit, a list that
    /// breaks the contract).
    #[error("cannot start provider {provider:?}: its component would not list its tools")]
    Component {
        /// The provider's configured name.
        provider: String,
        /// What the sandbox reported.
        source: SandboxError,
    },
    /// A provider name that would make ambiguous or invalid tool names.
    #[error(transparent)]
    ProviderName(#[from] NameError),
}

/// `error` and its causes, joined by `: ` (the client crate's, for the layers above).
pub use wasmgate_client::error::report;
