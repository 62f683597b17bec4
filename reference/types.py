"""Types: the tree a schema's type expressions resolve into, and a walk through it.

A `Type` is one resolved expression: its kind ("integer", "array",
"struct", ...), whether null is allowed, and what it holds (see `Type.of`).
Named structs and unions are shared objects, so a recursive
type such as `union.Expression` is a tree that refers back to itself, and
`reachable()` is the one way through it that visits each node once.

Every struct and union also knows the `height` of its smallest value: how
deeply its required, non-null fields must nest structs, unions and calls. The
schema works it out to refuse types that have no finite value (no height),
and the generator uses it to finish a value quickly when its budget is spent.
"""

from typing import Any, NamedTuple


class Type(NamedTuple):
    """A resolved type expression.

    `of` depends on the kind: for "array" and "map", the Type of the elements;
    for "struct", its Struct; for "union", its Union; for "fn" (a call as data),
    the Union of that function's call, whose one tag is the function's name;
    for "_ext.Select_", "_ext.Call_" and "_ext.Stub_", the schema's functions by
    name, which selections, calls and stubs are checked against; for the
    scalars ("boolean", "integer", "number", "string", "bytes", "any"), None."""

    kind: str
    nullable: bool = False
    of: Any = None


class Struct:
    """Named fields: of a struct, a union tag, a function's arguments or a result."""

    def __init__(self, name):
        self.name = name
        self.fields = {}  # field name -> Type, in schema order
        self.required = ()  # the names without a trailing "!", in schema order
        self.height = None  # nesting of its smallest value; None if it has no finite value

    def __repr__(self):
        return f"Struct({self.name!r})"


class Union:
    """Tags, each holding a Struct: a union, a function result, or a call (`fn.X`)."""

    def __init__(self, name):
        self.name = name
        self.tags = {}  # tag -> Struct
        self.height = None  # that of its shallowest tag

    def __repr__(self):
        return f"Union({self.name!r})"


class Function(NamedTuple):
    """A function: its call (one tag, its own name), its result union, its flags."""

    name: str
    call: Union
    result: Union
    authenticated: bool  # a call without @auth_ is refused
    internal: bool

    @property
    def arguments(self):
        return self.call.tags[self.name]


def reachable(struct):
    """Yield `struct` and every Struct and Union its fields lead to, each once."""
    seen, waiting = set(), [struct]
    while waiting:
        node = waiting.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, Union):
            waiting.extend(node.tags.values())
            continue
        for type_ in node.fields.values():
            while type_.kind in ("array", "map"):
                type_ = type_.of
            if type_.kind in ("struct", "union", "fn"):
                waiting.append(type_.of)
