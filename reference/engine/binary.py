"""The binary wire at C speed: MessagePack read and written by the library in one call each.

The core reads and writes MessagePack a value at a time in Python
(protocol/codec.py): `from_binary` gives each key its name after the library
has unpacked the whole message, and `_write` hands the packer each value in
turn. Here the library does all of the bytes: `read()` names the keys of what
it unpacked with a comprehension per map, and `write()` builds the message
with ids for names (and packed arrays, for `@pac_`) in the same way, then packs
it in one call. Each gives up (None) where the core would refuse or explain,
so the core says it; tests/reference/engine/test_service.py holds them to it.
"""

import math

import msgpack

from ..protocol.codec import AS_READ, PACKED, UNDEFINED, _columns, _ids


class Refused(Exception):
    """What the core would refuse or explain: it reads or writes the message itself."""


def read(data, checksum, names):
    """(headers, function name, arguments) of a MessagePack request from a client that has the `checksum`
    and packs nothing, as the core reads them (`names`: id -> name); None where the core reads it."""
    try:
        message = msgpack.unpackb(data, strict_map_key=False)
        headers, body = message if type(message) is list and len(message) == 2 else (None, None)
        if type(headers) is not dict or type(body) is not dict or len(body) != 1 or "@pac_" in headers:
            return None
        checksums = headers.get("@bin_")
        if type(checksums) is not list or not checksums or checksums[0] != checksum:
            return None
        [(key, arguments)] = body.items()
        if type(arguments) is not dict:
            return None
        name = key if type(key) is str else names[key] if type(key) is int else _refuse()
        return _named(headers, {}), name, _named(arguments, names)
    except Exception:  # (whatever the bytes hold: the core reads them again, and says what is wrong)
        return None


def _named(value, names):
    """A value just unpacked, each map's keys named (ids by `names`), as `from_binary` reads it."""
    kind = type(value)
    if kind is dict:
        made = {}  # (loops, not comprehensions: in CPython 3.11 each comprehension is a call)
        for key, element in value.items():
            key = key if type(key) is str else names[key] if type(key) is int else _refuse()
            made[key] = element if type(element) in AS_READ else _named(element, names)
        return made
    if kind is list:
        made = []
        for element in value:
            made.append(element if type(element) in AS_READ else _named(element, names))
        return made
    if kind is float and math.isfinite(value):
        return value
    raise Refused


def write(message, encoding, packed):
    """MessagePack bytes of `message`, each key the encoding knows as its id (arrays of maps packed if
    `packed`), as the core writes it; None where the core writes it instead (the library nests 511
    levels at most: a message deeper than that, the core writes)."""
    headers, body = message
    try:
        return msgpack.packb([_keyed(headers, {}, False), _keyed(body, encoding.ids, packed)])
    except (Refused, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _keyed(value, ids, packed):
    """`value` with ids for the keys `ids` knows, as `_write` packs it."""
    kind = type(value)
    if kind is dict:
        made = {}
        for key, element in value.items():
            if type(key) is not str:
                raise Refused
            made[ids.get(key, key)] = element if type(element) in AS_READ else _keyed(element, ids, packed)
        return made
    if kind is list:
        if packed and value and (columns := _columns(value, ids)) is not None:
            return [PACKED, [None, *_ids(columns, ids)], *[_row(row, columns, ids) for row in value]]
        made = []
        for element in value:
            made.append(element if type(element) in AS_READ else _keyed(element, ids, packed))
        return made
    if kind is float and math.isfinite(value):
        return value
    raise Refused


def _row(row, columns, ids):
    """A row of a packed array: its cells in the columns' order, as `_write_row` packs it."""
    cells = []
    for key, nested in columns:
        if key not in row:
            cells.append(UNDEFINED)
        elif nested is not None:
            cells.append(_row(row[key], nested, ids))
        else:
            element = row[key]
            cells.append(element if type(element) in AS_READ else _keyed(element, ids, True))
    while cells and cells[-1] is UNDEFINED:  # (trailing missing cells are left off)
        cells.pop()
    return cells


def _refuse():
    raise Refused
