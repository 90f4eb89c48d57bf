#!/usr/bin/env bash
# The main job: the calendar scenario end to end. An untrusted calendar MCP server
# (examples/calendar/server.py, spawned confined) and the WASM calendar component sit
# behind the gateway's policy; a scripted agent queries, gets the agenda rendered by a
# formatter component in the sandbox with an injected instruction flagged, tries to
# delete (denied by policy) and to create (asked, and denied: nobody is present); the
# audit log is verified at the end. Installs what it needs first; safe to run again
# (the demo's state, target/calendar-demo/, is fresh on every run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
if ! command -v python3 >/dev/null; then
    echo "demo: installing python3 (the untrusted calendar server is a Python script)" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq python3
fi
# The demo, and the wasmgate CLI its output refers to (review, audit verify).
cargo build --quiet --locked -p wasmgate-example-calendar -p wasmgate-cli
target/debug/calendar-demo "$@"
