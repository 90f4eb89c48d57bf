//! [`Supervised`]: an MCP provider kept running. One provider cannot stop the others:
//!
//! * one that cannot be started or reached, or that fails its first listing, is
//!   withheld (it offers no tools, and says why) and tried again with backoff;
//! * one whose connection closes (a stdio server that exits) is started again with
//!   backoff; calls in flight when it went down end as the failure contract says (the
//!   transport closed), and the next look offers the new process's tools.
//!
//! A provider the gateway withholds while it runs ([`Supervised::withhold`]: one that
//! floods the egress proxy with refused connections, say) is stopped and not started
//! again until the gateway is restarted or reloaded.
//!
//! The backoff starts at [`Backoff::first`] and doubles up to [`Backoff::most`]; a
//! provider that stayed up for [`Backoff::settled`] starts again from the first delay.
//! Every move (withheld, up, down) is reported to `report`, which the gateway writes to
//! its log and audit log, and moves the [`changes`](Supervised::changes) counter, so a
//! server face announces the changed tool list.

use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde_json::{Map, Value};
use tokio::sync::watch;
use wasmgate_core::{
    BoxFuture, CancellationToken, Completion, CompletionRequest, ContentSource, Contents, Naming, Offer, PromptInfo,
    PromptMessages, Resource, ResourceTemplate, ResourceWatch, SourceError, ToolSource,
};

use crate::error::AdapterError;
use crate::provider::McpProvider;

/// Starts the provider once (connects, lists its tools).
pub type Connect = Arc<dyn Fn() -> BoxFuture<'static, Result<McpProvider, AdapterError>> + Send + Sync>;

/// Where a supervised provider's moves are reported (the gateway's log and audit log).
pub type Report = Arc<dyn Fn(&str, &str) + Send + Sync>;

/// How long to wait before the next start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// After the first failure.
    pub first: Duration,
    /// At most.
    pub most: Duration,
    /// Up this long, a provider that goes down starts again from `first`.
    pub settled: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { first: Duration::from_secs(1), most: Duration::from_secs(60), settled: Duration::from_secs(60) }
    }
}

/// Whether the provider runs now.
#[derive(Debug, Clone)]
enum State {
    Up(McpProvider),
    Down(String),
    /// Stopped by [`Supervised::withhold`], for good.
    Withheld(String),
    Closed,
}

/// Why a supervised provider has no running server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRunning {
    /// It could not be started, or went down, and is being started again.
    #[error("provider {provider} is not running: {why}")]
    Down {
        /// The provider.
        provider: String,
        /// Why, as the last attempt reported it.
        why: String,
    },
    /// The gateway withheld it while it ran, and does not start it again.
    #[error("provider {provider} is withheld: {why}")]
    Withheld {
        /// The provider.
        provider: String,
        /// Why.
        why: String,
    },
    /// It was closed.
    #[error("provider {provider} is closed")]
    Closed {
        /// The provider.
        provider: String,
    },
}

impl From<NotRunning> for SourceError {
    /// Content cannot be had from a provider that is not running: the call failed.
    fn from(why: NotRunning) -> Self {
        SourceError::Failed(why.to_string())
    }
}

/// An MCP provider kept running; see the module docs.
pub struct Supervised {
    name: String,
    /// The names its tools and prompts are shown under, up or down.
    naming: Naming,
    state: Mutex<State>,
    changes: watch::Sender<u64>,
    /// Moved when the running server says its resource list changed.
    resource_changes: watch::Sender<u64>,
    /// Moved when the running server says its prompt list changed.
    prompt_changes: watch::Sender<u64>,
    /// Cancelled by [`close`](Self::close): the supervising task ends at once.
    stop: CancellationToken,
    task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Supervised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervised").field("name", &self.name).finish_non_exhaustive()
    }
}

/// How often a running provider's connection is looked at.
const WATCH_EVERY: Duration = Duration::from_millis(250);

impl Supervised {
    /// Supervises provider `name`, whose first start ended in `first`, started again by
    /// `connect` whenever it is down. Spawns the supervising task on the current runtime;
    /// it ends when the returned value is dropped or closed.
    #[must_use]
    pub fn start(
        name: &str,
        first: Result<McpProvider, AdapterError>,
        connect: Connect,
        backoff: Backoff,
        report: Report,
        naming: Naming,
    ) -> Arc<Self> {
        let state = match first {
            Ok(provider) => State::Up(provider),
            Err(error) => {
                let why = wasmgate_core::report(&error);
                report(name, &format!("provider {name} is withheld: {why}; trying again in {:?}", backoff.first));
                State::Down(why)
            }
        };
        let stop = CancellationToken::new();
        let supervised = Arc::new(Self {
            name: name.to_owned(),
            naming,
            state: Mutex::new(state),
            changes: watch::Sender::new(0),
            resource_changes: watch::Sender::new(0),
            prompt_changes: watch::Sender::new(0),
            stop: stop.clone(),
            task: Mutex::new(None),
        });
        let task = tokio::spawn(supervise(Arc::downgrade(&supervised), connect, backoff, report, stop));
        *supervised.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(task);
        supervised
    }

    /// The provider's configured name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The running provider, or why there is none.
    ///
    /// # Errors
    ///
    /// [`NotRunning`]: why the provider is not running.
    pub fn running(&self) -> Result<McpProvider, NotRunning> {
        let provider = self.name.clone();
        match &*self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) {
            State::Up(running) => Ok(running.clone()),
            State::Down(why) => Err(NotRunning::Down { provider, why: why.clone() }),
            State::Withheld(why) => Err(NotRunning::Withheld { provider, why: why.clone() }),
            State::Closed => Err(NotRunning::Closed { provider }),
        }
    }

    /// A counter that moves when the provider comes up, goes down, or its tool list
    /// changes.
    #[must_use]
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// A counter that moves when the running server says its resource list changed.
    #[must_use]
    pub fn resource_changes(&self) -> watch::Receiver<u64> {
        self.resource_changes.subscribe()
    }

    /// The same for its prompt list.
    #[must_use]
    pub fn prompt_changes(&self) -> watch::Receiver<u64> {
        self.prompt_changes.subscribe()
    }

    fn set(&self, state: State) {
        *self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = state;
        self.changes.send_modify(|n| *n += 1);
    }

    /// Withholds the provider for good: it is stopped (a stdio server's whole process
    /// group ends, in a task of the current runtime), not started again, and offers no
    /// tools; calls fail with `why`. Nothing happens to a provider closed already.
    pub fn withhold(&self, why: &str) {
        let previous = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if matches!(*state, State::Closed | State::Withheld(_)) {
                return;
            }
            std::mem::replace(&mut *state, State::Withheld(why.to_owned()))
        };
        self.stop.cancel();
        self.changes.send_modify(|n| *n += 1);
        if let State::Up(provider) = previous
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move { provider.close().await });
        }
    }

    /// Stops supervising and closes the provider (a stdio server's whole process group
    /// ends). Returns once the supervising task has ended, and with it everything it held
    /// (the report's audit log, say).
    pub async fn close(&self) {
        let previous = {
            let mut state = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            match &*state {
                // Why it was withheld stays what calls are told.
                State::Withheld(_) => state.clone(),
                _ => std::mem::replace(&mut *state, State::Closed),
            }
        };
        self.stop.cancel();
        let task = self.task.lock().unwrap_or_else(std::sync::PoisonError::into_inner).take();
        if let Some(task) = task {
            let _ = task.await;
        }
        if let State::Up(provider) = previous {
            provider.close().await;
        }
    }
}

/// The supervising task: watches a running provider, starts a down one again.
async fn supervise(
    weak: Weak<Supervised>,
    connect: Connect,
    backoff: Backoff,
    report: Report,
    stop: CancellationToken,
) {
    let mut delay = backoff.first;
    loop {
        let Some(supervised) = weak.upgrade() else { return };
        let state = supervised.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone();
        let name = supervised.name.clone();
        drop(supervised);
        match state {
            State::Closed | State::Withheld(_) => return,
            State::Up(provider) => {
                let started = tokio::time::Instant::now();
                let mut list_changes = provider.client().tool_list_changes();
                let mut resource_changes = provider.client().resource_list_changes();
                let mut prompt_changes = provider.client().prompt_list_changes();
                let closed = loop {
                    tokio::select! {
                        () = stop.cancelled() => return,
                        changed = list_changes.changed() => {
                            if changed.is_err() { break None; }
                            let Some(supervised) = weak.upgrade() else { return };
                            supervised.changes.send_modify(|n| *n += 1);
                        }
                        Ok(()) = resource_changes.changed() => {
                            let Some(supervised) = weak.upgrade() else { return };
                            supervised.resource_changes.send_modify(|n| *n += 1);
                        }
                        Ok(()) = prompt_changes.changed() => {
                            let Some(supervised) = weak.upgrade() else { return };
                            supervised.prompt_changes.send_modify(|n| *n += 1);
                        }
                        () = tokio::time::sleep(WATCH_EVERY) => {}
                    }
                    if let Some(reason) = provider.client().closed() {
                        break Some(reason.to_string());
                    }
                    if weak.strong_count() == 0 {
                        return;
                    }
                };
                let Some(supervised) = weak.upgrade() else { return };
                if matches!(
                    *supervised.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                    State::Closed | State::Withheld(_)
                ) {
                    return;
                }
                let why = closed.unwrap_or_else(|| "its connection ended".to_owned());
                if started.elapsed() >= backoff.settled {
                    delay = backoff.first;
                }
                report(&name, &format!("provider {name} went down ({why}); starting it again in {delay:?}"));
                provider.close().await;
                supervised.set(State::Down(why));
            }
            State::Down(_) => {
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(backoff.most);
                if weak.strong_count() == 0 {
                    return;
                }
                let attempt = tokio::select! {
                    () = stop.cancelled() => return,
                    attempt = connect() => attempt,
                };
                let Some(supervised) = weak.upgrade() else {
                    if let Ok(provider) = attempt {
                        provider.close().await;
                    }
                    return;
                };
                match attempt {
                    Ok(provider) => {
                        if matches!(
                            *supervised.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                            State::Closed | State::Withheld(_)
                        ) {
                            provider.close().await;
                            return;
                        }
                        report(&name, &format!("provider {name} is up"));
                        supervised.set(State::Up(provider));
                    }
                    Err(error) => {
                        let why = wasmgate_core::report(&error);
                        tracing::warn!(provider = %name, %why, next = ?delay, "provider still down");
                        supervised.set(State::Down(why));
                    }
                }
            }
        }
    }
}

impl ToolSource for Supervised {
    fn provider(&self) -> &str {
        &self.name
    }

    /// A running provider's offers; none, and why, while it is down.
    fn offers(&self) -> BoxFuture<'_, (Vec<Offer>, Option<String>)> {
        Box::pin(async move {
            match self.running() {
                Ok(provider) => provider.offers().await,
                Err(why) => (Vec::new(), Some(why.to_string())),
            }
        })
    }
}

impl ContentSource for Supervised {
    fn provider(&self) -> &str {
        &self.name
    }

    fn naming(&self) -> Naming {
        self.naming
    }

    fn resources(&self) -> BoxFuture<'_, Result<Vec<Resource>, SourceError>> {
        Box::pin(async move { self.running()?.resources().await })
    }

    fn resource_templates(&self) -> BoxFuture<'_, Result<Vec<ResourceTemplate>, SourceError>> {
        Box::pin(async move { self.running()?.resource_templates().await })
    }

    fn read_resource<'a>(
        &'a self,
        uri: &'a str,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<Vec<Contents>, SourceError>> {
        Box::pin(async move { self.running()?.read_resource(uri, cancel).await })
    }

    fn subscribe<'a>(&'a self, uri: &'a str) -> BoxFuture<'a, Result<ResourceWatch, SourceError>> {
        Box::pin(async move { self.running()?.subscribe(uri).await })
    }

    fn prompts(&self) -> BoxFuture<'_, Result<Vec<PromptInfo>, SourceError>> {
        Box::pin(async move { self.running()?.prompts().await })
    }

    fn get_prompt<'a>(
        &'a self,
        name: &'a str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> BoxFuture<'a, Result<PromptMessages, SourceError>> {
        Box::pin(async move { self.running()?.get_prompt(name, arguments, cancel).await })
    }

    fn complete(
        &self,
        request: CompletionRequest,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<Completion, SourceError>> {
        Box::pin(async move { self.running()?.complete(request, cancel).await })
    }
}
