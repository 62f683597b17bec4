"""The matrix: the suites run against every implementation a manifest lists, in one table.

How this works
--------------
A manifest (`matrix.json` beside this file, or `--manifest FILE`) lists
implementations as data: a name, version and language; how to build one
(`build`), start it (`start`: a command, stopped with SIGTERM) and reach it
(`target`), the drivers of its client and schema loader (`client`,
`schema`), the limits it declares, the features it lacks, and its known
failures, each with a category and a link. `run_all` builds, starts, checks
and stops them one after the other; an implementation that cannot be built,
started or reached is `errored` in its column, and the others go on.

The table has a row for each group of requirements, the section they cite:
of the spec (MUST) or of the guide, PROTOCOL.md (SHOULD); and a column for
each implementation: in a cell, the cases passed of those that cite the
group. A case that fails in two independent implementations (other names)
the same way is listed apart: the suite may be what is wrong.
"""

import html
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from typing import NamedTuple

from . import cases, clients, report, runner, schemas
from .target import Target, Trouble

CATEGORIES = ("implementation bug", "convention", "suite problem")
FIELDS = {  # a manifest entry's keys: whether required, and the type of their value
    "name": (True, str), "version": (False, str), "language": (False, str), "way": (False, str),
    "build": (False, str), "start": (False, str), "target": (False, str), "client": (False, str),
    "schema": (False, str), "limits": (False, dict), "without": (False, list), "known": (False, list),
}


class Column(NamedTuple):
    """One implementation's outcome: its entry, its Results, and why it could not be checked, if so."""

    entry: dict
    results: list
    trouble: str = ""

    @property
    def title(self):
        return report.named(self.entry) + (f", {self.entry['way']}" if self.entry.get("way") else "")


def problems(manifest, where="the manifest"):
    """Every way the manifest breaks its shape, each with where it is."""
    if type(manifest) is not dict or type(manifest.get("implementations")) is not list:
        return [f"{where}: not an object with a list of \"implementations\""]
    found = []
    for index, entry in enumerate(manifest["implementations"]):
        at = f"{where}: implementations[{index}]"
        if type(entry) is not dict:
            found.append(f"{at}: not an object")
            continue
        found += [f"{at}: unknown key {key!r}" for key in entry if key not in FIELDS]
        found += [f"{at}.{key}: {'missing' if key not in entry else f'not a {kind.__name__}'}"
                  for key, (required, kind) in FIELDS.items()
                  if (required and key not in entry) or (key in entry and type(entry[key]) is not kind)]
        if not {"target", "client", "schema"} & entry.keys():
            found.append(f"{at}: no suite to run: give a target, a client driver or a schema driver")
        found += [f"{at}.limits.{name}: not one of {', '.join(cases.LIMITS)}, or not a whole number above 0"
                  for name, value in (entry.get("limits") or {}).items()
                  if name not in cases.LIMITS or type(value) is not int or value < 1]
        found += [f"{at}.without: {name!r} is not one of {', '.join(cases.FEATURES)}"
                  for name in entry.get("without") or () if name not in cases.FEATURES]
        for number, known in enumerate(entry.get("known") or ()):
            place = f"{at}.known[{number}]"
            if type(known) is not dict or not all(type(known.get(k)) is str for k in ("id", "category", "why")):
                found.append(f"{place}: needs id, category and why, as text")
            elif known["category"] not in CATEGORIES:
                found.append(f"{place}.category: {known['category']!r} is not one of {', '.join(CATEGORIES)}")
    return found


def run_all(manifest, say=print):
    """Check every implementation of the manifest, one after the other: their Columns."""
    every = cases.everything()
    return [check(entry, every, say) for entry in manifest["implementations"]]


def check(entry, every, say=print):
    """Build, start, check and stop one implementation; its Column."""
    title = Column(entry, []).title
    say(f"{title}: ", end="", flush=True)
    known = {k["id"] for k in entry.get("known", ())}
    process, results = None, []
    try:
        port = free_port()
        if entry.get("build"):
            build(entry["build"], port)
        if entry.get("start"):
            try:
                process = subprocess.Popen(command(entry["start"], port), stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True)
            except OSError as error:
                raise Trouble(f"cannot start {entry['start']!r}: {error.strerror}") from None
        if entry.get("target"):
            results += serve_suite(entry, port, every, known)
        for kind, run in (("client", clients.run), ("schema", schemas.run)):
            if entry.get(kind):
                chosen = [c for c in every if cases.kind(c) == kind]
                results += run(chosen, " ".join(command(entry[kind], port)), _known(known, chosen))
    except (Trouble, OSError, ValueError, subprocess.SubprocessError) as error:
        trouble = _told(error)
        say(f"errored: {trouble}")
        return Column(entry, results, trouble)
    finally:
        stop(process)
    say(told(results))
    return Column(entry, results)


def told(results):
    """What a column's results come to, in words."""
    tally = report.counts(results)
    return ", ".join(f"{tally[status]} {report.LABELS[status]}" for status in ("pass", "fail", "flaky", "known-failure",
                                                                             "stale") if tally[status] or status == "pass")


def serve_suite(entry, port, every, known):
    """The server cases against the entry's target, as `run` runs them."""
    target = Target(entry["target"].replace("{port}", str(port)))
    target.wait(30)
    profile, _ = runner.detect(target)
    chosen = [c for c in every if cases.kind(c) == "server"]
    selected, aside = runner.sort_out(chosen, profile, set(entry.get("without", ())))
    results = runner.run(selected, target, known=_known(known, selected), limits=entry.get("limits"))
    if target.stopped:
        raise Trouble(f"the target {target.stopped}")
    return results + aside


def build(text, port, shown=300):
    """Run a build command to its end (at most 10 minutes); its output goes to a file, not to memory,
    and a failure shows the last `shown` characters of it."""
    with tempfile.TemporaryFile() as output:
        status = subprocess.run(command(text, port), stdout=output, stderr=subprocess.STDOUT, timeout=600).returncode
        if status:
            output.seek(max(0, output.seek(0, os.SEEK_END) - shown))
            last = output.read().decode(errors="replace").strip()
            raise Trouble(f"the build failed (status {status}): {report.printable(last)}")


def _known(globs, chosen):
    return {c["id"] for c in chosen if any(cases.pattern(glob).match(c["id"]) for glob in globs)}


def _told(error):
    return str(getattr(error, "strerror", None) or error)


def command(text, port):
    """A manifest's command as arguments: {python} is this interpreter, {port} a free port."""
    return [sys.executable if word == "{python}" else word.replace("{port}", str(port)) for word in shlex.split(text)]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(process, grace=10):
    """Stop a started implementation, its children too: SIGTERM, then SIGKILL after `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# The table

def sections():
    """Each requirement's group: the section it cites, of the spec (MUST) or of the guide (SHOULD)."""
    return {r["id"]: (re.split(r"[:,]", r["cites"].partition(": ")[2])[0].strip(),
                      "MUST" if r["cites"].startswith("spec:") else "SHOULD")
            for r in cases.load_json("requirements.json")}


def rows(columns):
    """The table's rows: (section, level) -> {column index: (passed, checked, [failed Results])}, a case
    counted in the row of each section its requirements cite."""
    groups, table = sections(), {}
    for index, column in enumerate(columns):
        for result in column.results:
            if result.status not in ("pass", "fail", "flaky", "errored", "known-failure", "stale"):
                continue
            for row in sorted({groups[r] for r in result.case["requirements"]}):
                passed, checked, failed = table.setdefault(row, {}).get(index, (0, 0, []))
                ok = result.status in ("pass", "known-failure")
                table[row][index] = (passed + ok, checked + 1, failed + [result] * (not ok))
    return dict(sorted(table.items(), key=lambda item: (item[0][1] != "MUST", item[0][0])))


def alike(columns):
    """The failures two independent implementations (other names) share, case and cause alike:
    {(case id, cause): [column titles]}."""
    found = {}
    for column in columns:
        for result in column.results:
            if result.status in ("fail", "flaky"):
                found.setdefault((result.case["id"], report.cause(result)), {})[column.entry["name"]] = column.title
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


def _cell(cell):
    if cell is None:
        return "-"
    passed, checked, _ = cell
    return f"{passed}/{checked}" + (" ✗" if passed < checked else "")


def as_html(columns):
    """The matrix as one self-contained page: the table, each failing cell leading to its failures."""
    e, table = html.escape, rows(columns)
    parts = ["<!doctype html><html lang=en><meta charset=utf-8><title>Conformance matrix</title>",
             f"<style>{(cases.HERE / 'report.css').read_text(encoding='utf-8')}</style>",
             f"<h1>Conformance matrix</h1><p>{time.strftime('%Y-%m-%d %H:%M')}: the suites against "
             f"{len(columns)} implementations. A cell counts the cases passed of those that cite the group's "
             f"requirements; a red one leads to its failures.</p><ol>"]
    for column in columns:
        tally = report.counts(column.results)
        declared = column.entry.get("limits")
        parts.append(f"<li><b>{e(column.title)}</b>: " + (f"errored: {e(column.trouble)}" if column.trouble else
                     ", ".join(f"{tally[s]} {report.LABELS[s]}" for s in report.STATUSES if tally[s]))
                     + (f"; declared limits {e(json.dumps(declared))}" if declared else "") + "</li>")
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
                parts += [report.failure_html(result) for result in failed]
        known = column.entry.get("known") or []
        if known:
            parts.append("<table><tr><th>known failure</th><th>category</th><th>why</th></tr>" + "".join(
                f"<tr><td>{e(k['id'])}</td><td>{e(k['category'])}</td><td>{e(k['why'])}"
                + (f" (<a href='{e(k['link'])}'>link</a>)" if k.get("link") else "") + "</td></tr>" for k in known)
                + "</table>")
    return "\n".join(parts) + "\n</html>\n"


def _anchor(group):
    return re.sub(r"\W+", "-", group).strip("-").lower()
