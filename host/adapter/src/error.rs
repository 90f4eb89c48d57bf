//! [`AdapterError`]: what stops start-up. Per-call failures are not here: they are
//! tool results or [`ToolError`](wasmgate_core::ToolError)s, as the failure contract says.

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
    /// A stdio server started but did not answer: what the client reported, the server's
    /// last lines of stderr, and the likely cause with what fixes it, when one is known.
    #[error("cannot start provider {provider:?}: {error}{}", said(stderr, cause.as_deref()))]
    Silent {
        /// The provider's configured name.
        provider: String,
        /// What the client reported (not a `source`: its text is part of this one's).
        error: Box<ClientError>,
        /// The server's last lines of stderr, oldest first (escaped).
        stderr: Vec<String>,
        /// The likely cause, and the key or command that fixes it.
        cause: Option<String>,
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
    /// The host refused to start the provider (its code is not the code it checked).
    #[error("provider {provider:?} is not started: {reason}")]
    Refused {
        /// The provider's configured name.
        provider: String,
        /// Why, and what to do.
        reason: String,
    },
}

/// The end of a [`AdapterError::Silent`] message: the server's last words and the cause.
fn said(stderr: &[String], cause: Option<&str>) -> String {
    let mut text = String::new();
    if !stderr.is_empty() {
        let quoted: Vec<String> = stderr.iter().map(|line| format!("{line:?}")).collect();
        text.push_str(&format!("; its last lines of stderr: {}", quoted.join(" / ")));
    }
    if let Some(cause) = cause {
        text.push_str(&format!("; likely cause: {cause}"));
    }
    text
}
