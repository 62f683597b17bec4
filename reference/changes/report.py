"""What `compare` says: its findings as text, as JSON, as GitHub Actions annotations, and as JUnit XML.

How this works
--------------
A `Verdict` is what one comparison came to: its findings in the order of
their places, the notes, the replay of recorded traffic if there was one,
and the exceptions that named no finding. Each format is a function of it
in FORMATS, for standard output; `junit()` writes the file CI systems read
as test results, one test case for each finding. A finding is told the same
way in every format (`told`): its level, rule, element, change, the routes
to it and the clients it breaks; only what surrounds it differs.
"""

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import NamedTuple

from .compatibility import RULES

MOST_ROUTES = 100  # paths to an element --json lists (reachedFrom counts them all)


class Verdict(NamedTuple):
    """A comparison's outcome: findings sorted by place, the Comparison, the Replay or None, and the
    exceptions (as written) that named no finding."""

    old: str
    new: str
    findings: list
    comparison: object
    replay: object
    unused: list


def told(finding, most):
    """A finding as one line of text, without its place; the first `most` routes and clients (None: all)."""
    count, clients = finding.count(), finding.clients()
    shown = "; ".join(finding.routes(most)) + (f"; and {count - most} more" if most and count > most else "")
    affects = "breaks" if finding.level == "breaking" else "affects"
    return (f"{finding.level}{' (accepted)' * finding.accepted} {finding.rule}: {finding.element}: {finding.detail}; "
            f"from {shown}; {affects} clients that {' or '.join(clients[:most])}"
            + (f" (and {len(clients) - most} more)" if most and len(clients) > most else ""))


def summary(verdict):
    """The last line: how many breaking changes, warnings and accepted ones, and what that means."""
    findings = verdict.findings
    counts = {level: sum(f.level == level and not f.accepted for f in findings) for level in ("breaking", "warning")}
    accepted = sum(f.accepted for f in findings)
    said = [f"{counts['breaking']} breaking change{'s' * (counts['breaking'] != 1)}",
            f"{counts['warning']} warning{'s' * (counts['warning'] != 1)}"] + [f"{accepted} accepted"] * bool(accepted)
    return ", ".join(said) + (": clients of the old schema break." if counts["breaking"] else
                              ": clients of the old schema keep working.")


def text(verdict, most=3):
    """The findings, the notes, the exceptions unused, the replay and the verdict, as lines of text."""
    lines = [f"{f.where}: {told(f, most)}" for f in verdict.findings]
    lines += [f"note: {said}" for _, said in verdict.comparison.notes]
    lines += [f"note: {exception} names no finding: nothing it accepts changed" for exception in verdict.unused]
    lines += verdict.replay.lines() if verdict.replay else []
    return lines + [summary(verdict)]


def data(verdict):
    """The comparison as JSON data."""
    touched = verdict.replay.touched if verdict.replay else {}
    return {"old": verdict.old, "new": verdict.new, "breaking": bool(verdict.comparison.breaking()),
            "findings": [{"rule": f.rule, "level": f.level, "side": RULES[f.rule][0], "element": f.element,
                          "where": f.where, "change": f.detail, "accepted": f.accepted,
                          "routes": f.routes(MOST_ROUTES), "reachedFrom": f.count(), "clients": f.clients(),
                          **({"traffic": {"touched": touched[(f.rule, f.element)].count,
                                          "first": [e.source for e in touched[(f.rule, f.element)].first]}}
                             if verdict.replay else {})} for f in verdict.findings],
            "notes": [{"rule": rule, "text": said} for rule, said in verdict.comparison.notes],
            "unusedExceptions": verdict.unused,
            **({"traffic": verdict.replay.as_data()} if verdict.replay else {})}


def github(verdict, most=3):
    """GitHub Actions workflow commands: an annotation at each finding's file and line (an error for a
    break, a warning, a notice for one accepted), then the replay and the summary as plain lines."""
    lines = []
    for f in verdict.findings:
        command = "notice" if f.accepted else "error" if f.level == "breaking" else "warning"
        file, line, column = _place(f.where)
        at = f"file={_property(file)},line={line},col={column}," if file else ""
        said = told(f, most) if file else f"{f.where}: {told(f, most)}"
        lines.append(f"::{command} {at}title={_property(f.rule + ': ' + f.element)}::{_data(said)}")
    lines += [f"::notice title={rule}::{_data(said)}" for rule, said in verdict.comparison.notes]
    lines += [f"::warning title=unused exception::{_data(e)} names no finding" for e in verdict.unused]
    return lines + (verdict.replay.lines() if verdict.replay else []) + [summary(verdict)]


FORMATS = {"text": text, "json": lambda verdict, most: [json.dumps(data(verdict), indent=1)], "github": github}


def junit(verdict, path):
    """Write the comparison as JUnit XML to `path`: one test case for each finding (failed if it breaks,
    skipped if accepted), or one passing case when nothing changed for old clients."""
    findings = verdict.findings
    counts = {"tests": str(len(findings) or 1), "failures": str(sum(f.level == "breaking" and not f.accepted
                                                                    for f in findings))}
    suites = ElementTree.Element("testsuites", name="schema compare", **counts)
    suite = ElementTree.SubElement(suites, "testsuite", name=f"compare {verdict.old} {verdict.new}", **counts,
                                   errors="0", skipped=str(sum(f.accepted for f in findings)))
    for f in findings:
        file = _place(f.where)[0]
        case = ElementTree.SubElement(suite, "testcase", classname=f.rule, name=f.element, **({"file": file} if file
                                                                                              else {}))
        if f.accepted:
            ElementTree.SubElement(case, "skipped", message="accepted on purpose")
        elif f.level == "breaking":
            ElementTree.SubElement(case, "failure", message=f"{f.where}: {f.detail}", type=f.rule).text = \
                told(f, None)
        else:
            ElementTree.SubElement(case, "system-out").text = f"{f.where}: {told(f, None)}"
    if not findings:
        ElementTree.SubElement(suite, "testcase", classname="compare", name="no change breaks an old client")
    ElementTree.indent(suites)
    Path(path).write_text(ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n")


def _place(where):
    """(file, line, column) of a finding's place written FILE:LINE:COL, if FILE is a file on this disk
    (not a revision's, `main:schema.json`, nor a URL's); else ("", 0, 0)."""
    parts = where.rsplit(":", 2)
    if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit() and Path(parts[0]).is_file():
        return parts[0], int(parts[1]), int(parts[2])
    return "", 0, 0


def _data(text):
    """A workflow command's message, escaped as GitHub reads it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text):
    """A workflow command's property value, escaped as GitHub reads it."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")
