//! [`CallContext`]: what the caller of a tool offers besides the arguments, such as a
//! place for progress updates.
//!
//! It travels with the call as a task-local ([`scope`]), so a [`Tool`](crate::Tool)
//! stays a spec and an `execute`: a tool that can report progress looks for a sink with
//! [`current`], and one that cannot never notices. Whoever serves the call (the MCP
//! server face, for one) opens the scope; nothing is carried across a spawned task.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

/// One progress update of a call in flight.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    /// Progress so far; increases with every update.
    pub progress: f64,
    /// The total, if known.
    pub total: Option<f64>,
    /// A short message for a person; the reporter cleans it of control characters.
    pub message: Option<String>,
}

/// Receives progress updates. Called from whatever task produced the update: keep it
/// quick and never block.
pub type ProgressSink = Arc<dyn Fn(Progress) + Send + Sync>;

/// What the caller offers a call.
#[derive(Clone, Default)]
pub struct CallContext {
    /// Where progress updates go, if the caller wants them.
    pub progress: Option<ProgressSink>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext").field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)")).finish()
    }
}

tokio::task_local! {
    static CONTEXT: CallContext;
}

/// Runs `call` with `context` as its [`current`] context.
pub async fn scope<F: Future>(context: CallContext, call: F) -> F::Output {
    CONTEXT.scope(context, call).await
}

/// The context of the call running on this task; the empty one outside any [`scope`].
#[must_use]
pub fn current() -> CallContext {
    CONTEXT.try_with(CallContext::clone).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use super::*;

    #[tokio::test]
    async fn the_sink_is_seen_inside_the_scope_only() {
        assert!(current().progress.is_none());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let sink: ProgressSink = Arc::new(move |p: Progress| log.lock().unwrap().push(p.progress));
        scope(CallContext { progress: Some(sink) }, async {
            let sink = current().progress.unwrap();
            sink(Progress { progress: 1.0, total: None, message: None });
        })
        .await;
        assert_eq!(*seen.lock().unwrap(), [1.0]);
        assert!(current().progress.is_none());
    }
}
