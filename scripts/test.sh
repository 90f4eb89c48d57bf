#!/usr/bin/env bash
# The whole test suite, as CI runs it: formatting, lints, and every test.
# Installs what it needs first; the guest components are built from source by
# host/guests/build.rs as part of the cargo build.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/install-peers.sh # interop peers (Python mcp SDK, server-everything, Inspector, conformance) into target/peers

echo "== cargo fmt --check" >&2
cargo fmt --all -- --check
(cd guest-tools && cargo fmt --all -- --check)

echo "== cargo clippy" >&2
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo clippy --manifest-path guest-tools/Cargo.toml --workspace --exclude json-text --all-targets --locked \
    --target wasm32-wasip2 --target-dir target/guests -- -D warnings
# json-text is no_std and built on its own (host/guests/build.rs): its component
# for wasm32, and its tests natively (a wasm32 test build would link std).
cargo clippy --manifest-path guest-tools/Cargo.toml -p json-text --lib --locked \
    --target wasm32-wasip2 --target-dir target/guests -- -D warnings
cargo clippy --manifest-path guest-tools/Cargo.toml -p json-text --all-targets --locked \
    --target-dir target/guests-native -- -D warnings

echo "== the guest logic, natively" >&2
cargo test --manifest-path guest-tools/Cargo.toml -p json-text --locked --target-dir target/guests-native
cargo test --manifest-path guest-tools/Cargo.toml -p calendar --locked --target-dir target/guests-native
cargo test --manifest-path guest-tools/Cargo.toml -p calendar-text --locked --target-dir target/guests-native
cargo test --manifest-path guest-tools/Cargo.toml -p invisible-chars --locked --target-dir target/guests-native

echo "== the workspace" >&2
cargo test --workspace --locked
