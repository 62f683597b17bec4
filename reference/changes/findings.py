"""The findings of a schema comparison: where each change is in the files, and whom it reaches.

How this works
--------------
compatibility.py walks two schemas side by side and records what it meets
as `Pair`s: two definitions compared on one side, each remembering the
`Root` (a function's call or result, the request or response headers) that
starts at it, or the pair and step (a field, a tag) that led to it. A
`Finding` is one change at one element, with the pairs it was met in; its
routes and clients are found by looking up from those pairs to every root,
breadth first, so each route shown is the shortest. `Places` says where an
element of one schema is written: its definition key and path, and the
line and column of its file.
"""

from typing import NamedTuple

from ..protocol.types import Union
from ..sources import Text

CLIENTS = {"call": "call {}", "read": "read {}'s result", "send": "send {}", "receive": "read the {} header",
           "select": "select from {}'s result"}  # (a selection rule's clients: those that send @select_)


class Root(NamedTuple):
    """Where a walk starts: a function's call or result, or the request or response headers."""

    kind: str  # "call", "read", "send", "receive"
    name: str  # the function ("" for headers)


class Pair:
    """Two definitions compared on one side (a struct's fields, a union's tags): what led to them."""

    __slots__ = ("old", "new", "side", "roots", "parents")

    def __init__(self, old, new, side):
        self.old, self.new, self.side = old, new, side
        self.roots = []  # Roots that start here
        self.parents = []  # (the Pair that led here, the step: a field "name: type", or a tag)


class Finding:
    """One change an old client meets: its rule and level, the element, where, how it changed, and the
    pairs it is in."""

    def __init__(self, rule, level, element, where, detail):
        self.rule, self.level, self.element, self.detail = rule, level, element, str(detail)
        self.where, self.order = where  # as text (FILE:LINE:COL), and as a key to sort by
        self.pairs, self.last = [], []  # the pairs it is in, and its own step in each (a field or tag, or None)
        self.sites = set()  # where a recorded call holds a value if the change touches it (traffic.held)
        self.accepted = False  # named by --except
        self.found = None  # (Roots, steps) once searched (reached)

    def add(self, pair, last=None, site=None):
        """Count `pair` among those the change is in: `last`, its own step in the pair (a field or tag, or
        None); `site`, where a recorded call holds a value if the change touches it."""
        self.pairs.append(pair)
        self.last.append(last)
        self.sites.add(("call", pair.roots[0].name) if self.rule.startswith("function-") else
                       ("select" if self.rule.startswith("selected-") else pair.side, id(pair.old), site))

    def routes(self, most=None):
        """The path to the element from each Root it is reached from (the first `most`), the shortest each."""
        roots, before = self.reached()
        return [_route(root, _steps(pair, before)) for root, pair in roots[:most]]

    def clients(self):
        """Which clients it breaks: those that call a function, read its result, send or read a header."""
        roots, before = self.reached()
        selection = self.rule.startswith("selected-")
        return list(dict.fromkeys(CLIENTS["select" if selection else root.kind].format(
            root.name or _steps(pair, before, 1)[0].split(":")[0]) for root, pair in roots))

    def reached(self):
        """The Roots the element is reached from, each with the pair it starts at, breadth first (so the
        shortest way each), and what led each pair down to the element (for `_steps`); found once."""
        if self.found is None:
            self.found = self.search()
        return self.found

    def search(self):
        """Look up from the pairs the element is in to every Root, breadth first (see `reached`)."""
        found, waiting, before = {}, [], {}  # root -> its pair; pairs to look up from; pair -> (the next, its step)
        for pair, last in zip(self.pairs, self.last):
            if id(pair) not in before:
                before[id(pair)] = (None, last)
                waiting.append(pair)
        for pair in waiting:  # (which grows as it is walked)
            for root in pair.roots:
                found.setdefault(root, pair)
            for parent, step in pair.parents:
                if id(parent) not in before:
                    before[id(parent)] = (pair, step)
                    waiting.append(parent)
        return list(found.items()), before

    def count(self):
        """How many Roots (functions' calls and results, headers) the element is reached from."""
        return len(self.reached()[0])


def _steps(pair, before, most=None):
    """The steps from `pair` down to the element, following what led each pair up (the first `most`)."""
    steps = []
    while pair is not None and len(steps) != most:
        pair, step = before[id(pair)]
        if step:
            steps.append(step)
    return steps


def _route(root, steps):
    """A route as text: fn.addItem → item: struct.Item → color, or fn.getItem -> Ok_ → item."""
    if root.kind == "read":
        return f"{root.name} -> " + " → ".join(steps) if steps else root.name
    return " → ".join(([root.name] if root.name else []) + steps)


class Places:
    """Where the elements of one schema are written: (definition key, path in its entry), and the file's
    line and column."""

    def __init__(self, schema):
        self.schema, self.nodes, self.texts = schema, _nodes(schema), {}  # document -> its sources.Text

    def node(self, node):
        """(definition key, path in its entry) of a Struct or Union of the schema."""
        return self.nodes[id(node)]

    def field(self, node, name):
        """(definition key, path in its entry) of the field or tag `name` of a node of the schema."""
        if node.name.startswith("@"):  # the request or response headers: each declared by its own entry
            side = node.name[1:]
            key = self.schema.header_owners[(side, name)]
            return key, [key if side == "request" else "->", name]
        key, path = self.node(node)
        return key, [*path, name]

    def where(self, key, path, value=False):
        """Where the element at `path` of the entry `key` is (its value, if `value`), as text (FILE:LINE:COL,
        or the document and entry) and as a key to sort by."""
        schema = self.schema
        where = schema.defined[key]
        order = next((i for i, d in enumerate(schema.documents) if d.name == where.document), -1)
        text = schema.documents[order].text if order >= 0 else None
        if text is None or where.entry is None:
            return str(where), (order, where.entry or 0, 0, 0)
        if order not in self.texts:
            self.texts[order] = Text(text)
        at = self.texts[order].position([where.entry - 1, *path], value)
        return f"{where.document}:{at['line']}:{at['column']}", (order, where.entry, at["line"], at["column"])


def element_of(key, path):
    """An element's name: its definition, then the names inside (fn.add -> Ok_.result, struct.Item.color)."""
    text = key
    for step in path:
        if type(step) is not int and step != key:
            text += " ->" if step == "->" else f"{' ' if text.endswith('->') else '.'}{step}"
    return text


def _nodes(schema):
    """id() of each Struct and Union of a schema -> (its definition key, its path in that entry)."""
    found = {}
    for key, (kind, target) in sorted(schema.named.items(), key=lambda item: item[1][0] != "errors"):
        if kind == "fn":  # its call (a value of type fn.X) and arguments, and its result
            function = schema.functions[key]
            found[id(target)], found[id(function.arguments)] = (key, [key]), (key, [key])
            target = function.result
            found[id(target)] = (key, ["->"])
        elif kind == "headers":
            found[id(target[0])], found[id(target[1])] = (key, [key]), (key, ["->"])
            continue
        elif kind in ("struct", "union", "errors"):
            found[id(target)] = (key, [key])
        if isinstance(target, Union):
            for index, (tag, struct) in enumerate(target.tags.items()):  # (an errors.* tag is placed in its group)
                found.setdefault(id(struct), (key, [found[id(target)][1][0], index, tag]))
    return found
