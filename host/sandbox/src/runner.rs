//! What every kind of component shares: reading and compiling it, checking
//! limits against the sandbox, a fresh store per call with every limit armed,
//! and sorting the ways an instantiation can fail.

use std::path::Path;
use std::time::{Duration, Instant};

use std::sync::{Arc, OnceLock};

use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{Engine, PoolConcurrencyLimitError, Store, UpdateDeadline};

use crate::cache::Cache;
use crate::engine::{Sandbox, deadline_ticks};
use crate::error::{LimitsError, LoadError, SandboxError};
use crate::limits::CallLimits;
use crate::prepared::{self, Reserve};
use crate::state::{Mode, StoreState};

/// Largest component file accepted, so a misconfigured path to a huge file
/// fails fast instead of being read into memory.
const MAX_COMPONENT_FILE: u64 = 64 << 20;

/// The part of a [`Sandbox`] a loaded component keeps to run calls.
#[derive(Clone)]
pub(crate) struct Runner {
    engine: Engine,
    /// The epoch tick of the sandbox, to turn deadlines into tick counts.
    tick: Duration,
    fuel_enabled: bool,
    max_memory_bytes: usize,
    slots: u32,
    /// Pool slots for instances made ahead of their calls and stores torn down after.
    reserve: Arc<Reserve>,
}

impl Runner {
    pub fn new(sandbox: &Sandbox) -> Self {
        Runner {
            engine: sandbox.engine.clone(),
            tick: sandbox.tick(),
            fuel_enabled: sandbox.config.fuel,
            max_memory_bytes: sandbox.config.max_memory_bytes,
            slots: sandbox.config.max_concurrent_calls,
            reserve: Arc::clone(&sandbox.reserve),
        }
    }

    /// Limits this sandbox can honour: memory within its pool slots, fuel
    /// only if it meters fuel.
    pub fn check(&self, limits: &CallLimits) -> Result<(), LimitsError> {
        if limits.memory_bytes > self.max_memory_bytes {
            return Err(LimitsError::MemoryOverMaximum { asked: limits.memory_bytes, max: self.max_memory_bytes });
        }
        if limits.fuel.is_some() && !self.fuel_enabled {
            return Err(LimitsError::FuelNotMetered);
        }
        Ok(())
    }

    /// What a component must pass to run under `limits`, at load and whenever it is
    /// given other limits: the limits fit this sandbox, and it instantiates once under
    /// them with nothing granted (`pre`, linked to blocking WASI), so a component that
    /// can never run within them is refused now rather than on every call. `name` names
    /// it in the error.
    pub fn admit(&self, name: &str, limits: &CallLimits, pre: &InstancePre<StoreState>) -> Result<(), LoadError> {
        self.check(limits).map_err(|e| LoadError::Limits { name: name.to_owned(), source: e.into() })?;
        self.trial(name, limits, |store| pre.instantiate(store))
    }

    /// A fresh store for one instance, with every limit armed. The deadline
    /// is set before instantiation: start-up code runs under it too.
    pub fn store(&self, state: StoreState, limits: &CallLimits) -> Result<Store<StoreState>, SandboxError> {
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_hostcall_fuel(limits.transfer_bytes());
        store.set_epoch_deadline(deadline_ticks(limits.deadline, self.tick));
        if self.fuel_enabled {
            store
                .set_fuel(limits.fuel.unwrap_or(u64::MAX))
                .map_err(|_| SandboxError::InvalidLimits(LimitsError::FuelNotMetered))?;
        }
        Ok(store)
    }

    /// A fresh store for one call run on an async task, every limit armed as in
    /// [`Runner::store`] except the deadline: the guest yields to the executor at
    /// every epoch tick, so a long call never holds a thread other tasks need, and
    /// is interrupted (`Trap::Interrupt`, as in a blocking call) once
    /// `limits.deadline` of wall-clock time has passed since the store was made, or
    /// since [`Runner::restart_deadline`].
    pub fn store_async(&self, state: StoreState, limits: &CallLimits) -> Result<Store<StoreState>, SandboxError> {
        let mut store = self.store(state, limits)?;
        store.epoch_deadline_callback(|store| {
            Ok(match store.data().ends_at {
                Some(end) if Instant::now() >= end => UpdateDeadline::Interrupt,
                _ => UpdateDeadline::Yield(1),
            })
        });
        Self::restart_deadline(&mut store, limits);
        Ok(store)
    }

    /// Gives an async store `limits.deadline` from now, less what its instantiation took
    /// if it was made ahead of its call (`StoreState::startup`): the same deadline as a
    /// call whose instance is made on its path.
    pub fn restart_deadline(store: &mut Store<StoreState>, limits: &CallLimits) {
        let left = limits.deadline.saturating_sub(store.data().startup);
        store.data_mut().ends_at = Instant::now().checked_add(left);
        store.set_epoch_deadline(1);
    }

    /// Tears `store` down once the runtime has run what is ready now
    /// ([`prepared::retire`]).
    pub fn retire(&self, store: Store<StoreState>) {
        prepared::retire(&self.reserve, store);
    }

    /// The reserve prepared instances draw on.
    pub fn reserve(&self) -> &Arc<Reserve> {
        &self.reserve
    }

    /// Instantiates once under `limits`, with nothing granted (see [`Runner::admit`]).
    fn trial<I>(
        &self,
        name: &str,
        limits: &CallLimits,
        instantiate: impl FnOnce(&mut Store<StoreState>) -> wasmtime::Result<I> + Send,
    ) -> Result<(), LoadError> {
        let tried = off_async_thread(|| {
            let mut store = self.store(StoreState::new(limits, Mode::Blocking), limits)?;
            match instantiate(&mut store) {
                Ok(_) => Ok(()),
                Err(e) => Err(self.instantiate_error(e, &store, limits)),
            }
        });
        let tried =
            tried.map_err(|e| LoadError::Engine { what: "no thread to try a component on", source: e.into() })?;
        tried.map_err(|source| LoadError::Limits { name: name.to_owned(), source })
    }

    /// Why an instantiation failed: the pool is full, a limit tripped in
    /// start-up code, or something else.
    pub fn instantiate_error(
        &self,
        err: wasmtime::Error,
        store: &Store<StoreState>,
        limits: &CallLimits,
    ) -> SandboxError {
        if err.downcast_ref::<PoolConcurrencyLimitError>().is_some() {
            return SandboxError::Busy { slots: self.slots };
        }
        let hits = store.data().limiter.hits;
        if hits.memory || hits.table || err.downcast_ref::<wasmtime::Trap>().is_some() {
            return SandboxError::from_call(err, hits, limits, store.data().stderr.contents());
        }
        SandboxError::Instantiate(err.into_boxed_dyn_error())
    }
}

/// [`off_async_thread`] for a blocking call into a guest; no thread to run it on is
/// [`SandboxError::NoThread`], naming `what`.
pub(crate) fn run_blocking<T: Send, E: From<SandboxError> + Send>(
    what: &'static str,
    work: impl FnOnce() -> Result<T, E> + Send,
) -> Result<T, E> {
    off_async_thread(work).map_err(|source| E::from(SandboxError::NoThread { what, source }))?
}

/// A component's link to the async linker, made on its first async call rather than
/// at load: loading stays as fast as it was for callers that never call it async.
pub(crate) struct LazyPre<P> {
    component: Component,
    linker: Arc<Linker<StoreState>>,
    pre: OnceLock<Result<P, Arc<dyn std::error::Error + Send + Sync>>>,
}

impl<P> LazyPre<P> {
    pub fn new(component: Component, linker: Arc<Linker<StoreState>>) -> Arc<Self> {
        Arc::new(LazyPre { component, linker, pre: OnceLock::new() })
    }

    /// The linked component, made with `make` the first time.
    pub fn get(&self, make: impl FnOnce(InstancePre<StoreState>) -> wasmtime::Result<P>) -> Result<&P, SandboxError> {
        let pre = self.pre.get_or_init(|| {
            let linked = self.linker.instantiate_pre(&self.component).and_then(make);
            linked.map_err(|e| Arc::from(e.into_boxed_dyn_error()))
        });
        pre.as_ref().map_err(|e| SandboxError::Link(Arc::clone(e)))
    }
}

/// Runs `work` (a blocking call into a guest) where WASI's blocking host functions
/// may block: they wait on tokio with `Handle::block_on`, which panics on a thread
/// that is driving async tasks. Inside a runtime the work goes to a thread of its own
/// for its duration (start-up listing, trial instantiation: rare); elsewhere it runs
/// here. Calls made from async code belong on the `*_async` methods instead.
pub(crate) fn off_async_thread<R: Send>(work: impl FnOnce() -> R + Send) -> std::io::Result<R> {
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(work());
    }
    std::thread::scope(|scope| {
        let thread = std::thread::Builder::new().name("wasmgate-sandbox".into()).spawn_scoped(scope, work)?;
        match thread.join() {
            Ok(result) => Ok(result),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// The guest's stderr of one call, logged at `debug` under `wasmgate::guest`
/// and returned for a trap report.
pub(crate) fn guest_stderr(store: &Store<StoreState>, component: &str) -> String {
    let stderr = store.data().stderr.contents();
    if !stderr.is_empty() {
        tracing::debug!(target: "wasmgate::guest", component, stderr = %text_safety::escape_for_log_cut(&stderr, 4096), "guest stderr");
    }
    stderr
}

/// Reads a component file, refusing one too large to be a component; errors
/// name the file.
pub(crate) fn read_component(path: &Path) -> Result<Vec<u8>, LoadError> {
    let read_error = |source| LoadError::Read { path: path.to_owned(), source };
    let size = std::fs::metadata(path).map_err(read_error)?.len();
    if size > MAX_COMPONENT_FILE {
        return Err(LoadError::TooLarge { path: path.to_owned(), size, limit: MAX_COMPONENT_FILE });
    }
    std::fs::read(path).map_err(read_error)
}

/// A component ready to run: its limits checked, compiled (or taken from the cache),
/// linked to WASI, checked for the exports of its world, and admitted under its limits
/// (one trial instance). Every kind of component is loaded through here.
pub(crate) struct Loaded<P> {
    pub runner: Runner,
    /// What the kind made of the component and its link (its typed pre-instances).
    pub typed: P,
}

impl Sandbox {
    /// Loads the `world` component `bytes` under `limits`; `name` names it in errors
    /// and logs. `typed` makes the kind's own form of the component and its link to
    /// blocking WASI, checking that it exports the world (the check comes before the
    /// trial, so a component of another world is refused as such).
    pub(crate) fn load_component<P>(
        &self,
        name: &str,
        world: &'static str,
        bytes: &[u8],
        limits: &CallLimits,
        typed: impl FnOnce(&Component, InstancePre<StoreState>) -> Result<P, LoadError>,
    ) -> Result<Loaded<P>, LoadError> {
        let runner = Runner::new(self);
        runner.check(limits).map_err(|e| LoadError::Limits { name: name.to_owned(), source: e.into() })?;
        let component = self.compile(name, bytes)?;
        let pre =
            self.linker.instantiate_pre(&component).map_err(|e| wrong_world(name, world, e.into_boxed_dyn_error()))?;
        let typed = typed(&component, pre.clone())?;
        runner.trial(name, limits, |store| pre.instantiate(store))?;
        Ok(Loaded { runner, typed })
    }

    /// Compiles `bytes`, or loads the compiled form from the cache.
    fn compile(&self, name: &str, bytes: &[u8]) -> Result<Component, LoadError> {
        let cached = self.cache.as_ref().map(|cache| (cache, Cache::key(&self.engine, bytes)));
        if let Some(component) = cached.as_ref().and_then(|(cache, key)| cache.load(&self.engine, key)) {
            return Ok(component);
        }
        let component = Component::new(&self.engine, bytes)
            .map_err(|e| LoadError::Invalid { name: name.to_owned(), source: e.into_boxed_dyn_error() })?;
        if let Some((cache, key)) = &cached {
            match component.serialize() {
                Ok(artifact) => cache.store(key, &artifact),
                Err(e) => tracing::warn!(component = name, error = %format!("{e:#}"), "cannot serialize for the cache"),
            }
        }
        Ok(component)
    }
}

/// A component that does not link as a `world` component, with why.
pub(crate) fn wrong_world(name: &str, world: &'static str, source: crate::error::Cause) -> LoadError {
    LoadError::WrongWorld { name: name.to_owned(), world, source }
}
