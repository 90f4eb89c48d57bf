//! What one store holds for one call: a WASI context, the resource table,
//! the limiter and the captured stderr.
//!
//! The base context grants nothing: no preopened directories, no environment,
//! no arguments, no sockets (TCP, UDP and name lookup are off and every
//! address is denied), stdin empty, stdout discarded, stderr captured into a
//! bounded buffer. The clocks are frozen at zero: a formatter is a pure
//! function of its input, so its output does not change from run to run, and
//! a hostile one gets no timer to measure the host with. Randomness stays
//! available: it reveals nothing about the host, and Rust's hash maps need it.
//!
//! Formatters always get the base context ([`StoreState::new`]), built only
//! when the guest first calls into WASI: a component that imports nothing (the
//! built-in json-text) never pays for it. A tool call gets the base context
//! plus its [`Grants`] ([`StoreState::with_grants`]): preopened directories
//! and, only if granted, the real clocks, opened before the call so that a
//! grant that cannot be given fails it up front.

use std::time::{Duration, Instant};

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{FsPerms, HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use crate::error::SandboxError;
use crate::grants::{Grants, NetworkGrant};
use crate::limits::{CallLimits, MAX_HOST_RESOURCES, StoreLimiter};
use crate::pipe::BoundedPipe;
use wasmgate_egress::{EgressKind, EgressRecord};

pub(crate) struct StoreState {
    /// `None` until first used, for a formatter; then the base context.
    wasi: Option<WasiCtx>,
    /// A tool call's network grant: which names it may look up, and who hears of it.
    pub network: Option<NetworkGrant>,
    mode: Mode,
    table: ResourceTable,
    pub limiter: StoreLimiter,
    pub stderr: BoundedPipe,
    /// When a call on an async task is interrupted (see `Runner::store_async`).
    pub ends_at: Option<Instant>,
    /// How long instantiation took, for an instance made ahead of its call: it counts
    /// against the call's deadline (see `Runner::restart_deadline`).
    pub startup: Duration,
}

impl StoreState {
    /// The empty context, for formatters (and for loading tool providers). `mode`
    /// says whether the call runs on a thread of its own or on an async task.
    pub fn new(limits: &CallLimits, mode: Mode) -> Self {
        StoreState {
            network: None,
            wasi: None,
            mode,
            table: host_table(),
            limiter: StoreLimiter::new(limits),
            stderr: BoundedPipe::new(limits.stderr_bytes),
            ends_at: None,
            startup: Duration::ZERO,
        }
    }

    /// The empty context plus `grants`, for one tool call. Fails, naming the
    /// grant, if a grant is malformed or a host directory cannot be opened.
    pub fn with_grants(limits: &CallLimits, grants: &Grants, mode: Mode) -> Result<Self, SandboxError> {
        grants.check()?;
        let stderr = BoundedPipe::new(limits.stderr_bytes);
        let mut builder = base_context(&stderr, mode);
        if !grants.clock {
            builder.wall_clock(FrozenClock).monotonic_clock(FrozenClock);
        }
        if let Some(network) = &grants.network {
            let grant = network.clone();
            builder.allow_tcp(true).allow_ip_name_lookup(network.name_lookup()).socket_addr_check(
                move |addr, usage| {
                    use wasmtime_wasi::sockets::SocketAddrUse;
                    match usage {
                        SocketAddrUse::TcpConnect => {
                            let grant = grant.clone();
                            Box::pin(async move {
                                let allowed = wasmgate_egress::permits(&grant.hosts, addr).await;
                                grant.report(EgressRecord {
                                    kind: EgressKind::Connect,
                                    host: addr.ip().to_string(),
                                    port: addr.port(),
                                    address: Some(addr),
                                    refused: (!allowed).then(|| format!("{addr} is not a granted host's address")),
                                    ..EgressRecord::default()
                                });
                                allowed
                            })
                        }
                        // The implicit bind of a connect asks with the wildcard address.
                        SocketAddrUse::TcpBind => {
                            Box::pin(std::future::ready(addr.ip().is_unspecified() && addr.port() == 0))
                        }
                        _ => Box::pin(std::future::ready(false)),
                    }
                },
            );
        }
        for dir in &grants.dirs {
            let perms = if dir.read_only { FsPerms::ReadOnly } else { FsPerms::ReadWrite };
            builder.preopened_dir(&dir.host_path, &dir.guest_path, perms).map_err(|e| SandboxError::OpenDir {
                host_path: dir.host_path.clone(),
                guest_path: dir.guest_path.clone(),
                source: e.into_boxed_dyn_error(),
            })?;
        }
        Ok(StoreState {
            network: grants.network.clone(),
            wasi: Some(builder.build()),
            mode,
            table: host_table(),
            limiter: StoreLimiter::new(limits),
            stderr,
            ends_at: None,
            startup: Duration::ZERO,
        })
    }
}

/// The table of a call's host-side resources, bounded by [`MAX_HOST_RESOURCES`].
fn host_table() -> ResourceTable {
    let mut table = ResourceTable::new();
    table.set_max_capacity(MAX_HOST_RESOURCES);
    table
}

/// How a call runs, which decides where its file operations may block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Synchronously, on a thread the call owns: file operations block that thread
    /// rather than bounce through an async runtime.
    Blocking,
    /// On an async task, whose thread others share: file operations go to the
    /// runtime's blocking pool, and the guest waits for them without holding it.
    Async,
}

/// Stderr captured, sockets off; nothing else granted yet.
fn base_context(stderr: &BoundedPipe, mode: Mode) -> WasiCtxBuilder {
    let mut builder = WasiCtx::builder();
    builder
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .allow_blocking_current_thread(mode == Mode::Blocking);
    builder
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let (stderr, mode) = (&self.stderr, self.mode);
        let ctx = self.wasi.get_or_insert_with(|| {
            let mut builder = base_context(stderr, mode);
            builder.wall_clock(FrozenClock).monotonic_clock(FrozenClock);
            builder.build()
        });
        WasiCtxView { ctx, table: &mut self.table }
    }
}

/// A clock that always reads zero.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> Duration {
        Duration::from_secs(1)
    }

    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }

    fn now(&self) -> u64 {
        0
    }
}
