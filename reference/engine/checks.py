"""Compiled checks: whether a value is valid for a type, answered without describing why not.

The core's validator (protocol/validate.py) walks a value and yields a case for
every way it fails; most values do not fail, and for them describing nothing
costs a generator per level. `compiled(type)` turns a type into a predicate,
closures built once per schema, that only says yes or no: yes means the
walk would find no case; no means "walk it", and the walk then describes the
failure. Each entry of `COMPILERS` mirrors the entry of `validate.CHECKS` for
its kind; an `_ext.` type is always walked. tests/test_engine.py holds every
predicate to the walk on generated schemas and values.
"""

import math

from ..protocol.blobs import from_base64
from ..protocol.limits import MAX_INT64, MIN_INT64
from ..protocol.types import Struct, Union


class Compiler:
    """Predicates for the types of one schema, each struct and union compiled once (even a
    recursive one, which refers to its own predicate)."""

    def __init__(self):
        self.done = {}  # id(Struct or Union) -> its predicate

    def type(self, type_):
        """The predicate of a Type."""
        valid = COMPILERS[type_.kind](self, type_)
        if type_.nullable:
            return lambda value: value is None or valid(value)
        return valid

    def fields(self, struct):
        """The predicate of an object of `struct` fields."""
        if id(struct) not in self.done:
            required, checks = frozenset(struct.required), {}

            def valid(value):
                if type(value) is not dict or not required <= value.keys():
                    return False
                for name, field in value.items():
                    check = checks.get(name)
                    if check is None or not check(field):
                        return False
                return True

            self.done[id(struct)] = valid  # before its fields, which may lead back to it
            checks.update((name, self.type(type_)) for name, type_ in struct.fields.items())
        return self.done[id(struct)]

    def tags(self, union):
        """The predicate of a value of `union`: one tag, holding that tag's fields."""
        if id(union) not in self.done:
            checks = {}

            def valid(value):
                if type(value) is not dict or len(value) != 1:
                    return False
                [(tag, fields)] = value.items()
                check = checks.get(tag)
                return check is not None and check(fields)

            self.done[id(union)] = valid
            checks.update((tag, self.fields(struct)) for tag, struct in union.tags.items())
        return self.done[id(union)]

    def node(self, node):
        """The predicate of a Struct's fields or a Union's values."""
        return self.tags(node) if isinstance(node, Union) else self.fields(node) if isinstance(node, Struct) else None


def _integer(value):
    return type(value) is int and MIN_INT64 <= value <= MAX_INT64


def _number(value):
    kind = type(value)
    return (MIN_INT64 <= value <= MAX_INT64) if kind is int else kind is float and math.isfinite(value)


def _bytes(value):
    return type(value) is bytes or (type(value) is str and from_base64(value) is not None)


def _array(compiler, type_):
    element = compiler.type(type_.of)
    return lambda value: type(value) is list and all(map(element, value))


def _map(compiler, type_):
    element = compiler.type(type_.of)
    return lambda value: type(value) is dict and all(map(element, value.values()))


COMPILERS = {
    "boolean": lambda compiler, type_: lambda value: type(value) is bool,
    "integer": lambda compiler, type_: _integer,
    "number": lambda compiler, type_: _number,
    "string": lambda compiler, type_: lambda value: type(value) is str,
    "bytes": lambda compiler, type_: _bytes,
    "any": lambda compiler, type_: lambda value: value is not None,
    "array": _array,
    "map": _map,
    "struct": lambda compiler, type_: compiler.fields(type_.of),
    "union": lambda compiler, type_: compiler.tags(type_.of),
    "fn": lambda compiler, type_: compiler.tags(type_.of),
    "ext": lambda compiler, type_: lambda value: False,  # walked: its rules are its own
}
