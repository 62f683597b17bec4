"""The HTML page of a fuzzing run (reports/fuzzing.py): a table for each function, then each kind of failure."""

import html
import re

from conformance.__main__ import main
from reference import Service, load
from tests.support.faulty import FAULTY, HANDLERS
from tests.support.servers import serving


def test_a_fuzz_page_has_a_table_for_each_function_and_one_failure_for_each_kind(tmp_path, capsys):
    """(It was a `run` page: failures by the requirement they break, and areas of fixture files, none of which
    a fuzzing run has.)"""
    page = tmp_path / "fuzz.html"
    with serving(Service(load(FAULTY), HANDLERS)) as server:
        assert main(["fuzz", "--target", server.url, "--seed", "7", "--html", str(page)]) == 1
    text = html.unescape(page.read_text())
    assert "<h1>Fuzzing of " in text and "By area" not in text
    functions = re.findall(r"<h3 id='(fn\.\w+)'>", text)
    assert sorted(functions) == ["fn.crash", "fn.ok", "fn.tag", "fn.typo"], functions
    ok = text.split("<h3 id='fn.ok'>")[1].split("</table>")[0]
    assert re.search(r"<p>\d+ calls made; the slowest took \d\.\d{3} s</p>", ok), ok
    assert re.search(r"<tr class=pass><td>result<td>passed<td>\d+ answers judged</tr>", ok), ok
    assert "<tr class=not-run><td>auth<td>not run<td>not run: the schema defines no union.Auth_" in ok, ok
    crash = text.split("<h3 id='fn.crash'>")[1].split("</table>")[0]
    assert "<tr class=fail><td>handler<td>failed<td>handler: the service answered ErrorUnknown_" in crash, crash
    assert "<h2>Failures: 3, one for each kind</h2>" in text
    assert text.count("<details class=failure>") == 3
