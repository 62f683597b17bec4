"""What a run comes to, case by case: a Result for each, its status one of STATUSES, and the words
every report says them with.

A Result is the outcome of one case (or, of a fuzzing run, of one check of
one function): its status, the problems found and at which level, lines that
show them again, and the evidence a verdict rests on. Every command makes
them (`outcome`), several runs of the same cases are `merged`, and every
format writes them (terminal.py, formats.py, grid.py). Every text in them has
gone through `printable`, whatever a target answered.
"""

import re
import time
from typing import NamedTuple

STATUSES = ("pass", "fail", "flaky", "errored", "known-failure", "stale", "other-service", "not-checked", "set-aside",
            "not-run")


LABELS = {"pass": "passed", "fail": "failed", "flaky": "flaky", "errored": "errored", "known-failure": "known failures",
          "stale": "stale", "other-service": "for other services", "not-checked": "not checked",
          "set-aside": "set aside by --level", "not-run": "not run"}


class Result(NamedTuple):
    """The outcome of one case; `status` is one of STATUSES."""

    case: dict
    status: str
    problems: list  # readable lines
    seconds: float
    level: str = ""  # for a case that found problems: MUST, or the case's level if only its conventions broke
    replay: tuple = ()  # for a case that found problems, lines that show them again: commands that
    replay_title: str = "To reproduce"  # resend a server case's requests, or a client case's story
    diagnostics: tuple = ()  # of a schema case: how the loader places problems otherwise (never a verdict)
    answer: str = ""  # of a failed server case: the last answer received, as text
    evidence: str = ""  # what a fuzzing verdict rests on (a case's is its steps): the answers it judged

    @property
    def failed(self):
        return self.status in ("fail", "stale", "flaky", "errored")


def outcome(case, problems, level, started, replay=(), known=False):
    """The Result of a case begun at `started` that found `problems` at `level` (none: it passed), and the
    lines that show them again; a `known` failure is told apart, and one that passes is stale."""
    status = ("known-failure" if problems else "stale") if known else "fail" if problems else "pass"
    return Result(case, status, list(map(printable, problems)), time.monotonic() - started,
                  level if problems else "", tuple(map(printable, replay)) if problems else ())


def counts(results):
    """How many results have each status."""
    return {status: sum(r.status == status for r in results) for status in STATUSES}


def merged(runs):
    """One Result for each case of several runs of the same cases: the first run's, unless the case's
    outcomes differ from run to run, which makes it `flaky`; what varies by design (usernames, a caseId,
    any value: gist) does not make them differ, where a difference is does."""
    by_id = {}
    for results in runs:
        for result in results:
            by_id.setdefault(result.case.id, []).append(result)
    merged_ = []
    for tries in by_id.values():
        seen = [(r.status, gist(USER.sub("$user", "\n".join(r.problems)))) for r in tries]
        first = tries[0]
        if len(set(seen)) > 1 and first.status not in ("known-failure", "stale"):
            problems = [f"run {number}: {r.problems[0] if r.problems else r.status}" for number, r in enumerate(tries, 1)]
            failing = next((r for r in tries if r.problems), first)
            first = failing._replace(status="flaky", problems=problems)
        merged_.append(first)
    return merged_


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


def plural(count, word):
    """"1 case", "2 cases"."""
    return f"{count} {word}{'s' * (count != 1)}"


class Scope(NamedTuple):
    """What a run was asked to check: features declared absent, level, id globs, cases the globs left out."""

    without: set = set()
    level: str = "MAY"
    ids: list = []
    unselected: int = 0
    last_failed: bool = False
    stopped: str = ""  # why the target stopped answering during the run, if it did
    implementation: dict = {}  # what the target is, as declared: name, version, language
    limits: dict = {}  # the limits the target declared
    exclude: list = []  # id globs of the cases left out
    seed: int | None = None  # of a fuzzing run: the same seed makes the same calls again

    @classmethod
    def of(cls, settings, unselected=0, stopped=""):
        """The Scope of a run made with `settings` (runs/settings.py), that left out `unselected` cases."""
        return cls(settings.without, settings.level, list(settings.ids), unselected, settings.last_failed, stopped,
                   settings.implementation, settings.limits, list(settings.exclude), settings.seed)


def named(implementation):
    """An implementation as declared, in words: "name version (language)", or ""."""
    words = " ".join(implementation.get(key, "") for key in ("name", "version")).strip()
    language = implementation.get("language")
    return f"{words} ({language})" if words and language else words or language or ""
