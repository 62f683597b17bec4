"""What a fixed service would answer instead of a finding's: the broken answer mended, and valid answers
made anew, which the property a reproduction states must hold of (`overstated`).

How this works
--------------
A finding's property (properties.py) is checked against the answer it
broke, which it must fail, and against answers a fixed service may give,
which it must pass: `repaired` mends each place the finding names (a value
of its type made there, or what must not be there taken out), and
`made_anew` makes an `Ok_` of the declared fields with only what the call
selected. A property that fails one of those, or holds of the broken
answer, states more (or less) than the schema does, and is not written.
"""

import random

from ..language.decoding import from_msgpack
from ..language.matchers import compare
from ..language.schema import Type
from . import values
from .properties import ABSENT, at, stated
from .selections import DROPPED, NOT_SELECTED, unselected
from .verdicts import MESSAGEPACK


def repaired(schema, finding, message, seed=0):
    """`message` (the answer a finding's call got, decoded) as a fixed service would give it: each place
    the finding names made right, with a value of its type made by `seed`; None for checks whose
    answer is not a value to mend (a refusal, a handler's error, a media type)."""
    if finding.check not in ("result", "headers", "select") or type(message) is not list or len(message) != 2:
        return None
    message = notation(message, finding.binary)
    root = schema.response_headers if finding.check == "headers" else schema.functions[finding.function].results
    value = message[0] if finding.check == "headers" else message[1]
    maker = values.Maker(schema, random.Random(seed), depth=3, budget=50, binary=finding.binary)
    try:
        for path, why in finding.places:
            if (finding.check == "select" and why != DROPPED) or why in ABSENT:
                value = _put(value, path, None, remove=True)
            elif why.startswith("no result of"):
                value = {"Ok_": notation(maker.fields(root["Ok_"], 1), finding.binary)}
            else:
                place = at(schema, root, path)
                made = maker.fields(place, 1) if type(place) is dict else maker.make(place) if type(place) is Type else None
                value = _put(value, path, notation(made, finding.binary))
    except values.TooLarge:
        return None
    return [value, message[1]] if finding.check == "headers" else [message[0], value]


def notation(value, binary):
    """A value as a case reads it: on MessagePack, bytes as {"$bin": base64}."""
    return from_msgpack(value) if binary else value


def _put(value, path, made, remove=False):
    """`value` with `made` at `path` (or what is there taken out), the rest as it was."""
    if not path:
        return made
    if isinstance(value, dict):
        head, rest = path[0], path[1:]
        if remove and not rest:
            return {key: element for key, element in value.items() if key != head}
        return {**value, head: _put(value.get(head), rest, made, remove)}
    if isinstance(value, list) and type(path[0]) is int and path[0] < len(value):
        return [_put(element, path[1:], made, remove) if index == path[0] else element
                for index, element in enumerate(value)]
    return value


def made_anew(schema, finding, message, seed):
    """A valid answer made anew for a finding's call (an Ok_ of its declared fields, with what it selected
    alone), as a fixed service may give; None where there is none to make."""
    if finding.check not in ("result", "select", "handler", "accepted") or type(message) is not list:
        return None
    function = schema.functions[finding.function]
    maker = values.Maker(schema, random.Random(seed), depth=3, budget=60, binary=finding.binary)
    try:
        fields = maker.fields(function.results["Ok_"], 1)
    except values.TooLarge:
        return None
    selection = finding.call[0].get("@select_")
    if selection:
        chosen = selection.get("->", {}).get("Ok_", list(fields))
        left_out = [path for path, why in unselected(schema, fields, function.results["Ok_"], chosen, selection, ())
                    if why == NOT_SELECTED]
        for path in sorted(left_out, key=len, reverse=True):
            fields = _put(fields, path, None, remove=True)
    return [message[0], {"Ok_": notation(fields, finding.binary)}]


def overstated(schema, finding):
    """Why a finding's property states more than the schema does ("" if it does not): it fails the answer
    a fixed service gives (the broken place mended, or an answer made anew), or holds of the broken one."""
    if finding.check in MESSAGEPACK or finding.message is None:
        return ""
    pattern = stated(schema, finding).get("message")
    broken = notation(finding.message, finding.binary)
    for number, fixed in enumerate([repaired(schema, finding, finding.message)] +
                                   [made_anew(schema, finding, finding.message, seed) for seed in range(3)]):
        if fixed is not None and pattern is not None and next(compare(pattern, fixed, {}), None) is not None:
            return (f"the property it would state fails an answer a fixed service may give ("
                    f"{'the broken place mended' if number == 0 else 'a valid answer made anew'})")
    if pattern is not None and finding.check in ("result", "headers", "select") and \
            next(compare(pattern, broken, {}), None) is None:
        return "the property it would state holds of the broken answer too"
    return ""
