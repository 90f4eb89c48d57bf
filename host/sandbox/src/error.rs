//! What can go wrong, in the sandbox's own terms.
//!
//! [`SandboxError`] is per call and says exactly which limit tripped, that the
//! guest trapped, or that it declined with a typed [`FormatError`];
//! [`ToolCallError`] adds a tool's own typed [`CallError`]. Their texts
//! are for the host (logs, audit): they may carry guest stderr and trap
//! details, which never belong in a model's context. [`LoadError`] is for
//! start-up: loading a component, with the file and what is wrong.

use std::path::PathBuf;
use std::time::Duration;

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use crate::limits::LimitHits;

pub use crate::bindings::{CallError, FormatError};

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
    /// printed before (a panic message, say), bounded.
    #[error("guest trapped: {trap}{}", if stderr.is_empty() { String::new() } else { format!(" (stderr: {stderr})") })]
    Trapped { trap: String, stderr: String },
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
    #[error("could not instantiate the component: {0}")]
    Instantiate(String),
    /// The limits asked for something this sandbox was not built for.
    #[error("invalid limits: {0}")]
    InvalidLimits(String),
    /// A tool call's grants could not be given: a malformed grant, or a host
    /// directory that cannot be opened (named in the text). No guest code ran.
    #[error("cannot grant the call its capabilities: {0}")]
    Grant(String),
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
            Some(trap) => SandboxError::Trapped { trap: trap.to_string(), stderr },
            None => SandboxError::Trapped { trap: format!("{:#}", err.root_cause()), stderr },
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
    /// failure of its own. The text is the guest's, cut to 2 KiB and made
    /// log-safe. Arguments that are not a JSON object are refused by the host
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

/// A component that could not be made ready to run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read component {path}")]
    Read { path: PathBuf, source: std::io::Error },
    /// The bytes are not a valid WebAssembly component (a core module, a
    /// truncated file, garbage).
    #[error("{name} is not a valid WebAssembly component: {reason}")]
    Invalid { name: String, reason: String },
    /// A valid component, but not for this world: it needs imports the
    /// sandbox does not grant, or lacks the export the host calls.
    #[error("{name} is not a {world} component: {reason}")]
    WrongWorld { name: String, world: &'static str, reason: String },
    /// The component cannot be instantiated within the limits.
    #[error("{name} cannot run within the sandbox limits: {reason}")]
    Limits { name: String, reason: String },
    /// The engine could not be configured.
    #[error("cannot configure the sandbox engine: {0}")]
    Engine(String),
}

/// A guest-supplied character as it may appear in a log line or a terminal:
/// control, escape, bidi and other invisible characters become spaces, so a
/// hostile guest can neither rewrite a screen nor disguise a line.
pub(crate) fn log_safe(c: char) -> char {
    if c.is_control() || text_safety::is_invisible(c) { ' ' } else { c }
}

/// A short, single-line form of a guest-supplied message, so a hostile guest
/// cannot flood the logs through its error text.
pub(crate) fn bounded(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let cut = &text[..end];
    let mut out: String = cut.chars().map(log_safe).collect();
    if end < text.len() {
        out.push_str(" [...]");
    }
    out
}
