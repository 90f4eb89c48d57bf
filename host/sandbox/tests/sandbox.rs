//! The sandbox host against the real default formatter: loading, the cache,
//! each limit, and concurrent calls.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use wasmgate_core::report;
use wasmgate_guests::{JSON_TEXT, hostile};
use wasmgate_sandbox::{CallLimits, FormatError, FormatRequest, LoadError, Sandbox, SandboxConfig, SandboxError};

fn small_sandbox() -> Sandbox {
    Sandbox::new(SandboxConfig { max_concurrent_calls: 4, ..SandboxConfig::default() }).unwrap()
}

fn text_result(text: &str) -> FormatRequest {
    FormatRequest {
        tool_name: "demo_tool".into(),
        provider: "demo".into(),
        content: serde_json::json!([{ "type": "text", "text": text }]).to_string(),
        structured_content: None,
        is_error: false,
    }
}

#[test]
fn the_default_formatter_renders_structured_content_and_strips_escapes() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let request = FormatRequest {
        content:
            r#"[{"type":"text","text":"\u001b[2Jagenda\u202e"},{"type":"image","data":"AAAA","mimeType":"image/png"}]"#
                .into(),
        structured_content: Some(r#"{"events":[{"title":"Standup","at":"09:00"}]}"#.into()),
        ..text_result("")
    };
    let text = formatter.format(request).unwrap();
    assert_eq!(text, "agenda\n[image: image/png, 3 B]\nevents:\n  - title: Standup\n    at: 09:00");
}

#[test]
fn a_result_flagged_as_error_is_still_formatted() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let text = formatter.format(FormatRequest { is_error: true, ..text_result("unknown city") }).unwrap();
    assert_eq!(text, "The tool reported an error:\nunknown city");
}

#[test]
fn invalid_json_content_is_a_typed_format_error() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let result = formatter.format(FormatRequest { content: "{not json".into(), ..text_result("") });
    assert!(
        matches!(&result, Err(SandboxError::Format(FormatError::InvalidInput(why))) if why.starts_with("content is not JSON")),
        "{result:?}"
    );
}

#[test]
fn the_formatter_keeps_within_the_output_budget_it_is_given() {
    let sandbox = small_sandbox();
    let limits = CallLimits { output_bytes: 1000, ..CallLimits::default() };
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, limits).unwrap();
    let text = formatter.format(text_result(&"long line ".repeat(10_000))).unwrap();
    assert!(text.len() <= 1000, "{}", text.len());
    assert!(text.ends_with("[... output truncated by the formatter]"));
}

#[test]
fn input_over_the_cap_is_refused_before_any_guest_code_runs() {
    let sandbox = small_sandbox();
    let limits = CallLimits { input_bytes: 100, ..CallLimits::default() };
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, limits).unwrap();
    let result = formatter.format(text_result(&"x".repeat(200)));
    assert!(matches!(result, Err(SandboxError::InputTooLarge { limit: 100, .. })), "{result:?}");
}

#[test]
fn per_call_limits_override_the_defaults() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let tight = CallLimits { input_bytes: 10, ..CallLimits::default() };
    assert!(matches!(
        formatter.format_with(text_result("hello world"), &tight),
        Err(SandboxError::InputTooLarge { .. })
    ));
    assert_eq!(formatter.format(text_result("hello world")).unwrap(), "hello world");
}

#[test]
fn a_table_cap_below_what_the_component_needs_is_a_table_limit() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let tight = CallLimits { table_elements: 1, ..CallLimits::default() };
    let result = formatter.format_with(text_result("x"), &tight);
    assert!(matches!(result, Err(SandboxError::TableLimit { limit: 1 })), "{result:?}");
    let at_load = sandbox.load_formatter("json-text", JSON_TEXT, tight).unwrap_err();
    assert!(report(&at_load).contains("table limit of 1 elements"), "{at_load}");
}

#[test]
fn a_memory_cap_below_the_initial_memory_is_a_memory_limit() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let tight = CallLimits { memory_bytes: 64 << 10, ..CallLimits::default() };
    let result = formatter.format_with(text_result("x"), &tight);
    assert!(matches!(result, Err(SandboxError::MemoryLimit { limit }) if limit == 64 << 10), "{result:?}");
}

#[test]
fn a_result_larger_than_the_formatters_first_memory_grows_it_and_comes_back_whole() {
    // json-text starts with 512 KiB of memory (guest-tools/json-text/build.rs)
    // and grows it only when a call needs more: here the input alone does.
    let sandbox = small_sandbox();
    let limits = CallLimits { output_bytes: 16 << 20, ..CallLimits::default() };
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, limits.clone()).unwrap();
    let text: String = (0..250_000).map(|i| format!("line {i}\n")).collect();
    assert!(text.len() > 2 << 20);
    let request = text_result(&text);
    let native = json_text::render::render(json_text::render::Input {
        content: &request.content,
        structured: None,
        is_error: false,
        max_output_bytes: limits.output_bytes,
    })
    .unwrap();
    assert!(
        native.starts_with("line 0\nline 1\n") && native.trim_end().ends_with("line 249999"),
        "{}",
        &native[native.len() - 80..]
    );
    assert_eq!(formatter.format(request).unwrap(), native);
}

#[test]
fn a_result_that_outgrows_the_memory_cap_is_a_memory_limit_and_the_next_call_is_clean() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let tight = CallLimits { memory_bytes: 4 << 20, ..CallLimits::default() };
    // Copying the 3 MiB input in needs 5 MiB of memory; the host refuses the
    // growth and the formatter's allocator ends the call.
    let result = formatter.format_with(text_result(&"x".repeat(3 << 20)), &tight);
    assert!(matches!(result, Err(SandboxError::MemoryLimit { limit }) if limit == 4 << 20), "{result:?}");
    assert_eq!(formatter.format_with(text_result("after"), &tight).unwrap(), "after");
}

#[test]
fn slots_reset_the_same_whatever_they_keep_resident() {
    // Nothing kept resident (every written page goes back to the kernel) and
    // much more than a call writes: either way no call sees the last one's data.
    for keep_resident_bytes in [0, 8 << 20] {
        let sandbox =
            Sandbox::new(SandboxConfig { keep_resident_bytes, max_concurrent_calls: 1, ..SandboxConfig::default() })
                .unwrap();
        let remember = sandbox.load_formatter_file(Path::new(hostile::REMEMBER_CALLS), CallLimits::default()).unwrap();
        for _ in 0..3 {
            assert_eq!(remember.format(text_result("x")).unwrap(), "call 1 saw demo_tool");
        }
        let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
        let big = formatter.format(text_result(&"big ".repeat(500_000))).unwrap();
        assert!(big.starts_with("big big ") && big.ends_with("[... output truncated by the formatter]"));
        assert_eq!(formatter.format(text_result("small")).unwrap(), "small");
    }
}

#[test]
fn count_caps_too_low_for_the_component_fail_at_load() {
    let sandbox = small_sandbox();
    for limits in [
        CallLimits { instances: 0, ..CallLimits::default() },
        CallLimits { tables: 0, ..CallLimits::default() },
        CallLimits { memories: 0, ..CallLimits::default() },
    ] {
        let err = sandbox.load_formatter("json-text", JSON_TEXT, limits.clone()).unwrap_err();
        assert!(matches!(err, LoadError::Limits { .. }), "{limits:?}: {err}");
        assert!(err.to_string().starts_with("json-text cannot run within the sandbox limits"), "{err}");
    }
}

#[test]
fn limits_beyond_the_sandbox_are_refused_at_load_with_the_fix() {
    let sandbox = small_sandbox();
    let err = sandbox
        .load_formatter("f", JSON_TEXT, CallLimits { memory_bytes: 1 << 40, ..CallLimits::default() })
        .unwrap_err();
    assert!(report(&err).contains("raise SandboxConfig::max_memory_bytes"), "{err}");
    let err =
        sandbox.load_formatter("f", JSON_TEXT, CallLimits { fuel: Some(1), ..CallLimits::default() }).unwrap_err();
    assert!(report(&err).contains("SandboxConfig::fuel = true"), "{err}");
    // The same check applies to limits passed per call.
    let formatter = sandbox.load_formatter("f", JSON_TEXT, CallLimits::default()).unwrap();
    let too_big = CallLimits { memory_bytes: 1 << 40, ..CallLimits::default() };
    let result = formatter.format_with(text_result("x"), &too_big);
    assert!(
        matches!(&result, Err(SandboxError::InvalidLimits(why)) if why.to_string().contains("max_memory_bytes")),
        "{result:?}"
    );
}

#[test]
fn bytes_that_are_not_a_component_fail_at_load_naming_it() {
    let sandbox = small_sandbox();
    for (what, bytes) in [
        ("garbage", b"definitely not wasm".to_vec()),
        ("a core module", b"\0asm\x01\0\0\0".to_vec()),
        ("a truncated component", JSON_TEXT[..JSON_TEXT.len() / 2].to_vec()),
    ] {
        let err = sandbox.load_formatter("plugin.wasm", &bytes, CallLimits::default()).unwrap_err();
        assert!(matches!(err, LoadError::Invalid { .. }), "{what}: {err}");
        assert!(err.to_string().starts_with("plugin.wasm is not a valid WebAssembly component"), "{what}: {err}");
    }
}

#[test]
fn the_world_is_checked_before_the_trial_instance() {
    // No component instantiates in one byte of memory: the trial would fail, but a
    // component of another world is refused as such first.
    let sandbox = small_sandbox();
    let starved = CallLimits { memory_bytes: 1, ..CallLimits::default() };
    let err = sandbox.load_formatter_file(Path::new(wasmgate_guests::ECHO_TOOLS_PATH), starved.clone()).unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { world: "formatter", .. }), "{err}");
    let err = sandbox.load_formatter("json-text", wasmgate_guests::JSON_TEXT, starved).unwrap_err();
    assert!(matches!(err, LoadError::Limits { .. }), "{err}");
}

#[test]
fn a_component_of_another_world_is_not_a_formatter() {
    let sandbox = small_sandbox();
    let err =
        sandbox.load_formatter_file(Path::new(wasmgate_guests::ECHO_TOOLS_PATH), CallLimits::default()).unwrap_err();
    assert!(matches!(err, LoadError::WrongWorld { world: "formatter", .. }), "{err}");
    let text = report(&err);
    assert!(text.contains("echo_tools.wasm is not a formatter component"), "{text}");
    assert!(text.contains("wasmgate:sandbox/format"), "the error should say what is missing: {text}");
}

#[test]
fn a_missing_file_is_a_read_error_naming_the_path() {
    let sandbox = small_sandbox();
    let err = sandbox.load_formatter_file(Path::new("/nonexistent/fmt.wasm"), CallLimits::default()).unwrap_err();
    assert!(matches!(err, LoadError::Read { .. }));
    assert!(err.to_string().contains("/nonexistent/fmt.wasm"), "{err}");
}

fn cached_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

fn cached_sandbox(dir: &Path, fuel: bool) -> Sandbox {
    Sandbox::new(SandboxConfig {
        cache_dir: Some(dir.to_owned()),
        fuel,
        max_concurrent_calls: 2,
        ..SandboxConfig::default()
    })
    .unwrap()
}

fn assert_formats(sandbox: &Sandbox) {
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    assert_eq!(formatter.format(text_result("cached")).unwrap(), "cached");
}

#[test]
fn compiled_components_are_cached_and_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    assert_formats(&cached_sandbox(&dir, false));
    let files = cached_files(&dir);
    assert_eq!(files.len(), 1, "{files:?}");
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
    let before = std::fs::metadata(&files[0]).unwrap();
    let warm = cached_sandbox(&dir, false);
    assert_formats(&warm);
    // A hit maps the verified file rather than copying it.
    let kept = warm.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    assert!(maps.contains(&*files[0].to_string_lossy()), "the cached artifact is not mapped");
    drop(kept);
    let after = std::fs::metadata(&files[0]).unwrap();
    assert_eq!((before.ino(), before.mtime_nsec()), (after.ino(), after.mtime_nsec()), "a cache hit rewrote the file");
    // An engine with other settings gets its own artifact, never the first one.
    assert_formats(&cached_sandbox(&dir, true));
    assert_eq!(cached_files(&dir).len(), 2);
}

#[test]
fn a_tampered_or_truncated_cache_file_is_detected_and_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("cache");
    assert_formats(&cached_sandbox(&dir, false));
    let file = cached_files(&dir).remove(0);
    let good = std::fs::read(&file).unwrap();

    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0xff;
    let damaged: [Vec<u8>; 4] = [flipped, good[..good.len() / 3].to_vec(), good[..20].to_vec(), b"junk".to_vec()];
    for bytes in damaged {
        std::fs::write(&file, &bytes).unwrap();
        assert_formats(&cached_sandbox(&dir, false));
        assert_eq!(std::fs::read(&file).unwrap(), good, "the damaged file was not rebuilt");
    }
}

#[test]
fn a_cache_directory_others_can_write_is_not_used() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("shared");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    assert_formats(&cached_sandbox(&dir, false));
    assert!(cached_files(&dir).is_empty(), "a world-writable cache was written to");
}

#[test]
fn calls_run_concurrently_from_many_threads() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let formatter = &formatter;
            scope.spawn(move || {
                for i in 0..25 {
                    let text = format!("thread {t} call {i}");
                    assert_eq!(formatter.format(text_result(&text)).unwrap(), text);
                }
            });
        }
    });
}

#[test]
fn calls_beyond_the_pool_are_refused_as_busy() {
    // No slots set aside for instances made ahead: the pool is the one call's slot.
    let config = SandboxConfig { max_concurrent_calls: 1, prepared_instances: 0, ..SandboxConfig::default() };
    let sandbox = Sandbox::new(config).unwrap();
    assert!(sandbox.is_pooled(), "this test needs the pooling allocator");
    let spin = sandbox
        .load_formatter_file(
            Path::new(hostile::SPIN_FOREVER),
            CallLimits { deadline: Duration::from_secs(2), ..CallLimits::default() },
        )
        .unwrap();
    let quick = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let done = std::sync::atomic::AtomicBool::new(false);
    let saw_busy = std::thread::scope(|scope| {
        // One thread keeps the only slot busy (retrying until it holds it)...
        scope.spawn(|| {
            while matches!(spin.format(text_result("")), Err(SandboxError::Busy { .. })) {}
            done.store(true, std::sync::atomic::Ordering::SeqCst);
        });
        // ...while this one calls until it is turned away or the spinner ends.
        loop {
            match quick.format(text_result("x")) {
                Err(SandboxError::Busy { slots: 1 }) => break true,
                Ok(_) if done.load(std::sync::atomic::Ordering::SeqCst) => break false,
                Ok(_) => {}
                Err(other) => panic!("unexpected error {other}"),
            }
        }
    });
    assert!(saw_busy, "a second concurrent call was not refused");
    assert_eq!(quick.format(text_result("after")).unwrap(), "after");
}

#[test]
fn a_loaded_formatter_takes_other_limits_with_the_same_checks_as_a_load() {
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let tight = formatter.with_limits(CallLimits { output_bytes: 64, ..CallLimits::default() }).unwrap();
    assert_eq!(tight.limits().output_bytes, 64);
    assert_eq!(formatter.limits().output_bytes, CallLimits::default().output_bytes, "the original is unchanged");
    let err = formatter.with_limits(CallLimits { memory_bytes: 1 << 40, ..CallLimits::default() }).unwrap_err();
    assert!(report(&err).contains("raise SandboxConfig::max_memory_bytes"), "{err}");
    let err = formatter.with_limits(CallLimits { instances: 0, ..CallLimits::default() }).unwrap_err();
    assert!(matches!(err, LoadError::Limits { .. }), "{err}");
}

/// `depth` levels of objects and arrays in turn, a string at the bottom.
fn nested(depth: usize) -> String {
    let open: String = (0..depth).map(|i| if i % 2 == 0 { r#"{"k":"# } else { "[" }).collect();
    let close: String = (0..depth).rev().map(|i| if i % 2 == 0 { "}" } else { "]" }).collect();
    format!(r#"{open}"bottom"{close}"#)
}

#[test]
fn the_deepest_nesting_the_parser_accepts_renders_within_the_guest_stack() {
    // json-text's shadow stack is small (guest-tools/json-text/build.rs): the deepest
    // structure serde_json accepts must still render, in both places a result holds JSON.
    let sandbox = small_sandbox();
    let formatter = sandbox.load_formatter("json-text", JSON_TEXT, CallLimits::default()).unwrap();
    let deepest =
        (1..200).take_while(|&d| serde_json::from_str::<serde_json::Value>(&nested(d)).is_ok()).last().unwrap();
    assert!(deepest >= 120, "{deepest}");
    let structured = FormatRequest { structured_content: Some(nested(deepest)), ..text_result("x") };
    let text = formatter.format(structured).unwrap();
    assert!(text.contains("bottom"), "{text}");
    let text = formatter.format(text_result(&nested(deepest))).unwrap();
    assert!(text.contains("bottom"), "{text}");
    // One level deeper is the parser's refusal, not a trap.
    let result = formatter.format(FormatRequest { structured_content: Some(nested(deepest + 1)), ..text_result("x") });
    assert!(matches!(&result, Err(SandboxError::Format(FormatError::InvalidInput(_)))), "{result:?}");
}
