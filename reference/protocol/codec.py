"""The envelope codec: message bytes to `[headers, body]` and back, in JSON or MessagePack.

How this works
--------------
Bytes that start with 0x92 (a MessagePack array of two) are MessagePack,
anything else JSON (which carries bytes as base64 text: blobs.py).
`decode()` returns the headers and body or raises `ParseFailure` with the
reason; `encode()` makes bytes, or raises `Unwritable`, and `unwritable()`
says where. Both wires carry the same values: Unicode text, finite numbers,
keys that are text, and at most MAX_DEPTH levels of nesting.

MessagePack is negotiated (`@bin_`) and smaller: every key the schema knows
becomes a small integer. A schema's `Encoding` numbers those keys (the name
of every function it has, the protocol's own and a mock's among them, and
every field and tag name reachable from a function's arguments or `Ok_`
result) from 0, sorted by code point; its checksum, a
signed CRC-32 of the names joined by newlines, names it. Packed mode
(`@pac_`) also writes an array of maps as rows of values (`_columns`).
MessagePack is read in place and written as it is walked: a message is in
memory once.
"""

import json
import math
import zlib
from typing import NamedTuple

import msgpack

from . import blobs
from .limits import MAX_DEPTH
from .types import Union, reachable
from .validate import case, type_unexpected

PACKED, UNDEFINED = msgpack.ExtType(17, b""), msgpack.ExtType(18, b"")
AS_READ = {str, int, bool, bytes, type(None)}  # values MessagePack gives that need no second look


class ParseFailure(Exception):
    """The bytes are not a message; `reason` is its `union.ParseFailure_` value."""

    def __init__(self, tag, data=None):
        super().__init__(tag)
        self.reason = {tag: data or {}}


class Unwritable(ValueError):
    """No wire can carry the message given: `unwritable()` says where."""


class Encoding(NamedTuple):
    """A schema's binary encoding: key name to id, id to key name, and checksum."""

    ids: dict
    names: list
    checksum: int


def encoding(schema):
    """The binary encoding of the names of all `schema`'s functions (stock ones too), and the field and
    tag names their arguments and Ok_ results reach."""
    keys, roots = set(), []
    for name, function in schema.functions.items():
        keys.update((name, "Ok_"))
        roots += [function.arguments, function.result.tags["Ok_"]]
    for node in reachable(*roots):  # (one walk for all: every function may reach every definition)
        keys.update(node.tags if isinstance(node, Union) else node.fields)
    names = sorted(keys)
    crc = zlib.crc32("\n".join(names).encode())
    return Encoding({name: i for i, name in enumerate(names)}, names, crc - 2**32 if crc >= 2**31 else crc)


# Reading

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
    """Parse JSON message bytes into (headers, body), or raise ParseFailure. Beside bad syntax, NaN,
    Infinity, numbers too large for a float and half a UTF-16 surrogate pair are not JSON here."""
    try:
        message = DECODER.decode(data.decode())
        ENCODER.encode(message).encode()  # which fails on half a surrogate pair
    except RecursionError:  # deeper than the interpreter's stack allows
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH}) from None
    except ValueError:  # UnicodeDecodeError and UnicodeEncodeError included
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects") from None
    if deeper(message, MAX_DEPTH):
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
ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, default=blobs.as_text)


def deeper(value, limit):
    """Whether `value` nests arrays and objects more than `limit` levels deep (found with a stack
    of its own, depth first, so that even a value that holds itself gives an answer soon)."""
    waiting = [(value, 1)]
    while waiting:
        value, level = waiting.pop()
        if type(value) in (dict, list):
            if level > limit:
                return True
            waiting.extend((element, level + 1) for element in (value.values() if type(value) is dict else value))
    return False


def _two_objects(message):
    if type(message) is not list or len(message) != 2:
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects")
    headers, body = message
    if type(headers) is not dict or type(body) is not dict:
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects")
    return headers, body


MSGPACK_DEPTH = 1024  # the levels msgpack's unpacker reads


def read_binary(data):
    """Unpack MessagePack message bytes into (headers, body); body keys are still ids."""
    try:
        message = msgpack.unpackb(data, strict_map_key=False)
    except msgpack.StackError:
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH}) from None
    except Exception:  # the library raises many types for malformed input
        raise ParseFailure("ExpectedJsonArrayOfTwoObjects") from None
    # The library stops at 1,024 levels (StackError); a lower MAX_DEPTH is ours to keep (fewer
    # bytes than MAX_DEPTH cannot nest deeper).
    if MAX_DEPTH < MSGPACK_DEPTH and len(data) > MAX_DEPTH and deeper(message, MAX_DEPTH):
        raise ParseFailure("NestingTooDeep", {"limit": MAX_DEPTH})
    headers, body = _two_objects(message)
    return from_binary(headers, None, False), body


def from_binary(value, names, unpack):
    """Undo key substitution (and packing) in a MessagePack value just unpacked, in place; refuse
    what JSON could not carry either: non-finite floats, other types, keys that are no names or ids."""
    kind = type(value)
    if kind is dict:
        if not all(type(key) is str for key in value):
            value = {_name(key, names): element for key, element in value.items()}
        for key, element in value.items():
            if type(element) not in AS_READ:
                value[key] = from_binary(element, names, unpack)
        return value
    if kind is list:
        if unpack and value and value[0] == PACKED:
            value = unpack_rows(value)
        for index, element in enumerate(value):
            if type(element) not in AS_READ:
                value[index] = from_binary(element, names, unpack)
        return value
    if kind is float and math.isfinite(value):
        return value
    raise ParseFailure("BinaryDecodeFailure")


def _name(key, names):
    if type(key) is int and names is not None and 0 <= key < len(names):
        return names[key]
    if type(key) is not str:
        raise ParseFailure("BinaryDecodeFailure")
    return key


def unpack_rows(packed):
    """Turn a packed array back into a list of maps (the inverse of packing: `_columns`), in place."""
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


# Writing

def encode(message, encoding=None, packed=False):
    """Serialize a message: MessagePack given an encoding, else JSON; Unwritable if no wire can carry it."""
    try:
        if encoding is None:
            if deeper(message, MAX_DEPTH):
                raise Unwritable(f"the message nests deeper than {MAX_DEPTH} levels")
            return ENCODER.encode(message).encode()
        headers, body = message
        packer = msgpack.Packer(autoreset=False)  # which collects what it packs in one buffer
        packer.pack_array_header(2)
        _write(headers, {}, False, packer)
        _write(body, encoding.ids, packed, packer)
        return packer.bytes()
    except (ValueError, TypeError, OverflowError, RecursionError) as error:
        raise Unwritable(str(error)) from None


def _write(value, ids, packed, packer, depth=2):
    """Pack `value` into `packer` as it walks (no copy is made), each key the encoding knows as its
    id, and if `packed`, each array of maps with known keys packed (see `_columns`)."""
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
    elif packed and value and (columns := _columns(value, ids)) is not None:
        packer.pack_array_header(len(value) + 2)
        packer.pack(PACKED)
        packer.pack([None, *_ids(columns, ids)])
        for row in value:
            _write_row(row, columns, ids, packer, depth + 1)
    else:
        packer.pack_array_header(len(value))
        for element in value:
            _write(element, ids, packed, packer, depth + 1)


def _columns(rows, ids):
    """The columns of a packed array of maps, by key name, or None when it cannot be packed.

    `[{"a": "x", "b": 5}, {"a": "y"}]` is packed as `[Ext17, [None, 1, 2], ["x", 5], ["y"]]`
    (if a is 1 and b is 2): the keys in the order first seen, then each row's values in that
    order; a map value gets nested columns `[key, ...]`; a cell missing before a row's end is
    `Ext18`, and trailing missing cells are left off."""
    values = {}  # key -> the values seen under it
    for row in rows:
        if type(row) is not dict or any(key not in ids for key in row):
            return None
        for key, value in row.items():
            values.setdefault(key, []).append(value)
    columns = []  # (key, the nested columns of a column of maps, or None)
    for key, column in values.items():
        maps = sum(type(value) is dict for value in column)
        if maps and (maps < len(column) or (nested := _columns(column, ids)) is None):
            return None
        columns.append((key, nested if maps else None))
    return columns


def _ids(columns, ids):
    """The key row as it is written: ids, and `[id, ...]` for nested columns."""
    return [ids[key] if nested is None else [ids[key], *_ids(nested, ids)] for key, nested in columns]


def _write_row(row, columns, ids, packer, depth):
    cells = max((index + 1 for index, (key, _) in enumerate(columns) if key in row), default=0)
    packer.pack_array_header(cells)
    for key, nested in columns[:cells]:
        if key not in row:
            packer.pack(UNDEFINED)
        elif nested is not None:
            _write_row(row[key], nested, ids, packer, depth + 1)
        else:
            _write(row[key], ids, True, packer, depth + 1)


def unwritable(value, path=(), level=2):
    """Yield a case for every part of `value`, at `level` in a message (a body is at 2), that no
    wire can carry: text that is not Unicode, a number not finite, no JSON value, a key that is no
    text, nesting beyond MAX_DEPTH (a value that holds itself too). Only a handler can make them."""
    kind = type(value)
    if kind in (dict, list) and level > MAX_DEPTH:
        yield case(path, "NestingTooDeep", {"limit": MAX_DEPTH})
    elif kind is dict:
        for key, element in value.items():
            if type(key) is str:  # a key is text too; one that is not is shown escaped in the paths
                shown = key if key.isascii() else key.encode(errors="backslashreplace").decode()
                yield from unwritable(key, (path, shown), level)
                yield from unwritable(element, (path, shown), level + 1)
            else:
                yield type_unexpected(key, "String", (path, str(key)))
    elif kind is list:
        for index, element in enumerate(value):
            yield from unwritable(element, (path, index), level + 1)
    elif kind is float and not math.isfinite(value):
        yield case(path, "NumberOutOfRange")
    elif kind is str and not value.isascii():
        try:
            value.encode()
        except UnicodeEncodeError:  # half a surrogate pair: a Python string, but not text
            yield case(path, "TypeUnexpected", {"actual": {"Unknown": {}}, "expected": {"String": {}}})
    elif kind not in (bool, int, float, str, bytes, type(None)):
        yield type_unexpected(value, "Any", path)
