"""The engine's Service: the core's pipeline, single steps given a short path worked out once.

How this works
--------------
`Service` is the core's Service (protocol/service.py, `Core` here): the same
steps, called in the same order by the same `answer()`. From the schema it
works out, once, `Facts` for each function: compiled checks of its arguments
and results (checks.py), whether either can hold bytes, and whether its `Ok_`
result can be written at once. Six steps are specialised, each taking its
short path where the facts allow and otherwise doing what the core's does
(calling it by name, `Core.decode(self, ...)`: in CPython 3.11 `super()`
costs more than the rest of a step):

- `decode` (step 1) reads JSON with C's scanner alone, unless the text could
  hold half a surrogate pair or nest too deep (scans.py);
- `check_headers`, `check_arguments` and `check_result` (steps 3, 6, 8) ask
  the compiled checks, and leave it to the core's walk to say what is wrong
  when they say no;
- `select` (step 10) trims with the selection compiled (trims.py);
- `encode` (step 11) writes JSON at once, with a C encoder made once, or
  MessagePack to a client that has the checksum.

The short paths log nothing: the core's steps (`--plain`, and the command
lines whenever the debug log is on) say what each one did. Costly requests
take turns (turns.py); what answering cost is learned at step 11.
"""

import logging
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from time import perf_counter, thread_time

from ..protocol import blobs, codec, service
from ..protocol.limits import MAX_DEPTH
from ..protocol.service import JSON, MSGPACK, Reply
from ..protocol.types import Struct, Type, innermost, reachable
from .checks import Compiler
from .scans import deeper, may_hold_surrogates
from .trims import Trims
from ..http_server import LARGE
from .turns import Turns

log = logging.getLogger("reference")

# The C encoder that json.dumps makes anew at each call, made once; None where there is none. It is
# the json module's private interface, called as json.encoder calls it: (markers, default, encoder,
# indent, key separator, item separator, sort_keys, skipkeys, allow_nan).
WRITE = c_make_encoder and c_make_encoder(None, None, encode_basestring, None, ": ", ", ", False, False, False)


class Facts:
    """What the engine knows of one function, from the schema."""

    __slots__ = ("arguments", "result", "restores_arguments", "restores_result", "marks", "shallow")

    def __init__(self, function, compiler):
        ok = function.result.tags["Ok_"]
        self.arguments = compiler.fields_of_object(function.arguments)  # whether arguments (an object) are valid
        self.result = compiler.tags(function.result)  # whether a result is
        self.restores_arguments = holds(function.arguments, {"bytes", "ext"})  # whether arguments can hold
        self.restores_result = holds(function.result, {"bytes", "ext"})  # base64 text standing for bytes; results
        self.marks = holds(ok, {"bytes", "any", "ext"})  # whether an Ok_ result can hold bytes to mark
        self.shallow = 2 + depth(Type("struct", False, ok)) <= MAX_DEPTH  # whether it always nests well within
        # MAX_DEPTH (else: count its brackets)


class Exchange(service.Exchange):
    """A request on its way, with the Facts of its function (None if the schema lacks it)."""

    __slots__ = ("facts", "clocks")

    def __init__(self, headers, name, arguments, client, facts):
        service.Exchange.__init__(self, headers, name, arguments, client)
        self.facts = facts
        self.clocks = None  # perf_counter() and thread_time() when its handler was called


Core = service.Service


class Service(Core):
    """The core's Service, faster (see above)."""

    def __init__(self, *arguments, **options):
        super().__init__(*arguments, **options)
        compiler = Compiler()
        self.facts = {name: Facts(function, compiler) for name, function in self.schema.functions.items()}
        self.headers = {name: compiler.type(type_) for name, type_ in self.schema.request_headers.items()}
        self.turns, self.trims = Turns(), Trims()

    def handle(self, data: bytes, client: str = "") -> Reply:
        """Answer the request bytes `data` as the core does; a large request first waits its turn."""
        if len(data) > LARGE:
            with self.turns.turn():
                return Core.handle(self, data, client)
        return Core.handle(self, data, client)

    def decode(self, data, client=""):
        """Step 1, read by C's scanner alone where the bytes cannot hold what the core looks for."""
        if data[:1] == b"[" and not may_hold_surrogates(data):
            try:
                text = data.decode()
                # scan_once is the json module's private interface to its C scanner (JSONDecoder.raw_decode
                # calls it, with whitespace skipped): (value, where it ended), StopIteration for no value.
                message, end = codec.DECODER.scan_once(text, 0)  # (JSON, so the scan below takes linear time)
                if end == len(text) and type(message) is list and len(message) == 2 \
                        and (len(data) <= MAX_DEPTH or not deeper(data, MAX_DEPTH)):
                    headers, body = message
                    if type(headers) is dict and type(body) is dict and len(body) == 1:
                        [(name, arguments)] = body.items()
                        if type(arguments) is dict:
                            return Exchange(headers, name, arguments, client, self.facts.get(name))
            except (ValueError, StopIteration, RecursionError):
                pass
        exchange = Core.decode(self, data, client)
        return Exchange(exchange.headers, exchange.name, exchange.arguments, client, self.facts.get(exchange.name))

    def answer(self, exchange):
        """Steps 2 to 10, as the core takes them; in turn, if its function's answers were costly."""
        costly = self.turns.costly
        if costly and (exchange.client, exchange.name) in costly:
            with self.turns.turn():
                return Core.answer(self, exchange)
        return Core.answer(self, exchange)

    def check_headers(self, exchange):
        """Step 3, passed at once when the compiled checks find each header valid."""
        if exchange.headers and not self.valid_headers(exchange.headers):
            Core.check_headers(self, exchange)

    def valid_headers(self, headers):
        """Whether each header is named with @, and a declared one valid, as the compiled checks see it."""
        for name, value in headers.items():
            valid = self.headers.get(name)
            if name[:1] != "@" or (valid is not None and not valid(value)):
                return False
        return True

    def check_arguments(self, exchange):
        """Step 6, passed at once when the compiled check finds the arguments valid."""
        facts = exchange.facts
        if not facts.arguments(exchange.arguments):
            Core.check_arguments(self, exchange)
        elif facts.restores_arguments:
            exchange.arguments = blobs.restore_fields(exchange.arguments, exchange.function.arguments)
        exchange.clocks = perf_counter(), thread_time()  # the handler's work, from here, is what it costs

    def check_result(self, exchange, result):
        """Step 8, passed at once when the compiled check finds the result valid."""
        facts = exchange.facts
        if exchange.headers.get("@unsafe_") is True or not facts.result(result):
            return Core.check_result(self, exchange, result)
        return blobs.restore(result, self.results[exchange.name]) if facts.restores_result else result

    def select(self, exchange, result):
        """Step 10, with the selection compiled."""
        selection = exchange.headers.get("@select_")
        return self.trims.trim(selection, result, exchange.function) if selection and "Ok_" in result else result

    def encode(self, exchange, result):
        """Step 11, written at once where the facts allow (else as the core writes it): JSON with the C
        encoder, unless there are bytes to mark, something it does not write (NaN, half a surrogate
        pair) or too deep a nesting; MessagePack to a steady client. What answering cost is learned."""
        facts, reply, ok = exchange.facts, None, "Ok_" in result
        if "@bin_" in exchange.headers:
            reply = self.write_binary(exchange, result)
        elif not ok or not facts.marks:  # (an Ok_ result is of a function the schema has)
            try:
                data = "".join(WRITE([exchange.response_headers, result], 0)).encode()
            except (ValueError, TypeError, RecursionError):
                data = None
            if data and not ((not ok or exchange.added or not facts.shallow) and deeper(data, MAX_DEPTH)):
                reply = Reply(data, JSON, exchange.name, "Ok_" if ok else next(iter(result)))
        if reply is None:
            reply, result = Core.encode(self, exchange, result)
        if exchange.clocks is not None:
            self.turns.learn(exchange.client, exchange.name, len(reply.data), *exchange.clocks)
        return reply, result

    def write_binary(self, exchange, result):
        """The Reply of an Ok_ result in MessagePack to a steady client (it has the checksum, asks for no
        packing), written at once; else None."""
        headers = exchange.response_headers
        if "Ok_" not in result or "@pac_" in headers \
                or self.encoding.checksum not in exchange.headers["@bin_"]:
            return None
        try:
            data = codec.encode([{**headers, "@bin_": [self.encoding.checksum]}, result], self.encoding)
        except codec.Unwritable:  # the core falls back to JSON, and says why
            return None
        return Reply(data, MSGPACK, exchange.name, "Ok_")


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
