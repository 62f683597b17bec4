"""The fuzz of `fuzz --app`, from a test suite: `fuzz_application(application)` fuzzes a WSGI or ASGI
application in process (targets/inprocess.py), and raises AssertionError with each failure, and the
seed that makes the same calls again, when one is found or when nothing could be checked.

It is a test's own assertion: pytest shows the test's line, not this module's (`__tracebackhide__`),
the known failures given are reported and fail nothing, and the lines the application logs while it is
fuzzed (one for each call that makes a handler raise) are held back from the test's captured log and
counted in the failure instead.
"""

import contextlib
import io
import logging
import random
from dataclasses import replace
from pathlib import Path

from ..language.suite import known_lines
from ..reports.terminal import print_failure
from ..runs.settings import Settings
from ..targets.inprocess import Application
from .channel import Channel, Pace
from .fuzzer import UNREACHED, Fuzzer
from .verdicts import verdicts


def fuzz_application(application, known_failures=(), **settings):
    """Fuzz a WSGI or ASGI application (or `module:name`) in process, as `fuzz --app` does, with the run's
    Settings given by keyword (runs/settings.py: seed, max_examples, functions, skip, headers, time_limit,
    checks, response_time, ...) and `known_failures` (fuzz/FUNCTION/CHECK globs, or a file of them);
    return the verdicts, or raise AssertionError with every failure when one is found or nothing was
    checked."""
    __tracebackhide__ = True  # (pytest: the failure is the test's line)
    known = frozenset(settings.pop("known", ())) | frozenset(_globs(known_failures))
    asked = replace(Settings(**settings, known=known), workers=1)  # (in process: one thread, one call at a time)
    seed = random.randrange(2**32) if asked.seed is None else asked.seed
    with _held_logs() as held:
        fuzzer = Fuzzer(Channel(Application(application), Pace(None)), random.Random(seed), asked)
        chosen, found = fuzzer.functions(), []
        fuzzer.run(chosen, found)
    results = verdicts(fuzzer, chosen, found, UNREACHED)
    failed = [result for result in results if result.failed]
    if failed or not any(result.status in ("pass", "known-failure") for result in results):
        told = io.StringIO()
        with contextlib.redirect_stdout(told):
            for result in failed:
                print_failure(result)
        logged = (f"\n(the application logged {len(held)} lines while it was fuzzed, held back from the captured "
                  f"log; the first: {held[0].getMessage()[:300]})" if held else "")
        raise AssertionError(f"fuzzing {fuzzer.channel.target.url} with seed {seed}: " + (
            f"{len(failed)} failing{told.getvalue()}" if failed else "nothing was checked") + logged)
    return results


def _globs(known_failures):
    """The globs of `known_failures`: a file of them (a path), or the globs themselves."""
    if isinstance(known_failures, (str, Path)):
        return [glob for glob, _ in known_lines(Path(known_failures).read_text(encoding="utf-8"))]
    return list(known_failures)


@contextlib.contextmanager
def _held_logs():
    """Hold back every log record made meanwhile from every handler, and yield the list they go to."""
    held = []
    def hold(record):  # (a filter that lets nothing through; a record met by several handlers is one)
        if not held or held[-1] is not record:
            held.append(record)
        return False
    handlers = {*logging.root.handlers, *filter(None, [logging.lastResort])}
    handlers |= {handler for logger in list(logging.Logger.manager.loggerDict.values())
                 for handler in getattr(logger, "handlers", ())}
    for handler in handlers:
        handler.addFilter(hold)
    try:
        yield held
    finally:
        for handler in handlers:
            handler.removeFilter(hold)
