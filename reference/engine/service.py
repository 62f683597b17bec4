"""The engine's Service: the core's pipeline, with what each step need not do worked out once.

How this works
--------------
`Service` wraps a core Service (protocol/service.py) and gives every answer
it would give, faster. From the schema it works out `Facts` for each
function: compiled checks of its arguments and results (checks.py), whether
either can hold bytes, and whether its `Ok_` result can be written at once (no
bytes to mark, no `any` that could hold what no wire carries, no nesting deep
enough to count). A request then takes a short path through the same steps:

- step 1 reads JSON with C's scanner alone; only text that could hold half a
  surrogate pair or too deep a nesting is looked at further (scans.py);
- steps 2 to 5 take a request with no header but `@id_` straight through;
- steps 6 and 8 ask the compiled checks, and walk (to say what is wrong) only
  when they say no; bytes are restored only where the schema allows some;
- step 10 trims with the selection compiled (trims.py);
- step 11 writes an `Ok_` JSON answer at once, with a C encoder made once.

Anything else is the core's to answer, from the step where the short path
ends: a MessagePack request, a header to check, an unknown function, a value
a check refuses, an error result. With the debug log on, the core answers
alone, telling each step. Costly requests take turns (turns.py).
"""

import logging
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from time import perf_counter, thread_time
from typing import Callable, NamedTuple

from ..protocol import blobs, codec, service
from ..protocol.limits import MAX_DEPTH
from ..protocol.loader import Schema
from ..protocol.service import JSON, MSGPACK, Before, Exchange, Handler, OnError, Refusal, Reply, Wrap
from ..protocol.types import Struct, Type, innermost, reachable
from .checks import Compiler
from .scans import deeper, may_hold_surrogates
from .trims import Trims
from .turns import LARGE, Turns

log = logging.getLogger("reference")

# The C encoder that json.dumps makes anew at each call, made once; None where there is none.
WRITE = c_make_encoder and c_make_encoder(None, None, encode_basestring, None, ": ", ", ", False, False, False)


class Facts(NamedTuple):
    """What the engine knows of one function, from the schema."""

    arguments: Callable  # whether arguments are valid (checks.py), so that no walk need say why not
    result: Callable  # whether a result is
    restores_arguments: bool  # whether arguments can hold base64 text that stands for bytes
    restores_result: bool  # whether a result can
    marks: bool  # whether an Ok_ result can hold bytes to mark (in a bytes or an any field)
    shallow: bool  # whether an Ok_ result always nests well within MAX_DEPTH (else: count its brackets)
    protected: bool  # whether a call needs @auth_ (its headers are checked as the core does)


class Service:
    """A Service as the core's, answering faster (see above); `plain` is the core's."""

    def __init__(self, schema: Schema, handlers: dict[str, Handler], before: Before | None = None,
                 wrap: Wrap | None = None, on_error: OnError | None = None):
        self.plain = service.Service(schema, handlers, before, wrap, on_error)
        self.schema, self.handlers, self.encoding = schema, handlers, self.plain.encoding
        compiler = Compiler()
        self.facts = {name: facts(function, compiler) for name, function in schema.functions.items()}
        self.headers = {name: compiler.type(type_) for name, type_ in schema.request_headers.items()}
        self.turns, self.trims = Turns(), Trims()

    def handle(self, data: bytes) -> Reply:
        """Answer the request bytes `data`, as the core's Service would."""
        if log.isEnabledFor(logging.DEBUG):
            return self.plain.handle(data)
        if len(data) > LARGE:  # its turn before it is even read
            with self.turns.turn():
                return self.respond(data, self.read(data))
        request = self.read(data)
        if request is not None and self.turns.costly(request[1]):
            with self.turns.turn():
                return self.respond(data, request)
        return self.respond(data, request)

    def read(self, data):
        """Step 1: (headers, function name, arguments), or None if the bytes are no message."""
        if data[:1] == b"[" and not may_hold_surrogates(data):
            try:
                text = data.decode()
                message, end = codec.DECODER.scan_once(text, 0)  # JSON, so the scan below takes linear time
                if end == len(text) and type(message) is list and len(message) == 2 \
                        and (len(data) <= MAX_DEPTH or not deeper(data, MAX_DEPTH)):
                    headers, body = message
                    if type(headers) is dict and type(body) is dict and len(body) == 1:
                        [(name, arguments)] = body.items()
                        if type(arguments) is dict:
                            return headers, name, arguments
            except (ValueError, StopIteration, RecursionError):
                pass
        try:  # anything else, as the core reads it
            headers, body = codec.decode(data, self.encoding)
        except codec.ParseFailure:
            return None
        return (headers, *next(iter(body.items())))

    def respond(self, data, request):
        """Steps 2 to 11 for a request read; what it cost is learned, for its function's turns."""
        if request is None:
            return self.plain.handle(data)  # which says what is wrong with it
        wall, thread, exchange = perf_counter(), thread_time(), Exchange(*request)
        result, refused = self.answer(exchange)
        reply = (self.write_binary(exchange, result) if "@bin_" in exchange.headers and not refused else
                 self.write(exchange, result, refused) if WRITE else None)
        if reply is None:
            reply, result = self.plain.encode(exchange, result)
        if reply.result != "Ok_":
            self.plain.observe(exchange.name, exchange.headers, result, exchange.raised)
        if exchange.function is not None:
            self.turns.learn(exchange.name, len(data) + len(reply.data), wall, thread)
        return reply

    def answer(self, exchange):
        """Steps 2 to 10, each the core's unless a fact makes it shorter: the result, and whether it
        is the core's refusal of the request (steps 2 to 6), which any wire can carry as it is."""
        plain, headers, facts = self.plain, exchange.headers, self.facts.get(exchange.name)
        try:
            if facts is None or (facts.protected and "@auth_" not in headers) \
                    or (headers and not self.valid_headers(headers)):
                plain.echo_id(exchange)
                plain.check_headers(exchange)
                plain.check_auth(exchange)
                plain.find_function(exchange)
            else:  # steps 2 and 5, which refuse nothing here
                exchange.function = self.schema.functions[exchange.name]
                if headers and headers.get("@id_") is not None:
                    exchange.response_headers["@id_"] = headers["@id_"]
                if headers and "@bin_" in headers and "@pac_" in headers:
                    exchange.response_headers["@pac_"] = headers["@pac_"]
            if not facts.arguments(exchange.arguments):
                plain.check_arguments(exchange)
            elif facts.restores_arguments:
                exchange.arguments = blobs.restore_fields(exchange.arguments, exchange.function.arguments)
        except Refusal as refusal:
            return refusal.result, True
        try:
            result = plain.run_handler(exchange)
            if exchange.added or headers.get("@unsafe_") is True or not facts.result(result):
                result = plain.check_result(exchange, result)
                plain.check_added_headers(exchange)
            elif facts.restores_result:
                result = blobs.restore(result, plain.results[exchange.name])
            selection = headers.get("@select_")
            if selection and "Ok_" in result:
                result = self.trims.trim(selection, result, exchange.function)
            return result, False
        except Refusal as refusal:
            return refusal.result, False

    def valid_headers(self, headers):
        """Step 3, as the compiled checks see it: each header named with @, a declared one valid."""
        for name, value in headers.items():
            valid = self.headers.get(name)
            if name[:1] != "@" or (valid is not None and not valid(value)):
                return False
        return True

    def write(self, exchange, result, refused):
        """Step 11 in JSON, at once, for a refusal or an Ok_ result the facts allow; else None."""
        facts = self.facts.get(exchange.name)
        if not refused and not ("Ok_" in result and facts and not facts.marks and not exchange.added):
            return None
        try:
            data = "".join(WRITE([exchange.response_headers, result], 0)).encode()
        except (ValueError, TypeError, RecursionError):  # half a surrogate pair, say: the core says where
            return None
        if not refused and not facts.shallow and deeper(data, MAX_DEPTH):
            return None
        return Reply(data, JSON, exchange.name, next(iter(result)))


    def write_binary(self, exchange, result):
        """Step 11 in MessagePack, for an Ok_ result to a steady client (it has the checksum, asks for
        no packing) that no handler header changes; else None."""
        headers = exchange.response_headers
        if "Ok_" not in result or exchange.added or "@pac_" in headers \
                or self.encoding.checksum not in exchange.headers["@bin_"]:
            return None
        try:
            data = codec.encode([{**headers, "@bin_": [self.encoding.checksum]}, result], self.encoding)
        except codec.Unwritable:  # the core falls back to JSON, and says why
            return None
        return Reply(data, MSGPACK, exchange.name, "Ok_")


def facts(function, compiler):
    """The Facts of `function`."""
    ok = function.result.tags["Ok_"]
    return Facts(compiler.fields(function.arguments), compiler.tags(function.result),
                 holds(function.arguments, {"bytes", "ext"}), holds(function.result, {"bytes", "ext"}),
                 holds(ok, {"bytes", "any", "ext"}), 2 + depth(Type("struct", False, ok)) <= MAX_DEPTH,
                 function.authenticated)


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
