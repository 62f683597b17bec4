"""What a run says on the terminal: its progress, each failure as it is found, the summary and
its causes, and the reports it writes at the end (run, client, schema and fuzz share them)."""

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import NamedTuple

from ..language import suite
from . import formats
from .causes import causes, diagnostics, failed_at, first_difference, summary
from .results import JUDGED, Scope, merged, not_run, plural


class Ending(NamedTuple):
    """How a run of cases ended: its results, and why it ended before its last case ("" if it did not)."""

    results: list
    interrupted: str = ""  # Ctrl-C or SIGTERM: what it left undone
    stopped: str = ""  # the target stopped answering
    rounds: tuple = (1, 1)  # runs of every case made (the last may be cut short), of those asked (--repeat)
    seconds: float = 0.0


def running(settings, selected, run, target=None):
    """Run the cases `selected` as many times as --repeat says, each time with `run(progress)`, with a
    progress line (or a line per case with -v); print each failure; return the Ending: one Result for each
    case (results.merged), those that no run reached `not-run`, with why (--maxfail, Ctrl-C, or a `target`
    that stopped answering, after which no run starts)."""
    done, terminal, rounds, asked, started = [], sys.stdout.isatty(), [], settings.repeat, time.monotonic()
    interrupted, saying = "", threading.Lock()  # (workers finish at once: one line at a time, never two glued)

    def progress(result):
        with saying:
            done.append(result)
            if settings.verbose:
                colour = "green" if result.status == "pass" else "red" if result.failed else "yellow"
                print(f"{painted(f'{result.status.upper():>13}', colour)} {result.case.id}", flush=True)
            elif terminal:
                run_of = f"run {len(rounds) + 1} of {asked}: " * (asked > 1)
                print(f"\r{run_of}[{len(done)}/{len(selected)}] {result.case.id[:60]:<60}", end="", flush=True)
            return settings.maxfail is not None and sum(r.status in ("fail", "stale") for r in done) >= settings.maxfail

    why = f"--maxfail {settings.maxfail} stopped the run"
    try:
        while len(rounds) < asked and not (target and target.stopped) and not _ended(rounds, settings):
            done.clear()
            rounds.append(run(progress))
    except KeyboardInterrupt:  # a summary and reports of what ran, as pytest gives
        rounds.append(list(done))
        why = "the run was interrupted"
        interrupted = why + (f" in run {len(rounds)} of {asked}" if asked > 1 else "")
    order = {c.id: number for number, c in enumerate(selected)}
    results = sorted(merged(rounds), key=lambda r: order[r.case.id])
    ran, stopped = {r.case.id for r in results}, target.stopped if target else ""
    results += [not_run(c, "not run", f"{'the target stopped answering' if stopped else why} first")
                for c in selected if c.id not in ran]
    why = f"the target {stopped}" if stopped else why
    if terminal and not settings.verbose:
        print("\r" + " " * 80 + "\r", end="")
    if stopped or interrupted:
        left = len(selected) - sum(r.status in JUDGED for r in rounds[-1]) if rounds else len(selected)
        print(f"\n{why[0].upper()}{why[1:]}" + (
            f" in run {len(rounds)} of {asked}: {plural(left, 'case')} of that run {'was' if left == 1 else 'were'} "
            f"not run" + (f", and {plural(asked - len(rounds), 'run')} of every case never made" * (asked > len(rounds)))
            if asked > 1 else f": {plural(left, 'case')} {'was' if left == 1 else 'were'} not run") + ".", flush=True)
    for result in results:
        if result.failed and result.status != "errored":  # (those the target left unanswered: told once, above)
            if settings.quiet:
                print(f"{result.status.upper()} {result.case.id}: {first_difference(result)}")
            else:
                print_failure(result)
    return Ending(results, interrupted, stopped, (len(rounds), asked), time.monotonic() - started)


def _ended(rounds, settings):
    """Whether a run stopped by --maxfail ends the rounds too."""
    return bool(rounds) and settings.maxfail is not None and sum(
        r.status in ("fail", "stale") for results in rounds for r in results) >= settings.maxfail


NOTHING_RAN = 5  # the exit status when no case ran, as pytest's when no test ran


def finish(settings, ending, subject, service, unselected):
    """Write the reports of how a run ended (with `ending.results`, the cases set aside), print the summary,
    and return the exit status: 130 when interrupted, 2 when the
    target stopped answering, else 1 when a case failed, 5 when none ran."""
    results, stopped = ending.results, ending.stopped
    scope = Scope.of(settings, unselected, stopped, interrupted=ending.interrupted, rounds=ending.rounds,
                     seconds=ending.seconds)
    requirements = write_reports(settings, results, subject, service, scope)
    grouped = causes(results, {r["id"]: r["text"] for r in requirements}) if not settings.quiet else []
    if grouped:
        print("\n" + "\n".join(grouped))
    known = [r.case.id for r in results if r.status == "known-failure"]
    if known:
        print(f"\n{plural(len(known), 'known failure')}, listed as such (failing no run): {', '.join(known[:10])}"
              + (f" and {len(known) - 10} more (the --json and --html reports show each)" if len(known) > 10 else ""))
    if diagnostics(results):
        print("\n" + "\n".join(diagnostics(results)))
    if settings.durations is not None:
        ran = sorted((r for r in results if r.seconds), key=lambda r: -r.seconds)[:settings.durations or None]
        print(f"\nThe {plural(len(ran), 'slowest case')}:" if settings.durations else "\nEvery case, slowest first:")
        print("\n".join(f"{r.seconds:8.3f} s  {r.case.id}" for r in ran))
    print(painted(summary(results, scope), "red" if any(r.failed for r in results) or stopped else "green"))
    ran = any(r.status in JUDGED for r in results)
    if not ran and not ending.interrupted:
        print("No case ran: none of those selected applies to this target (exit status 5, as pytest's).")
    return (130 if ending.interrupted else 2 if stopped else 1 if any(r.failed for r in results) else
            0 if ran else NOTHING_RAN)


def write_reports(settings, results, subject, service, scope, page=None):
    """Write the reports --junit, --json and --html ask for (the HTML one by `page()` where given: a fuzzing
    run's); return the requirements they cite."""
    requirements = suite.load_json("requirements.json")
    reports = {"junit": lambda: formats.junit(results, subject, scope),
               "json": lambda: formats.as_json(results, subject, service, scope),
               "html": page or (lambda: formats.as_html(results, subject, service, scope, requirements))}
    for form, make in reports.items():
        if form in settings.reports:
            Path(settings.reports[form]).write_text(make(), encoding="utf-8")
    return requirements


def print_failure(result):
    case = result.case
    label = {"flaky": "FLAKY", "errored": "ERRORED", "stale": "STALE"}.get(result.status, "FAIL")
    level = "listed as a known failure" if result.status == "stale" else failed_at(result)
    if result.status == "flaky" and result.tries:
        level = f"failing {result.tries[0]} of {result.tries[1]} times; {level}"
    rests = f"; checks {', '.join(case.requirements)}" if case.requirements else ""
    print(f"\n{painted(label, 'red')} {case.id} ({level}; {case.file}{rests})")
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
    text = json.dumps(message, ensure_ascii=False)
    print(f"    {'MessagePack' if binary else 'JSON':<11} {text if len(text) <= 150 else text[:149] + '…'} -> {tag}",
          flush=True)
