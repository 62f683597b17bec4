"""Failures grouped by their cause (reports/causes.py), the same in every report."""

import xml.etree.ElementTree as ElementTree

import pytest

from reference.services import testbed
from tests.support import ROOT
from tests.support.servers import Mutated, serving
from tests.support.suite import run
from tests.support.variants import dropping


@pytest.mark.parametrize("header, rule", [("@enc_", "header.enc"), ("@id_", "header.id")])
def test_failures_are_grouped_by_their_cause_in_every_report(header, rule, tmp_path, capsys):
    """A server that leaves out one header fails cases citing a dozen rules, for one cause: every
    report shows one group, the difference it is about, and the rule of the check that failed."""
    page, junit = tmp_path / "report.html", tmp_path / "junit.xml"
    with serving(Mutated(testbed.service(), dropping(header))) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--html", str(page), "--junit", str(junit))
    failed = [line for line in lines if line.startswith("FAIL ")]
    cited = {rule for line in failed for rule in line.split("checks ")[1].rstrip(")").split(", ")}
    assert status == 1 and len(failed) >= 10 and len(cited) > 3
    group = lines[lines.index(f"{len(failed)} failures, one cause:") + 1:-1]
    levels = {level: sum(f"({level};" in line for line in failed) for level in ("MUST", "SHOULD")}
    assert group[0].split()[:4] == [str(len(failed)), "MUST", f"[0].{header}:", "missing"]  # (the strongest level,
    assert group[0].endswith(f"  ({levels['MUST']} MUST, {levels['SHOULD']} SHOULD)")  # and the mix the summary counts)
    assert f"({levels['MUST']} MUST, {levels['SHOULD']} SHOULD)" in lines[-1]
    assert group[1].strip().startswith(f"breaks {rule}: ") and group[2].strip().startswith("first: ")
    html = page.read_text()
    assert html.count("<details class=rule>") == 1 and f"<b>[0].{header}: missing</b> <b>({len(failed)} cases: " \
        f"{levels['MUST']} MUST, {levels['SHOULD']} SHOULD)" in html
    assert html.index("MUST; ", html.index("<details class=rule>")) < html.index("SHOULD", html.index("<details class=failure>"))
    assert html.count("<details class=failure>") == len(failed) and f"breaks <b>{rule}</b>" in html
    messages = [f.get("message") for f in ElementTree.parse(junit).getroot().iter("failure")]
    assert len(messages) == len(failed)
    assert all(m.split()[1] == f"{rule}:" and m.endswith(f"[0].{header}: missing") for m in messages)
    if header == "@id_":  # conformance/README.md shows this run's end, as it is
        shown = "\n".join(lines[lines.index(f"{len(failed)} failures, one cause:"):])
        assert f"```text\n{shown}\n```" in (ROOT / "conformance" / "README.md").read_text(), shown


def test_a_cause_leaves_out_what_varies_from_case_to_case(tmp_path, capsys):
    """Paths written as text fail in many cases, under every error's cases, at every depth, first
    found directly or as the nearest of no matching element: one cause, which names the path rule."""
    def paths_as_text(request, message):
        for fields in message[1].values():
            for found in fields.get("cases", []) if type(fields) is dict else []:
                found["path"] = [str(key) for key in found["path"]]
        return message
    with serving(Mutated(testbed.service(), paths_as_text)) as server:
        status, lines = run(capsys, "run", "--target", server.url, "--id", "testbed/**", "--id", "headers/**")
    header = next(line for line in lines if line.endswith("one cause:"))
    assert status == 1 and int(header.split()[0]) > 50
    group = lines[lines.index(header) + 1:-1]
    assert group[0].split()[1:] == ["SHOULD", "[1].*.cases[*].path[*]:", "another", "value"]
    assert group[1].strip().startswith("breaks conv.path-format: ")
