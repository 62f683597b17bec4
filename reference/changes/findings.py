"""The findings of a schema comparison: where each change is in the files, and whom it reaches.

How this works
--------------
compatibility.py walks two schemas side by side and records what it meets
as `Pair`s: two definitions compared on one side, each remembering the
`Root` (a function's call or result, the request or response headers) that
starts at it, or the pair and step (a field, a tag) that led to it. A
`Finding` is one change at one element, with the pairs it was met in. Its
routes and clients come from the comparison's `Reach`: a walk down from
each root, breadth first, made once for all findings, so each route shown
is the shortest and a finding costs the roots that reach its pairs. `Places` says where an
element of one schema is written: its definition key and path, and the
line and column of its file.
"""

from typing import NamedTuple

from ..protocol.types import Union
from ..sources import Text

CLIENTS = {"call": "call {}", "read": "read {}'s result", "send": "send {}", "receive": "read the {} header",
           "select": "select from {}'s result"}  # (a selection rule's clients: those that send @select_)
MOST_STEPS = 60  # steps of a route shown whole; of a longer one, the first and last 20


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

    def __init__(self, rule, level, element, where, detail, reach):
        self.rule, self.level, self.element, self.detail = rule, level, element, str(detail)
        self.reach = reach  # the comparison's Reach
        self.where, self.order = where  # as text (FILE:LINE:COL), and as a key to sort by
        self.pairs, self.last = [], []  # the pairs it is in, and its own step in each (a field or tag, or None)
        self.sites = set()  # where a recorded call holds a value if the change touches it (traffic.held)
        self.accepted = False  # named by --except
        self.found = None  # [(Root, steps)] once searched (reached)

    def add(self, pair, last=None, site=None):
        """Count `pair` among those the change is in: `last`, its own step in the pair (a field or tag, or
        None); `site`, where a recorded call holds a value if the change touches it."""
        self.pairs.append(pair)
        self.last.append(last)
        self.sites.add(("call", pair.roots[0].name) if self.rule.startswith("function-") else
                       ("select" if self.rule.startswith("selected-") else pair.side, id(pair.old), site))

    def routes(self, most=None):
        """The path to the element from each Root it is reached from (the first `most`), the shortest each."""
        return [_route(root, steps) for root, steps in self.reached()[:most]]

    def clients(self):
        """Which clients it breaks: those that call a function, read its result, send or read a header."""
        selection = self.rule.startswith("selected-")
        return list(dict.fromkeys(CLIENTS["select" if selection else root.kind].format(
            root.name or steps[0].split(":")[0]) for root, steps in self.reached()))

    def reached(self):
        """The Roots the element is reached from, breadth first (so the nearest first), each with the
        steps of its shortest way down to the element; found once."""
        if self.found is None:
            self.found = self.search()
        return self.found

    def search(self):
        """The Roots that reach the pairs the element is in, each by its shortest way (see `reached`)."""
        nearest = {}  # root -> (distance, its number, the pair, the element's own step in it)
        for pair, last in zip(self.pairs, self.last):
            for root, (distance, number, _, _) in self.reach.ways(pair).items():
                if root not in nearest or distance < nearest[root][0]:
                    nearest[root] = (distance, number, pair, last)
        ordered = sorted(nearest.items(), key=lambda item: item[1][:2])
        return [(root, self.reach.steps(root, pair, last)) for root, (_, _, pair, last) in ordered]

    def count(self):
        """How many Roots (functions' calls and results, headers) the element is reached from."""
        return len(self.reached())


class Reach:
    """Every Root's shortest ways down to each pair it reaches, found once, breadth first from each Root
    when a finding first asks, and shared by all findings: a comparison costs the pairs each Root
    reaches, not findings times pairs (cycles of coprime lengths make 40,000 pairs)."""

    def __init__(self, pairs):
        self.pairs = pairs  # the comparison's pairs (as they are walked)
        self.led, self.found = None, None  # pair -> [(the pair it leads to, the step)]; pair -> ways

    def below(self):
        """What each pair leads to, once the walk is over: pair -> [(the pair below, the step)]."""
        if self.led is None:
            self.led = {}
            for pair in self.pairs:
                for parent, step in pair.parents:
                    self.led.setdefault(parent, []).append((pair, step))
        return self.led

    def ways(self, pair):
        """The Roots that reach `pair`: root -> (distance, the root's number, the pair above, the step)."""
        if self.found is None:
            self.found = self.search()
        return self.found.get(pair, {})

    def search(self):
        """Breadth first down from each Root, in the order the walk met them."""
        below, found = self.below(), {}
        starts = [(root, pair) for pair in self.pairs for root in pair.roots]
        for number, (root, start) in enumerate(starts):
            found.setdefault(start, {})[root] = (0, number, None, None)
            level, distance = [start], 0
            while level:
                distance, following = distance + 1, []
                for pair in level:
                    for inner, step in below.get(pair, ()):
                        ways = found.setdefault(inner, {})
                        if root not in ways:
                            ways[root] = (distance, number, pair, step)
                            following.append(inner)
                level = following
        return found

    def steps(self, root, pair, last):
        """The steps from `root` down to `pair`, then `last`; of a way longer than MOST_STEPS, its first and
        last steps and how many between."""
        steps = [last] if last else []
        while pair is not None:
            _, _, pair, step = self.found[pair][root]
            steps += [step] if step else []
        steps.reverse()
        if len(steps) > MOST_STEPS:
            steps[MOST_STEPS // 3:-MOST_STEPS // 3] = [f"({len(steps) - MOST_STEPS // 3 * 2:,} steps more)"]
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
