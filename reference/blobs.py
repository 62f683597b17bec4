"""Bytes: how binary data travels, decoded by the schema on the way in, marked on the way out.

How this works
--------------
MessagePack has a binary type, so there bytes are bytes. JSON has none: bytes
travel as standard base64 text with padding, and nothing in the text says
which strings are base64, so the two sides know it another way.

On the way in, the server knows from the schema: the validator accepts strict
base64 text where bytes are expected (`from_base64`), and `decode(value,
type)` turns the text at every `bytes` field, and in the mock's calls and
stubs, into bytes: a handler always gets bytes. Text in an `any` field stays
text.

On the way out, the server marks where bytes are: `mark(value, type)` turns
them into base64 text and builds the `@base64_` header, a copy of the
result's shape with `true` at every bytes value and `"*"` for every element
of an array or value of a map. A client reverses it with `unmark(value,
marks)`. Bytes in headers go out as base64 text all the same (`as_text`, the
JSON encoder's fallback).
"""

import base64
import binascii
import functools

from .types import Struct, Type, reachable


def from_base64(text):
    """The bytes a strict, padded, standard-alphabet base64 string holds, or None."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def to_base64(data):
    """Bytes as standard base64 text, with padding."""
    return base64.b64encode(data).decode()


def as_text(value):
    """The JSON encoder's fallback: bytes (in headers, which nothing marks) as base64 text."""
    if type(value) is bytes:
        return to_base64(value)
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# The way in: decode by schema

def decode(value, type_):
    """`value`, already valid as a `type_`, with the base64 text of its bytes turned into bytes."""
    if value is None or not _may_decode(type_):  # (a fast path: see the end of the module)
        return value
    decoder = DECODERS.get(type_.kind)
    return decoder(value, type_) if decoder else value


def decode_fields(value, struct):
    """An object of `struct` fields, valid already, with the base64 text of its bytes as bytes."""
    if not _reaches(struct):  # (a fast path: see the end of the module)
        return value
    return {name: decode(field, struct.fields[name]) for name, field in value.items()}


def decode_tags(value, type_):
    [(tag, fields)] = value.items()
    return {tag: decode_fields(fields, type_.of.tags[tag])}


def decode_call(value, type_):
    """A mock's call, {"fn.X": arguments}, or stub, the same with "->": result."""
    name = next(key for key in value if key.startswith("fn."))
    function = type_.of[name]
    decoded = {name: decode_fields(value[name], function.arguments)}
    if "->" in value:
        decoded["->"] = decode(value["->"], Type("union", False, function.result))
    return decoded


DECODERS = {  # the kinds of value that hold base64 text to decode, or values that may
    "bytes": lambda value, type_: from_base64(value) if type(value) is str else value,
    "array": lambda value, type_: [decode(element, type_.of) for element in value],
    "map": lambda value, type_: {key: decode(element, type_.of) for key, element in value.items()},
    "struct": lambda value, type_: decode_fields(value, type_.of),
    "union": decode_tags,
    "fn": decode_tags,
    "_ext.Call_": decode_call,
    "_ext.Stub_": decode_call,
}


# The way out: mark, and unmark

def mark(value, type_=None):
    """Return `value` with bytes as base64 text, and the `@base64_` marks of where they were, or None."""
    if not _holds_bytes(value):  # (a fast path: see the end of the module)
        return value, None
    return _mark(value, type_)


def _mark(value, type_):
    kind = type_.kind if type_ else "any"
    if type(value) is bytes:
        return to_base64(value), True
    if type(value) is list:
        items = [_mark(element, type_.of if kind == "array" else None) for element in value]
        every = _merge([marks for _, marks in items if marks is not None])
        return [element for element, _ in items], {"*": every} if every else None
    if type(value) is not dict:
        return value, None
    if kind == "map":
        items = {key: _mark(element, type_.of) for key, element in value.items()}
        every = _merge([marks for _, marks in items.values() if marks is not None])
        return {key: element for key, (element, _) in items.items()}, {"*": every} if every else None
    if kind in ("union", "fn") and len(value) == 1:
        [(tag, fields)] = value.items()
        struct = type_.of.tags.get(tag)
        items = {tag: _mark(fields, struct and Type("struct", False, struct))}
    else:
        fields = type_.of.fields if kind == "struct" else {}
        items = {key: _mark(element, fields.get(key)) for key, element in value.items()}
    marks = {key: inner for key, (_, inner) in items.items() if inner is not None}
    return {key: element for key, (element, _) in items.items()}, marks or None


def _merge(marks):
    """One mark for the elements of an array or the values of a map, from each one's."""
    if not marks or any(one is True for one in marks):
        return True if marks else None
    merged = {}
    for one in marks:
        for key, inner in one.items():
            merged[key] = _merge([merged[key], inner]) if key in merged else inner
    return merged


def unmark(value, marks):
    """Decode the base64 text at the places an `@base64_` header marks (for clients)."""
    if marks is True:
        return base64.b64decode(value) if type(value) is str else value
    if type(marks) is not dict:
        return value
    if type(value) is list and "*" in marks:
        return [unmark(element, marks["*"]) for element in value]
    if type(value) is dict:
        every = marks.get("*")
        return {key: unmark(element, marks.get(key, every)) for key, element in value.items()}
    return value


# Fast paths. Each only skips work whose outcome is known: they give the same answers as
# the plain walks above (tests/test_blobs.py proves it), and can be deleted without
# changing any answer, only its cost.

DECODED = ("bytes", "_ext.Call_", "_ext.Stub_")  # the kinds whose values decode() changes


def _may_decode(type_):
    """Whether a value of `type_` may hold base64 text that decode() turns into bytes."""
    while type_.kind in ("array", "map"):
        type_ = type_.of
    return _reaches(type_.of) if type_.kind in ("struct", "union", "fn") else type_.kind in DECODED


@functools.cache
def _reaches(node):
    """Whether a Struct or Union holds a field of a DECODED kind anywhere inside."""
    for node in reachable(node):
        for type_ in node.fields.values() if isinstance(node, Struct) else ():
            while type_.kind in ("array", "map"):
                type_ = type_.of
            if type_.kind in DECODED:
                return True
    return False


def _holds_bytes(value):
    """Whether there are bytes anywhere in `value` (else mark() has nothing to do)."""
    if type(value) is bytes:
        return True
    if type(value) is list:
        return any(map(_holds_bytes, value))
    if type(value) is dict:
        return any(map(_holds_bytes, value.values()))
    return False
