#!/usr/bin/env bash
# The load tests, too long for the test suite: 64 concurrent
# HTTP clients against `wasmgate serve --http` on loopback (3,200 calls; p50, p99,
# calls/s, the gateway's memory and open files before and after), and 10,000
# sequential calls over stdio (no growth in memory or open files). Both are
# `#[ignore]`d tests in host/cli/tests/load.rs; they print their figures, which go
# in docs/PERFORMANCE.md ("Load").
#
#   scripts/load.sh              # debug build
#   LOAD_RELEASE=1 scripts/load.sh   # release build (faster figures, longer build)
set -euo pipefail
cd "$(dirname "$0")/.."

profile=()
if [[ -n "${LOAD_RELEASE:-}" ]]; then
    profile=(--release)
fi

cargo test -p wasmgate-cli "${profile[@]}" --test load -- --ignored --nocapture --test-threads 1
