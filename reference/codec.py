"""The envelope codec: message bytes to `[headers, body]` and back, in JSON or MessagePack.

How this works
--------------
A message is a two-element array `[headers, body]`. Bytes that start with
0x92 (a MessagePack array of two) are MessagePack; anything else is JSON.
`decode()` returns the headers and body or raises `ParseFailure` with the
reason the protocol reports; `encode()` turns a message into bytes.

JSON carries bytes as base64 strings. The server decodes them using the schema
(`validate.decode_bytes`); on the way out, `to_base64()` encodes them and
builds the `@base64_` header that tells the client where they were.

MessagePack messages are negotiated (`@bin_`) and smaller, because every map
key of the body that the schema knows is replaced by a small integer. The
`Encoding` of a schema lists those keys: every function name, and every field
and tag name reachable from a function's arguments or its `Ok_` result, sorted
by code point and numbered from 0. Its checksum, a signed CRC-32 of the names
joined by newlines, names the encoding: a request whose first `@bin_` checksum
is not the server's cannot be read. Packed mode (`@pac_`) further turns an
array of maps into a header row of keys and rows of values (see `pack`).

Nesting is limited to `MAX_DEPTH` levels on both wires, the MessagePack
library's own limit, so no message can exhaust the stack later on.
"""

import base64
import json
import math
import re
import sys
import zlib
from itertools import accumulate
from typing import NamedTuple

import msgpack

from .types import Type, Union, reachable

MAX_DEPTH = 1024  # levels of arrays and objects in one message
# Parsing, validating and encoding recurse once or twice per level (json's C code
# counts against the same limit), so a message MAX_DEPTH deep needs more than
# Python's default of 1000.
sys.setrecursionlimit(max(sys.getrecursionlimit(), 4 * MAX_DEPTH + 1000))
PACKED, UNDEFINED = msgpack.ExtType(17, b""), msgpack.ExtType(18, b"")
PLAIN = {str, int, bool, bytes, type(None)}  # values MessagePack gives that need no second look
JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # linear on valid JSON
NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
NESTING = [0] * 256  # what each bracket does to the depth
NESTING[ord("[")] = NESTING[ord("{")] = 1
NESTING[ord("]")] = NESTING[ord("}")] = -1
SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the escape of half a UTF-16 pair


class ParseFailure(Exception):
    """The bytes are not a message; `reason` is its `union.ParseFailure_` value."""

    def __init__(self, tag, data=None):
        super().__init__(tag)
        self.reason = {tag: data or {}}


class Encoding(NamedTuple):
    """A schema's binary encoding: key name to id, id to key name, and checksum."""

    ids: dict
    names: list
    checksum: int


def encoding(schema):
    """The binary encoding of `schema`'s function names and reachable field and tag names."""
    keys = set()
    for name, function in schema.functions.items():
        keys.update((name, "Ok_"))
        for struct in (function.arguments, function.result.tags["Ok_"]):
            for node in reachable(struct):
                keys.update(node.tags if isinstance(node, Union) else node.fields)
    names = sorted(keys)
    crc = zlib.crc32("\n".join(names).encode())
    return Encoding({name: i for i, name in enumerate(names)}, names,
                    crc - 2**32 if crc >= 2**31 else crc)


def decode(data, encoding):
    """Read a request: return (headers, body), or raise ParseFailure."""
    if data[:1] == b"\x92":
        headers, body = read_binary(data)
        checksums = headers.get("@bin_")
        if type(checksums) is not list or not checksums or checksums[0] != encoding.checksum:
            raise ParseFailure("IncompatibleBinaryEncoding")
        body = from_binary(body, encoding.names, headers.get("@pac_") is True)
    else:
        headers, body = read_json(data)
    if len(body) != 1 or type(next(iter(body.values()))) is not dict:
        raise ParseFailure("ExpectedJsonArrayOfAnObjectAndAnObjectOfOneObject")
    return headers, body


def read_json(data):
    """Parse JSON message bytes into (headers, body), or raise ParseFailure.

    Refused as not JSON, beside bad syntax: NaN and Infinity, numbers too large
    for a float, and strings holding half of a UTF-16 surrogate pair (no wire
    could carry them on). Nesting is measured only for a message with more
    brackets than MAX_DEPTH, after parsing, when every string is known to end."""
    try:
        message = DECODER.decode(data.decode())
        if b"\\u" in data and SURROGATE.search(data):  # rare: then check that every string can be UTF-8
            json.dumps(message, ensure_ascii=False).encode()
    except RecursionError:  # deeper than the interpreter's stack allows
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH}) from None
    except ValueError:  # UnicodeDecodeError and UnicodeEncodeError included
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects") from None
    if data.count(b"[") + data.count(b"{") > MAX_DEPTH and _json_depth(data) > MAX_DEPTH:
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH})
    return _two_objects(message)


def _json_depth(data):
    """The deepest nesting of arrays and objects in a valid JSON text, in linear time."""
    brackets = JSON_STRING.sub(b"", data).translate(None, NOT_BRACKETS)
    return max(accumulate(map(NESTING.__getitem__, brackets)), default=0)


def _finite(text):
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is too large for a float")
    return number


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


def _base64_text(value):
    """Bytes where `@base64_` cannot mark them (in headers) still travel, as base64."""
    if type(value) is bytes:
        return base64.b64encode(value).decode()
    raise TypeError(f"{type(value).__name__} is not a JSON value")


# Made once: json.loads and json.dumps build new ones for every call given options.
DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)
ENCODER = json.JSONEncoder(allow_nan=False, default=_base64_text)


def _two_objects(message):
    if type(message) is not list or len(message) != 2:
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects")
    headers, body = message
    if type(headers) is not dict or type(body) is not dict:
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects")
    return headers, body


def read_binary(data):
    """Unpack MessagePack message bytes into (headers, body); body keys are still ids."""
    try:
        message = msgpack.unpackb(data, strict_map_key=False)
    except msgpack.StackError:
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH}) from None
    except Exception:  # the library raises many types for malformed input
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects") from None
    headers, body = _two_objects(message)
    return from_binary(headers, None, False), body


def encoding_from(ids, checksum):
    """The Encoding that an `@enc_` header describes."""
    return Encoding(ids, sorted(ids, key=ids.get), checksum)


def from_binary(value, names, unpack):
    """Undo key substitution (and packing) in a decoded MessagePack value.

    Also refuses what JSON could not carry either: non-finite floats, foreign
    extension types, and map keys that are neither names nor known ids."""
    kind = type(value)
    if kind is dict:
        plain = {}
        for key, element in value.items():
            if type(key) is int and names is not None and 0 <= key < len(names):
                key = names[key]
            elif type(key) is not str:
                raise ParseFailure("BinaryDecodeFailure")
            plain[key] = from_binary(element, names, unpack)
        return plain
    if kind is list:
        if unpack and value and value[0] == PACKED:
            value = unpack_rows(value)
        if set(map(type, value)) <= PLAIN:  # nothing to undo or refuse inside: keep it as it is
            return value
        return [from_binary(element, names, unpack) for element in value]
    if kind is float and not math.isfinite(value):
        raise ParseFailure("BinaryDecodeFailure")
    if kind in (str, int, float, bool, bytes) or value is None:
        return value
    raise ParseFailure("BinaryDecodeFailure")


def encode(message, encoding=None, packed=False):
    """Serialize a message: MessagePack when an encoding is given, JSON otherwise."""
    if encoding is None:
        return ENCODER.encode(message).encode()
    headers, body = message
    body = _substitute(body, encoding.ids)
    return msgpack.packb([headers, pack(body) if packed else body])


def _substitute(value, ids):
    """Replace every map key the encoding knows with its integer id, at any depth."""
    kind = type(value)
    if kind is dict:
        return {ids.get(key, key): _substitute(element, ids) for key, element in value.items()}
    if kind is list:
        return [_substitute(element, ids) for element in value]
    return value


def pack(value):
    """Pack every array of integer-keyed maps into a header and rows of values.

    `[{1: "a", 2: 5}, {1: "b"}]` becomes `[Ext17, [None, 1, 2], ["a", 5], ["b"]]`:
    the header lists the keys, in the order first seen, and each row the values
    in header order. A value that is itself a map gets a nested header
    `[key, ...]`; a cell missing before the end of a row is `Ext18`, and
    trailing missing cells are left off. Arrays that do not fit are kept."""
    if type(value) is dict:
        return {key: pack(element) for key, element in value.items()}
    if type(value) is not list:
        return value
    header = _header(value) if value else None
    if header is None:
        return [pack(element) for element in value]
    return [PACKED, [None, *header], *(_row(element, header) for element in value)]


def _header(rows):
    """The columns for a list of maps, or None when the maps cannot be packed."""
    columns = {}  # key -> the values seen under it
    for row in rows:
        if type(row) is not dict or any(type(key) is not int for key in row):
            return None
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    header = []
    for key, values in columns.items():
        maps = sum(type(value) is dict for value in values)
        if maps == 0:
            header.append(key)
        elif maps < len(values) or (nested := _header(values)) is None:
            return None
        else:
            header.append([key, *nested])
    return header


def _row(row, header):
    cells, missing = [], 0
    for column in header:
        key = column[0] if type(column) is list else column
        if key not in row:
            missing += 1
            continue
        cells += [UNDEFINED] * missing
        missing = 0
        value = row[key]
        cells.append(_row(value, column[1:]) if type(column) is list else pack(value))
    return cells


def unpack_rows(packed):
    """Turn a packed array back into a list of maps (the inverse of `pack`)."""
    if len(packed) < 2 or type(packed[1]) is not list:
        raise ParseFailure("BinaryDecodeFailure")
    header = packed[1][1:]
    return [_unrow(row, header) for row in packed[2:]]


def _unrow(row, header):
    if type(row) is not list or len(row) > len(header):
        raise ParseFailure("BinaryDecodeFailure")
    value = {}
    for column, cell in zip(header, row):
        key = column[0] if type(column) is list and column else column
        if type(key) not in (int, str):  # a header cell is a key, or a nested header [key, ...]
            raise ParseFailure("BinaryDecodeFailure")
        if cell != UNDEFINED:
            value[key] = _unrow(cell, column[1:]) if type(column) is list else cell
    return value


def to_base64(value, type_=None):
    """Return `value` with bytes as base64 strings, and the `@base64_` map of where they were.

    The map mirrors the value: `true` marks bytes, and `"*"` stands for every
    element of an array or every value of a map (so the type, when known,
    tells a map from a struct). Nulls and empty collections leave no mark.
    The map is None when there are no bytes."""
    kind = type_.kind if type_ else "any"
    if type(value) is bytes:
        return base64.b64encode(value).decode(), True
    if type(value) is list:
        items = [to_base64(element, type_.of if kind == "array" else None) for element in value]
        every = _merge([mark for _, mark in items if mark is not None])
        return [element for element, _ in items], {"*": every} if every else None
    if type(value) is not dict:
        return value, None
    if kind == "map":
        items = {key: to_base64(element, type_.of) for key, element in value.items()}
        every = _merge([mark for _, mark in items.values() if mark is not None])
        return {key: element for key, (element, _) in items.items()}, {"*": every} if every else None
    if kind in ("union", "fn") and len(value) == 1:
        [(tag, fields)] = value.items()
        struct = type_.of.tags.get(tag)
        items = {tag: to_base64(fields, struct and Type("struct", False, struct))}
    else:
        fields = type_.of.fields if kind == "struct" else {}
        items = {key: to_base64(element, fields.get(key)) for key, element in value.items()}
    marks = {key: mark for key, (_, mark) in items.items() if mark is not None}
    return {key: element for key, (element, _) in items.items()}, marks or None


def holds_bytes(value):
    """Whether there are bytes anywhere in `value`."""
    if type(value) is bytes:
        return True
    if type(value) is list:
        return any(map(holds_bytes, value))
    if type(value) is dict:
        return any(map(holds_bytes, value.values()))
    return False


def _merge(marks):
    if not marks or any(mark is True for mark in marks):
        return True if marks else None
    merged = {}
    for mark in marks:
        for key, inner in mark.items():
            merged[key] = _merge([merged[key], inner]) if key in merged else inner
    return merged


def from_base64(value, marks):
    """Decode the base64 strings at the places an `@base64_` map marks (for clients)."""
    if marks is True:
        return base64.b64decode(value) if type(value) is str else value
    if type(marks) is not dict:
        return value
    if type(value) is list and "*" in marks:
        return [from_base64(element, marks["*"]) for element in value]
    if type(value) is dict:
        every = marks.get("*")
        return {key: from_base64(element, marks.get(key, every)) for key, element in value.items()}
    return value
