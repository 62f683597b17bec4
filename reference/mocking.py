"""The mock: any service's schema, answered with stubs or generated values.

How this works
--------------
A mock is an ordinary `Service`: the public schema of a live server (fetched
with `fn.api_`, or read from a saved copy) plus the mock's control functions
from `schemas/mock.json`, which `fn.api_` shows only with `includeInternal!`.
It validates requests exactly like the live server, because it is the same
core. Every function of the schema gets the same handler, `Mock.answer`:

1. record the call, `{"fn.name": arguments}`;
2. answer with the result of the newest stub that matches and has uses left,
   its missing required fields generated (`fill`);
3. otherwise generate a result (or, with generation off and no `@gen_: true`
   header, answer `ErrorNoMatchingStub_`).

A stub matches a call partially by default (`matches`): every argument it
names must be in the call with a matching value, where an object matches if
it holds the stub's keys with matching values, and an array if every element
of the stub's array matches some element of the call's. `strictMatch!` asks
for equal arguments (`equal`: JSON equality, where `true` is not `1`).
`fn.verify_` counts the recorded calls that match in the same way and marks
them verified, which is what `fn.verifyNoMoreInteractions_` looks at.

Values come from the seeded generator of `generate.py`: a mock answers the
same calls with the same values every time it starts, or after
`fn.setRandomSeed_`. Stubs and calls are kept as MessagePack, which is
compact and gives a fresh copy each time one is read.
"""

import functools
import logging
import sys
import threading
from dataclasses import dataclass

import msgpack

from . import generate
from .generate import Context, Random, generate_fields
from .loader import bundled, load
from .service import Service
from .types import Type

log = logging.getLogger("reference")

NO_MATCHING_STUB: dict = {"ErrorNoMatchingStub_": {}}
MAX_LISTED = 1024 * 1024  # bytes of recorded calls (as MessagePack) that one answer lists
STEPS = 16  # steps matching may take per byte of the stubs and calls it compares


@dataclass
class Stub:
    """A result to answer matching calls with, made by fn.createStub_."""

    function: str
    arguments: dict  # what a call's arguments must match
    result: bytes  # the result, as MessagePack
    strict: bool  # match equal arguments only, not partially
    uses: int  # answers left; -1 for no limit
    size: int  # about how many bytes of memory it takes


@dataclass
class Call:
    """A call the mock answered."""

    data: bytes  # {"fn.name": arguments}, as MessagePack
    verified: bool = False  # matched by some fn.verify_


class Mock:
    """The stubs, recorded calls and random values of one mock server."""

    def __init__(self, schema, seed=0, optional="random", length=(0, 3), generation=True,
                 max_stubs=1000, max_calls=10_000, max_state=64 * 1024 * 1024):
        self.schema, self.generation = schema, generation
        self.random, self.optional, self.length = Random(seed), optional, length
        self.max_stubs, self.max_calls, self.max_state = max_stubs, max_calls, max_state
        self.lock = threading.Lock()
        self.stubs = []  # Stubs, oldest first
        self.calls = []  # Calls, oldest first
        self.stub_bytes = self.call_bytes = 0

    def handlers(self):
        """A handler for every function: the service's own get `answer`, the mock's own theirs."""
        own = {name: functools.partial(self.answer, name)
               for name in self.schema.functions if not name.endswith("_")}
        return {**own, "fn.createStub_": self.create_stub, "fn.verify_": self.verify,
                "fn.verifyNoMoreInteractions_": self.verify_no_more_interactions,
                "fn.clearStubs_": self.clear_stubs, "fn.clearCalls_": self.clear_calls,
                "fn.setRandomSeed_": self.set_random_seed}

    def answer(self, name, arguments, headers):
        """Answer a call of the mocked service."""
        function = self.schema.functions[name]
        call = Call(msgpack.packb({name: arguments}))
        with self.lock:
            self.calls.append(call)
            self.call_bytes += len(call.data)
            while len(self.calls) > self.max_calls or self.call_bytes > self.max_state // 2:
                self.call_bytes -= len(self.calls.pop(0).data)
            stubs = self.stubs[::-1]  # newest first; matched outside the lock
        matching = Matching(len(call.data))
        stub = next((stub for stub in stubs if stub.function == name and stub.uses != 0
                     and matching.matches(stub.arguments, arguments, stub.strict, stub.size)), None)
        with self.lock:
            if stub is not None and stub.uses != 0:  # (another call may have used it up meanwhile)
                if stub.uses > 0:
                    stub.uses -= 1
                # A stub's missing required fields are made without optional fields.
                context = Context(self.random, "none", self.length, function)
                return fill(msgpack.unpackb(stub.result), Type("union", False, function.result), context)
            if not self.generation and headers.get("@gen_") is not True:
                return NO_MATCHING_STUB
            context = Context(self.random, self.optional, self.length, function)
            return {"Ok_": generate_fields(function.result.tags["Ok_"], context)}

    def create_stub(self, arguments, headers):
        stub = arguments["stub"]
        [name] = [key for key in stub if key.startswith("fn.")]
        result = msgpack.packb(stub["->"])
        size = footprint(stub[name]) + len(result)
        with self.lock:
            self.stubs.append(Stub(name, stub[name], result, arguments.get("strictMatch!", False),
                                   arguments.get("count!", -1), size))
            self.stub_bytes += size
            while len(self.stubs) > self.max_stubs or self.stub_bytes > self.max_state // 2:
                self.stub_bytes -= self.stubs.pop(0).size
        return {"Ok_": {}}

    def verify(self, arguments, headers):
        [(name, wanted)] = arguments["call"].items()
        strict = arguments.get("strictMatch!", False)
        criteria = arguments.get("count!", {"AtLeast": {"times": 1}})
        [(kind, times)] = [(kind, fields["times"]) for kind, fields in criteria.items()]
        with self.lock:
            records = list(self.calls)  # matched outside the lock, each decoded in turn
        matching, matched = Matching(len(msgpack.packb(wanted))), []
        for record in records:
            call = msgpack.unpackb(record.data)
            if name in call and matching.matches(wanted, call[name], strict, len(record.data)):
                matched.append(record)
            matching.forget()  # the next call's values may reuse the ids of this one's
        with self.lock:
            for record in matched:
                record.verified = True  # whether or not this verification passes
        found = len(matched)
        too_many = kind in ("Exact", "AtMost") and found > times
        too_few = kind in ("Exact", "AtLeast") and found < times
        if not (too_many or too_few):
            return {"Ok_": {}}
        reason = "TooManyMatchingCalls" if too_many else "TooFewMatchingCalls"
        calls, omitted = listed(records)
        return {"ErrorVerificationFailure": {"reason": {reason: {
            "wanted": criteria, "found": found, "allCalls": calls, **omitted}}}}

    def verify_no_more_interactions(self, arguments, headers):
        with self.lock:
            unverified = [record for record in self.calls if not record.verified]
        if unverified:
            calls, omitted = listed(unverified)
            return {"ErrorVerificationFailure": {"additionalUnverifiedCalls": calls, **omitted}}
        return {"Ok_": {}}

    def clear_stubs(self, arguments, headers):
        with self.lock:
            self.stubs.clear()
            self.stub_bytes = 0
        return {"Ok_": {}}

    def clear_calls(self, arguments, headers):
        with self.lock:
            self.calls.clear()
            self.call_bytes = 0
        return {"Ok_": {}}

    def set_random_seed(self, arguments, headers):
        with self.lock:
            self.random.seed(arguments["seed"])
        return {"Ok_": {}}


def listed(records):
    """The calls an answer lists: the newest within MAX_LISTED bytes, and how many older were omitted."""
    kept, size = [], 0
    for record in reversed(records):
        size += len(record.data)
        if size > MAX_LISTED:
            break
        kept.append(msgpack.unpackb(record.data))
    omitted = len(records) - len(kept)
    return kept[::-1], {"omittedCalls!": omitted} if omitted else {}


def footprint(value):
    """About how many bytes of memory `value` takes: every object it holds, counted."""
    size = sys.getsizeof(value)
    if type(value) is dict:
        return size + sum(footprint(key) + footprint(element) for key, element in value.items())
    if type(value) is list:
        return size + sum(map(footprint, value))
    return size


def service(source, **options):
    """A mock Service for the schema `source`: anything `load()` takes, a loaded Schema too."""
    schema = load(source, internal=[bundled("mock")])
    return Service(schema, Mock(schema, **options).handlers())


def fill(value, type_, context):
    """Complete a stub's partial value: keep what it gives, generate missing required fields."""
    kind = type_.kind
    if value is None or kind not in ("array", "map", "struct", "union", "fn"):
        return value
    if kind == "array":
        return [fill(element, type_.of, context) for element in value]
    if kind == "map":
        return {key: fill(element, type_.of, context) for key, element in value.items()}
    if kind == "struct":
        return fill_fields(value, type_.of, context)
    [(tag, fields)] = value.items()
    return {tag: fill_fields(fields, type_.of.tags[tag], context)}


def fill_fields(value, struct, context):
    """Complete an object of `struct` fields, in field name order like generated ones."""
    filled = {}
    for name in sorted(struct.fields):
        if name in value:
            filled[name] = fill(value[name], struct.fields[name], context)
        elif not name.endswith("!"):
            filled[name] = generate.generate(struct.fields[name], context)
    return filled


class Matching:
    """Matching one call against stubs (or one `fn.verify_` against recorded calls), in time
    that grows linearly with the bytes involved.

    Partial matching asks, for each object or array in a stub's array, whether some
    element of the call's array matches it. Elements equal to one of the call's are
    found by their canonical form in a set; the others are looked for only among the
    call's elements that hold the same plain value at the same place (an index of
    `facts`). What remains is a search, which each match may spend STEPS steps per byte
    on: a stub that would take longer is taken as not matching, and the log says so."""

    def __init__(self, size):
        self.steps = STEPS * size + 1000  # the budget, grown by each stub or call matched
        self.forms, self.indexes = {}, {}  # by id() of values alive while matching

    def matches(self, wanted, actual, strict, size):
        """Whether `actual` arguments match `wanted` ones (partially unless `strict`); `size` adds to the budget."""
        self.steps += STEPS * size
        try:
            return equal(wanted, actual) if strict else self.partial(wanted, actual)
        except Exhausted:
            log.warning("matching took over %d steps per byte; taken as no match", STEPS)
            return False

    def forget(self):
        """Forget the forms and indexes worked out, before the values they describe go."""
        self.forms.clear()
        self.indexes.clear()

    def take(self, steps):
        self.steps -= steps
        if self.steps < 0:
            raise Exhausted()

    def partial(self, wanted, actual):
        self.take(1)
        if type(wanted) is dict:
            return type(actual) is dict and all(
                key in actual and self.partial(value, actual[key]) for key, value in wanted.items())
        if type(wanted) is not list:
            return equal(wanted, actual)
        if type(actual) is not list:
            return False
        plain, forms, index = self.index(actual)
        seen = set()
        for element in wanted:
            form = self.form(element)
            if form in seen:
                continue
            seen.add(form)
            if type(element) not in (dict, list):
                found = form in plain
            else:
                found = form in forms or any(self.partial(element, candidate)
                                             for candidate in self.candidates(element, index))
            if not found:
                return False
        return True

    def index(self, elements):
        """An array's plain values, its objects and arrays by form and by fact, worked out once."""
        if id(elements) not in self.indexes:
            self.take(len(elements))
            plain, forms, index = set(), set(), {None: []}
            for element in elements:
                if type(element) in (dict, list):
                    forms.add(self.form(element))
                    for fact in facts(element, 2):
                        index.setdefault(fact, []).append(element)
                    index[None].append(element)
                else:
                    plain.add(_plain(element))
            self.indexes[id(elements)] = plain, forms, index
        return self.indexes[id(elements)]

    def candidates(self, element, index):
        """The call's objects and arrays that hold `element`'s rarest fact (or all of them)."""
        self.take(1)
        return min((index.get(fact, ()) for fact in facts(element, 2)), key=len, default=index[None])

    def form(self, value):
        """A canonical form that follows `equal`: equal values, and only they, have equal forms."""
        if type(value) not in (dict, list):
            return _plain(value)
        if id(value) not in self.forms:
            self.take(len(value))
            if type(value) is dict:
                self.forms[id(value)] = ("{", tuple(sorted((key, self.form(v)) for key, v in value.items())))
            else:
                self.forms[id(value)] = ("[", tuple(map(self.form, value)))
        return self.forms[id(value)]


def facts(value, depth):
    """The plain values inside a value, `depth` levels down, each with its keys: what a partial match holds too."""
    items = value.items() if type(value) is dict else (("[]", element) for element in value)
    for key, element in items:
        if type(element) not in (dict, list):
            yield key, _plain(element)
        elif depth > 1:
            yield from ((key, *fact) for fact in facts(element, depth - 1))


class Exhausted(Exception):
    """A match took all the steps it may take."""


def _plain(value):
    """A plain value as a set member that follows `equal`: true is not 1, but 1 is 1.0."""
    return type(value) is bool, value


def equal(a, b):
    """JSON equality: 1 equals 1.0, but true is not 1."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(equal, a, b))
    return a == b
