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
import json
import sys
import threading
from dataclasses import dataclass

import msgpack

from . import generate
from .generate import Context, Random, generate_fields
from .loader import bundled, load
from .service import Service
from .types import Type

NO_MATCHING_STUB = {"ErrorNoMatchingStub_": {}}


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
                 max_stubs=1000, max_calls=10_000, max_bytes=64 * 1024 * 1024):
        self.schema, self.generation = schema, generation
        self.random, self.optional, self.length = Random(seed), optional, length
        self.max_stubs, self.max_calls, self.max_bytes = max_stubs, max_calls, max_bytes
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
            while len(self.calls) > self.max_calls or self.call_bytes > self.max_bytes // 2:
                self.call_bytes -= len(self.calls.pop(0).data)
            stubs = self.stubs[::-1]  # newest first; matched outside the lock
        stub = next((stub for stub in stubs if stub.function == name and stub.uses != 0
                     and matches(stub.arguments, arguments, stub.strict)), None)
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
            while len(self.stubs) > self.max_stubs or self.stub_bytes > self.max_bytes // 2:
                self.stub_bytes -= self.stubs.pop(0).size
        return {"Ok_": {}}

    def verify(self, arguments, headers):
        [(name, wanted)] = arguments["call"].items()
        strict = arguments.get("strictMatch!", False)
        criteria = arguments.get("count!", {"AtLeast": {"times": 1}})
        [(kind, times)] = [(kind, fields["times"]) for kind, fields in criteria.items()]
        with self.lock:
            records = list(self.calls)  # matched outside the lock
        calls = [msgpack.unpackb(record.data) for record in records]
        matching = [record for record, call in zip(records, calls)
                    if name in call and matches(wanted, call[name], strict)]
        with self.lock:
            for record in matching:
                record.verified = True  # whether or not this verification passes
        found = len(matching)
        too_many = kind in ("Exact", "AtMost") and found > times
        too_few = kind in ("Exact", "AtLeast") and found < times
        if not (too_many or too_few):
            return {"Ok_": {}}
        reason = "TooManyMatchingCalls" if too_many else "TooFewMatchingCalls"
        return {"ErrorVerificationFailure": {"reason": {reason: {
            "wanted": criteria, "found": found, "allCalls": calls}}}}

    def verify_no_more_interactions(self, arguments, headers):
        with self.lock:
            unverified = [record.data for record in self.calls if not record.verified]
        if unverified:
            return {"ErrorVerificationFailure": {"additionalUnverifiedCalls": list(map(msgpack.unpackb, unverified))}}
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


def matches(wanted, actual, strict):
    """Whether `actual` arguments match `wanted` ones, partially unless `strict`.

    Plain values are looked up in a set, so that long arrays cost linear time;
    objects and arrays in arrays are compared one by one."""
    if strict:
        return equal(wanted, actual)
    if type(wanted) is dict:
        return type(actual) is dict and all(
            key in actual and matches(value, actual[key], False) for key, value in wanted.items())
    if type(wanted) is list:
        if type(actual) is not list:
            return False
        if not (set(map(type, wanted)) | set(map(type, actual))) & {bool, dict, list}:
            return set(wanted) <= set(actual)  # plain values, which sets compare as `equal` does
        plain = {_plain(element) for element in actual if type(element) not in (dict, list)}
        nested = [element for element in actual if type(element) in (dict, list)]
        return all(_plain(element) in plain if type(element) not in (dict, list)
                   else any(matches(element, candidate, False) for candidate in nested)
                   for element in _unique(wanted))
    return equal(wanted, actual)


def _plain(value):
    """A value that is neither an object nor an array, as a set member that follows `equal`:
    true is not 1, but 1 is 1.0."""
    return type(value) is bool, value


def _unique(elements):
    """The elements of an array, each only once (an object by its JSON text)."""
    seen = {}
    for element in elements:
        nested = type(element) in (dict, list)
        seen.setdefault(json.dumps(element, sort_keys=True, default=bytes.hex) if nested else _plain(element), element)
    return seen.values()


def equal(a, b):
    """JSON equality: 1 equals 1.0, but true is not 1."""
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if type(a) is dict:
        return type(b) is dict and a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if type(a) is list:
        return type(b) is list and len(a) == len(b) and all(map(equal, a, b))
    return a == b
