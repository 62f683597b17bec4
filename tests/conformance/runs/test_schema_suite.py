"""The schema suite (runs/schema_suite.py): the reference's loader passes every case, and broken loaders
fail with a readable diff."""

import shlex
import sys

import pytest

from conformance.__main__ import main
from conformance.language import suite as cases
from tests.support.suite import driver, run

SCHEMA_CASES = cases.load(cases.SCHEMAS)


OUR_SCHEMA_DRIVER = f"{shlex.quote(sys.executable)} -m reference.schema --driver"


ENDLESS_ACCEPTED = """
import sys
from reference.cli import drivers
from reference.protocol import loader
loader.Schema._check_termination = lambda self, indexed: None  # never asks whether a type can end
drivers.drive_schema(sys.stdin, sys.stdout)
"""


DUPLICATES_ACROSS_DOCUMENTS = """
import sys
from reference.cli import drivers
from reference.protocol import documents, loader
checked = loader.Schema.__init__
def one_document_at_a_time(self, documents_, problems=(), internal=(), extensions=None):
    for document in documents_:  # each document on its own: a name two of them define goes unnoticed
        checked(self, [document], problems, internal, extensions)
loader.Schema.__init__ = one_document_at_a_time
drivers.drive_schema(sys.stdin, sys.stdout)
"""


def test_the_reference_loader_passes_every_schema_case(tmp_path, capsys):
    status, lines = run(capsys, "schema", "--command", OUR_SCHEMA_DRIVER, "--json", str(tmp_path / "r.json"))
    assert status == 0, "\n".join(lines)
    assert lines[-1] == f"{len(SCHEMA_CASES)} passed, 0 failed" and len(SCHEMA_CASES) >= 150
    levels = {c.level for c in SCHEMA_CASES}
    assert levels == {"MUST", "SHOULD"} and sum(c.spec is not None for c in SCHEMA_CASES) >= 100


def test_schema_cases_cover_every_rule_of_the_schema_language():
    covered = {r for c in SCHEMA_CASES for r in c.requirements}
    rules = {r["id"] for r in cases.load_json("requirements.json")
             if r["id"].startswith(("schema.", "conv.schema-")) and r["id"] != "schema.api"}  # (that one: fn.api_)
    assert len(rules) >= 20 and rules <= covered


@pytest.mark.parametrize("program, failing, diff", [
    (ENDLESS_ACCEPTED, "schema/terminates/self", "expected the schema to be refused; the loader accepted it"),
    (DUPLICATES_ACROSS_DOCUMENTS, "schema/once/across-documents",
     "expected the schema to be refused; the loader accepted it"),
])
def test_a_broken_loader_fails_with_a_readable_diff(program, failing, diff, capsys):
    status, lines = run(capsys, "schema", "--command", driver(program), "--id", "schema/terminates/**",
                        "--id", "schema/once/**")
    assert status == 1 and f"FAIL {failing} (SHOULD; conventions.json; checks " in "\n".join(lines), "\n".join(lines)
    assert f"  {diff}" in lines and any(line.startswith("    the driver answered: {") for line in lines)


@pytest.mark.parametrize("reply", ['{"accepted": "yes"}', '{"accepted": False, "problems": "many"}', '{}'])
def test_a_schema_driver_whose_replies_are_no_verdicts_stops_the_run_in_one_line(reply, capsys):
    """Not 335 refusals: the driver speaks another protocol, which is said once."""
    command = driver(f"import json, sys\nfor line in sys.stdin:\n    print(json.dumps({{'id': json.loads(line)['id'], "
                     f"**{reply}}}), flush=True)")
    status = main(["schema", "--command", command])
    error = capsys.readouterr().err
    assert status == 2 and error.startswith(f"python -m conformance schema: error: the driver {command!r} replied ")
    assert error.endswith(' to a schema; its reply is {"accepted": true}, or {"accepted": false, "problems": [...]} '
                          "(conformance/README.md, Checking a schema loader)\n") and error.count("\n") == 1
