//! Graceful shutdown, in the same three steps on every transport.
//!
//! 1. **Stop**: `stopping` fires. Nothing new is accepted (stdio stops reading, HTTP
//!    stops accepting connections and closes idle ones); subscriptions end with their
//!    closing result.
//! 2. **Grace**: work in flight may finish for [`ServerConfig::shutdown_grace`](crate::ServerConfig::shutdown_grace).
//! 3. **Cancel**: `abort` fires, which cancels every call's token (each is a child of
//!    it); the calls get the same time again to return and have their answers written.
//!    Whatever still runs after that is left behind with a warning, so shutdown always
//!    ends within twice the grace period.

use std::time::Duration;

use tokio_util::task::TaskTracker;
use wasmgate_core::CancellationToken;

/// The shutdown state of one server.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lifecycle {
    /// Shutdown has begun.
    pub(crate) stopping: CancellationToken,
    /// The grace period is over: calls are cancelled.
    pub(crate) abort: CancellationToken,
    /// The work that shutdown waits for.
    pub(crate) tasks: TaskTracker,
}

impl Lifecycle {
    /// Runs the three steps; see the module docs.
    pub(crate) async fn drain(&self, grace: Duration) {
        self.stopping.cancel();
        self.tasks.close();
        if tokio::time::timeout(grace, self.tasks.wait()).await.is_ok() {
            return;
        }
        tracing::info!(in_flight = self.tasks.len(), "shutdown grace period over: cancelling what is in flight");
        self.abort.cancel();
        if tokio::time::timeout(grace, self.tasks.wait()).await.is_err() {
            tracing::warn!(in_flight = self.tasks.len(), "work still running after cancellation; leaving it behind");
        }
    }
}
