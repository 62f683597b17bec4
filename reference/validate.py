"""Validation: check a value against a schema type and describe every way it fails.

How this works
--------------
`check(value, type, path, function)` yields one *case* per violation, in its
wire shape: `{"path": [...], "reason": {"TypeUnexpected": {...}}}`. It handles
`null` itself (allowed only by a nullable `T?`), otherwise dispatches on the
type's kind through the `CHECKS` table. Each check is a generator that yields
what it sees and recurses with `check(child, child_type, (path, key), function)`,
so every case is born knowing its full path (a `Path`). `function` is the
function whose message is checked: a selection (`_ext.Select_`) may name only
what it offers, and the mock's calls and stubs (`_ext.Call_`, `_ext.Stub_`)
name functions of its service.

Paths and case order are the ones implementations share on the wire:

- a path starts with the function name (request body), the result tag
  (response body) or the header name, then field names as declared
  (`"limit!"` keeps its `!`), array indexes, map keys, and union tags;
- in an object, missing required fields come first in schema order, then the
  keys sent, in the order sent.

A message reports at most MAX_CASES cases, the first in that order, and
checking stops there (a million wrong values cost no more than a hundred),
or once the keys of their paths add up to MAX_CASE_BYTES characters (a long
key repeated in many paths cannot make the answer outgrow the request).

A number is an integer by its JSON token (`1` is, `1.0` is not); integers fit
in signed 64 bits, in `integer` and `number` fields alike; booleans are never
numbers.
"""

import math

from . import blobs
from .codec import MAX_DEPTH
from .select import options

MIN_INT64, MAX_INT64 = -(2**63), 2**63 - 1
MAX_CASES = 100  # cases one message reports
MAX_CASE_BYTES = 64 * 1024  # characters of the keys in the paths one message reports, beyond the first case

EXPECTED = {  # the type name a failure reports as "expected", by kind
    "boolean": "Boolean", "integer": "Integer", "number": "Number", "string": "String",
    "bytes": "Bytes", "any": "Any", "array": "Array", "map": "Object", "struct": "Object",
    "union": "Object", "fn": "Object",  # and every _ext kind: "Object"
}
ACTUAL = {  # the type name a failure reports as "actual", by Python type
    type(None): "Null", bool: "Boolean", int: "Number", float: "Number", str: "String",
    list: "Array", dict: "Object", bytes: "Bytes",
}


# A path, as checks pass it down: () at the top, then (parent path, key or index) for each
# step, so that going one level deeper costs the same at any depth. `case()` turns it into
# the list the wire shows, only when a case is made.
Path = tuple


def first(cases):
    """The cases a message reports: a check's first, at most MAX_CASES, within MAX_CASE_BYTES of keys."""
    reported, size = [], 0
    for found in cases:
        reported.append(found)
        size += sum(len(key) for key in found["path"] if type(key) is str)
        if len(reported) == MAX_CASES or size >= MAX_CASE_BYTES:
            break
    return reported


def at(*keys):
    """The Path of `keys`: at("fn.add", "x") is (((), "fn.add"), "x")."""
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
        if blobs.from_base64(value) is None:
            yield type_unexpected(value, "Base64String", path)
    elif type(value) is not bytes:
        yield type_unexpected(value, "Bytes", path)


def check_any(value, type_, path, function):
    return ()


def check_array(value, type_, path, function):
    if type(value) is not list:
        yield type_unexpected(value, "Array", path)
    elif not _all_valid(value, type_.of):  # (a fast path: see the end of the module)
        for index, element in enumerate(value):
            yield from check(element, type_.of, (path, index), function)


def check_map(value, type_, path, function):
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
    elif not _all_valid(value.values(), type_.of):
        for key, element in value.items():
            yield from check(element, type_.of, (path, key), function)


def check_select(value, type_, path, function):
    """A selection (`@select_`): each key and field name it names must be one `function` offers."""
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


def check_wire(value, path=(), level=2):
    """Yield a case for every part of `value` that no wire can carry, which only a handler
    can put in an answer, where the schema allows anything: a number that is not finite, a
    Python object that is no JSON value, a key that is not a string, an array or object more
    than MAX_DEPTH levels deep in the message (a value that holds itself, too). `value` is
    at `level`: a body or the headers are at level 2, in the message's array."""
    kind = type(value)
    if kind in (dict, list) and level > MAX_DEPTH:
        yield case(path, "NestingTooDeep", {"limit": MAX_DEPTH})
    elif kind is dict:
        for key, element in value.items():
            if type(key) is str:
                yield from check_wire(element, (path, key), level + 1)
            else:
                yield type_unexpected(key, "String", (path, str(key)))
    elif kind is list:
        for index, element in enumerate(value):
            yield from check_wire(element, (path, index), level + 1)
    elif kind is float and not math.isfinite(value):
        yield case(path, "NumberOutOfRange")
    elif kind not in ACTUAL:
        yield type_unexpected(value, "Any", path)


# The mock's own kinds of value. A call, {"fn.X": arguments}, or a stub, the same with
# "->": result, names one of the service's functions (`type_.of` maps names to them) and
# may leave out required fields: a mock matches calls on the part a stub gives, and makes
# up the result fields it leaves out.

MAX_HOLES = 1000  # required result fields a stub may leave for the mock to make up


def check_call(value, type_, path, function):
    """An `_ext.Call_`: {"fn.X": arguments}, where missing required arguments are allowed."""
    name = yield from _one_function(value, path)
    called = yield from _mockable(type_.of, name, path)
    if called is not None:
        yield from _partial(check_fields(value[name], called.arguments, (path, name), function))


def check_stub(value, type_, path, function):
    """An `_ext.Stub_`: {"fn.X": arguments, "->": result}; missing required fields allowed."""
    name = yield from _one_function(value, path)
    if name is None:
        return
    if "->" not in value:
        yield case(path, "RequiredObjectKeyMissing", {"key": "->"})
    for key in value:
        if key not in (name, "->"):
            yield case((path, key), "ObjectKeyDisallowed")
    called = yield from _mockable(type_.of, name, path)
    if called is None:
        return
    yield from _partial(check_fields(value[name], called.arguments, (path, name), function))
    if "->" in value:
        holes = [0]  # how many missing required fields of the result are made up at each call
        yield from _partial(check_tags(value["->"], called.result, (path, "->"), function), holes)
        if holes[0] > MAX_HOLES:
            yield case((path, "->"), "ExtensionValidationFailed", {
                "reason": f"the result leaves {holes[0]} required fields for the mock to make up; "
                          f"at most {MAX_HOLES} may be left out"})


def _one_function(value, path):
    """Yield the case of an object without exactly one fn.* key; return that key."""
    if type(value) is not dict:
        yield type_unexpected(value, "Object", path)
        return None
    names = [key for key in value if key.startswith("fn.")]
    if len(names) != 1:
        yield case(path, "ObjectKeyRegexMatchCountUnexpected", {
            "regex": "^fn\\..*$", "actual": len(names), "expected": 1, "keys": sorted(value)})
        return None
    return names[0]


def _mockable(functions, name, path):
    """Yield the case of a function a mock never answers for; return the function otherwise."""
    if name is None:
        return None
    if name not in functions:
        yield case((path, name), "FunctionUnknown")
    elif name.endswith("_"):  # fn.ping_ and friends are never stubbed or recorded
        yield case((path, name), "ObjectKeyDisallowed")
    else:
        return functions[name]
    return None


def _partial(cases, missing=None):
    """Drop the missing-field cases (counted in `missing[0]`, if given): stubs match on part of a value."""
    for found in cases:
        if "RequiredObjectKeyMissing" not in found["reason"]:
            yield found
        elif missing is not None:
            missing[0] += 1


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
    "_ext.Select_": check_select,
    "_ext.Call_": check_call,
    "_ext.Stub_": check_stub,
}


# Fast paths. Each only skips work whose outcome is known: it gives the same answers as the
# plain walk (tests/test_validate.py proves it), and could be deleted without changing any
# answer, only its cost.

PLAIN = {"boolean": {bool}, "integer": {int}, "number": {int, float}, "string": {str}}


def _all_valid(values, type_):
    """Whether every value of a collection is valid for a scalar type, found without a Python loop."""
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
