//! [`ToolError`]: a call that produced no tool result.
//!
//! Its `Display` is one stable sentence per [`ToolErrorKind`], safe to put in a model's
//! context. Everything else (which provider, an exit status, the limit that tripped, the
//! underlying error) is for the host: logs and audit read it through the accessors.
//!
//! [`report`] is how any error with its causes is written for a person (a log line, an
//! audit record, the command line), and [`BoxError`] is how a seam carries an error it
//! does not name.

use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// An error of any kind, kept with its sources (what a trait carries across a seam when
/// the implementor's error type is not the trait's business).
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// `error` and its causes, joined by `: `, as a person reads them (and as the command
/// line reports an error).
#[must_use]
pub fn report(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Why a call produced no result. The `Display` text is what a model may see.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ToolErrorKind {
    /// The transport failed, the process died, a message was malformed, or the call timed out.
    ExecutionFailed,
    /// The caller cancelled the call; its remote effects are unknown.
    Cancelled,
    /// The provider asked for input (`input_required`) that nobody here can give.
    Unsupported,
    /// The gateway refused to run the call (for example, its audit log cannot be written).
    Refused,
    /// The provider's requests for input went to the caller, who answers them with a
    /// later call (the 2026-07-28 `input_required` round trip, carried on).
    InputDeferred,
    /// The provider needs a client capability the caller did not declare (2026-07-28's
    /// -32021); [`ToolError::capabilities`] names them.
    MissingCapability,
    /// The caller has used up a rate limit or call budget; [`ToolError::retry_after`]
    /// says when a call may succeed again.
    RateLimited,
    /// The gateway cannot serve the call now (a store it shares with other replicas
    /// cannot be reached); [`ToolError::retry_after`] says when to try again.
    Unavailable,
}

impl fmt::Display for ToolErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::ExecutionFailed => "tool execution failed",
            Self::Cancelled => "tool call cancelled",
            Self::Unsupported => "unsupported: the tool needs input that nobody here can give",
            Self::Refused => "tool call refused by the gateway",
            Self::InputDeferred => "the tool asked for input, which the caller answers with its next call",
            Self::MissingCapability => "the tool needs a client capability the caller did not declare",
            Self::RateLimited => "rate limited: the caller has used up its budget for this tool for now",
            Self::Unavailable => "unavailable: the gateway cannot serve the call now; try again shortly",
        })
    }
}

/// A call that produced no tool result. Displays only its kind's stable text.
#[derive(Clone)]
pub struct ToolError {
    kind: ToolErrorKind,
    provider: Option<String>,
    detail: String,
    capabilities: Vec<String>,
    /// Milliseconds (so the error stays small; saturates at about 49 days).
    retry_after_ms: Option<u32>,
    source: Option<Arc<dyn Error + Send + Sync>>,
}

impl ToolError {
    /// An error of `kind`; `detail` is host-only text (logs, audit).
    #[must_use]
    pub fn new(kind: ToolErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            provider: None,
            detail: detail.into(),
            capabilities: Vec::new(),
            retry_after_ms: None,
            source: None,
        }
    }

    /// The call was cancelled by the caller.
    #[must_use]
    pub fn cancelled() -> Self {
        Self::new(ToolErrorKind::Cancelled, "cancelled by the caller; remote effects are unknown")
    }

    /// Names the provider behind the tool (host-only).
    #[must_use]
    pub fn with_provider(mut self, provider: impl Into<String>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// The client capabilities the call needs (`sampling`, `elicitation`, `roots`), for
    /// a [`ToolErrorKind::MissingCapability`].
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Vec<String>) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// When a call may succeed again, for a [`ToolErrorKind::RateLimited`].
    #[must_use]
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.retry_after_ms = Some(u32::try_from(wait.as_millis()).unwrap_or(u32::MAX));
        self
    }

    /// When a call may succeed again, if the error says.
    #[must_use]
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after_ms.map(|ms| Duration::from_millis(u64::from(ms)))
    }

    /// Keeps the underlying error for the host.
    #[must_use]
    pub fn with_source(mut self, source: impl Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }

    /// What kind of failure this is.
    #[must_use]
    pub fn kind(&self) -> ToolErrorKind {
        self.kind
    }

    /// The provider behind the tool, when known (host-only).
    #[must_use]
    pub fn provider(&self) -> Option<&str> {
        self.provider.as_deref()
    }

    /// The client capabilities a [`ToolErrorKind::MissingCapability`] names (empty for
    /// other kinds).
    #[must_use]
    pub fn capabilities(&self) -> &[String] {
        &self.capabilities
    }

    /// What happened, for logs and audit; never for a model.
    #[must_use]
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("kind", &self.kind)
            .field("provider", &self.provider)
            .field("detail", &self.detail)
            .field("capabilities", &self.capabilities)
            .field("retry_after", &self.retry_after())
            .field("source", &self.source.as_ref().map(ToString::to_string))
            .finish()
    }
}

impl Error for ToolError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Secret;
    impl fmt::Display for Secret {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("/home/alice/.ssh/id_ed25519: exit status 137")
        }
    }
    impl Error for Secret {}

    #[test]
    fn a_report_names_every_cause_in_order() {
        #[derive(Debug)]
        struct Outer(Secret);
        impl fmt::Display for Outer {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("cannot start provider \"x\"")
            }
        }
        impl Error for Outer {
            fn source(&self) -> Option<&(dyn Error + 'static)> {
                Some(&self.0)
            }
        }
        assert_eq!(report(&Outer(Secret)), "cannot start provider \"x\": /home/alice/.ssh/id_ed25519: exit status 137");
        assert_eq!(report(&Secret), "/home/alice/.ssh/id_ed25519: exit status 137");
    }

    #[test]
    fn display_shows_only_the_stable_text() {
        let error = ToolError::new(ToolErrorKind::ExecutionFailed, "server exited with status 137 in /srv/x")
            .with_provider("calendar")
            .with_source(Secret);
        assert_eq!(error.to_string(), "tool execution failed");
        assert_eq!(error.provider(), Some("calendar"));
        assert!(error.detail().contains("137"));
        assert!(error.source().is_some_and(|s| s.to_string().contains("id_ed25519")));
    }
}
