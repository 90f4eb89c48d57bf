#!/usr/bin/env python3
"""Where a call's CPU goes in `wasmgate serve`: the stage table of docs/PERFORMANCE.md.

Serves the echo-tools component (`tools__echo`) and the stdlib Python server of the
client's tests (`echo__echo`) through a release `wasmgate serve` over stdio, audit `off`,
never spinning before it sleeps (`--spin-us 0`, so that its CPU is the calls' work),
and calls each from a raw JSON-RPC client one call at a time. For each path it measures
the gateway's CPU per call (`/proc/PID/task/*/schedstat`), records its stacks with
`perf record --call-graph dwarf`, and counts each sample in the first stage its stack
names (in the order of STAGES). Prints µs a call: the share of samples times the CPU.

    cargo build --release -p wasmgate-cli --bin wasmgate    # and the guests: any build does
    python3 scripts/stages.py [--seconds 3] [--keep DIR]

Needs `perf` (linux-perf); as root, or with kernel.perf_event_paranoid at most 1.
"""

import argparse
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "host", "client", "tests", "fixtures")

# Each sample is counted in the first stage one of its frames matches.
STAGES = [
    ("instances made ahead", r"prepared::Spare|prepared::after_ready.*instantiate|instantiate_async|prepare_next"),
    ("used stores torn down", r"prepared::retire|Retired|drop_in_place<wasmtime::runtime::store|pagemap"),
    ("the formatter", r"Formatter|format_async|wasmgate_guard::shaping"),
    ("the tool's call, or the upstream's", r"ComponentTool|component_tool|wasmgate_client"),
    ("audit records", r"wasmgate_audit|Guard::record|Guard::note|Access::end"),
    ("the data-flow memory", r"provenance|Provenance|wasmgate_policy::values|wasmgate_policy::scan"),
    ("the guard (policy, screening, bookkeeping)", r"wasmgate_guard|wasmgate_policy"),
    ("the answer written (its write wakes the client)", r"stdio::write|write_all"),
    ("the request read and classified", r"stdio::read|read_line|wasmgate_protocol"),
    ("the server's engine and routing", r"wasmgate_server|wasmgate_gateway"),
    ("epoll and parking", r"epoll|park|Driver::turn"),
]


def gateway_dir(path, component):
    """A reviewed configuration: `echo` (the Python server) and `tools` (the component)."""
    python = sys.executable
    dirs = sorted({os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)})
    with open(os.path.join(path, "wasmgate.toml"), "w") as f:
        f.write(
            'state_dir = "state"\n\n[audit]\ndurability = "off"\n\n[sandbox]\ncache_dir = "cache"\n\n'
            f"[providers.echo]\ncommand = {json.dumps(python)}\n"
            f"args = [{json.dumps(os.path.join(FIXTURES, 'stdio_server.py'))}]\nread_exec = {json.dumps(dirs)}\n\n"
            f"[providers.tools]\ncomponent = {json.dumps(component)}\n"
        )
    with open(os.path.join(path, "policy.toml"), "w") as f:
        f.write(
            f"[providers.echo]\nread_paths = [{json.dumps(FIXTURES)}]\n\n[providers.echo.tools]\necho = \"allow\"\n\n"
            '[providers.tools.tools]\necho = "allow"\n'
        )


def cpu_ns(pid):
    """The CPU time of every thread of `pid` so far."""
    total = 0
    for stat in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(stat) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended
    return total


class Client:
    """A raw JSON-RPC client of an MCP server over stdio (`command`)."""

    def __init__(self, command, env, handshake=True):
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=dict(os.environ, **env), bufsize=0
        )
        self.next_id = 0
        if not handshake:
            return  # a server of the stateless era (2026-07-28), like the test server
        self.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "stages", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.process.stdin.write((json.dumps(message) + "\n").encode())

    def call(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        line = self.process.stdout.readline()
        if not line:
            sys.exit(f"{self.process.args} ended; run it by hand to see why")
        answer = json.loads(line)
        if "error" in answer or answer.get("result", {}).get("isError"):
            sys.exit(f"{method} failed: {answer}")
        return answer

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=30)


def samples(text):
    """The stacks of `perf script` output (blank-line separated), each a list of
    function names, leaf first."""
    for block in text.split("\n\n"):
        stack = [m.group(1) for m in re.finditer(r"^\s*[0-9a-f]+ (.*) \(.*\)$", block, re.M)]
        if stack:
            yield stack


def direct(calls=2000):
    """The median wall time of a call to the Python server called directly: how fast
    this machine is today."""
    client = Client([sys.executable, os.path.join(FIXTURES, "stdio_server.py")], {}, handshake=False)
    latencies = []
    for _ in range(calls):
        started = time.perf_counter()
        client.call("tools/call", {"name": "echo", "arguments": {"text": "hello"}})
        latencies.append(time.perf_counter() - started)
    client.close()
    return statistics.median(latencies[calls // 4 :]) * 1e6


def profile(wasmgate, config, tool, seconds, keep):
    # Without spinning before it sleeps: the CPU counted is the calls' work.
    client = Client([wasmgate, "serve", "--spin-us", "0"], {"WASMGATE_CONFIG": config, "RUST_LOG": "error"})
    calling, calls, latencies = True, [0], []

    def loop():
        while calling:
            started = time.perf_counter()
            client.call("tools/call", {"name": tool, "arguments": {"text": "hello"}})
            latencies.append(time.perf_counter() - started)
            calls[0] += 1

    caller = threading.Thread(target=loop)
    caller.start()
    time.sleep(1.0)  # instances made, caches warm
    pid = client.process.pid
    # The CPU a call without perf, whose sampling costs the process too.
    before_cpu, before_calls = cpu_ns(pid), calls[0]
    time.sleep(seconds)
    cpu = (cpu_ns(pid) - before_cpu) / max(1, calls[0] - before_calls) / 1000
    wall = statistics.median(latencies[before_calls:]) * 1e6
    data = os.path.join(keep, f"{tool}.perf.data")
    recorded = subprocess.run(
        ["perf", "record", "-q", "-F", "2000", "--call-graph", "dwarf,32768", "-p", str(pid), "-o", data, "--", "sleep", str(seconds)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    if recorded.returncode != 0:
        calling = False
        caller.join()
        client.close()
        sys.exit(f"perf record failed (run as root, or set kernel.perf_event_paranoid to 1): {recorded.stderr.strip()}")
    calling = False
    caller.join()
    client.close()
    script = subprocess.run(
        ["perf", "script", "--no-inline", "-i", data, "-F", "comm,ip,sym,dso"], check=True, capture_output=True, text=True
    ).stdout
    stacks = list(samples(script))
    counts = {name: 0 for name, _ in STAGES}
    counts["the rest (guest code perf cannot unwind, the runtime)"] = 0
    patterns = [(name, re.compile(p)) for name, p in STAGES]
    for stack in stacks:
        joined = " | ".join(stack)
        stage = next((name for name, p in patterns if p.search(joined)), "the rest (guest code perf cannot unwind, the runtime)")
        counts[stage] += 1
    return cpu, wall, len(stacks), counts


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wasmgate", default=os.path.join(ROOT, "target", "release", "wasmgate"))
    parser.add_argument("--component", default=os.path.join(ROOT, "target", "guests", "wasm32-wasip2", "release", "echo_tools.wasm"))
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--keep", help="a directory for the perf data (default: a temporary one, removed)")
    args = parser.parse_args()
    for path, what in [(args.wasmgate, "cargo build --release -p wasmgate-cli --bin wasmgate"), (args.component, "any cargo build builds it")]:
        if not os.path.exists(path):
            sys.exit(f"{path} is missing: {what}")
    if not shutil.which("perf"):
        sys.exit("perf is not installed: apt-get install linux-perf")
    work = tempfile.mkdtemp(prefix="wasmgate-stages-")
    try:
        gateway_dir(work, os.path.abspath(args.component))
        config = os.path.join(work, "wasmgate.toml")
        review = subprocess.run(
            [args.wasmgate, "review", "--yes"], env=dict(os.environ, WASMGATE_CONFIG=config), capture_output=True, text=True
        )
        if review.returncode != 0:
            sys.exit(f"review failed: {review.stderr}")
        keep = args.keep or work
        os.makedirs(keep, exist_ok=True)
        results = {tool: profile(args.wasmgate, config, tool, args.seconds, keep) for tool in ["tools__echo", "echo__echo"]}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("| µs a call (share of samples x CPU per call) | WASM tool | stdio upstream |")
    print("|---|---|---|")
    wasm, stdio = results["tools__echo"], results["echo__echo"]
    for stage in wasm[3]:
        row = [f"{r[3][stage] / max(1, r[2]) * r[0]:.0f}" for r in (wasm, stdio)]
        print(f"| {stage} | {row[0]} | {row[1]} |")
    print(f"| on a CPU, in all | {wasm[0]:.0f} | {stdio[0]:.0f} |")
    print(f"\nsamples: {wasm[2]} / {stdio[2]}; median wall time a call: {wasm[1]:.0f} / {stdio[1]:.0f} µs")
    print(f"the Python server called directly, for scale: {direct():.0f} µs a call")


if __name__ == "__main__":
    main()
