"""Compiled trims: a selection turned, once, into a function that copies only what it changes.

The core trims a result (protocol/select.py) by walking it whole. But a field
whose type reaches no struct or union the selection names needs no walk, nor
does one it drops. `Trims.trim()` compiles a selection for a function into
closures that filter the objects it names and copy the rest only on the way to
them, and keeps the last few. tests/reference/engine/test_service.py holds them to `apply()`.
"""

from ..protocol.types import Union, innermost, reachable

MAX_TRIMS = 256  # compiled selections kept


class Trims:
    """The compiled trims of one service's selections."""

    def __init__(self):
        self.made = {}  # (function name, repr of a selection) -> its trim, or None for "keep all"

    def trim(self, selection, result, function):
        """`result` (an Ok_ result) trimmed as the core's `select.apply()` would trim it."""
        key = (function.name, repr(selection))
        if key not in self.made:
            if len(self.made) >= MAX_TRIMS:
                self.made.clear()
            self.made[key] = compile_trim(selection, function)
        trim = self.made[key]
        return result if trim is None else trim(result)


def compile_trim(selection, function):
    """The trim of `function`'s Ok_ results by `selection`, or None if it keeps them whole."""
    named = {name for name in selection if name != "->"}
    made = {}  # id(Struct) -> its trim, compiled once, so that recursive types close on themselves
    changing = leading_to([function.result], lambda node: node.name in named)

    def reaches(node):  # whether trimming may change a value of a Struct or Union
        return id(node) in changing

    def of_type(type_):
        inner = innermost(type_)
        if inner.kind not in ("struct", "union", "fn") or not reaches(inner.of):
            return None
        if type_.kind in ("array", "map"):
            element = of_type(type_.of)
            if type_.kind == "array":
                return lambda value: [element(e) for e in value] if type(value) is list else value
            return lambda value: {k: element(e) for k, e in value.items()} if type(value) is dict else value
        if type_.kind == "struct":
            return of_struct(type_.of, selection.get(type_.of.name))
        tags = selection.get(type_.of.name) or {}
        return of_tags(type_.of, {tag: of_struct(struct, tags.get(tag)) for tag, struct in type_.of.tags.items()})

    def of_struct(struct, keep):
        if id(struct) not in made:
            inner = {}
            made[id(struct)] = lambda value: value if type(value) is not dict else {
                name: (inner[name](field) if name in inner else field)
                for name, field in value.items() if keep is None or name in keep}
            inner.update((name, trim) for name, type_ in struct.fields.items()
                         if (keep is None or name in keep) and (trim := of_type(type_)) is not None)
        return made[id(struct)]

    def of_tags(union, by_tag):
        def trim(value):
            if type(value) is not dict or len(value) != 1:
                return value
            [(tag, fields)] = value.items()
            return {tag: by_tag[tag](fields)} if tag in by_tag else value
        return trim

    ok = function.result.tags["Ok_"]
    keep = (selection.get("->") or {}).get("Ok_")
    if keep is None and not reaches(ok):
        return None
    return of_tags(function.result, {"Ok_": of_struct(ok, keep)})


def leading_to(nodes, wanted):
    """The ids of the Structs and Unions, of `nodes` and those they lead to, from which one that is
    `wanted` can be reached (one walk each way, however many ask: a type may lead to every other)."""
    everything, parents = list(reachable(*nodes)), {}
    for node in everything:
        inner = node.tags.values() if isinstance(node, Union) else [
            type_.of for type_ in map(innermost, node.fields.values()) if type_.kind in ("struct", "union", "fn")]
        for child in inner:
            parents.setdefault(id(child), []).append(node)
    waiting = [node for node in everything if wanted(node)]
    found = {id(node) for node in waiting}
    while waiting:
        for parent in parents.get(id(waiting.pop()), ()):
            if id(parent) not in found:
                found.add(id(parent))
                waiting.append(parent)
    return found
