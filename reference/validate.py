"""Validation: check a value against a schema type and describe every way it fails.

How this works
--------------
`check(value, type, path, function)` yields one *case* per violation, already
in its wire shape: `{"path": [...], "reason": {"TypeUnexpected": {...}}}`. It
handles `null` itself (allowed only by a nullable `T?`) and otherwise
dispatches on the type's kind through the `CHECKS` table. Each check is a
generator: it yields the failures it sees, and recurses with `yield from
check(child, child_type, (path, key_or_index), function)`, so every case is
born knowing its full path. (A path is a chain of (parent, key) pairs, so that
going deeper costs the same at any depth; `at()` builds one.) `function` is
the function whose message is checked: what a selection (`_ext.Select_`, the
type of the `@select_` header) may name depends on it.

Path format and case order are the ones implementations share on the wire:

- a path starts with the function name (request body), the result tag
  (response body) or the header name, then field names exactly as declared
  (`"limit!"` keeps its `!`), integer indexes for array elements, map keys for
  map values, and tag names for union values;
- in an object, missing required fields come first in schema order, then the
  keys that were sent, in the order they were sent.

A message reports at most MAX_CASES cases, the first ones in that order, and
checking stops there: a request of a million wrong values costs no more
than one of a hundred.

Whether a number is an integer is decided by its JSON token: `1` is an integer,
`1.0` is not. Integers must fit in signed 64 bits, in `integer` and `number`
fields alike. Booleans are never numbers.
"""

import base64
import binascii
import functools
import itertools
import math

from .select import options
from .types import Struct, reachable

MIN_INT64, MAX_INT64 = -(2**63), 2**63 - 1
MAX_CASES = 100  # cases one message reports

EXPECTED = {  # the type name a failure reports as "expected", by kind
    "boolean": "Boolean", "integer": "Integer", "number": "Number", "string": "String",
    "bytes": "Bytes", "any": "Any", "array": "Array", "map": "Object", "struct": "Object",
    "union": "Object", "fn": "Object",  # and every _ext kind: "Object"
}
ACTUAL = {  # the type name a failure reports as "actual", by Python type
    type(None): "Null", bool: "Boolean", int: "Number", float: "Number", str: "String",
    list: "Array", dict: "Object", bytes: "Bytes",
}


def first(cases):
    """The cases a message reports: the first MAX_CASES of a check."""
    return list(itertools.islice(cases, MAX_CASES))


def at(*keys):
    """The path of `keys`, in the form checks pass down: nested (parent, key) pairs.

    Going one level deeper then costs the same at any depth; a case turns its
    path into the list the wire shows only when it is created."""
    path = ()
    for key in keys:
        path = (path, key)
    return path


def case(path, reason, data=None):
    """A validation case in its wire shape."""
    keys = []
    while path:
        path, key = path
        keys.append(key)
    return {"path": keys[::-1], "reason": {reason: {} if data is None else data}}


def type_unexpected(value, expected, path):
    """The case for a value of the wrong JSON type."""
    actual = ACTUAL.get(type(value), "Unknown")
    return case(path, "TypeUnexpected", {"actual": {actual: {}}, "expected": {expected: {}}})


def check(value, type_, path=(), function=None):
    """Yield a case for every way `value` fails to be a `type_` in a message of `function`."""
    if value is None:
        return () if type_.nullable else (type_unexpected(None, EXPECTED.get(type_.kind, "Object"), path),)
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
    # On the JSON wire bytes travel as base64 strings; MessagePack has a bin type.
    if type(value) is str:
        if decode_base64(value) is None:
            yield type_unexpected(value, "Base64String", path)
    elif type(value) is not bytes:
        yield type_unexpected(value, "Bytes", path)


def check_any(value, type_, path, function):
    return ()


def check_array(value, type_, path, function):
    if type(value) is not list:
        yield type_unexpected(value, "Array", path)
    elif not _all_plain(value, type_.of):
        for index, element in enumerate(value):
            yield from check(element, type_.of, (path, index), function)


def check_map(value, type_, path, function):
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
    elif not _all_plain(value.values(), type_.of):
        for key, element in value.items():
            yield from check(element, type_.of, (path, key), function)


PLAIN = {"boolean": {bool}, "integer": {int}, "number": {int, float}, "string": {str}}


def _all_plain(values, type_):
    """Whether every value of a large array or map is valid for a scalar type, found out
    without visiting each in Python (then none needs a case). False says "look closer"."""
    if type_.kind == "any":
        return type_.nullable or None not in values
    kinds = set(map(type, values)) - ({type(None)} if type_.nullable else set())
    if not kinds <= PLAIN.get(type_.kind, set()):
        return False
    if kinds & {int, float}:  # all in the range of 64-bit integers (larger floats: look closer)
        numbers = [v for v in values if v is not None] if type_.nullable else values
        return (MIN_INT64 <= min(numbers, default=0) and max(numbers, default=0) <= MAX_INT64
                and (float not in kinds or math.isfinite(sum(numbers))))  # NaN escapes min and max
    return True


def check_select(value, type_, path, function):
    """A selection of result fields, like the `@select_` header: each key it names, and
    each field name in its arrays, must be one that `function` offers."""
    return _check_option(value, options(function), path)


def _check_option(value, option, path):
    if type(option) is list:  # field names
        if type(value) is not list:
            yield type_unexpected(value, "Array", path)
            return
        for index, name in enumerate(value):
            if name not in option:
                yield case((path, index), "ArrayElementDisallowed")
    elif type(value) is not dict:  # the result, a union's tags, or the whole selection
        yield type_unexpected(value, "Object", path)
    else:
        for key, inner in value.items():
            if key in option:
                yield from _check_option(inner, option[key], (path, key))
            else:
                yield case((path, key), "ObjectKeyDisallowed")


def check_fields(value, struct, path, function=None):
    """Yield the cases of an object that should hold the fields of `struct`."""
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
        return
    for name in struct.required:
        if name not in value:
            yield case(path, "RequiredObjectKeyMissing", {"key": name})
    fields = struct.fields
    for name, field in value.items():
        if name in fields:
            yield from check(field, fields[name], (path, name), function)
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
    "_ext.Select_": check_select,  # (and the mock's calls and stubs: see stubs.py)
}


def decode_base64(text):
    """The bytes a strict, padded, standard-alphabet base64 string holds, or None."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return None


def decode_bytes(value, type_):
    """Return `value` with the base64 strings in its `bytes` fields decoded to bytes.

    Only for values that passed `check`: JSON requests carry bytes as base64.
    Values whose type holds no bytes field are returned as they are, unvisited."""
    if value is None or not _decodes(type_):
        return value
    kind = type_.kind
    if kind == "bytes":
        return decode_base64(value) if type(value) is str else value
    if kind == "array":
        return [decode_bytes(element, type_.of) for element in value]
    if kind == "map":
        return {key: decode_bytes(element, type_.of) for key, element in value.items()}
    if kind == "struct":
        return decode_fields(value, type_.of)
    if kind in ("union", "fn"):
        [(tag, fields)] = value.items()
        return {tag: decode_fields(fields, type_.of.tags[tag])}
    return DECODERS[kind](value, type_) if kind in DECODERS else value


DECODERS = {}  # kinds decode_bytes hands on: the mock's calls and stubs (stubs.py)


def decode_fields(value, struct):
    """Decode the base64 strings in the bytes fields of an object of `struct` fields."""
    return {name: decode_bytes(field, struct.fields[name]) for name, field in value.items()}


BYTES = ("bytes", "any", "_ext.Call_", "_ext.Stub_")  # the kinds of value that can hold bytes
DECODED = ("bytes", "_ext.Call_", "_ext.Stub_")  # those whose base64 text decode_bytes turns into bytes


def _decodes(type_):
    """Whether a value of `type_` may hold base64 text that decode_bytes decodes."""
    while type_.kind in ("array", "map"):
        type_ = type_.of
    return may_hold(type_.of, DECODED) if type_.kind in ("struct", "union", "fn") else type_.kind in DECODED


@functools.cache
def may_hold(node, kinds=BYTES):
    """Whether a value of a Struct or Union can hold a value of one of `kinds` anywhere."""
    for node in reachable(node):
        for type_ in node.fields.values() if isinstance(node, Struct) else ():
            while type_.kind in ("array", "map"):
                type_ = type_.of
            if type_.kind in kinds:
                return True
    return False
