"""Bytes: how binary data travels, restored by the schema on the way in, marked on the way out.

How this works
--------------
MessagePack has a binary type; JSON has none, so bytes travel there as
standard, padded base64 text, and the two sides know which text is bytes
another way. On the way in, the schema says: the validator accepts base64
where bytes are expected, and `restore(value, type)` turns the text at every
`bytes` field into bytes (text in an `any` field stays text). On the way
out, `mark(value, type)` turns bytes into base64 text and builds the
`@base64_` header: the result's shape with `true` at every bytes value and
`"*"` for the elements of an array or map. Bytes in headers go out as base64
all the same (`as_text`), unmarked.
"""

import base64
import binascii

from .types import SCALARS, Type

ANY = Type("any")


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


def restore(value, type_):
    """`value`, valid already as a `type_`, with the base64 text of its bytes turned into bytes."""
    return value if value is None else RESTORERS[type_.kind](value, type_)


def restore_fields(value, struct):
    """An object of `struct` fields, valid already, with the base64 text of its bytes as bytes."""
    restored = {}
    for name, field in value.items():  # a loop, not a comprehension: a frame less for each level
        restored[name] = restore(field, struct.fields[name])
    return restored


def restore_tags(value, union):
    """A value of `union`, valid already, with the base64 text of its bytes as bytes."""
    [(tag, fields)] = value.items()
    return {tag: restore_fields(fields, union.tags[tag])}


RESTORERS = {
    **dict.fromkeys(("boolean", "integer", "number", "string", "any"), lambda value, type_: value),
    "bytes": lambda value, type_: from_base64(value) if type(value) is str else value,
    "array": lambda value, type_: [restore(element, type_.of) for element in value],
    "map": lambda value, type_: {key: restore(element, type_.of) for key, element in value.items()},
    "struct": lambda value, type_: restore_fields(value, type_.of),
    "union": lambda value, type_: restore_tags(value, type_.of),
    "fn": lambda value, type_: restore_tags(value, type_.of),
    "ext": lambda value, type_: type_.of.restore(value),
}


def mark(value, type_=ANY):
    """Return `value` with bytes as base64 text, and the `@base64_` marks of where they were (or None)."""
    if type(value) is bytes:
        return to_base64(value), True
    if type(value) is list:
        return _every([mark(element, type_.of if type_.kind == "array" else ANY) for element in value])
    if type(value) is dict:
        return MARKERS[type_.kind](value, type_)
    return value, None


def _every(items):
    """A list of marked elements, its marks under "*"."""
    every = _merge([marks for _, marks in items if marks is not None])
    return [element for element, _ in items], {"*": every} if every else None


def _merge(marks):
    """One mark for the elements of an array or the values of a map, from each one's."""
    if not marks or any(one is True for one in marks):
        return True if marks else None
    merged = {}
    for one in marks:
        for key, inner in one.items():
            merged[key] = _merge([merged[key], inner]) if key in merged else inner
    return merged


def _keyed(value, types):
    """An object marked key by key, each value's type given by `types` (any, if it has none)."""
    marked, marks = {}, {}
    for key, element in value.items():  # a loop, not a comprehension: a frame less for each level
        marked[key], inner = mark(element, types.get(key, ANY))
        if inner is not None:
            marks[key] = inner
    return marked, marks or None


def _mark_map(value, type_):
    elements, marks = _every([mark(element, type_.of) for element in value.values()])
    return dict(zip(value, elements)), marks


def _mark_tags(value, type_):
    if len(value) != 1 or next(iter(value)) not in type_.of.tags:
        return _keyed(value, {})  # only with @unsafe_
    [(tag, fields)] = value.items()
    return _keyed(value, {tag: Type("struct", False, type_.of.tags[tag])})


MARKERS = {  # how an object is marked, by the kind it is a value of
    **dict.fromkeys((*SCALARS, "array", "ext"), lambda value, type_: _keyed(value, {})),
    "map": _mark_map,
    "struct": lambda value, type_: _keyed(value, type_.of.fields),
    "union": _mark_tags,
    "fn": _mark_tags,
}
