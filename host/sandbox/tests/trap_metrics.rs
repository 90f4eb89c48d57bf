//! A guest stopped by the sandbox is counted in `wasmgate_sandbox_traps_total` by what
//! stopped it; a call that succeeds is not counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use wasmgate_guests::JSON_TEXT;
use wasmgate_sandbox::{CallLimits, FormatRequest, Sandbox, SandboxConfig, SandboxError};

fn request() -> FormatRequest {
    FormatRequest {
        tool_name: "demo_tool".into(),
        provider: "demo".into(),
        content: serde_json::json!([{ "type": "text", "text": "x" }]).to_string(),
        structured_content: None,
        is_error: false,
    }
}

#[test]
fn a_stopped_guest_is_counted_by_kind_and_a_good_call_is_not() {
    let sandbox = Sandbox::new(SandboxConfig { max_concurrent_calls: 2, ..SandboxConfig::default() }).unwrap();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    metrics::with_local_recorder(&recorder, || {
        let memory = CallLimits { memory_bytes: 64 << 10, ..CallLimits::default() };
        assert!(matches!(formatter.format_with(request(), &memory), Err(SandboxError::MemoryLimit { .. })));
        let table = CallLimits { table_elements: 1, ..CallLimits::default() };
        assert!(matches!(formatter.format_with(request(), &table), Err(SandboxError::TableLimit { .. })));
        assert!(matches!(formatter.format_with(request(), &table), Err(SandboxError::TableLimit { .. })));
        assert!(formatter.format_with(request(), &CallLimits::default()).is_ok());
    });
    let mut counted: Vec<(String, u64)> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .filter(|(key, ..)| key.key().name() == "wasmgate_sandbox_traps_total")
        .map(|(key, _, _, value)| {
            let kind = key.key().labels().find(|l| l.key() == "kind").map(|l| l.value().to_owned()).unwrap();
            let DebugValue::Counter(n) = value else { panic!("a counter") };
            (kind, n)
        })
        .collect();
    counted.sort();
    assert_eq!(counted, [("memory".to_owned(), 1), ("table".to_owned(), 2)]);
}
