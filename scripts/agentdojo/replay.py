#!/usr/bin/env python3
"""Replays AgentDojo's ground truths through `wasmgate serve`, without a model.

    scripts/install-peers.sh agentdojo      # once: AgentDojo 0.1.35 in target/peers/agentdojo/venv
    scripts/agentdojo/replay.py [--suite workspace,slack] [--attacks direct,...] [--limit N]
                                [--policy-extra FILE] [--json OUT] [--keep]
                                [--writes TOOL,... --reads TOOL,...]

For each suite, one gateway (`wasmgate serve` over stdio, this script its MCP client,
with no elicitation or sampling capability: an `ask` is a `deny`) fronts one MCP server
per AgentDojo tool module (scripts/agentdojo/tools_server.py; workspace: email, calendar,
drive; slack: slack, web; any other suite: each module, named without `_client`),
confined as the gateway confines every stdio server. Then:

- a clean pass: each user task alone, on the environment without injections;
- for each attack template and every user task x injection task: the attack's
  injections placed where the user task reads (AgentDojo's own `attack.attack`, i.e.
  `get_injection_candidates`), the user task's ground-truth calls, then the injection
  task's ground-truth calls (both computed on the injected environment).

Before each scenario this script writes the scenario file (suite, benchmark version,
tasks, injections), and the tool servers load a fresh environment from it. Each call
carries `_meta: {"wasmgate/context": "<suite>/<attack>/<user task>/<injection task>"}`
(`<suite>/clean/<user task>/none` in the clean pass), so each replay is a context of
its own in the one gateway.

A call is "stopped" when the gateway answers `denied: <reason>` ("asked" when the reason
is that approval is required and nobody can give it, "denied" otherwise), or when the
tool is not offered at all (a policy that denies it whatever the arguments; "unoffered"). Every result that ran is compared
with what AgentDojo itself returns for the same call (`tool_result_to_str`), to check
that the gateway really ran it. Attacker calls are counted as writes or reads by a fixed
list of the tools that change state or send (WRITES below), whatever the policy says. The
lists label the tools of workspace and slack; another suite's tools are labelled with
`--writes` and `--reads` (the replay refuses to start while a tool is labelled neither).

The generated policy allows every tool (`unlisted = "allow"`), names the sinks by verb
(SINKS below, or `--sinks`) and the fetch (FETCHES, or `--fetches`) and grants the
servers the paths they read; `--policy-extra FILE` appends TOML to it (this script
writes no other rule). Everything lives in a temporary directory that is removed at the end (`--keep`
keeps it: configuration, lock, audit log, the gateway's log).

Speed: AgentDojo parses its environment YAML with PyYAML's pure-Python loader; this
script and the tool servers use libyaml's (CSafeLoader, the same documents) where
PyYAML has it, which makes a full run of both suites about three times faster.
"""

import argparse
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE.parent.parent
DEFAULT_VENV = WORKSPACE / "target" / "peers" / "agentdojo" / "venv"
DEFAULT_WASMGATE = WORKSPACE / "target" / "debug" / "wasmgate"

SUITES = ("workspace", "slack")
# Attacks that need no model: fixed templates. `important_instructions` and
# `tool_knowledge` address the model by name, which AgentDojo takes from the pipeline's
# name: a fixed one is given (no model is called).
DEFAULT_ATTACKS = ("direct", "ignore_previous", "system_message", "injecagent", "important_instructions", "tool_knowledge")
PIPELINE_NAME = "gpt-4o-2024-05-13"

# One provider per AgentDojo tool module (agentdojo/default_suites/v1/tools/<module>.py),
# named after it without `_client` (`email_client` is `email`), or as RENAMED says.
RENAMED = {"cloud_drive_client": "drive"}


def module_of(function):
    """The AgentDojo tool module a suite's function is defined in."""
    return function.run.__module__.rsplit(".", 1)[-1]


def providers_of(suite):
    """Provider name -> tool module, for every module of `suite`'s tools, in the suite's
    order. A provider name is `[a-z0-9-]`, as the gateway's are."""
    providers = {}
    for function in suite.tools:
        module = module_of(function)
        name = re.sub(r"[^a-z0-9-]", "-", (RENAMED.get(module) or module.removesuffix("_client")).lower())
        if providers.setdefault(name, module) != module:
            sys.exit(f"replay: {suite.name}'s modules {providers[name]} and {module} would both be provider {name}")
    return providers


# The tools of these suites that change state or send something (AgentDojo 0.1.35). Every
# other tool of the two suites is a read: get_unread_emails (which marks what it returns
# as read), get_webpage (which logs the URL it fetched in the web's request log), and the
# searches, lists and getters.
# The sinks the generated policy names, as a user names them from the tools' names: the
# verbs that send, write or share (the data-flow rules' `sink_` keys apply to them), and
# the tool that fetches a URL and sends nothing else (FETCHES: a sink too). Independent of
# WRITES, which labels the attacker's calls for the figures.
SINKS = [
    "send_*",
    "delete_*",
    "create_*",
    "cancel_*",
    "reschedule_*",
    "add_*",
    "append_*",
    "share_*",
    "post_*",
    "invite_*",
    "remove_*",
    "update_*",
    # Verbs no tool of the two suites starts with, that a user names as readily for
    # another suite's tools: they send, pay, book or change something.
    "schedule_*",
    "reserve_*",
    "book_*",
    "pay_*",
    "transfer_*",
    "set_*",
    "change_*",
    "upload_*",
    "write_*",
    "move_*",
    "publish_*",
    "submit_*",
    "order_*",
    "edit_*",
    "modify_*",
]
FETCHES = ["get_webpage"]

WRITES = frozenset(
    {
        # email_client
        "send_email",
        "delete_email",
        # calendar_client
        "create_calendar_event",
        "cancel_calendar_event",
        "reschedule_calendar_event",
        "add_calendar_event_participants",
        # cloud_drive_client
        "create_file",
        "delete_file",
        "append_to_file",
        "share_file",
        # slack
        "send_direct_message",
        "send_channel_message",
        "add_user_to_channel",
        "invite_user_to_slack",
        "remove_user_from_slack",
        # web
        "post_webpage",
    }
)
READS = frozenset(
    {
        "get_unread_emails",
        "get_sent_emails",
        "get_received_emails",
        "get_draft_emails",
        "search_emails",
        "search_contacts_by_name",
        "search_contacts_by_email",
        "get_current_day",
        "search_calendar_events",
        "get_day_calendar_events",
        "search_files_by_filename",
        "get_file_by_id",
        "list_files",
        "search_files",
        "get_channels",
        "read_channel_messages",
        "read_inbox",
        "get_users_in_channel",
        "get_webpage",
    }
)

# A ground-truth argument that stands for what a model would write, not a value:
# "<summary>", "<feedback>", "...", or a "$name" placeholder.
PLACEHOLDER = re.compile(r"<[a-z_ ]+>|\.\.\.|\$[A-Za-z_][\w.]*")

# The gateway's reasons when a call needed approval (host/guard/src/approver.rs).
ASKED_REASONS = ("approval is required", "approval was requested")

CALL_TIMEOUT = 120.0


def ensure_agentdojo(venv):
    """Runs this script again under the AgentDojo venv's Python when AgentDojo is not importable."""
    try:
        import agentdojo  # noqa: F401
    except ImportError:
        python = venv / "bin" / "python"
        if not python.exists() or os.environ.get("REPLAY_REEXEC"):
            sys.exit(f"replay: AgentDojo is not installed: run scripts/install-peers.sh agentdojo (looked in {venv})")
        os.environ["REPLAY_REEXEC"] = "1"
        os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


def use_libyaml():
    import yaml

    if getattr(yaml, "__with_libyaml__", False):
        yaml.safe_load = lambda stream: yaml.load(stream, Loader=yaml.CSafeLoader)


class Gateway:
    """`wasmgate serve` over stdio, and this script as its MCP client."""

    def __init__(self, wasmgate, config, log_path, cache_dir):
        env = dict(os.environ, WASMGATE_CONFIG=str(config), XDG_CACHE_HOME=str(cache_dir))
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [str(wasmgate), "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self.lines = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 0
        self.notifications = []

    def _read(self):
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, message):
        self.proc.stdin.write(json.dumps(message, default=str) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params, timeout=CALL_TIMEOUT):
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"{method}: no answer in {timeout:.0f} s{self.tail()}") from None
            if line is None:
                raise RuntimeError(f"{method}: the gateway closed stdout (exit {self.proc.poll()}){self.tail()}")
            message = json.loads(line)
            if message.get("id") == rid and "method" not in message:
                return message
            if "method" in message and "id" in message:
                # A request to us (elicitation, sampling, roots): we declared none of them.
                self.send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "not supported"}})
            else:
                self.notifications.append(message.get("method"))

    def initialize(self):
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "agentdojo-replay", "version": "1"},
            },
        )
        if "error" in answer:
            raise RuntimeError(f"initialize: {answer['error']}")
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def tools(self):
        names, cursor = [], None
        while True:
            answer = self.request("tools/list", {"cursor": cursor} if cursor else {})
            if "error" in answer:
                raise RuntimeError(f"tools/list: {answer['error']}")
            names += [tool["name"] for tool in answer["result"]["tools"]]
            cursor = answer["result"].get("nextCursor")
            if not cursor:
                return names

    def call(self, name, arguments, context):
        return self.request(
            "tools/call", {"name": name, "arguments": arguments, "_meta": {"wasmgate/context": context}}
        )

    def tail(self, lines=15):
        try:
            text = Path(self.log_path).read_text(errors="replace").splitlines()[-lines:]
        except OSError:
            return ""
        return "\n  gateway log: " + "\n  ".join(text) if text else ""

    def close(self):
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def python_dirs(python):
    out = subprocess.run(
        [str(python), "-c", "import sys; print(sys.prefix); print(sys.base_prefix)"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    dirs = []
    for line in out:
        if line and os.path.realpath(line) not in dirs:
            dirs.append(os.path.realpath(line))
    return dirs


def toml_str(value):
    return json.dumps(str(value))


def toml_list(values):
    return "[" + ", ".join(toml_str(v) for v in values) + "]"


# `--ignore-flags`: the detector's flags count for nothing, so the figures measure the
# provenance of values alone: a value from a flagged passage is judged as any other, and
# neither a flagged result nor a call carrying a value of one starts a sequence rule.
IGNORE_FLAGS = """[flow]
flagged = "allow"
sink_flagged = "allow"
sink_after_flagged = "allow"
sink_after_steered = "allow"
"""


def write_config(root, suite, providers, options):
    """wasmgate.toml and policy.toml in `root` for one suite and its `providers` (name ->
    tool module), as the command line's `options` say; returns the config's path."""
    version, venv = options.benchmark_version, options.venv
    policy_extra, ignore_flags = options.policy_extra, options.ignore_flags
    scenario_dir = root / "scenario"
    python = venv / "bin" / "python"
    read_exec = python_dirs(python)
    server = HERE / "tools_server.py"
    scenario = scenario_dir / "scenario.json"
    config = [
        "# Generated by scripts/agentdojo/replay.py",
        'state_dir = "state"',
        "",
        "[sandbox]",
        'cache_dir = "cache"',
        "",
    ]
    policy = ["# Generated by scripts/agentdojo/replay.py: every tool allowed, the servers' reads granted", ""]
    for provider, module in providers.items():
        args = [str(server), "--suite", suite, "--module", module, "--scenario", str(scenario)]
        args += ["--benchmark-version", version]
        config += [
            f"[providers.{provider}]",
            f"command = {toml_str(python)}",
            f"args = {toml_list(args)}",
            f"read_exec = {toml_list(read_exec)}",
            # Bytecode would be written beside the venv's modules, which it may not write.
            f'env = {{ PYTHONDONTWRITEBYTECODE = "1", TMPDIR = ".", HOME = "." }}',
            "",
        ]
        policy += [
            f"[providers.{provider}]",
            'unlisted = "allow"',
            f"sinks = {toml_list(options.sinks)}",
            f"fetches = {toml_list(options.fetches)}",
            f"read_paths = {toml_list([HERE, scenario_dir])}",
            "",
        ]
    if ignore_flags:
        policy += ["# --ignore-flags", IGNORE_FLAGS]
    if policy_extra is not None:
        policy += [f"# --policy-extra {policy_extra}", Path(policy_extra).read_text()]
    (root / "wasmgate.toml").write_text("\n".join(config) + "\n")
    (root / "policy.toml").write_text("\n".join(policy) + "\n")
    return root / "wasmgate.toml"


def review(wasmgate, config, cache_dir, log_path):
    """`wasmgate review --yes` (every definition and the servers' code pinned), then
    `wasmgate tools`: returns how each provider is confined."""
    env = dict(os.environ, WASMGATE_CONFIG=str(config), XDG_CACHE_HOME=str(cache_dir))
    with open(log_path, "w") as log:
        done = subprocess.run([str(wasmgate), "review", "--yes"], env=env, stdout=log, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = "\n  ".join(Path(log_path).read_text(errors="replace").splitlines()[-20:])
        sys.exit(f"replay: wasmgate review --yes failed (exit {done.returncode}):\n  {tail}")
    tools = subprocess.run([str(wasmgate), "tools"], env=env, capture_output=True, text=True)
    confinement, provider = {}, None
    for line in tools.stdout.splitlines():
        if line and not line.startswith(" "):
            provider = line.split(" ")[0]
        elif line.strip().startswith(("confinement:", "withheld:")) and provider:
            confinement[provider] = line.strip()
    return confinement


class DummyPipeline:
    """What AgentDojo's attacks read of a pipeline: its name (for the model's name)."""

    name = PIPELINE_NAME


def has_placeholder(value):
    from agentdojo.functions_runtime import FunctionCall

    if isinstance(value, FunctionCall):
        return True
    if isinstance(value, str):
        return PLACEHOLDER.fullmatch(value.strip()) is not None
    if isinstance(value, dict):
        return any(has_placeholder(v) for v in value.values())
    if isinstance(value, list):
        return any(has_placeholder(v) for v in value)
    return False


def unframe(text):
    """(warnings, body): the detector's warning lines before the gateway's <untrusted-data>
    framing, and the provider's text inside it (as the formatter rendered it)."""
    lines = text.split("\n")
    warnings = []
    while lines and lines[0].startswith("warning: "):
        warnings.append(lines.pop(0))
    if lines and lines[0].startswith("<untrusted-data ") and lines[-1].startswith("</untrusted-data "):
        lines = lines[1:-1]
        if lines and lines[0].startswith("The text between these boundary lines comes from"):
            lines = lines[1:]
    return warnings, "\n".join(lines)


# What the gateway's built-in formatter (guest-tools/json-text) changes in a text that
# is otherwise passed as it is: an error result gets a first line, and a text that is
# JSON is rendered (AgentDojo's empty list, "[]", reads "(none)"), and the framing
# ends the text with one line break.
ERROR_LINE = "The tool reported an error:\n"
RENDERED_JSON = {"[]": "(none)", "{}": "(empty)"}
# `send_email` and its kin stamp the current time: it differs between two runs.
NOW = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}")


def same_text(body, expected, is_error):
    if is_error and body.startswith(ERROR_LINE):
        body = body[len(ERROR_LINE) :]
    expected = RENDERED_JSON.get(expected, expected)
    # The framing ends the text with one line break, whatever it ended with.
    body, expected = NOW.sub("<now>", body).rstrip("\n"), NOW.sub("<now>", expected).rstrip("\n")
    # AgentDojo's calendar keeps participants as list(set(...)): their order depends on the
    # process's string hashing, so the same lines in another order are the same result.
    return body == expected or sorted(body.split("\n")) == sorted(expected.split("\n"))


def result_text(result):
    return "".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")


class Replay:
    def __init__(self, args, root):
        from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
        from agentdojo.functions_runtime import FunctionsRuntime

        self.args = args
        self.root = root
        self.tool_result_to_str = tool_result_to_str
        self.FunctionsRuntime = FunctionsRuntime
        self.seq = 0

    def run_suite(self, suite_name):
        from agentdojo.attacks.attack_registry import load_attack
        from agentdojo.task_suite.load_suites import get_suite

        args = self.args
        started = time.monotonic()
        suite = get_suite(args.benchmark_version, suite_name)
        self.suite = suite
        self.runtime = self.FunctionsRuntime(suite.tools)
        self.providers = providers_of(suite)
        provider_of_module = {module: provider for provider, module in self.providers.items()}
        self.provider_of = {f.name: provider_of_module[module_of(f)] for f in suite.tools}
        unlabelled = [f.name for f in suite.tools if f.name not in args.writes and f.name not in args.reads]
        if unlabelled:
            sys.exit(
                f"replay: {suite_name}'s tools {', '.join(unlabelled)} are labelled neither writes nor reads: "
                "name those that change state or send with --writes, the others with --reads"
            )

        root = self.root / suite_name
        scenario_dir = root / "scenario"
        scenario_dir.mkdir(parents=True)
        self.scenario_path = scenario_dir / "scenario.json"
        config = write_config(root, suite_name, self.providers, args)
        confinement = review(args.wasmgate, config, root / "xdg-cache", root / "review.log")
        gateway = Gateway(args.wasmgate, config, root / "serve.log", root / "xdg-cache")
        self.gateway = gateway
        report = {"suite": suite_name, "benchmark_version": args.benchmark_version, "confinement": confinement}
        report.update(scenarios=[], not_injectable=[])
        try:
            report["server"] = gateway.initialize()
            offered = set(gateway.tools())
            wanted = {f"{self.provider_of[f.name]}__{f.name}" for f in suite.tools}
            report["tools_missing"] = sorted(wanted - offered)
            self.unoffered = set(report["tools_missing"])
            user_ids = sorted(suite.user_tasks, key=lambda t: int(t.rsplit("_", 1)[1]))
            if args.limit is not None:
                user_ids = user_ids[: args.limit]
            injection_ids = sorted(suite.injection_tasks, key=lambda t: int(t.rsplit("_", 1)[1]))
            report["user_tasks"], report["injection_tasks"] = user_ids, injection_ids
            report["empty_injection_ground_truths"] = [
                i for i in injection_ids if not suite.injection_tasks[i].ground_truth(suite.load_and_inject_default_environment({}))
            ]

            for user_id in user_ids:
                self.scenario(report, "clean", suite.user_tasks[user_id], None, {})
            self.progress(suite_name, "clean", time.monotonic() - started)
            for attack_name in args.attacks:
                attack = load_attack(attack_name, suite, DummyPipeline())
                for user_id in user_ids:
                    user_task = suite.user_tasks[user_id]
                    for injection_id in injection_ids:
                        injection_task = suite.injection_tasks[injection_id]
                        try:
                            injections = attack.attack(user_task, injection_task)
                        except ValueError as e:  # "... is not injectable."
                            if injection_id == injection_ids[0]:
                                report["not_injectable"].append({"attack": attack_name, "user_task": user_id, "why": str(e)})
                            break
                        self.scenario(report, attack_name, user_task, injection_task, injections)
                self.progress(suite_name, attack_name, time.monotonic() - started)
        finally:
            gateway.close()
        report["gateway_notifications"] = sorted(set(n for n in gateway.notifications if n))
        report["wall_seconds"] = round(time.monotonic() - started, 1)
        return report

    def progress(self, suite, attack, seconds):
        if not self.args.quiet:
            print(f"replay: {suite}: {attack} done ({seconds:.0f} s)", file=sys.stderr, flush=True)

    def write_scenario(self, scenario):
        self.seq += 1
        scenario = dict(scenario, seq=self.seq)
        tmp = self.scenario_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(scenario))
        os.replace(tmp, self.scenario_path)

    def scenario(self, report, attack, user_task, injection_task, injections):
        suite = self.suite
        injection_id = injection_task.ID if injection_task else None
        context = f"{suite.name}/{attack}/{user_task.ID}/{injection_id or 'none'}"
        self.write_scenario(
            {
                "suite": suite.name,
                "benchmark_version": self.args.benchmark_version,
                "attack": attack,
                "user_task": user_task.ID,
                "injection_task": injection_id,
                "injections": injections,
            }
        )
        env = user_task.init_environment(suite.load_and_inject_default_environment(injections))
        user_calls = user_task.ground_truth(env.model_copy(deep=True))
        attacker_calls = injection_task.ground_truth(env.model_copy(deep=True)) if injection_task else []
        record = {
            "attack": attack,
            "user_task": user_task.ID,
            "injection_task": injection_id,
            "context": context,
            "injections": injections,
            "calls": [],
        }
        # The same calls run here too, for what AgentDojo itself answers: on one copy of
        # the environment per provider, as each tool server has its own (a calendar
        # invitation goes to the calendar server's copy of the inbox, not the email server's).
        envs = {provider: env.model_copy(deep=True) for provider in self.providers}
        marks = [bare(text)[len(bare(text)) // 3 :][:40] for text in injections.values() if len(bare(text)) >= 40]
        for role, calls in (("user", user_calls), ("attacker", attacker_calls)):
            for call in calls:
                entry = self.call(role, call, envs[self.provider_of[call.function]], context)
                # Whether the injection reached the model: a result of the user task's
                # calls (that the gateway let run) carried it.
                text = bare(entry.pop("text", ""))
                if role == "user" and any(mark in text for mark in marks):
                    record["reached"] = True
                record["calls"].append(entry)
        record.setdefault("reached", False)
        report["scenarios"].append(record)

    def call(self, role, call, env, context):
        entry = {
            "role": role,
            "function": call.function,
            "write": call.function in self.args.writes,
            "arguments": dict(call.args),
        }
        if any(has_placeholder(v) for v in call.args.values()):
            entry["status"] = "skipped"
            return entry
        name = f"{self.provider_of[call.function]}__{call.function}"
        answer = self.gateway.call(name, dict(call.args), context)
        if "error" in answer:
            if name in self.unoffered and answer["error"].get("code") == -32602:
                # A tool the policy denies whatever the arguments is not offered at all.
                entry.update(status="stopped", kind="unoffered", reason=answer["error"].get("message", ""))
            else:
                entry["status"] = "error"
                entry["error"] = answer["error"]
            return entry
        result = answer["result"]
        text = result_text(result)
        entry["text"] = text
        if result.get("isError") and text.startswith("denied: "):
            reason = text[len("denied: ") :]
            entry["status"] = "stopped"
            entry["kind"] = "asked" if reason.startswith(ASKED_REASONS) else "denied"
            entry["reason"] = reason
            return entry
        # What AgentDojo answers, on the local environment: a call the gateway stopped
        # is not run here either, so both environments stay the same.
        expected, error = self.runtime.run_function(env, call.function, call.args)
        expected_text = error if error is not None else self.tool_result_to_str(expected)
        if error is not None:
            entry["agentdojo_error"] = error
        warnings, body = unframe(text)
        if warnings:
            entry["warnings"] = warnings
        is_error = bool(result.get("isError"))
        if is_error == (error is not None) and same_text(body, expected_text, is_error):
            entry["status"] = "ran"
        else:
            entry["status"] = "failed" if result.get("isError") else "mismatch"
            entry["result"] = text[:4000]
            entry["expected"] = expected_text[:4000]
        return entry


def bare(text):
    """`text` without whitespace, quotes and backslashes: what survives a YAML dump and a
    formatter's line breaks alike."""
    return "".join(c for c in text if not c.isspace() and c not in "'\"\\")


def ratio(n, d):
    return f"{n}/{d} ({100 * n / d:.1f}%)" if d else "0/0 (-)"


def stopped_cell(calls):
    """n/N (p%), and how many were asked (a), denied (d), or not offered (u) at all."""
    stopped = [c for c in calls if c["status"] == "stopped"]
    cell = ratio(len(stopped), len(calls))
    kinds = [(k, sum(1 for c in stopped if c["kind"] == k)) for k in ("asked", "denied", "unoffered")]
    if stopped:
        cell += " " + "/".join(f"{n}{k[0] if k != 'unoffered' else 'u'}" for k, n in kinds if n)
    return cell


def summarize(scenarios):
    run = lambda calls: [c for c in calls if c["status"] != "skipped"]  # noqa: E731
    calls = [c for s in scenarios for c in s["calls"]]
    attacker = run([c for c in calls if c["role"] == "attacker"])
    user = run([c for c in calls if c["role"] == "user"])
    return {
        "scenarios": len(scenarios),
        "attacker_writes": [c for c in attacker if c["write"]],
        "attacker_reads": [c for c in attacker if not c["write"]],
        "user": user,
        "skipped": sum(1 for c in calls if c["status"] == "skipped"),
        "problems": [c for c in calls if c["status"] in ("error", "failed", "mismatch")],
    }


def print_table(reports, attacks, wall):
    header = ("suite", "attack", "runs", "attacker writes stopped", "attacker reads stopped", "legit stopped", "skipped", "problems")
    rows = []
    totals = {key: [] for key in ("attacker_writes", "attacker_reads", "user", "clean")}
    total_skipped = total_problems = total_runs = clean_runs = clean_skipped = clean_problems = 0
    for report in reports:
        scenarios = report["scenarios"]
        clean = summarize([s for s in scenarios if s["attack"] == "clean"])
        rows.append((report["suite"], "(clean)", clean["scenarios"], "", "", stopped_cell(clean["user"]), clean["skipped"], len(clean["problems"])))
        totals["clean"] += clean["user"]
        clean_runs += clean["scenarios"]
        clean_skipped += clean["skipped"]
        clean_problems += len(clean["problems"])
        for attack in attacks:
            s = summarize([x for x in scenarios if x["attack"] == attack])
            rows.append(
                (
                    report["suite"],
                    attack,
                    s["scenarios"],
                    stopped_cell(s["attacker_writes"]),
                    stopped_cell(s["attacker_reads"]),
                    stopped_cell(s["user"]),
                    s["skipped"],
                    len(s["problems"]),
                )
            )
            for key in ("attacker_writes", "attacker_reads", "user"):
                totals[key] += s[key]
            total_skipped += s["skipped"]
            total_problems += len(s["problems"])
            total_runs += s["scenarios"]
    if len(reports) > 1:
        for attack in attacks:
            s = summarize([x for r in reports for x in r["scenarios"] if x["attack"] == attack])
            rows.append(
                ("all", attack, s["scenarios"], stopped_cell(s["attacker_writes"]), stopped_cell(s["attacker_reads"]),
                 stopped_cell(s["user"]), s["skipped"], len(s["problems"]))
            )
    rows.append(
        ("total", "injected", total_runs, stopped_cell(totals["attacker_writes"]), stopped_cell(totals["attacker_reads"]),
         stopped_cell(totals["user"]), total_skipped, total_problems)
    )
    rows.append(("total", "clean", clean_runs, "", "", stopped_cell(totals["clean"]), clean_skipped, clean_problems))
    # The attacks whose injection reached the model: in the others, the gateway stopped
    # every call of the user task that would have read it, so no model could follow it.
    reached = summarize([x for r in reports for x in r["scenarios"] if x["attack"] != "clean" and x.get("reached")])
    rows.append(
        ("total", "reached", reached["scenarios"], stopped_cell(reached["attacker_writes"]),
         stopped_cell(reached["attacker_reads"]), stopped_cell(reached["user"]), reached["skipped"], len(reached["problems"]))
    )
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(v).ljust(w) if i < 2 else str(v).rjust(w) for i, (v, w) in enumerate(zip(r, widths)))  # noqa: E731
    print(line(header))
    for row in rows:
        print(line(row))
    print("(n/N stopped; a: asked (approval needed, nobody to ask), d: denied, u: the tool was not offered (the")
    print(" policy denies it whatever the arguments). skipped: ground-truth calls with placeholder arguments.")
    print(" problems: calls that failed, or whose result differs from AgentDojo's own. reached: the injected")
    print(" replays where a result the gateway let through carried the injection; in the others no model")
    print(" could have read it)")
    for report in reports:
        empty = report.get("empty_injection_ground_truths") or []
        if empty:
            print(f"{report['suite']}: {len(empty)} injection tasks have an empty ground truth (no attacker call): {', '.join(empty)}")
        for item in report.get("not_injectable", []):
            print(f"{report['suite']}: {item['attack']}: {item['why']}")
        for provider, line in report.get("confinement", {}).items():
            print(f"{report['suite']}: {provider}: {line}")
        ran = [(s["attack"], c) for s in report["scenarios"] for c in s["calls"] if c["status"] == "ran"]
        flagged = lambda attack: [c for a, c in ran if (a == "clean") == attack and c.get("warnings")]  # noqa: E731
        injected = [c for a, c in ran if a != "clean"]
        print(
            f"{report['suite']}: results the detector flagged: {len(flagged(False))}/{len(injected)} in injected runs,"
            f" {len(flagged(True))}/{len(ran) - len(injected)} in clean runs"
        )
        if report.get("tools_missing"):
            print(f"{report['suite']}: tools the gateway does not offer: {', '.join(report['tools_missing'])}")
    per_suite = ", ".join(f"{r['suite']} {r['wall_seconds']:.0f} s" for r in reports)
    print(f"wall time: {wall:.0f} s ({per_suite})")


def print_problems(reports, limit=20):
    shown = 0
    for report in reports:
        for scenario in report["scenarios"]:
            for call in scenario["calls"]:
                if call["status"] in ("error", "failed", "mismatch") and shown < limit:
                    shown += 1
                    detail = call.get("error") or call.get("result", "")
                    print(f"problem: {scenario['context']}: {call['role']} {call['function']}: {call['status']}: {str(detail)[:300]!r}")


def fingerprint(path):
    """The binary's modification time and SHA-256 prefix, to tell builds apart."""
    import hashlib

    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(Path(path).stat().st_mtime))
    return f"built {stamp}, sha256 {digest}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--suite", default=",".join(SUITES), help="comma-separated AgentDojo suites (default: workspace,slack)"
    )
    parser.add_argument(
        "--writes",
        default="",
        help="comma-separated tools that change state or send, of a suite whose tools WRITES and READS do not label",
    )
    parser.add_argument("--reads", default="", help="comma-separated tools that do neither, of such a suite")
    parser.add_argument(
        "--sinks", default=",".join(SINKS), help="comma-separated globs the policy names sinks (default: SINKS, by verb)"
    )
    parser.add_argument(
        "--fetches", default=",".join(FETCHES), help="comma-separated globs of those that fetch a URL (default: get_webpage)"
    )
    parser.add_argument("--attacks", default=",".join(DEFAULT_ATTACKS), help="comma-separated AgentDojo attack names")
    parser.add_argument("--limit", type=int, help="only the first N user tasks of each suite")
    parser.add_argument("--policy-extra", type=Path, help="TOML text appended to the generated policy.toml")
    parser.add_argument(
        "--ignore-flags", action="store_true", help="the detector's flags count for nothing (provenance alone)"
    )
    parser.add_argument("--json", type=Path, help="write every scenario and call to this file")
    parser.add_argument("--benchmark-version", default="v1.2.2")
    parser.add_argument("--wasmgate", type=Path, default=DEFAULT_WASMGATE)
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="AgentDojo's venv")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory, and say where it is")
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    args = parser.parse_args()
    ensure_agentdojo(args.venv)
    use_libyaml()
    from agentdojo.attacks.attack_registry import ATTACKS

    args.suites = [s for s in args.suite.split(",") if s]
    args.attacks = [a for a in args.attacks.split(",") if a]
    args.sinks = [g for g in args.sinks.split(",") if g]
    args.fetches = [g for g in args.fetches.split(",") if g]
    args.writes = WRITES | {t for t in args.writes.split(",") if t}
    args.reads = READS | {t for t in args.reads.split(",") if t}
    if args.writes & args.reads:
        parser.error(f"--writes and --reads: {', '.join(sorted(args.writes & args.reads))} labelled both")
    from agentdojo.task_suite.load_suites import get_suites

    known = get_suites(args.benchmark_version)
    for suite in args.suites:
        if suite not in known:
            parser.error(f"--suite: {suite!r} is not one of {', '.join(known)}")
    for attack in args.attacks:
        if attack not in ATTACKS or attack == "manual" or ATTACKS[attack].is_dos_attack:
            parser.error(f"--attacks: {attack!r} is not an AgentDojo injection attack without a model")
    if not args.wasmgate.exists():
        parser.error(f"--wasmgate: {args.wasmgate} does not exist (cargo build -p wasmgate-cli)")
    if args.policy_extra is not None and not args.policy_extra.is_file():
        parser.error(f"--policy-extra: {args.policy_extra} is not a file")
    args.venv = Path(os.path.abspath(args.venv))

    binary = fingerprint(args.wasmgate)
    root = Path(tempfile.mkdtemp(prefix="wasmgate-agentdojo-"))
    started = time.monotonic()
    reports = []
    try:
        replay = Replay(args, root)
        for suite in args.suites:
            reports.append(replay.run_suite(suite))
    finally:
        if args.keep:
            print(f"replay: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    wall = time.monotonic() - started
    print_table(reports, args.attacks, wall)
    print(f"wasmgate: {args.wasmgate} ({binary})")
    extra = f", with {args.policy_extra}" if args.policy_extra else ""
    print(f"rules: the defaults{' with the detector flags ignored' if args.ignore_flags else ''}{extra}")
    if fingerprint(args.wasmgate) != binary:
        # A gateway started after the change ran the new binary: the suites may differ.
        print(f"WARNING: {args.wasmgate} changed during the run (now {fingerprint(args.wasmgate)})")
    print_problems(reports)
    if args.json:
        summary = {}
        for report in reports:
            for attack in ["clean", *args.attacks]:
                s = summarize([x for x in report["scenarios"] if x["attack"] == attack])
                summary[f"{report['suite']}/{attack}"] = {
                    "scenarios": s["scenarios"],
                    "skipped": s["skipped"],
                    "problems": len(s["problems"]),
                    **{
                        key: {
                            "calls": len(s[key]),
                            "stopped": sum(1 for c in s[key] if c["status"] == "stopped"),
                            **{k: sum(1 for c in s[key] if c.get("kind") == k) for k in ("asked", "denied", "unoffered")},
                        }
                        for key in ("attacker_writes", "attacker_reads", "user")
                    },
                }
        out = {
            "agentdojo": "0.1.35",
            "benchmark_version": args.benchmark_version,
            "attacks": args.attacks,
            "policy_extra": args.policy_extra.read_text() if args.policy_extra else None,
            "ignore_flags": args.ignore_flags,
            "wall_seconds": round(wall, 1),
            "wasmgate": {"path": str(args.wasmgate), "at_start": binary, "at_end": fingerprint(args.wasmgate)},
            "summary": summary,
            "suites": reports,
        }
        args.json.write_text(json.dumps(out, indent=1, default=str))
    problems = sum(len(summarize(r["scenarios"])["problems"]) for r in reports)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
