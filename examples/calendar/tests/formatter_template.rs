//! docs/FORMATTER.md, followed as written: the template crate's tests pass natively, it
//! builds for `wasm32-wasip2` with the command the doc gives, and the `.wasm` it makes
//! loads as a formatter component and renders a result in the sandbox.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use wasmgate_example_calendar::setup::EXAMPLE_DIR;
use wasmgate_sandbox::{CallLimits, FormatRequest, Sandbox, SandboxConfig};

fn template_dir() -> PathBuf {
    Path::new(EXAMPLE_DIR).join("../formatter-template").canonicalize().unwrap()
}

/// A target directory of the test's own under the workspace's `target/`, kept between
/// runs so that only the first run compiles wit-bindgen (about a minute on two cores).
fn target_dir() -> PathBuf {
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| Path::new(EXAMPLE_DIR).join("../../target"), PathBuf::from);
    target.join("formatter-template")
}

/// `cargo ARGS` in the template's directory, as a reader would run it there: no flags
/// meant for this workspace's own build leak in.
fn cargo(args: &[&str]) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(template_dir()).args(args).arg("--locked").arg("--target-dir").arg(target_dir());
    for var in wasmgate_guests::HOST_BUILD_VARS {
        command.env_remove(var);
    }
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "cargo {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn the_template_carries_the_current_contract() {
    let contract = std::fs::read_to_string(Path::new(EXAMPLE_DIR).join("../../wit/sandbox.wit")).unwrap();
    let copy = std::fs::read_to_string(template_dir().join("wit/sandbox.wit")).unwrap();
    assert!(contract == copy, "copy wit/sandbox.wit to examples/formatter-template/wit/ again");
}

#[test]
fn the_formatter_template_builds_as_the_doc_says_and_formats_a_result_in_the_sandbox() {
    cargo(&["test"]);
    cargo(&["build", "--target", "wasm32-wasip2", "--release"]);
    let wasm = target_dir().join("wasm32-wasip2/release/formatter_template.wasm");

    let sandbox = Sandbox::new(SandboxConfig { cache_dir: None, ..SandboxConfig::default() }).unwrap();
    let formatter = sandbox.load_formatter_file(&wasm, CallLimits::default()).unwrap();
    let result = formatter
        .format(FormatRequest {
            tool_name: "weather__forecast".into(),
            provider: "weather".into(),
            content: r#"[{"type":"text","text":"{\"city\":\"Paris\",\"temp_c\":21}"}]"#.into(),
            structured_content: Some(r#"{"city":"Par\u202eis\u001b[2J","temp_c":21,"alerts":["wind"]}"#.into()),
            is_error: false,
        })
        .unwrap();
    assert_eq!(result, "Result of weather__forecast:\n- city: Paris\n- temp_c: 21\n- alerts: [\"wind\"]");
}
