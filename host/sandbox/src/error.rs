//! What can go wrong, in the sandbox's own terms.
//!
//! [`SandboxError`] is per call and says exactly which limit tripped, that the
//! guest trapped, or that it declined with a typed [`FormatError`];
//! [`ToolCallError`] adds a tool's own typed [`CallError`]. Their texts
//! are for the host (logs, audit): they may carry guest stderr and trap
//! details, which never belong in a model's context. [`LoadError`] is for
//! start-up: loading a component, with the file and what is wrong. wasmtime's own
//! errors are kept as sources, whole, never flattened into text.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use crate::limits::LimitHits;

pub use crate::bindings::{CallError, FormatError};

/// An error kept as a source, of whatever type wasmtime or the system gave.
pub(crate) type Cause = Box<dyn std::error::Error + Send + Sync + 'static>;

/// A call that did not produce text.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    /// The request was larger than `CallLimits::input_bytes`; no guest code ran.
    #[error("input of {size} bytes exceeds the {limit}-byte input limit")]
    InputTooLarge { size: usize, limit: usize },
    /// The guest returned more than `CallLimits::output_bytes` of text.
    #[error("output of {size} bytes exceeds the {limit}-byte output limit")]
    OutputTooLarge { size: usize, limit: usize },
    /// The guest tried to hand the host one value (its output, or the arguments of
    /// one host call) of more than `limit` bytes: [`CallLimits::transfer_bytes`](crate::CallLimits::transfer_bytes),
    /// twice `output_bytes` plus [`TRANSFER_SLACK`](crate::TRANSFER_SLACK). The host
    /// refused it before copying any of it, so an oversized output costs the host nothing.
    #[error(
        "the guest tried to hand over more than {limit} bytes at once, past its output limit; refused before copying"
    )]
    TransferTooLarge { limit: usize },
    /// The call ran past `CallLimits::deadline` and was interrupted.
    #[error("deadline of {limit:?} exceeded")]
    DeadlineExceeded { limit: Duration },
    /// The call burned all of `CallLimits::fuel`.
    #[error("fuel limit of {limit} exhausted")]
    FuelExhausted { limit: u64 },
    /// The guest tried to grow memory past `CallLimits::memory_bytes`.
    #[error("memory limit of {limit} bytes reached")]
    MemoryLimit { limit: usize },
    /// The guest tried to grow a table past `CallLimits::table_elements`.
    #[error("table limit of {limit} elements reached")]
    TableLimit { limit: usize },
    /// The guest tried to hold more than `limit` host resources (WASI streams,
    /// pollables, directory handles) at once: [`MAX_HOST_RESOURCES`](crate::MAX_HOST_RESOURCES).
    #[error("the guest tried to hold more than {limit} host resources at once")]
    ResourceLimit { limit: usize },
    /// The guest's wasm stack overflowed.
    #[error("guest stack overflow")]
    StackOverflow,
    /// The guest trapped for another reason: a panic (`unreachable`), an
    /// out-of-bounds access, a failed host call. `stderr` is what the guest
    /// printed before (a panic message, say), bounded; `cause` what failed, when it
    /// was not a trap of the guest's own (a host call).
    #[error("guest trapped: {trap}{}", if stderr.is_empty() { String::new() } else { format!(" (stderr: {stderr})") })]
    Trapped {
        trap: String,
        stderr: String,
        #[source]
        cause: Option<Cause>,
    },
    /// The guest ran to completion and declined with a typed error.
    #[error("formatter declined: {0}")]
    Format(FormatError),
    /// A screen ran to completion and said it could not look at the text.
    #[error("screen declined: {0}")]
    Screen(String),
    /// The media check ran to completion and could not read the content.
    #[error("media check declined: {0}")]
    Media(String),
    /// Every instance slot is in use: too many calls at once for the pool.
    #[error("sandbox busy: all {slots} instance slots are in use")]
    Busy { slots: u32 },
    /// The instance could not be created (a count cap, for example).
    #[error("could not instantiate the component")]
    Instantiate(#[source] Cause),
    /// The component could not be linked to async WASI (asked again on every call: the
    /// first answer is kept).
    #[error("cannot link the component to async WASI")]
    Link(#[source] Arc<dyn std::error::Error + Send + Sync + 'static>),
    /// No thread could be started to run the guest on.
    #[error("no thread to {what} on")]
    NoThread { what: &'static str, source: std::io::Error },
    /// The limits asked for something this sandbox was not built for.
    #[error("invalid limits: {0}")]
    InvalidLimits(#[from] LimitsError),
    /// A tool call's grants are malformed. No guest code ran.
    #[error("cannot grant the call its capabilities: {0}")]
    Grant(#[from] GrantError),
    /// A host directory granted to the call cannot be opened. No guest code ran.
    #[error("cannot grant the call its capabilities: cannot open the host directory {} granted as {guest_path}", host_path.display())]
    OpenDir { host_path: PathBuf, guest_path: String, source: Cause },
    /// The guest answered, but not in the shape its world promises (a tool's
    /// content that is not a JSON array, an invalid tool definition, ...).
    #[error("invalid output from the guest: {0}")]
    InvalidOutput(String),
}

impl SandboxError {
    /// Sorts a failed call: limits first (a refused growth is why the guest
    /// trapped), then the trap code, then anything else the host saw.
    pub(crate) fn from_call(err: wasmtime::Error, hits: LimitHits, limits: &crate::CallLimits, stderr: String) -> Self {
        Self::sorted(err, hits, limits, stderr).counted()
    }

    /// Counts a stopped guest in `wasmgate_sandbox_traps_total{kind}` (the facade's:
    /// nothing is kept unless the host installs a recorder), and returns it.
    pub(crate) fn counted(self) -> Self {
        if let Some(kind) = self.trap_kind() {
            metrics::counter!("wasmgate_sandbox_traps_total", "kind" => kind).increment(1);
        }
        self
    }

    /// What stopped the guest, for metrics: a limit (`deadline`, `fuel`, `memory`,
    /// `table`, `resources`, `transfer`, `output`), `stack_overflow`, or `trap` (a
    /// panic, an out-of-bounds access); `None` when no guest was stopped.
    #[must_use]
    pub fn trap_kind(&self) -> Option<&'static str> {
        Some(match self {
            SandboxError::DeadlineExceeded { .. } => "deadline",
            SandboxError::FuelExhausted { .. } => "fuel",
            SandboxError::MemoryLimit { .. } => "memory",
            SandboxError::TableLimit { .. } => "table",
            SandboxError::ResourceLimit { .. } => "resources",
            SandboxError::TransferTooLarge { .. } => "transfer",
            SandboxError::OutputTooLarge { .. } => "output",
            SandboxError::StackOverflow => "stack_overflow",
            SandboxError::Trapped { .. } => "trap",
            _ => return None,
        })
    }

    fn sorted(err: wasmtime::Error, hits: LimitHits, limits: &crate::CallLimits, stderr: String) -> Self {
        if hits.memory {
            return SandboxError::MemoryLimit { limit: limits.memory_bytes };
        }
        if hits.table {
            return SandboxError::TableLimit { limit: limits.table_elements };
        }
        if err.chain().any(|cause| matches!(cause.downcast_ref(), Some(ResourceTableError::Full))) {
            return SandboxError::ResourceLimit { limit: crate::MAX_HOST_RESOURCES };
        }
        if is_transfer_refusal(&err) {
            return SandboxError::TransferTooLarge { limit: limits.transfer_bytes() };
        }
        match err.downcast_ref::<Trap>() {
            Some(Trap::Interrupt) => SandboxError::DeadlineExceeded { limit: limits.deadline },
            Some(Trap::OutOfFuel) => SandboxError::FuelExhausted { limit: limits.fuel.unwrap_or(0) },
            Some(Trap::StackOverflow) => SandboxError::StackOverflow,
            Some(trap) => SandboxError::Trapped { trap: trap.to_string(), stderr, cause: None },
            None => SandboxError::Trapped {
                trap: "a host call failed".to_owned(),
                stderr,
                cause: Some(err.into_boxed_dyn_error()),
            },
        }
    }
}

/// Whether wasmtime stopped a transfer from the guest because it ran out of hostcall
/// fuel (`Runner::store` sets it). wasmtime's error type for it is private, so this
/// reads its text; `a_transfer_past_the_output_limit_is_refused_before_it_is_copied`
/// fails if a wasmtime upgrade changes it.
fn is_transfer_refusal(err: &wasmtime::Error) -> bool {
    err.chain().any(|cause| cause.to_string().contains("fuel allocated for hostcalls has been exhausted"))
}

/// A tool call that produced no outcome: either the component declined with
/// its own typed error, or the sandbox stopped or refused the call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolCallError {
    /// The component ran and declined: unknown tool, invalid arguments, or a
    /// failure of its own. The text is the guest's, made log-safe and cut to 2,048
    /// characters. Arguments that are not a JSON object are refused by the host
    /// as `InvalidArguments` before any guest code runs.
    #[error("tool declined: {}", describe_call_error(.0))]
    Call(CallError),
    /// The sandbox stopped the call (a limit, a trap) or refused its output.
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
}

fn describe_call_error(error: &CallError) -> String {
    match error {
        CallError::UnknownTool(name) => format!("unknown tool {name:?}"),
        CallError::InvalidArguments(why) => format!("invalid arguments: {why}"),
        CallError::Internal(why) => format!("internal error: {why}"),
    }
}

/// Limits a sandbox cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// More memory than the sandbox's pool slots hold.
    #[error("memory limit {asked} exceeds the sandbox maximum {max} (raise SandboxConfig::max_memory_bytes)")]
    MemoryOverMaximum { asked: usize, max: usize },
    /// A fuel limit in a sandbox that does not meter fuel.
    #[error("a fuel limit needs a sandbox built with SandboxConfig::fuel = true")]
    FuelNotMetered,
}

/// A tool call's grants that are malformed, naming the grant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantError {
    /// A host path that is not absolute.
    #[error("host path {} (for {guest_path}) is not absolute", host_path.display())]
    HostPathNotAbsolute { host_path: PathBuf, guest_path: String },
    /// A guest path that is not a plain absolute directory path.
    #[error(
        "guest path {guest_path:?} must be an absolute directory path such as /data, without `.`, `..`, `//` or a \
         trailing `/`, and not / itself"
    )]
    GuestPath { guest_path: String },
    /// Two guest paths, one inside the other.
    #[error("guest paths {first} and {second} overlap")]
    Overlap { first: String, second: String },
}

/// A component that could not be made ready to run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read component {path}")]
    Read { path: PathBuf, source: std::io::Error },
    /// The file is larger than any component the sandbox takes.
    #[error("{path} is {size} bytes; components over {limit} bytes are refused")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    /// The bytes are not a valid WebAssembly component (a core module, a
    /// truncated file, garbage).
    #[error("{name} is not a valid WebAssembly component")]
    Invalid { name: String, source: Cause },
    /// A valid component, but not for this world: it needs imports the
    /// sandbox does not grant, or lacks the export the host calls.
    #[error("{name} is not a {world} component")]
    WrongWorld { name: String, world: &'static str, source: Cause },
    /// The component cannot be instantiated within the limits (or the limits do not
    /// fit the sandbox).
    #[error("{name} cannot run within the sandbox limits")]
    Limits { name: String, source: SandboxError },
    /// The engine could not be configured (`what` says which part).
    #[error("cannot configure the sandbox engine: {what}")]
    Engine { what: &'static str, source: Cause },
}
