"""The envelope codec: message bytes to `[headers, body]` and back, in JSON or MessagePack.

How this works
--------------
A message is a two-element array `[headers, body]`. Bytes that start with
0x92 (a MessagePack array of two) are MessagePack, anything else JSON (which
carries bytes as base64 text: see blobs.py). `decode()` returns the headers
and body or raises `ParseFailure` with the reason; `encode()` makes bytes.

MessagePack is negotiated (`@bin_`) and smaller: every key of the body that
the schema knows becomes a small integer. A schema's `Encoding` lists those
keys (every function name, and every field and tag name reachable from a
function's arguments or `Ok_` result) sorted by code point and numbered from
0; its checksum, a signed CRC-32 of the names joined by newlines, names it.
A request whose first `@bin_` checksum is not the server's cannot be read.
Packed mode (`@pac_`) also turns an array of maps into a header row of keys
and rows of values (see `_header`).

Decoding works in place and encoding writes as it walks, so a message is in
memory once. Nesting is limited to `MAX_DEPTH` levels on both wires (the
MessagePack library's own limit); handling such a message recurses deeper
than Python's default limit, so whoever handles messages calls
`allow_depth()` once.
"""

import json
import math
import re
import sys
import zlib
from itertools import accumulate
from typing import NamedTuple

import msgpack

from . import blobs
from .types import Union, reachable

MAX_DEPTH = 1024  # levels of arrays and objects in one message
FRAMES = 4 * MAX_DEPTH + 1000  # the recursion such a message needs: a few frames a level, and room
PACKED, UNDEFINED = msgpack.ExtType(17, b""), msgpack.ExtType(18, b"")


def allow_depth():
    """Let Python recurse as deeply as a message MAX_DEPTH deep needs (a process-wide setting)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), FRAMES))


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
    could carry them on). Nesting is measured after parsing, when every string
    is known to end."""
    try:
        message = DECODER.decode(data.decode())
        if _may_hold_surrogates(data):  # (a fast path: see the end of the module)
            json.dumps(message, ensure_ascii=False).encode()  # which fails on half a pair
    except RecursionError:  # deeper than the interpreter's stack allows
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH}) from None
    except ValueError:  # UnicodeDecodeError and UnicodeEncodeError included
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects") from None
    if _deeper(data, MAX_DEPTH):  # (read off the text, a fast path: see the end of the module)
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH})
    return _two_objects(message)


def _finite(text):
    number = float(text)
    if math.isinf(number):
        raise ValueError(f"{text} is too large for a float")
    return number


def _reject_constant(name):
    raise ValueError(f"{name} is not JSON")


# Made once: json.loads and json.dumps build new ones for every call given options.
DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite)
ENCODER = json.JSONEncoder(allow_nan=False, default=blobs.as_text)


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
    extension types, and map keys that are neither names nor known ids. It
    works in place, on a value nothing else holds (what `msgpack.unpackb` just
    made): each map it renames replaces the old one at once, so the message is
    in memory once, not twice."""
    kind = type(value)
    if kind is dict:
        if not all(type(key) is str for key in value):
            value = {_name(key, names): element for key, element in value.items()}
        for key, element in value.items():
            if type(element) not in PLAIN:
                value[key] = from_binary(element, names, unpack)
        return value
    if kind is list:
        if unpack and value and value[0] == PACKED:
            value = unpack_rows(value)
        if not _plain(value):  # (a fast path: see the end of the module)
            for index, element in enumerate(value):
                value[index] = from_binary(element, names, unpack)
        return value
    if kind is float and not math.isfinite(value):
        raise ParseFailure("BinaryDecodeFailure")
    if kind in PLAIN or kind is float:
        return value
    raise ParseFailure("BinaryDecodeFailure")


def _name(key, names):
    if type(key) is int and names is not None and 0 <= key < len(names):
        return names[key]
    if type(key) is not str:
        raise ParseFailure("BinaryDecodeFailure")
    return key


def encode(message, encoding=None, packed=False):
    """Serialize a message: MessagePack given an encoding, else JSON (ValueError or TypeError: unreadable)."""
    if encoding is None:
        data = ENCODER.encode(message).encode()
        if _deeper(data, MAX_DEPTH):  # (read off the text, a fast path: see the end of the module)
            raise ValueError(f"the message nests deeper than {MAX_DEPTH} levels")
        return data
    headers, body = message
    packer = msgpack.Packer(autoreset=False)  # which collects what it packs in one buffer
    packer.pack_array_header(2)
    _write(headers, {}, False, packer)
    _write(body, encoding.ids, packed, packer)
    return packer.bytes()


def _write(value, ids, packed, packer, depth=2):
    """Pack `value` into `packer`, every map key the encoding knows as its id and, if
    `packed`, every array of maps so keyed packed (see `_header`). It writes as it walks,
    so no copy of the message is made on the way out. What JSON could not carry either
    (a key that is not a string, a number that is not finite) raises."""
    kind = type(value)
    if kind in (dict, list) and depth > MAX_DEPTH:
        raise ValueError(f"the message nests deeper than {MAX_DEPTH} levels")
    if kind is dict:
        packer.pack_map_header(len(value))
        for key, element in value.items():
            if type(key) is not str:
                raise TypeError(f"a key of a map is not a string: {key!r}")
            packer.pack(ids.get(key, key))
            _write(element, ids, packed, packer, depth + 1)
    elif kind is float and not math.isfinite(value):
        raise ValueError(f"{value} is not a number JSON could carry")  # nor will a reader take it
    elif kind is not list:
        packer.pack(value)
    elif packed and value and (header := _header(value, ids)) is not None:
        packer.pack_array_header(len(value) + 2)
        packer.pack(PACKED)
        packer.pack([None, *_ids(header, ids)])
        for row in value:
            _write_row(row, header, ids, packer, depth + 1)
    elif _plain(value):
        packer.pack(value)
    else:
        packer.pack_array_header(len(value))
        for element in value:
            _write(element, ids, packed, packer, depth + 1)


def _header(rows, ids):
    """The columns of a packed array of maps, by key name, or None when it cannot be packed.

    Packing writes `[{"a": "x", "b": 5}, {"a": "y"}]` as `[Ext17, [None, 1, 2], ["x", 5],
    ["y"]]` (if a is 1 and b is 2): the header lists the keys, in the order first seen,
    and each row the values in header order. A value that is itself a map gets a nested
    header `[key, ...]`; a cell missing before the end of a row is `Ext18`, and trailing
    missing cells are left off. Arrays of anything else, or of maps with a key the
    encoding does not know, are written as they are."""
    columns = {}  # key -> the values seen under it
    for row in rows:
        if type(row) is not dict or any(key not in ids for key in row):
            return None
        for key, value in row.items():
            columns.setdefault(key, []).append(value)
    header = []  # (key, the nested header of a column of maps, or None)
    for key, values in columns.items():
        maps = sum(type(value) is dict for value in values)
        if maps and (maps < len(values) or (nested := _header(values, ids)) is None):
            return None
        header.append((key, nested if maps else None))
    return header


def _ids(header, ids):
    """The header row as it is written: ids, and `[id, ...]` for a nested header."""
    return [ids[key] if nested is None else [ids[key], *_ids(nested, ids)] for key, nested in header]


def _write_row(row, header, ids, packer, depth):
    cells = max((index + 1 for index, (key, _) in enumerate(header) if key in row), default=0)
    packer.pack_array_header(cells)
    for key, nested in header[:cells]:
        if key not in row:
            packer.pack(UNDEFINED)
        elif nested is not None:
            _write_row(row[key], nested, ids, packer, depth + 1)
        else:
            _write(row[key], ids, True, packer, depth + 1)


def unpack_rows(packed):
    """Turn a packed array back into a list of maps (the inverse of packing, `_header`), in place."""
    if len(packed) < 2 or type(packed[1]) is not list:
        raise ParseFailure("BinaryDecodeFailure")
    header = packed[1][1:]
    for index in range(2, len(packed)):
        packed[index] = _unrow(packed[index], header)
    del packed[:2]
    return packed


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


# Fast paths. Each only skips work whose outcome is known: it gives the same answers as the
# plain walk (tests/test_codec.py proves it), and could be deleted without changing any
# answer, only its cost.

SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the escape of half a UTF-16 pair


def _may_hold_surrogates(data):
    """Whether JSON text may hold half a surrogate pair: only an escape can write one."""
    return b"\\u" in data and SURROGATE.search(data) is not None


JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # linear on valid JSON
NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
NESTING = [0] * 256  # what each bracket does to the depth
NESTING[ord("[")] = NESTING[ord("{")] = 1
NESTING[ord("]")] = NESTING[ord("}")] = -1


def _deeper(data, limit):
    """Whether valid JSON text nests arrays and objects more than `limit` deep, read off the
    text in linear time instead of walking the parsed value: only a text with more brackets
    than that can; then its strings are blanked out and the brackets left are counted."""
    if data.count(b"[") + data.count(b"{") <= limit:
        return False
    brackets = JSON_STRING.sub(b"", data).translate(None, NOT_BRACKETS)
    return max(accumulate(map(NESTING.__getitem__, brackets)), default=0) > limit


PLAIN = {str, int, bool, bytes, type(None)}  # values MessagePack gives that from_binary keeps as they are


def _plain(values):
    """Whether an array holds nothing from_binary would change or refuse."""
    return set(map(type, values)) <= PLAIN
