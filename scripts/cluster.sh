#!/usr/bin/env bash
# The cluster of docs/DEPLOY.md, end to end on this machine: a Redis store, nginx with
# deploy/nginx/wasmgate.conf, and three replicas of `wasmgate serve --http`, all on
# loopback. 64 clients (half 2026-07-28, half handshake era) make 50 calls each through
# nginx while one replica is killed (SIGKILL) and started again; the test asserts that
# every call is accounted for, that no audit record is lost (`wasmgate audit verify
# --store` over every replica's log), that an approval state issued by one replica is
# redeemed by another exactly once, and that a budget holds across the replicas. Then
# the sizing runs: calls/s and latency through nginx with one, two and three replicas
# (the table in docs/DEPLOY.md). Everything it starts is stopped when each test ends.
# The suite (scripts/test.sh) runs the same test cut down: two replicas, ten calls each.
#
#   scripts/cluster.sh                    # debug build
#   CLUSTER_RELEASE=1 scripts/cluster.sh  # release build (the figures in docs/DEPLOY.md)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
scripts/install-peers.sh cluster
profile=()
if [[ -n "${CLUSTER_RELEASE:-}" ]]; then
    profile=(--release)
fi
export WASMGATE_CLUSTER_REPLICAS="${WASMGATE_CLUSTER_REPLICAS:-3}"
export WASMGATE_CLUSTER_CALLS="${WASMGATE_CLUSTER_CALLS:-50}"
echo "cluster: building (the first build compiles wasmtime: minutes on two cores)" >&2
cargo test --locked "${profile[@]}" -p wasmgate-cli --test cluster --no-run 2>&1 | tail -1 >&2
log=target/cluster.log
status=0
# One at a time: the nginx file's ports are fixed.
cargo test --locked "${profile[@]}" -p wasmgate-cli --test cluster -- --include-ignored --test-threads=1 --nocapture >"$log" 2>&1 ||
    status=$?
grep -E '^(cluster:|test .* \.\.\. |test result)' "$log" || true
echo
echo "Through nginx, 64 clients (both eras), no faults:"
echo "| replicas | calls | calls/s | p50 ms | p99 ms |"
echo "|---|---|---|---|---|"
grep -E '^\| [0-9]' "$log" || true
if [ "$status" -ne 0 ]; then
    echo "cluster: FAILED; the whole output is in $log" >&2
    grep -E -A8 'panicked' "$log" >&2 || tail -40 "$log" >&2
fi
exit "$status"
