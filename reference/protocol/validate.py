"""Validation: check a value against a schema type and describe every way it fails.

How this works
--------------
`check(value, type, path, function)` yields one *case* per violation, in its
wire shape: `{"path": [...], "reason": {"TypeUnexpected": {...}}}`. It allows
`null` only for a nullable `T?`, and otherwise dispatches on the type's kind
through `CHECKS`; each check is a generator that recurses with the path one
step longer, so every case is born knowing its path. `function` is the one
whose message is checked: a selection may name only what it offers.

A path starts with the function name (request), the result tag (response)
or the header name, then field names as declared (`"limit!"` keeps its `!`),
array indexes, map keys and union tags. In an object, missing required
fields come first in schema order, then the keys sent, in the order sent.
An answer reports the first MAX_CASES cases, or fewer once the keys in their
paths reach MAX_PATH_CHARACTERS characters, and checking stops there. A wrong number is a `Number`, but
an integer is written without `.` or exponent, and fits in 64 bits.
"""

import math

from . import blobs
from .limits import MAX_CASES, MAX_INT64, MAX_PATH_CHARACTERS, MIN_INT64

EXPECTED = {  # the type name a failure reports as "expected", by kind
    "boolean": "Boolean", "integer": "Integer", "number": "Number", "string": "String", "bytes": "Bytes",
    "any": "Any", "array": "Array", "map": "Object", "struct": "Object", "union": "Object", "fn": "Object",
    "ext": "Object",
}
ACTUAL = {  # the type name a failure reports as "actual", by Python type
    type(None): "Null", bool: "Boolean", int: "Number", float: "Number", str: "String",
    list: "Array", dict: "Object", bytes: "Bytes",
}


def at(*keys):
    """The Path of `keys`: at("fn.add", "x") is (((), "fn.add"), "x")."""
    path = ()
    for key in keys:
        path = (path, key)
    return path


def case(path, reason, data=None):
    """A validation case in its wire shape. A path is passed down as () at the top, then (parent
    path, key) a step, so a step deeper costs the same at any depth; here it becomes a list."""
    keys = []
    while path:
        path, key = path
        keys.append(key)
    return {"path": keys[::-1], "reason": {reason: {} if data is None else data}}


def type_unexpected(value, expected, path):
    """The case for a value of the wrong JSON type."""
    return case(path, "TypeUnexpected", {"actual": {ACTUAL.get(type(value), "Unknown"): {}},
                                         "expected": {expected: {}}})


def first(cases):
    """The cases an answer reports: a check's first, at most MAX_CASES, and none after the one whose path
    keys bring those reported to MAX_PATH_CHARACTERS characters."""
    reported, size = [], 0
    for found in cases:
        reported.append(found)
        size += sum(len(key) for key in found["path"] if type(key) is str)
        if len(reported) == MAX_CASES or size >= MAX_PATH_CHARACTERS:
            break
    return reported


def check(value, type_, path=(), function=None):
    """Yield a case for every way `value` fails to be a `type_` in a message of `function`."""
    if value is None:
        return () if type_.nullable else (type_unexpected(None, EXPECTED[type_.kind], path),)
    return CHECKS[type_.kind](value, type_, path, function)


def check_boolean(value, type_, path, function):
    if type(value) is not bool:
        yield type_unexpected(value, "Boolean", path)


def check_integer(value, type_, path, function):
    if type(value) is not int:
        yield type_unexpected(value, "Integer", path)
    elif not MIN_INT64 <= value <= MAX_INT64:
        yield case(path, "NumberOutOfRange")


def check_number(value, type_, path, function):
    if type(value) is int:
        if not MIN_INT64 <= value <= MAX_INT64:
            yield case(path, "NumberOutOfRange")
    elif type(value) is float:
        if not math.isfinite(value):  # a handler overflowed; JSON has no infinity
            yield case(path, "NumberOutOfRange")
    else:
        yield type_unexpected(value, "Number", path)


def check_string(value, type_, path, function):
    if type(value) is not str:
        yield type_unexpected(value, "String", path)


def check_bytes(value, type_, path, function):
    # On the JSON wire bytes travel as base64 text; MessagePack has a type for them.
    if type(value) is str:
        if blobs.from_base64(value) is None:
            yield type_unexpected(value, "Base64String", path)
    elif type(value) is not bytes:
        yield type_unexpected(value, "Bytes", path)


def check_any(value, type_, path, function):
    return ()  # whether the wire can carry it is the codec's question (codec.unwritable)


def check_array(value, type_, path, function):
    if type(value) is not list:
        yield type_unexpected(value, "Array", path)
        return
    for index, element in enumerate(value):
        yield from check(element, type_.of, (path, index), function)


def check_map(value, type_, path, function):
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
        return
    for key, element in value.items():
        yield from check(element, type_.of, (path, key), function)


def check_fields(value, struct, path, function=None):
    """Yield the cases of an object that should hold the fields of `struct`."""
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
        return
    for name in struct.required:
        if name not in value:
            yield case(path, "RequiredObjectKeyMissing", {"key": name})
    for name, field in value.items():
        if name in struct.fields:
            yield from check(field, struct.fields[name], (path, name), function)
        else:
            yield case((path, name), "ObjectKeyDisallowed")


def check_tags(value, union, path, function=None):
    """Yield the cases of an object that should hold exactly one tag of `union`."""
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
    elif len(value) != 1:
        yield case(path, "ObjectSizeUnexpected", {"actual": len(value), "expected": 1})
    else:
        [(tag, fields)] = value.items()
        if tag in union.tags:
            yield from check_fields(fields, union.tags[tag], (path, tag), function)
        else:
            yield case((path, tag), "ObjectKeyDisallowed")


CHECKS = {
    "boolean": check_boolean,
    "integer": check_integer,
    "number": check_number,
    "string": check_string,
    "bytes": check_bytes,
    "any": check_any,
    "array": check_array,
    "map": check_map,
    "struct": lambda value, type_, path, function: check_fields(value, type_.of, path, function),
    "union": lambda value, type_, path, function: check_tags(value, type_.of, path, function),
    "fn": lambda value, type_, path, function: check_tags(value, type_.of, path, function),  # one tag
    "ext": lambda value, type_, path, function: type_.of.check(value, path, function),
}
