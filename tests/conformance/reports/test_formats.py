"""The reports a run writes (reports/formats.py): whatever a target answers, each file is well formed."""

import re
import xml.etree.ElementTree as ElementTree

from conformance.__main__ import main
from reference.services import calculator
from tests.support.servers import Mutated, serving
from tests.support.variants import hostile


def test_control_characters_and_lone_surrogates_in_answers_reach_no_report_raw(tmp_path, capsys):
    """Every report carries what a hostile target answers as escapes: the terminal obeys no escape
    sequence, the JUnit file stays XML, the HTML page is written."""
    page, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    with serving(Mutated(calculator.service(), hostile)) as server:
        status = main(["run", "--target", server.url, "--html", str(page), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert status == 1 and "\\u001b]0;owned\\u0007\\u001b[2J\\u009b31m\\ud800" in out
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]", out)
    failures = list(ElementTree.parse(junit).getroot().iter("failure"))
    assert failures and any("\\u001b" in (f.text or "") for f in failures)
    assert "\\u001b]0;owned" in page.read_text(encoding="utf-8")
