"""The fuzzer's `rejected` check: a call with exactly one thing wrong must be refused with
ErrorInvalidRequestBody_ and a case at that place (values.py makes the wrong things; shrinking.py
sends them again, smaller)."""

import json
import time

from . import answers, values
from .verdicts import Finding, where


def check_wrong(fuzzer, function, arguments):
    """A call made of valid `arguments` with one thing wrong; a Finding if it is not refused there."""
    wrong, path, reason = fuzzer.rng.choice(values.object_wrongs(fuzzer.schema, arguments, function.arguments,
                                                                 (function.name,)))
    found = judge_wrong(fuzzer, function, [fuzzer.headers(), {function.name: wrong}], path, reason)
    return found and found._replace(valid=arguments)


def judge_wrong(fuzzer, function, call, path, reason):
    """The Finding of a call whose one wrong thing (at `path`, for `reason`) is not refused there, or None."""
    started = time.monotonic()
    status, message, answer, _ = fuzzer.channel.send(call)
    problem = answers.message_problem(status, message)
    fuzzer.judged(function, ["message"], started)
    if problem:
        return Finding("message", function.name, call, False, problem, answers.shown(message, answer),
                       at=fuzzer.links.count)
    [(tag, fields)] = message[1].items()
    if tag == "ErrorUnauthenticated_" and "@auth_" not in call[0]:  # (credentials come before arguments)
        fuzzer.missed[(function.name, "rejected")] = ("every call with one thing wrong was answered "
                                                      "ErrorUnauthenticated_ (give -H '@auth_:=...')")
        return None
    fuzzer.judged(function, ["rejected"], started)
    cases = fields.get("cases") if tag == "ErrorInvalidRequestBody_" and isinstance(fields, dict) else None
    if isinstance(cases, list) and any(isinstance(c, dict) and c.get("path") == list(path) for c in cases):
        return None
    said = (f"it has no case at {json.dumps(list(path))}: {json.dumps(cases)[:300]}" if cases is not None
            else f"it was answered {tag}")
    return Finding("rejected", function.name, call, False, f"{reason} at {where(path)} should be refused "
                   f"with a case there; {said}", answers.shown(message, answer), tag, path=path, reason=reason,
                   at=fuzzer.links.count, message=message)
