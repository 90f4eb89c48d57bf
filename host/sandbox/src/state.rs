//! What one store holds for one call: an empty WASI context, the resource
//! table, the limiter and the captured stderr.
//!
//! The WASI context grants nothing: no preopened directories, no environment,
//! no arguments, no sockets (TCP, UDP and name lookup are off and every
//! address is denied), stdin empty, stdout discarded, stderr captured into a
//! bounded buffer. The clocks are frozen at zero: a formatter is a pure
//! function of its input, so its output does not change from run to run, and
//! a hostile one gets no timer to measure the host with. Randomness stays
//! available: it reveals nothing about the host, and Rust's hash maps need it.

use std::time::Duration;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::{HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxView, WasiView};

use crate::limits::{Limits, StoreLimiter};
use crate::pipe::BoundedPipe;

pub(crate) struct StoreState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub limiter: StoreLimiter,
    pub stderr: BoundedPipe,
}

impl StoreState {
    pub fn new(limits: &Limits) -> Self {
        let stderr = BoundedPipe::new(limits.stderr_bytes);
        let mut builder = WasiCtx::builder();
        builder
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .wall_clock(FrozenClock)
            .monotonic_clock(FrozenClock);
        StoreState { wasi: builder.build(), table: ResourceTable::new(), limiter: StoreLimiter::new(limits), stderr }
    }
}

impl WasiView for StoreState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
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
