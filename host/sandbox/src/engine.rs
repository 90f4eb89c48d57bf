//! The one wasmtime `Engine` of a process, its settings, and the epoch ticker
//! that turns a wall-clock deadline into an interrupt.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::component::{Linker, Resource};
use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::cache::Cache;
use crate::error::LoadError;
use crate::prepared::Reserve;
use crate::state::StoreState;

/// Core instances of one wasip2 component written in Rust (3 core modules,
/// 17 core instances), rounded up for components built by other toolchains.
const CORE_INSTANCES_PER_COMPONENT: u32 = 32;

/// Engine-wide settings, fixed when the [`Sandbox`] is built. Per-call limits
/// are in [`crate::CallLimits`].
#[derive(Debug, Clone)]
pub struct SandboxConfig {
    /// Upper bound for any call's `CallLimits::memory_bytes`; sizes the pool's slots.
    pub max_memory_bytes: usize,
    /// Compile fuel metering into guest code, so `CallLimits::fuel` can be used.
    /// It costs about 40% of compute; the epoch deadline alone costs about 25%.
    pub fuel: bool,
    /// How many calls may run at once. With the pooling allocator this sizes
    /// the pool; a call beyond it fails with `SandboxError::Busy`.
    pub max_concurrent_calls: u32,
    /// Pool slots set aside, beyond `max_concurrent_calls`, for instances made ahead of
    /// their calls and for stores waiting to be torn down after theirs, so that neither
    /// is on a call's path (on the async API, in a tokio runtime; each component keeps at
    /// most one instance ready). They never take a slot from a call; a call may use one
    /// that is free. 0 makes and tears down every instance on its call's path.
    pub prepared_instances: u32,
    /// Use the pooling allocator (pre-reserved, reused instance slots). Much
    /// faster per call; falls back to on-demand allocation where the host
    /// cannot reserve the address space.
    pub pooling: bool,
    /// With the pooling allocator, on a kernel with `PAGEMAP_SCAN`: how much
    /// of a reused slot's written memory (and table) is reset in place, by
    /// `memset`, instead of being handed back to the kernel and faulted in
    /// again. Pages reset in place stay resident and are reset again after
    /// every later call in the slot, whether it touched them or not, lowest
    /// addresses first. So it should cover what a small call writes and not
    /// much more: at 4 MiB, one large result made every later small call in
    /// its slot 2-3x slower; far below 128 KiB, a small call's own pages lie
    /// past the ones a large call left behind and are faulted in again every
    /// time (docs/PERFORMANCE.md).
    pub keep_resident_bytes: usize,
    /// How often the epoch advances: the granularity of deadlines.
    pub epoch_tick: Duration,
    /// Largest wasm stack a call may use, in bytes.
    pub max_wasm_stack: usize,
    /// Where compiled components are cached; `None` compiles in memory on
    /// every load.
    pub cache_dir: Option<PathBuf>,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            max_memory_bytes: 256 << 20,
            fuel: false,
            max_concurrent_calls: 64,
            prepared_instances: 16,
            pooling: true,
            keep_resident_bytes: 128 << 10,
            epoch_tick: Duration::from_millis(5),
            max_wasm_stack: 512 << 10,
            cache_dir: None,
        }
    }
}

/// The sandbox runtime: one engine, one linker with the (empty) WASI
/// imports, an optional compiled-component cache, and the epoch ticker.
/// Cheap to share by reference; load components with
/// [`Sandbox::load_formatter`].
pub struct Sandbox {
    pub(crate) engine: Engine,
    pub(crate) linker: Linker<StoreState>,
    /// The same imports with async WASI, for calls run on an async task.
    pub(crate) linker_async: Arc<Linker<StoreState>>,
    pub(crate) config: SandboxConfig,
    pub(crate) cache: Option<Cache>,
    /// Whether the pooling allocator is in use (it may have been refused).
    pub(crate) pooled: bool,
    /// The slots of `config.prepared_instances`.
    pub(crate) reserve: Arc<Reserve>,
    ticker: Ticker,
}

impl std::fmt::Debug for Sandbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sandbox").field("config", &self.config).field("pooled", &self.pooled).finish_non_exhaustive()
    }
}

impl Sandbox {
    /// Builds the engine with `config`.
    pub fn new(config: SandboxConfig) -> Result<Self, LoadError> {
        let (engine, pooled) = build_engine(&config)?;
        let engine_error =
            |e: wasmtime::Error| LoadError::Engine { what: "cannot link WASI", source: e.into_boxed_dyn_error() };
        let linker = wasi_linker(&engine, false).map_err(engine_error)?;
        let linker_async = wasi_linker(&engine, true).map_err(engine_error)?;
        let cache = config.cache_dir.as_deref().and_then(|dir| match Cache::open(dir) {
            Ok(cache) => Some(cache),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "not using the component cache; components will be compiled on every start");
                None
            }
        });
        let ticker = Ticker::start(engine.clone(), config.epoch_tick)?;
        let linker_async = Arc::new(linker_async);
        let reserve = Reserve::new(config.prepared_instances);
        Ok(Sandbox { engine, linker, linker_async, config, cache, pooled, reserve, ticker })
    }

    /// Whether the pooling allocator is in use.
    pub fn is_pooled(&self) -> bool {
        self.pooled
    }

    /// The engine-wide settings.
    pub fn config(&self) -> &SandboxConfig {
        &self.config
    }

    pub(crate) fn tick(&self) -> Duration {
        self.ticker.tick
    }
}

/// A linker with WASI's blocking or async bindings, its timers due at once.
fn wasi_linker(engine: &Engine, async_bindings: bool) -> wasmtime::Result<Linker<StoreState>> {
    let mut linker = Linker::new(engine);
    if async_bindings {
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
    } else {
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)?;
    }
    timers_due_at_once(&mut linker)?;
    lookups_only_as_granted(&mut linker)?;
    Ok(linker)
}

/// The WASI interface whose `resolve-addresses` [`lookups_only_as_granted`] replaces, at
/// the version wasmtime-wasi registers (as [`MONOTONIC_CLOCK`]).
const IP_NAME_LOOKUP: &str = "wasi:sockets/ip-name-lookup@0.2.12";

/// Replaces WASI's `resolve-addresses` with one that looks up only what the call's
/// network grant names ([`NetworkGrant::may_look_up`](crate::NetworkGrant::may_look_up)):
/// a lookup is a message out, to whoever answers for the name, so a tool granted one
/// host by name must not use the resolver to say anything about any other. Each lookup,
/// allowed or refused, is reported to the grant's observer. A refused one is
/// `access-denied`, and no query leaves the host.
fn lookups_only_as_granted(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    use wasmtime_wasi::p2::bindings::sockets::ip_name_lookup::{Host as _, ResolveAddressStream};
    use wasmtime_wasi::p2::bindings::sockets::network::{ErrorCode, Network};
    use wasmtime_wasi::sockets::WasiSocketsView as _;
    type Resolved = (Result<Resource<ResolveAddressStream>, ErrorCode>,);
    linker.allow_shadowing(true);
    let mut lookup = linker.instance(IP_NAME_LOOKUP)?;
    lookup.func_wrap(
        "resolve-addresses",
        |mut store: wasmtime::StoreContextMut<'_, StoreState>,
         (network, name): (Resource<Network>, String)|
         -> wasmtime::Result<Resolved> {
            let state = store.data_mut();
            let allowed = state.network.as_ref().is_some_and(|grant| grant.may_look_up(&name));
            if let Some(grant) = &state.network {
                grant.report(wasmgate_egress::EgressRecord {
                    kind: wasmgate_egress::EgressKind::Lookup,
                    host: name.clone(),
                    refused: (!allowed).then(|| format!("{name} is not a granted host's name")),
                    ..wasmgate_egress::EgressRecord::default()
                });
            }
            if !allowed {
                return Ok((Err(ErrorCode::AccessDenied),));
            }
            match state.sockets().resolve_addresses(network, name) {
                Ok(stream) => Ok((Ok(stream),)),
                Err(error) => Ok((Err(error.downcast()?),)),
            }
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// The WASI interface whose timers [`timers_due_at_once`] replaces: the version
/// wasmtime-wasi registers (a newer one would leave WASI's timers in place, which the
/// `sleep_forever` guest's test catches).
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

/// Replaces WASI's timers (`subscribe-duration`, `subscribe-instant`) with timers that
/// are due at once. WASI's own sleep in real time on the host, where no epoch check runs:
/// a guest blocked on one would outlast its deadline for as long as it asked, holding
/// its call, its pool slot and its fiber stack, and the moment a timer became ready
/// would give it the real time that its frozen clock withholds. With these, a sleep
/// returns at once, and a guest that keeps sleeping spins into its deadline like any
/// loop. A guest granted the clock reads the real time, but its timers do not wait
/// either: a call has a deadline, and waiting is not what a sandboxed call is for.
fn timers_due_at_once(linker: &mut Linker<StoreState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap("subscribe-duration", |mut store, (_,): (u64,)| Ok((due(store.data_mut())?,)))?;
    clock.func_wrap("subscribe-instant", |mut store, (_,): (u64,)| Ok((due(store.data_mut())?,)))?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A pollable that is ready now.
fn due(state: &mut StoreState) -> wasmtime::Result<Resource<DynPollable>> {
    let table = state.ctx().table;
    let due = table.push(Due)?;
    subscribe(table, due)
}

/// A timer that is due.
struct Due;

impl Pollable for Due {
    fn ready<'a, 'b>(&'a mut self) -> Pin<Box<dyn Future<Output = ()> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        Box::pin(std::future::ready(()))
    }
}

/// Epoch ticks that cover `deadline`, rounded up, plus one because the first
/// tick may come at any moment after the call starts.
pub(crate) fn deadline_ticks(deadline: Duration, tick: Duration) -> u64 {
    let ticks = deadline.as_nanos().div_ceil(tick.as_nanos().max(1));
    u64::try_from(ticks).unwrap_or(u64::MAX - 1).saturating_add(1)
}

fn base_config(config: &SandboxConfig) -> Config {
    let mut c = Config::new();
    c.epoch_interruption(true)
        .consume_fuel(config.fuel)
        .max_wasm_stack(config.max_wasm_stack)
        .wasm_component_model(true)
        // Smaller artifacts that load faster. Without the address map a trap names the
        // guest function but not the byte offset in the .wasm; without native unwind
        // info (.eh_frame), which wasmtime does not need for its own backtraces, nothing
        // has to be registered with the system unwinder on load. Host functions do not
        // unwind through guest frames: wasmtime catches a host panic at the boundary.
        .generate_address_map(false)
        .native_unwind_info(false);
    c
}

fn build_engine(config: &SandboxConfig) -> Result<(Engine, bool), LoadError> {
    if config.pooling {
        let slots = config.max_concurrent_calls.max(1).saturating_add(config.prepared_instances);
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(slots)
            .total_core_instances(slots.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
            .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
            .total_memories(slots.saturating_mul(2))
            .max_memories_per_component(2)
            .total_tables(slots.saturating_mul(8))
            .max_tables_per_component(8)
            .max_memory_size(config.max_memory_bytes)
            // One fiber stack per async call in flight.
            .total_stacks(slots)
            // Keeping a little memory resident between calls and resetting it
            // with pagemap_scan (where the kernel has it) is what makes reuse
            // fast and lets calls scale across threads; without pagemap_scan,
            // keep_resident alone is slower than the defaults.
            .pagemap_scan(Enabled::Auto);
        if wasmtime::PoolingAllocationConfig::is_pagemap_scan_available() {
            pool.linear_memory_keep_resident(config.keep_resident_bytes)
                .table_keep_resident(config.keep_resident_bytes);
        }
        let mut c = base_config(config);
        c.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match Engine::new(&c) {
            Ok(engine) => return Ok((engine, true)),
            Err(e) => {
                tracing::warn!(error = %format!("{e:#}"), "pooling allocator unavailable; using on-demand allocation (slower per call)")
            }
        }
    }
    let engine = Engine::new(&base_config(config))
        .map_err(|e| LoadError::Engine { what: "cannot make the engine", source: e.into_boxed_dyn_error() })?;
    Ok((engine, false))
}

/// Advances the engine's epoch every `tick` on a background thread, until
/// the sandbox is dropped.
#[derive(Debug)]
struct Ticker {
    tick: Duration,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    /// Fails closed: without the ticker no deadline would ever fire.
    fn start(engine: Engine, tick: Duration) -> Result<Self, LoadError> {
        let tick = tick.max(Duration::from_micros(100));
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("wasmgate-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::park_timeout(tick);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| LoadError::Engine {
                what: "cannot start the epoch thread that enforces deadlines",
                source: e.into(),
            })?;
        Ok(Ticker { tick, stop, thread: Some(thread) })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}
