"""The service: a schema and plain Python handlers, turning request bytes into response bytes.

How this works
--------------
`Service.handle(data)` answers the bytes of one request with those of its
response. Nothing here knows HTTP. A request goes through these steps, in
this order, each a method below; the order decides which error wins when a
message has several problems:

 1. decode the bytes (JSON, or negotiated MessagePack)  -> ErrorParseFailure_
 2. copy `@id_` into the response headers
 3. check the request headers                           -> ErrorInvalidRequestHeaders_
 4. refuse a protected function called without `@auth_` -> ErrorUnauthenticated_
 5. find the function (then, with `@bin_`, `@pac_` is echoed) -> ErrorInvalidRequestBody_
 6. check the arguments, then turn base64 into bytes    -> ErrorInvalidRequestBody_
 7. run the handler, through the hooks                  -> ErrorUnknown_ if it raises
 8. check the result, unless `@unsafe_` is true         -> ErrorInvalidResponseBody_
 9. check the headers the handler added                 -> ErrorInvalidResponseHeaders_
10. keep only the fields `@select_` names
11. encode: MessagePack if `@bin_` asked and the result is Ok_, else JSON (bytes
    as base64, marked by `@base64_`); what no wire can carry (NaN in an `any`
    field, an object JSON lacks)                        -> ErrorInvalidResponseBody_/Headers_

A step that refuses the request raises `Refusal` with the answer to give. A
handler, `handler(arguments, headers)`, returns a result such as `{"Ok_":
{"result": 3}}`, or a `(headers, result)` pair to add response headers. The
hooks `before` and `wrap` serve every handler but the built-in `fn.ping_`
and `fn.api_`; `on_error` sees every answer that is not Ok_, theirs and
parse failures too (reference/README.md says what each is for).

Each step is a method, and `answer()` calls them in their order: a faster
Service (the engine room's, reference/engine/) specialises single steps and
keeps that order. Checking a message MAX_DEPTH levels deep recurses deeper
than Python allows by default, so a Service raises the interpreter's
recursion limit as far as that needs (limits.allow_depth), once, when made.
"""

import logging
import uuid
from typing import Any, Callable, NamedTuple

from . import blobs, codec, select, validate
from .generate import examples
from .limits import allow_depth
from .loader import Schema
from .types import Type

log = logging.getLogger("reference")

UNAUTHENTICATED = {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}
JSON, MSGPACK = "application/json", "application/octet-stream"
Handler = Callable[[dict, dict], Any]  # (arguments, headers) -> result, or (headers, result)
Before = Callable[[str, dict], dict]  # (function, headers) -> the headers the handler gets
Wrap = Callable[[str, Handler, dict, dict], Any]  # (function, handler, arguments, headers) -> result
OnError = Callable[[str, dict, dict, "Exception | None"], None]  # (function, headers, result, exception)


class Refusal(Exception):
    """The request is answered `result` instead of going on (a step, or a `before` hook, says so)."""

    def __init__(self, result: dict):
        super().__init__(result)
        self.result = result


class Reply(NamedTuple):
    """A response: its bytes and media type, and for the log, the function and result tag."""

    data: bytes
    media_type: str
    function: str
    result: str


class Exchange:
    """One request on its way through the steps, and what its answer gathers on the way."""

    __slots__ = ("headers", "name", "arguments", "client", "function", "response_headers", "added", "raised")

    def __init__(self, headers, name, arguments, client=""):
        self.headers, self.name, self.arguments = headers, name, arguments
        self.client = client  # who sent it (an address), if the transport knows
        self.function = None  # found at step 5
        self.response_headers = {}  # @id_ (step 2), @pac_ (step 5), the handler's own (step 9)
        self.added = {}  # the headers the handler returned (step 7)
        self.raised = None  # what a handler raised (step 7), for on_error


class Service:
    """A schema and its handlers; `handle()` answers one request."""

    def __init__(self, schema: Schema, handlers: dict[str, Handler], before: Before | None = None,
                 wrap: Wrap | None = None, on_error: OnError | None = None):
        self.built_in = {"fn.ping_": lambda arguments, headers: {"Ok_": {}}, "fn.api_": self.api}
        missing = [n for n in schema.functions if n not in handlers and n not in self.built_in]
        unknown = [name for name in handlers if name not in schema.functions]
        if missing or unknown:
            raise ValueError(f"handlers do not match the schema: missing {missing or 'none'}, "
                             f"not in the schema {unknown or 'none'}")
        self.schema, self.handlers = schema, handlers
        self.before, self.wrap, self.on_error = before, wrap, on_error
        self.encoding = codec.encoding(schema)
        self.results = {name: Type("union", False, f.result) for name, f in schema.functions.items()}
        self.examples: dict[bool, list] = {}  # fn.api_ with examples, made once, by includeInternal!
        allow_depth()

    def api(self, arguments, headers):
        """The built-in `fn.api_`: the schema, with internal entries and examples on request."""
        internal = arguments.get("includeInternal!", False)
        if not arguments.get("includeExamples!", False):
            return {"Ok_": {"api": self.schema.api(internal)}}
        if internal not in self.examples:
            self.examples[internal] = examples(self.schema, internal)
        return {"Ok_": {"api": self.examples[internal]}}

    def handle(self, data: bytes, client: str = "") -> Reply:
        """Answer the request bytes `data` (from `client`, an address, if known) with a Reply."""
        try:
            exchange = self.decode(data, client)  # step 1
        except codec.ParseFailure as failure:
            result = {"ErrorParseFailure_": {"reasons": [failure.reason]}}
            self.observe("", {}, result, None)
            return Reply(codec.encode([{}, result]), JSON, "", "ErrorParseFailure_")
        reply, result = self.encode(exchange, self.answer(exchange))  # steps 2 to 10, then 11
        if reply.result != "Ok_":
            self.observe(exchange.name, exchange.headers, result, exchange.raised)
        return reply

    def decode(self, data, client=""):
        """Step 1: the Exchange of a request read from its bytes, or ParseFailure if they are no message."""
        try:
            headers, body = codec.decode(data, self.encoding)
        except codec.ParseFailure as failure:
            log.debug("1 decode: %d bytes are not a message: %s", len(data), *failure.reason)
            raise
        [(name, arguments)] = body.items()
        log.debug("1 decode: %d bytes, a call of %s, headers %.200s", len(data), name, headers)
        return Exchange(headers, name, arguments, client)

    def answer(self, exchange):
        """Steps 2 to 10: the result for a decoded request."""
        try:
            self.echo_id(exchange)
            self.check_headers(exchange)
            self.check_auth(exchange)
            self.find_function(exchange)
            self.check_arguments(exchange)
            result = self.run_handler(exchange)
            result = self.check_result(exchange, result)
            self.check_added_headers(exchange)
            return self.select(exchange, result)
        except Refusal as refusal:
            return refusal.result

    def echo_id(self, exchange):
        """Step 2: the answer carries the request's `@id_` back, whatever it is (but null)."""
        if exchange.headers.get("@id_") is not None:
            exchange.response_headers["@id_"] = exchange.headers["@id_"]

    def check_headers(self, exchange):
        """Step 3: each header is named with @, and a declared one is of its type."""
        # An unknown function's selection is checked as if it had no result fields.
        function = self.schema.functions.get(exchange.name) or self.schema.functions["fn.ping_"]
        cases = validate.first(self.header_cases(exchange.headers, self.schema.request_headers, function))
        if cases:
            log.debug("3 headers: ErrorInvalidRequestHeaders_, with %d cases", len(cases))
            raise Refusal({"ErrorInvalidRequestHeaders_": {"cases": cases}})

    def check_auth(self, exchange):
        """Step 4: a protected function is not called without `@auth_` (judging it is the hooks' job)."""
        function = self.schema.functions.get(exchange.name)
        if function and function.authenticated and "@auth_" not in exchange.headers:
            log.debug("4 auth: %s is protected and the request has no @auth_", exchange.name)
            raise Refusal(UNAUTHENTICATED)

    def find_function(self, exchange):
        """Step 5: the schema has the function; from here on, a request with `@bin_` has its `@pac_` echoed."""
        if "@bin_" in exchange.headers and "@pac_" in exchange.headers:
            exchange.response_headers["@pac_"] = exchange.headers["@pac_"]
        exchange.function = self.schema.functions.get(exchange.name)
        if exchange.function is None:
            log.debug("5 function: the schema has no %s", exchange.name)
            unknown = validate.case(validate.at(exchange.name), "FunctionUnknown")
            raise Refusal({"ErrorInvalidRequestBody_": {"cases": [unknown]}})

    def check_arguments(self, exchange):
        """Step 6: the arguments are the function's, each of its type; base64 text becomes bytes."""
        function = exchange.function
        cases = validate.first(validate.check_fields(exchange.arguments, function.arguments,
                                                     validate.at(exchange.name), function))
        if cases:
            log.debug("6 arguments: ErrorInvalidRequestBody_, with %d cases", len(cases))
            raise Refusal({"ErrorInvalidRequestBody_": {"cases": cases}})
        exchange.arguments = blobs.restore_fields(exchange.arguments, function.arguments)

    def run_handler(self, exchange):
        """Step 7: the handler's result, through the hooks; the headers it adds are kept for step 9."""
        name, handler = exchange.name, self.handlers.get(exchange.name)
        try:
            if handler is None:
                result = self.built_in[name](exchange.arguments, exchange.headers)
            else:
                headers = self.before(name, exchange.headers) if self.before else exchange.headers
                result = (self.wrap(name, handler, exchange.arguments, headers) if self.wrap
                          else handler(exchange.arguments, headers))
        except Refusal as refusal:  # from the before hook: an answer, checked like any other
            result = refusal.result
        except Exception as error:
            exchange.raised, case_id = error, str(uuid.uuid4())
            log.exception("handler for %s raised (caseId %s)", name, case_id)
            raise Refusal({"ErrorUnknown_": {"caseId": case_id}}) from None
        if type(result) is tuple and len(result) == 2 and type(result[0]) is dict:
            exchange.added, result = result
        return result

    def check_result(self, exchange, result):
        """Step 8: the result is one of the function's, unless `@unsafe_` asks not to look; base64
        text a handler gave for bytes becomes bytes. A refused result still takes with it the headers
        the handler added, those that pass step 9."""
        if exchange.headers.get("@unsafe_") is True and _one_tag(result):
            log.debug("8 result: %s returned %.200s, not checked, as @unsafe_ asks", exchange.name, result)
            return result
        selection, function = exchange.headers.get("@select_"), exchange.function
        cases = validate.first(found for found in validate.check_tags(result, function.result, (), function)
                               if not (selection and _excused(found, selection, function)))
        if cases:
            log.error("%s returned an invalid result: %s", function.name, cases)
            self.add_headers(exchange)
            raise Refusal({"ErrorInvalidResponseBody_": {"cases": cases}})
        log.debug("8 result: %s returned %.200s, valid%s", exchange.name, result,
                  " (missing fields @select_ drops are excused)" if selection else "")
        return blobs.restore(result, self.results[function.name])

    def check_added_headers(self, exchange):
        """Step 9: the headers the handler added go out if each is named with @, and of its type if
        declared; if one is not, none does."""
        cases = self.add_headers(exchange) if exchange.added else ()
        if cases:
            log.error("%s returned invalid response headers: %s", exchange.name, cases)
            raise Refusal({"ErrorInvalidResponseHeaders_": {"cases": cases}})

    def add_headers(self, exchange):
        """Add the handler's headers to the answer if all pass step 9's check; else their cases."""
        cases = validate.first(self.header_cases(exchange.added, self.schema.response_headers, exchange.function))
        for name, value in () if cases else exchange.added.items():
            exchange.response_headers.setdefault(name, value)  # what a request's @id_ says is echoed as it is
        return cases

    def select(self, exchange, result):
        """Step 10: keep only the fields `@select_` names."""
        selection = exchange.headers.get("@select_")
        if selection:
            log.debug("10 select: %s", selection)
            return select.apply(selection, result, exchange.function)
        return result

    def encode(self, exchange, result):
        """Step 11: the Reply holding `result`, in MessagePack if asked and possible, else in JSON;
        and the result it holds (another one, if no wire can carry the one given)."""
        headers, checksums = exchange.response_headers, exchange.headers.get("@bin_")
        if checksums is not None and "Ok_" in result:
            known = self.encoding.checksum in checksums
            binary = {**headers, **({} if known else {"@enc_": self.encoding.ids}), "@bin_": [self.encoding.checksum]}
            try:
                data = codec.encode([binary, result], self.encoding, exchange.headers.get("@pac_") is True)
                log.debug("11 encode: MessagePack, as @bin_ asked, %s", "without @enc_" if known else "with @enc_")
                return Reply(data, MSGPACK, exchange.name, "Ok_"), result
            except codec.Unwritable:
                pass
        try:
            marked, marks = blobs.mark(result, self.results.get(exchange.name, blobs.ANY))
            data = codec.encode([{**headers, "@base64_": marks} if marks else headers, marked])
        except (codec.Unwritable, RecursionError) as error:  # too deep even to mark, or else unwritable
            headers, result = self.unwritable(exchange, result, error)
            data, marks = codec.encode([headers, result]), None
        log.debug("11 encode: JSON%s%s", "" if checksums is None else ", though @bin_ asked for MessagePack",
                  f", bytes marked in @base64_ {marks}" if marks else "")
        return Reply(data, JSON, exchange.name, next(iter(result))), result

    def unwritable(self, exchange, result, error):
        """The headers and error that replace an answer no wire can carry, with the paths at fault
        (a result `@unsafe_` let through step 8 is checked now, as step 8 would)."""
        kept, function = ({"@id_": exchange.headers["@id_"]} if "@id_" in exchange.response_headers else {},
                          exchange.function)
        for tag, part in (("ErrorInvalidResponseBody_", result),
                          ("ErrorInvalidResponseHeaders_", exchange.response_headers)):
            cases = ((validate.first(validate.check_tags(result, function.result, (), function))
                      if function and part is result else []) or validate.first(codec.unwritable(part)))
            if cases:
                log.error("%s returned %s: %s", exchange.name, "an invalid result" if part is result
                          else "invalid response headers", cases)
                return kept, {tag: {"cases": cases}}
        raise error  # not the handler's doing: a bug here, which the transport reports

    def header_cases(self, headers, declared, function):
        """Yield the cases of request or response headers against the `declared` ones."""
        for header, value in headers.items():
            if not header.startswith("@"):
                yield validate.case(validate.at(header), "RequiredObjectKeyPrefixMissing", {"prefix": "@"})
            elif header in declared:
                yield from validate.check(value, declared[header], validate.at(header), function)

    def observe(self, name, headers, result, exception):
        """Show `on_error` an answer that is not Ok_; its failure changes nothing."""
        if self.on_error is not None:
            try:
                self.on_error(name, headers, result, exception)
            except Exception:
                log.exception("the on_error hook raised")


def _one_tag(result):
    """Whether `result` has the outline of a result: an object of one tag that holds an object."""
    return type(result) is dict and len(result) == 1 and type(next(iter(result.values()))) is dict


def _excused(case, selection, function):
    """Whether a failure is a missing field that `@select_` would remove anyway."""
    missing = case["reason"].get("RequiredObjectKeyMissing")
    return bool(missing) and select.removes(selection, function, case["path"], missing["key"])
