"""The fuzz of `fuzz --app`, from a test suite: `fuzz_application(application)` fuzzes a WSGI or ASGI
application in process (targets/inprocess.py), and raises AssertionError with each failure, and the
seed that makes the same calls again, when one is found or when nothing could be checked."""

import contextlib
import io
import random
from dataclasses import replace

from ..reports.terminal import print_failure
from ..runs.settings import Settings
from ..targets.inprocess import Application
from .channel import Channel, Pace
from .fuzzer import UNREACHED, Fuzzer
from .verdicts import verdicts


def fuzz_application(application, **settings):
    """Fuzz a WSGI or ASGI application (or `module:name`) in process, as `fuzz --app` does, with the run's
    Settings given by keyword (runs/settings.py: seed, max_examples, functions, skip, headers, time_limit,
    known, ...); return the verdicts, or raise AssertionError with every failure when one is found or
    nothing was checked."""
    asked = replace(Settings(**settings), workers=1)  # (an application in process is called in one thread)
    seed = random.randrange(2**32) if asked.seed is None else asked.seed
    fuzzer = Fuzzer(Channel(Application(application), Pace(None)), random.Random(seed), asked)
    chosen, found = fuzzer.functions(), []
    fuzzer.run(chosen, found)
    results = verdicts(fuzzer, chosen, found, UNREACHED)
    failed = [result for result in results if result.failed]
    if failed or not any(result.status == "pass" for result in results):
        told = io.StringIO()
        with contextlib.redirect_stdout(told):
            for result in failed:
                print_failure(result)
        raise AssertionError(f"fuzzing {fuzzer.channel.target.url} with seed {seed}: " + (
            f"{len(failed)} failing{told.getvalue()}" if failed else "nothing was checked"))
    return results
