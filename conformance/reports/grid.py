"""The matrix as one table: groups of requirements against implementations, and Columns read back.

How this works
--------------
A Column is one implementation's outcome: its manifest entry (name,
version, language), its Results, and why it could not be checked, if so.
runs/manifest.py makes Columns by running implementations here; `from_report`
makes one of a `run --json` report written anywhere (a CI job of the
implementation's own), and `as_json` writes the Columns as such reports, so
a page is the same whether its runs were made here or elsewhere.

The table has a row for each group of requirements, the section they cite:
of the spec (MUST) or of the guide, PROTOCOL.md (SHOULD); and a column for
each implementation: in a cell, the cases passed of those that cite the
group (in a MUST row, a case fails only if its MUST part failed). A case
that fails in two independent implementations (other names) the same way is
listed apart: the suite may be what is wrong.
"""

import functools
import html
import json
import re
import time
from typing import NamedTuple

from ..language import suite
from ..language.suite import Case
from . import formats
from .causes import cause
from .results import LABELS, STATUSES, Result, Scope, counts, named


class Column(NamedTuple):
    """One implementation's outcome: its entry, its Results, and why it could not be checked, if so."""

    entry: dict
    results: list
    trouble: str = ""

    @property
    def title(self):
        return named(self.entry) + (f", {self.entry['way']}" if self.entry.get("way") else "")


def from_report(document, where):
    """The Column of a `run --json` report; ValueError says how it is not one."""
    if type(document) is not dict or type(document.get("cases")) is not list:
        raise ValueError(f"{where}: not a report of run --json (an object with a list of \"cases\")")
    every, results = _suite(), []
    for number, item in enumerate(document["cases"]):
        if type(item) is not dict or type(item.get("id")) is not str or item.get("status") not in STATUSES:
            raise ValueError(f"{where}: cases[{number}] has no id, or no status of {', '.join(STATUSES)}")
        case = every.get(item["id"]) or Case(item["id"], "", tuple(item.get("requirements") or ()),  # (another suite's)
                                             item.get("level", "MAY"))
        results.append(Result(case, item["status"], list(item.get("problems") or []), float(item.get("seconds") or 0),
                              item.get("failedLevel", ""), tuple(item.get("reproduce") or ()), answer=item.get("answer", ""),
                              evidence=item.get("evidence", "")))
    implementation = document.get("implementation") if type(document.get("implementation")) is dict else {}
    entry = {key: str(implementation[key]) for key in ("name", "version", "language", "way") if implementation.get(key)}
    entry.setdefault("name", str(document.get("target") or where))
    if type(document.get("limits")) is dict and document["limits"]:
        entry["limits"] = document["limits"]
    return Column(entry, results, str(document.get("stopped") or ""))


def told(results):
    """What a column's results come to, in words."""
    tally = counts(results)
    return ", ".join(f"{tally[status]} {LABELS[status]}" for status in ("pass", "fail", "flaky", "known-failure",
                                                                             "stale") if tally[status] or status == "pass")


@functools.cache
def _suite():
    """The suite's cases by id, read once for all the reports of a matrix."""
    return {case.id: case for case in suite.everything()}


def as_json(columns):
    """The Columns as `run --json` reports, in one document that `from_report` reads back, column by column."""
    return json.dumps({"reports": [{**json.loads(formats.as_json(column.results, column.title, "", Scope(
        implementation={k: v for k, v in column.entry.items() if k in ("name", "version", "language", "way")},
        limits=column.entry.get("limits") or {}))), **({"stopped": column.trouble} if column.trouble else {})}
        for column in columns]}, indent=1, ensure_ascii=False) + "\n"


def reports(document, where):
    """The reports a file holds: one (run --json), or several (matrix --json)."""
    if type(document) is dict and type(document.get("reports")) is list:
        return [from_report(one, f"{where}: reports[{i}]") for i, one in enumerate(document["reports"])]
    return [from_report(document, where)]


def sections():
    """Each requirement's group: the section it cites, of the spec (MUST) or of the guide (SHOULD)."""
    return {r["id"]: (re.split(r"[:,]", r["cites"].partition(": ")[2])[0].strip(),
                      "MUST" if r["cites"].startswith("spec:") else "SHOULD")
            for r in suite.load_json("requirements.json")}


def rows(columns):
    """The table's rows: (section, level) -> {column index: (passed, checked, [failed Results])}, a case
    counted in the row of each section its requirements cite (in a MUST row, failed only if its MUST part
    failed)."""
    groups, table = sections(), {}
    for index, column in enumerate(columns):
        for result in column.results:
            if result.status not in ("pass", "fail", "flaky", "errored", "known-failure", "stale"):
                continue
            for row in sorted({groups[r] for r in result.case.requirements if r in groups}):
                passed, checked, failed = table.setdefault(row, {}).get(index, (0, 0, []))
                ok = result.status in ("pass", "known-failure") or (  # (a MUST row: the case's MUST part passed)
                    row[1] == "MUST" and result.status in ("fail", "flaky") and result.level != "MUST")
                table[row][index] = (passed + ok, checked + 1, failed + [result] * (not ok))
    return dict(sorted(table.items(), key=lambda item: (item[0][1] != "MUST", item[0][0])))


def alike(columns):
    """The failures two independent implementations (other names) share, case and cause alike:
    {(case id, cause): [column titles]}."""
    found = {}
    for column in columns:
        for result in column.results:
            if result.status in ("fail", "flaky"):
                found.setdefault((result.case.id, cause(result)), {})[column.entry["name"]] = column.title
    return {key: list(names.values()) for key, names in found.items() if len(names) > 1}


def terminal(columns):
    """The matrix as lines of text."""
    table, width = rows(columns), 14
    lines = ["".join([f"{'requirements':<44}", *(f"{f'[{i + 1}]':>{width}}" for i in range(len(columns)))])]
    for (group, level), cells in table.items():
        shown = [_cell(cells.get(i)) for i in range(len(columns))]
        lines.append(f"{level:<7}{group[:36]:<37}" + "".join(f"{cell:>{width}}" for cell in shown))
    lines.append("")
    for index, column in enumerate(columns):
        lines.append(f"[{index + 1}] {column.title}: " + (f"errored: {column.trouble}" if column.trouble else
                                                          told(column.results)))
    shared = alike(columns)
    if shared:
        lines += ["", "Failing alike in independent implementations (the suite may be what is wrong):"]
        lines += [f"  {case_id}: {cause} ({', '.join(titles)})" for (case_id, cause), titles in shared.items()]
    return lines


def as_markdown(columns):
    """The matrix as a Markdown table (a CI job's summary, a README), each column's outcome below it."""
    bar = lambda cells: "| " + " | ".join(cells) + " |\n"
    text = bar(["requirements", *(column.title.replace("|", "/") for column in columns)])
    text += bar(["---"] * (len(columns) + 1))
    for (group, level), cells in rows(columns).items():
        text += bar([f"{level} {group}", *(_cell(cells.get(i)) for i in range(len(columns)))])
    return text + "\n" + "".join(f"- {column.title}: " + (f"errored: {column.trouble}" if column.trouble else
                                                          told(column.results)) + "\n" for column in columns)


def _cell(cell):
    if cell is None:
        return "-"
    passed, checked, _ = cell
    return f"{passed}/{checked}" + (" ✗" if passed < checked else "")


def as_html(columns):
    """The matrix as one self-contained page: the table, each failing cell leading to its failures."""
    e, table = html.escape, rows(columns)
    parts = ["<!doctype html><html lang=en><meta charset=utf-8><title>Conformance matrix</title>",
             f"<style>{formats.CSS.read_text(encoding='utf-8')}</style>",
             f"<h1>Conformance matrix</h1><p>{time.strftime('%Y-%m-%d %H:%M')}: the suites against "
             f"{len(columns)} implementations. A cell counts the cases passed of those that cite the group's "
             f"requirements; a red one leads to its failures.</p><ol>"]
    for column in columns:
        tally = counts(column.results)
        declared = column.entry.get("limits")
        parts.append(f"<li><b>{e(column.title)}</b>: " + (f"errored: {e(column.trouble)}" if column.trouble else
                     ", ".join(f"{tally[s]} {LABELS[s]}" for s in STATUSES if tally[s]))
                     + (f"; declared limits {e(json.dumps(declared))}" if declared else "")
                     + (f"; its reproductions need it started again, as it was: <code>{e(column.entry['started'])}"
                        "</code>" if column.entry.get("started") and column.results else "") + "</li>")
    parts.append("</ol>")
    shared = alike(columns)
    if shared:
        parts.append("<div class=alike><h2>Failing alike in independent implementations</h2><p>The same case fails "
                     "the same way in implementations written apart: the suite may be what is wrong.</p><ul>")
        parts += [f"<li><b>{e(case_id)}</b>: {e(cause)} ({e(', '.join(titles))})</li>"
                  for (case_id, cause), titles in shared.items()]
        parts.append("</ul></div>")
    parts.append("<table><tr><th>requirements</th>"
                 + "".join(f"<th>{e(column.title)}</th>" for column in columns) + "</tr>")
    for (group, level), cells in table.items():
        parts.append(f"<tr><td>{e(group)} <span class='level {level}'>{level}</span></td>")
        for index in range(len(columns)):
            cell = cells.get(index)
            kind = "none" if cell is None else "ok" if cell[0] == cell[1] else "bad"
            text = "errored" if columns[index].trouble and cell is None else e(_cell(cell))
            link = f"<a href='#c{index}-{_anchor(group)}-{level}'>{text}</a>" if kind == "bad" else text
            parts.append(f"<td class='cell {kind}'>{link}</td>")
        parts.append("</tr>")
    parts.append("</table>")
    for index, column in enumerate(columns):
        parts.append(f"<h2>{e(column.title)}</h2>")
        for (group, level), cells in table.items():
            failed = (cells.get(index) or (0, 0, []))[2]
            if failed:
                parts.append(f"<h3 id='c{index}-{_anchor(group)}-{level}'>{e(group)} ({level}): {len(failed)} failed</h3>")
                parts += [formats.failure_html(result) for result in failed]
        known = column.entry.get("known") or []
        if known:
            parts.append("<table><tr><th>known failure</th><th>category</th><th>why</th></tr>" + "".join(
                f"<tr><td>{e(k['id'])}</td><td>{e(k['category'])}</td><td>{e(k['why'])}"
                + (f" (<a href='{e(k['link'])}'>link</a>)" if k.get("link") else "") + "</td></tr>" for k in known)
                + "</table>")
    return "\n".join(parts) + "\n</html>\n"


def _anchor(group):
    return re.sub(r"\W+", "-", group).strip("-").lower()
