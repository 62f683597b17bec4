"""The fixtures: loading and selecting cases.

Each file of `cases/` (servers), `clients/` and `schemas/` holds `{"description":
..., "cases": [...]}`, shaped as `fixture.schema.json` says and
conformance/README.md explains: a case's `id` (never reused), the
`requirements` it checks, its `level` (a step's `spec` part is MUST whatever
the case's level), what it `requires` of the service, the `features` it
uses, the `limits` its requests and answers depend on, and its `steps`.

The suite's checks on itself are in lint.py.
"""

import functools
import json
import re
from pathlib import Path


HERE = Path(__file__).parent
CASES = HERE / "cases"
CLIENTS = HERE / "clients"  # cases that check a client (clients.py)
SCHEMAS = HERE / "schemas"  # cases that check a schema loader (schemas.py)
FEATURES = {  # protocol features a target may be declared to lack, and how a case uses each
    "binary": "MessagePack: requests or answers with @bin_, packing",
    "select": "the @select_ header",
    "headers": "the stock headers @id_, @time_ and @unsafe_",
    "http": "HTTP statuses and media types, and requests that are not POSTs of a message",
}

LIMITS = {  # limits a target may declare (run --limit NAME=VALUE): the guide's value, the most a run sends, meaning
    "body": (1024 * 1024, 64 * 1024 * 1024, "the largest request body read, in bytes"),
    "depth": (1024, 100_000, "the deepest message read, in levels of arrays and objects"),
    "cases": (100, 100_000, "the most validation cases one answer lists"),
}


def load_json(name):
    return json.loads((HERE / name).read_text(encoding="utf-8"))


def load(directory=CASES):
    """Every case of every fixture file of a folder (or of one file), each with the name of its file."""
    cases, directory = [], Path(directory)
    for path in [directory] if directory.is_file() else sorted(directory.glob("*.json")):
        for case in json.loads(path.read_text(encoding="utf-8"))["cases"]:
            cases.append({**case, "file": path.name})
    return cases


def pattern(glob):
    """A regular expression for an id glob: * within one segment, ** across segments."""
    parts = re.split(r"(\*\*|\*)", glob)
    return re.compile("".join({"**": ".*", "*": "[^/]*"}.get(p, re.escape(p)) for p in parts) + "$")


LEVELS = {"MUST": {"MUST"}, "SHOULD": {"MUST", "SHOULD"}, "MAY": {"MUST", "SHOULD", "MAY"}}


@functools.cache
def rule_levels():
    """Each requirement's level: MUST for a rule the spec states, SHOULD for a convention of the guide."""
    return {r["id"]: "MUST" if r["cites"].startswith("spec:") else "SHOULD" for r in load_json("requirements.json")}


def level_of(requirements):
    """The level of a case that cites `requirements`: MUST only if the spec states every one."""
    return "MUST" if all(rule_levels().get(r) == "MUST" for r in requirements) else "SHOULD"


def levels(case):
    """The levels a case checks: its own, and MUST too if it has a spec part."""
    parts = [case] if kind(case) == "schema" else [step.get("response", {}) for step in case["steps"]]
    return {case["level"]} | ({"MUST"} if any("spec" in part for part in parts) else set())


def matching(cases, ids=(), exclude=()):
    """The cases whose id matches one of the globs `ids` (all if none) and none of `exclude`."""
    patterns, left_out = [pattern(glob) for glob in ids], [pattern(glob) for glob in exclude]
    return [case for case in cases if (not patterns or any(p.match(case["id"]) for p in patterns))
            and not any(p.match(case["id"]) for p in left_out)]


def select(cases, ids=(), level="MAY", exclude=()):
    """The cases `matching` selects that check something at `level` or stricter."""
    return [case for case in matching(cases, ids, exclude) if levels(case) & LEVELS[level]]


def applies(case, profile):
    """Whether a case is for a target whose service is `profile` (see runner.detect)."""
    return set(case["requires"]) <= profile


def everything():
    """The server cases, the client cases and the schema cases."""
    return load(CASES) + load(CLIENTS) + load(SCHEMAS)


def kind(case):
    """What a case checks: a "server", a "client" or a "schema" loader."""
    return "client" if "client" in case else "schema" if "documents" in case else "server"


def coverage(cases):
    """Each requirement with the ids of the cases that check it."""
    checked = {}
    for case in cases:
        for requirement in case["requirements"]:
            checked.setdefault(requirement, []).append(case["id"])
    return [(r, checked.get(r["id"], [])) for r in load_json("requirements.json")]
