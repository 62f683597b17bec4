"""Relays: a mock that passes each call on to a real server, to record its answers or to check them.

How this works
--------------
A `Relay` is a mock's other way to answer (mocking.Mock's `relay`): it makes
the same call of the server at its URL, with the request's headers but those
the mock handles itself (`@bin_`, `@pac_`, `@select_`, `@time_`, `@unsafe_`),
and answers with what the server answered, its headers too. With a folder,
each answer is saved there as a stub file that matches only the same
arguments, which `--stubs DIR` loads again (`python -m reference.mock
--record URL --stubs DIR`); of two answers to one call, the later answers.

`Proxy` is the Service of a mock that relays as a validating proxy (`--proxy
URL`): its step 8 does not refuse an answer that breaks the server's own
schema; it logs where, case by case, and lets the answer through as the
server gave it, unless the request asks for the check (`@check: true`): then
the answer is ErrorInvalidResponseBody_, as from any server that checks.
"""

import itertools
import logging
import threading

from . import sources
from .http_client import Client
from .protocol import Service, codec, validate

log = logging.getLogger("reference")

OWN = ("@bin_", "@pac_", "@select_", "@time_", "@unsafe_")  # request headers the mock handles itself
WIRE = ("@id_", "@bin_", "@enc_", "@pac_", "@base64_")  # answer headers of the wire, the mock's own to write


class Relay:
    """Calls of the server at `url`, for a mock to answer with (and save, with a `folder`)."""

    def __init__(self, url, folder=None, timeout=30.0, cafile=None):
        self.url, self.folder, self.timeout, self.cafile = url, folder, timeout, cafile
        self.clients = threading.local()  # a Client holds one connection: one for each thread of the mock
        self.numbers = itertools.count(len(list(folder.glob("*.json"))) + 1) if folder else None

    def __call__(self, name, arguments, headers):
        """The server's answer to the call: (its headers, its result)."""
        if not hasattr(self.clients, "client"):
            self.clients.client = Client(self.url, timeout=self.timeout, cafile=self.cafile)
        answered, result = self.clients.client.call(name, arguments, {k: v for k, v in headers.items() if k not in OWN})
        if self.folder is not None:  # JSON, with bytes as base64 text, which the stub's schema restores
            sources.write_file(self.folder / f"{next(self.numbers):04}-{name}.json",
                               codec.ENCODER.encode({"stub": {name: arguments, "->": result}, "strictMatch!": True}) + "\n")
        return {k: v for k, v in answered.items() if k not in WIRE}, result


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
