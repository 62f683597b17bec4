"""What a fuzzing run comes to: a verdict for each function and check, each with its evidence.

How this works
--------------
CHECKS names what each check holds an answer to; a `Finding` is a call that
failed one, and its `kind` tells failures apart. The fuzzer (fuzzer.py) counts, for each function and check, the answers the
check judged (its evidence), says why a check judged none, and keeps the
first Finding of each kind of failure, shrunk and sent again. `verdicts`
makes of them Results (reports/results.py), the shape every report takes: a check that
judged answers and found nothing `pass`es, naming how many; one that judged
none is `not-run`, with why, never `pass`; each kind of failure is a Result
of its own, `flaky` when its call did not fail every time it was sent again.
A failure's case, and the lines that reproduce it, are those of the
reproduction confirmed for it (reproduction.py); one that none could be
confirmed for says why, and shows how to send its call again.
"""

import functools
import gc
from collections import Counter
from dataclasses import replace
from typing import NamedTuple

from ..language.suite import Case, level_of
from ..reports.reproduce import Exchange, reproduce
from ..reports.results import Result, gist, not_run, plural, printable

CHECKS = {  # name -> (what it checks, the requirements it rests on)
    "message": ("every answer is a message, [headers, body], whose body holds one result tag",
                ["message.response-body"]),
    "accepted": ("a valid call is never refused as invalid", ["validation.always"]),
    "rejected": ("a call with one thing wrong is refused with ErrorInvalidRequestBody_ and a case at that place",
                 ["error.invalid-body", "case.path"]),
    "result": ("every result is one the function declares (its own, or the stock errors it takes), with its "
               "declared fields", ["fn.results", "message.response-body"]),
    "headers": ("every response header's name starts with @, and one the schema declares has its declared type",
                ["conv.response-headers"]),
    "handler": ("no handler raised (ErrorUnknown_) or answered outside the schema (ErrorInvalidResponseBody_, "
                "ErrorInvalidResponseHeaders_): the service's own bugs", ["conv.response-validation"]),
    "select": ("an answer to a call with @select_ holds only the fields selected", ["header.select",
                                                                                  "conv.select-rules"]),
    "bytes": ("an answer on MessagePack carries its bytes as bin and its text as str", ["type.bytes", "binary.opt-in"]),
    "binary": ("an answer on MessagePack carries the same values as on JSON, where the function answers JSON "
               "alike each time", ["binary.negotiate"]),
    "packed": ("an answer on MessagePack to a call with @pac_ unpacks to the same values as on JSON",
               ["conv.packing"]),
    "base64": ("a JSON answer's @base64_ marks where its bytes are, and nothing else; a MessagePack answer has "
               "none", ["header.base64", "conv.base64"]),
    "id": ("a request's @id_ comes back unchanged in the answer's headers", ["header.id"]),
    "auth": ("a protected function never answers Ok_ without valid credentials: none, a token never issued, or "
             "one a logout ended", ["auth.unauthenticated", "conv.auth-presence"]),
    "owner": ("what one user wrote never comes back to another user, where the service keeps it per user",
              ["conv.ownership"]),
    "time": ("every answer comes within the run's --response-time budget (the user's rule: the protocol states "
             "none)", []),
    "media": ("an answer's Content-Type is application/octet-stream when it is MessagePack, else "
              "application/json", ["conv.http"]),
}


class Finding(NamedTuple):
    """A call that fails a check: the call as sent ([headers, body]), on which wire, what is wrong, and
    the answer received (decoded, or its bytes as text)."""

    check: str
    function: str
    call: list
    binary: bool
    problem: str
    answer: str
    tag: str = ""  # the result tag answered
    places: tuple = ()  # (path, why) of each problem found inside the answer: where the schema was broken
    path: tuple = ()  # of a rejected call: where its one wrong thing is, and why it is wrong
    reason: str = ""
    again: tuple = (0, 0)  # (how many times it failed the same way, sent again how many times)
    valid: dict = None  # of a rejected call: the valid arguments it was made of, with one thing made wrong
    at: int = -1  # its call's place in the run (links.py's log): the calls before it are what it may need
    general: tuple = ()  # its places with every array index and map key "*": where, whatever the element
    message: list = None  # the answer, decoded (what a fixed service's is mended from: properties.py)
    before: dict = None  # of a binary finding: the body of the JSON answer to the same call
    reproduction: object = None  # how it was reproduced, once it was (reproduction.py)

    @property
    def kind(self):
        """What tells failures apart: the function, the check, the answer's tag, where and why the answer broke
        the schema (without values: every array element and map entry is one place; a selection ignored
        anywhere is one kind), what was wrong in a rejected call."""
        places = frozenset((gist(where(path)), why) for path, why in self.general or self.places
                           if path and self.check != "select")
        return self.function, self.check, self.tag, places, self.reason, gist(self.problem) * (self.check == "message")


def where(path):
    """A path in an answer as text: Ok_.items[2].name."""
    return "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path).lstrip(".") or "(top)"


WIRES = ("binary", "packed")  # the checks that compare an answer on MessagePack with one on JSON
MESSAGEPACK = ("bytes", *WIRES)  # the checks of answers on MessagePack
UNJUDGED = {  # why a check of a function that was called judged no answer, unless the fuzzer said why
    "message": "no call was answered", "handler": "no call reached it: each failed an earlier check",
    "accepted": "no call reached it: each failed an earlier check",
    "result": "no call reached it: each failed an earlier check",
    "headers": "no call reached it: each failed an earlier check",
    "select": "no call was made with @select_ (one in two is, when the others pass)",
    "binary": "no call was made on MessagePack (one in three is, once negotiated)",
    "bytes": "no call was made on MessagePack (one in three is, once negotiated)",
    "packed": "no call was made on MessagePack with @pac_ (one in six is, once negotiated)",
    "id": "no call was made with @id_ (two in five are)",
    "base64": "no call reached it: each failed an earlier check",
    "time": "no call reached it: each failed an earlier check",
    "rejected": "no call with one thing wrong was sent (one follows each valid call that passed the other checks)",
    "media": "no call reached it: each failed an earlier check",
    "auth": "no call without valid credentials was answered (each failed an earlier check)",
    "owner": "no text one user wrote came back in its answers, to that user or another",
}


def chosen(settings):
    """The checks a run judges: those its Settings name (else every one), time only with a budget."""
    return [check for check in CHECKS if (not settings.checks or check in settings.checks)
            and (check != "time" or settings.response_time is not None)]


def verdicts(fuzzer, functions, findings, unreached):
    """The Results of a run (see `judged`), made with the collector of cycles paused: a run of 100,000
    functions makes over a million, none of them in a cycle, and each pass over them all cost seconds."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return judged(fuzzer, functions, findings, unreached)
    finally:
        if collecting:
            gc.enable()


def judged(fuzzer, functions, findings, unreached):
    """The Results of a run: for each function and check, its failures (`known-failure` where the run's
    Settings list it), else `pass` with the answers it judged, else `not-run` with why (`unreached`: why
    for a function never called)."""
    failing = {}
    for finding in findings:
        failing.setdefault((finding.function, finding.check), []).append(finding)
    results = []
    for function in functions:
        for check in fuzzer.chosen:
            key = (function.name, check)
            judged, seconds = fuzzer.evidence[key], fuzzer.seconds[key]
            if key in failing:
                made = [failure(fuzzer, finding, number, judged, seconds)
                        for number, finding in enumerate(failing[key], 1)]
                results += [r._replace(status="known-failure") if fuzzer.settings.known_failure(r.case.id) else r
                            for r in made]
            elif judged:
                results.append(Result(case(function.name, check), "pass", [], seconds,
                                      evidence=f"{plural(judged, 'answer')} judged"))
            else:
                called = fuzzer.evidence[(function.name, "message")]
                why = (fuzzer.missed.get(key) or fuzzer.missed.get(function.name) or fuzzer.missed.get(check)
                       or (UNJUDGED[check] if called else unreached))
                results.append(not_run(case(function.name, check), "not run", why))
    return results


def case(function, check, number=1):
    """The case of a function's check (the second kind of failure of a check is `check-2`), without steps:
    a reproduction's case is reproduction.py's."""
    description, requirements = CHECKS[check]
    return Case(f"fuzz/{function}/{check}" + (f"-{number}" if number > 1 else ""), f"{function}: {description}.",
                tuple(requirements), _level(check), "fuzz", (function,))


def failure(fuzzer, finding, number, judged, seconds):
    """The Result of one kind of failure: `flaky` unless its call failed again every time it was sent;
    its case and lines to reproduce it those of its reproduction, where one was confirmed."""
    failed, sent = finding.again
    again = f"sent again, it failed {failed} of {sent} times" if sent else "not sent again (the time limit had passed)"
    evidence = f"failed in {fuzzer.seen[finding.kind]} of {plural(judged, 'answer')} judged; {again}"
    if failed < sent:
        evidence += f": flaky, failing {failed + 1} of the {sent + 1} times it was sent, the first included"
    reproduction, made = finding.reproduction, case(finding.function, finding.check, number)
    if reproduction is not None:
        evidence += f"; {reproduction.said}"
    if reproduction is not None and reproduction.case is not None:
        made = replace(reproduction.case, id=made.id)
        replay, title = reproduction.result.replay, "To reproduce (the confirmed case's requests, as it ran)"
    else:
        target, (data, media_type) = fuzzer.channel.target, fuzzer.channel.encoded(finding.call, finding.binary)
        encoding = fuzzer.channel.encoding
        names = encoding and encoding["names"][encoding["checksum"]] if finding.binary else None
        replay = reproduce(target, [Exchange(data, "POST", target.path, media_type, b"")], names)
        title = "To send its call again (no reproduction was confirmed)"
    return Result(made, "fail" if failed == sent else "flaky", [printable(f"{finding.check}: {finding.problem}")],
                  seconds, made.level, tries=(failed + 1, sent + 1), replay=tuple(map(printable, replay)),
                  replay_title=title, answer=printable(finding.answer), evidence=printable(evidence))


def function_line(function, results):
    """How one function fared, in a line: its failures, else what passed, and what was not run and why."""
    failed = sorted(_checks([r for r in results if r.failed]))
    ran = [r for r in results if r.status == "pass"]
    reasons = {}
    for result in results:
        if result.status == "not-run":
            reasons.setdefault(result.problems[0], []).append(result)
    if all(r.status == "not-run" for r in results):
        return f"  {function}: not run ({'; '.join(reasons)})"
    unrun = ", ".join(f"{', '.join(_checks(alike))} ({why})" for why, alike in reasons.items())
    known = _checks([r for r in results if r.status == "known-failure"])
    return (f"  {function}: " + (f"{len(failed)} failing ({', '.join(failed)})" if failed else
                                 f"passed ({', '.join(_checks(ran))})") + (f"; known failures: {', '.join(known)}"
                                                                            if known else "")
            + (f"; not run: {unrun}" if unrun else ""))


@functools.cache
def _level(check):
    """A check's level, by the requirements it rests on (read once: a run may have 100,000 functions)."""
    return level_of(CHECKS[check][1]) if CHECKS[check][1] else "SHOULD"  # (time: a rule of the user's own)


def _checks(results):
    """The checks of verdicts, as their ids end: `handler`, `handler-2` for a second kind of failure."""
    return [r.case.id.rsplit("/", 1)[1] for r in results]


def by_check(results, checks=CHECKS):
    """How each of `checks` fared over every function, in a line."""
    failing, passed = Counter(), Counter()  # (one pass over them all: a run may have millions)
    for result in results:
        check = result.case.id.rsplit("/", 1)[1].split("-")[0]
        failing[check] += result.failed
        passed[check] += result.status == "pass"
    said = [f"{check} {failing[check]} failing" if failing[check] else f"{check} passed ({passed[check]})"
            if passed[check] else f"{check} not run" for check in checks]
    return "By check: " + ", ".join(said)
