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

A stub matches a call partially by default (stubs.py, `partial`): every
argument it names must be in the call with a matching value, where an object
matches if it holds the stub's keys with matching values, and an array if
every element of the stub's array matches some element of the call's.
`strictMatch!` asks for equal arguments (`equal`: JSON equality, where `true`
is not `1`). `fn.verify_` counts the recorded calls that match in the same
way and marks them verified, which is what `fn.verifyNoMoreInteractions_`
looks at. `ByDefinition` matches by those definitions; the engine room's `Matching`
finds the same in time linear in the bytes compared (engine/matching.py).

Values come from the seeded generator of `generate.py`: a mock answers the
same calls with the same values every time it starts, or after
`fn.setRandomSeed_`. Stubs and calls are kept as MessagePack, which is
compact and gives a fresh copy each time one is read.
"""

import functools
import json
import logging
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import msgpack

from . import stubs
from .sources import load
from .protocol import Service, codec
from .protocol.generate import Context, OverBudget, Random, make
from .protocol.types import Type

log = logging.getLogger("reference")

NO_MATCHING_STUB: dict = {"ErrorNoMatchingStub_": {}}
MAX_LISTED = 1024 * 1024  # bytes of recorded calls (as JSON) that one answer lists
MAX_STUBS, MAX_CALLS, MAX_STATE = 1000, 10_000, 64 * 1024 * 1024  # kept by default: stubs, calls, and their bytes
LENGTH = (0, 3)  # generated arrays and maps have at least the first and fewer than the second elements
ENTRIES = Path(__file__).parent / "schemas" / "mock.json"  # the mock's own functions and types


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

    def __init__(self, schema, seed=0, optional="random", length=LENGTH, generation=True,
                 max_stubs=MAX_STUBS, max_calls=MAX_CALLS, max_state=MAX_STATE, matching=None):
        self.schema, self.generation = schema, generation
        self.matching = matching or ByDefinition
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
                "fn.listStubs_": self.list_stubs, "fn.listCalls_": self.list_calls,
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
            newest = self.stubs[::-1]  # newest first; matched outside the lock
        matching = self.matching(len(call.data))
        stub = next((stub for stub in newest if stub.function == name and stub.uses != 0
                     and matching.matches(stub.arguments, arguments, stub.strict, stub.size)), None)
        with self.lock:
            try:
                if stub is not None and stub.uses != 0:  # (another call may have used it up meanwhile)
                    if stub.uses > 0:
                        stub.uses -= 1
                    # A stub's missing required fields are made without optional fields.
                    context = Context(self.random, "none", self.length, function)
                    return stubs.fill(msgpack.unpackb(stub.result), Type("union", False, function.result), context)
                if not self.generation and headers.get("@gen_") is not True:
                    return NO_MATCHING_STUB
                context = Context(self.random, self.optional, self.length, function)
                return {"Ok_": make(Type("struct", False, function.result.tags["Ok_"]), context)}
            except OverBudget as error:
                log.warning("%s: its result is too large to make up (%s); stub it whole", name, error)
                return NO_MATCHING_STUB

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
        matching, matched = self.matching(len(msgpack.packb(wanted))), []
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
        calls, omitted = listed([record.data for record in records], "omittedCalls!")
        return {"ErrorVerificationFailure": {"reason": {reason: {
            "wanted": criteria, "found": found, "allCalls": calls, **omitted}}}}

    def verify_no_more_interactions(self, arguments, headers):
        with self.lock:
            unverified = [record for record in self.calls if not record.verified]
        if unverified:
            calls, omitted = listed([record.data for record in unverified], "omittedCalls!")
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

    def list_stubs(self, arguments, headers):
        with self.lock:
            kept = list(self.stubs)
        shown = [msgpack.packb({"stub": {stub.function: stub.arguments, "->": msgpack.unpackb(stub.result)},
                                "strictMatch!": stub.strict, **({"count!": stub.uses} if stub.uses >= 0 else {})})
                 for stub in kept]
        stubbed, omitted = listed(shown, "omittedStubs!")
        return {"Ok_": {"stubs": stubbed, **omitted}}

    def list_calls(self, arguments, headers):
        with self.lock:
            records = list(self.calls)
        calls, omitted = listed([record.data for record in records], "omittedCalls!")
        return {"Ok_": {"calls": calls, **omitted}}

    def set_random_seed(self, arguments, headers):
        with self.lock:
            self.random.seed(arguments["seed"])
        return {"Ok_": {}}


def listed(packed, omission):
    """What an answer lists of calls or stubs kept as MessagePack, oldest first: the newest within
    MAX_LISTED bytes as JSON (the larger wire), and under `omission` how many older ones were left out."""
    kept, size = [], 0
    for data in reversed(packed):
        value = msgpack.unpackb(data)
        size += len(codec.ENCODER.encode(value)) + 2  # (and the comma and blank between two)
        if size > MAX_LISTED:
            break
        kept.append(value)
    omitted = len(packed) - len(kept)
    return kept[::-1], {omission: omitted} if omitted else {}


def footprint(value):
    """About how many bytes of memory `value` takes: every object it holds, counted."""
    size = sys.getsizeof(value)
    if type(value) is dict:
        return size + sum(footprint(key) + footprint(element) for key, element in value.items())
    if type(value) is list:
        return size + sum(map(footprint, value))
    return size


def schema(source):
    """The schema a mock of `source` serves: `source`'s (anything `load()` takes, a loaded Schema
    too), and the mock's own functions, which `fn.api_` shows only on request."""
    return load(source, internal=[json.loads(ENTRIES.read_text(encoding="utf-8"))], extensions=stubs.KINDS)


def service(source, plain=False, **options):
    """A mock Service for the schema `source`; `plain` serves with the core alone, matching by the
    definitions (the engine room is then not even imported)."""
    mocked = schema(source)
    if plain:
        return Service(mocked, Mock(mocked, matching=ByDefinition, **options).handlers())
    from . import engine
    return engine.Service(mocked, Mock(mocked, matching=engine.Matching, **options).handlers())


class ByDefinition:
    """Matching by the definitions (stubs.py), one call or verification at a time."""

    def __init__(self, size):
        pass

    def matches(self, wanted, actual, strict, size):
        """Whether `actual` arguments match `wanted` ones: equal if `strict`, else partially."""
        return stubs.equal(wanted, actual) if strict else stubs.partial(wanted, actual)

    def forget(self):
        pass
