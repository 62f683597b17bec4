"""Answers with one thing wrong, which the suite must fail, used by the tests of several commands."""

import http.client
import http.server
import math
import struct

from tests.support.servers import respond

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\ud800"  # a window title, a cleared screen, a C1 escape, half a pair


def hostile(request, message):
    """Answers every call but fn.api_ with control characters and a lone surrogate in its result."""
    if request and "fn.api_" not in request[1] and "Ok_" in message[1]:
        return [message[0], {"Ok_": {"result": HOSTILE}}]
    return message


def dropping(header):
    """An answer that lacks one header the server should have sent."""
    def answer(request, message):
        message[0].pop(header, None)
        return message
    return answer


class Plain(http.server.BaseHTTPRequestHandler):
    """A web server that is not a server of the protocol: it answers every POST with `answer`."""

    answer = (404, b"not here")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        status, data = self.answer
        respond(self, data, status)

    def log_message(self, *args):
        pass


def drop_result(request, message):
    body = message[1]
    if request and "fn.add" in request[1] and "Ok_" in body:
        body["Ok_"].pop("result", None)
    return message


def single_floats(request, message):
    """MessagePack answers (no request read as JSON) with every fraction sent as a 32-bit float."""
    def change(value):
        if type(value) is float:
            return struct.unpack("f", struct.pack("f", value))[0] if abs(value) < 3e38 else math.inf
        if type(value) is dict:
            return {k: change(v) for k, v in value.items()}
        return [change(v) for v in value] if type(value) is list else value
    return message if request else change(message)
