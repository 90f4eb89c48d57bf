//! Per-call limits, and the store-side limiter that enforces the memory and
//! table caps and remembers which one a guest ran into.

use std::time::Duration;

use wasmtime::ResourceLimiter;

/// Limits applied to every call. Each one is always on; the defaults suit a
/// formatter rendering one tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLimits {
    /// Wall-clock time a call may run, enforced by epoch interruption.
    pub deadline: Duration,
    /// Fuel (roughly, wasm instructions) a call may burn. `None` means no
    /// fuel limit; `Some` needs a sandbox built with `SandboxConfig::fuel`.
    pub fuel: Option<u64>,
    /// Largest linear memory, in bytes, across the instance's memories. At
    /// most `SandboxConfig::max_memory_bytes`.
    pub memory_bytes: usize,
    /// Largest input (all strings of the request together), checked before
    /// any guest code runs.
    pub input_bytes: usize,
    /// Largest text a formatter may return. The host checks it: the guest is
    /// told the budget but cannot be trusted to keep it.
    pub output_bytes: usize,
    /// Elements any one table may grow to.
    pub table_elements: usize,
    /// Core instances one call may create (a Rust wasip2 component needs 17).
    pub instances: usize,
    /// Tables one call may create.
    pub tables: usize,
    /// Linear memories one call may create.
    pub memories: usize,
    /// Guest stderr kept for the logs; the rest is counted and dropped.
    pub stderr_bytes: usize,
}

/// What a guest may hand the host in one value beyond twice `CallLimits::output_bytes`:
/// room for the framing of a legitimate output (a tool list's entries, an error's text).
pub const TRANSFER_SLACK: usize = 64 << 10;

/// Most host-side resources (WASI streams, pollables, directory handles) one call
/// may hold at once. A guest that makes them in a loop traps here instead of
/// growing host memory that `memory_bytes` does not count.
pub const MAX_HOST_RESOURCES: usize = 4096;

impl CallLimits {
    /// The most the host copies out of the guest in one value: its output, or the
    /// arguments of one host call. Anything larger is refused before it is copied
    /// (`SandboxError::TransferTooLarge`). Twice the output cap: a guest whose strings
    /// are UTF-16 (wasmtime charges two bytes a character) keeps its whole budget.
    pub fn transfer_bytes(&self) -> usize {
        self.output_bytes.saturating_mul(2).saturating_add(TRANSFER_SLACK)
    }
}

impl Default for CallLimits {
    fn default() -> Self {
        CallLimits {
            deadline: Duration::from_secs(1),
            fuel: None,
            memory_bytes: 64 << 20,
            input_bytes: 8 << 20,
            output_bytes: 1 << 20,
            table_elements: 10_000,
            instances: 32,
            tables: 8,
            memories: 2,
            stderr_bytes: 16 << 10,
        }
    }
}

/// Which cap a guest hit, if any: the trap that follows a refused growth
/// (usually an abort in the guest's allocator) is reported as the limit.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LimitHits {
    pub memory: bool,
    pub table: bool,
}

/// The `ResourceLimiter` of one store.
#[derive(Debug)]
pub(crate) struct StoreLimiter {
    memory_bytes: usize,
    table_elements: usize,
    instances: usize,
    tables: usize,
    memories: usize,
    pub hits: LimitHits,
}

impl StoreLimiter {
    pub fn new(limits: &CallLimits) -> Self {
        StoreLimiter {
            memory_bytes: limits.memory_bytes,
            table_elements: limits.table_elements,
            instances: limits.instances,
            tables: limits.tables,
            memories: limits.memories,
            hits: LimitHits::default(),
        }
    }
}

impl ResourceLimiter for StoreLimiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            // Refuse the growth (the guest sees memory.grow return -1) and
            // remember why, so the trap that usually follows is explained.
            self.hits.memory = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.table_elements {
            self.hits.table = true;
            return Ok(false);
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.tables
    }

    fn memories(&self) -> usize {
        self.memories
    }
}
