"""Reports read back (reports/readback.py): a report written elsewhere is input like any other."""

import json

import pytest

from conformance.__main__ import main
from conformance.reports import grid, readback

CASE = {"id": "headers/id/string", "status": "pass", "problems": [], "seconds": 0.1}


def report(**fields):
    """A run --json report of one case, with `fields` beside or in place of its own."""
    return {"target": "http://127.0.0.1:8000/api", "implementation": {"name": "theirs"}, "cases": [dict(CASE)],
            **fields}


def test_what_a_report_says_is_shown_as_text_only():
    """A name that sent escape sequences to the terminal and a row of its own into the Markdown table, and
    half a UTF-16 pair that ended in a traceback, are shown as plain text."""
    [column] = readback.reports(report(implementation={"name": "evil\x1b[2J\n| MUST injected | 9/9 |\ud800",
                                                       "version": "1\r\n"}), "r.json")
    shown = "\n".join(grid.terminal([column])) + grid.as_markdown([column]) + grid.as_html([column])
    assert "\x1b" not in shown and "\ud800" not in shown and "\r" not in shown
    assert not any(line.startswith("| MUST injected") for line in grid.as_markdown([column]).splitlines())
    assert column.entry["name"] == "evil [2J | MUST injected | 9/9 |\ufffd"
    [row] = [line for line in grid.as_markdown([column]).splitlines() if line.startswith("| requirements")]
    assert row.count("|") == 3  # (one column: its title holds no bar of its own)


@pytest.mark.parametrize("field, value, said", [
    ("seconds", "slow", "cases[0].seconds is not a number"),
    ("seconds", True, "cases[0].seconds is not a number"),
    ("requirements", {"a": 1}, "cases[0].requirements is not a list"),
    ("problems", 5, "cases[0].problems is not a list"),
    ("reproduce", "curl", "cases[0].reproduce is not a list"),
    ("answer", 5, "cases[0].answer is not text"),
    ("level", [], "cases[0].level is not text"),
])
def test_a_field_of_another_type_is_one_line_saying_where(field, value, said):
    document = report()
    document["cases"][0][field] = value
    with pytest.raises(ValueError, match=f"^r.json: {said.replace('[', '.').replace(']', '.')}$"):
        readback.reports(document, "r.json")


def test_a_file_of_more_reports_than_a_matrix_shows_is_refused_in_one_line(tmp_path, capsys):
    """100,001 reports (1.4 MB) took 556 MiB, printed 47 MB and wrote a 97 MB page."""
    path = tmp_path / "many.json"
    path.write_text(json.dumps({"reports": [{"cases": []}] * 100_001}))
    with pytest.raises(SystemExit) as stop:
        main(["matrix", "--report", str(path)])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert f"--report {path}: holds 100,001 reports, more than the 100 a matrix shows" in error
    assert error.count("\n") == 1
