"""Compiled checks: whether a value is valid for a type, without describing why not.

The core's validator (protocol/validate.py) yields a case for every way a value
fails, at the cost of a generator and a call or two a value, even when nothing
fails, which is most often. A `Compiler` turns each type, once, into a yes or
no: yes when the walk would find no case; no sends the value to the walk, to
say what is wrong. One loop, `_fields`, checks an object's fields and goes
into the struct and union values it holds itself; `renamed` is that loop for
the binary wire, renaming keys (ids to names, names to ids) as it checks.
Each entry of `PREDICATES` and `COMPILERS` mirrors `validate.CHECKS`' for its
kind; an `_ext.` type is always walked. tests/reference/engine/test_service.py
holds the answers to the walk's.
"""

import functools
import math

from ..protocol.blobs import from_base64
from ..protocol.limits import MAX_INT64, MIN_INT64
from ..protocol.types import Union


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
    """Predicates for one schema's types. Each struct and union gets its checks once, made empty when
    first named and filled in by one loop (`work`), so that a recursive type refers to its own, and a
    chain of definitions, however long, compiles without recursion."""

    def __init__(self):
        self.done = {}  # id(Struct or Union) -> its checks (see `entry`)
        self.waiting = []  # Structs and Unions whose checks are still to be filled in

    def type(self, type_):
        """The predicate of a Type."""
        valid = self.predicate(type_)
        self.work()
        return valid

    def fields_of_object(self, struct):
        """The predicate of `struct` fields in a value known to be an object (a call less)."""
        valid = functools.partial(_fields, self.entry(struct))
        self.work()
        return valid

    def tags(self, union):
        """The predicate of a value of `union`: one tag, holding that tag's fields."""
        valid = functools.partial(_tag, self.entry(union))  # (a call less than a lambda's)
        self.work()
        return valid

    def predicate(self, type_):
        """The predicate of a Type, its structs' and unions' checks perhaps still to be filled in."""
        valid = COMPILERS[type_.kind](self, type_)
        return (lambda value: value is None or valid(value)) if type_.nullable else valid

    def entry(self, node):
        """The checks of a Struct (how many fields are required, and for each field: whether it is
        required, whether it may be null, the type whose values it takes as they are (TYPE_ONLY), and
        its predicate, or, for a struct or union value, which `_fields` goes into itself, the checks of
        its fields or tags), or of a Union (each tag's fields' checks); made empty the first time."""
        if id(node) not in self.done:
            self.done[id(node)] = {} if isinstance(node, Union) else (len(node.required), {})
            self.waiting.append(node)
        return self.done[id(node)]

    def work(self):
        """Fill in the checks of every struct and union named so far, and of those they name."""
        while self.waiting:
            node = self.waiting.pop()
            if isinstance(node, Union):
                self.done[id(node)].update((tag, self.entry(struct)) for tag, struct in node.tags.items())
                continue
            for name, type_ in node.fields.items():
                inner = type_.kind in ("struct", "union", "fn")
                self.done[id(node)][1][name] = (not name.endswith("!"), type_.nullable, TYPE_ONLY.get(type_.kind),
                                                None if inner else COMPILERS[type_.kind](self, type_),
                                                self.entry(type_.of) if type_.kind == "struct" else None,
                                                self.entry(type_.of) if type_.kind in ("union", "fn") else None)


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


def renamed(checks, value, renames, key_type):
    """`_fields` for the binary wire, checking and renaming in one walk: an object whose keys are of
    `key_type`, as the fields `checks` describe, each valid, made anew with each key as `renames` says
    (a key as found -> (the field's name, the key written): ids to names for a request, names to ids
    for an answer); None if it is not valid, or holds an array, a map or what MessagePack alone has,
    which the walks name and check apart."""
    required, checks = checks
    made = {}
    try:
        for key, field in value.items():
            if type(key) is not key_type:  # (True and 1.0 would find the id 1)
                return None
            name, written = renames[key]
            is_required, nullable, exact, valid, fields, tags = checks[name]  # (KeyError: no field of it)
            required -= is_required
            kind = type(field)
            if field is None:
                if not nullable:
                    return None
            elif kind is exact:
                if exact is int and not MIN_INT64 <= field <= MAX_INT64:
                    return None
            elif tags is not None:
                if kind is not dict:
                    return None
                [(tag, field)] = field.items()  # (ValueError: not one tag)
                if type(tag) is not key_type or type(field) is not dict:
                    return None
                tag, written_tag = renames[tag]
                field = renamed(tags[tag], field, renames, key_type)
                if field is None:
                    return None
                field = {written_tag: field}
            elif valid is not None:
                if kind not in PLAIN or kind is float and not math.isfinite(field) or not valid(field):
                    return None
            elif kind is not dict or (field := renamed(fields, field, renames, key_type)) is None:
                return None
            made[written] = field
    except (KeyError, ValueError):
        return None
    return None if required else made


PLAIN = {str, int, bool, bytes, float}  # what a field checked by its predicate may hold to be renamed


def _tag(tags, value):
    """Whether a union's value is one of its tags, holding that tag's fields."""
    if type(value) is not dict or len(value) != 1:
        return False
    [tag] = value
    checks, fields = tags.get(tag), value[tag]
    return checks is not None and type(fields) is dict and _fields(checks, fields)


def _array(compiler, type_):
    if type_.of.kind == "struct" and not type_.of.nullable:  # (the commonest: a call saved for each)
        checks = compiler.entry(type_.of.of)
        return lambda value: type(value) is list and _structs(value, checks)
    element = compiler.predicate(type_.of)
    return lambda value: type(value) is list and all(map(element, value))


def _structs(values, checks):
    """Whether each of `values` is an object of the fields `checks` describe."""
    for value in values:
        if type(value) is not dict or not _fields(checks, value):
            return False
    return True


def _object(checks):
    return lambda value: type(value) is dict and _fields(checks, value)


def _map(compiler, type_):
    element = compiler.predicate(type_.of)
    return lambda value: type(value) is dict and all(map(element, value.values()))


COMPILERS = {  # how each kind compiles to a predicate
    **dict.fromkeys(PREDICATES, lambda compiler, type_: PREDICATES[type_.kind]),
    "array": _array,
    "map": _map,
    "struct": lambda compiler, type_: _object(compiler.entry(type_.of)),
    "union": lambda compiler, type_: functools.partial(_tag, compiler.entry(type_.of)),
    "fn": lambda compiler, type_: functools.partial(_tag, compiler.entry(type_.of)),
}
