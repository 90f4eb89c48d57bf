//! The hostile tool provider (`guest-tools/hostile/examples/tool_provider.rs`)
//! against the sandbox: every attempt ends in exactly the outcome the contract
//! promises, and the same provider then answers an ordinary call.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use serde_json::json;
use wasmgate_sandbox::{CallError, CallLimits, Grants, SandboxError, TRANSFER_SLACK, ToolCallError, ToolProvider};

use common::{call, call_both, hostile, ro_grant, rw_grant, sandbox, text};

/// After a hostile call, the provider still answers normally: every call is a new instance.
fn assert_still_answers(tools: &ToolProvider) {
    assert_eq!(text(&call(tools, "count", json!({}), &Grants::none())), "call 1");
}

fn sandbox_error(tools: &ToolProvider, tool: &str, args: &str, grants: &Grants) -> SandboxError {
    match call_both(tools, tool, args, grants) {
        Err(ToolCallError::Sandbox(err)) => err,
        other => panic!("{tool}: expected a sandbox error, got {other:?}"),
    }
}

/// The guest's own report that the operation was refused.
fn denial(tools: &ToolProvider, tool: &str, path: &str, grants: &Grants) -> String {
    let args = format!(r#"{{"path":"{path}"}}"#);
    match call_both(tools, tool, &args, grants) {
        Err(ToolCallError::Call(CallError::Internal(why))) => {
            eprintln!("guest reported: {why}");
            why
        }
        other => panic!("{tool} {path}: expected the guest to report a denial, got {other:?}"),
    }
}

#[test]
fn no_state_survives_from_one_tool_call_to_the_next() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    for _ in 0..3 {
        assert_still_answers(&tools);
    }
}

#[test]
fn a_tool_cannot_read_outside_its_preopened_directory() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    std::fs::write(root.path().join("secret.txt"), "TOP-SECRET").unwrap();
    std::fs::write(data.join("inside.txt"), "granted").unwrap();
    std::os::unix::fs::symlink(root.path().join("secret.txt"), data.join("link")).unwrap();
    std::os::unix::fs::symlink("../secret.txt", data.join("relative-link")).unwrap();
    let grants = ro_grant(&data);
    assert_eq!(text(&call(&tools, "read", json!({"path": "/data/inside.txt"}), &grants)), "granted");
    for path in
        ["/data/../secret.txt", "/data/link", "/data/relative-link", "../secret.txt", "/etc/passwd", "/etc/hostname"]
    {
        let why = denial(&tools, "read", path, &grants);
        assert!(why.starts_with(&format!("read {path}: ")), "{why}");
        assert!(!why.contains("TOP-SECRET"), "{why}");
    }
    assert_still_answers(&tools);
}

#[test]
fn a_tool_can_write_only_inside_a_read_write_grant() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let read_only = denial(&tools, "write", "/data/new.txt", &ro_grant(&data));
    assert!(read_only.contains("not permitted") || read_only.contains("ermission"), "{read_only}");
    assert!(!data.join("new.txt").exists());
    let grants = rw_grant(&data);
    for path in ["/data/../escaped.txt", "/tmp/wasmgate-escaped.txt", "escaped.txt"] {
        denial(&tools, "write", path, &grants);
    }
    assert!(!root.path().join("escaped.txt").exists(), "a write escaped the grant");
    assert_eq!(text(&call(&tools, "write", json!({"path": "/data/new.txt"}), &grants)), "wrote /data/new.txt");
    assert_eq!(std::fs::read_to_string(data.join("new.txt")).unwrap(), "escaped");
}

#[test]
fn tool_calls_get_frozen_clocks_unless_the_clock_is_granted() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    assert_eq!(text(&call(&tools, "clock", json!({}), &Grants::none())), "0");
    let real = call(&tools, "clock", json!({}), &Grants { clock: true, ..Grants::none() });
    assert!(text(&real).parse::<u64>().unwrap() > 1_700_000_000, "{real:?}");
}

#[test]
fn a_tool_call_past_its_deadline_is_deadline_exceeded() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let err = sandbox_error(&tools, "spin", "{}", &Grants::none());
    assert!(matches!(err, SandboxError::DeadlineExceeded { .. }), "{err}");
    assert_still_answers(&tools);
}

#[test]
fn a_tool_call_past_its_memory_cap_is_memory_limit() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let err = sandbox_error(&tools, "alloc", "{}", &Grants::none());
    assert!(matches!(err, SandboxError::MemoryLimit { limit } if limit == CallLimits::default().memory_bytes), "{err}");
    assert_still_answers(&tools);
}

#[test]
fn a_tool_that_panics_is_a_trap_with_its_message() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let err = sandbox_error(&tools, "panic", "{}", &Grants::none());
    assert!(
        matches!(&err, SandboxError::Trapped { stderr, .. } if stderr.contains("the hostile tool panicked on purpose")),
        "{err}"
    );
    assert_still_answers(&tools);
}

/// What `huge` (2 MiB of text in 27 bytes of JSON) ends in under an output cap of
/// `output_bytes`; the provider then still answers.
fn huge_under(output_bytes: usize) -> SandboxError {
    let sandbox = sandbox();
    let tools = common::hostile_with(&sandbox, CallLimits { output_bytes, ..common::quick_limits() });
    let err = sandbox_error(&tools, "huge", "{}", &Grants::none());
    assert_still_answers(&tools);
    err
}

#[test]
fn output_over_the_cap_is_refused() {
    // Just over a 2 MiB cap (and under twice it): the host copies it, measures it and
    // refuses it.
    let err = huge_under(2 << 20);
    assert!(
        matches!(err, SandboxError::OutputTooLarge { size, limit } if size == (2 << 20) + 27 && limit == 2 << 20),
        "{err}"
    );
}

#[test]
fn output_far_over_the_cap_is_refused_before_it_is_copied() {
    // Past twice a 512 KiB cap and `TRANSFER_SLACK`, the host does not copy it at all.
    let err = huge_under(512 << 10);
    assert!(matches!(err, SandboxError::TransferTooLarge { limit } if limit == (1 << 20) + TRANSFER_SLACK), "{err}");
}

#[test]
fn content_and_structured_content_that_break_the_contract_are_invalid_output() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    for (tool, expected) in [
        ("content_object", "content is not a JSON array"),
        ("content_not_json", "content is not JSON"),
        ("content_untyped", "content block 0 is not an object with a string `type`"),
        ("structured_array", "structured content is not a JSON object"),
    ] {
        let err = sandbox_error(&tools, tool, "{}", &Grants::none());
        assert!(matches!(&err, SandboxError::InvalidOutput(why) if why.starts_with(expected)), "{tool}: {err}");
    }
}

#[test]
fn a_list_with_a_malformed_tool_name_is_refused() {
    let sandbox = sandbox();
    let result = hostile(&sandbox).list_tools();
    assert!(
        matches!(&result, Err(SandboxError::InvalidOutput(why)) if why.starts_with("tool 3 (\"bad name!\")")),
        "{result:?}"
    );
}

#[test]
fn a_loud_guest_error_is_cut_short_and_made_log_safe() {
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    match tools.call("loud_error", "{}", &Grants::none(), tools.limits()) {
        Err(ToolCallError::Call(CallError::Internal(why))) => {
            let most = 2048 + text_safety::CUT_MARK.chars().count();
            assert!(why.chars().count() <= most, "{} characters", why.chars().count());
            assert!(why.ends_with(text_safety::CUT_MARK), "{why}");
            assert!(!why.contains(['\u{1b}', '\u{202e}']), "{why:?}");
        }
        other => panic!("expected the guest's internal error, got {other:?}"),
    }
}

#[test]
fn a_spinning_tool_on_an_async_task_lets_the_other_tasks_of_its_thread_run() {
    // One thread, as `wasmgate serve` over stdio: the guest yields at every epoch tick,
    // so a task that is ready runs long before the spinning call reaches its deadline.
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let (ran, ran_at) = tokio::sync::oneshot::channel();
        let other = tokio::spawn(async move { ran.send(std::time::Instant::now()).unwrap() });
        let err = tools.call_async("spin", "{}", &Grants::none(), tools.limits()).await.unwrap_err();
        let spin_ended = std::time::Instant::now();
        assert!(matches!(err, ToolCallError::Sandbox(SandboxError::DeadlineExceeded { .. })), "{err}");
        other.await.unwrap();
        assert!(ran_at.await.unwrap() < spin_ended, "the other task waited for the whole spin");
    });
    assert_still_answers(&tools);
}

#[test]
fn the_blocking_api_called_from_async_code_still_reports_the_panic() {
    // WASI's blocking stderr waits on tokio with `Handle::block_on`, which panics on
    // a thread driving async tasks; the blocking API moves such a call off it.
    let sandbox = sandbox();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let tools = runtime.block_on(async { hostile(&sandbox) });
    let err = runtime.block_on(async { tools.call("panic", "{}", &Grants::none(), tools.limits()).unwrap_err() });
    assert!(
        matches!(&err, ToolCallError::Sandbox(SandboxError::Trapped { stderr, .. }) if stderr.contains("panicked on purpose")),
        "{err}"
    );
    let listed = runtime.block_on(async { common::calendar(&sandbox).list_tools() });
    assert!(listed.is_ok_and(|tools| !tools.is_empty()));
}

#[test]
fn a_tool_connects_only_where_its_network_grant_lets_it() {
    use std::io::Read as _;
    use std::net::{Ipv4Addr, TcpListener};
    use wasmgate_egress::HostGrant;
    use wasmgate_sandbox::NetworkGrant;
    let granted = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let other = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    other.set_nonblocking(true).unwrap();
    let (port, other_port) = (granted.local_addr().unwrap().port(), other.local_addr().unwrap().port());
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let target = format!("127.0.0.1:{port}");
    // Without a grant there are no sockets at all.
    denial(&tools, "connect", &target, &Grants::none());

    let hosts = [HostGrant::parse(&target).unwrap()];
    let grants = Grants { network: Some(NetworkGrant::new(hosts)), ..Grants::none() };
    assert!(!grants.network.as_ref().unwrap().name_lookup(), "an address needs no lookups");
    let outcome = call_both(&tools, "connect", &format!(r#"{{"path":"{target}"}}"#), &grants).unwrap();
    assert_eq!(text(&outcome), format!("connected to {target}"));
    // Both ways of calling reached it, and said what a tool with sockets would.
    for _ in 0..2 {
        let (mut stream, _) = granted.accept().unwrap();
        let mut said = String::new();
        stream.read_to_string(&mut said).unwrap();
        assert_eq!(said, "exfiltrated\n");
    }
    denial(&tools, "connect", &format!("127.0.0.1:{other_port}"), &grants);
    // A name needs lookups, which this grant does not allow.
    denial(&tools, "connect", &format!("localhost:{port}"), &grants);
    assert_eq!(other.accept().map(|_| ()).unwrap_err().kind(), std::io::ErrorKind::WouldBlock, "nothing else");
    assert_still_answers(&tools);
}

#[test]
fn a_tool_looks_up_only_the_names_granted_to_it_and_each_lookup_and_connect_is_reported() {
    use std::sync::{Arc, Mutex};
    use wasmgate_egress::{EgressKind, EgressObserver, EgressRecord, HostGrant};
    use wasmgate_sandbox::NetworkGrant;
    let sandbox = sandbox();
    let tools = hostile(&sandbox);
    let seen: Arc<Mutex<Vec<EgressRecord>>> = Arc::default();
    let log = Arc::clone(&seen);
    let observer: EgressObserver = Arc::new(move |record| log.lock().unwrap().push(record));
    let hosts = [HostGrant::parse("localhost:5232").unwrap(), HostGrant::parse("127.0.0.1:9").unwrap()];
    let grant = NetworkGrant { observer: Some(observer), ..NetworkGrant::new(hosts) };
    assert!(grant.name_lookup() && grant.may_look_up("LOCALHOST.") && !grant.may_look_up("evil.example"));
    let grants = Grants { network: Some(grant), ..Grants::none() };

    let outcome = call_both(&tools, "resolve", r#"{"path":"localhost"}"#, &grants).unwrap();
    assert!(text(&outcome).starts_with("resolved localhost to "), "{}", text(&outcome));
    // Any other name: refused here, so no query leaves the host for it.
    denial(&tools, "resolve", "secret-data.exfil.example", &grants);
    // A connection is reported too, refused or not (nothing listens on port 9).
    let _ = call_both(&tools, "connect", r#"{"path":"127.0.0.1:9"}"#, &grants);
    denial(&tools, "connect", "10.0.0.1:5232", &grants);

    let seen = seen.lock().unwrap();
    let lookups: Vec<_> = seen.iter().filter(|r| r.kind == EgressKind::Lookup).collect();
    assert!(lookups.iter().any(|r| r.host == "localhost" && r.refused.is_none()), "{seen:?}");
    let refused = lookups.iter().find(|r| r.host == "secret-data.exfil.example").expect("the refused lookup");
    assert!(refused.refused.as_deref().is_some_and(|why| why.contains("not a granted host's name")), "{refused:?}");
    let connects: Vec<_> = seen.iter().filter(|r| r.kind == EgressKind::Connect).collect();
    assert!(connects.iter().any(|r| r.port == 9 && r.refused.is_none()), "{seen:?}");
    assert!(connects.iter().any(|r| r.host == "10.0.0.1" && r.refused.is_some()), "{seen:?}");
    assert_still_answers(&tools);
}
