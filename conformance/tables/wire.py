"""Families of cases about what travels exactly as our conventions say, on the testbed: numbers
written as text, the binary encoding and its checksums, which keys become integers, and the
nesting limit. Each is a place where an implementation could answer otherwise and still pass
every other case.
"""

import base64
import json

import msgpack

from ..language.schema import Schema
from .extras import NEGOTIATED, NEGOTIATION
from .testbed import case, echo, error, schema, step, unexpected

RANGE = {"NumberOutOfRange": {}}
# The stock functions, whose names and fields are in every encoding (PROTOCOL.md, appendix A).
STOCK = [{"fn.ping_": {}, "->": [{"Ok_": {}}]},
         {"fn.api_": {"includeInternal!": "boolean", "includeExamples!": "boolean"},
          "->": [{"Ok_": {"api": [{"string": "any"}]}}]}]


def encoding(entries):
    """The binary encoding of a schema (PROTOCOL.md, section 8), as the suite reads it (language/schema.py): each
    name reachable from a function's arguments and Ok_ numbered from 0, and the checksum."""
    names, crc = Schema(entries).encoding()
    return {name: index for index, name in enumerate(names)}, crc


IDS, CHECKSUM = encoding(schema() + STOCK)


def raw(value):
    """A body as MessagePack carries it: every key the encoding knows as its id, "#12"."""
    if type(value) is dict:
        return {(f"#{IDS[key]}" if key in IDS else key): raw(element) for key, element in value.items()}
    return [raw(element) for element in value] if type(value) is list else value


def number_cases():
    """Numbers written in ways JSON allows, in every position a value can take."""
    positions = {  # position -> (a message with KIND for the field's kind and TOKEN for the number, the path of
        # a problem, the error, what else the position cites)
        "argument": ('[{}, {"fn.echo": {"KIND!": TOKEN}}]', ["fn.echo", "KIND!"], "ErrorInvalidRequestBody_", []),
        "nested": ('[{}, {"fn.echo": {"every!": {"KIND!": TOKEN}}}]', ["fn.echo", "every!", "KIND!"],
                   "ErrorInvalidRequestBody_", ["type.struct"]),
        "array-element": ('[{}, {"fn.echo": {"KINDArr!": [TOKEN]}}]', ["fn.echo", "KINDArr!", 0],
                          "ErrorInvalidRequestBody_", ["type.array"]),
        "map-value": ('[{}, {"fn.echo": {"KINDMap!": {"k": TOKEN}}}]', ["fn.echo", "KINDMap!", "k"],
                      "ErrorInvalidRequestBody_", ["type.map"]),
        "result": ('[{"@result": {"Ok_": {"KIND!": TOKEN}}}, {"fn.echo": {}}]', ["Ok_", "KIND!"],
                   "ErrorInvalidResponseBody_", ["conv.response-validation"]),
        "request-header": ('[{"@KIND": TOKEN}, {"fn.echo": {}}]', ["@KIND"], "ErrorInvalidRequestHeaders_",
                           ["conv.header-types"]),
    }
    tokens = [  # (name, the token, its value (None: out of range), whether an integer field takes it, who judges)
        ("exponent", "1e2", 100, False, ["conv.int64"]),
        ("exponent-signed", "1E+2", 100, False, ["conv.int64"]),
        ("fraction-zero", "2.0", 2, False, ["conv.int64"]),
        ("negative-zero", "-0", 0, True, []),
        ("beyond-doubles", "9007199254740993", 9007199254740993, True, ["conv.int64"]),
        ("largest", "9223372036854775807", 2**63 - 1, True, ["conv.int64"]),
        ("past-64-bits", "18446744073709551616", None, False, ["conv.int64"]),
        ("far-past-64-bits", "-1" + "0" * 30, None, False, ["conv.int64"]),
    ]
    for name, token, value, whole, judged in tokens:
        for kind, requirement in (("int", "type.integer"), ("num", "type.number")):
            for position, (template, path, tag, cites) in positions.items():
                template = template.replace("KIND", kind)
                text = template.replace("TOKEN", token)
                # (the answer echoes the value; a header is not echoed)
                sent = json.loads(template.replace("TOKEN", json.dumps(value)))
                fields = {} if position == "request-header" else sent[0].get("@result", {"Ok_": sent[1]["fn.echo"]})["Ok_"]
                reason = RANGE if value is None else unexpected("Number", "Integer")
                refused = error(tag, ([key.replace("KIND", kind) if type(key) is str else key for key in path], reason))
                refusal = [requirement, *cites, *judged, "case.path", "conv.path-format", "conv.reasons"]
                if value is None or whole or kind == "num":
                    taken = value is not None
                    response = {"message": echo(fields) if taken else refused}
                    rules, said = [requirement, *cites, *judged] if taken else refusal, \
                        "taken, every digit kept" if taken else "refused"
                else:  # a whole number written as no integer is: the spec's words allow either
                    response = {"either": [{"message": refused}, {"message": echo(fields)}]}
                    rules, said = refusal, "refused as written with no integer's form (ours), or taken as the whole number"
                yield case(f"testbed/numbers/{name}/{kind}/{position}",
                           f"The number {token} in {'an' if kind == 'int' else 'a'} {kind} field, as "
                           f"{position.replace('-', ' ')}: {said}.", rules, [{"request": {"text": text}, "response": response}],
                           spec=not judged)


def wire_cases():
    """The encoding of the testbed, the keys that become integers, checksums, and the nesting limit."""
    binary = ["binary.negotiate", "header.bin", "header.enc", "conv.binary-encoding"]
    yield case("testbed/binary/encoding", "The encoding numbers the sorted names reachable from every function's "
               "arguments and Ok_, and the checksum is the signed CRC-32 of them.", binary,
               [step([{"@bin_": []}, {"fn.ping_": {}}], [{"@enc_": IDS, "@bin_": [CHECKSUM]}, {"Ok_": {}}],
                     wire="msgpack", spec=NEGOTIATION)])
    keys = {"strMap!": {"x": "a", "int!": "b", "zz": "c"}, "any!": {"title!": [{"y": 1}], "qq": 2}}
    yield case("testbed/binary/keys/every-known-key", "Every map key the encoding knows becomes its id, at any depth, "
               "in maps and in any values too; other keys stay text.", [*binary, "type.any", "type.map"],
               [step([{"@bin_": [CHECKSUM]}, {"fn.echo": keys}], [{"@bin_": [CHECKSUM]}, raw({"Ok_": keys})],
                     wire="msgpack", raw=True, spec={"wire": "msgpack"})])
    checksums = ["binary.checksum", "header.bin", "conv.checksums"]
    yield case("testbed/binary/checksums/json-anywhere", "A JSON request whose @bin_ holds the current checksum "
               "anywhere gets an answer without @enc_.", checksums,
               [step([{"@bin_": [12345, CHECKSUM]}, {"fn.ping_": {}}], [{"@bin_": [CHECKSUM]}, raw({"Ok_": {}})],
                     wire="msgpack", raw=True, spec={"wire": "msgpack"})])
    yield case("testbed/binary/checksums/json-unknown", "A JSON request whose @bin_ holds only checksums the server "
               "does not have is negotiated afresh.", checksums,
               [step([{"@bin_": [12345]}, {"fn.ping_": {}}], [NEGOTIATED, {"Ok_": {}}], wire="msgpack",
                     spec=NEGOTIATION)])
    yield case("testbed/binary/checksums/messagepack-first", "A MessagePack request is read when the current checksum "
               "is first in its @bin_.", checksums,
               [{"request": {"msgpack": [{"@bin_": [CHECKSUM, 12345]}, raw({"fn.echo": {"int!": 1}})]},
                 "response": {"wire": "msgpack", "raw": True, "message": [{"@bin_": [CHECKSUM]}, raw({"Ok_": {"int!": 1}})]}}])
    yield case("testbed/binary/checksums/messagepack-not-first", "A MessagePack request whose first @bin_ checksum is "
               "not the current one cannot be read, wherever else the current one is.", [*checksums, "conv.parse-failure"],
               [{"request": {"msgpack": [{"@bin_": [12345, CHECKSUM]}, raw({"fn.echo": {"int!": 1}})]},
                 "response": {"message": [{}, {"ErrorParseFailure_": {"reasons": [{"IncompatibleBinaryEncoding": {}}]}}]}}])
    nesting = ["conv.nesting", "conv.no-crash", "header.id"]
    # Read, the answer may be MessagePack, keys as ids, or JSON, if MessagePack cannot carry it back; with no
    # limit declared, a message read or refused as unreadable, in any words, is as good.
    read = [{"$partial": {"@id_": {"$type": "array"}}}, {"$oneOf": [{"Ok_": {}}, raw({"Ok_": {}})]}]
    refused = [{}, {"ErrorParseFailure_": {"reasons": [{"NestingTooDeep": {"limit": {"$limit": "depth"}}}]}}]
    either = {"either": [{"message": read}, {"message": [{}, {"ErrorParseFailure_": {"reasons": {"$type": "array"}}}]}]}
    for where, past in (("at", 0), ("past", 1)):
        depth = {"$limit": "depth", "plus": past - 2}  # the message's array and its headers object are two levels
        what = "refused with NestingTooDeep, which names the limit" if past else "read"
        yield case(f"testbed/nesting/json-{where}-the-limit", f"A JSON message as deep as the depth limit the target "
                   f"declared{', and one more level,' if past else ''} is {what} (with none declared, read or refused).",
                   nesting, [{"request": {"repeated": [['[{"@id_": ', 1], ["[", depth], ["]", depth],
                                                       ['}, {"fn.ping_": {}}]', 1]]},
                              "response": {"message": refused if past else read}, "undeclared": either}],
                   spec=False, limits=["depth"])
        # MessagePack: a fixarray of one element, 0x91, depth - 1 times around an empty one, 0x90
        head = b"\x92\x82" + msgpack.packb("@bin_") + msgpack.packb([CHECKSUM]) + msgpack.packb("@id_")
        pieces = [[head, 1], [b"\x91", {**depth, "plus": past - 3}], [b"\x90" + msgpack.packb({IDS["fn.ping_"]: {}}), 1]]
        yield case(f"testbed/nesting/messagepack-{where}-the-limit", f"A MessagePack message as deep as the depth limit "
                   f"the target declared{', and one more level,' if past else ''} is {what} (with none declared, read "
                   f"or refused).", [*nesting, "conv.checksums"],
                   [{"request": {"repeated": [[{"$bin": base64.b64encode(piece).decode()}, count] for piece, count in pieces]},
                     "response": {"message": refused if past else read, "raw": True},
                     "undeclared": {"either": [{**option, "raw": True} for option in either["either"]]}}],
                   spec=False, limits=["depth"])
    unreadable = [{"ErrorParseFailure_": {"reasons": [{"ExpectedJsonArrayOfTwoObjects": {}}]}}]
    for name, text, what in (("number-too-large", '[{}, {"fn.echo": {"num!": 1e400}}]', "a number too large for a double"),
                             ("lone-surrogate", '[{}, {"fn.echo": {"str!": "\\ud800"}}]', "half of a surrogate pair"),
                             ("nan", '[{}, {"fn.echo": {"num!": NaN}}]', "NaN")):
        yield case(f"testbed/parse/{name}", f"A message holding {what} is not JSON, so it cannot be read.",
                   ["message.two-objects", "conv.parse-failure"],
                   [{"request": {"text": text}, "response": {"message": [{}, *unreadable]}}])
    yield case("testbed/select/unknown-function", "A selection for a function the schema lacks is checked as if "
               "the function had no result fields, before the function is looked for.",
               ["header.select", "conv.select-rules", "conv.order-of-checks"],
               [step([{"@select_": {"->": {"Ok_": ["x"]}}}, {"fn.nope": {}}],
                     error("ErrorInvalidRequestHeaders_", (["@select_", "->", "Ok_", 0], {"ArrayElementDisallowed": {}})))])
    yield case("testbed/headers/id-null", "A null @id_ is refused like any header of the wrong type (any is never "
               "null), and so it is not echoed.", ["header.id", "conv.any-null", "conv.header-types"],
               [step([{"@id_": None}, {"fn.ping_": {}}],
                     error("ErrorInvalidRequestHeaders_", (["@id_"], unexpected("Null", "Any"))))])
    yield case("testbed/headers/pac-echoed-on-json", "With @bin_, @pac_ is echoed once the function is known, on a "
               "JSON error answer too.", ["conv.packing", "conv.binary-errors"],
               [step([{"@bin_": [], "@pac_": True}, {"fn.echo": {"int!": "x"}}],
                     [{"@pac_": True}, {"ErrorInvalidRequestBody_": {"cases": [
                         {"path": ["fn.echo", "int!"], "reason": unexpected("String", "Integer")}]}}])])
    yield case("testbed/binary/packed/row-too-long", "A packed request whose row holds more cells than its header "
               "has keys cannot be read.", ["conv.packing", "conv.parse-failure"],
               [{"request": {"msgpack": [{"@bin_": [CHECKSUM], "@pac_": True},
                                         raw({"fn.echo": {"pointArr!": [{"$ext": [17, ""]}, [None, "x", "y"], [1, 2, 3]]}})]},
                 "response": {"message": [{}, {"ErrorParseFailure_": {"reasons": [  # (the other implementation's reason)
                     {"$oneOf": [{"BinaryDecodeFailure": {}}, {"ExpectedJsonArrayOfTwoObjects": {}}]}]}}]}}])
    yield case("testbed/headers/pac-without-bin", "@pac_ without @bin_ does nothing, and is not echoed.",
               ["conv.packing"], [step([{"@pac_": True}, {"fn.echo": {"int!": 1}}], echo({"int!": 1}))])
