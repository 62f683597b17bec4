"""Compiled checks: whether a value is valid for a type, answered without describing why not.

The core's validator (protocol/validate.py) walks a value and yields a case for
every way it fails; most values do not fail, and for them describing nothing
costs a generator and a call or two for every value. A `Compiler` turns each
type of a schema, once, into a predicate that only says yes or no: yes means
the core's walk would find no case; no means "walk it", and the walk says what
is wrong. A struct's or union's predicate loops over its fields itself, so a call is
paid for each value but no generator. Each entry of `SCALARS` and `COMPILERS`
mirrors that of `validate.CHECKS` for its kind; an `_ext.` type is always
walked. tests/test_engine.py holds the
answers to the walk's.
"""

import math

from ..protocol.blobs import from_base64
from ..protocol.limits import MAX_INT64, MIN_INT64


def _integer(value):
    return type(value) is int and MIN_INT64 <= value <= MAX_INT64


def _number(value):
    kind = type(value)
    return (MIN_INT64 <= value <= MAX_INT64) if kind is int else kind is float and math.isfinite(value)


SCALARS = {  # the predicates of the kinds that hold no values
    "boolean": lambda value: type(value) is bool,
    "integer": _integer,
    "number": _number,
    "string": lambda value: type(value) is str,
    "bytes": lambda value: type(value) is bytes or (type(value) is str and from_base64(value) is not None),
    "any": lambda value: value is not None,
    "ext": lambda value: False,  # walked: its rules are its own
}


class Compiler:
    """Predicates for one schema's types; each struct and union is compiled once, so a recursive
    one refers to its own predicate."""

    def __init__(self):
        self.done = {}  # id(Struct or Union) -> its predicate

    def type(self, type_):
        """The predicate of a Type."""
        valid = COMPILERS[type_.kind](self, type_)
        return (lambda value: value is None or valid(value)) if type_.nullable else valid

    def fields(self, struct):
        """The predicate of an object of `struct` fields."""
        if id(struct) not in self.done:
            checks = {}
            self.done[id(struct)] = lambda value: type(value) is dict and _fields(value, checks)
            checks.update(self.checks(struct))  # after, as its fields may lead back to it
        return self.done[id(struct)]

    def tags(self, union):
        """The predicate of a value of `union`: one tag, holding that tag's fields."""
        if id(union) not in self.done:
            tags = {}

            def valid(value):
                if type(value) is not dict or len(value) != 1:
                    return False
                [(tag, fields)] = value.items()
                checks = tags.get(tag)
                return checks is not None and type(fields) is dict and _fields(fields, checks)

            self.done[id(union)] = valid
            tags.update((tag, self.checks(struct)) for tag, struct in union.tags.items())
        return self.done[id(union)]

    def checks(self, struct):
        """For each field of `struct`: whether it is required, whether it may be null, and the
        predicate of its type as if it may not. The key "" holds how many fields are required
        (no field has an empty name)."""
        found = {name: (not name.endswith("!"), type_.nullable, COMPILERS[type_.kind](self, type_))
                 for name, type_ in struct.fields.items()}
        return {**found, "": len(struct.required)}


def _fields(value, checks):
    """Whether an object holds the fields `checks` describe, each valid."""
    required = checks[""]
    for name, field in value.items():
        check = checks.get(name)
        if check is None or not name:
            return False
        is_required, nullable, valid = check
        required -= is_required
        if not (nullable if field is None else valid(field)):
            return False
    return not required


def _array(compiler, type_):
    element = compiler.type(type_.of)
    return lambda value: type(value) is list and all(map(element, value))


def _map(compiler, type_):
    element = compiler.type(type_.of)
    return lambda value: type(value) is dict and all(map(element, value.values()))


COMPILERS = {  # how each kind compiles to a predicate
    **dict.fromkeys(SCALARS, lambda compiler, type_: SCALARS[type_.kind]),
    "array": _array,
    "map": _map,
    "struct": lambda compiler, type_: compiler.fields(type_.of),
    "union": lambda compiler, type_: compiler.tags(type_.of),
    "fn": lambda compiler, type_: compiler.tags(type_.of),
}
