"""The matrix as one table: groups of requirements against implementations, and Columns read back.

How this works
--------------
A Column is one implementation's outcome: its manifest entry (name,
version, language), its Results, and why it could not be checked, if so.
runs/manifest.py makes Columns by running implementations here; readback.py
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

import html
import json
import re
import time
from typing import NamedTuple

from ..language import suite
from . import formats
from .causes import cause
from .results import JUDGED, Scope, named, plural, tally


class Column(NamedTuple):
    """One implementation's outcome: its entry, its Results, and, if it was not checked to the end, its
    `state` ("errored", "interrupted" or "not run") and why (`trouble`)."""

    entry: dict
    results: list
    trouble: str = ""
    state: str = ""  # "" when it was checked to the end

    @property
    def title(self):
        return named(self.entry) + (f", {self.entry['way']}" if self.entry.get("way") else "")

    @property
    def said(self):
        """What it came to, in words: how it ended, if not checked to the end, and its tally."""
        if self.state and not self.results:
            return f"{self.state}: {self.trouble}"
        return (f"{self.state}: {self.trouble}; what ran: " if self.state else "") + tally(self.results) + (
            f"; made by the suite {self.entry['suite'].get('version', '?')} with another fixture set "
            f"({self.entry['suite'].get('fixtures', '?')}, not {suite.identity()['fixtures']}): its cases may differ"
            if self.entry.get("suite") and self.entry["suite"].get("fixtures") != suite.identity()["fixtures"] else "")


UNCHECKED = ("interrupted", "not run")  # the states of a column the matrix never checked to the end


def as_json(columns):
    """The Columns as `run --json` reports, in one document that readback.py reads back, column by column,
    with the table as `as_markdown` and `terminal` draw it."""
    reports = []
    for column in columns:
        scope = Scope(implementation={k: v for k, v in column.entry.items() if k in ("name", "version", "language", "way")},
                      limits=column.entry.get("limits") or {}, suite=column.entry.get("suite") or suite.identity())
        report = json.loads(formats.as_json(column.results, column.title, "", scope))
        report.pop("seconds", None)
        reports.append({**report, **({"stopped": column.trouble} if column.trouble else {}),
                        **({"column": column.state} if column.state else {})})
    table = [{"group": group, "level": level, "cells": [cells[i].as_data() if i in cells else
                                                        {"state": columns[i].state or "none applies"}
                                                        for i in range(len(columns))]}
             for (group, level), cells in rows(columns).items()]
    return json.dumps({"suite": suite.identity(), **({"interrupted": cut_short(columns)} if cut_short(columns) else {}),
                       "reports": reports, "table": table}, indent=1, ensure_ascii=False) + "\n"


def sections():
    """Each requirement's group: the section it cites, of the spec (MUST) or of the guide (SHOULD)."""
    return {r["id"]: (re.split(r"[:,]", r["cites"].partition(": ")[2])[0].strip(),
                      "MUST" if r["cites"].startswith("spec:") else "SHOULD")
            for r in suite.load_json("requirements.json")}


class Cell(NamedTuple):
    """One implementation's cases in one group of requirements: how many passed, and the Results of those
    that failed, failed as listed (known) and passed though listed (stale, passed all the same)."""

    passed: int = 0
    failed: tuple = ()
    known: tuple = ()
    stale: tuple = ()

    @property
    def checked(self):
        return self.passed + len(self.failed) + len(self.known)

    def text(self):
        """"139/143 ✗ (4 known)": passed of checked, a mark if one failed unlisted, and the known and stale."""
        notes = [f"{len(self.known)} known"] * bool(self.known) + [f"{len(self.stale)} stale"] * bool(self.stale)
        return f"{self.passed}/{self.checked}" + " ✗" * bool(self.failed) + (f" ({', '.join(notes)})" if notes else "")

    def kind(self):
        """The cell's colour: bad (a failure), known (all else passed, some as listed, or listed and passing), ok."""
        return "bad" if self.failed else "known" if self.known or self.stale else "ok"

    def as_data(self):
        return {"passed": self.passed, "checked": self.checked, "failed": [r.case.id for r in self.failed],
                "known": [r.case.id for r in self.known], "stale": [r.case.id for r in self.stale]}


def rows(columns):
    """The table's rows: (section, level) -> {column index: Cell}, a case counted in the row of each section
    its requirements cite; in a MUST row, a case whose MUST part passed counts as passed there, whatever its
    conventions did."""
    groups, table = sections(), {}
    for index, column in enumerate(columns):
        for result in column.results:
            if result.status not in JUDGED + ("errored",):
                continue
            for row in sorted({groups[r] for r in result.case.requirements if r in groups}):
                cell = table.setdefault(row, {}).get(index, Cell())
                table[row][index] = _counted(cell, result, must_part_passed=row[1] == "MUST" and result.level not in (
                    "MUST", "") and result.status in ("fail", "flaky", "known-failure"))
    return dict(sorted(table.items(), key=lambda item: (item[0][1] != "MUST", item[0][0])))


def _counted(cell, result, must_part_passed):
    if result.status == "pass" or must_part_passed:
        return cell._replace(passed=cell.passed + 1)
    if result.status == "stale":
        return cell._replace(passed=cell.passed + 1, stale=cell.stale + (result,))
    if result.status == "known-failure":
        return cell._replace(known=cell.known + (result,))
    return cell._replace(failed=cell.failed + (result,))


def cut_short(columns):
    """What an interrupted matrix never checked, in words ("" if it checked every implementation)."""
    unchecked = [column.title for column in columns if column.state in UNCHECKED]
    return (f"the matrix was interrupted: {plural(len(unchecked), 'implementation')} of {len(columns)} not checked "
            f"to the end ({'; '.join(unchecked)})") if unchecked else ""


def alike(columns):
    """The failures two independent implementations (other names) share, case and cause alike:
    {(case id, cause): [column titles]}."""
    found = {}
    for column in columns:
        for result in column.results:
            if result.status in ("fail", "flaky"):
                found.setdefault((result.case.id, cause(result)), {})[column.entry["name"]] = column.title
    return {key: list(names.values()) for key, names in found.items() if len(names) > 1}


def _cell(cells, index, columns):
    """A cell's text: its counts, or what kept the column from them ("-": no case of it applies)."""
    if index in cells:
        return cells[index].text()
    return columns[index].state or "-"


def terminal(columns):
    """The matrix as lines of text."""
    table = rows(columns)
    texts = {row: [_cell(cells, i, columns) for i in range(len(columns))] for row, cells in table.items()}
    width = max([14] + [len(text) + 2 for shown in texts.values() for text in shown])
    lines = ["".join([f"{'requirements':<44}", *(f"{f'[{i + 1}]':>{width}}" for i in range(len(columns)))])]
    for (group, level), shown in texts.items():
        lines.append(f"{level:<7}{group[:36]:<37}" + "".join(f"{cell:>{width}}" for cell in shown))
    lines.append("")
    for index, column in enumerate(columns):
        lines.append(f"[{index + 1}] {column.title}: {column.said}")
    shared = alike(columns)
    if shared:
        lines += ["", "Failing alike in independent implementations (the suite may be what is wrong):"]
        lines += [f"  {case_id}: {cause} ({', '.join(titles)})" for (case_id, cause), titles in shared.items()]
    if cut_short(columns):
        lines += ["", cut_short(columns)[0].upper() + cut_short(columns)[1:] + "."]
    return lines


def as_markdown(columns):
    """The matrix as a Markdown table (a CI job's summary, a README), each column's outcome below it."""
    bar = lambda cells: "| " + " | ".join(cells) + " |\n"
    text = (f"**{cut_short(columns)[0].upper() + cut_short(columns)[1:]}.**\n\n" if cut_short(columns) else "")
    text += bar(["requirements", *(column.title.replace("|", "/") for column in columns)])
    text += bar(["---"] * (len(columns) + 1))
    for (group, level), cells in rows(columns).items():
        text += bar([f"{level} {group}", *(_cell(cells, i, columns) for i in range(len(columns)))])
    return text + "\n" + "".join(f"- {column.title}: {column.said}\n" for column in columns)


def as_html(columns):
    """The matrix as one self-contained page: the table, each cell that is not all passes leading to its
    failures, known failures and stale ones."""
    e, table = html.escape, rows(columns)
    parts = ["<!doctype html><html lang=en><meta charset=utf-8><title>Conformance matrix</title>",
             f"<style>{formats.CSS.read_text(encoding='utf-8')}</style>",
             f"<h1>Conformance matrix</h1><p>{time.strftime('%Y-%m-%d %H:%M')}: the suites against "
             f"{plural(len(columns), 'implementation')}, by the suite {e(suite.identity()['version'])} (fixture set "
             f"{e(suite.identity()['fixtures'])}). A cell counts the cases passed of those that cite the group's "
             f"requirements (a known failure is no pass); one that is not all passes leads to its cases.</p>"]
    if cut_short(columns):
        parts.append(f"<p class=interrupted>{e(cut_short(columns)[0].upper() + cut_short(columns)[1:])}.</p>")
    parts.append("<ol>")
    for column in columns:
        declared = column.entry.get("limits")
        parts.append(f"<li><b>{e(column.title)}</b>: {e(column.said)}"
                     + (f"; declared limits: {e(', '.join(f'{name} {value}' for name, value in declared.items()))}"
                        if declared else "")
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
            kind = cells[index].kind() if index in cells else "none"
            text = e(_cell(cells, index, columns))
            link = f"<a href='#c{index}-{_anchor(group)}-{level}'>{text}</a>" if kind in ("bad", "known") else text
            parts.append(f"<td class='cell {kind}'>{link}</td>")
        parts.append("</tr>")
    parts.append("</table>")
    if any(cell.kind() != "ok" for cells in table.values() for cell in cells.values()):
        parts.append(formats.EXPAND)
    for index, column in enumerate(columns):
        heading = len(parts)
        for (group, level), cells in table.items():
            cell = cells.get(index, Cell())
            if cell.kind() == "ok":
                continue
            said = ", ".join(f"{len(listed)} {word}" for listed, word in ((cell.failed, "failed"), (cell.known, "known"),
                                                                          (cell.stale, "stale")) if listed)
            parts.append(f"<h3 id='c{index}-{_anchor(group)}-{level}'>{e(group)} ({level}): {said}</h3>")
            parts += [formats.failure_html(result) for result in cell.failed + cell.known + cell.stale]
        known = column.entry.get("known") or []
        if known:
            parts.append("<table><tr><th>listed as a known failure</th><th>category</th><th>why</th></tr>" + "".join(
                f"<tr><td>{e(k['id'])}</td><td>{e(k.get('category', ''))}</td><td>{e(k.get('why', ''))}"
                + (f" (<a href='{e(k['link'])}'>link</a>)" if k.get("link") else "") + "</td></tr>" for k in known)
                + "</table>")
        if len(parts) > heading:  # (a column that passed every case has nothing to show under its name)
            parts.insert(heading, f"<h2>{e(column.title)}</h2>")
    return "\n".join(parts) + "\n</html>\n"


def _anchor(group):
    return re.sub(r"\W+", "-", group).strip("-").lower()
