"""The engine's Service: the core's pipeline, single steps given a short path worked out once.

How this works
--------------
`Service` is the core's (protocol/service.py, `Core` here): the same steps in
the same order, called by the same `answer()`. From the schema it works out,
once, `Facts` for each function: compiled checks of its arguments and results
(checks.py), and whether either can hold bytes. Six steps take a short path
where the facts allow, and are else the core's (called by name: in CPython
3.11 `super()` costs more than the rest of a step):

- `decode` (1) reads JSON with C's scanner alone, unless the text could hold
  half a surrogate pair or nest too deep (scans.py), and MessagePack with
  the library in one call (binary.py), its arguments named by the compiled
  checks as they find them valid, so that steps 3 and 6 are passed already;
- `check_headers`, `check_arguments`, `check_result` (3, 6, 8) ask the
  compiled checks, and walk only to say what is wrong; an Ok_ that goes back
  in MessagePack gets its ids as it is checked;
- `select` (10) trims with the selection compiled (trims.py);
- `encode` (11) writes JSON with a C encoder made once, or MessagePack in one
  call to a client that has the checksum (packed too: binary.py), and learns
  what answering cost;

and `fn.api_`, whose answer depends only on its two flags, is made and
written once for each.

The short paths log nothing: the core's steps do (`--plain`, and the command
lines with the debug log on). Costly requests take turns (turns.py, transports/admission.py).
"""

from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from time import perf_counter, thread_time

from ..protocol import blobs, codec, service
from ..protocol.limits import MAX_DEPTH
from ..protocol.service import JSON, MSGPACK, Reply
from ..protocol.types import Struct, innermost
from ..transports.admission import LARGE, Admission
from . import binary
from .checks import Compiler, renamed
from .scans import deeper, may_hold_surrogates
from .trims import Trims, leading_to
from .turns import Turns

# The C encoder that json.dumps makes anew at each call, made once; None where there is none. It is
# the json module's private interface, called as json.encoder calls it: (markers, default, encoder,
# indent, key separator, item separator, sort_keys, skipkeys, allow_nan).
WRITE = c_make_encoder and c_make_encoder(None, None, encode_basestring, None, ": ", ", ", False, False, False)
Core = service.Service


class Facts:
    """What the engine knows of one function: whether its arguments (an object) are valid, whether a
    result is, the checks of its arguments' and Ok_'s fields (to rename keys as they check), whether
    either can hold base64 text standing for bytes, whether an Ok_ has bytes to mark."""

    __slots__ = ("arguments", "result", "fields", "ok", "restores_arguments", "restores_result", "marks")

    def __init__(self, function, compiler, restoring, marking):
        self.arguments, self.result = compiler.fields_of_object(function.arguments), compiler.tags(function.result)
        self.fields, self.ok = compiler.entry(function.arguments), compiler.entry(function.result.tags["Ok_"])
        self.restores_arguments = id(function.arguments) in restoring
        self.restores_result = id(function.result) in restoring
        self.marks = id(function.result.tags["Ok_"]) in marking


class Exchange(service.Exchange):
    """A request on its way, with the Facts of its function (None if the schema lacks it), whether its
    headers and arguments were found valid as they were read, the clocks (perf_counter, thread_time)
    as its handler was called, and its Ok_ result with ids for keys, if made as it was checked."""

    __slots__ = ("facts", "checked", "clocks", "keyed")

    def __init__(self, headers, name, arguments, client, facts, checked=False):
        # (the core's Exchange.__init__ and these in one call: calling it costs 1% of a small request)
        self.headers, self.name, self.arguments = headers, name, arguments
        self.client, self.facts, self.checked = client, facts, checked
        self.function = self.raised = self.clocks = self.keyed = None
        self.response_headers, self.added = {}, {}


class Service(Core):
    """The core's Service, faster (see above)."""

    def __init__(self, *arguments, **options):
        super().__init__(*arguments, **options)
        compiler = Compiler()
        roots = [node for function in self.schema.functions.values() for node in (function.arguments, function.result)]
        restoring, marking = (leading_to(roots, lambda node: holds(node, kinds)) for kinds in (RESTORED, MARKED))
        self.facts = {name: Facts(function, compiler, restoring, marking)
                      for name, function in self.schema.functions.items()}
        self.headers = {name: compiler.type(type_) for name, type_ in self.schema.request_headers.items()}
        self.turns, self.trims = Turns(), Trims()
        self.names = dict(enumerate(self.encoding.names))  # a binary key's id -> its name
        # a key as found -> (its name, the key written): for reading ids, and for writing names (checks.renamed)
        self.reading = {id_: (name, name) for name, id_ in self.encoding.ids.items()}
        self.writing = {name: (name, id_) for name, id_ in self.encoding.ids.items()}
        self.ok = self.encoding.ids["Ok_"]  # (the key of an Ok_ result written in MessagePack)
        self.api_answers, self.written = {}, {}  # fn.api_'s results, by its flags; id of one -> its JSON text
        self.admission = Admission()  # the turn of costly requests (its transport's places too)

    def handle(self, data: bytes, client: str = "") -> Reply:
        """Answer the request bytes `data` as the core does; a large request first waits its turn."""
        if len(data) > LARGE:
            with self.admission.turn(client):
                return Core.handle(self, data, client)
        return Core.handle(self, data, client)

    def decode(self, data, client=""):
        """Step 1, read by C's scanner alone where the bytes cannot hold what the core looks for, or by the
        MessagePack library at once."""
        if (first := data[:1]) == b"[" and not may_hold_surrogates(data):
            try:
                # scan_once is the json module's private interface to its C scanner (JSONDecoder.raw_decode
                # calls it, with whitespace skipped): (value, where it ended), StopIteration for no value.
                message, end = codec.DECODER.scan_once(text := data.decode(), 0)  # (JSON: the scan is linear)
                if end == len(text) and type(message) is list and len(message) == 2 \
                        and (len(data) <= MAX_DEPTH or not deeper(data, MAX_DEPTH)):
                    headers, body = message
                    if type(headers) is dict and type(body) is dict and len(body) == 1:
                        [(name, arguments)] = body.items()
                        if type(arguments) is dict:
                            return Exchange(headers, name, arguments, client, self.facts.get(name))
            except (ValueError, StopIteration, RecursionError):
                pass
        elif first == b"\x92" and (read := binary.read(data, self.encoding.checksum, self.names)) is not None:
            headers, name, arguments, steady = read  # (the arguments' keys still ids)
            facts = self.facts.get(name)
            if facts is not None and (steady or self.valid_headers(headers)) \
                    and (checked := renamed(facts.fields, arguments, self.reading, int)) is not None:
                return Exchange(headers, name, checked, client, facts, True)  # (steps 3 and 6 passed)
            if (arguments := binary.named(arguments, self.names)) is not None:
                return Exchange(headers, name, arguments, client, facts)
        exchange = Core.decode(self, data, client)
        return Exchange(exchange.headers, exchange.name, exchange.arguments, client, self.facts.get(exchange.name))

    def answer(self, exchange):
        """Steps 2 to 10, as the core takes them; in turn, if its client's calls of it were costly."""
        costly = self.turns.costly
        if costly and (exchange.client, exchange.name) in costly:
            with self.admission.turn(exchange.client):
                return Core.answer(self, exchange)
        return Core.answer(self, exchange)

    def api(self, arguments, headers):
        """The built-in `fn.api_`, its result made once for each pair of flags: it depends on nothing else
        (encode writes it once, too)."""
        flags = (arguments.get("includeInternal!", False), arguments.get("includeExamples!", False))
        if flags not in self.api_answers:
            self.api_answers[flags] = result = Core.api(self, arguments, headers)
            self.written[id(result)] = "".join(WRITE(result, 0))  # (a schema's entries hold no bytes to mark)
        return self.api_answers[flags]

    def check_headers(self, exchange):
        """Step 3, passed at once when the headers are compiled valid (or were, as they were read)."""
        if exchange.headers and not exchange.checked and not self.valid_headers(exchange.headers):
            Core.check_headers(self, exchange)

    def valid_headers(self, headers):
        """Whether each header is named with @ and, if declared, compiled valid."""
        for name, value in headers.items():
            valid = self.headers.get(name)
            if name[:1] != "@" or (valid is not None and not valid(value)):
                return False
        return True

    def check_arguments(self, exchange):
        """Step 6, passed at once when the compiled check finds the arguments valid."""
        facts = exchange.facts
        if not (exchange.checked or facts.arguments(exchange.arguments)):
            Core.check_arguments(self, exchange)
        elif facts.restores_arguments:
            exchange.arguments = blobs.restore_fields(exchange.arguments, exchange.function.arguments)
        exchange.clocks = perf_counter(), thread_time()  # the handler's work, from here, is what it costs

    def check_result(self, exchange, result):
        """Step 8, passed at once when the compiled check finds the result valid."""
        facts = exchange.facts
        if exchange.name == "fn.api_" and id(result) in self.written:  # (made of the schema by the core)
            return result
        headers = exchange.headers
        if headers.get("@unsafe_") is True:
            return Core.check_result(self, exchange, result)
        if exchange.checked and type(result) is dict and type(ok := result.get("Ok_")) is dict and len(result) == 1 \
                and not facts.restores_result and "@select_" not in headers:  # (a steady client's, in MessagePack)
            keyed = renamed(facts.ok, ok, self.writing, str)
            if keyed is not None:
                exchange.keyed = {self.ok: keyed}  # (as write_binary writes it)
                return result
        if not facts.result(result):
            return Core.check_result(self, exchange, result)
        return blobs.restore(result, self.results[exchange.name]) if facts.restores_result else result

    def select(self, exchange, result):
        """Step 10, with the selection compiled."""
        selection = exchange.headers.get("@select_")
        return self.trims.trim(selection, result, exchange.function) if selection and "Ok_" in result else result

    def encode(self, exchange, result):
        """Step 11, written at once where it can be (else as the core writes it): JSON with the C encoder,
        unless there are bytes to mark, something it does not write (NaN, half a surrogate pair) or too
        deep a nesting; MessagePack to a steady client. What answering cost is learned."""
        reply, ok = None, "Ok_" in result
        if "@bin_" in exchange.headers:
            reply = self.write_binary(exchange, result)
        elif exchange.name == "fn.api_" and id(result) in self.written:  # as made (no selection made another)
            data = f"[{''.join(WRITE(exchange.response_headers, 0))}, {self.written[id(result)]}]".encode()
            reply = Reply(data, JSON, exchange.name, "Ok_")
        elif not ok or not exchange.facts.marks:  # (an Ok_ result is of a function the schema has)
            try:
                data = "".join(WRITE([exchange.response_headers, result], 0)).encode()
                if len(data) <= MAX_DEPTH or not deeper(data, MAX_DEPTH):
                    reply = Reply(data, JSON, exchange.name, "Ok_" if ok else next(iter(result)))
            except (ValueError, TypeError, RecursionError):
                pass
        if reply is None:
            reply, result = Core.encode(self, exchange, result)
        if exchange.clocks is not None:
            self.turns.learn(exchange.client, exchange.name, len(reply.data), *exchange.clocks)
        return reply, result

    def write_binary(self, exchange, result):
        """The Reply of an Ok_ result in MessagePack to a steady client (it has the checksum), packed if it
        asks, written by the library at once; else None."""
        headers = exchange.response_headers
        if exchange.keyed is not None and "Ok_" in result:  # (its keys made ids as it was checked; a refusal
            # after step 8, of the headers the handler added, is an error)
            data = binary.write(headers, result, self.encoding, False, exchange.keyed)
        elif "Ok_" not in result or self.encoding.checksum not in exchange.headers["@bin_"]:
            return None
        else:
            data = binary.write(headers, result, self.encoding, exchange.headers.get("@pac_") is True)
        return None if data is None else Reply(data, MSGPACK, exchange.name, "Ok_")  # (None: the core says why)


RESTORED, MARKED = {"bytes", "ext"}, {"bytes", "any", "ext"}  # what needs restoring on the way in, marking out


def holds(node, kinds):
    """Whether a Struct's own fields (not those inside them) can hold a value of one of `kinds`."""
    return isinstance(node, Struct) and any(innermost(type_).kind in kinds for type_ in node.fields.values())
