#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, and every test.
# Installs what it needs first; the guest components are built from source by
# host/guests/build.rs as part of the cargo build.
set -euo pipefail
cd "$(dirname "$0")/.."
# One-shot builds gain nothing from incremental caches, which took more disk than the
# build itself (tens of GB over a few runs); a developer can set CARGO_INCREMENTAL=1.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

# Each step says when it starts, in seconds since the command began: where a slow run's
# time went.
step() { echo "== $1 (at ${SECONDS}s)" >&2; }

scripts/setup.sh
scripts/install-peers.sh # interop peers (Python mcp SDK, server-everything, Inspector, conformance) into target/peers

# Every cargo project of the repository outside the main workspace: the guest
# components' workspace, the formatter template, the fuzz targets.
others=(guest-tools/Cargo.toml examples/formatter-template/Cargo.toml fuzz/Cargo.toml)

step "lock files"
# Every lock file matches its manifests (a dependency added to a host crate that the
# fuzz targets use changes fuzz/Cargo.lock too): seconds here, not minutes into clippy.
for manifest in Cargo.toml "${others[@]}"; do
    cargo metadata --manifest-path "$manifest" --locked --format-version 1 >/dev/null ||
        { echo "$manifest: its Cargo.lock is out of date: run cargo metadata --manifest-path $manifest, and commit it" >&2; exit 1; }
done

step "seams"
# What replicas share is a trait of the vocabulary crate: the store that implements it
# builds without an HTTP stack. (No public function gives a String as its error: the
# seams test of the workspace checks that.)
if cargo tree -p wasmgate-store -e normal --locked --prefix none | grep -E '^(axum|hyper) '; then
    echo "wasmgate-store depends on axum or hyper: the traits it implements belong in wasmgate-core" >&2
    exit 1
fi
# The guard decides on facts alone: no MCP client, sandbox, HTTP stack or socket code
# in what it builds on, so its tests run against fakes.
if cargo tree -p wasmgate-guard -e normal,features --locked --prefix none |
    grep -E '^(wasmgate-client|wasmgate-sandbox|wasmtime|reqwest|hyper|axum) |^tokio feature "net"'; then
    echo "wasmgate-guard depends on a client, the sandbox or network code: move that behind a trait of wasmgate-core" >&2
    exit 1
fi

step "cargo fmt --check"
cargo fmt --all -- --check
for manifest in "${others[@]}"; do
    cargo fmt --manifest-path "$manifest" --all -- --check
done

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
# The guests for wasm32, as host/guests/build.rs builds them: json-text on its own
# (it is no_std, and building it with the others would unify their `std` features
# of serde and wit-bindgen into it), every other member together.
cargo clippy --manifest-path guest-tools/Cargo.toml --workspace --exclude json-text --all-targets --locked \
    --target wasm32-wasip2 --target-dir target/guests -- -D warnings
cargo clippy --manifest-path guest-tools/Cargo.toml -p json-text --lib --locked \
    --target wasm32-wasip2 --target-dir target/guests -- -D warnings
# Natively, every member with its tests (a wasm32 test build of json-text would link std);
# the examples are checked, not linked: a component imports what only WASI provides.
cargo clippy --manifest-path guest-tools/Cargo.toml --workspace --all-targets --locked \
    --target-dir target/guests-native -- -D warnings
cargo clippy --manifest-path examples/formatter-template/Cargo.toml --all-targets --locked \
    --target-dir target/formatter-template -- -D warnings
cargo clippy --manifest-path examples/formatter-template/Cargo.toml --lib --locked --target wasm32-wasip2 \
    --target-dir target/formatter-template -- -D warnings
cargo clippy --manifest-path fuzz/Cargo.toml --all-targets --locked --target-dir target/fuzz-check -- -D warnings

step "the guest logic, natively"
cargo test --manifest-path guest-tools/Cargo.toml --workspace --lib --tests --locked --target-dir target/guests-native

step "the workspace"
cargo test --workspace --locked

step "the installed binary"
# cargo install builds the binary without the features the tests ask of its dependencies;
# host/workspace-hack gives it them, all but tokio's test-util, so only what stands on
# tokio is built a second time here. Anything else means a dependency's features changed.
on_tokio=$(cargo tree --locked -p wasmgate-cli -e normal,build -i tokio --prefix none | sed 's/ (.*//' | sort -u)
# Its output is printed after it, not teed to /dev/stderr: opened anew, that would truncate
# a log file the command writes to.
build=$(cargo build --locked --color never -p wasmgate-cli --bin wasmgate 2>&1 >/dev/null) && status=0 || status=$?
printf '%s\n' "$build" >&2
[ "$status" = 0 ] || exit "$status"
built=$(printf '%s\n' "$build" | sed -n 's/^ *Compiling \([^ ]*\) \(v[^ ]*\).*/\1 \2/p' | sort -u)
twice=$(comm -23 <(printf '%s\n' "$built") <(printf '%s\n' "$on_tokio") | sed '/^$/d')
if [ -n "$twice" ]; then
    echo "built again for the installed binary, with other features than the tests': $(echo $twice)" >&2
    echo "run: cargo install cargo-hakari --locked && cargo hakari generate, and commit host/workspace-hack" >&2
    exit 1
fi
# Installed as the README says (a debug build here, from the artifacts just built), into
# a temporary root, and run from outside the clone.
root=$(mktemp -d "${TMPDIR:-/tmp}/wasmgate-install.XXXXXX")
trap 'rm -rf "$root"' EXIT
cargo install --locked --debug --quiet --path host/cli --root "$root" --target-dir target
WASMGATE_INSTALLED_ROOT="$root" cargo test --workspace --locked --test installed -- --ignored
step "done"
