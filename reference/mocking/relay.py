"""Relays: a mock that passes calls on to a real server, to record its answers or to check them.

How this works
--------------
A `Relay` is a mock's other way to answer a call no stub matches
(mocking.Mock's `relay`): it makes the same call of the server at its URL,
with the request's headers but those the mock handles itself (`@bin_`,
`@pac_`, `@select_`, `@time_`), and answers with what the server answered,
its headers too. Within bounds: at most QUEUE calls are relayed at once, an
answer is read up to MAX_RELAYED bytes, and one over LARGE bytes is decoded
one at a time (as every Client decodes them: decoding costs tens of times
an answer's size). A server that
cannot be reached, does not answer in time or answers more is said in one
line of the log, and the call is answered `ErrorRelayFailed_`, saying why.

With a folder, each answer is saved there as a stub file, holding the call's
headers too (`@auth_`, say, so that a replay answers each user with that
user's data): `python -m reference.mock --record URL --stubs DIR`. The same
call is saved in the same file (named by a digest of the call), the later
answer replacing the earlier one; at most `most` files and bytes are kept,
and beyond, the log says once that nothing more is saved.

`Proxy` is the Service of a mock that relays as a validating proxy (`--proxy
URL`): its step 8 does not refuse an answer that breaks the server's own
schema; it logs where, case by case, and lets the answer through as the
server gave it, unless the request asks for the check (`@check: true`): then
the answer is ErrorInvalidResponseBody_, as from any server that checks.
"""

import hashlib
import logging
import threading

from .. import sources
from ..protocol import Service, codec, validate
from ..transports.admission import QUEUE, Places
from ..transports.http_client import Client, TransportError

log = logging.getLogger("reference")

OWN = ("@bin_", "@pac_", "@select_", "@time_")  # request headers the mock handles itself
UNRECORDED = (*OWN, "@id_", "@unsafe_")  # request headers no recording matches on: they change from call to call
WIRE = ("@id_", "@bin_", "@enc_", "@pac_", "@base64_")  # answer headers of the wire, the mock's own to write
MAX_RELAYED = 4 * 1024 * 1024  # bytes of an answer a relay reads (decoded one at a time when large)
MAX_RECORDED = (1000, 64 * 1024 * 1024)  # stub files, and their bytes, a recording keeps


class Relay:
    """Calls of the server at `url`, for a mock to answer with (and save, with a `folder`)."""

    def __init__(self, url, folder=None, timeout=30.0, cafile=None, most=MAX_RECORDED):
        self.url, self.folder, self.timeout, self.cafile = url, folder, timeout, cafile
        self.places = Places(QUEUE)  # calls relayed at once
        self.clients = threading.local()  # a Client holds one connection: one for each thread of the mock
        self.most, self.lock, self.full = most, threading.Lock(), False
        self.saved = {path: path.stat().st_size for path in folder.glob("*.json")} if folder else {}  # path -> bytes
        self.size = sum(self.saved.values())

    def __call__(self, name, arguments, headers):
        """The server's answer to the call: (its headers, its result), or ErrorRelayFailed_ saying why not."""
        place = self.places.take("")
        if place is None:
            return {}, _failed(name, f"{QUEUE} calls are relayed to {self.url} already; try again soon")
        try:
            if not hasattr(self.clients, "client"):
                self.clients.client = Client(self.url, timeout=self.timeout, cafile=self.cafile,
                                             max_response=MAX_RELAYED)
            answered, result = self.clients.client.call(name, arguments,
                                                        {k: v for k, v in headers.items() if k not in OWN})
        except TransportError as error:
            return {}, _failed(name, str(error))
        finally:
            self.places.release(place)
        if self.folder is not None:
            self.record(name, arguments, headers, result)
        return {k: v for k, v in answered.items() if k not in WIRE}, result

    def record(self, name, arguments, headers, result):
        """Save the answer as a stub file that matches only the same call (JSON, bytes as base64 text, which
        the stub's schema restores), in the file of that call, within the bounds."""
        kept = {k: v for k, v in headers.items() if k not in UNRECORDED}
        digest = hashlib.sha256(codec.ENCODER.encode([name, arguments, kept]).encode()).hexdigest()[:16]
        path = self.folder / f"{name}-{digest}.json"
        text = codec.ENCODER.encode({"stub": {name: arguments, "->": result, **kept}, "strictMatch!": True}) + "\n"
        with self.lock:
            grown = len(text) - self.saved.get(path, 0)
            if (path not in self.saved and len(self.saved) >= self.most[0]) or self.size + grown > self.most[1]:
                if not self.full:
                    log.warning("the recording in %s holds %d stub files or %d bytes already: no more is saved",
                                self.folder, *self.most)
                self.full = True
                return
            before = self.saved.get(path)
            self.saved[path], self.size = len(text), self.size + grown
        try:
            sources.write_file(path, text)
        except ValueError as error:  # (the caller gets the server's answer all the same)
            log.warning("%s: the answer was relayed but not recorded: %s", name, error)
            with self.lock:  # (what the folder holds is as before)
                self.size -= grown
                if before is None:
                    del self.saved[path]
                else:
                    self.saved[path] = before


def _failed(name, why):
    """The answer to a call no relay could answer, said in one line of the log."""
    log.warning("%s: could not relay the call: %s", name, why)
    return {"ErrorRelayFailed_": {"reason": why}}


class Proxy(Service):
    """The Service of a validating proxy (see above): the core's, but for its step 8."""

    def check_result(self, exchange, result):
        """Step 8: a result outside the schema is logged and let through, unless the request asks for the check."""
        if exchange.headers.get("@check") is not True:
            cases = validate.first(validate.check_tags(result, exchange.function.result, (), exchange.function))
            if cases:
                log.warning("%s answered outside its own schema: %s", exchange.name, cases)
                return result
        return Service.check_result(self, exchange, result)
