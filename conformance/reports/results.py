"""What a run comes to, case by case: a Result for each, its status one of STATUSES, and the words
every report says them with.

A Result is the outcome of one case (or, of a fuzzing run, of one check of
one function): its status, the problems found and at which level, lines that
show them again, and the evidence a verdict rests on. Every command makes
them (`outcome`), several runs of the same cases are `merged`, and every
format writes them (terminal.py, formats.py, grid.py). Every text in them has
gone through `printable`, whatever a target answered.
"""

import functools
import re
import time
from collections import Counter
from typing import NamedTuple

from ..language import suite

STATUSES = ("pass", "fail", "flaky", "errored", "known-failure", "stale", "not-run")
LABELS = {"pass": "passed", "fail": "failed", "flaky": "flaky", "errored": "errored", "known-failure": "known failures",
          "stale": "stale", "not-run": "not run"}
JUDGED = ("pass", "fail", "flaky", "known-failure", "stale")  # the statuses of a verdict that rests on answers


class Result(NamedTuple):
    """The outcome of one case: its `status` (one of STATUSES), and what it rests on."""

    case: object  # the Case (language/suite.py), or the check a fuzzing verdict is of
    status: str
    problems: list  # what was wrong, as readable lines; of a case not run, what kept it from running
    seconds: float
    level: str = ""  # for a case that found problems: MUST, or the case's level if only its conventions broke
    reason: str = ""  # of a case not run, why, in words that follow its count: "for other services", "not run"
    tries: tuple = ()  # of a case run several times: (how many times it failed, of how many it was judged)
    replay: tuple = ()  # for a case that found problems, lines that show them again: commands that
    replay_title: str = "To reproduce"  # resend a server case's requests, or a client case's story
    diagnostics: tuple = ()  # of a schema case: how the loader places problems otherwise (never a verdict)
    answer: str = ""  # of a failed server case: the last answer received, as text
    expected: str = ""  # and what its failing step expected, in the matching language
    evidence: str = ""  # what a fuzzing verdict rests on (a case's is its steps): the answers it judged

    @property
    def failed(self):
        """Whether it fails the run: a failure not listed as known, a known one that passed, or no answer."""
        return self.status in ("fail", "stale", "flaky", "errored")


def outcome(case, problems, level, started, replay=(), known=False):
    """The Result of a case begun at `started` that found `problems` at `level` (none: it passed), and the
    lines that show them again; a `known` failure is told apart, and one that passes is stale."""
    status = ("known-failure" if problems else "stale") if known else "fail" if problems else "pass"
    return Result(case, status, list(map(printable, problems)), time.monotonic() - started,
                  level if problems else "", replay=tuple(map(printable, replay)) if problems else ())


def not_run(case, reason, detail=""):
    """The Result of a case that was not run: `reason` follows its count ("for other services"), `detail`
    says more of this case ("needs calculator")."""
    return Result(case, "not-run", [_printable_once(detail)] if detail else [], 0, reason=reason)


@functools.lru_cache(maxsize=256)
def _printable_once(text):
    """printable(text), made once for a text many verdicts share (why a million were not run)."""
    return printable(text)


def counts(results):
    """How many results have each status."""
    found = Counter(r.status for r in results)  # (one pass: a fuzzing run may have millions)
    return {status: found[status] for status in STATUSES}


def tally(results):
    """What `results` come to, in the words every command says it with: "255 passed, 3 failed (2 MUST,
    1 SHOULD), 10 known failures; 1371 for other services" (why cases were not run said once, when they
    share it)."""
    count, levels = counts(results), Counter(r.level for r in results if r.status == "fail")
    told = f"{count['pass']} passed, {count['fail']} failed" + (" (" + ", ".join(
        f"{levels[level]} {level}" for level in ("MUST", "SHOULD", "MAY") if levels[level]) + ")") * bool(levels)
    told += f", {count['flaky']} flaky (failing only some of the times they ran)" * bool(count["flaky"])
    told += f", {plural(count['known-failure'], 'known failure')}" * bool(count["known-failure"])
    told += "".join(f", {count[status]} {status}" for status in ("stale", "errored") if count[status])
    unrun = {}
    for result in results:
        if result.status == "not-run":
            unrun.setdefault(result.reason or "not run", []).append(result.problems[0] if result.problems else "")
    for reason, details in sorted(unrun.items(), key=lambda item: item[0] == "not run"):  # (what ran short: last)
        told += f"; {len(details)} {reason}" + (f" ({details[0]})" if details[0] and len(set(details)) == 1 else "")
    return told


def merged(rounds):
    """One Result for each case run in several `rounds` of the same cases (run --repeat): a case failing
    in some rounds and passing in others is `flaky`, with how often; one failing in every round is failed
    (known) however its failures differ; a round without its answer (errored, not run) is no evidence."""
    tries_of = {}
    for results in rounds:
        for result in results:
            tries_of.setdefault(result.case.id, []).append(result)
    return [_merged(tries) for tries in tries_of.values()]


def _merged(tries):
    judged = [r for r in tries if r.status in JUDGED]
    if len(tries) == 1 or not judged:
        return tries[0]
    failing = [r for r in judged if r.status in ("fail", "known-failure")]
    first = (failing or judged)[0]
    rate = (len(failing), len(judged))
    if not failing or len(failing) == len(judged):  # the same verdict each time it was judged
        alike = len({gist(USER.sub("$user", "\n".join(r.problems))) for r in failing}) <= 1
        told = [] if alike else [f"it failed in each of the {len(judged)} runs, not the same way each time: "
                                 + "; ".join(f"run {number}: {r.problems[0] if r.problems else r.status}"
                                             for number, r in enumerate(tries, 1) if r in judged)]
        return first._replace(problems=first.problems + told, tries=rate)
    said = [f"run {number}: {r.problems[0] if r.problems else 'passed'}" for number, r in enumerate(tries, 1)
            if r in judged]
    if first.status == "known-failure":  # (it fails, as listed, though not every time)
        return first._replace(problems=first.problems + [f"it passed in {rate[1] - rate[0]} of {rate[1]} runs"],
                              tries=rate)
    return first._replace(status="flaky", problems=said, tries=rate)


USER = re.compile(r"cf-[0-9a-f]{12}")  # the username of a case, another in each run


UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # control characters, and halves of surrogate pairs


def printable(text):
    """`text` as every report can carry it, whatever a target answered: each control character (which a
    terminal would obey: a title, a cleared screen) and each half of a surrogate pair (which no UTF-8 file
    holds, nor XML) written as \\uXXXX."""
    return UNPRINTABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


VALUES = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')  # texts and numbers


def gist(problem):
    """A problem without the values in it (texts, numbers): what stays the same each time a failure is
    met, whatever varies by design (a caseId, a timestamp, a username)."""
    return re.sub(r"…(?:, …)+", "…", VALUES.sub("…", problem))  # (a path of any length is one value)


def seeded(seed):
    """What a fuzzing run's seed makes again, and no more: the calls depend on the answers too."""
    return f"--seed {seed} makes the same calls again where the target answers them as it did this time"


def plural(count, word):
    """"1 case", "2 cases"."""
    return f"{count} {word}{'s' * (count != 1)}"


class Scope(NamedTuple):
    """What a run was asked to check, and how it went: what every report says beside its Results."""

    without: set = set()  # features declared absent
    level: str = "MAY"
    ids: list = []  # id globs of the cases selected
    unselected: int = 0  # cases the globs left out
    last_failed: bool = False
    stopped: str = ""  # why the target stopped answering during the run, if it did
    implementation: dict = {}  # what the target is, as declared: name, version, language
    limits: dict = {}  # the limits the target declared
    exclude: list = []  # id globs of the cases left out
    seed: int | None = None  # of a fuzzing run: the seed of the values its calls were made of
    interrupted: str = ""  # what was never made, if Ctrl-C or SIGTERM ended the run
    rounds: tuple = (1, 1)  # runs of every case made (the last may be cut short), of those asked (--repeat)
    seconds: float = 0.0  # how long the run took
    suite: dict = {}  # the suite that made it: its version, and the digest of its fixture set
    keyword: str = ""  # the -k expression the ids selected hold

    @classmethod
    def of(cls, settings, unselected=0, stopped="", **how):
        """The Scope of a run made with `settings` (runs/settings.py), that left out `unselected` cases; `how`
        it went (interrupted, rounds, seconds)."""
        return cls(settings.without, settings.level, list(settings.ids), unselected, settings.last_failed, stopped,
                   settings.implementation, settings.limits, list(settings.exclude), settings.seed,
                   suite=suite.identity(), keyword=settings.keyword, **how)


def named(implementation):
    """An implementation as declared, in words: "name version (language)", or ""."""
    words = " ".join(implementation.get(key, "") for key in ("name", "version")).strip()
    language = implementation.get("language")
    return f"{words} ({language})" if words and language else words or language or ""
