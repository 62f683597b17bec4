"""Compiled checks: whether a value is valid for a type, without describing why not.

The core's validator (protocol/validate.py) yields a case for every way a value
fails, at the cost of a generator and a call or two a value, even when nothing
fails, which is most often. A `Compiler` turns each type, once, into a yes or
no: yes when the walk would find no case; no sends the value to the walk, to
say what is wrong. One loop, `_fields`, checks an object's fields and goes
into the struct and union values it holds itself. Each entry of `PREDICATES`
and `COMPILERS` mirrors `validate.CHECKS`' for its kind; an `_ext.` type is
always walked. tests/test_engine.py holds the answers to the walk's.
"""

import functools
import math

from ..protocol.blobs import from_base64
from ..protocol.limits import MAX_INT64, MIN_INT64


def _integer(value):
    return type(value) is int and MIN_INT64 <= value <= MAX_INT64


def _number(value):
    kind = type(value)
    return (MIN_INT64 <= value <= MAX_INT64) if kind is int else kind is float and math.isfinite(value)


PREDICATES = {  # of the kinds that hold no values, and of an _ext. type
    "boolean": lambda value: type(value) is bool,
    "integer": _integer,
    "number": _number,
    "string": lambda value: type(value) is str,
    "bytes": lambda value: type(value) is bytes or (type(value) is str and from_base64(value) is not None),
    "any": lambda value: value is not None,
    "ext": lambda value: False,  # walked: its rules are its own
}
TYPE_ONLY = {"boolean": bool, "integer": int, "number": int, "string": str}  # a value of this type is
# valid as it is, but for an integer's range: `_fields` checks such a field itself, without a call


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
        checks = self.checks(struct)
        return lambda value: type(value) is dict and _fields(checks, value)

    def fields_of_object(self, struct):
        """The predicate of `struct` fields in a value known to be an object (a call less)."""
        return functools.partial(_fields, self.checks(struct))

    def tags(self, union):
        """The predicate of a value of `union`: one tag, holding that tag's fields."""
        return functools.partial(_tag, self.tags_checks(union))  # (a call less than a lambda's)

    def checks(self, struct):
        """For each field of `struct`: whether it is required, whether it may be null, the type
        whose values it takes as they are (TYPE_ONLY), and its predicate, or (for a struct or union value,
        which `_fields` goes into itself) the checks of its fields or tags; beside them, how many are
        required."""
        if id(struct) not in self.done:
            self.done[id(struct)] = checks = (len(struct.required), {})  # before its fields, which may lead back
            for name, type_ in struct.fields.items():
                inner = type_.kind in ("struct", "union", "fn")
                checks[1][name] = (not name.endswith("!"), type_.nullable, TYPE_ONLY.get(type_.kind),
                                None if inner else COMPILERS[type_.kind](self, type_),
                                self.checks(type_.of) if type_.kind == "struct" else None,
                                self.tags_checks(type_.of) if type_.kind in ("union", "fn") else None)
        return self.done[id(struct)]

    def tags_checks(self, union):
        """The checks of each tag's fields, by tag."""
        if id(union) not in self.done:
            self.done[id(union)] = tags = {}
            tags.update((tag, self.checks(struct)) for tag, struct in union.tags.items())
        return self.done[id(union)]


def _fields(checks, value):
    """Whether an object holds the fields `checks` describe, each valid. A lookup that fails is a no
    (a try costs nothing until something raises): the walk says what is wrong."""
    required, checks = checks
    try:
        for name, field in value.items():
            is_required, nullable, exact, valid, fields, tags = checks[name]  # (KeyError: no field of it)
            required -= is_required
            if field is None:
                if not nullable:
                    return False
            elif type(field) is exact:
                if exact is int and not MIN_INT64 <= field <= MAX_INT64:
                    return False
            elif tags is not None:  # a union's value: one tag, holding its fields (gone into here, a call saved)
                if type(field) is not dict:
                    return False
                [tag] = field  # (ValueError: not one tag)
                field = field[tag]
                if type(field) is not dict or not _fields(tags[tag], field):  # (KeyError: no tag of it)
                    return False
            elif valid is not None:
                if not valid(field):
                    return False
            elif type(field) is not dict or not _fields(fields, field):
                return False
    except (KeyError, ValueError):
        return False
    return not required


def _tag(tags, value):
    """Whether a union's value is one of its tags, holding that tag's fields."""
    if type(value) is not dict or len(value) != 1:
        return False
    [tag] = value
    checks, fields = tags.get(tag), value[tag]
    return checks is not None and type(fields) is dict and _fields(checks, fields)


def _array(compiler, type_):
    if type_.of.kind == "struct" and not type_.of.nullable:  # (the commonest: a call saved for each)
        checks = compiler.checks(type_.of.of)
        return lambda value: type(value) is list and _structs(value, checks)
    element = compiler.type(type_.of)
    return lambda value: type(value) is list and all(map(element, value))


def _structs(values, checks):
    """Whether each of `values` is an object of the fields `checks` describe."""
    for value in values:
        if type(value) is not dict or not _fields(checks, value):
            return False
    return True


def _map(compiler, type_):
    element = compiler.type(type_.of)
    return lambda value: type(value) is dict and all(map(element, value.values()))


COMPILERS = {  # how each kind compiles to a predicate
    **dict.fromkeys(PREDICATES, lambda compiler, type_: PREDICATES[type_.kind]),
    "array": _array,
    "map": _map,
    "struct": lambda compiler, type_: compiler.fields(type_.of),
    "union": lambda compiler, type_: compiler.tags(type_.of),
    "fn": lambda compiler, type_: compiler.tags(type_.of),
}
