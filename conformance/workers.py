"""Fuzzing with several workers (`fuzz --workers N`): twins of one fuzzer, each with a share of the functions.

How this works
--------------
A twin is a Fuzzer of the same target and schema with a connection, a
generator and counts of its own, keeping to the same rate and deadline; it
starts with the credentials the fuzzer got (so the functions that give them
are called first, alone). Each twin fuzzes its share in a thread; the
Findings go into one list, and once all are done the fuzzer takes each
twin's counts as its own, so verdicts are made as for one worker.
"""

from concurrent.futures import ThreadPoolExecutor


def shared_out(fuzzer, functions, count, found, workers):
    """Fuzz `functions` with `workers` twins of `fuzzer`, each in a thread of its own and with a share of
    them; their Findings go into `found` as they come, and their counts into `fuzzer`'s."""
    twins = [fuzzer.twin(number) for number in range(min(workers, len(functions)))]
    try:
        with ThreadPoolExecutor(len(twins), thread_name_prefix="fuzz") as pool:
            done = [pool.submit(_fuzzed, one, functions[number::len(twins)], count, found)
                    for number, one in enumerate(twins)]
            try:
                for future in done:
                    future.result()
            except BaseException:  # (interrupted, or the target stopped: each twin stops at its next call)
                for one in twins:
                    one.deadline = 0
                raise
    finally:
        for one in twins:
            absorb(fuzzer, one)


def absorb(fuzzer, other):
    """Count what a twin judged, and why it judged nothing, as this fuzzer's own."""
    for mine, its in ((fuzzer.evidence, other.evidence), (fuzzer.seconds, other.seconds), (fuzzer.seen, other.seen)):
        mine.update(its)
    fuzzer.missed.update({key: why for key, why in other.missed.items() if key not in fuzzer.missed})
    fuzzer.varying |= other.varying
    fuzzer.tags.update(other.tags)
    fuzzer.sent += other.sent
    for key, kept in other.links.kept.items():
        fuzzer.links.kept[key].extend(kept)


def _fuzzed(fuzzer, functions, count, found):
    """Fuzz `functions` one after the other, adding the Findings to `found` as they come (a worker's job)."""
    for function in functions:
        for finding in fuzzer.examples(function, count):
            found.append(finding)
