"""The engine's Service: the core's pipeline, with what each step need not do worked out once.

How this works
--------------
`Service` wraps a core Service (protocol/service.py) and gives every answer
it would give, faster. From the schema it works out `Facts` for each
function: a compiled check of its arguments and of its results (checks.py),
whether either can hold bytes, and how deep a result can nest. A request then
takes a short path through the same steps:

- step 1 reads JSON with C's parser alone, and looks for half a surrogate
  pair or too deep a nesting only in text that could hold one (scans.py);
- steps 2 to 5 take a request with no header but `@id_` straight through;
- steps 6 and 8 ask the compiled checks, and walk (to say what is wrong) only
  when they say no; bytes are restored only where the schema allows some;
- step 11 writes JSON at once when the result can hold no bytes and cannot
  nest too deeply.

Anything else is handed to the core's step, which gives the answer: a
MessagePack request, a header to check, an unknown function, a value a check
refuses. With the debug log on, the core answers alone, telling each step.

Costly requests take turns (turns.py): a large one before it is even read, a
small one once its function is known to answer at length or at leisure.
"""

import logging
from typing import Callable, NamedTuple

from ..protocol import blobs, codec, service
from ..protocol.limits import MAX_DEPTH
from ..protocol.loader import Schema
from ..protocol.service import JSON, Before, Exchange, Handler, OnError, Refusal, Reply, Wrap
from ..protocol.types import Struct, Type, innermost, reachable
from .checks import Compiler
from .scans import deeper, may_hold_surrogates
from .turns import LARGE, Turns, clock

log = logging.getLogger("reference")


class Facts(NamedTuple):
    """What the engine knows of one function, from the schema."""

    arguments: Callable  # whether arguments are valid (else: walk them)
    result: Callable  # whether a result is valid (else: walk it)
    restores_arguments: bool  # whether arguments can hold base64 text that stands for bytes
    restores_result: bool  # whether a result can
    writes_at_once: bool  # whether a valid result holds no bytes to mark and nests well within MAX_DEPTH


class Service:
    """A Service as the core's, answering faster (see above); `plain` is the core's."""

    def __init__(self, schema: Schema, handlers: dict[str, Handler], before: Before | None = None,
                 wrap: Wrap | None = None, on_error: OnError | None = None):
        self.plain = service.Service(schema, handlers, before, wrap, on_error)
        self.schema, self.handlers, self.encoding = schema, handlers, self.plain.encoding
        compiler = Compiler()
        self.facts = {name: facts(function, compiler) for name, function in schema.functions.items()}
        self.turns = Turns()

    def handle(self, data: bytes) -> Reply:
        """Answer the request bytes `data`, as the core's Service would."""
        if log.isEnabledFor(logging.DEBUG):
            return self.plain.handle(data)
        if len(data) > LARGE:  # its turn before it is even read
            with self.turns.turn():
                return self.respond(data, self.read(data))
        request = self.read(data)
        if request is not None and self.turns.costly(request[1], len(data)):
            with self.turns.turn():
                return self.respond(data, request)
        return self.respond(data, request)

    def read(self, data):
        """Step 1: (headers, function name, arguments), or None if the bytes are no message."""
        request = read_json(data) if data[:1] != b"\x92" else None
        if request is None:
            try:
                headers, body = codec.decode(data, self.encoding)
            except codec.ParseFailure:
                return None
            request = (headers, *next(iter(body.items())))
        return request

    def respond(self, data, request):
        """Steps 2 to 11 for a request read; what it cost is learned, for its function's turns."""
        if request is None:
            return self.plain.handle(data)  # which says what is wrong with it
        started, exchange = clock(), Exchange(*request)
        reply, result = self.encode(exchange, self.answer(exchange))
        if reply.result != "Ok_":
            self.plain.observe(exchange.name, exchange.headers, result, exchange.raised)
        if exchange.function is not None:
            self.turns.learn(exchange.name, max(len(data), len(reply.data)), clock() - started)
        return reply

    def answer(self, exchange):
        """Steps 2 to 10, each the core's unless a fact makes it shorter."""
        plain, headers = self.plain, exchange.headers
        function = exchange.function = self.schema.functions.get(exchange.name)
        try:
            if function is None or function.authenticated or not (
                    not headers or (len(headers) == 1 and headers.get("@id_") is not None)):
                plain.echo_id(exchange)
                plain.check_headers(exchange)
                plain.check_auth(exchange)
                plain.find_function(exchange)
            elif headers:
                exchange.response_headers["@id_"] = headers["@id_"]
            facts = self.facts[exchange.name]
            if not facts.arguments(exchange.arguments):
                plain.check_arguments(exchange)
            elif facts.restores_arguments:
                exchange.arguments = blobs.restore_fields(exchange.arguments, function.arguments)
            result = plain.run_handler(exchange)
            if headers.get("@unsafe_") is True or not facts.result(result):
                result = plain.check_result(exchange, result)
            elif facts.restores_result:
                result = blobs.restore(result, plain.results[exchange.name])
            if exchange.added:
                plain.check_added_headers(exchange)
            return plain.select(exchange, result) if "@select_" in headers else result
        except Refusal as refusal:
            return refusal.result

    def encode(self, exchange, result):
        """Step 11: JSON at once where the facts allow, else the core's."""
        facts = self.facts.get(exchange.name)
        if facts is None or not facts.writes_at_once or exchange.added or "@bin_" in exchange.headers:
            return self.plain.encode(exchange, result)
        try:
            data = codec.ENCODER.encode([exchange.response_headers, result]).encode()
        except (ValueError, TypeError, RecursionError):
            return self.plain.encode(exchange, result)  # which says what no wire can carry
        return Reply(data, JSON, exchange.name, next(iter(result))), result


def read_json(data):
    """Step 1 for JSON, at C speed: (headers, function name, arguments), or None for the core to read."""
    if may_hold_surrogates(data) or deeper(data, MAX_DEPTH):
        return None
    try:
        message = codec.DECODER.decode(data.decode())
    except (ValueError, RecursionError):
        return None
    if type(message) is not list or len(message) != 2:
        return None
    headers, body = message
    if type(headers) is not dict or type(body) is not dict or len(body) != 1:
        return None
    [(name, arguments)] = body.items()
    return (headers, name, arguments) if type(arguments) is dict else None


def facts(function, compiler):
    """The Facts of `function`."""
    result = Type("union", False, function.result)
    return Facts(compiler.fields(function.arguments), compiler.tags(function.result),
                 holds(function.arguments, {"bytes", "ext"}), holds(function.result, {"bytes", "ext"}),
                 not holds(function.result, {"bytes", "any", "ext"}) and 1 + depth(result) <= MAX_DEPTH)


def holds(node, kinds):
    """Whether a value of a Struct or Union can hold a value of one of `kinds` anywhere inside."""
    return any(innermost(type_).kind in kinds for inner in reachable(node) if isinstance(inner, Struct)
               for type_ in inner.fields.values())


def depth(type_, seen=()):
    """How many levels of arrays and objects a value of `type_` nests at most; MAX_DEPTH + 1 when
    that has no bound (a recursive type). `any` and `_ext.` values are not counted here."""
    if type_.kind in ("array", "map"):
        return 1 + depth(type_.of, seen)
    if type_.kind not in ("struct", "union", "fn"):
        return 0
    if id(type_.of) in seen:
        return MAX_DEPTH + 1
    seen = (*seen, id(type_.of))
    structs = [type_.of] if type_.kind == "struct" else type_.of.tags.values()
    inside = max((depth(field, seen) for struct in structs for field in struct.fields.values()), default=0)
    return (1 if type_.kind == "struct" else 2) + inside
