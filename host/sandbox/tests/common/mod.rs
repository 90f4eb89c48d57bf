//! Helpers shared by the tool-provider tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use wasmgate_guests::{CALENDAR_PATH, hostile as hostile_paths};
use wasmgate_sandbox::{
    CallLimits, CallOutcome, DirGrant, Grants, Sandbox, SandboxConfig, ToolCallError, ToolProvider,
};

pub fn sandbox() -> Sandbox {
    Sandbox::new(SandboxConfig { max_concurrent_calls: 4, ..SandboxConfig::default() }).unwrap()
}

/// Limits with a short deadline, so a spinning guest ends quickly.
pub fn quick_limits() -> CallLimits {
    CallLimits { deadline: Duration::from_millis(200), ..CallLimits::default() }
}

pub fn calendar(sandbox: &Sandbox) -> ToolProvider {
    sandbox.load_tool_provider_file("calendar", Path::new(CALENDAR_PATH), CallLimits::default()).unwrap()
}

pub fn hostile(sandbox: &Sandbox) -> ToolProvider {
    hostile_with(sandbox, quick_limits())
}

/// The hostile tool provider under `limits`.
pub fn hostile_with(sandbox: &Sandbox, limits: CallLimits) -> ToolProvider {
    sandbox.load_tool_provider_file("hostile", Path::new(hostile_paths::TOOL_PROVIDER), limits).unwrap()
}

/// `dir` granted read-write as `/data`.
pub fn rw_grant(dir: &Path) -> Grants {
    Grants::none().with_dir(DirGrant::read_write(dir, "/data"))
}

/// `dir` granted read-only as `/data`.
pub fn ro_grant(dir: &Path) -> Grants {
    Grants::none().with_dir(DirGrant::read_only(dir, "/data"))
}

/// A call that must produce an outcome, under the provider's limits, made as the
/// gateway makes it: on an async task ([`ToolProvider::call_async`]). Made once:
/// a tool may change its data (the calendar does).
pub fn call(provider: &ToolProvider, tool: &str, args: Value, grants: &Grants) -> CallOutcome {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(provider.call_async(tool, &args.to_string(), grants, provider.limits())).unwrap()
}

/// A call of a tool without side effects, made both ways, blocking ([`ToolProvider::call`]) and on an async task
/// ([`ToolProvider::call_async`], on a single-threaded runtime as `wasmgate serve`
/// uses over stdio), which must end the same; the blocking outcome is returned.
pub fn call_both(
    provider: &ToolProvider,
    tool: &str,
    args: &str,
    grants: &Grants,
) -> Result<CallOutcome, ToolCallError> {
    let blocking = provider.call(tool, args, grants, provider.limits());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let on_task = runtime.block_on(provider.call_async(tool, args, grants, provider.limits()));
    assert_eq!(format!("{blocking:?}"), format!("{on_task:?}"), "{tool}: the two ways ended differently");
    blocking
}

/// The text of the outcome's first content block.
pub fn text(outcome: &CallOutcome) -> String {
    outcome.content[0]["text"].as_str().unwrap().to_owned()
}
