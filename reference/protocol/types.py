"""Types: the kinds of value a schema describes, and the tree its type expressions resolve into.

How this works
--------------
`KINDS` lists every kind of value, once. A `Type` is one resolved type
expression: its kind, whether null is allowed, and what it holds. Every walk
a type directs (checking a value, generating one, restoring bytes, marking
them, trimming a selection) is a table with an entry per kind, and a test
holds every table to this list.

An `_ext.` type is an `Extension`, a kind of value with rules of its own: the
core has `_ext.Select_` (select.py), and a mock brings `_ext.Call_` and
`_ext.Stub_` to `load()` (stubs.py).

Named structs and unions are shared objects, so a recursive type such as
`union.Expression` refers back to itself; `reachable()` visits each node
once. Each knows the `height` of its smallest value (`heights()`), which the
loader needs to refuse types with no finite value, and the generator to end
a value soon.
"""

from typing import Any, NamedTuple

KINDS = ("boolean", "integer", "number", "string", "bytes", "any",  # scalars
         "array", "map",  # collections: ["T"] and {"string": "T"}
         "struct", "union", "fn",  # definitions; "fn" is a call as data, {"fn.name": arguments}
         "ext")  # an _ext. type


class Type(NamedTuple):
    """A resolved type expression. `of` is, by kind: for "array" and "map", the Type of the
    elements; for "struct", its Struct; for "union", its Union; for "fn", the Union of the
    function's call, whose one tag is its name; for "ext", its Extension; else None."""

    kind: str
    nullable: bool = False
    of: Any = None


class Struct:
    """Named fields: of a struct, a union tag, a function's arguments or a result."""

    def __init__(self, name):
        self.name = name
        self.fields = {}  # field name -> Type, in schema order
        self.required = ()  # the names without a trailing "!", in schema order
        self.height = None  # nesting of its smallest value; None while unknown, or if it has none

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


class Extension:
    """An `_ext.` type's rules, which mirror the entries of the core's tables for a kind
    (validate.CHECKS, generate.GENERATORS, blobs.RESTORERS); the other walks treat its values
    as `any`. `functions` are the schema's, by name."""

    def __init__(self, functions):
        self.functions = functions

    def check(self, value, path, function):
        """Yield a case for every way `value` fails, in a message of `function`."""
        raise NotImplementedError

    def generate(self, context):
        """A random value of this kind."""
        raise NotImplementedError

    def restore(self, value):
        """`value`, valid already, with the base64 text of its bytes turned into bytes."""
        return value


def innermost(type_):
    """The type inside any arrays and maps: for ["struct.X"] and {"string": ["struct.X"]}, struct.X."""
    while type_.kind in ("array", "map"):
        type_ = type_.of
    return type_


def reachable(node):
    """Yield a Struct or Union and every Struct and Union its fields lead to, each once."""
    seen, waiting = set(), [node]
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


def heights(nodes):
    """Set the height of each Struct and Union that has one, in time linear in their fields.

    A struct's smallest value nests the smallest values of its required, non-null
    struct, union and call fields (collections may be empty): its height is one more
    than the greatest of theirs, or 0. A union's is its shallowest tag's. Heights are
    handed out lowest first: a union takes the first one a tag of it gets, a struct
    its own once the last of those fields has one."""
    waiting, dependents, levels = {}, {}, [[]]  # fields a struct waits for; who waits for a node
    for node in {id(node): node for node in nodes}.values():
        if isinstance(node, Union):
            for tag in node.tags.values():
                dependents.setdefault(id(tag), []).append(node)
            continue
        needs = [type_.of for name, type_ in node.fields.items()
                 if not name.endswith("!") and not type_.nullable and type_.kind in ("struct", "union", "fn")]
        waiting[id(node)] = len(needs)
        for need in needs:
            dependents.setdefault(id(need), []).append(node)
        if not needs:
            node.height = 0
            levels[0].append(node)
    for height, level in enumerate(levels):
        for node in level:  # which grows meanwhile, by the unions that take this height
            for dependent in dependents.get(id(node), ()):
                if dependent.height is None and isinstance(dependent, Union):
                    dependent.height = height
                    level.append(dependent)
                elif dependent.height is None:
                    waiting[id(dependent)] -= 1
                    if waiting[id(dependent)] == 0:
                        dependent.height = height + 1
                        levels += [] if len(levels) > height + 1 else [[]]
                        levels[height + 1].append(dependent)
