"""A small client: call a server's functions over HTTP, in JSON or negotiated MessagePack.

How this works
--------------
`Client(url).call("fn.add", {"x": 1, "y": 2})` posts the message
`[headers, {"fn.add": {...}}]` on one kept-alive connection and returns the
response message as `(headers, body)`. Every request carries `@time_`, the
client's timeout in milliseconds.

With `binary=True` the client negotiates MessagePack. Its first request is
JSON with `"@bin_": []`; the server answers `Ok_` results in MessagePack with
its encoding in `@enc_` and its checksum in `@bin_`, and the client keeps that
encoding under its checksum. Later requests send `"@bin_": [checksum]` and get
compact answers without `@enc_`; with `binary_requests=True` the requests are
MessagePack too, with integer keys. Should the server no longer know the
checksum (it restarted with another schema), it says IncompatibleBinaryEncoding;
the client then forgets what it knew and tries once more in JSON.

Bytes come back as `bytes` either way: on the JSON wire the client decodes the
base64 strings that the `@base64_` header points at.

`python -m reference.client --driver URL` drives this client for the
conformance suite's client checks (conformance/README.md): it reads
instructions as JSON lines on standard input and writes each call's result as
a JSON line on standard output.
"""

import base64
import http.client
import json
import socket
import sys
import time
import urllib.parse

from . import codec


class TransportError(Exception):
    """No response message came back."""


class Unreachable(TransportError):
    """The server could not be reached."""


class TimedOut(TransportError):
    """The server did not answer within the timeout."""


class NotAMessage(TransportError):
    """The server answered, but not with a protocol message."""


class Client:
    """Calls the functions of the server at `url`."""

    def __init__(self, url, binary=False, binary_requests=False, packed=False, timeout=5.0):
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # a port that is not a number raises ValueError here
        except ValueError:
            raise ValueError(f"{url!r} is not a URL") from None
        if parts.scheme == "https":
            raise ValueError(f"{url}: https:// is not supported")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// URL, such as http://127.0.0.1:8000/api")
        self.url, self.host, self.port = url, parts.hostname, parts.port or 80
        self.path = parts.path or "/"
        self.binary, self.binary_requests, self.packed = binary, binary_requests, packed
        self.timeout = timeout
        self.encodings = {}  # checksum -> Encoding, learnt from @enc_
        self.checksum = None  # the server's checksum, once known
        self.connection = None

    def call(self, function, arguments=None, headers=None):
        """Call `function` with `arguments`; return the response message (headers, body)."""
        message = [{"@time_": round(self.timeout * 1000), **(headers or {})}, {function: arguments or {}}]
        if not self.binary:
            return self._exchange(message)
        response = self._exchange(self._negotiating(message), self.encodings.get(self.checksum))
        reasons = response[1].get("ErrorParseFailure_", {}).get("reasons", [])
        if {"IncompatibleBinaryEncoding": {}} in reasons:
            self.encodings.clear()
            self.checksum = None
            response = self._exchange(self._negotiating(message))
        return response

    def _negotiating(self, message):
        headers, body = message
        known = [] if self.checksum is None else [self.checksum]
        return [{**headers, "@bin_": known, **({"@pac_": True} if self.packed else {})}, body]

    def _exchange(self, message, encoding=None):
        """Send a message, as MessagePack when `binary_requests` and an encoding allow."""
        if encoding is not None and self.binary_requests:
            data = codec.encode(message, encoding, self.packed)
        else:
            data = codec.encode(message)
        return self._message(self._post(data))

    def _message(self, data):
        """The response message in `data`, with ids turned back into names and base64 into bytes."""
        try:
            if data[:1] != b"\x92":
                headers, body = codec.read_json(data)
                return headers, codec.from_base64(body, headers.get("@base64_"))
            headers, body = codec.read_binary(data)
            [checksum] = headers["@bin_"]
            if "@enc_" in headers:
                self.encodings[checksum] = codec.encoding_from(headers["@enc_"], checksum)
            if checksum not in self.encodings:
                raise NotAMessage(f"{self.url} answered in an encoding never sent (checksum {checksum})")
            self.checksum = checksum
            return headers, codec.from_binary(body, self.encodings[checksum].names,
                                              headers.get("@pac_") is True)
        except (codec.ParseFailure, KeyError, TypeError, ValueError) as error:
            raise NotAMessage(f"{self.url} answered with something that is not a message "
                              f"({error!r}): {data[:100]!r}") from None

    def _post(self, data):
        """POST `data` and return the response bytes, reconnecting once if a kept-alive
        connection turns out to have been closed by the server. The whole exchange must
        end within the timeout, however slowly the answer comes."""
        media_type = "application/octet-stream" if data[:1] == b"\x92" else "application/json"
        deadline = time.monotonic() + self.timeout
        for attempt in range(2):
            reused = self.connection is not None
            if not reused:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            try:
                self.connection.request("POST", self.path, data, {"Content-Type": media_type})
                sock = self.connection.sock  # the connection forgets it once an answer says Connection: close
                response = self.connection.getresponse()
                payload = self._read(response, sock, deadline)
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as error:
                self.close()
                if reused and attempt == 0:
                    continue  # the server had closed the idle connection
                raise Unreachable(f"{self.url} closed the connection: {error}") from None
            except socket.timeout:
                self.close()
                raise TimedOut(f"{self.url} did not answer within {self.timeout} s") from None
            except OSError as error:
                self.close()
                raise Unreachable(f"cannot reach {self.url}: {error.strerror or error}") from None
            if response.status != 200:
                raise NotAMessage(f"{self.url} answered HTTP {response.status}: {payload[:200]!r}")
            return payload

    @staticmethod
    def _read(response, sock, deadline):
        """The body of `response`, read piece by piece, each read given only the time left."""
        pieces = []
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout()
            sock.settimeout(left)
            piece = response.read1(65536)
            if not piece:
                return b"".join(pieces) + response.read()  # which marks the response done, for the next one
            pieces.append(piece)

    def close(self):
        """Close the connection; the next call opens a new one."""
        if self.connection is not None:
            self.connection.close()
            self.connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


MODES = {  # a mode of the conformance suite's driver protocol -> the Client options it means
    "json": {}, "binary": {"binary": True}, "binary-requests": {"binary": True, "binary_requests": True},
    "packed": {"binary": True, "packed": True},
}


def drive(url, instructions, out):
    """Make the calls the JSON lines of `instructions` ask for; write each result as a JSON line."""
    clients = {}
    for line in instructions:
        instruction = json.loads(line)
        name = instruction["client"]
        if name not in clients:  # a new case: a fresh client, and the old ones' connections closed
            for old in clients.values():
                old.close()
            clients = {name: Client(url, timeout=instruction["timeout"], **MODES[instruction["mode"]])}
        try:
            headers, body = clients[name].call(instruction["function"], _from_wire(instruction["arguments"]),
                                               _from_wire(instruction["headers"]))
            reply = {"headers": _to_wire(headers), "body": _to_wire(body)}
        except TransportError as error:
            reply = {"error": str(error)}
        out.write(json.dumps({"id": instruction["id"], **reply}) + "\n")
        out.flush()


def _to_wire(value):
    """Bytes as {"$bin": base64}, as the driver protocol writes them."""
    if type(value) is bytes:
        return {"$bin": base64.b64encode(value).decode()}
    if type(value) is dict:
        return {key: _to_wire(element) for key, element in value.items()}
    return [_to_wire(element) for element in value] if type(value) is list else value


def _from_wire(value):
    if type(value) is dict:
        if list(value) == ["$bin"]:
            return base64.b64decode(value["$bin"])
        return {key: _from_wire(element) for key, element in value.items()}
    return [_from_wire(element) for element in value] if type(value) is list else value


def main(argv=None):
    """The command line: `--driver URL` for the conformance suite's client checks."""
    from .server import Parser
    parser = Parser(prog="python -m reference.client", description=(
        "Drive this client for the conformance suite (python -m conformance client --command "
        "'python -m reference.client --driver'): instructions as JSON lines on stdin, results on stdout."))
    parser.add_argument("--driver", action="store_true", required=True, help="speak the driver protocol")
    parser.add_argument("url", metavar="URL", help="the server to call, such as http://127.0.0.1:8000/api")
    options = parser.parse_args(argv)
    try:
        drive(options.url, sys.stdin, sys.stdout)
    except (ValueError, KeyError) as error:
        print(f"error: not an instruction of the driver protocol: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
