#!/usr/bin/env bash
# Installs what building wasmgate needs beyond the Rust toolchain itself.
# Idempotent: quick when everything is already there.
set -euo pipefail

if ! rustup target list --installed | grep -qx wasm32-wasip2; then
    echo "setup: installing the wasm32-wasip2 Rust target (guest components are built for it)" >&2
    rustup target add wasm32-wasip2
fi
