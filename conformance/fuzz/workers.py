"""Fuzzing with several workers (`fuzz --workers N`): twins of one fuzzer, each with a share of the functions.

How this works
--------------
A twin is a Fuzzer of the same target and schema with a connection, a
generator and counts of its own, keeping to the same deadline and a share of
the rate; it starts with the credentials the fuzzer got (so the functions
that give them are called first, alone). Each twin fuzzes its share in a
process of its own where the system can fork one: making and judging calls
is Python's work, which threads of one process take in turns (against the
bundled calculator on two cores, two threads made about 1,400 requests a
second, two processes about 1,700). A process sends back its Findings and
its counts when it is done, or interrupted, or stopped by a target that no
longer answers. Workers end with their run: an interrupted run (Ctrl-C,
SIGTERM) interrupts each, which sends back what it found so far, and one
whose run is gone (killed) stops at once. An application called in process,
or a system that cannot fork, has the twins in threads. Once all are done the fuzzer takes each
twin's counts as its own, so verdicts are made as for one worker.
"""

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from ..targets.remote import Target, Trouble


def shared_out(fuzzer, functions, count, found, workers):
    """Fuzz `functions` with `workers` twins of `fuzzer`, each with a share of them, in processes (or
    threads: see above); their Findings go into `found`, and their counts into `fuzzer`'s."""
    twins = [fuzzer.twin(number) for number in range(min(workers, len(functions)))]
    shares = [functions[number::len(twins)] for number in range(len(twins))]
    if isinstance(fuzzer.channel.target, Target) and "fork" in multiprocessing.get_all_start_methods():
        return _in_processes(fuzzer, twins, shares, count, found)
    try:
        with ThreadPoolExecutor(len(twins), thread_name_prefix="fuzz") as pool:
            done = [pool.submit(_fuzzed, one, share, count, found) for one, share in zip(twins, shares)]
            try:
                for future in done:
                    future.result()
            except BaseException:  # (interrupted, or the target stopped: each twin stops at its next call)
                for one in twins:
                    one.deadline = 0
                raise
    finally:
        for one in twins:
            absorb(fuzzer, counts(one))


class Counts(NamedTuple):
    """What a twin judged, and why it judged nothing: what a worker hands back (from a process, pickled)."""

    evidence: Counter
    seconds: Counter
    seen: Counter
    missed: dict
    varying: set
    tags: dict
    sent: int
    kept: dict  # (name, type) -> the values it carried
    slowest: dict  # function -> its slowest calls


def counts(twin):
    """A twin's Counts."""
    return Counts(twin.evidence, twin.seconds, twin.seen, twin.missed, twin.varying, twin.tags, twin.channel.sent,
                  {key: list(kept) for key, kept in twin.links.kept.items()}, twin.slowest)


def absorb(fuzzer, other):
    """Count what a twin judged (its Counts), and why it judged nothing, as this fuzzer's own."""
    for mine, its in ((fuzzer.evidence, other.evidence), (fuzzer.seconds, other.seconds), (fuzzer.seen, other.seen)):
        mine.update(its)
    fuzzer.missed.update({key: why for key, why in other.missed.items() if key not in fuzzer.missed})
    fuzzer.varying |= other.varying
    fuzzer.tags.update(other.tags)
    fuzzer.channel.sent += other.sent
    fuzzer.slowest.update(other.slowest)  # (each function is one worker's)
    for key, kept in other.kept.items():
        fuzzer.links.kept[key].extend(kept)


def _fuzzed(fuzzer, functions, count, found):
    """Fuzz `functions` one after the other, adding the Findings to `found` as they come (a worker's job)."""
    for function in functions:
        for finding in fuzzer.examples(function, count):
            found.append(finding)


def _in_processes(fuzzer, twins, shares, count, found):
    """Each twin in a forked process; what they send back is absorbed, then what stopped one is raised."""
    context, started, stopped = multiprocessing.get_context("fork"), [], None
    sys.stdout.flush()  # (else what is still buffered would be written by each process too)
    for one, share in zip(twins, shares):
        one.channel.pace = fuzzer.channel.pace.share(len(twins))
        reading, writing = context.Pipe(duplex=False)
        process = context.Process(target=_process, args=(one, share, count, writing), daemon=True)
        process.start()
        writing.close()
        started.append((reading, process))
    for reading, process in started:
        while True:
            try:
                mine, its, error = reading.recv()
                break
            except KeyboardInterrupt as interrupt:  # (each twin is told, if Ctrl-C did not tell it too, and
                stopped = interrupt  # sends what it found so far)
                for _, each in started:
                    if each.is_alive():
                        os.kill(each.pid, signal.SIGINT)
            except EOFError:  # it died without a word (killed): its share is lost
                mine, its, error = [], None, Trouble("a worker of --workers ended without its results")
                break
        process.join()
        found += mine
        if its:
            absorb(fuzzer, its)
        stopped = stopped or error
    if stopped:
        raise stopped


def _process(one, share, count, writing):
    """A twin's process: fuzz its share, then send back its Findings, its Counts, and what stopped it (an
    interruption, a target that stopped answering), if anything did."""
    threading.Thread(target=_orphaned, args=(os.getppid(),), daemon=True).start()
    mine, error = [], None
    try:
        _fuzzed(one, share, count, mine)
    except (KeyboardInterrupt, Trouble) as stopped:
        error = stopped
    for each in (signal.SIGINT, signal.SIGTERM):  # (told once is enough: what it found goes back whole)
        signal.signal(each, signal.SIG_IGN)
    writing.send((mine, counts(one), error))
    writing.close()


def _orphaned(parent, every=0.1):
    """End this worker's process as soon as its run's process is gone (killed: no one would read what it
    finds, and it would go on calling the target until the time limit)."""
    while os.getppid() == parent:
        time.sleep(every)
    os._exit(1)
