//! Every hostile formatter in `guest-tools/hostile` against a real sandbox:
//! each attempt ends in exactly the outcome the contract promises, and the
//! same sandbox then formats an ordinary result correctly.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use wasmgate_guests::{JSON_TEXT, hostile};
use wasmgate_sandbox::{
    CallLimits, FormatError, FormatRequest, Formatter, MAX_HOST_RESOURCES, Sandbox, SandboxConfig, SandboxError,
    TRANSFER_SLACK,
};

fn sandbox() -> Sandbox {
    Sandbox::new(SandboxConfig { max_concurrent_calls: 8, ..SandboxConfig::default() }).unwrap()
}

fn quick_limits() -> CallLimits {
    CallLimits { deadline: Duration::from_millis(200), ..CallLimits::default() }
}

fn load(sandbox: &Sandbox, path: &str, limits: CallLimits) -> Formatter {
    sandbox.load_formatter_file(Path::new(path), limits).unwrap()
}

fn request(tool: &str) -> FormatRequest {
    FormatRequest {
        tool_name: tool.into(),
        provider: "hostile".into(),
        content: r#"[{"type":"text","text":"hello"}]"#.into(),
        structured_content: None,
        is_error: false,
    }
}

/// Formats `request` both ways, blocking ([`Formatter::format`]) and on an async task
/// ([`Formatter::format_async`], on a single-threaded runtime as `wasmgate serve`
/// uses over stdio), which must end the same; returns the blocking result.
fn format(formatter: &Formatter, request: FormatRequest) -> Result<String, SandboxError> {
    let blocking = formatter.format(request.clone());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let on_task = runtime.block_on(formatter.format_async(request));
    assert_eq!(format!("{blocking:?}"), format!("{on_task:?}"), "the two ways ended differently");
    blocking
}

/// After a hostile call, the same sandbox still renders a normal result.
fn assert_sandbox_still_formats(sandbox: &Sandbox) {
    let json_text = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let text = json_text
        .format(FormatRequest {
            content: r#"[{"type":"text","text":"Lunch at noon"}]"#.into(),
            structured_content: Some(r#"{"events":[{"title":"Lunch"}]}"#.into()),
            ..request("calendar_query")
        })
        .unwrap();
    assert_eq!(text, "Lunch at noon\nevents:\n  - title: Lunch");
}

/// The guest's own report that the operation was refused.
fn denial(result: Result<String, SandboxError>) -> String {
    match result {
        Err(SandboxError::Format(FormatError::Internal(why))) => {
            eprintln!("guest reported: {why}");
            why
        }
        other => panic!("expected the guest to report a denial, got {other:?}"),
    }
}

#[test]
fn reading_etc_passwd_is_denied() {
    let sandbox = sandbox();
    let why = denial(format(&load(&sandbox, hostile::READ_PASSWD, quick_limits()), request("x")));
    assert!(why.starts_with("read /etc/passwd: "), "{why}");
    assert!(!why.contains("root:"), "{why}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn listing_the_root_directory_is_denied() {
    let sandbox = sandbox();
    let why = denial(format(&load(&sandbox, hostile::LIST_ROOT, quick_limits()), request("x")));
    assert!(why.starts_with("list /: "), "{why}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn writing_a_file_is_denied_and_nothing_is_written() {
    let sandbox = sandbox();
    let escaped = Path::new("/tmp/wasmgate-escaped.txt");
    let _ = std::fs::remove_file(escaped);
    let why = denial(format(&load(&sandbox, hostile::WRITE_FILE, quick_limits()), request("x")));
    assert!(why.starts_with("write file: /tmp/wasmgate-escaped.txt: "), "{why}");
    assert!(!escaped.exists());
    assert!(!Path::new("wasmgate-escaped.txt").exists());
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn the_environment_arguments_and_working_directory_are_empty() {
    let sandbox = sandbox();
    let why = denial(format(&load(&sandbox, hostile::READ_ENV, quick_limits()), request("x")));
    // "/" is wasi-libc's answer when the host grants no working directory.
    assert_eq!(why, "environment: 0 variables, 0 arguments, working directory /");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn opening_a_tcp_connection_is_denied() {
    let sandbox = sandbox();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap().to_string();
    let why = denial(format(&load(&sandbox, hostile::TCP_CONNECT, quick_limits()), request(&address)));
    assert!(why.starts_with("tcp connect: "), "{why}");
    // Nothing reached the listener.
    assert_eq!(listener.accept().map(|_| ()).unwrap_err().kind(), std::io::ErrorKind::WouldBlock);
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn an_endless_loop_hits_the_deadline() {
    let sandbox = sandbox();
    let result = format(&load(&sandbox, hostile::SPIN_FOREVER, quick_limits()), request("x"));
    assert!(
        matches!(result, Err(SandboxError::DeadlineExceeded { limit }) if limit == Duration::from_millis(200)),
        "{result:?}"
    );
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn sleeping_on_wasi_timers_hits_the_deadline_too() {
    // A host timer that slept in real time would hold the call (and this test) for an
    // hour; the test gives up after a minute instead of hanging.
    let (done, ended) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let sandbox = sandbox();
        let result = format(&load(&sandbox, hostile::SLEEP_FOREVER, quick_limits()), request("x"));
        assert_sandbox_still_formats(&sandbox);
        let _ = done.send(result);
    });
    let result = ended.recv_timeout(Duration::from_secs(60)).expect("a sleeping formatter outlasted its deadline");
    assert!(
        matches!(result, Err(SandboxError::DeadlineExceeded { limit }) if limit == Duration::from_millis(200)),
        "{result:?}"
    );
}

#[test]
fn an_endless_loop_runs_out_of_fuel_when_fuel_is_metered() {
    let sandbox =
        Sandbox::new(SandboxConfig { fuel: true, max_concurrent_calls: 4, ..SandboxConfig::default() }).unwrap();
    let limits = CallLimits { fuel: Some(5_000_000), deadline: Duration::from_secs(30), ..CallLimits::default() };
    let result = format(&load(&sandbox, hostile::SPIN_FOREVER, limits), request("x"));
    assert!(matches!(result, Err(SandboxError::FuelExhausted { limit: 5_000_000 })), "{result:?}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn allocating_a_gibibyte_hits_the_memory_limit() {
    let sandbox = sandbox();
    let result = format(&load(&sandbox, hostile::ALLOC_1GIB, quick_limits()), request("x"));
    assert!(matches!(result, Err(SandboxError::MemoryLimit { limit }) if limit == 64 << 20), "{result:?}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn unbounded_recursion_overflows_the_stack() {
    let sandbox = sandbox();
    let result = format(&load(&sandbox, hostile::STACK_OVERFLOW, quick_limits()), request("x"));
    assert!(matches!(result, Err(SandboxError::StackOverflow)), "{result:?}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn a_hundred_megabytes_of_text_cannot_even_be_built_under_the_default_memory_cap() {
    let sandbox = sandbox();
    let result = format(&load(&sandbox, hostile::HUGE_OUTPUT, quick_limits()), request("x"));
    assert!(matches!(result, Err(SandboxError::MemoryLimit { .. })), "{result:?}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn a_hundred_megabytes_of_text_is_refused_by_the_host_before_it_is_copied() {
    let sandbox = sandbox();
    let limits = CallLimits { memory_bytes: 256 << 20, deadline: Duration::from_secs(10), ..CallLimits::default() };
    assert_eq!(limits.transfer_bytes(), (2 << 20) + TRANSFER_SLACK);
    let result = format(&load(&sandbox, hostile::HUGE_OUTPUT, limits.clone()), request("x"));
    assert!(
        matches!(result, Err(SandboxError::TransferTooLarge { limit }) if limit == limits.transfer_bytes()),
        "{result:?}"
    );
    assert!(result.unwrap_err().to_string().contains("output limit"), "the text names the limit");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn holding_host_resources_without_end_stops_at_the_resource_cap() {
    // Each pollable lives in the host's table, outside the guest's memory cap: without
    // a bound the guest would hold all 100,000 and return.
    let sandbox = sandbox();
    let limits = CallLimits { deadline: Duration::from_secs(10), ..CallLimits::default() };
    let result = format(&load(&sandbox, hostile::HOARD_RESOURCES, limits), request("x"));
    assert!(matches!(result, Err(SandboxError::ResourceLimit { limit }) if limit == MAX_HOST_RESOURCES), "{result:?}");
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn a_panic_is_a_trap_with_the_panic_message_captured() {
    let sandbox = sandbox();
    let result = format(&load(&sandbox, hostile::PANIC, quick_limits()), request("x"));
    match result {
        Err(SandboxError::Trapped { trap, stderr, .. }) => {
            assert!(trap.contains("unreachable"), "{trap}");
            assert!(stderr.contains("hostile formatter panicked on purpose"), "{stderr}");
        }
        other => panic!("expected a trap, got {other:?}"),
    }
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn no_state_survives_from_one_call_to_the_next() {
    let sandbox = sandbox();
    let formatter = load(&sandbox, hostile::REMEMBER_CALLS, quick_limits());
    for tool in ["first", "second", "third"] {
        assert_eq!(format(&formatter, request(tool)).unwrap(), format!("call 1 saw {tool}"));
    }
}

#[test]
fn the_clocks_are_frozen() {
    let sandbox = sandbox();
    let text = format(&load(&sandbox, hostile::READ_CLOCK, quick_limits()), request("x")).unwrap();
    assert_eq!(text, "wall=0 elapsed=0");
}

#[test]
fn a_spinning_formatter_on_an_async_task_lets_the_other_tasks_of_its_thread_run() {
    // One thread, as `wasmgate serve` over stdio: the guest yields at every epoch tick,
    // so a task that is ready runs long before the spinning call reaches its deadline.
    let sandbox = sandbox();
    let formatter = load(&sandbox, hostile::SPIN_FOREVER, quick_limits());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (ran, ran_at) = tokio::sync::oneshot::channel();
        let other = tokio::spawn(async move { ran.send(std::time::Instant::now()).unwrap() });
        let result = formatter.format_async(request("x")).await;
        let spin_ended = std::time::Instant::now();
        assert!(matches!(result, Err(SandboxError::DeadlineExceeded { .. })), "{result:?}");
        other.await.unwrap();
        assert!(ran_at.await.unwrap() < spin_ended, "the other task waited for the whole spin");
    });
    assert_sandbox_still_formats(&sandbox);
}

#[test]
fn the_blocking_api_called_from_async_code_still_reports_the_panic() {
    // WASI's blocking stderr waits on tokio with `Handle::block_on`, which panics on
    // a thread driving async tasks; the blocking API moves such a call off it.
    let sandbox = sandbox();
    let formatter = load(&sandbox, hostile::PANIC, quick_limits());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let result = runtime.block_on(async { formatter.format(request("x")) });
    assert!(
        matches!(&result, Err(SandboxError::Trapped { stderr, .. }) if stderr.contains("panicked on purpose")),
        "{result:?}"
    );
    let loaded = runtime.block_on(async { sandbox.load_formatter_file(Path::new(hostile::PANIC), quick_limits()) });
    assert!(loaded.is_ok(), "{loaded:?}");
}
