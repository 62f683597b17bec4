"""The fuzzer's two wires: a MessagePack answer judged on its own (`bytes`) and against the JSON answer to
the same call (`binary`, `packed`), and calls that cannot be made twice.

How this works
--------------
A MessagePack answer is decoded with its bytes as {"$bin": ...} (channel.py):
`bytes_problems` finds text where the schema declares bytes, or bytes where
it declares text. `parity_problems` compares it, bytes as base64 text, with
the JSON answer to the same call just before; where they differ, the same
call is sent again on JSON: a function whose JSON answers differ from call
to call cannot be judged so (`vary`), unless --deterministic says it does
not. A function that refuses the same call made again (`ErrorTaken`: a name
already used) cannot be judged so either (`refused_again`): `anew` checks
its MessagePack or selected call with new texts and integers instead, the
first answer of a new value, and the fuzzer keeps it among those that
create (shrinking.py and reproduction.py then make each call anew too).
"""

import json

from . import answers, values
from .verdicts import WIRES


def bytes_problems(fuzzer, function, typed):
    """Where a MessagePack answer's body (`typed`: its bytes as {"$bin": ...}) holds text for bytes or
    bytes for text."""
    [(tag, fields)] = typed.items()
    return list(answers.wire_problems(fuzzer.schema, function.results.get(tag, {}), fields, (tag,)))


def parity_problems(fuzzer, call, body):
    """How the MessagePack answer `body` differs from the JSON answer to the same Call, its `before`; None
    when that cannot be told: the JSON answers differ from call to call (unless --deterministic), or the
    call was refused for being made again."""
    function, before = call.function, call.before
    if before is None or function.name in fuzzer.varying or refused_again(fuzzer, function, before, body):
        return None
    if before == body:  # (the commonest: then so are they as text, and neither is copied to tell)
        return []
    expected, received = values.as_text(before), values.as_text(body)
    if expected == received:
        return []
    if not fuzzer.settings.deterministic:  # the same again on JSON: a difference is the wire's, not the call's
        again = fuzzer.channel.send(call.message)[1]
        if again is None or values.as_text(again[1]) != expected:
            vary(fuzzer, function)
            return None
    return [((), f"JSON answered {json.dumps(expected)[:200]}, MessagePack {json.dumps(received)[:200]}")]


def anew(fuzzer, call, first):
    """Check a Call made again (on MessagePack, or with @select_) after the same one was answered `first`;
    if it was refused for being made again, check it with its texts and integers new. The first Finding,
    or None."""
    found, again = fuzzer.check(call)
    if found or again is None or not refused_again(fuzzer, call.function, first or {}, again):
        return found
    headers, body = call.message
    [(name, arguments)] = body.items()
    return fuzzer.check(call._replace(message=[headers, {name: values.unique(arguments, fuzzer.rng)}],
                                      before=None))[0]


def refused_again(fuzzer, function, first, again):
    """Whether `again`, the answer to a call `first` answered Ok_, is one of the function's own errors: it
    made something a second call may not make again; then the function is one that creates."""
    [tag] = again
    if "Ok_" not in first or tag == "Ok_" or tag not in function.results or tag.endswith("_"):
        return False
    fuzzer.creating.add(function.name)
    for check in WIRES:
        fuzzer.missed[(function.name, check)] = (f"the same call made again was answered {tag}: each makes "
                                                 f"something new, so no call is made on both wires")
    return True


def vary(fuzzer, function):
    """Take it that `function` answers the same call differently: its wires cannot be compared."""
    fuzzer.varying.add(function.name)
    for check in WIRES:
        fuzzer.evidence[(function.name, check)] = 0  # (what was judged equal may have been so by chance)
        fuzzer.missed[(function.name, check)] = ("its answers differ from call to call, so the wires cannot be "
                                                 "compared (--deterministic says they do not)")
