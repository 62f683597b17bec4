"""The client cases: calls a client under test is told to make, what it must send, and what it must return.

Each case names the client's mode (json, binary, binary-requests or packed)
and timeout, then steps: a call, the HTTP exchanges it must cause (the
request the client must send, checked with the matching language, and the
answer the scripted server gives), and what the client must return: a
message, or an error. The server the client talks to is imaginary: these
tables give its encoding (ENCODING, and CHANGED after a schema change), so
binary answers can be written with names and turned into integer keys here.
"""

from ..language import suite
from ..language.schema import checksum


def encoding(names):
    """An encoding as a server makes it: ids in code point order, and the checksum of the names."""
    return {"checksum": checksum(names), "ids": {name: i for i, name in enumerate(sorted(names))}}


NAMES = ["Blob", "Ok_", "blob", "choice", "data", "fn.add", "fn.export", "fn.list", "item", "items", "name",
         "named", "note!", "parts", "price", "result", "x", "y"]
ENCODING, CHANGED = encoding(NAMES), encoding([*NAMES, "total"])  # CHANGED: after the server's schema changed
ADD = ("fn.add", {"x": 1, "y": 2})
ITEMS = [{"name": "tea", "price": 2.5}, {"name": "cake", "price": 4, "note!": "fresh"}]
UNAVAILABLE = {"ErrorUnavailable": {}}


def ids(value, encoding=ENCODING):
    """A body with the names the encoding knows written as "#id" keys (the suite's MessagePack notation)."""
    if type(value) is dict and list(value) not in (["$bin"], ["$ext"]):
        return {(f"#{encoding['ids'][k]}" if k in encoding["ids"] else k): ids(v, encoding) for k, v in value.items()}
    if type(value) is list:
        return [ids(v, encoding) for v in value]
    return value


def sent(headers, body, wire="json"):
    """What the client must send: these headers (at least), and exactly this body."""
    return {"wire": wire, "message": [{"$partial": headers}, body]}


def json_answer(body, headers=None):
    return {"message": [headers or {}, body]}


def binary_answer(body, negotiating=False, encoding=ENCODING, headers=None):
    """A MessagePack answer, with @enc_ when it starts a negotiation."""
    first = {"@enc_": encoding["ids"]} if negotiating else {}
    return {"msgpack": [{**(headers or {}), **first, "@bin_": [encoding["checksum"]]}, ids(body, encoding)]}


def exchange(request, answer):
    return {"request": request, "answer": answer}


def step(call, exchanges, returns):
    function, arguments, *headers = call
    return {"call": {"function": function, "arguments": arguments, "headers": headers[0] if headers else {}},
            "exchanges": exchanges, "returns": returns}


def returns(body, headers=None):
    return {"message": [{"$partial": headers or {}}, body]}


FAILED = {"error": True}


def case(id_, description, requirements, mode, steps, level=None, timeout=5):
    """A client case: a fresh client in `mode`, with `timeout` seconds, makes the steps' calls in order.
    Its level follows from its requirements (MUST only if the spec states every one), or is MAY."""
    requirements = list(dict.fromkeys(requirements))
    derived = suite.level_of(requirements)
    assert level in (None, derived, "MAY"), f"client/{id_}: {level} but its requirements make it {derived}"
    return {"id": f"client/{id_}", "description": description, "requirements": requirements,
            "level": level or derived, "client": {"mode": mode, "timeout": timeout}, "steps": steps}


def first_binary(mode, call=ADD, body=None, packed=None):
    """The negotiating exchange of a binary client: JSON with "@bin_": [], MessagePack back with @enc_."""
    headers = {"@bin_": [], **({"@pac_": True} if mode == "packed" else {})}
    answer_headers = {"@pac_": True} if mode == "packed" else None
    return exchange(sent(headers, {call[0]: call[1]}),
                    binary_answer(body or {"Ok_": {"result": 3}}, negotiating=True, headers=answer_headers))


def steady(mode, call=ADD, answer=None, encoding=ENCODING):
    """A later exchange: the checksum in @bin_; MessagePack with integer keys in binary-requests mode."""
    headers = {"@bin_": [encoding["checksum"]], **({"@pac_": True} if mode == "packed" else {})}
    if mode == "binary-requests":
        request = sent(headers, ids({call[0]: call[1]}, encoding), "msgpack")
    else:
        request = sent(headers, {call[0]: call[1]})
    return exchange(request, answer or binary_answer({"Ok_": {"result": 3}}, encoding=encoding))


BINARY_MODES = ("binary", "binary-requests", "packed")


def plain_cases():
    """JSON calls: the envelope, headers both ways, @time_, @id_."""
    envelope = ["service.one-call", "message.request-body", "message.two-objects", "transport.post", "client.envelope"]
    yield case("json/call", "A call is POSTed to the URL as [headers, {function: arguments}], and the Ok_ result "
               "comes back as the server sent it.", envelope, "json",
               [step(ADD, [exchange(sent({"@bin_": {"$absent": True}, "@pac_": {"$absent": True}},
                                         {"fn.add": {"x": 1, "y": 2}}), json_answer({"Ok_": {"result": 3}}))],
                     returns({"Ok_": {"result": 3}}))])
    yield case("json/headers", "Headers given to a call are sent, and the answer's headers are returned.",
               ["client.envelope", "headers.optional"], "json",
               [step((*ADD, {"@custom": [1, "a"], "@other": True}),
                     [exchange(sent({"@custom": [1, "a"], "@other": True}, {"fn.add": ADD[1]}),
                               json_answer({"Ok_": {"result": 3}}, {"@note": "hi"}))],
                     returns({"Ok_": {"result": 3}}, {"@note": "hi"}))])
    yield case("json/several-calls", "Successive calls each send their own message and return their own answer.",
               ["client.envelope", "service.one-call"], "json",
               [step(("fn.add", {"x": n, "y": n}), [exchange(sent({}, {"fn.add": {"x": n, "y": n}}),
                                                              json_answer({"Ok_": {"result": 2 * n}}))],
                     returns({"Ok_": {"result": 2 * n}})) for n in (1, 2, 3)])
    for timeout, millis in ((1, 1000), (2.5, 2500), (5, 5000)):
        yield case(f"time/{millis}", f"A client with a timeout of {timeout} s sends @time_ {millis}.",
                   ["client.time", "header.time"], "json",
                   [step(ADD, [exchange(sent({"@time_": millis}, {"fn.add": ADD[1]}), json_answer({"Ok_": {"result": 3}}))],
                         returns({"Ok_": {"result": 3}}))], timeout=timeout)
    for name, value in (("string", "call-7"), ("number", 42), ("structure", {"trace": [1, 2.5, None], "ok": True})):
        for mode in ("json", "binary"):
            answer = (json_answer({"Ok_": {"result": 3}}, {"@id_": value}) if mode == "json"
                      else binary_answer({"Ok_": {"result": 3}}, negotiating=True, headers={"@id_": value}))
            yield case(f"id/{name}/{mode}", f"An @id_ ({name}) is sent as given and comes back in the answer's headers.",
                       ["header.id", "client.envelope"], mode,
                       [step((*ADD, {"@id_": value}), [exchange(sent({"@id_": value}, {"fn.add": ADD[1]}), answer)],
                             returns({"Ok_": {"result": 3}}, {"@id_": value}))])


ERRORS = {  # a name -> an error result every client must hand back as it came
    "invalid-body": {"ErrorInvalidRequestBody_": {"cases": [
        {"path": ["fn.add", "x"], "reason": {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Number": {}}}}}]}},
    "invalid-headers": {"ErrorInvalidRequestHeaders_": {"cases": [
        {"path": ["@time_"], "reason": {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Integer": {}}}}}]}},
    "invalid-result": {"ErrorInvalidResponseBody_": {"cases": [
        {"path": ["Ok_", "result"], "reason": {"NumberOutOfRange": {}}}]}},
    "unknown": {"ErrorUnknown_": {"caseId": "3f2c6e9a-1b7d-4c8e-9f0a-5d6b7c8e9f01"}},
    "unauthenticated": {"ErrorUnauthenticated_": {"message!": "Valid authentication is required."}},
    "unauthorized": {"ErrorUnauthorized_": {}},
    "function-error": {"ErrorCannotDivideByZero": {}},
    "unavailable": UNAVAILABLE,
    "function-unknown": {"ErrorInvalidRequestBody_": {"cases": [{"path": ["fn.nope"], "reason": {"FunctionUnknown": {}}}]}},
}


def result_cases():
    """Every kind of error result is returned unchanged, in JSON and binary modes."""
    for name, error in ERRORS.items():
        yield case(f"results/{name}/json", "An error result is returned as the server sent it, not raised.",
                   ["message.response-body", "fn.results", "client.results"], "json",
                   [step(ADD, [exchange(sent({}, {"fn.add": ADD[1]}), json_answer(error))], returns(error))])
        yield case(f"results/{name}/binary", "In binary mode errors come as JSON, and are returned as they came.",
                   ["message.response-body", "binary.negotiate", "client.results"], "binary",
                   [step(ADD, [exchange(sent({"@bin_": []}, {"fn.add": ADD[1]}), json_answer(error))], returns(error))])
    yield case("results/error-keeps-checksum", "An error answer in the middle of binary calls leaves the negotiated "
               "encoding in place.", ["binary.checksum", "client.checksum", "client.results"], "binary",
               [step(ADD, [first_binary("binary")], returns({"Ok_": {"result": 3}})),
                step(ADD, [steady("binary", answer=json_answer(ERRORS["invalid-body"]))], returns(ERRORS["invalid-body"])),
                step(ADD, [steady("binary")], returns({"Ok_": {"result": 3}}))])


def binary_cases():
    """Negotiation, the steady state, integer keys, and a server whose encoding changes."""
    for mode in BINARY_MODES:
        yield case(f"binary/negotiate/{mode}", "The first binary call is JSON with \"@bin_\": [], and its MessagePack "
                   "answer, keys given in @enc_, is returned with names.",
                   ["binary.negotiate", "header.enc", "client.negotiate"], mode,
                   [step(ADD, [first_binary(mode)], returns({"Ok_": {"result": 3}}))])
        yield case(f"binary/steady/{mode}", "Later calls send the checksum the server gave, and read answers "
                   "without @enc_ with the encoding it gave before.",
                   ["binary.checksum", "client.checksum"] + (["client.integer-keys"] if mode == "binary-requests" else []),
                   mode, [step(ADD, [first_binary(mode)], returns({"Ok_": {"result": 3}})),
                          step(("fn.add", {"x": 5, "y": 6}), [steady(mode, ("fn.add", {"x": 5, "y": 6}),
                                                                    binary_answer({"Ok_": {"result": 11}}))],
                               returns({"Ok_": {"result": 11}}))])
    yield case("binary/keys-not-in-the-encoding", "Keys an answer leaves as text (the encoding does not know them) "
               "are read as they are.", ["client.negotiate", "conv.binary-encoding"], "binary",
               [step(ADD, [exchange(sent({"@bin_": []}, {"fn.add": ADD[1]}),
                                    {"msgpack": [{"@enc_": ENCODING["ids"], "@bin_": [ENCODING["checksum"]]},
                                                 {"#1": {"#15": 3, "extra!": {"deep": [1]}}}]})],
                     returns({"Ok_": {"result": 3, "extra!": {"deep": [1]}}}))], level="SHOULD")
    for mode in ("binary", "binary-requests"):
        yield case(f"renegotiate/new-encoding/{mode}", "When an answer brings a new @enc_ and checksum (the "
                   "server's schema changed), the client reads it with the new encoding and sends the new checksum.",
                   ["binary.renegotiate", "client.renegotiate"], mode,
                   [step(ADD, [first_binary(mode)], returns({"Ok_": {"result": 3}})),
                    step(ADD, [steady(mode, answer=binary_answer({"Ok_": {"result": 3, "total": 9}}, True, CHANGED))],
                         returns({"Ok_": {"result": 3, "total": 9}})),
                    step(ADD, [exchange(sent_after_change(mode), binary_answer({"Ok_": {"result": 3}}, encoding=CHANGED))],
                         returns({"Ok_": {"result": 3}}))])
    stale = {"ErrorParseFailure_": {"reasons": [{"IncompatibleBinaryEncoding": {}}]}}
    for mode in BINARY_MODES:
        yield case(f"renegotiate/stale-checksum/{mode}", "When the server refuses the checksum as stale, the client "
                   "negotiates again with \"@bin_\": [] and the call still succeeds.",
                   ["binary.renegotiate", "client.renegotiate"], mode,
                   [step(ADD, [first_binary(mode)], returns({"Ok_": {"result": 3}})),
                    step(ADD, [steady(mode, answer=json_answer(stale)),
                               exchange(sent({"@bin_": []}, {"fn.add": ADD[1]}),
                                        binary_answer({"Ok_": {"result": 3}}, True, CHANGED,
                                                      {"@pac_": True} if mode == "packed" else None))],
                         returns({"Ok_": {"result": 3}})),
                    step(ADD, [steady(mode, encoding=CHANGED, answer=binary_answer({"Ok_": {"result": 3}}, encoding=CHANGED))],
                         returns({"Ok_": {"result": 3}}))])


def sent_after_change(mode):
    """After an encoding change the new checksum must come first in @bin_ (the old one may follow), in a
    JSON request or a MessagePack one with the new ids."""
    checksums = {"$oneOf": [[CHANGED["checksum"]], [CHANGED["checksum"], {"$type": "integer"}]]}
    body = {"fn.add": ADD[1]}
    if mode != "binary-requests":
        return sent({"@bin_": checksums}, body)
    return {"wire": "any", "message": [{"$partial": {"@bin_": checksums}}, {"$oneOf": [body, ids(body, CHANGED)]}]}


def b64(data):
    return {"$bin": data}


def bytes_cases():
    """Bytes in every position: base64 marked by @base64_ on JSON, bin in MessagePack; bytes sent in requests."""
    item = {"name": "x", "price": 1, "data": b64("AQI=")}
    rows = [  # (name, Ok_ fields as the client must return them, the JSON wire's text, @base64_ marks)
        ("field", {"blob": b64("AQI=")}, {"blob": "AQI="}, {"blob": True}),
        ("empty", {"blob": b64("")}, {"blob": ""}, {"blob": True}),
        ("array", {"parts": [b64("AQI="), b64("/w==")]}, {"parts": ["AQI=", "/w=="]}, {"parts": {"*": True}}),
        ("map", {"named": {"a": b64("AQI=")}}, {"named": {"a": "AQI="}}, {"named": {"*": True}}),
        ("struct", {"item": item}, {"item": {**item, "data": "AQI="}}, {"item": {"data": True}}),
        ("union", {"choice": {"Blob": {"data": b64("/+8=")}}}, {"choice": {"Blob": {"data": "/+8="}}},
         {"choice": {"Blob": {"data": True}}}),
        ("nested", {"items": [{"data": b64("AQI=")}], "named": {"k": b64("")}},
         {"items": [{"data": "AQI="}], "named": {"k": ""}}, {"items": {"*": {"data": True}}, "named": {"*": True}}),
        ("unmarked-text", {"blob": "AQI="}, {"blob": "AQI="}, None),
    ]
    export = ("fn.export", {})
    for name, fields, wire, marks in rows:
        yield case(f"bytes/{name}/json", "Bytes come back as bytes: base64 text where @base64_ marks it "
                   + ("(and text where it does not)." if marks is None else "is decoded."),
                   ["header.base64", "conv.base64", "type.bytes", "client.bytes"], "json",
                   [step(export, [exchange(sent({}, {"fn.export": {}}),
                                           json_answer({"Ok_": wire}, {"@base64_": {"Ok_": marks}} if marks else None))],
                         returns({"Ok_": fields}))])
        if marks is not None:
            yield case(f"bytes/{name}/binary", "In MessagePack, bytes are bin values and come back as bytes.",
                       ["type.bytes", "binary.negotiate", "client.bytes"], "binary",
                       [step(export, [first_binary("binary", export, {"Ok_": fields})], returns({"Ok_": fields}))])
    for mode in ("json", "binary-requests"):
        arguments = {"blob": b64("AQI="), "parts": [b64("/w==")]}
        if mode == "json":
            exchanges = [exchange(sent({}, {"fn.export": {"blob": "AQI=", "parts": ["/w=="]}}),
                                  json_answer({"Ok_": {}}))]
            steps = [step(("fn.export", arguments), exchanges, returns({"Ok_": {}}))]
        else:
            steps = [step(ADD, [first_binary(mode)], returns({"Ok_": {"result": 3}})),
                     step(("fn.export", arguments), [steady(mode, ("fn.export", arguments), binary_answer({"Ok_": {}}))],
                          returns({"Ok_": {}}))]
        yield case(f"bytes/in-requests/{mode}", "Bytes given as arguments are sent as base64 text on JSON, and as "
                   "bin values in MessagePack.", ["type.bytes", "client.bytes"], mode, steps)


def packed_cases():
    """Packed answers (@pac_): rows, missing cells, nested headers."""
    rows = [  # (name, the packed array in the answer, as names, what the client must return, what it shows)
        ("rows", [{"$ext": [17, ""]}, [None, "name", "price", "note!"], ["tea", 2.5], ["cake", 4, "fresh"]], ITEMS,
         "Rows follow the header row; a trailing missing value is left off."),
        ("undefined-cell", [{"$ext": [17, ""]}, [None, "name", "note!", "price"], ["tea", {"$ext": [18, ""]}, 2.5]],
         [{"name": "tea", "price": 2.5}], "A missing value before the end of a row is Ext 18."),
        ("nested-header", [{"$ext": [17, ""]}, [None, "name", ["item", "name", "price"]], ["a", ["b", 1]], ["c", ["d"]]],
         [{"name": "a", "item": {"name": "b", "price": 1}}, {"name": "c", "item": {"name": "d"}}],
         "A field holding maps gets a nested header, and its cells are rows."),
        ("empty", [], [], "An empty array stays empty."),
    ]
    for name, packed, items, description in rows:
        yield case(f"packed/{name}", description, ["header.bin", "client.packed"], "packed",
                   [step(("fn.list", {}), [exchange(sent({"@bin_": [], "@pac_": True}, {"fn.list": {}}),
                                                    {"msgpack": [{"@pac_": True, "@enc_": ENCODING["ids"],
                                                                  "@bin_": [ENCODING["checksum"]]},
                                                                 ids({"Ok_": {"items": packed}})]})],
                         returns({"Ok_": {"items": items}}))], level="SHOULD")


FAILURES = [  # (name, the scripted answer, what it is)
    ("http-500", {"status": 500, "text": "Internal Server Error", "contentType": "text/plain"}, "an HTTP 500"),
    ("http-404", {"status": 404, "text": "Not Found", "contentType": "text/plain"}, "an HTTP 404"),
    ("http-503", {"status": 503, "text": "", "contentType": "text/plain"}, "an HTTP 503 with no body"),
    ("garbage", {"text": "hello, world", "contentType": "application/json"}, "text that is not JSON"),
    ("html", {"text": "<html><body>Welcome</body></html>", "contentType": "text/html"}, "an HTML page"),
    ("json-not-a-message", {"text": "{\"a\": 1}", "contentType": "application/json"}, "JSON that is not a message"),
    ("result-not-an-object", {"text": "[{}, {\"Ok_\": 5}]", "contentType": "application/json"},
     "a message whose result tag holds no object"),
    ("two-results", {"text": "[{}, {\"Ok_\": {\"result\": 3}, \"ErrorX\": {}}]", "contentType": "application/json"},
     "a message of two result tags"),
    ("marked-not-base64", {"text": "[{\"@base64_\": {\"Ok_\": {\"result\": true}}}, {\"Ok_\": {\"result\": \"no base64!\"}}]",
                           "contentType": "application/json"}, "text @base64_ marks as bytes that is not base64"),
    ("truncated-json", {"text": "[{}, {\"Ok_\": {\"res", "contentType": "application/json"}, "JSON cut short"),
    ("truncated-msgpack", {"base64": "koGlQGJpbl+RzjWl", "contentType": "application/octet-stream"},
     "MessagePack cut short"),
    ("empty", {"text": "", "contentType": "application/json"}, "an empty body"),
    ("closed", {"close": True}, "a connection closed without an answer"),
    ("stall", {"stall": True}, "no answer at all"),
    ("stall-after-headers", {"stall": "body"}, "headers, then nothing"),
    ("trickle", {"stall": "trickle"}, "a body sent a byte at a time, too slowly to end within the timeout"),
]


def failure_cases():
    """A server that answers garbage, an HTTP error, or nothing: a clear error within the timeout."""
    for name, answer, what in FAILURES:
        for mode in ("json", "binary"):
            first = {"@bin_": []} if mode == "binary" else {}
            yield case(f"failures/{name}/{mode}", f"Given {what}, the client reports an error within its timeout.",
                       ["client.failures"], mode, [step(ADD, [exchange(sent(first, {"fn.add": ADD[1]}), answer)], FAILED)],
                       timeout=0.5)
    yield case("failures/unknown-encoding", "A MessagePack answer in an encoding the client was never given "
               "(no @enc_, an unknown checksum) is an error.", ["client.failures", "client.negotiate"], "binary",
               [step(ADD, [exchange(sent({"@bin_": []}, {"fn.add": ADD[1]}), binary_answer({"Ok_": {"result": 3}}))],
                     FAILED)], timeout=0.5)
    yield case("failures/wrong-content-type", "A message labelled with the wrong media type is still read: the first "
               "byte says JSON or MessagePack.", ["client.envelope", "conv.http"], "json",
               [step(ADD, [exchange(sent({}, {"fn.add": ADD[1]}),
                                    {"text": "[{}, {\"Ok_\": {\"result\": 3}}]", "contentType": "text/plain"})],
                     returns({"Ok_": {"result": 3}}))], level="SHOULD")
    yield case("failures/recovers", "After a failed call the client works again.", ["client.failures"], "json",
               [step(ADD, [exchange(sent({}, {"fn.add": ADD[1]}), {"close": True})], FAILED),
                step(ADD, [exchange(sent({}, {"fn.add": ADD[1]}), json_answer({"Ok_": {"result": 3}}))],
                     returns({"Ok_": {"result": 3}}))], timeout=0.5)
