//! WASM tool components for the adapter's tests: the calendar, echo-tools and the
//! hostile tool provider, loaded once per test binary into the shared sandbox.

use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use serde_json::Value;
use wasmgate_adapter::{ComponentProvider, ComponentRunner, component_tool};
use wasmgate_core::{CancellationToken, Tool, ToolError, ToolResult};
use wasmgate_guests::{CALENDAR_PATH, ECHO_TOOLS_PATH, hostile};
use wasmgate_sandbox::{CallLimits, DirGrant, Grants, ToolDefinition, ToolProvider};

use super::{SANDBOX, formatters, limits};

/// Limits with room to spare for well-behaved components on a busy machine.
pub fn roomy_limits() -> CallLimits {
    CallLimits { deadline: Duration::from_secs(5), ..limits() }
}

fn load(name: &str, path: &str, limits: CallLimits) -> ToolProvider {
    SANDBOX.load_tool_provider_file(name, Path::new(path), limits).unwrap()
}

pub fn calendar_component() -> ToolProvider {
    static CALENDAR: LazyLock<ToolProvider> = LazyLock::new(|| load("calendar", CALENDAR_PATH, roomy_limits()));
    CALENDAR.clone()
}

pub fn echo_component() -> ToolProvider {
    static ECHO: LazyLock<ToolProvider> = LazyLock::new(|| load("echo", ECHO_TOOLS_PATH, roomy_limits()));
    ECHO.clone()
}

/// The hostile tool provider, under limits small enough to trip quickly.
pub fn hostile_component() -> ToolProvider {
    static HOSTILE: LazyLock<ToolProvider> = LazyLock::new(|| load("hostile", hostile::TOOL_PROVIDER, limits()));
    HOSTILE.clone()
}

/// `dir` granted as `/data`, read-write or read-only.
pub fn data(dir: &Path, read_only: bool) -> Grants {
    let grant = if read_only { DirGrant::read_only(dir, "/data") } else { DirGrant::read_write(dir, "/data") };
    Grants::none().with_dir(grant)
}

/// The calendar as provider `cal`, its calls getting `grants`.
pub fn calendar(grants: Grants) -> ComponentProvider {
    ComponentProvider::new("cal", calendar_component(), grants, roomy_limits(), formatters(None)).unwrap()
}

/// The tool the agent knows as `name`.
pub fn named(tools: &[Tool], name: &str) -> Tool {
    tools.iter().find(|t| t.spec.name == name).cloned().unwrap_or_else(|| panic!("no tool {name}"))
}

/// `component` as provider `provider`, its calls getting `grants` under its own limits.
pub fn component(provider: &str, component: ToolProvider, grants: Grants) -> Arc<ComponentRunner> {
    let limits = component.limits().clone();
    Arc::new(ComponentRunner::new(provider.into(), component, grants, limits))
}

/// The tool `name` of `component`, as its provider would offer it, whether or not the
/// component lists it (a stale offer, a tool a hostile list hides).
pub fn single(component: &Arc<ComponentRunner>, name: &str, schema: Value) -> Tool {
    let provider = &component.provider;
    let definition = ToolDefinition { name: name.into(), description: String::new(), input_schema: schema };
    component_tool(component, format!("{provider}__{name}"), &definition, formatters(None).select(provider, name))
        .unwrap()
}

/// Runs `tool` with `input` and a token nobody cancels.
pub async fn run(tool: &Tool, input: Value) -> Result<ToolResult, ToolError> {
    tool.execute(input, CancellationToken::new()).await
}
