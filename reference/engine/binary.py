"""The binary wire at C speed: MessagePack read and written by the library in one call each.

The core reads and writes MessagePack a value at a time in Python
(protocol/codec.py): `from_binary` gives each key its name after the library
has unpacked the whole message, and `_write` hands the packer each value in
turn. Here the library does all of the bytes: `read()` names the keys of what
it unpacked with one loop per map, and `write()` makes the message with ids
for names (copying only the maps and arrays that change), then packs it in
one call of its thread's packer. Packed arrays (`@pac_`) the core writes, as it streams them:
made here at once, their rows cost more memory than a request may. Each
gives up (None) where the core would refuse or explain, so that the core
says it; tests/reference/engine/test_service.py holds them to it.
"""

import math
import threading

import msgpack

from ..protocol.codec import AS_READ


PACKERS = threading.local()  # each thread's packer, made once (making one is most of a small message's cost)


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
        for header, value in headers.items():  # (a checksum alone, equal to an int, is as the core reads it)
            if type(header) is not str:
                return None
            if type(value) not in AS_READ and (value is not checksums or len(value) > 1):
                headers[header] = _named(value, {})
        name = key if type(key) is str else names[key] if type(key) is int else _refuse()
        return headers, name, _named(arguments, names)
    except Exception:  # (whatever the bytes hold: the core reads them again, and says what is wrong)
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


def write(headers, result, encoding):
    """MessagePack bytes of a message of the response `headers` (and `@bin_`) and `result`, each key
    the encoding knows as its id, as the core writes it unpacked; None where the core writes it
    instead (the library nests 511 levels at most: a message deeper than that, the core writes)."""
    try:
        headers = {**_keyed(headers, {}), "@bin_": [encoding.checksum]} if headers else {"@bin_": [encoding.checksum]}
        packer = getattr(PACKERS, "packer", None) or _packer()
        return packer.pack([headers, _keyed(result, encoding.ids)])
    except (Refused, ValueError, TypeError, OverflowError, RecursionError):
        return None


def _keyed(value, ids):
    """`value` with ids for the keys `ids` knows, as `_write` packs it: a map or array in which nothing
    changes is the same one, not a copy (memory per byte received stays within its bound)."""
    kind = type(value)
    if kind is dict:
        made, changed = {}, False
        for key, element in value.items():
            if type(key) is not str:
                raise Refused
            known = ids.get(key, key)
            if type(element) not in AS_READ:
                element, was = _keyed(element, ids), element
                changed = changed or element is not was
            made[known] = element
            changed = changed or known is not key
        return made if changed else value
    if kind is list:
        for index, element in enumerate(value):
            if type(element) not in AS_READ and (keyed := _keyed(element, ids)) is not element:
                made = value[:index]  # (from the first that changes on, the array is a copy)
                made.append(keyed)
                for element in value[index + 1:]:
                    made.append(element if type(element) in AS_READ else _keyed(element, ids))
                return made
        return value
    if kind is float and math.isfinite(value):
        return value
    raise Refused


def _packer():
    PACKERS.packer = msgpack.Packer()
    return PACKERS.packer


def _refuse():
    raise Refused
