"""The house's rules, which no single module can hold: the teaching core stands alone, every walk a type
directs is a table over the same kinds, no room imports one above it, and the suite never imports the
implementation it checks."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from reference.protocol.types import KINDS
from tests.support import ROOT


@pytest.mark.parametrize("table", [
    "reference.protocol.validate:CHECKS", "reference.protocol.generate:GENERATORS",
    "reference.protocol.blobs:RESTORERS", "reference.protocol.blobs:MARKERS", "reference.protocol.select:TRIMS",
    "reference.mocking.stubs:FILLS", "reference.engine.checks:COMPILERS",
])
def test_every_table_covers_every_kind(table):
    module, name = table.split(":")
    assert set(getattr(importlib.import_module(module), name)) == set(KINDS)


def test_the_core_loads_nothing_of_the_engine_room():
    """Importing the core, and serving with it alone, loads no module of reference/engine/; asking
    the package for its Service does."""
    code = ("import sys, json\nfrom reference import protocol\nfrom reference.services import calculator\n"
            "service = calculator.service(protocol.Service)\n"
            "assert service.handle(json.dumps([{}, {'fn.add': {'x': 1, 'y': 2}}]).encode()).result == 'Ok_'\n"
            "print(sorted(m for m in sys.modules if m.startswith('reference.engine')))\n"
            "import reference\nreference.Service\n"
            "print(sorted(m for m in sys.modules if m.startswith('reference.engine'))[:1])\n")
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["[]", "['reference.engine']"]


# What each room may import: its own modules and those on the floors below it, never one above.
# (A door, __main__.py and the commands stand on top: they may import any room of their package.)
MAY_IMPORT = {
    "reference/protocol": {"protocol"},
    "reference/sources.py": {"protocol"},
    "reference/transports": {"protocol", "transports"},
    "reference/engine": {"protocol", "transports", "engine"},
    "reference/changes": {"protocol", "sources", "changes"},
    "reference/mocking": {"protocol", "transports", "sources", "engine", "mocking"},
    "reference/services": {"protocol", "transports", "sources", "engine", "services"},
    "reference/cli": {"protocol", "transports", "sources", "engine", "mocking", "cli", "__init__"},
    "conformance/language": {"language"},
    "conformance/targets": {"targets"},
    "conformance/reports": {"language", "reports"},
    "conformance/tables": {"language", "tables"},
    "conformance/runs": {"language", "targets", "reports", "runs"},
    "conformance/fuzz": {"language", "targets", "reports", "runs", "fuzz"},
}


def imported(path):
    """The rooms of its own package that a module imports (at its top or in a function): a folder's name, a
    module's (sources), or __init__ for the package itself."""
    package = path.relative_to(ROOT).with_suffix("").parts[:-1]
    rooms = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = list(package[:len(package) - node.level + 1]) + (node.module.split(".") if node.module else [])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in ("reference", "conformance"):
            base = node.module.split(".")
        elif isinstance(node, ast.Import):
            rooms |= {name.name.split(".")[0] for name in node.names} & {"reference", "conformance"}
            continue
        else:
            continue
        if base[0] != package[0]:
            rooms.add(base[0])  # (the other package)
        else:
            rooms |= {base[1]} if len(base) > 1 else {name.name if (ROOT / base[0] / name.name).exists() or
                                                      (ROOT / base[0] / f"{name.name}.py").exists() else "__init__"
                                                      for name in node.names}
    return rooms


@pytest.mark.parametrize("room", sorted(MAY_IMPORT))
def test_no_room_imports_one_above_it(room):
    """Each room of reference/ and conformance/ imports only from its own floor and those below."""
    paths = [ROOT / room] if room.endswith(".py") else sorted((ROOT / room).rglob("*.py"))
    for path in paths:
        wrong = imported(path) - MAY_IMPORT[room] - {Path(room).stem}
        assert not wrong, f"{path.relative_to(ROOT)} imports {', '.join(sorted(wrong))}"


def test_the_suite_never_imports_the_implementation_it_checks():
    """conformance/ imports nothing of reference/, so that the two cannot share a bug."""
    for path in sorted((ROOT / "conformance").rglob("*.py")):
        assert "reference" not in imported(path), path.relative_to(ROOT)
