#!/usr/bin/env bash
# The main job: the calendar scenario end to end, in three acts.
# First act: an untrusted calendar MCP server (examples/calendar/server.py, spawned
# confined) and the WASM calendar component sit behind the gateway's policy; a scripted
# agent queries, gets the agenda rendered by a formatter component in the sandbox with
# an injected instruction flagged, tries to delete (denied by policy) and to create
# (asked, and denied: nobody is present).
# Second act: someone else's CalDAV MCP server (caldav-mcp 0.10.0 from npm) in front of a
# real CalDAV server (Radicale 3.9.0 from PyPI, on loopback), confined and granted that
# one host: the injected instruction's connection elsewhere is refused.
# Third act: someone else's PostgreSQL MCP server (server-postgres 0.6.2 from npm) on a
# real PostgreSQL (the machine's, on loopback), through `wasmgate serve` as any MCP
# client runs it: the injected row is flagged, the write it asks for refused, and a
# second PostgreSQL and another host out of reach, each attempt recorded.
# Each act's audit log is verified at the end. Installs what it needs first; safe to run
# again (the demo's state, target/calendar-demo/, is fresh on every run).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
if ! command -v python3 >/dev/null; then
    echo "demo: installing python3 (the untrusted calendar server is a Python script)" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq python3
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "demo: installing Node.js and npm (the second and third acts' MCP servers run on Node)" >&2
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo=sudo
    $sudo apt-get update -qq && $sudo apt-get install -y -qq nodejs npm
fi
echo "demo: the peers: Radicale (PyPI), caldav-mcp and server-postgres (npm), pinned, into target/peers/;" >&2
echo "demo: PostgreSQL from Debian's packages" >&2
scripts/install-peers.sh demo
# The demo, and the wasmgate CLI its output refers to (review, audit verify).
echo "demo: building the demo and the wasmgate CLI (the first build compiles wasmtime: minutes on two cores)" >&2
cargo build --locked -p wasmgate-example-calendar -p wasmgate-cli
target/debug/calendar-demo "$@"
