//! [`ServeError`]: why serving stopped other than by shutdown.

/// A transport failure that ended serving.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// Reading from or writing to the stdio streams failed.
    #[error("stdio")]
    Stdio(#[source] std::io::Error),
    /// The HTTP listener failed.
    #[error("HTTP listener")]
    Listener(#[source] std::io::Error),
}
