"""The files a run writes: a JUnit XML report, a JSON one, and one self-contained HTML page.

The HTML page shows the failures by their cause (causes.py), each with its
first difference and its cases to expand, then a summary by area and by
requirement. Every text in them went through results.printable, whatever the
target answered, so each file is well-formed.
"""

import html
import json
import time
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from .causes import by_cause, failed_at, first_difference, mix, rule, summary
from .results import LABELS, STATUSES, Scope, counts, named, plural, seeded, tally

CSS = Path(__file__).parent / "report.css"  # the style of every page a run or the matrix writes


def junit(results, subject="", scope=Scope()):
    """A JUnit XML report."""
    count = counts(results)
    failures, errors = count["fail"] + count["stale"] + count["flaky"], count["errored"]
    skipped = len(results) - count["pass"] - failures - errors
    lines = [f'<testsuite name={quoteattr("conformance of " + (named(scope.implementation) or subject))} '
             f'tests="{len(results)}" failures="{failures}" errors="{errors}" skipped="{skipped}" '
             f'time="{scope.seconds:.3f}" timestamp="{time.strftime("%Y-%m-%dT%H:%M:%S")}">']
    about = {**{f"suite {key}": value for key, value in scope.suite.items()}, **_about(scope)}
    about.pop("suite", None)
    lines.append("  <properties>" + "".join(f'<property name="{name}" value={quoteattr(str(value))}/>'
                                            for name, value in about.items()) + "</properties>")
    for result in results:
        case = result.case
        lines.append(f'  <testcase classname={quoteattr(case.file)} name={quoteattr(case.id)} '
                     f'time="{result.seconds:.3f}">')
        detail = escape("\n".join(result.problems + [result.evidence] * bool(result.evidence) + list(result.replay)))
        if result.status == "errored":
            lines.append(f'    <error message={quoteattr(result.problems[0])}>{detail}</error>')
        elif result.failed:
            message = ("passes but is listed as a known failure" if result.status == "stale"
                       else f"{result.level} {rule(result)}: {'(flaky) ' * (result.status == 'flaky')}"
                            f"{result.problems[0]}")
            lines.append(f'    <failure message={quoteattr(message)}>{detail}</failure>')
        elif result.status != "pass":
            why = result.reason if result.status == "not-run" else LABELS[result.status]
            lines.append(f'    <skipped message={quoteattr(why)}>{detail}</skipped>')
        if result.evidence and not result.failed:
            lines.append(f'    <system-out>{escape(result.evidence)}</system-out>')
        if result.diagnostics:
            lines.append(f'    <system-out>{escape(chr(10).join(("diagnostics:", *result.diagnostics)))}</system-out>')
        lines.append("  </testcase>")
    lines.append("</testsuite>")
    return "\n".join(lines) + "\n"


def as_json(results, subject, service, scope):
    """A JSON report."""
    return json.dumps({
        "target": subject, "implementation": scope.implementation, "service": service, "limits": scope.limits,
        "without": sorted(scope.without), "level": scope.level, **({"stopped": scope.stopped} if scope.stopped else {}),
        **_about(scope), "summary": counts(results), "said": tally(results),
        "cases": [{"id": r.case.id, "status": r.status, "level": r.case.level,
                   **({"reason": r.reason} if r.reason else {}), **({"tries": list(r.tries)} if r.tries else {}),
                   **({"failedLevel": r.level} if r.problems and r.level else {}),
                   "requires": r.case.requires, "features": r.case.features,
                   **({"client": r.case.client} if r.case.client is not None else {}),
                   "requirements": r.case.requirements, "seconds": round(r.seconds, 3), "problems": r.problems,
                   "reproduce": list(r.replay) if r.failed else [], **({"answer": r.answer} if r.answer else {}),
                   **({"expected": r.expected} if r.expected else {}),
                   **({"evidence": r.evidence} if r.evidence else {}),
                   **({"diagnostics": list(r.diagnostics)} if r.diagnostics else {})}
                  for r in results]}, indent=2) + "\n"


def _about(scope):
    """What every report says of how its run went, and of the suite that made it."""
    return {"suite": scope.suite, "seconds": round(scope.seconds, 3),
            **({"seed": scope.seed} if scope.seed is not None else {}),
            **({"interrupted": scope.interrupted} if scope.interrupted else {}),
            **({"runs": {"made": scope.rounds[0], "asked": scope.rounds[1]}} if scope.rounds[1] > 1 else {})}


EXPAND = ("<p><button onclick=\"document.querySelectorAll('details').forEach(d => d.open = true)\">Expand all"
          "</button><button onclick=\"document.querySelectorAll('details').forEach(d => d.open = false)\">"
          "Collapse all</button></p>")


def as_html(results, subject, service, scope, requirements):
    """One self-contained HTML page: the run at a glance, then every failure in detail."""
    e = html.escape
    parts = heading(results, subject, service, scope, "Conformance")
    texts = {r["id"]: r["text"] for r in requirements}
    groups = by_cause(results)
    failures = sum(len(group) for *_, group in groups)
    parts.append(f"<h2>Failures: {failures}, by their cause ({len(groups)})</h2>{EXPAND}" if groups
                 else "<h2>No failures</h2>")
    for name, level, broken, group in groups:
        parts.append(f"<details class=rule><summary><span class='level {e(level)}'>{e(level)}</span>"
                     f"<b>{e(name)}</b> <b>({plural(len(group), 'case')}{': ' + e(mix(group)) if mix(group) else ''})</b>"
                     f"<p class=first>breaks <b>{e(broken)}</b>: {e(texts.get(broken, ''))}</p>"
                     f"<p class=first>first difference, in {e(group[0].case.id)}: "
                     f"{e(first_difference(group[0]))}</p></summary>")
        parts += [failure_html(result) for result in group]
        parts.append("</details>")
    known = [r for r in results if r.status == "known-failure"]
    if known:
        parts.append(f"<h2>Known failures: {len(known)}</h2><p>Listed as known, so they fail no run; each is still a "
                     f"failure, and none is counted as passed.</p>")
        parts += [failure_html(result) for result in known]
    differ = [r for r in results if r.diagnostics]
    if differ:
        parts.append(f"<h2>Diagnostics: {plural(len(differ), 'case')} with problems placed otherwise</h2><p>The verdicts are right; "
                     f"where each problem is placed is a convention (conv.schema-problems), never a failure.</p>")
        parts += [f"<details class=failure><summary>{e(r.case.id)}</summary><pre>{e(chr(10).join(r.diagnostics))}"
                  f"</pre></details>" for r in differ]
    parts += ["<h2>By area</h2>", _table(_grouped(results, lambda r: [r.case.file.removesuffix(".json")])),
              f"<details><summary>By requirement ({len(texts)})</summary>",
              _table(_grouped(results, lambda r: r.case.requirements), texts), "</details>"]
    return "\n".join(parts) + "\n</html>\n"


def heading(results, subject, service, scope, what):
    """The start of a page: `what` the run is ("Conformance", "Fuzzing") of whom, when and how, at a glance."""
    count, e = counts(results), html.escape
    title = named(scope.implementation) or subject
    return [f"<!doctype html><html lang=en><meta charset=utf-8><title>{e(what)} of {e(title)}</title>",
            f"<style>{CSS.read_text(encoding='utf-8')}</style>",
            f"<h1>{e(what)} of {e(title)}</h1>",
            f"<p>{e(subject) + ', ' if title != subject else ''}{e(service)}, {time.strftime('%Y-%m-%d %H:%M')}"
            + (f"; declared without {e(', '.join(sorted(scope.without)))}" if scope.without else "")
            + (f"; declared limits: {e(', '.join(f'{k} {v:,}' for k, v in scope.limits.items()))}" if scope.limits else "")
            + (f"; the target {e(scope.stopped)}" if scope.stopped else "")
            + (f"; --level {e(scope.level)}" if scope.level != "MAY" else "")
            + (f"; seed {scope.seed} ({seeded(scope.seed)})" if scope.seed is not None else "")
            + f"; it took {scope.seconds:.1f} s"
            + f". Made by the suite {e(scope.suite.get('version', '?'))}, fixture set {e(scope.suite.get('fixtures', '?'))}."
            + "</p>" + (f"<p class=interrupted>Cut short: {e(scope.interrupted)}; what it did not reach is not run, "
                        "never passed.</p>" if scope.interrupted else "") + "<p class=tally>",
            *(f"<span class={s}>{count[s]} {LABELS[s]}</span>" for s in STATUSES if count[s]), "</p>",
            f"<p>{e(summary(results, scope))}</p>"]


def failure_html(result):
    """One failed case (or known failure, or stale one), to expand: what it checks, every difference, and
    how to see it again."""
    e, case = html.escape, result.case
    status = {"stale": " (stale: it passes, but is listed as a known failure: remove it from the list)",
              "known-failure": " (a known failure)", "flaky": " (flaky)"}.get(result.status, "")
    shown = "" if result.status == "stale" else (
        f"<pre>{e(chr(10).join(result.problems) or first_difference(result))}</pre>"
        + (f"<p>{e(result.evidence)}</p>" if result.evidence else "")
        + (f"<p>The answer expected (in the matching language):</p><pre>{e(result.expected)}</pre>"
           if result.expected else "")
        + (f"<p>The answer received:</p><pre>{e(result.answer)}</pre>" if result.answer else "")
        + (f"<p>{e(result.replay_title)}:</p><pre>{e(chr(10).join(result.replay))}</pre>" if result.replay else ""))
    return (f"<details class=failure><summary>{e(case.id)}{e(status)}</summary><p>{e(case.description)} "
            f"({e(failed_at(result))}; {e(case.file)}{'; checks ' * bool(case.requirements)}"
            f"{e(', '.join(case.requirements))})</p>"
            f"{shown}</details>")


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
    for key, count in sorted(groups.items()):
        bad = " class=bad" if count["fail"] or count["stale"] or count["flaky"] or count["errored"] else ""
        title = f"{e(key)}<br><small>{e(texts.get(key, ''))}</small>" if texts else e(key)
        rows.append(f"<tr{bad}><td>{title}</td>" + "".join(f"<td class=n>{count[s] or ''}</td>" for s in STATUSES)
                    + "</tr>")
    return "".join(rows) + "</table>"
