"""The fuzz of `fuzz --app`, from a test suite: `fuzz_application(application)` fuzzes a WSGI or ASGI
application in process (targets/inprocess.py), and raises AssertionError with each failure, and the
seed that makes the same calls again, when one is found or when nothing could be checked."""

import contextlib
import io
import random
import time

from ..reports.terminal import print_failure
from ..targets.inprocess import Application
from .channel import Channel, Pace
from .fuzzer import UNREACHED, Fuzzer
from .verdicts import verdicts


def fuzz_application(application, seed=None, max_examples=50, time_limit=60.0, functions=(), skip=(), headers=None):
    """Fuzz a WSGI or ASGI application (or `module:name`) in process, as `fuzz --app` does; return the
    verdicts, or raise AssertionError with every failure when one is found or nothing was checked."""
    seed = random.randrange(2**32) if seed is None else seed
    fuzzer = Fuzzer(Channel(Application(application), Pace(None)), random.Random(seed), headers,
                         time.monotonic() + time_limit)
    chosen, found = fuzzer.functions(functions, skip), []
    fuzzer.run(chosen, max_examples, found)
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
