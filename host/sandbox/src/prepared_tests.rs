//! Instances made ahead of their calls and stores torn down after them, against real
//! components: every call still sees a fresh instance with its whole deadline, and the
//! reserve bounds what waits.

use std::path::Path;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use wasmgate_guests::hostile;

use crate::{
    CallLimits, FormatRequest, Formatter, Grants, Sandbox, SandboxConfig, SandboxError, ToolCallError, ToolProvider,
};

fn sandbox(max_concurrent_calls: u32, prepared_instances: u32) -> Sandbox {
    Sandbox::new(SandboxConfig { max_concurrent_calls, prepared_instances, ..SandboxConfig::default() }).unwrap()
}

fn one_thread() -> Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap()
}

fn formatter(sandbox: &Sandbox, path: &str, limits: CallLimits) -> Formatter {
    sandbox.load_formatter_file(Path::new(path), limits).unwrap()
}

fn request(tool: &str) -> FormatRequest {
    FormatRequest { tool_name: tool.into(), provider: "p".into(), content: "[]".into(), ..FormatRequest::default() }
}

/// Lets the runtime run what the last call left for later, until `done` holds; the
/// bound is far beyond what any run needs, so a failure means it never happens.
async fn settle(done: impl Fn() -> bool) {
    let give_up = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < give_up, "what the last call left for later never happened");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn a_formatter_instance_made_ahead_serves_exactly_one_call() {
    let sandbox = sandbox(2, 4);
    let remember = formatter(&sandbox, hostile::REMEMBER_CALLS, CallLimits::default());
    one_thread().block_on(async {
        assert!(!remember.has_prepared_instance(), "nothing is made before the first call");
        for n in 0..4 {
            let tool = format!("tool {n}");
            // From the second call on, the instance was made ahead: the guest's counter
            // still starts from zero, and the call takes the instance.
            assert_eq!(remember.format_async(request(&tool)).await.unwrap(), format!("call 1 saw {tool}"));
            assert!(!remember.has_prepared_instance(), "call {n} left its instance ready for another call");
            settle(|| remember.has_prepared_instance()).await;
        }
    });
    // The blocking API makes its own instance on the call's path, as before.
    assert_eq!(remember.format(request("blocking")).unwrap(), "call 1 saw blocking");
}

#[test]
fn an_instance_made_ahead_gets_its_whole_deadline_from_the_call() {
    let deadline = Duration::from_millis(300);
    let sandbox = sandbox(2, 4);
    let spin = formatter(&sandbox, hostile::SPIN_FOREVER, CallLimits { deadline, ..CallLimits::default() });
    one_thread().block_on(async {
        let err = spin.format_async(request("first")).await.unwrap_err();
        assert!(matches!(err, SandboxError::DeadlineExceeded { .. }), "{err}");
        settle(|| spin.has_prepared_instance()).await;
        // Made more than a deadline ago: counted from when it was made, the call
        // would be interrupted at its first epoch check.
        tokio::time::sleep(deadline * 2).await;
        let started = Instant::now();
        let err = spin.format_async(request("second")).await.unwrap_err();
        assert!(matches!(err, SandboxError::DeadlineExceeded { .. }), "{err}");
        // Less only what its start-up took when it was made: far under a millisecond,
        // unless the machine stalls the thread then. Counted from its making, it would
        // end at once: half the deadline tells the two apart with room for a stall.
        let least = deadline / 2;
        assert!(started.elapsed() >= least, "interrupted after {:?}, before its deadline", started.elapsed());
    });
}

#[test]
fn instances_made_ahead_never_take_a_slot_from_a_call() {
    // One slot for calls, two set aside: both instances made ahead fit beside a call.
    let sandbox = sandbox(1, 2);
    let json = CallLimits::default();
    let (a, b) =
        (formatter(&sandbox, hostile::REMEMBER_CALLS, json.clone()), formatter(&sandbox, hostile::PANIC, json));
    one_thread().block_on(async {
        a.format_async(request("a")).await.unwrap();
        settle(|| a.has_prepared_instance() && sandbox.reserve.free() == 1).await;
        let _ = b.format_async(request("b")).await;
        settle(|| b.has_prepared_instance()).await;
        assert_eq!(sandbox.reserve.free(), 0);
    });
    let quick = sandbox.load_formatter("json-text", wasmgate_guests::JSON_TEXT, CallLimits::default()).unwrap();
    quick.format(request("c")).unwrap();
    assert!(a.has_prepared_instance() && b.has_prepared_instance());
}

#[test]
fn what_waits_is_bounded_by_the_reserve() {
    let (sandbox, runtime) = (sandbox(2, 1), one_thread());
    let (a, b) = (
        formatter(&sandbox, hostile::REMEMBER_CALLS, CallLimits::default()),
        formatter(&sandbox, hostile::REMEMBER_CALLS, CallLimits::default()),
    );
    runtime.block_on(async {
        a.format_async(request("a")).await.unwrap();
        settle(|| a.has_prepared_instance()).await;
        // The one slot is held by `a`'s instance: `b` makes none, and its store is
        // torn down on the call's path.
        for _ in 0..3 {
            assert_eq!(b.format_async(request("b")).await.unwrap(), "call 1 saw b");
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(!b.has_prepared_instance());
        }
        assert_eq!(sandbox.reserve.free(), 0);
        // `a` takes its instance, and the freed slot goes to its next one before the
        // store it used: that one is torn down on the call's path.
        a.format_async(request("a")).await.unwrap();
        assert_eq!(sandbox.reserve.free(), 0);
        settle(|| a.has_prepared_instance()).await;
    });
    // Nothing made ahead: every call makes and tears down its own instance.
    let none = sandbox_without_reserve();
    let remember = formatter(&none, hostile::REMEMBER_CALLS, CallLimits::default());
    one_thread().block_on(async {
        for _ in 0..3 {
            assert_eq!(remember.format_async(request("t")).await.unwrap(), "call 1 saw t");
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(!remember.has_prepared_instance());
        }
    });
    // A dropped runtime drops what it had left to do, and gives its slots back.
    drop(runtime);
    assert_eq!(sandbox.reserve.free(), 0, "a's instance is still held, by a, not by the runtime");
    drop(a);
    assert_eq!(sandbox.reserve.free(), 1);
}

fn sandbox_without_reserve() -> Sandbox {
    sandbox(2, 0)
}

const TOOL_DEADLINE: Duration = Duration::from_millis(300);

fn tools(sandbox: &Sandbox) -> ToolProvider {
    let limits = CallLimits { deadline: TOOL_DEADLINE, ..CallLimits::default() };
    sandbox.load_tool_provider_file("hostile", Path::new(hostile::TOOL_PROVIDER), limits).unwrap()
}

#[test]
fn a_tool_instance_made_ahead_serves_one_call_with_the_same_grants_and_limits() {
    let sandbox = sandbox(2, 4);
    let tools = tools(&sandbox);
    let limits = tools.limits().clone();
    let count = |grants: Grants, limits: CallLimits| {
        let tools = tools.clone();
        async move {
            let outcome = tools.call_async("count", "{}", &grants, &limits).await.unwrap();
            outcome.content.to_string()
        }
    };
    one_thread().block_on(async {
        for _ in 0..3 {
            assert!(count(Grants::none(), limits.clone()).await.contains("call 1"));
            settle(|| tools.has_prepared_instance()).await;
        }
        // Made for other limits, it is not used: this call makes its own, and the next
        // one is made for these limits.
        let other = CallLimits { output_bytes: limits.output_bytes - 1, ..limits.clone() };
        assert!(count(Grants::none(), other).await.contains("call 1"));
        settle(|| tools.has_prepared_instance()).await;

        // A call granted a directory opens it when it starts: it makes its own instance,
        // and leaves the one made for other calls where it is.
        let dir = tempfile::tempdir().unwrap();
        let grants = Grants::none().with_dir(crate::DirGrant::read_only(dir.path(), "/data"));
        assert!(count(grants.clone(), limits.clone()).await.contains("call 1"));
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(tools.has_prepared_instance(), "a call granted a directory threw away another's instance");
        // Nothing was made for it: the instance is still the one made for `other`.
        let fresh = tools.clone();
        let called = fresh.call_async("count", "{}", &grants, &limits).await.unwrap();
        assert!(called.content.to_string().contains("call 1"));
        assert!(tools.has_prepared_instance());

        // A tool that spins in an instance made ahead is interrupted at its deadline,
        // counted from the call.
        assert!(count(Grants::none(), limits.clone()).await.contains("call 1"));
        settle(|| tools.has_prepared_instance()).await;
        let started = Instant::now();
        let err = tools.call_async("spin", "{}", &Grants::none(), &limits).await;
        assert!(matches!(err, Err(ToolCallError::Sandbox(SandboxError::DeadlineExceeded { .. }))), "{err:?}");
        assert!(started.elapsed() >= TOOL_DEADLINE / 2, "interrupted after {:?}", started.elapsed());
    });
}

#[test]
fn a_runtime_dropped_before_it_made_the_next_instance_leaves_none_half_made() {
    let sandbox = sandbox(2, 4);
    let remember = formatter(&sandbox, hostile::REMEMBER_CALLS, CallLimits::default());
    // Each call on a runtime of its own, dropped as soon as the call returns: the task
    // that would make the next instance never runs.
    for _ in 0..2 {
        assert_eq!(one_thread().block_on(remember.format_async(request("t"))).unwrap(), "call 1 saw t");
        assert!(!remember.has_prepared_instance());
    }
    assert_eq!(sandbox.reserve.free(), 4, "a dropped task kept its slot of the reserve");
    // A runtime that lives on makes it.
    one_thread().block_on(async {
        remember.format_async(request("t")).await.unwrap();
        settle(|| remember.has_prepared_instance()).await;
    });
}

#[test]
fn start_up_made_ahead_counts_against_the_calls_deadline() {
    let sandbox = sandbox(1, 1);
    let runner = crate::runner::Runner::new(&sandbox);
    let limits = CallLimits { deadline: Duration::from_millis(300), ..CallLimits::default() };
    let state = crate::state::StoreState::new(&limits, crate::state::Mode::Async);
    let mut store = runner.store_async(state, &limits).unwrap();
    store.data_mut().startup = Duration::from_millis(200);
    crate::runner::Runner::restart_deadline(&mut store, &limits);
    let left = store.data().ends_at.unwrap().saturating_duration_since(Instant::now());
    assert!(left <= Duration::from_millis(100), "{left:?} left of a 300 ms deadline after 200 ms of start-up");
    // Start-up longer than the deadline leaves nothing, and never underflows.
    store.data_mut().startup = Duration::from_secs(5);
    crate::runner::Runner::restart_deadline(&mut store, &limits);
    assert!(store.data().ends_at.unwrap() <= Instant::now());
}
