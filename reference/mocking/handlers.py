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
3. otherwise generate a result: `Ok_`, or the one its `@result_` header names
   (or, with generation off and neither `@gen_: true` nor `@result_`, answer
   `ErrorNoMatchingStub_`).

A stub matches a call partially by default (stubs.py, `partial`): every
argument it names must be in the call with a matching value, where an object
matches if it holds the stub's keys with matching values, and an array if
every element of the stub's array matches some element of the call's.
`strictMatch!` asks for equal arguments (`equal`: JSON equality, where `true`
is not `1`). `fn.verify_` counts the recorded calls that match in the same
way and marks them verified, which is what `fn.verifyNoMoreInteractions_`
looks at. `ByDefinition` matches by those definitions; `Matching`, which a
mock served by the engine room uses, finds the same in time linear in the
bytes compared (matching.py).

Values come from the seeded generator of `protocol/generate.py`: a mock answers the
same calls with the same values every time it starts, or after
`fn.setRandomSeed_`. A stub's result and each recorded call are kept as
MessagePack, which is compact and gives a fresh copy each time one is read.
"""

import functools
import json
import logging
import random
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import msgpack

from ..protocol import Service, codec
from ..protocol.generate import Context, OverBudget, Random, make
from ..protocol.types import Type
from ..sources import load
from . import patterns, stubs
from .matching import ByDefinition, Matching, as_json, matched, nearest, no_matching_stub
from .relay import Proxy

log = logging.getLogger("reference")

MAX_LISTED = 1024 * 1024  # bytes of recorded calls (as JSON) that one answer lists
MAX_STUBS, MAX_CALLS, MAX_STATE = 1000, 10_000, 64 * 1024 * 1024  # kept by default: stubs, calls, and their bytes
LENGTH = (0, 3)  # generated arrays and maps have at least the first and fewer than the second elements
ENTRIES = Path(__file__).parent.parent / "schemas" / "mock.json"  # the mock's own functions and types


@dataclass(frozen=True)
class Options:
    """How a mock answers and what it keeps: `python -m reference.mock`'s options, with their defaults."""

    seed: int = 0  # of the generated values
    optional: str = "random"  # optional fields generated: "random" (a coin decides each), "all" or "none"
    length: tuple = LENGTH  # generated arrays and maps hold at least the first and fewer than the second elements
    generation: bool = True  # a call no stub matches gets a generated result (else ErrorNoMatchingStub_)
    delay: float = 0.0  # seconds each call of the mocked service waits before it is answered
    faults: float = 0.0  # the fraction of calls answered ErrorUnknown_, as a failing handler would be
    max_stubs: int = MAX_STUBS  # stubs kept; the oldest give way
    max_calls: int = MAX_CALLS  # calls recorded; the oldest are forgotten
    max_state: int = MAX_STATE  # bytes of stubs and recorded calls kept, half each


@dataclass
class Stub:
    """A result to answer matching calls with, made by fn.createStub_."""

    function: str
    arguments: dict  # what a call's arguments must match
    result: bytes  # the result, as MessagePack
    strict: bool  # match equal arguments only, not partially
    uses: int  # answers left; -1 for no limit
    size: int  # about how many bytes of memory it takes
    headers: dict  # the request headers a call must hold, each with a matching value
    written: dict  # its match!, as written: places of a call that match patterns instead of values
    match: list  # the same, compiled (patterns.py)

    def shown(self):
        """The stub as fn.listStubs_ shows it (struct.Stubbed_)."""
        return {"stub": {self.function: self.arguments, "->": msgpack.unpackb(self.result), **self.headers,
                         **({"match!": self.written} if self.written else {})},
                "strictMatch!": self.strict, **({"count!": self.uses} if self.uses >= 0 else {})}


@dataclass
class Call:
    """A call the mock answered, as fn.listCalls_ shows it (struct.Recorded_), in MessagePack."""

    data: bytes
    verified: bool = False  # matched by some fn.verify_


class Mock:
    """The stubs, recorded calls and random values of one mock server."""

    def __init__(self, schema, options=None, matching=None, relay=None):
        self.schema, self.options = schema, options or Options()
        self.matching = matching or ByDefinition
        self.relay = relay  # another way to answer (relay.py)
        self.random = Random(self.options.seed)
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
        """Answer a call of the mocked service, after `delay` seconds, and record it."""
        time.sleep(self.options.delay)
        stub, result = self.stubbed(name, arguments, headers)
        call = Call(msgpack.packb({"call": {name: arguments}, "headers": headers, "at": round(time.time() * 1000),
                                   **({"stub!": stub} if stub else {})}))
        with self.lock:
            self.calls.append(call)
            self.call_bytes += len(call.data)
            while len(self.calls) > self.options.max_calls or self.call_bytes > self.options.max_state // 2:
                self.call_bytes -= len(self.calls.pop(0).data)
        return result

    def stubbed(self, name, arguments, headers):
        """(the call part of the stub that answers the call, or None; the result): a fault, the newest
        matching stub's, else the relay's answer (its headers too), or a generated one."""
        if self.options.faults and random.random() < self.options.faults:
            return None, {"ErrorUnknown_": {"caseId": f"a fault, as the mock was asked ({uuid.uuid4()})"}}
        function = self.schema.functions[name]
        with self.lock:
            newest = [stub for stub in self.stubs[::-1] if stub.function == name and stub.uses != 0]
        matching = self.matching(len(msgpack.packb(arguments)))  # (matched outside the lock)
        stub = next((stub for stub in newest if matched(matching, stub, arguments, headers)), None)
        missed = nearest(newest, arguments, headers, matching) if stub is None and newest else None
        if missed:
            log.info("%s %.200s matched no stub; the nearest, %.200s, differs at %s", name, as_json(arguments),
                     as_json(missed[0]["stub"]), "; ".join(missed[1]))
        if stub is None and self.relay:  # (a stub wins over the server relayed to)
            return None, self.relay(name, arguments, headers)
        with self.lock:
            try:
                if stub is not None and stub.uses != 0:  # (another call may have used it up meanwhile)
                    if stub.uses > 0:
                        stub.uses -= 1
                    # A stub's missing required fields are made without optional fields.
                    context = Context(self.random, "none", self.options.length, function)
                    return {name: stub.arguments}, stubs.fill(msgpack.unpackb(stub.result),
                                                              Type("union", False, function.result), context)
                wanted = headers.get("@result_", "Ok_")  # (a result asked for by the call, as Prism's Prefer)
                if type(wanted) is not str or wanted not in function.result.tags:
                    log.info("%s: @result_ %.80s is none of its results: %s", name, as_json(wanted),
                             ", ".join(function.result.tags))
                    return None, {"ErrorInvalidRequestHeaders_": {"cases": [{"path": ["@result_"], "reason": {
                        "ObjectKeyDisallowed": {}}}]}}
                if not self.options.generation and headers.get("@gen_") is not True and "@result_" not in headers:
                    return None, no_matching_stub(missed)
                context = Context(self.random, self.options.optional, self.options.length, function)
                return None, {wanted: make(Type("struct", False, function.result.tags[wanted]), context)}
            except OverBudget as error:
                log.warning("%s: its result is too large to make up (%s); stub it whole", name, error)
                return None, no_matching_stub(missed)

    def create_stub(self, arguments, headers):
        stub = arguments["stub"]
        [name], matched = [key for key in stub if key.startswith("fn.")], stubs.headers(stub)
        result = msgpack.packb(stub["->"])
        written = stub.get("match!", {})
        size = footprint(stub[name]) + footprint(matched) + len(result) + footprint(written)
        with self.lock:
            self.stubs.append(Stub(name, stub[name], result, arguments.get("strictMatch!", False),
                                   arguments.get("count!", -1), size, matched, written, patterns.compiled(written)))
            self.stub_bytes += size
            while len(self.stubs) > self.options.max_stubs or self.stub_bytes > self.options.max_state // 2:
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
            call = msgpack.unpackb(record.data)["call"]
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
        calls, omitted = listed([record.data for record in records], "omittedCalls!", "call")
        return {"ErrorVerificationFailure": {"reason": {reason: {
            "wanted": criteria, "found": found, "allCalls": calls, **omitted}}}}

    def verify_no_more_interactions(self, arguments, headers):
        with self.lock:
            unverified = [record for record in self.calls if not record.verified]
        if unverified:
            calls, omitted = listed([record.data for record in unverified], "omittedCalls!", "call")
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
        stubbed, omitted = listed([msgpack.packb(stub.shown()) for stub in kept], "omittedStubs!")
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


def listed(packed, omission, part=None):
    """What an answer lists of calls or stubs given as MessagePack (or of a `part` of each), oldest first:
    the newest within MAX_LISTED bytes as JSON (the larger wire), and under `omission` how many older
    ones were left out."""
    kept, size = [], 0
    for data in reversed(packed):
        value = msgpack.unpackb(data)[part] if part else msgpack.unpackb(data)
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


def schema(source, relaying=False):
    """The schema a mock of `source` serves: `source`'s (anything `load()` takes, a loaded Schema
    too), and the mock's own functions, which `fn.api_` shows only on request; a mock `relaying` calls
    to a server declares the error it answers when that fails (schemas/relay.json)."""
    documents = [ENTRIES] + [ENTRIES.with_name("relay.json")] * relaying
    return load(source, internal=[json.loads(path.read_text(encoding="utf-8")) for path in documents],
                extensions=stubs.KINDS)


def service(source, kind=None, proxy=False, options=None, relay=None):
    """A mock Service for the schema `source`, answering as its `options` say (or a `relay`, relay.py):
    of `kind`, the core's `protocol.Service` (matching stubs by the definitions) or by default the
    engine room's (imported only then); with `proxy`, the core's, as a validating proxy, with the
    engine room's matching."""
    mocked = schema(source, relaying=relay is not None)
    if proxy or kind is Service:  # (a proxy's matching, of stubs from the network, within a budget too)
        handlers = Mock(mocked, options, Matching if proxy else ByDefinition, relay).handlers()
        return (Proxy if proxy else Service)(mocked, handlers)
    if kind is None:
        from ..engine import Service as kind  # (imported only then)
    return kind(mocked, Mock(mocked, options, Matching, relay).handlers())
