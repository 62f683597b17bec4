"""The mock's own values: calls (`_ext.Call_`) and stubs (`_ext.Stub_`), and how they match.

How this works
--------------
`fn.createStub_` takes a stub, `{"fn.X": arguments, "->": result}`, and
`fn.verify_` a call, `{"fn.X": arguments}`. Both name one of the service's
own functions and may leave out required fields: the mock matches calls on
the arguments a stub gives, and makes up the result fields it leaves out.

These two kinds of value exist only in the mock's schema, so they live here,
and plug into the tables the protocol's own kinds use: `check_call` and
`check_stub` into `validate.CHECKS`, `generate_call` and `generate_stub`
(which mirror them) into `generate.GENERATORS`, and `decode_call` into
`validate.DECODERS`. The package imports this module, so the tables are
always complete.

A stub matches a call partially by default (`matches`): every argument it
names must be in the call with a matching value, where an object matches if
it holds the stub's keys with matching values, and an array if every element
of the stub's array matches some element of the call's. `strictMatch!` asks
for equal arguments (`equal`: JSON equality, where `true` is not `1`).
"""

import json

from . import generate, validate
from .generate import generate_fields, generate_tags
from .types import Type
from .validate import case, check_fields, check_tags, type_unexpected

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
    """Drop the missing-field cases (counting them in `missing[0]`, if given): stubs and
    verifications match on part of a value."""
    for c in cases:
        if "RequiredObjectKeyMissing" not in c["reason"]:
            yield c
        elif missing is not None:
            missing[0] += 1


def decode_call(value, type_):
    """A checked call or stub with the base64 text of its bytes fields turned into bytes."""
    name = next(key for key in value if key.startswith("fn."))
    function = type_.of[name]
    decoded = {name: validate.decode_fields(value[name], function.arguments)}
    if "->" in value:
        decoded["->"] = validate.decode_bytes(value["->"], Type("union", False, function.result))
    return decoded


def generate_call(type_, context):
    """An `_ext.Call_`: a call of one of the service's own functions, some fields left out."""
    function = _drawn_function(type_.of, context)
    return _partly(context, lambda: generate_tags(function.call, context))


def generate_stub(type_, context):
    """An `_ext.Stub_`: a call and the Ok_ result it answers, some fields left out."""
    function = _drawn_function(type_.of, context)
    return _partly(context, lambda: {function.name: generate_fields(function.arguments, context),
                                     "->": {"Ok_": generate_fields(function.result.tags["Ok_"], context)}})


def _drawn_function(functions, context):
    """One of the functions a mock answers (its name does not end with _), drawn by name."""
    names = sorted(name for name in functions if not name.endswith("_"))
    return functions[names[context.random.below(len(names))]]


def _partly(context, make):
    """Make a value in which a coin decides on required fields too, as in a call or stub."""
    every_required, context.every_required = context.every_required, False
    try:
        return make()
    finally:
        context.every_required = every_required


def fill(value, type_, context):
    """Complete a stub's partial value: keep what it gives, generate missing required fields."""
    kind = type_.kind
    if value is None or kind not in ("array", "map", "struct", "union", "fn"):
        return value
    if kind == "array":
        return [fill(element, type_.of, context) for element in value]
    if kind == "map":
        return {key: fill(element, type_.of, context) for key, element in value.items()}
    if kind == "struct":
        return fill_fields(value, type_.of, context)
    [(tag, fields)] = value.items()
    return {tag: fill_fields(fields, type_.of.tags[tag], context)}


def fill_fields(value, struct, context):
    """Complete an object of `struct` fields, in field name order like generated ones."""
    filled = {}
    for name in sorted(struct.fields):
        if name in value:
            filled[name] = fill(value[name], struct.fields[name], context)
        elif not name.endswith("!"):
            filled[name] = generate.generate(struct.fields[name], context)
    return filled


def matches(wanted, actual, strict):
    """Whether `actual` arguments match `wanted` ones, partially unless `strict`.

    Plain values are looked up in a set, so that long arrays cost linear time;
    objects and arrays in arrays are compared one by one."""
    if strict:
        return equal(wanted, actual)
    if type(wanted) is dict:
        return type(actual) is dict and all(
            key in actual and matches(value, actual[key], False) for key, value in wanted.items())
    if type(wanted) is list:
        if type(actual) is not list:
            return False
        if not (set(map(type, wanted)) | set(map(type, actual))) & {bool, dict, list}:
            return set(wanted) <= set(actual)  # plain values, which sets compare as `equal` does
        plain = {_plain(element) for element in actual if type(element) not in (dict, list)}
        nested = [element for element in actual if type(element) in (dict, list)]
        return all(_plain(element) in plain if type(element) not in (dict, list)
                   else any(matches(element, candidate, False) for candidate in nested)
                   for element in _unique(wanted))
    return equal(wanted, actual)


def _plain(value):
    """A value that is neither an object nor an array, as a set member that follows `equal`:
    true is not 1, but 1 is 1.0."""
    return type(value) is bool, value


def _unique(elements):
    """The elements of an array, each only once (an object by its JSON text)."""
    seen = {}
    for element in elements:
        nested = type(element) in (dict, list)
        seen.setdefault(json.dumps(element, sort_keys=True, default=bytes.hex) if nested else _plain(element), element)
    return seen.values()


def equal(a, b):
    """JSON equality: 1 equals 1.0, but true is not 1."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(equal, a, b))
    return a == b


validate.CHECKS.update({"_ext.Call_": check_call, "_ext.Stub_": check_stub})
validate.DECODERS.update({"_ext.Call_": decode_call, "_ext.Stub_": decode_call})
generate.GENERATORS.update({"_ext.Call_": generate_call, "_ext.Stub_": generate_stub})
