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

import json
from typing import NamedTuple

from ..language.matchers import compare
from ..language.schema import Type
from . import selections

WIRE = {"bytes sent as text (str), not bin": "bytes", "text sent as bytes (bin), not str": "string"}  # why ->
# the type a case then states there (MessagePack's own kinds: wire_problems)


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


def shown(message, answer, most=1000):
    """An answer as a finding shows it: its message as JSON, else its bytes as text; at most `most` characters."""
    text = json.dumps(message, ensure_ascii=False, default=repr) if message is not None else \
        answer[:most].decode(errors="replace")
    return text[:most]


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
    if schema.holds_fields(fields, function.results[tag]):  # (most do: the walk that says where, only if not)
        return []
    return [(path, why) for path, why in schema.object_problems(fields, function.results[tag], (tag,))
            if not (selected and why == "RequiredObjectKeyMissing")]


def header_problems(schema, headers):
    """Where response headers break the schema: a name without `@`, or a declared one of another type."""
    declared = schema.response_headers
    return [((name,), "RequiredObjectKeyPrefixMissing") for name in headers if not name.startswith("@")] + [
        problem for name, value in headers.items() if name in declared and not schema.holds(value, declared[name])
        for problem in schema.problems(value, declared[name], (name,))]


def selection_problems(schema, function, fields, headers):
    """Where a selected Ok_ holds a field not selected, or lacks a required one selected."""
    selection, declared = headers["@select_"], function.results["Ok_"]
    chosen = selection.get("->", {}).get("Ok_", list(declared))
    return list(selections.unselected(schema, fields, declared, chosen, selection, ("Ok_",)))


def id_problems(sent, headers):
    """Whether the request's @id_, `sent`, came back unchanged in the answer's `headers` (the values are in
    the call and the answer a finding shows)."""
    if "@id_" not in headers:
        return [(("@id_",), "the request's @id_ did not come back")]
    if next(compare({"$literal": sent}, headers["@id_"], {}), None) is not None:
        return [(("@id_",), "the request's @id_ came back changed")]
    return []


def wire_problems(schema, fields, value, path):
    """Yield where a MessagePack answer's object of `fields` (decoded, bytes as {"$bin": ...}) holds text
    where the schema declares bytes, or bytes where it declares text: the two are told apart on this wire."""
    if type(value) is not dict:
        return
    for name, element in value.items():
        type_ = fields.get(name)
        if type_ is None or element is None:
            continue
        place, kind = (*path, name), type_.kind
        if kind == "bytes" and type(element) is str:
            yield place, "bytes sent as text (str), not bin"
        elif kind == "string" and type(element) is dict and list(element) == ["$bin"]:
            yield place, "text sent as bytes (bin), not str"
        elif kind in ("array", "map") and type(element) in (list, dict):
            items = enumerate(element) if type(element) is list else element.items()
            yield from (problem for key, item in items
                        for problem in wire_problems(schema, {key: type_.of}, {key: item}, place))
        elif kind == "struct":
            yield from wire_problems(schema, schema.struct(type_), element, place)
        elif kind in ("union", "fn") and type(element) is dict and len(element) == 1:
            [(tag, inner)] = element.items()
            yield from wire_problems(schema, schema.struct(type_).get(tag, {}), inner, (*place, tag))


def holds_bytes(schema, types):
    """Whether a value of one of `types` may hold bytes, at any depth."""
    waiting, seen = list(types), set()
    while waiting:
        type_ = waiting.pop()
        if type_.kind == "bytes":
            return True
        if type_.kind in ("array", "map"):
            waiting.append(type_.of)
        elif type_.kind in ("struct", "union", "fn") and (type_.kind, type_.of) not in seen:
            seen.add((type_.kind, type_.of))
            inner = schema.struct(type_)
            waiting += [t for fields in ([inner] if type_.kind == "struct" else inner.values()) for t in fields.values()]
    return False


def base64_problems(schema, function, body, headers, wire, bytes_held=True):
    """Whether a JSON answer's `@base64_` marks exactly where the schema puts bytes in its `body` (true at a
    bytes value, {"*": ...} over the elements of an array or map; none at all without bytes); on
    MessagePack, which carries bytes as bin, whether it has none. Marks inside an `any` are not judged."""
    [(tag, fields)] = body.items()
    if tag not in function.results:
        return None  # (the result check says what is wrong)
    received = headers.get("@base64_")
    if wire == "MessagePack":
        return [(("@base64_",), "a MessagePack answer marks bytes, which it carries as bin")] if received else []
    if not bytes_held and received is None:  # (`bytes_held`: whether its results may, which a fuzzer asks once)
        return []
    if _pruned(schema, received, {tag: function.results[tag]}, root=True) == expected_marks(schema, function, body):
        return []
    return [(("@base64_",), "the bytes marked are not where the answer holds bytes" if received else
             "the answer holds bytes, and no @base64_ says where")]


def expected_marks(schema, function, body):
    """The @base64_ a JSON answer's `body` carries, where the schema places its bytes (None: no bytes)."""
    [(tag, fields)] = body.items()
    inner = _marks(schema, fields, function.results[tag])
    return {tag: inner} if inner else None


def _marks(schema, value, fields):
    """The @base64_ marks of an object of `fields`, or None where it holds no bytes."""
    if type(value) is not dict:
        return None
    marks = {}
    for name, element in value.items():
        inner = _marks_of(schema, fields[name], element) if name in fields else None
        if inner is not None:
            marks[name] = inner
    return marks or None


def _marks_of(schema, type_, value):
    kind = type_.kind
    if value is None or kind == "any":
        return None
    if kind == "bytes":
        return True if type(value) is str else None
    if kind in ("array", "map") and type(value) in (list, dict):
        every = _merged([_marks_of(schema, type_.of, element)
                         for element in (value if type(value) is list else value.values())])
        return {"*": every} if every is not None else None
    if kind == "struct":
        return _marks(schema, value, schema.struct(type_))
    if kind in ("union", "fn") and type(value) is dict and len(value) == 1:
        [(tag, inner)] = value.items()
        marks = _marks(schema, inner, schema.struct(type_).get(tag, {}))
        return {tag: marks} if marks is not None else None
    return None


def _merged(marks):
    """One mark for every element of an array or value of a map, from each one's (true wins)."""
    marks = [one for one in marks if one is not None]
    if not marks or any(one is True for one in marks):
        return True if marks else None
    merged = {}
    for one in marks:
        for key, inner in one.items():
            merged[key] = _merged([merged[key], inner]) if key in merged else inner
    return merged


def _pruned(schema, marks, fields, root=False):
    """Marks received for an object of `fields` (at the `root`, results by tag), without those inside what
    the schema declares `any`, where the suite cannot tell bytes from text; None if none are left."""
    if type(marks) is not dict:
        return marks
    kept = {}
    for name, inner in marks.items():
        type_, depth = fields.get(name), 0
        if root:
            inner = _pruned(schema, inner, type_ or {})
        else:
            while type_ is not None and type_.kind in ("array", "map") and type(inner) is dict and list(inner) == ["*"]:
                type_, inner, depth = type_.of, inner["*"], depth + 1
            if type_ is not None and type_.kind == "any":
                continue
            if type_ is not None and type_.kind == "struct":
                inner = _pruned(schema, inner, schema.struct(type_))
            elif type_ is not None and type_.kind in ("union", "fn") and type(inner) is dict:
                tags = {tag: _pruned(schema, tagged, schema.struct(type_).get(tag, {})) for tag, tagged in inner.items()}
                inner = {tag: tagged for tag, tagged in tags.items() if tagged is not None} or None
        for _ in range(depth if inner is not None else 0):
            inner = {"*": inner}
        if inner is not None:
            kept[name] = inner
    return kept or None


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


def wire(answer):
    """The wire an answer came on, by its first byte: "MessagePack" (0x92, an array of two) or "JSON"."""
    return "MessagePack" if answer[:1] == b"\x92" else "JSON"


def media_problems(labelled, answer):
    """Whether an answer's Content-Type says what it is: MessagePack or JSON (`wire`)."""
    came = wire(answer)
    media_type = MEDIA_TYPES[came]
    if labelled.split(";")[0].strip().lower() == media_type:
        return []
    return [((), f"the answer is {came} labelled {labelled or 'with no Content-Type'}, not {media_type}")]


MEDIA_TYPES = {"MessagePack": "application/octet-stream", "JSON": "application/json"}
