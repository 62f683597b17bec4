"""How the suite reads an answer: a message decoded from JSON or MessagePack, whatever a server sent.

How this works
--------------
`decode()` turns an answer's bytes into JSON notation: MessagePack keys
named by the encodings earlier answers taught (an answer holding `@enc_`
teaches its own), bytes as {"$bin": ...}, packed rows unpacked on request;
None for what is no message. An answer is decoded once for all the checks of
its step (`readings()`). A large answer is decoded and judged while no other
large one is (`one_at_a_time()`): decoded, it costs tens of bytes a value,
and four workers at once would hold four of them.
"""

import contextlib
import json
import threading

import msgpack
import msgpack.fallback

from . import report
from .match import from_msgpack, unpacked


LARGE_ANSWER = 1024 * 1024  # bytes from which answers are decoded and judged one at a time, whatever the workers
DECODING = threading.RLock()


def one_at_a_time(answer):
    """What a large answer holds while it is decoded and used, so that no other large one is."""
    return DECODING if len(answer) > LARGE_ANSWER else contextlib.nullcontext()


def decode(answer, encodings=None, unpack=False, raw=False):
    """A message as JSON notation, or None: MessagePack keys named by `encodings` (checksum -> {id: name}),
    unless `raw`, which an answer holding @enc_ teaches (a large answer waits for the others: one_at_a_time)."""
    with one_at_a_time(answer):
        return _decoded(answer, {} if encodings is None else encodings, unpack, raw)


def _decoded(answer, encodings, unpack, raw):
    if answer[:1] == b"\x92":
        try:
            try:
                message = msgpack.unpackb(answer, strict_map_key=False)
            except msgpack.StackError:  # deeper than its C reader goes (1,024 levels), which a server may echo
                message = msgpack.fallback.unpackb(answer, strict_map_key=False)
            headers = message[0] if type(message) is list and message and type(message[0]) is dict else {}
            checksums = headers.get("@bin_")
            if isinstance(headers.get("@enc_"), dict) and checksums:
                encodings[checksums[0]] = {v: k for k, v in headers["@enc_"].items()}
            names = encodings.get(checksums[0]) if checksums and not raw else None
            return from_msgpack(unpacked(message) if unpack else message, names)
        except Exception:
            return None
    try:
        return json.loads(answer)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than the parser goes
        return None


def readings(answer, encodings):
    """`read(unpack=False, raw=False)`: the answer decoded (see decode), once for each way of reading it."""
    decoded = {}

    def read(unpack=False, raw=False):
        if (unpack, raw) not in decoded:
            decoded[(unpack, raw)] = decode(answer, encodings, unpack, raw)
        return decoded[(unpack, raw)]
    return read


def shown(answer, encodings, most=2000):
    """An answer as text to show: its message as JSON (MessagePack decoded), else its bytes; printable."""
    with one_at_a_time(answer):
        message = decode(answer, encodings)
        text = json.dumps(message, ensure_ascii=False) if message is not None else answer.decode(errors="replace")
    return report.printable(text if len(text) <= most else text[:most] + f" ... ({len(text) - most} characters more)")
