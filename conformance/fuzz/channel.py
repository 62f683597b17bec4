"""How the fuzzer talks to its target: each message sent at the run's pace, as JSON or as MessagePack in
the encoding the target negotiated, and each answer decoded back to names.

How this works
--------------
A `Channel` holds one kept-alive connection (a `Target`), the `Pace` every
worker of a run keeps to together (or its share of it, in a process of its
own), and the target's binary encoding once `negotiate` has asked for it
with `@bin_: []`. `send` encodes a message (MessagePack carries bytes as
bytes and names as the encoding's ids), posts it, and decodes the answer
with the names; a call with no answer, from a target that then answers no
ping either, is `Trouble`: the run ends, said once.
"""

import http.client
import json
import threading
import time

import msgpack

from ..language.decoding import decode
from ..targets.remote import Trouble
from . import values


class Channel:
    """Messages to one target and its answers; `sent` counts them."""

    def __init__(self, target, pace, shown=None):
        """`shown`, if given, is told of each exchange (-v)."""
        self.target, self.pace, self.shown = target, pace, shown
        self.schema = self.encoding = None  # the target's, once read and negotiated
        self.sent = 0

    def another(self):
        """A channel to the same target on a connection of its own, at the same pace (a worker's)."""
        twin = Channel(self.target.another(), self.pace, self.shown)
        twin.schema, twin.encoding = self.schema, self.encoding
        return twin

    def send(self, message, binary=False):
        """Send a message (as MessagePack, with names as the target's ids, if `binary`), keeping to the
        pace: (HTTP status, the answer decoded with names (bytes on MessagePack as {"$bin": base64}, packed rows
        unpacked where @pac_ asked for them), or None, the answer's bytes, its Content-Type).
        No answer is (0, None, why, ""); a target that then answers no ping either is Trouble."""
        self.pace.keep()
        self.sent += 1
        try:
            status, answer, labelled = self.target.post(None, *self.encoded(message, binary), keep=True)
        except (OSError, http.client.HTTPException) as error:
            if not self.target.answers():
                raise Trouble(f"{self.target.url} stopped answering: {error}") from None
            return 0, None, f"no answer: {error}".encode(), ""
        decoded = decode(answer, self.encoding["names"] if self.encoding else {}, unpack=message[0].get("@pac_") is True)
        if self.shown:
            self.shown(message, binary, status, decoded)
        return status, decoded, answer, labelled

    def encoded(self, message, binary=False):
        """A message's bytes and media type: JSON, or MessagePack with bytes as bytes and names as ids."""
        if not binary:
            return json.dumps(message).encode(), "application/json"
        [(name, arguments)] = message[1].items()
        body = {name: values.as_bytes(self.schema, arguments, self.schema.functions[name].arguments)}
        headers = {**message[0], "@bin_": [self.encoding["checksum"]]}
        return msgpack.packb([headers, values.with_ids(body, self.encoding["ids"])]), "application/octet-stream"

    def negotiate(self):
        """Ask for the target's binary encoding with @bin_: [], and keep it ({ids, names, checksum}), or None."""
        message = self.send([{"@bin_": []}, {"fn.ping_": {}}])[1]
        encoding = message and message[0].get("@enc_")
        checksums = message and message[0].get("@bin_")
        if isinstance(encoding, dict) and checksums:
            self.encoding = {"ids": encoding, "checksum": checksums[0],
                             "names": {checksums[0]: {v: k for k, v in encoding.items()}}}
        return self.encoding


class Pace:
    """At most `rate` requests a second, whichever channel (of the workers of one run) sends them."""

    def __init__(self, rate):
        self.gap, self.lock, self.last = 1 / rate if rate else 0, threading.Lock(), 0.0

    def share(self, parts):
        """A Pace of a `parts`th of this one's rate (for a worker in a process of its own)."""
        return Pace(1 / (self.gap * parts) if self.gap else None)

    def keep(self):
        """Wait until the next request may go."""
        with self.lock:
            pause = self.last + self.gap - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            self.last = time.monotonic()
