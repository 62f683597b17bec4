"""The HTML page of a fuzzing run (`fuzz --html FILE`): a table for each function, then each kind of failure.

How this works
--------------
A fuzzing run's Results are one for each function and check (fuzz/verdicts.py), with
each kind of failure a Result of its own: one cause for each distinct bug. The
page opens as every report does (formats.heading), then gives each function
a table: the calls made of it and the slowest one's time, and for each check
its verdict and what it rests on: the answers judged, the failure, or why it
was not run. The failures follow, each with its reproduction.
"""

import html

from .formats import EXPAND, failure_html, heading
from .results import plural

VERDICTS = {"pass": "passed", "fail": "failed", "flaky": "flaky", "known-failure": "known failure",
            "not-run": "not run", "errored": "errored"}


def as_html(results, subject, service, scope, functions):
    """The page of a fuzzing run of `functions`: (name, calls made, the slowest call's seconds or None)."""
    e = html.escape
    parts = heading(results, subject, service, scope, "Fuzzing")
    by_function = {}
    for result in results:
        by_function.setdefault(result.case.id.split("/")[1], []).append(result)  # (fuzz/FUNCTION/CHECK)
    failed = [r for r in results if r.failed or r.status == "known-failure"]
    parts.append(f"<h2>Functions: {len(functions)}</h2>")
    for name, calls, slowest in functions:
        mine = by_function.get(name, [])
        parts.append(f"<h3 id='{e(name)}'>{e(name)}</h3><p>{plural(calls, 'call')} made"
                     + (f"; the slowest took {slowest:.3f} s" if slowest is not None else "") + "</p>")
        parts.append("<table><tr><th>Check<th>Verdict<th>What it rests on</tr>" + "".join(
            f"<tr class={r.status}><td>{e(r.case.id.rsplit('/', 1)[1])}<td>{e(VERDICTS.get(r.status, r.status))}"
            f"<td>{e(_grounds(r))}</tr>" for r in mine) + "</table>")
    parts.append(f"<h2>Failures: {len(failed)}, one for each kind</h2>{EXPAND}" if failed else "<h2>No failures</h2>")
    parts += [failure_html(result) for result in failed]
    return "\n".join(parts) + "\n</html>\n"


def _grounds(result):
    """What a verdict rests on, in a line: its evidence, its first problem, or why it was not run."""
    if result.status == "not-run":
        return f"not run: {result.problems[0]}" if result.problems else "not run"
    if result.failed or result.status == "known-failure":
        return result.problems[0] if result.problems else result.status
    return result.evidence or ""
