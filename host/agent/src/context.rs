//! [`CallContext`]: what the caller of a tool offers besides the arguments: a place
//! for progress updates, and a way to ask the person behind the caller ([`Ask`]).
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

/// How the person behind the caller answered a question.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// They confirmed.
    Yes,
    /// They declined, dismissed the question, or could not be asked.
    No,
    /// The question went to the caller, who will answer it by calling again (the
    /// 2026-07-28 `input_required` round trip): treat it as not confirmed for now.
    Deferred,
}

/// A way to ask the person behind the caller to confirm something (an MCP client's
/// elicitation, for one).
pub trait Ask: Send + Sync {
    /// Asks `question`. `deferrable`: whether the answer may come with a later call
    /// ([`Answer::Deferred`]); a question about something already done (showing a
    /// result) is not, and is then answered [`Answer::No`] when it cannot be asked now.
    fn confirm(&self, question: String, deferrable: bool) -> crate::BoxFuture<'static, Answer>;
}

/// What the caller offers a call.
#[derive(Clone, Default)]
pub struct CallContext {
    /// Where progress updates go, if the caller wants them.
    pub progress: Option<ProgressSink>,
    /// Whom to ask when the call needs a person's confirmation, if anyone.
    pub ask: Option<Arc<dyn Ask>>,
}

impl fmt::Debug for CallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallContext")
            .field("progress", &self.progress.as_ref().map(|_| "Fn(Progress)"))
            .field("ask", &self.ask.as_ref().map(|_| "dyn Ask"))
            .finish()
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
        scope(CallContext { progress: Some(sink), ask: None }, async {
            let sink = current().progress.unwrap();
            sink(Progress { progress: 1.0, total: None, message: None });
        })
        .await;
        assert_eq!(*seen.lock().unwrap(), [1.0]);
        assert!(current().progress.is_none());
    }
}
