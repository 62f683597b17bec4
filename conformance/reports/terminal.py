"""What a run says on the terminal: its progress, each failure as it is found, the summary and
its causes, and the reports it writes at the end (run, client, schema and fuzz share them)."""

import json
import os
import sys
from pathlib import Path
from typing import NamedTuple

from ..language import suite
from . import formats
from .causes import causes, diagnostics, failed_at, summary
from .results import Result, Scope, merged, plural


class Ending(NamedTuple):
    """How a run of cases ended: its results, and why it ended before its last case ("" if it did not)."""

    results: list
    interrupted: str = ""  # Ctrl-C or SIGTERM
    stopped: str = ""  # the target stopped answering


def running(settings, selected, run, target=None):
    """Run with a progress line (or a line per case with -v); print each failure; return the Ending:
    the results, those of the cases --maxfail, or a `target` that stopped answering, kept from starting
    among them."""
    done, terminal, interrupted = [], sys.stdout.isatty(), ""

    def progress(result):
        done.append(result)
        if settings.verbose:
            colour = "green" if result.status == "pass" else "red" if result.failed else "yellow"
            print(f"{painted(f'{result.status.upper():>13}', colour)} {result.case.id}", flush=True)
        elif terminal:
            print(f"\r[{len(done)}/{len(selected)}] {result.case.id[:60]:<60}", end="", flush=True)
        return settings.maxfail is not None and sum(r.status in ("fail", "stale") for r in done) >= settings.maxfail

    try:
        results, why = run(progress), f"--maxfail {settings.maxfail} stopped the run"
    except KeyboardInterrupt:  # a summary and reports of what ran, as pytest gives
        order = {c.id: number for number, c in enumerate(selected)}
        results = sorted(merged([done]), key=lambda r: order[r.case.id])
        why = interrupted = "the run was interrupted"
    ran, stopped = {r.case.id for r in results}, target.stopped if target else ""
    why = f"the target {stopped}" if stopped else why
    results += [Result(c, "not-run", [f"{why} first"], 0) for c in selected if c.id not in ran]
    if terminal and not settings.verbose:
        print("\r" + " " * 80 + "\r", end="")
    if stopped or interrupted:
        print(f"\n{why[0].upper()}{why[1:]}: {plural(len(selected) - len(ran), 'case')} left "
              f"{'was' if len(selected) - len(ran) == 1 else 'were'} not run.", flush=True)
    for result in results:
        if result.failed and result.status != "errored":  # (those the target left unanswered: told once, above)
            print_failure(result)
    return Ending(results, interrupted, stopped)


NOTHING_RAN = 5  # the exit status when no case ran, as pytest's when no test ran


def finish(settings, ending, subject, service, unselected):
    """Write the reports of how a run ended (with `ending.results`, the cases set aside), print the summary,
    and return the exit status: 130 when interrupted, 2 when the
    target stopped answering, else 1 when a case failed, 5 when none ran."""
    results, stopped = ending.results, ending.stopped
    scope = Scope.of(settings, unselected, stopped)
    requirements = write_reports(settings, results, subject, service, scope)
    grouped = causes(results, {r["id"]: r["text"] for r in requirements})
    if grouped:
        print("\n" + "\n".join(grouped))
    if diagnostics(results):
        print("\n" + "\n".join(diagnostics(results)))
    if settings.durations is not None:
        ran = sorted((r for r in results if r.seconds), key=lambda r: -r.seconds)[:settings.durations or None]
        print(f"\nThe {plural(len(ran), 'slowest case')}:" if settings.durations else "\nEvery case, slowest first:")
        print("\n".join(f"{r.seconds:8.3f} s  {r.case.id}" for r in ran))
    print(painted(summary(results, scope), "red" if any(r.failed for r in results) or stopped else "green"))
    ran = any(r.status in ("pass", "fail", "flaky", "known-failure", "stale") for r in results)
    if not ran and not ending.interrupted:
        print("No case ran: none of those selected applies to this target (exit status 5, as pytest's).")
    return (130 if ending.interrupted else 2 if stopped else 1 if any(r.failed for r in results) else
            0 if ran else NOTHING_RAN)


def write_reports(settings, results, subject, service, scope):
    """Write the reports --junit, --json and --html ask for; return the requirements they cite."""
    requirements = suite.load_json("requirements.json")
    reports = {"junit": lambda: formats.junit(results, subject, scope),
               "json": lambda: formats.as_json(results, subject, service, scope),
               "html": lambda: formats.as_html(results, subject, service, scope, requirements)}
    for form, make in reports.items():
        if form in settings.reports:
            Path(settings.reports[form]).write_text(make(), encoding="utf-8")
    return requirements


def print_failure(result):
    case = result.case
    label = {"flaky": "FLAKY", "errored": "ERRORED", "stale": "STALE"}.get(result.status, "FAIL")
    level = "listed as a known failure" if result.status == "stale" else failed_at(result)
    print(f"\n{painted(label, 'red')} {case.id} ({level}; {case.file}; checks {', '.join(case.requirements)})")
    print(f"  {case.description}")
    if result.status == "stale":
        print("  It passes, but the known-failures file lists it: remove it from there.")
    for line in result.problems[:10]:
        print(f"  {line}")
    if result.evidence:
        print(f"  {result.evidence}")
    if result.answer:
        print(f"  The answer received: {result.answer[:300]}" + (" ..." if len(result.answer) > 300 else ""))
    if len(result.problems) > 10:
        print(f"  ... and {len(result.problems) - 10} more differences (all of them are in the --json report)")
    if result.replay:
        print(f"  {result.replay_title}:")
        for line in result.replay:  # a command too long to read on a terminal is cut here, not in the reports
            print("    " + (line if len(line) <= 1000 else line[:1000] + " ... (cut: the whole command is in the "
                                                                     "--json and --html reports)"))


COLOURS = {"red": "31", "green": "32", "yellow": "33"}  # ANSI codes


def painted(text, colour):
    """`text` in `colour` on a terminal, unless NO_COLOR is set (no-color.org)."""
    if not sys.stdout.isatty() or os.environ.get("NO_COLOR"):
        return text
    return f"\033[{COLOURS[colour]}m{text}\033[0m"


def call_line(message, binary, status, answer):
    """fuzz -v: one line for each call, and what it was answered."""
    body = answer[1] if type(answer) is list and len(answer) == 2 else None
    tag = next(iter(body), "?") if type(body) is dict else f"HTTP {status}, no message"
    print(f"    {'MessagePack' if binary else 'JSON':<11} {json.dumps(message, ensure_ascii=False)[:150]} -> {tag}",
          flush=True)
