"""Types: the kinds of value a schema describes, and the tree its type expressions resolve into.

How this works
--------------
`KINDS` lists every kind of value, once; every walk a type directs (checking,
generating, restoring bytes, marking them, trimming) is a table with an entry
per kind. A `Type` is one resolved expression: its kind, whether null is
allowed, and what it holds. An `_ext.` type is an `Extension`, a kind with
rules of its own: `_ext.Select_` (select.py), or a mock's calls and stubs.
Named structs and unions are shared objects, so `union.Expression` refers back
to itself; `reachable()` visits each once, and `sizes()` finds how many
values each one's smallest value holds (None if it has no finite value).
"""

import heapq
from typing import Any, NamedTuple

SCALARS = ("boolean", "integer", "number", "string", "bytes", "any")  # the kinds that hold no values
KINDS = (*SCALARS,
         "array", "map",  # collections: ["T"] and {"string": "T"}
         "struct", "union", "fn",  # definitions; "fn" is a call as data, {"fn.name": arguments}
         "ext")  # an _ext. type


class Type(NamedTuple):
    """A type expression resolved. `of` is, by kind: for "array" and "map", the elements' Type; for
    "struct", a Struct; for "union", a Union; for "fn", its call's Union, whose one tag is the
    function's name; for "ext", an Extension; else None."""

    kind: str
    nullable: bool = False
    of: Any = None


class Struct:
    """Named fields: of a struct, a union tag, a function's arguments or a result."""

    def __init__(self, name):
        self.name = name
        self.fields = {}  # field name -> Type, in schema order
        self.required = ()  # the names without a trailing "!", in schema order
        self.size = None  # values in its smallest value's fields (see sizes()); None if it has none

    def __repr__(self):
        return f"Struct({self.name!r})"


class Union:
    """Tags, each holding a Struct: a union, a function result, or a call (`fn.X`)."""

    def __init__(self, name):
        self.name = name
        self.tags = {}  # tag -> Struct
        self.size = None  # that of its cheapest tag

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


class Extension:
    """An `_ext.` type's rules: `check`, `generate` and `restore` stand for its kind in the tables of
    validate.py, generate.py and blobs.py; other walks take its values as `any`. `functions` are
    the schema's, by name; `name` is the type's own (`_ext.Select_`)."""

    def __init__(self, functions, name):
        self.functions, self.name = functions, name

    def check(self, value, path, function):
        """Yield a case for every way `value` fails to be of this type in a message of `function`."""
        raise NotImplementedError(f"{self.name} has no rules for checking a value")

    def generate(self, context):
        """A random value of this type, drawn from the context's generator."""
        raise NotImplementedError(f"{self.name} has no rules for making a value")

    def restore(self, value):
        """`value`, valid already, with the base64 text of its bytes turned into bytes."""
        return value


def innermost(type_):
    """The type inside any arrays and maps: for ["struct.X"] and {"string": ["struct.X"]}, struct.X."""
    while type_.kind in ("array", "map"):
        type_ = type_.of
    return type_


def reachable(*nodes):
    """Yield Structs and Unions, and every Struct and Union their fields lead to, each once."""
    seen, waiting = set(), list(nodes)
    while waiting:
        node = waiting.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, Union):
            waiting.extend(node.tags.values())
        else:
            inner = map(innermost, node.fields.values())
            waiting.extend(type_.of for type_ in inner if type_.kind in ("struct", "union", "fn"))


def sizes(nodes):
    """Set the `size` of each Struct and Union that has a finite value: how many values its
    smallest value is made of, in time that grows with the schema.

    A value costs 1, a null nothing, an empty array or map 1. A struct's fields cost what
    its required ones cost; a union's, what its cheapest tag's do; so a struct-typed field
    costs 1 and the struct's `size`. Sizes are handed out smallest first, as Dijkstra's
    walk does: a struct gets its own once all of its fields have one, a union the first
    its tags get. What none reaches has no finite value."""
    waiting, partial, dependents, queue = {}, {}, {}, []  # by id(node)
    for node in {id(node): node for node in nodes}.values():
        if isinstance(node, Union):
            for tag in node.tags.values():
                dependents.setdefault(id(tag), []).append(node)
            continue
        required = [type_ for name, type_ in node.fields.items() if not name.endswith("!") and not type_.nullable]
        needs = [type_.of for type_ in required if type_.kind in ("struct", "union", "fn")]
        waiting[id(node)], partial[id(node)] = len(needs), len(required) - len(needs)
        for need in needs:
            dependents.setdefault(id(need), []).append(node)
        if not needs:
            heapq.heappush(queue, (partial[id(node)], id(node), node))
    while queue:
        size, _, node = heapq.heappop(queue)
        if node.size is not None:
            continue
        node.size = size
        for dependent in dependents.get(id(node), ()):
            if isinstance(dependent, Union):
                heapq.heappush(queue, (size, id(dependent), dependent))  # the first to come out is its cheapest
                continue
            partial[id(dependent)] += 1 + size
            waiting[id(dependent)] -= 1
            if waiting[id(dependent)] == 0:
                heapq.heappush(queue, (partial[id(dependent)], id(dependent), dependent))
