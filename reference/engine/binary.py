"""The binary wire at C speed: MessagePack read and written by the library in one call each.

The core reads and writes MessagePack a value at a time in Python
(protocol/codec.py): `from_binary` gives each key its name after the library
has unpacked the whole message, and `_write` hands the packer each value in
turn. Here the library does all of the bytes: `read()` unpacks a request and
names the keys of its headers, and leaves the arguments' to the compiled
checks, which name them as they check them (checks.renamed), or to `named()`,
one loop per map; `write()` makes the message with ids for names (copying only
the maps and arrays that change), unless the checks made the result so
already, then packs it in one call of its thread's packer, packed arrays
(`@pac_`) too, their columns found as their rows are made. Rows cost memory
that the core's stream does not: past PACKED_AT_ONCE rows, the core writes the
message. Each gives up (None) where the core would refuse or explain, so that
the core says it; tests/reference/engine/test_service.py holds them to it.
"""

import functools
import math
import threading

import msgpack

from ..protocol.codec import AS_READ, PACKED, UNDEFINED


PACKED_AT_ONCE = 2**14  # rows of packed arrays made at once, at most (a row costs memory, unlike a stream)
PACKERS = threading.local()  # each thread's packer, made once (making one is most of a small message's cost)


class Refused(Exception):
    """What the core would refuse or explain: it reads or writes the message itself."""


def read(data, checksum, names):
    """(headers, function name, arguments, whether the headers are the checksum alone) of a MessagePack
    request from a client that has the `checksum` and packs nothing, as the core reads them (`names`:
    id -> name) but for the arguments' keys, which are as sent (`named` names them); None where the
    core reads it."""
    try:
        message = msgpack.unpackb(data, strict_map_key=False)
        if type(message) is not list:
            return None
        headers, body = message  # (ValueError, AttributeError: not two, or no map of one entry)
        [(key, arguments)] = body.items()
        if type(headers) is not dict or type(arguments) is not dict or "@pac_" in headers:
            return None
        checksums = headers.get("@bin_")
        if type(checksums) is not list or not checksums or checksums[0] != checksum:
            return None
        steady = len(headers) == 1 and len(checksums) == 1 and type(checksums[0]) is int
        if not steady:  # (a checksum alone, equal to an int, is as the core reads it)
            for header, value in headers.items():
                if type(header) is not str:
                    return None
                if type(value) not in AS_READ and (value is not checksums or len(value) > 1):
                    headers[header] = _named(value, {})
        return headers, key if type(key) is str else names[key] if type(key) is int else _refuse(), arguments, steady
    except Exception:  # (whatever the bytes hold: the core reads them again, and says what is wrong)
        return None


def named(arguments, names):
    """A request's arguments as `read` gives them, each map's keys named, as the core reads them; None
    where the core reads it."""
    try:
        return _named(arguments, names)
    except Exception:
        return None


def _named(value, names):
    """A value just unpacked, each map's keys named (ids by `names`) in a new map, as `from_binary`
    reads it; an array in place."""
    kind = type(value)
    if kind is dict:
        made = {}
        for key, element in value.items():  # (loops, not comprehensions: in CPython 3.11 each is a call)
            made[key if type(key) is str else names[key] if type(key) is int else _refuse()] = \
                element if type(element) in AS_READ else _named(element, names)
        return made
    if kind is list:
        for index, element in enumerate(value):
            if type(element) not in AS_READ:
                value[index] = _named(element, names)
        return value
    if kind is float and math.isfinite(value):
        return value
    raise Refused


def write(headers, result, encoding, packed=False, keyed=None):
    """MessagePack bytes of a message of the response `headers` (and `@bin_`) and `result`, each key
    the encoding knows as its id (or the result `keyed` so already), and if `packed`, each array of
    maps packed, as the core writes it; None where the core writes it instead (the library nests 511
    levels at most: a message deeper than that, the core writes; and packed arrays past
    PACKED_AT_ONCE rows, the core streams)."""
    try:
        packer = getattr(PACKERS, "packer", None) or _packer()
        if keyed is None:
            keyed = _keyed(result, encoding.ids, [PACKED_AT_ONCE] if packed else None)
        if not headers:  # (most answers have none of their own: their start is packed once, 4% of fn.add's cost)
            return _start(encoding.checksum) + packer.pack(keyed)
        return packer.pack([{**_keyed(headers, {}), "@bin_": [encoding.checksum]}, keyed])
    except (Refused, ValueError, TypeError, OverflowError, RecursionError):
        return None


@functools.lru_cache(maxsize=64)
def _start(checksum):
    """The bytes a message without headers of its own starts with, up to its body: `[{"@bin_": [checksum]}, `."""
    return msgpack.packb([{"@bin_": [checksum]}, None])[:-1]  # (less the nil that stood for the body)


def _keyed(value, ids, budget=None):
    """`value` with ids for the keys `ids` knows, as `_write` packs it: a map or array in which nothing
    changes is the same one, not a copy (memory per byte received stays within its bound); with a
    `budget` ([rows left to make]), each array of maps packed as the core packs it."""
    kind = type(value)
    if kind is dict:
        made, changed = {}, False
        for key, element in value.items():
            if type(key) is not str:
                raise Refused
            known = ids.get(key, key)
            if type(element) not in AS_READ:
                element, was = _keyed(element, ids, budget), element
                changed = changed or element is not was
            made[known] = element
            changed = changed or known is not key
        return made if changed else value
    if kind is list:
        if budget is not None and value and (packed := _packed(value, ids, budget)) is not None:
            return packed
        for index, element in enumerate(value):
            if type(element) not in AS_READ and (keyed := _keyed(element, ids, budget)) is not element:
                made = value[:index]  # (from the first that changes on, the array is a copy)
                made.append(keyed)
                for element in value[index + 1:]:
                    made.append(element if type(element) in AS_READ else _keyed(element, ids, budget))
                return made
        return value
    if kind is float and math.isfinite(value):
        return value
    raise Refused


class Unpackable(Exception):
    """An array the core writes unpacked (see `codec._columns`)."""


def _packed(rows, ids, budget):
    """`rows` as the core packs them: [PACKED, the key row, each row's cells], or None where it writes
    them unpacked. The columns are found as the rows are made, in one pass."""
    columns, made = {}, [PACKED, None]
    try:
        for row in rows:
            made.append(_row(row, columns, ids, budget))
    except Unpackable:
        return None
    made[1] = [None, *_header(columns, ids)]
    return made


def _row(row, columns, ids, budget):
    """The cells of a map, placed by `columns` (key -> (place, the columns of a column of maps, or None)),
    a key first seen taking the next place; Refused once the budget of rows made at once is spent."""
    if type(row) is not dict:
        raise Unpackable
    cells = []
    for key, value in row.items():
        column = columns.get(key)
        if column is None:
            if key not in ids:
                raise Unpackable
            column = columns[key] = (len(columns), {} if type(value) is dict else None)
        place, nested = column
        if nested is not None:
            value = _row(value, nested, ids, budget)
        elif type(value) is dict:  # (a column of maps and others)
            raise Unpackable
        elif type(value) not in AS_READ:
            value = _keyed(value, ids, budget)
        if place == len(cells):
            cells.append(value)
        elif place < len(cells):
            cells[place] = value
        else:
            cells += [UNDEFINED] * (place - len(cells)) + [value]
    budget[0] -= 1
    if budget[0] < 0:
        raise Refused
    return cells or ()  # (one empty row for all)


def _header(columns, ids):
    return [ids[key] if nested is None else [ids[key], *_header(nested, ids)] for key, (_, nested) in columns.items()]


def _packer():
    PACKERS.packer = msgpack.Packer()
    return PACKERS.packer


def _refuse():
    raise Refused
