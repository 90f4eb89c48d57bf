#!/usr/bin/env python3
"""An MCP stdio server for the functions of ONE AgentDojo tool module.

    tools_server.py --suite workspace --module email_client --scenario /dir/scenario.json
                    [--benchmark-version v1.2.2]

Serves the functions of the module (agentdojo/default_suites/v1/tools/<module>.py; of
workspace: email_client, calendar_client, cloud_drive_client; of slack: slack, web) with the input schemas AgentDojo's own function definitions give (the pydantic
parameter models of agentdojo.functions_runtime), on the environment of the scenario
file: the replay (scripts/agentdojo/replay.py) writes it before each scenario, and this
server loads the environment anew, `suite.load_and_inject_default_environment(
injections)`, whenever the file changed (mtime, size and inode, checked at each call),
so each scenario's calls start from a fresh environment. Before any scenario file there
is, the environment has no injections.

Results are text, as AgentDojo shows them to a model (`tool_result_to_str`, its YAML
dump); a function's error is a result with `isError` and AgentDojo's error text
(`ValidationError: ...`, `ValueError: ...`).

The protocol is newline-delimited JSON-RPC 2.0 on stdin/stdout: initialize,
notifications/initialized, ping, tools/list, tools/call. Nothing but protocol lines is
written to stdout; logs go to stderr. Needs AgentDojo (scripts/install-peers.sh
agentdojo) and the standard library only.
"""

import argparse
import json
import logging
import os
import sys

PROTOCOL_VERSIONS = ("2025-06-18", "2025-11-25")
DEFAULT_PROTOCOL_VERSION = "2025-06-18"

log = logging.getLogger("tools_server")


def module_functions(suite, module):
    """The suite's functions defined in the tool module, in the suite's order."""
    return [f for f in suite.tools if f.run.__module__.rsplit(".", 1)[-1] == module]


def tool_definition(function):
    schema = function.parameters.model_json_schema()
    return {"name": function.name, "description": function.description, "inputSchema": schema}


def use_libyaml():
    """AgentDojo parses the environment with PyYAML's pure-Python loader: libyaml's reads
    the same documents three times faster (replay.py does the same)."""
    import yaml

    if getattr(yaml, "__with_libyaml__", False):
        yaml.safe_load = lambda stream: yaml.load(stream, Loader=yaml.CSafeLoader)


class Server:
    def __init__(self, suite_name, module, version, scenario_path):
        # Imported here so that `--help` works without AgentDojo.
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime
        from agentdojo.task_suite.load_suites import get_suite

        use_libyaml()
        self.tool_result_to_str = tool_result_to_str
        self.suite = get_suite(version, suite_name)
        self.version = version
        self.functions = module_functions(self.suite, module)
        if not self.functions:
            modules = sorted({f.run.__module__.rsplit(".", 1)[-1] for f in self.suite.tools})
            raise SystemExit(
                f"tools_server: suite {suite_name} has no functions in module {module}: one of {', '.join(modules)}"
            )
        self.runtime = FunctionsRuntime(self.functions)
        self.scenario_path = scenario_path
        self.seen = None  # (mtime_ns, size, inode) of the scenario file the environment is from
        self.env = None
        self.scenario = None

    def environment(self):
        """The scenario's environment, loaded anew when the scenario file changed."""
        try:
            st = os.stat(self.scenario_path)
            key = (st.st_mtime_ns, st.st_size, st.st_ino)
        except FileNotFoundError:
            key = None
        if self.env is not None and key == self.seen:
            return self.env
        scenario = {}
        if key is not None:
            with open(self.scenario_path, encoding="utf-8") as f:
                scenario = json.load(f)
            if scenario.get("suite") != self.suite.name or scenario.get("benchmark_version") != self.version:
                raise RuntimeError(
                    f"the scenario is for {scenario.get('suite')} {scenario.get('benchmark_version')}, "
                    f"this server serves {self.suite.name} {self.version}"
                )
        injections = scenario.get("injections") or {}
        env = self.suite.load_and_inject_default_environment(injections)
        user_task = scenario.get("user_task")
        if user_task:
            env = self.suite.get_user_task_by_id(user_task).init_environment(env)
        self.env, self.seen, self.scenario = env, key, scenario
        log.info("environment loaded: %s / %s (%d injections)", user_task, scenario.get("injection_task"), len(injections))
        return env

    def call(self, params):
        name = params.get("name")
        arguments = params.get("arguments") or {}
        if name not in self.runtime.functions:
            raise KeyError(name)
        if not isinstance(arguments, dict):
            return text_result("ValidationError: the arguments must be an object", True)
        env = self.environment()
        result, error = self.runtime.run_function(env, name, arguments)
        if error is not None:
            return text_result(error, True)
        return text_result(self.tool_result_to_str(result), False)

    def handle(self, message):
        method = message.get("method")
        params = message.get("params") or {}
        if method == "initialize":
            asked = params.get("protocolVersion")
            version = asked if asked in PROTOCOL_VERSIONS else DEFAULT_PROTOCOL_VERSION
            return {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": f"agentdojo-{self.suite.name}", "version": "0.1.35"},
                "instructions": "AgentDojo tools, replayed by scripts/agentdojo/replay.py",
            }
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool_definition(f) for f in self.functions]}
        if method == "tools/call":
            try:
                return self.call(params)
            except KeyError:
                raise RpcError(-32602, f"Unknown tool: {params.get('name')}")
        raise RpcError(-32601, f"Method not found: {method}")


class RpcError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def text_result(text, is_error):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


# The protocol stream: stdout as the process got it. `sys.stdout` itself is pointed at
# stderr in main(), so that whatever a library prints never reaches the protocol.
PROTOCOL = sys.stdout


def send(obj):
    PROTOCOL.write(json.dumps(obj, ensure_ascii=False, default=str) + "\n")
    PROTOCOL.flush()


def serve(server):
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            message = json.loads(line)
        except json.JSONDecodeError as e:
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": f"Parse error: {e}"}})
            continue
        if not isinstance(message, dict) or "method" not in message:
            # A response to nothing we asked, or garbage: nothing to answer.
            if isinstance(message, dict) and "id" in message and "method" not in message:
                continue
            send({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}})
            continue
        if "id" not in message:
            continue  # a notification: notifications/initialized, notifications/cancelled, ...
        try:
            send({"jsonrpc": "2.0", "id": message["id"], "result": server.handle(message)})
        except RpcError as e:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": e.code, "message": e.message}})
        except Exception as e:  # a bug here, or a scenario file that cannot be read: the call fails
            log.exception("%s failed", message.get("method"))
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32603, "message": f"{type(e).__name__}: {e}"}})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--suite", required=True, help="an AgentDojo suite: workspace, slack, ...")
    parser.add_argument("--module", required=True, help="the suite's tool module to serve: email_client, slack, ...")
    parser.add_argument("--scenario", required=True, help="the scenario file the replay writes")
    parser.add_argument("--benchmark-version", default="v1.2.2")
    args = parser.parse_args()
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("TOOLS_SERVER_LOG", "WARNING").upper(),
        format=f"tools_server[{args.module}] %(levelname)s %(message)s",
    )
    sys.stdout = sys.stderr
    serve(Server(args.suite, args.module, args.benchmark_version, args.scenario))


if __name__ == "__main__":
    main()
