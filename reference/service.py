"""The service: a schema and plain Python handlers, turning request bytes into response bytes.

How this works
--------------
`Service.handle(data)` takes the bytes of one request and returns those of its
response and their media type. Nothing here knows HTTP, so the same core
serves the HTTP server, the WSGI application, the mock and the tests.

A request goes through these steps, in this order; the order decides which
error wins when a message has several problems:

 1. decode the bytes (JSON, or negotiated MessagePack)  -> ErrorParseFailure_
 2. copy `@id_` into the response headers
 3. validate the request headers                        -> ErrorInvalidRequestHeaders_
 4. refuse a protected function called without `@auth_` -> ErrorUnauthenticated_
 5. find the function (from here on `@pac_` is echoed)  -> ErrorInvalidRequestBody_
 6. validate the arguments                              -> ErrorInvalidRequestBody_
 7. run the handler, with base64 already turned into bytes -> ErrorUnknown_ if it raises
 8. validate the result, unless `@unsafe_` is true      -> ErrorInvalidResponseBody_
 9. validate the response headers                       -> ErrorInvalidResponseHeaders_
10. keep only the fields `@select_` names
11. encode: MessagePack if `@bin_` asked and the result is Ok_, else JSON (bytes
    as base64, marked by `@base64_`); what no wire can carry (NaN, an object
    JSON lacks)                                         -> ErrorInvalidResponseBody_/Headers_

A handler is a function `handler(arguments, headers)` returning a result such
as `{"Ok_": {"result": 3}}`, or a `(headers, result)` pair to add response
headers. `fn.ping_` and `fn.api_` need none. Three optional hooks serve every
handler given at once (the built-in functions answer without them; see
reference/README.md):

- `before(function, headers)` runs at step 7 and returns the headers the
  handler gets: where credentials become an identity. It may `raise
  Refusal(result)` to answer that result instead (ErrorUnauthenticated_, say).
- `wrap(function, handler, arguments, headers)` calls the handler, doing
  something around it: time it, trace it, hold a lock.
- `on_error(function, headers, result, exception)` sees every answer that is
  not Ok_, parse failures included (function ""), with what a handler raised
  (for ErrorUnknown_; else None): where to log or count errors.
"""

import logging
import uuid
from typing import Any, Callable, NamedTuple

from . import blobs, codec, select, validate
from .generate import examples
from .loader import Schema
from .types import Type

log = logging.getLogger("reference")

UNAUTHENTICATED = {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}}

# What handlers and hooks are: see the module's docstring.
Handler = Callable[[dict, dict], Any]  # (arguments, headers) -> result, or (headers, result)
Before = Callable[[str, dict], dict]  # (function, headers) -> the headers the handler gets
Wrap = Callable[[str, Handler, dict, dict], Any]  # (function, handler, arguments, headers) -> result
OnError = Callable[[str, dict, dict, "Exception | None"], None]  # (function, headers, result, exception)
JSON, MSGPACK = "application/json", "application/octet-stream"


class Refusal(Exception):
    """Raised by a `before` hook: answer with `result` instead of calling the handler."""

    def __init__(self, result: dict):
        super().__init__(result)
        self.result = result


class Reply(NamedTuple):
    """A response: its bytes and media type, and for the log, the function and result tag."""

    data: bytes
    media_type: str
    function: str
    result: str


class Service:
    """A schema and its handlers; `handle()` answers one request."""

    def __init__(self, schema: Schema, handlers: dict[str, Handler], before: Before | None = None,
                 wrap: Wrap | None = None, on_error: OnError | None = None):
        # The built-in functions answer by themselves, without the hooks, so that a hook that refuses
        # strangers never hides the schema or the ping from anyone (handlers given may replace them).
        self.built_in = {"fn.ping_": lambda arguments, headers: {"Ok_": {}}, "fn.api_": self.api}
        missing = [n for n in schema.functions if n not in handlers and n not in self.built_in]
        unknown = [name for name in handlers if name not in schema.functions]
        if missing or unknown:
            raise ValueError(f"handlers do not match the schema: missing {missing or 'none'}, "
                             f"not in the schema {unknown or 'none'}")
        codec.allow_depth()
        self.schema, self.before, self.wrap, self.on_error = schema, before, wrap, on_error
        self.handlers = handlers
        self.encoding = codec.encoding(schema)
        self.results = {name: Type("union", False, f.result) for name, f in schema.functions.items()}
        self.examples: dict[bool, list] = {}  # fn.api_ with examples, made once, by includeInternal!

    def api(self, arguments, headers):
        """The built-in `fn.api_`: the schema, with internal entries and examples on request."""
        internal = arguments.get("includeInternal!", False)
        if not arguments.get("includeExamples!", False):
            return {"Ok_": {"api": self.schema.api(internal)}}
        if internal not in self.examples:
            self.examples[internal] = examples(self.schema, internal)
        return {"Ok_": {"api": self.examples[internal]}}

    def handle(self, data: bytes) -> Reply:
        """Answer the request bytes `data` with a Reply: response bytes, media type and more."""
        try:
            headers, body = codec.decode(data, self.encoding)
        except codec.ParseFailure as failure:
            log.debug("1 decode: %d bytes of %s are not a message: %s", len(data),
                      "MessagePack" if data[:1] == b"\x92" else "JSON", *failure.reason)
            reply = {"ErrorParseFailure_": {"reasons": [failure.reason]}}
            self._observe("", {}, reply, None)
            return Reply(codec.encode([{}, reply]), JSON, "", "ErrorParseFailure_")
        [(name, arguments)] = body.items()
        log.debug("1 decode: %d bytes, a call of %s, headers %.200s", len(data), name, headers)
        response_headers, result, raised = self.call(headers, name, arguments)
        data, media_type, result = self.encode(name, headers, response_headers, result)
        [tag] = result
        if tag != "Ok_":
            self._observe(name, headers, result, raised)
        return Reply(data, media_type, name, tag)

    def _observe(self, name, headers, result, exception):
        if self.on_error is not None:
            try:
                self.on_error(name, headers, result, exception)
            except Exception:
                log.exception("the on_error hook raised")

    def call(self, headers, name, arguments):
        """Steps 2 to 10 for a decoded request: (response headers, result, what a handler raised or None)."""
        response_headers = {"@id_": headers["@id_"]} if headers.get("@id_") is not None else {}
        function = self.schema.functions.get(name)
        if headers:
            # An unknown function's selection is checked as if it had no result fields.
            known = function or self.schema.functions["fn.ping_"]
            cases = validate.first(self._check_headers(headers, self.schema.request_headers, known))
            if cases:
                log.debug("3 headers: ErrorInvalidRequestHeaders_, with %d cases", len(cases))
                return response_headers, {"ErrorInvalidRequestHeaders_": {"cases": cases}}, None
        if function and function.authenticated and "@auth_" not in headers:
            log.debug("4 auth: %s is protected and the request has no @auth_: ErrorUnauthenticated_", name)
            return response_headers, UNAUTHENTICATED, None
        if "@bin_" in headers and "@pac_" in headers:  # echoed from here on, whatever the result
            response_headers["@pac_"] = headers["@pac_"]
        if function is None:
            log.debug("5 function: the schema has no %s", name)
            reply = validate.case(validate.at(name), "FunctionUnknown")
            return response_headers, {"ErrorInvalidRequestBody_": {"cases": [reply]}}, None
        cases = validate.first(validate.check_fields(arguments, function.arguments, validate.at(name), function))
        if cases:
            log.debug("6 arguments: ErrorInvalidRequestBody_, with %d cases", len(cases))
            return response_headers, {"ErrorInvalidRequestBody_": {"cases": cases}}, None
        arguments = blobs.decode_fields(arguments, function.arguments)
        try:
            handler = self.handlers.get(name)
            if handler is None:
                result = self.built_in[name](arguments, headers)
            else:
                given = self.before(name, headers) if self.before else headers
                result = self.wrap(name, handler, arguments, given) if self.wrap else handler(arguments, given)
        except Refusal as refusal:
            log.debug("7 before: refused with %s", next(iter(refusal.result), "nothing"))
            result = refusal.result
        except Exception as error:
            case_id = str(uuid.uuid4())
            log.exception("handler for %s raised (caseId %s)", name, case_id)
            return response_headers, {"ErrorUnknown_": {"caseId": case_id}}, error
        log.debug("6-7 arguments: valid; the handler of %s returned %.200s", name, result)
        try:
            return (*self._check_result(headers, function, response_headers, result), None)
        except RecursionError:  # a result nested far deeper than any message may be
            return (*self._unencodable(name, headers, response_headers, result), None)

    def _check_headers(self, headers, declared, function):
        """Yield the cases of request or response headers against the `declared` ones."""
        for header, value in headers.items():
            if not header.startswith("@"):
                yield validate.case(validate.at(header), "RequiredObjectKeyPrefixMissing", {"prefix": "@"})
            elif header in declared:
                yield from validate.check(value, declared[header], validate.at(header), function)

    def _check_result(self, headers, function, response_headers, result):
        """Steps 8 to 10: validate what the handler returned, then trim it.

        The headers a handler adds go out only if they are valid, whatever the result."""
        added = {}
        if type(result) is tuple and len(result) == 2 and type(result[0]) is dict:
            added, result = result
        header_cases = (validate.first(self._check_headers(added, self.schema.response_headers, function))
                        if added else [])
        if not header_cases:
            response_headers = {**response_headers, **added}
        selection = headers.get("@select_")
        unsafe = headers.get("@unsafe_") is True
        if not unsafe or type(result) is not dict or len(result) != 1 or type(*result.values()) is not dict:
            cases = validate.first(c for c in validate.check_tags(result, function.result, (), function)
                                   if not (selection and _excused(c, selection, function)))
            if cases:
                log.error("%s returned an invalid result: %s", function.name, cases)
                return response_headers, {"ErrorInvalidResponseBody_": {"cases": cases}}
            result = blobs.decode(result, self.results[function.name])
            log.debug("8 result: valid%s", " (missing fields @select_ drops are excused)" if selection else "")
        else:
            log.debug("8 result: not checked, as @unsafe_ asks")
        if added:
            log.debug("9 response headers: the handler added %s, %s", list(added),
                      "refused, so none is sent" if header_cases else "valid")
        if header_cases:
            log.error("%s returned invalid response headers: %s", function.name, header_cases)
            return response_headers, {"ErrorInvalidResponseHeaders_": {"cases": header_cases}}
        if selection:
            trimmed = select.apply(selection, result, function)
            if log.isEnabledFor(logging.DEBUG):
                log.debug("10 select: removed %s", list(_removed(result, trimmed)) or "nothing")
            result = trimmed
        return response_headers, result

    def encode(self, name, headers, response_headers, result):
        """Step 11: the response bytes, their media type, and the result they hold (another
        one if no wire can carry the result given), negotiating MessagePack if asked."""
        checksums = headers.get("@bin_")
        if checksums is not None:
            if "Ok_" in result:
                known = self.encoding.checksum in checksums
                binary_headers = {**response_headers, **({} if known else {"@enc_": self.encoding.ids}),
                                  "@bin_": [self.encoding.checksum]}
                packed = headers.get("@pac_") is True
                try:
                    data = codec.encode([binary_headers, result], self.encoding, packed)
                    log.debug("11 encode: MessagePack, as @bin_ asked, %s%s", "packed, " if packed else "",
                              "without @enc_ (the client's checksum is current)" if known else "with @enc_")
                    return data, MSGPACK, result
                except (ValueError, OverflowError, TypeError, RecursionError):
                    pass  # too deep, an integer too big, or a value MessagePack lacks: try JSON
            log.debug("11 encode: JSON although @bin_ asked for MessagePack, because the result is %s or "
                      "MessagePack cannot carry it", next(iter(result)))
        try:
            marked, marks = blobs.mark(result, self.results.get(name))
            if marks:
                log.debug("11 encode: bytes as base64, marked in @base64_ %s", marks)
            return codec.encode([{**response_headers, "@base64_": marks} if marks else response_headers,
                                 marked]), JSON, result
        except (ValueError, TypeError, RecursionError):  # only a handler can put such values in a response
            kept, error = self._unencodable(name, headers, response_headers, result)
            return codec.encode([kept, error]), JSON, error

    def _unencodable(self, name, headers, response_headers, result):
        """The headers and error that replace a response no wire can carry, with the paths at fault."""
        kept = {"@id_": headers["@id_"]} if "@id_" in response_headers else {}
        cases = (validate.first(validate.check_tags(result, self.results[name].of, (), self.schema.functions[name]))
                 or validate.first(validate.check_wire(result)))
        if cases:
            log.error("%s returned an invalid result: %s", name, cases)
            return kept, {"ErrorInvalidResponseBody_": {"cases": cases}}
        cases = validate.first(validate.check_wire(response_headers))
        if cases:
            log.error("%s returned invalid response headers: %s", name, cases)
            return kept, {"ErrorInvalidResponseHeaders_": {"cases": cases}}
        raise  # not the handler's doing: a bug here, which the transport reports


def _removed(before, after, path=()):
    """The paths of the fields a selection removed (for the debug log)."""
    if type(before) is dict and type(after) is dict:
        for key, value in before.items():
            if key not in after:
                yield [*path, key]
            else:
                yield from _removed(value, after[key], (*path, key))
    elif type(before) is list and type(after) is list:
        for index, (value, kept) in enumerate(zip(before, after)):
            yield from _removed(value, kept, (*path, index))


def _excused(case, selection, function):
    """Whether a failure is a missing field that `@select_` would remove anyway."""
    missing = case["reason"].get("RequiredObjectKeyMissing")
    return bool(missing) and select.removes(selection, function, case["path"], missing["key"])
