"""Reports of a run: the summary line, reproductions, and JUnit, JSON and HTML files.

A reproduction is a shell command per step that sends the same bytes again
with curl, showing the status line and headers (`-i`); a MessagePack answer
is saved to a file of its own (`step-2.bin`), with a one-line way to read it.
The HTML report is one self-contained page: a summary by area and by
requirement, then every failure with its explanation and reproduction.
"""

import base64
import html
import json
import shlex
import time
from collections import Counter
from typing import NamedTuple
from xml.sax.saxutils import escape, quoteattr

from . import cases
from .cases import LEVELS

STATUSES = ("pass", "fail", "known-failure", "stale", "other-service", "not-checked", "set-aside")
READ_BINARY = ("python3 -c \"import msgpack, sys; print(msgpack.unpackb(open(sys.argv[1], 'rb').read(), "
               "strict_map_key=False))\" {file}")


def counts(results):
    tally = dict.fromkeys(STATUSES, 0)
    for result in results:
        tally[result.status] += 1
    return tally


class Scope(NamedTuple):
    """What a run was asked to check: features declared absent, the level, the id globs."""

    without: set = set()
    level: str = "MAY"
    ids: list = []


def failed_at(result):
    """How a failure reads: MUST, or a convention's level when the spec's part passed."""
    if result.level == "MUST" or "MUST" not in cases.levels(result.case):
        return result.level
    return f"{result.level}: the spec's own part passed"


def summary(results, scope=Scope()):
    """The last line of a run: what passed and failed, at which level, and what was set aside."""
    tally = counts(results)
    line = f"{tally['pass']} passed, {tally['fail']} failed"
    if tally["fail"]:
        levels = Counter(r.level for r in results if r.status == "fail")
        line += " (" + ", ".join(f"{levels[level]} {level}" for level in ("MUST", "SHOULD", "MAY") if levels[level]) + ")"
    if tally["known-failure"] or tally["stale"]:
        line += f", {tally['known-failure']} known failures, {tally['stale']} stale"
    if tally["other-service"]:
        line += f"; {tally['other-service']} for other services"
    if tally["not-checked"]:
        line += f"; {tally['not-checked']} not checked (without {', '.join(sorted(scope.without))})"
    if tally["set-aside"]:
        line += f"; {tally['set-aside']} set aside by --level {scope.level}"
    partly = sum(r.status in ("pass", "fail", "known-failure", "stale") and r.case["level"] not in LEVELS[scope.level]
                 for r in results)
    if partly:
        line += f"; {partly} checked only for what the spec demands (MUST)"
    return line


def reproduce(target, exchanges):
    """Shell commands that send a server case's requests again, one per step (runner.Exchange)."""
    commands = []
    for number, (data, method, path, media_type, answer) in enumerate(exchanges, 1):
        url = shlex.quote(f"http://{target.host}:{target.port}{path}")
        if method != "POST":
            commands.append(f"curl -s -i -X {method} {url}")
            continue
        try:
            text = data.decode() if data[:1] != b"\x92" else None
        except UnicodeDecodeError:
            text = None
        send = (f"--data-binary {shlex.quote(text)}" if text is not None
                else "--data-binary @-")
        pipe = "" if text is not None else f"echo {base64.b64encode(data).decode()} | base64 -d | "
        command = f"{pipe}curl -s -i -X POST {url} -H 'Content-Type: {media_type}' {send}"
        if answer[:1] == b"\x92":  # MessagePack: headers on the terminal, the answer to a file
            file = f"step-{number}.bin"
            command = command.replace("curl -s -i", "curl -s -D -") + f" -o {file}; {READ_BINARY.format(file=file)}"
        commands.append(command)
    return commands


def junit(results):
    """A JUnit XML report."""
    tally = counts(results)
    skipped = tally["known-failure"] + tally["other-service"] + tally["not-checked"]
    lines = [f'<testsuite name="conformance" tests="{len(results)}" failures="{tally["fail"] + tally["stale"]}" '
             f'skipped="{skipped}" timestamp="{time.strftime("%Y-%m-%dT%H:%M:%S")}">']
    for result in results:
        case = result.case
        lines.append(f'  <testcase classname={quoteattr(case["file"])} name={quoteattr(case["id"])} '
                     f'time="{result.seconds:.3f}">')
        detail = escape("\n".join(result.problems + list(result.replay)))
        if result.status in ("fail", "stale"):
            message = "passes but is listed as a known failure" if result.status == "stale" else result.problems[0]
            lines.append(f'    <failure message={quoteattr(message)}>{detail}</failure>')
        elif result.status != "pass":
            lines.append(f'    <skipped message={quoteattr(result.status)}>{detail}</skipped>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def as_json(results, target, service, scope):
    """A JSON report."""
    return json.dumps({
        "target": target.url, "service": service, "without": sorted(scope.without), "level": scope.level,
        "summary": counts(results),
        "cases": [{"id": r.case["id"], "status": r.status, "level": r.case["level"],
                   **({"failedLevel": r.level} if r.problems and r.level else {}),
                   "requires": r.case.get("requires", []), "features": r.case.get("features", []),
                   **({"client": r.case["client"]} if "client" in r.case else {}),
                   "requirements": r.case["requirements"], "seconds": round(r.seconds, 3), "problems": r.problems,
                   "reproduce": list(r.replay) if r.status in ("fail", "stale") else []}
                  for r in results]}, indent=2) + "\n"


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
.tally span { display: inline-block; padding: .5em 1em; margin: 0 .5em .5em 0; border-radius: 4px; }
.pass { background: #d9f2dd; } .fail, .stale { background: #f8d3d0; } .known-failure { background: #fbe9c6; }
.other-service, .not-checked, .set-aside { background: #e6e6e6; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .25em .6em; border-bottom: 1px solid #ddd;
text-align: left; vertical-align: top; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.bad td:first-child { border-left: 4px solid #c0392b; }
pre { background: #f6f6f6; padding: .6em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
details { margin: .6em 0; border: 1px solid #ddd; border-radius: 4px; padding: .4em .8em; }
details.failure { border-left: 4px solid #c0392b; }
summary { cursor: pointer; font-weight: 600; }
"""


def as_html(results, target, service, scope, requirements):
    """One self-contained HTML page: the run at a glance, then every failure in detail."""
    tally = counts(results)
    e = html.escape
    parts = [f"<!doctype html><html lang=en><meta charset=utf-8><title>Conformance of {e(target.url)}</title>",
             f"<style>{STYLE}</style><h1>Conformance of {e(target.url)}</h1>",
             f"<p>{e(service)}, {time.strftime('%Y-%m-%d %H:%M')}"
             + (f"; declared without {e(', '.join(sorted(scope.without)))}" if scope.without else "")
             + (f"; --level {e(scope.level)}" if scope.level != "MAY" else "") + "</p><p class=tally>",
             *(f"<span class={s}>{tally[s]} {LABELS[s]}</span>" for s in STATUSES if tally[s]), "</p>"]
    failures = [r for r in results if r.status in ("fail", "stale")]
    parts.append(f"<h2>Failures ({len(failures)})</h2>" if failures else "<h2>No failures</h2>")
    for result in failures:
        case = result.case
        parts.append(f"<details{' open' if len(failures) <= 10 else ''} class=failure><summary>{e(case['id'])}"
                     f"{' (stale: it passes, but is listed as a known failure)' if result.status == 'stale' else ''}"
                     f"</summary><p>{e(case['description'])} ({e(failed_at(result))}; {e(case['file'])}; "
                     f"checks {e(', '.join(case['requirements']))})</p><pre>{e(chr(10).join(result.problems))}</pre>"
                     f"<p>{e(result.replay_title)}:</p>"
                     f"<pre>{e(chr(10).join(result.replay))}</pre></details>")
    texts = {r["id"]: r["text"] for r in requirements}
    parts += ["<h2>By area</h2>", _table(_grouped(results, lambda r: [r.case["file"].removesuffix(".json")])),
              f"<details><summary>By requirement ({len(texts)})</summary>",
              _table(_grouped(results, lambda r: r.case["requirements"]), texts), "</details>"]
    return "\n".join(parts) + "\n</html>\n"


LABELS = {"pass": "passed", "fail": "failed", "known-failure": "known failures", "stale": "stale",
          "other-service": "for other services", "not-checked": "not checked", "set-aside": "set aside by --level"}


def _grouped(results, keys):
    groups = {}
    for result in results:
        for key in keys(result):
            groups.setdefault(key, dict.fromkeys(STATUSES, 0))[result.status] += 1
    return groups


def _table(groups, texts=None):
    e = html.escape
    head = "".join(f"<th>{LABELS[s]}</th>" for s in STATUSES)
    rows = [f"<table><tr><th>{'requirement' if texts else 'area'}</th>{head}</tr>"]
    for key, tally in sorted(groups.items()):
        bad = " class=bad" if tally["fail"] or tally["stale"] else ""
        title = f"{e(key)}<br><small>{e(texts.get(key, ''))}</small>" if texts else e(key)
        rows.append(f"<tr{bad}><td>{title}</td>" + "".join(f"<td class=n>{tally[s] or ''}</td>" for s in STATUSES)
                    + "</tr>")
    return "".join(rows) + "</table>"
