"""The matrix as one table (reports/grid.py): each cell counts what was seen, and no more, in every format."""

import json

import pytest

from conformance.language import suite
from conformance.reports import grid, readback
from conformance.reports.results import Result, not_run

EVERY = {case.id: case for case in suite.everything()}
MUST_CASE, SHOULD_CASE = EVERY["headers/id/string"], EVERY["headers/id/request-wins"]  # (both in "Message the service")
ROW = ("Message the service", "MUST")


def result(case, status, level=""):
    return Result(case, status, ["a problem"] if status in ("fail", "known-failure", "flaky") else [], 0.1, level)


def formats(columns):
    """The matrix in each format, as text."""
    return {"terminal": "\n".join(grid.terminal(columns)), "markdown": grid.as_markdown(columns),
            "html": grid.as_html(columns), "json": grid.as_json(columns)}


@pytest.mark.parametrize("results, cell, counted", [
    ([result(MUST_CASE, "pass")], "1/1", (1, 1, 0, 0, 0)),
    # a known failure is no pass: it is counted apart, in every format
    ([result(MUST_CASE, "pass"), result(EVERY["headers/id/number"], "known-failure", "MUST")], "1/2 (1 known)",
     (1, 2, 0, 1, 0)),
    ([result(MUST_CASE, "fail", "MUST"), result(EVERY["headers/id/number"], "known-failure", "MUST")],
     "0/2 ✗ (1 known)", (0, 2, 1, 1, 0)),
    # a stale known failure passed: no failure of the implementation, in a MUST row or any other
    ([result(SHOULD_CASE, "stale")], "1/1 (1 stale)", (1, 1, 0, 0, 1)),
    # a case whose MUST part passed counts as passed in a MUST row, whatever its conventions did
    ([result(SHOULD_CASE, "fail", "SHOULD")], "1/1", (1, 1, 0, 0, 0)),
])
def test_a_cell_counts_passes_failures_known_and_stale_apart(results, cell, counted):
    """(passed, checked, failed, known, stale), and the cell's text, the same in every format."""
    columns = [grid.Column({"name": "one"}, results)]
    assert grid.rows(columns)[ROW][0].text() == cell
    shown = formats(columns)
    assert f"{cell}" in shown["terminal"] and f"| {cell} |" in shown["markdown"]
    assert f">{cell}<" in shown["html"]
    [row] = [row for row in json.loads(shown["json"])["table"] if (row["group"], row["level"]) == ROW]
    data = row["cells"][0]
    assert (data["passed"], data["checked"], len(data["failed"]), len(data["known"]), len(data["stale"])) == counted


def test_a_column_not_checked_to_the_end_says_so_in_every_cell_and_format():
    """An errored column is not "-" (no case applies); an interrupted matrix says what it never checked."""
    columns = [grid.Column({"name": "done"}, [result(MUST_CASE, "pass")]),
               grid.Column({"name": "broken"}, [], "cannot start it", "errored"),
               grid.Column({"name": "cut"}, [], "the matrix was interrupted while checking it", "interrupted"),
               grid.Column({"name": "later"}, [], "the matrix was interrupted before it", "not run")]
    shown = formats(columns)
    row = next(line for line in shown["terminal"].splitlines() if line.startswith("MUST   Message the service"))
    assert row.split()[-5:] == ["1/1", "errored", "interrupted", "not", "run"]
    assert "| MUST Message the service | 1/1 | errored | interrupted | not run |" in shown["markdown"]
    said = "the matrix was interrupted: 2 implementations of 4 not checked to the end (cut; later)"
    assert said[0].upper() + said[1:] in shown["terminal"] and said[0].upper() + said[1:] in shown["markdown"]
    assert "<p class=interrupted>" in shown["html"] and "[4] later: not run: the matrix was interrupted before it" in \
        shown["terminal"]
    document = json.loads(shown["json"])
    assert document["interrupted"] == said
    assert [report.get("column") for report in document["reports"]] == [None, "errored", "interrupted", "not run"]
    again = readback.reports(document, "matrix.json")  # (read back, the same columns)
    assert [(column.state, column.trouble) for column in again] == [(c.state, c.trouble) for c in columns]


def test_a_report_of_an_older_suite_reads_back_and_says_its_fixture_set_differs():
    report = json.loads(grid.as_json([grid.Column({"name": "old"}, [result(MUST_CASE, "pass"),
                                                                     not_run(SHOULD_CASE, "for other services")])]))
    first = report["reports"][0]
    first["suite"] = {"version": "0.1.0", "fixtures": "0123456789abcdef"}
    first["cases"][1]["status"], first["cases"][1]["reason"] = "other-service", None  # (as older reports wrote it)
    [column] = readback.reports(first, "old.json")
    assert column.results[1].status == "not-run" and column.results[1].reason == "for other services"
    assert column.said.endswith("; made by the suite 0.1.0 with another fixture set (0123456789abcdef, not "
                                f"{suite.identity()['fixtures']}): its cases may differ")


def test_the_page_heads_only_what_has_something_under_it_and_says_limits_as_words():
    """A column that passed every case gets no empty heading; one with a failure gets its heading, its cases
    and the buttons that open them all; declared limits read as words, not JSON."""
    columns = [grid.Column({"name": "clean", "limits": {"depth": 64, "body": 2097152}}, [result(MUST_CASE, "pass")]),
               grid.Column({"name": "failing"}, [result(MUST_CASE, "fail", "MUST")])]
    page = grid.as_html(columns)
    assert "<h2>clean</h2>" not in page and "<h2>failing</h2>" in page and ">Expand all</button>" in page
    assert "declared limits: depth 64, body 2097152" in page
    assert ">Expand all</button>" not in grid.as_html(columns[:1])
