"""Matching stubs against a call, or a verification against recorded calls: by the definitions
(`ByDefinition`, the plain way, which the core's mock uses), or in linear time (`Matching`); and, when
no stub matches, the nearest one and where it differs (`nearest`).

A partial match (stubs.partial) asks, for each object or array in a stub's
array, whether some element of the call's array holds it: a search growing
with the product of both arrays, and more with nesting. `Matching` finds the
same answer faster: an element equal to one of the call's by its canonical
form in a set, the others among the call's elements holding the same leaf at
the same place (an index of `leaves`). What search remains may spend STEPS
steps per byte; beyond, no match, and the log says so. tests/reference/mocking/test_matching.py
holds its answers to the definition's.
"""

import logging

from ..protocol import codec
from . import patterns
from .stubs import equal, partial

log = logging.getLogger("reference")

STEPS = 16  # steps matching may take per byte of the stubs and calls it compares


class ByDefinition:
    """Matching by the definitions (stubs.py), one call or verification at a time."""

    def __init__(self, size):
        pass

    def matches(self, wanted, actual, strict, size):
        """Whether `actual` arguments match `wanted` ones: equal if `strict`, else partially."""
        return equal(wanted, actual) if strict else partial(wanted, actual)

    def patterned(self, match, arguments, headers, stub):
        """The call as patterns.patterned gives it for a stub's `match!`."""
        return patterns.patterned(match, arguments, headers, stub.arguments, stub.headers)

    def forget(self):
        pass


class Matching:
    """Matching one call against stubs, or one `fn.verify_` against recorded calls, within a
    budget of steps that grows with the bytes compared."""

    def __init__(self, size):
        self.steps = STEPS * size + 1000  # the budget, grown by each stub or call matched
        self.canonicals, self.indexes = {}, {}  # by id() of values alive while matching
        self.told = False  # whether the log said the budget ran out (once a call, however many stubs)

    def matches(self, wanted, actual, strict, size):
        """Whether `actual` arguments match `wanted` ones (partially unless `strict`); `size` adds to the budget."""
        self.steps += STEPS * size
        try:
            return equal(wanted, actual) if strict else self.partial(wanted, actual)
        except Exhausted:
            self.tell("matching took over %d steps per byte; taken as no match")
            return False

    def patterned(self, match, arguments, headers, stub):
        """The call as patterns.patterned gives it for a stub's `match!`, within the budget (None beyond)."""
        try:
            return patterns.patterned(match, arguments, headers, stub.arguments, stub.headers, self.spend)
        except Exhausted:
            self.tell("a stub's match! would take over %d steps per byte; taken as no match")
            return None

    def tell(self, said):
        """Say in the log, once for this call, that the budget ran out (each stub after it is no match)."""
        if not self.told:
            self.told = True
            log.warning(said + " (and so for every stub after it, for this call)", STEPS)

    def forget(self):
        """Forget the canonical forms and indexes worked out, before the values they describe go."""
        self.canonicals.clear()
        self.indexes.clear()

    def spend(self, steps):
        self.steps -= steps
        if self.steps < 0:
            raise Exhausted()

    def partial(self, wanted, actual):
        self.spend(1)
        if type(wanted) is dict:
            return type(actual) is dict and all(
                key in actual and self.partial(value, actual[key]) for key, value in wanted.items())
        if type(wanted) is not list:
            return equal(wanted, actual)
        if type(actual) is not list:
            return False
        members, canonicals, index = self.index(actual)
        seen = set()
        for element in wanted:
            form = self.canonical(element)
            if form in seen:
                continue
            seen.add(form)
            if type(element) not in (dict, list):
                found = form in members
            else:
                found = form in canonicals or any(self.partial(element, candidate)
                                                  for candidate in self.candidates(element, index))
            if not found:
                return False
        return True

    def index(self, elements):
        """An array's leaves, and its objects and arrays by canonical form and by leaf, worked out once."""
        if id(elements) not in self.indexes:
            self.spend(len(elements))
            members, canonicals, index = set(), set(), {None: []}
            for element in elements:
                if type(element) in (dict, list):
                    canonicals.add(self.canonical(element))
                    for leaf in leaves(element, 2):
                        index.setdefault(leaf, []).append(element)
                    index[None].append(element)
                else:
                    members.add(_member(element))
            self.indexes[id(elements)] = members, canonicals, index
        return self.indexes[id(elements)]

    def candidates(self, element, index):
        """The call's objects and arrays that hold `element`'s rarest leaf (or all of them)."""
        self.spend(1)
        return min((index.get(leaf, ()) for leaf in leaves(element, 2)), key=len, default=index[None])

    def canonical(self, value):
        """A canonical form that follows `equal`: equal values, and only they, have equal forms."""
        if type(value) not in (dict, list):
            return _member(value)
        if id(value) not in self.canonicals:
            self.spend(len(value))
            if type(value) is dict:
                self.canonicals[id(value)] = ("{", tuple(sorted((key, self.canonical(v)) for key, v in value.items())))
            else:
                self.canonicals[id(value)] = ("[", tuple(map(self.canonical, value)))
        return self.canonicals[id(value)]


def leaves(value, depth):
    """The leaves inside a value (no object or array), to `depth` levels down, each with its keys: what a
    partial match holds too."""
    items = value.items() if type(value) is dict else (("[]", element) for element in value)
    for key, element in items:
        if type(element) not in (dict, list):
            yield key, _member(element)
        elif depth > 1:
            yield from ((key, *leaf) for leaf in leaves(element, depth - 1))


class Exhausted(Exception):
    """A match took all the steps it may take."""


def _member(value):
    """A leaf as a set member that follows `equal`: true is not 1, but 1 is 1.0."""
    return type(value) is bool, value


def matched(matching, stub, arguments, headers):
    """Whether a call matches a stub: where its `match!` says, by patterns; elsewhere, by its values."""
    called = matching.patterned(stub.match, arguments, headers, stub) if stub.match else (arguments, headers)
    return called is not None and matching.matches(stub.arguments, called[0], stub.strict, stub.size) and \
        partial(stub.headers, called[1])


def nearest(candidates, arguments, headers, matching):
    """The stub of `candidates` whose arguments and headers differ from a call's at the fewest names, as
    listed, and where it differs: (stub, [difference, ...]). Each of the call's values is written out
    once, however many stubs it is compared with."""
    written: dict = {}  # (part, name) -> the call's value, as JSON, cut short

    def shown(part, values, name):
        if (part, name) not in written:
            written[(part, name)] = as_json(values.get(name, "(nothing)"))[:80]
        return written[(part, name)]
    found = []
    for stub in candidates:
        called, missed = (arguments, headers), []
        for (place, pattern), one in zip(stub.written.items(), stub.match):  # (a place a pattern holds differs not)
            made = matching.patterned([one], *called, stub)
            if made is None:
                value, there = patterns.at(called[1] if place.startswith("@") else called[0], one[0])
                missed.append(f"{place}: the call's {as_json(value)[:80] if there else '(nothing)'} does not match "
                              f"the stub's pattern {as_json(pattern)[:80]}")
                made = matching.patterned([(one[0], lambda value, spend: True)], *called, stub) or called
            called = made
        names = list(stub.arguments) + [name for name in called[0] if stub.strict and name not in stub.arguments]
        differences = missed + [f"{name}: the stub has {as_json(stub.arguments.get(name, '(nothing)'))[:80]}, the "
                                f"call {shown('', arguments, name)}" for name in names
                                if not matching.matches({name: stub.arguments.get(name)}, {name: called[0].get(name)},
                                                        stub.strict, 0)]
        differences += [f"header {name}: the stub has {as_json(value)[:80]}, the call {shown('@', headers, name)}"
                        for name, value in stub.headers.items() if not partial({name: value}, called[1])]
        found.append((len(differences), len(found), stub, differences))  # (the newest of the nearest)
    _, _, stub, differences = min(found)
    return stub.shown(), differences


def as_json(value):
    """A value as JSON text, its bytes as base64, for the log."""
    return codec.ENCODER.encode(value)


def no_matching_stub(missed):
    """The answer to a call no stub matched, with the nearest one, if any."""
    return {"ErrorNoMatchingStub_": {"nearest!": missed[0], "differences!": missed[1]} if missed else {}}
