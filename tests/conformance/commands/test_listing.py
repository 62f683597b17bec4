"""python -m conformance list (commands/listing.py): the cases, selected by id and level."""

from conformance.language import suite as cases
from tests.support.suite import run


def test_list_selects_by_id_and_level(capsys):
    status, lines = run(capsys, "list", "--id", "binary/negotiate/*", "--level", "MUST")
    assert status == 0 and lines and all(line.startswith("binary/negotiate/") and " MUST " in line for line in lines)
    status, lines = run(capsys, "list", "--id", "api/public/calculator-schema", "--level", "MUST")
    assert lines[0].split()[1] == "SHOULD+MUST"
    status, lines = run(capsys, "list", "--level", "MAY")
    assert len(lines) == len(cases.everything()) and any(" MAY " in line for line in lines)
    status, lines = run(capsys, "list", "--id", "testbed/mock/**")
    assert lines and all(" testbed,mock " in line for line in lines)
