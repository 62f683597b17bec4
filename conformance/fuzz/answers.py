"""What the fuzzer's checks find wrong in one answer, each as [(path, why)] (fuzzer.py asks them in turn),
and the Call an answer is judged for.

How this works
--------------
An answer is first a message: HTTP 200, `[headers, body]`, one result tag
(`message_problem`). Then its result must be one the function declares,
with its declared fields (`result_problems`; a selected `Ok_` may leave
required fields out), its headers named with `@` and of their declared types
(`header_problems`), a selected `Ok_` may hold only what was selected
(`selection_problems`), and its Content-Type must say which wire it is on
(`media_problems`).
"""

from typing import NamedTuple

from ..language.schema import Type
from . import selections


class Call(NamedTuple):
    """One call to make and judge, with what judging its answer needs: its function, the message sent
    ([headers, body]), whether on MessagePack, the JSON answer to the same call (what a MessagePack
    answer is compared with), and whether it is `nested`: a call an answer held, or a login, whose
    answer leads to no further call."""

    function: object
    message: list
    binary: bool = False
    before: dict | None = None
    nested: bool = False


def message_problem(status, message):
    """Why an answer is no message of the protocol, or ""."""
    if status == 0:
        return "no answer"
    if status != 200:
        return f"HTTP {status}, not 200"
    if not (type(message) is list and len(message) == 2 and all(type(part) is dict for part in message)):
        return "the answer is not a message, [headers, body]"
    if len(message[1]) != 1:
        return f"the body holds {len(message[1])} keys, not one result tag"
    return ""


def result_problems(schema, function, tag, fields, selected):
    """Where a result breaks what `function` declares: a tag it lacks, or its fields."""
    if tag not in function.results:
        return [((tag,), f"no result of {function.name} (it has {', '.join(sorted(function.results))})")]
    return [(path, why) for path, why in schema.object_problems(fields, function.results[tag], (tag,))
            if not (selected and why == "RequiredObjectKeyMissing")]


def header_problems(schema, headers):
    """Where response headers break the schema: a name without `@`, or a declared one of another type."""
    declared = schema.response_headers
    return [((name,), "RequiredObjectKeyPrefixMissing") for name in headers if not name.startswith("@")] + [
        problem for name, value in headers.items() if name in declared
        for problem in schema.problems(value, declared[name], (name,))]


def selection_problems(schema, function, fields, headers):
    """Where a selected Ok_ holds a field not selected."""
    selection = headers["@select_"]
    return [(path, "not selected") for path in selections.unselected(
        schema, fields, function.results["Ok_"], selection["->"]["Ok_"], selection, ("Ok_",))]


def general(schema, declared, path):
    """A place in a value of `declared` (fields by name, or results by tag) with every array index and map
    key written "*": a problem of every element or entry is one problem, at one place."""
    general_, place = [], declared
    for key in path:
        if type(place) is dict:  # (fields by name, or tags by name)
            general_.append(key)
            place = place.get(key)
        elif type(place) is Type and place.kind in ("array", "map"):
            general_.append("*")
            place = place.of
        elif type(place) is Type and place.kind in ("struct", "union", "fn"):
            fields = schema.struct(place)
            general_.append(key)
            place = fields.get(key)
        else:  # (beyond what the schema declares: an undeclared key, or inside an `any`)
            general_.append(key)
            place = None
    return tuple(general_)


def media_problems(labelled, answer):
    """Whether an answer's Content-Type says what it is: MessagePack (its first byte 0x92) or JSON."""
    wire, media_type = ("MessagePack", "application/octet-stream") if answer[:1] == b"\x92" else (
        "JSON", "application/json")
    if labelled.split(";")[0].strip().lower() == media_type:
        return []
    return [((), f"the answer is {wire} labelled {labelled or 'with no Content-Type'}, not {media_type}")]
