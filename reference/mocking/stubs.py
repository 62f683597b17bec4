"""The mock's own kinds of value, calls and stubs, brought to the core as `_ext.` types.

How this works
--------------
A call, `{"fn.X": arguments}`, names one of the service's functions and its
arguments; a stub is a call and, under `"->"`, the result it answers with,
and perhaps request headers a call must hold too (`"@auth_": ...`), and
under `"match!"` places of a call that match patterns instead (patterns.py).
They are the types `_ext.Call_` and `_ext.Stub_` of the mock's schema
(schemas/mock.json), and `KINDS` hands their rules to `load()`: the core's
walks reach them through the "ext" entry of each table (protocol/types.py).

Both may leave required fields out: a mock matches calls on the part a stub
gives, and makes up the result fields a stub leaves out when it answers
(`fill`, which completes a value the way the generator would make it). The
functions of the mock itself (`fn.createStub_`, ...) are never stubbed,
called or recorded.
"""

from ..protocol.blobs import restore, restore_fields
from ..protocol.generate import generate_fields, generate_tags, make
from ..protocol.types import Extension, Type
from ..protocol.validate import case, check_fields, check_tags, type_unexpected
from . import patterns

MAX_HOLES = 1000  # required result fields a stub may leave for the mock to make up


class Calls(Extension):
    """The `_ext.Call_` kind: {"fn.X": arguments}, where missing required arguments are allowed."""

    def check(self, value, path, function):
        name, cases = _named(value, path)
        yield from cases
        called, cases = _mockable(self.functions, name, path)
        yield from cases
        if called is not None:
            yield from _partial(check_fields(value[name], called.arguments, (path, name), function))

    def generate(self, context):
        """A call of one of the service's functions, drawn by name, a coin deciding each field."""
        function = _drawn(self.functions, context)
        return _partly(context, lambda: generate_tags(function.call, context))

    def restore(self, value):
        [name] = [key for key in value if key.startswith("fn.")]
        return {name: restore_fields(value[name], self.functions[name].arguments)}


class Stubs(Calls):
    """The `_ext.Stub_` kind: {"fn.X": arguments, "->": result}, and request headers a call must hold
    ({"@auth_": ...}: keys that start with @, as headers do); missing required fields allowed."""

    def check(self, value, path, function):
        name, cases = _named(value, path)
        yield from cases
        if name is None:
            return
        if "->" not in value:
            yield case(path, "RequiredObjectKeyMissing", {"key": "->"})
        for key in value:
            if key not in (name, "->", "match!") and not key.startswith("@"):
                yield case((path, key), "ObjectKeyDisallowed")
        called, cases = _mockable(self.functions, name, path)
        yield from cases
        if called is None:
            return
        if "match!" in value:
            yield from _match_cases(value["match!"], called, (path, "match!"))
        yield from _partial(check_fields(value[name], called.arguments, (path, name), function))
        if "->" in value:
            yield from _partial(check_tags(value["->"], called.result, (path, "->"), function))
            holes = sum("RequiredObjectKeyMissing" in found["reason"]
                        for found in check_tags(value["->"], called.result, (path, "->"), function))
            if holes > MAX_HOLES:
                yield case((path, "->"), "ExtensionValidationFailed", {
                    "reason": f"the result leaves {holes} required fields for the mock to make up; "
                              f"at most {MAX_HOLES} may be left out"})

    def generate(self, context):
        """A call and the Ok_ result it answers, a coin deciding each field."""
        function = _drawn(self.functions, context)
        return _partly(context, lambda: {function.name: generate_fields(function.arguments, context),
                                         "->": {"Ok_": generate_fields(function.result.tags["Ok_"], context)}})

    def restore(self, value):
        [name] = [key for key in value if key.startswith("fn.")]
        function = self.functions[name]
        restored = {**headers(value), name: restore_fields(value[name], function.arguments)}
        if "match!" in value:
            restored["match!"] = value["match!"]
        if "->" in value:
            restored["->"] = restore(value["->"], Type("union", False, function.result))
        return restored


def headers(stub):
    """The request headers a stub names, which a call must hold to match it."""
    return {key: value for key, value in stub.items() if key.startswith("@")}


KINDS = {"_ext.Call_": Calls, "_ext.Stub_": Stubs}


def _named(value, path):
    """The function a call or stub names, or None with the case of naming none or several."""
    if type(value) is not dict:
        return None, [type_unexpected(value, "Object", path)]
    names = [key for key in value if key.startswith("fn.")]
    if len(names) != 1:
        return None, [case(path, "ObjectKeyRegexMatchCountUnexpected", {
            "regex": "^fn\\..*$", "actual": len(names), "expected": 1, "keys": sorted(value)})]
    return names[0], []


def _mockable(functions, name, path):
    """The function `name`, or None with the case of a function the mock never answers for."""
    if name is None:
        return None, []
    if name not in functions:
        return None, [case((path, name), "FunctionUnknown")]
    if name.endswith("_"):  # fn.ping_ and the mock's own functions are never stubbed or recorded
        return None, [case((path, name), "ObjectKeyDisallowed")]
    return functions[name], []


def _match_cases(match, function, path):
    """The cases of a stub's `match!`: {place: pattern}, each place an argument's or a header's path."""
    if type(match) is not dict:
        yield type_unexpected(match, "Object", path)
        return
    for place, pattern in match.items():
        try:
            first = patterns.steps(place)[0]
            if not first.startswith("@") and first not in function.arguments.fields:
                raise ValueError(f"{function.name} has no argument {first!r} (a header's path starts with @)")
            if wrong := patterns.problem(pattern):
                raise ValueError(wrong)
        except ValueError as error:
            yield case((path, place), "ExtensionValidationFailed", {"reason": str(error)})


def _partial(cases):
    """The cases but those of missing fields: calls and stubs may give part of a value."""
    return (found for found in cases if "RequiredObjectKeyMissing" not in found["reason"])


def _drawn(functions, context):
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
    """Complete a stub's partial value: keep what it gives, generate the missing required fields."""
    return value if value is None else FILLS[type_.kind](value, type_, context)


def fill_fields(value, struct, context):
    """Complete an object of `struct` fields, in field name order like generated ones."""
    filled = {}
    for name in sorted(struct.fields):
        if name in value:
            filled[name] = fill(value[name], struct.fields[name], context)
        elif not name.endswith("!"):
            filled[name] = make(struct.fields[name], context)
    return filled


def _fill_tags(value, type_, context):
    [(tag, fields)] = value.items()
    return {tag: fill_fields(fields, type_.of.tags[tag], context)}


FILLS = {  # what filling does, by kind: only structs and unions may miss fields
    **dict.fromkeys(("boolean", "integer", "number", "string", "bytes", "any", "ext"),
                    lambda value, type_, context: value),
    "array": lambda value, type_, context: [fill(element, type_.of, context) for element in value],
    "map": lambda value, type_, context: {key: fill(element, type_.of, context) for key, element in value.items()},
    "struct": lambda value, type_, context: fill_fields(value, type_.of, context),
    "union": _fill_tags,
    "fn": _fill_tags,
}


def partial(wanted, actual):
    """Whether `actual` holds `wanted`: an object holds each key wanted, with a value that holds the
    wanted one; an array holds each wanted element in some element of its own; else they are equal."""
    if type(wanted) is dict:
        return type(actual) is dict and all(key in actual and partial(value, actual[key])
                                            for key, value in wanted.items())
    if type(wanted) is list:
        return type(actual) is list and all(any(partial(element, candidate) for candidate in actual)
                                            for element in wanted)
    return equal(wanted, actual)


def equal(a, b):
    """JSON equality: 1 equals 1.0, but true is not 1."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(equal, a, b))
    return a == b
