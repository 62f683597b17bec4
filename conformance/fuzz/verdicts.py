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
`regression` writes a finding as a case step that states the property that
failed (no refusal of a valid call, no handler's error, the declared type at
the place the answer broke it, the wrong thing refused where it is), so the
case fails while the bug is there and passes once it is fixed.
"""

import json
from typing import NamedTuple

from ..language.schema import Type
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
    "binary": ("an answer on MessagePack carries the same values as on JSON, where the function answers JSON "
               "alike each time",
               ["binary.negotiate"]),
    "media": ("an answer's Content-Type is application/octet-stream when it is MessagePack, else "
              "application/json", ["conv.http"]),
}
REFUSALS = ("ErrorParseFailure_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_")
HANDLER_BUGS = ("ErrorUnknown_", "ErrorInvalidResponseBody_", "ErrorInvalidResponseHeaders_")


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
    after: tuple = ()  # the other functions' calls, (name, call), made since the function last passed this way
    valid: dict = None  # of a rejected call: the valid arguments it was made of, with one thing made wrong
    fresh: str = ""  # where its earlier calls were shrunk: "a fresh application", "a fresh user" ("": not)

    @property
    def kind(self):
        """What tells failures apart: the function, the check, the answer's tag, where and why the answer broke
        the schema (without values: any array index is one place; a selection ignored anywhere is one kind),
        what was wrong in a rejected call."""
        places = frozenset((gist(where(path)), why) for path, why in self.places if path and self.check != "select")
        return self.function, self.check, self.tag, places, self.reason, gist(self.problem) * (self.check == "message")


def where(path):
    """A path in an answer as text: Ok_.items[2].name."""
    return "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path).lstrip(".") or "(top)"


UNJUDGED = {  # why a check of a function that was called judged no answer, unless the fuzzer said why
    "message": "no call was answered", "handler": "no call reached it: each failed an earlier check",
    "accepted": "no call reached it: each failed an earlier check",
    "result": "no call reached it: each failed an earlier check",
    "headers": "no call reached it: each failed an earlier check",
    "select": "no call was made with @select_ (one in two is, when the others pass)",
    "binary": "no call was made on MessagePack (one in three is, once negotiated)",
    "rejected": "no call with one thing wrong was answered",
    "media": "no call reached it: each failed an earlier check",
}


def verdicts(fuzzer, functions, findings, unreached, requires=()):
    """The Results of a run: for each function and check, its failures (`known-failure` where the run's
    Settings list it), else `pass` with the answers it judged, else `not-run` with why (`unreached`: why
    for a function never called)."""
    failing = {}
    for finding in findings:
        failing.setdefault((finding.function, finding.check), []).append(finding)
    results = []
    for function in functions:
        for check in CHECKS:
            key = (function.name, check)
            judged, seconds = fuzzer.evidence[key], fuzzer.seconds[key]
            if key in failing:
                made = [failure(fuzzer, finding, number, judged, seconds, requires)
                        for number, finding in enumerate(failing[key], 1)]
                results += [r._replace(status="known-failure") if fuzzer.settings.known_failure(r.case.id) else r
                            for r in made]
            elif judged:
                results.append(Result(case(function.name, check, requires), "pass", [], seconds,
                                      evidence=f"{plural(judged, 'answer')} judged"))
            else:
                called = fuzzer.evidence[(function.name, "message")]
                why = (fuzzer.missed.get(key) or fuzzer.missed.get(function.name) or fuzzer.missed.get(check)
                       or (UNJUDGED[check] if called else unreached))
                results.append(not_run(case(function.name, check, requires), "not run", why))
    return results


def case(function, check, requires, number=1, steps=()):
    """The case of a function's check (the second kind of failure of a check is `check-2`)."""
    description, requirements = CHECKS[check]
    return Case(f"fuzz/{function}/{check}" + (f"-{number}" if number > 1 else ""), f"{function}: {description}.",
                tuple(requirements), level_of(requirements), "fuzz", tuple(requires), steps=list(steps))


def failure(fuzzer, finding, number, judged, seconds, requires):
    """The Result of one kind of failure: `flaky` unless its call failed again every time it was sent."""
    failed, sent = finding.again
    again = f"sent again, it failed {failed} of {sent} times" if sent else "not sent again (the time limit had passed)"
    seen = fuzzer.seen[finding.kind]
    evidence = f"failed in {seen} of {plural(judged, 'answer')} judged; {again}"
    if failed < sent:
        evidence += f": flaky, failing {(failed + 1) / (sent + 1):.0%} of the times it was sent"
    if finding.after and finding.fresh:
        evidence += (f"; for {finding.fresh} it fails after just {plural(len(finding.after), 'call')} of "
                     f"{', '.join(sorted({n for n, _ in finding.after}))}, each needed (the reproduction sends them first)")
    elif finding.after:
        evidence += (f"; it passed before, and failed after calls of {', '.join(sorted({n for n, _ in finding.after}))}"
                     ": it may depend on them (the reproduction sends the latest first)")
    elif finding.fresh:
        evidence += f"; for {finding.fresh} it fails alone, needing no earlier call"
    made = case(finding.function, finding.check, requires, number, [
        *({"request": {"message": call}, "response": {"message": [{"$type": "object"}, {"$type": "object"}]}}
          for _, call in finding.after), regression(fuzzer.schema, finding)])
    calls = [*(fuzzer.channel.encoded(call) for _, call in finding.after), fuzzer.channel.encoded(finding.call, finding.binary)]
    replay = reproduce(fuzzer.channel.target, [Exchange(data, "POST", fuzzer.channel.target.path, media_type, b"")
                                              for data, media_type in calls])
    return Result(made, "fail" if failed == sent else "flaky", [printable(f"{finding.check}: {finding.problem}")],
                  seconds, made.level, tries=(failed + 1, sent + 1), replay=tuple(map(printable, replay)),
                  answer=printable(finding.answer), evidence=evidence)


def regression(schema, finding):
    """A case step that fails while the finding's bug is there: its call, and the property its answer broke."""
    headers, body = finding.call  # (on MessagePack: asked for with @bin_ [], as a case cannot know the ids)
    request = {"message": [{**headers, "@bin_": []}, body] if finding.binary else finding.call}
    part, made = PROPERTIES[finding.check]
    return {"request": request, "response": {part: made(schema, finding)}}


def _not_one_of(tags):
    return [{"$type": "object"}, {"$not": {"$oneOf": [{"$partial": {tag: {"$type": "any"}}} for tag in tags]}}]


def _refused_there(schema, finding):
    return [{"$type": "object"}, {"ErrorInvalidRequestBody_": {
        "cases": {"$includes": [{"path": list(finding.path), "reason": {"$type": "object"}}]}}}]


def _in_the_result(schema, finding):
    """The answer's body, as the function declares it at the place the finding's answer broke it."""
    (path, why), results = finding.places[0], schema.functions[finding.function].results
    if why.startswith("no result of"):
        return [{"$type": "object"}, {"$oneOf": [{"$partial": {tag: {"$type": "any"}}} for tag in sorted(results)]}]
    return [{"$type": "object"}, _placed(path, _property(schema, results, path, why, finding.binary))]


def _in_the_headers(schema, finding):
    path, why = finding.places[0]
    return [_placed(path, _property(schema, schema.response_headers, path, why, finding.binary)), {"$type": "object"}]


def _selected(schema, finding):
    return [{"$type": "object"}, _placed(finding.places[0][0], {"$absent": True})]


def _same_on_both_wires(schema, finding):
    """Not the body of the MessagePack answer received (the JSON one it should equal cannot be captured
    with its bytes alike, by a case)."""
    try:
        return [{"$type": "object"}, {"$not": {"$literal": json.loads(finding.answer)[1]}}]
    except (ValueError, LookupError, TypeError):
        return [{"$type": "object"}, {"$type": "object"}]


def _labelled(schema, finding):
    return {"Content-Type": "application/octet-stream" if finding.binary else "application/json"}


PROPERTIES = {  # check -> (the part of the answer the property is of, the property that failed)
    "message": ("message", lambda schema, finding: [{"$type": "object"}, {"$type": "object"}]),
    "accepted": ("message", lambda schema, finding: _not_one_of(REFUSALS)),
    "handler": ("message", lambda schema, finding: _not_one_of(HANDLER_BUGS)),
    "rejected": ("message", _refused_there),
    "result": ("message", _in_the_result),
    "headers": ("message", _in_the_headers),
    "select": ("message", _selected),
    "binary": ("message", _same_on_both_wires),
    "media": ("headers", _labelled),  # (of the HTTP answer, not of the message it holds)
}


def _placed(path, pattern):
    """A matcher holding `pattern` at `path` of a value, whatever else the value holds (every element of
    an array, where the path goes through one: the schema declares them all alike)."""
    for key in reversed(path):
        pattern = {"$each": pattern} if type(key) is int else {"$partial": {key: pattern}}
    return pattern


def _property(schema, fields, path, why, binary):
    """What the schema demands at `path` inside an object of `fields`, for a problem `why` found there."""
    if why in ("ObjectKeyDisallowed", "RequiredObjectKeyPrefixMissing"):  # (a key that must not be there)
        return {"$absent": True}
    place = fields
    for key in path:  # down the declared types: a field's, an element's, a union tag's fields
        place = place.of if type(place) is Type and place.kind in ("array", "map") else (
            schema.struct(place)[key] if type(place) is Type else place[key])
    if why == "RequiredObjectKeyMissing":
        place = schema.struct(place) if type(place) is Type else place
        return {"$partial": {name: {"$type": "any"} for name in place if not name.endswith("!")}}
    return _typed(place, binary)


def _typed(type_, binary):
    """A matcher of the values of `type_` (the kind alone, for arrays, maps, structs and unions)."""
    kind = {"boolean": "boolean", "integer": "integer", "number": "number", "string": "string", "array": "array",
            "bytes": "bytes" if binary else "string"}.get(type_.kind, "object")
    matcher = {"$not": {"$type": "null"}} if type_.kind == "any" else {"$type": kind}
    return {"$oneOf": [{"$type": "null"}, matcher]} if type_.nullable else matcher


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


def _checks(results):
    """The checks of verdicts, as their ids end: `handler`, `handler-2` for a second kind of failure."""
    return [r.case.id.rsplit("/", 1)[1] for r in results]


def by_check(results):
    """How each check fared over every function, in a line."""
    said = []
    for check in CHECKS:
        mine = [r for r, named in zip(results, _checks(results)) if named.split("-")[0] == check]
        failing, passed = sum(r.failed for r in mine), sum(r.status == "pass" for r in mine)
        said.append(f"{check} {failing} failing" if failing else f"{check} passed ({passed})" if passed
                    else f"{check} not run")
    return "By check: " + ", ".join(said)
