"""A small client: call a server's functions over HTTP, in JSON or negotiated MessagePack.

How this works
--------------
`Client(url).call("fn.add", {"x": 1, "y": 2})` posts `[headers, {"fn.add":
{...}}]` on one kept-alive connection and returns the response as `(headers,
body)`. Every request carries `@time_`, the client's timeout in milliseconds.

Its `mode` is how it speaks. With `mode="binary"` the client negotiates
MessagePack: its first request is JSON with `"@bin_": []`, and the server
answers Ok_ in MessagePack with its encoding in `@enc_` and checksum in
`@bin_`, which the client keeps. Later requests send `"@bin_": [checksum]`
(in MessagePack with integer keys too, in "binary-requests" mode); "packed"
asks for packed answers (`@pac_`), and "packed-requests" packs requests as
well. Should the server no longer know the checksum (restarted with another
schema), it says IncompatibleBinaryEncoding, and the client forgets the
encoding and tries once more in JSON.

Bytes come back as `bytes` either way: on the JSON wire the client decodes
the base64 text that `@base64_` points at. `https://` URLs are checked
against the system's certificate authorities, or `cafile` (PEM). An answer
over `max_response` bytes is refused (`TooLarge`) without being read; one
over LARGE bytes is decoded while no other Client of the process decodes one
(decoding costs tens of times an answer's size: a relaying mock's many
clients would otherwise hold many at once).
"""

import http.client
import io
import json
import math
import socket
import ssl
import threading
import time
import urllib.parse

from ..protocol import blobs, codec
from ..protocol.limits import allow_depth
from .admission import LARGE

MAX_RESPONSE = 64 * 1024 * 1024  # bytes of an answer the client reads, by default
MODES = ("json", "binary", "binary-requests", "packed", "packed-requests")  # how a Client may speak
DECODING = threading.Lock()  # held while an answer over LARGE bytes is decoded
CLOSED = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)  # the server hung up


class TransportError(Exception):
    """No response message came back."""


class Unreachable(TransportError):
    """The server could not be reached."""


class Mismatched(Unreachable):
    """The server answers otherwise than the URL's scheme says: it drops plain HTTP, or does not speak TLS."""


class Untrusted(TransportError):
    """The server's certificate is not one the client trusts."""


class TimedOut(TransportError):
    """The server did not answer within the timeout."""


class NotAMessage(TransportError):
    """The server answered, but not with a protocol message."""


class TooLarge(TransportError):
    """The answer is longer than the client reads."""


class Client:
    """Calls the functions of the server at `url`."""

    def __init__(self, url: str, mode: str = "json", timeout: float = 5.0, cafile: str | None = None,
                 max_response: int = MAX_RESPONSE):
        if mode not in MODES:
            raise ValueError(f"{mode!r} is not a mode of the client: {', '.join(MODES)}")
        try:
            parts = urllib.parse.urlsplit(url)
            parts.port  # a port that is not a number raises ValueError here
        except ValueError:
            raise ValueError(f"{url!r} is not a URL") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http:// or https:// URL, such as http://127.0.0.1:8000/api")
        self.url, self.host, self.port = url, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        self.tls = None
        if parts.scheme == "https":
            try:
                self.tls = ssl.create_default_context(cafile=cafile)
            except ssl.SSLError as error:  # (OpenSSL's own words name its source file and line)
                raise ValueError(f"cannot use {cafile} as certificate authorities: " + (
                    "it holds no PEM certificate (a key, or DER?)" if error.reason == "NO_CERTIFICATE_OR_CRL_FOUND"
                    else f"OpenSSL says {error.reason or 'it is not PEM'}")) from None
            except OSError as error:
                raise ValueError(f"cannot use {cafile} as certificate authorities: {error.strerror}") from None
        self.path = parts.path or "/"
        self.binary, self.binary_requests = mode != "json", mode.endswith("requests")
        self.packed = mode.startswith("packed")
        self.timeout, self.max_response = timeout, max_response
        self.encodings: dict[int | None, codec.Encoding] = {}  # checksum -> Encoding, learnt from @enc_
        self.checksum: int | None = None  # the server's checksum, once known
        self.connection = None
        self.last = (b"", b"")  # the bytes of the last request and its answer, for a look at the wire
        allow_depth()  # to read answers as deep as a message may be

    def call(self, function: str, arguments: dict | None = None, headers: dict | None = None) -> tuple[dict, dict]:
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

    def schema(self, internal: bool = False) -> list:
        """The server's schema, the entries `fn.api_` answers (the stock ones too if `internal`)."""
        _, body = self.call("fn.api_", {"includeInternal!": True} if internal else {})
        api = body.get("Ok_", {}).get("api")
        if type(api) is not list:
            raise NotAMessage(f"{self.url} answered fn.api_ with {json.dumps(body)[:200]}, not a schema")
        return api

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
        self.last = (data, self._post(data))
        if len(self.last[1]) > LARGE:  # (decoding costs tens of times its size)
            with DECODING:
                return self._message(self.last[1])
        return self._message(self.last[1])

    def _message(self, data):
        """The response message in `data`, with ids turned back into names and base64 into bytes:
        as strict as a server is with requests, it takes only one result tag holding an object."""
        try:
            if data[:1] != b"\x92":
                headers, body = codec.read_json(data)
                body = unmark(body, headers.get("@base64_"))
            else:
                headers, body = codec.read_binary(data)
                [checksum] = headers["@bin_"]
                if "@enc_" in headers:
                    ids = headers["@enc_"]
                    self.encodings[checksum] = codec.Encoding(ids, sorted(ids, key=ids.get), checksum)
                if checksum not in self.encodings:
                    raise NotAMessage(f"{self.url} answered in an encoding never sent (checksum {checksum})")
                self.checksum = checksum
                body = codec.from_binary(body, self.encodings[checksum].names, headers.get("@pac_") is True)
            if len(body) != 1 or type(next(iter(body.values()))) is not dict:
                raise ValueError("the body is not one result tag holding an object")
            return headers, body
        except (codec.ParseFailure, KeyError, TypeError, ValueError) as error:
            raise NotAMessage(f"{self.url} answered with something that is not a message "
                              f"({error}): {data[:100]!r}") from None

    def _post(self, data):
        """POST `data` and return the response bytes, reconnecting once if a kept-alive
        connection turns out to have been closed by the server. The whole exchange must
        end within the timeout, however slowly the answer comes."""
        media_type = "application/octet-stream" if data[:1] == b"\x92" else "application/json"
        deadline = time.monotonic() + self.timeout
        for attempt in range(2):
            reused = self.connection is not None
            if not reused:
                self.connection = (SecureConnection(self.host, self.port, context=self.tls) if self.tls
                                   else Connection(self.host, self.port))
            self.connection.deadline = deadline
            try:
                self.connection.request("POST", self.path, data, {"Content-Type": media_type})
                response = self.connection.getresponse()
                payload = self._read(response, self.max_response)
            except Exception as error:
                self.close()
                if reused and attempt == 0 and isinstance(error, CLOSED):
                    continue  # the server had closed the idle connection
                failure = self._failure(error)
                if failure is None:
                    raise
                raise failure from None
            if response.status != 200:
                hint = (" (is the API at /api?)" if response.status == 404 and not self.path.endswith("/api")
                        else "")
                text = " ".join(payload[:400].decode("utf-8", "replace").split())  # an HTML page on one line
                raise NotAMessage(f"{self.url} answered HTTP {response.status}{hint}: {text[:200]}")
            return payload

    def _failure(self, error):
        """The TransportError that says why an exchange failed, or None for a bug of ours."""
        if isinstance(error, CLOSED):
            hint = "" if self.tls else " (an HTTPS server does that to plain HTTP: is it an https:// URL?)"
            return (Mismatched if hint else Unreachable)(f"{self.url} closed the connection without answering{hint}")
        if isinstance(error, socket.timeout):
            return TimedOut(f"{self.url} did not answer within {self.timeout} s")
        if isinstance(error, ssl.SSLCertVerificationError):
            return Untrusted(f"cannot reach {self.url}: its certificate is not trusted ({error.verify_message})")
        if isinstance(error, ssl.SSLError) and error.reason == "WRONG_VERSION_NUMBER":
            return Mismatched(f"cannot reach {self.url}: it does not speak TLS (is it an http:// URL?)")
        if isinstance(error, ssl.SSLError):
            return Unreachable(f"cannot reach {self.url}: TLS failed ({error.reason or error})")
        if isinstance(error, TooLarge):
            return TooLarge(f"{self.url} answered more than {self.max_response} bytes, "
                            f"the most this client reads (max_response)")
        if isinstance(error, OSError):
            return Unreachable(f"cannot reach {self.url}: {error.strerror or error}")
        if isinstance(error, http.client.HTTPException):
            return NotAMessage(f"{self.url} answered with something that is not HTTP: {error!r}")
        return None

    @staticmethod
    def _read(response, limit):
        """The body of `response`, at most `limit` bytes (else TooLarge)."""
        length = response.getheader("Content-Length", "")
        if length.isdigit() and int(length) > limit:
            raise TooLarge()
        pieces, size = [], 0
        while True:
            piece = response.read1(65536)
            if not piece:
                return b"".join(pieces) + response.read()  # which marks the response done, for the next one
            size += len(piece)
            if size > limit:
                raise TooLarge()
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


class Deadline:
    """A connection's socket whose every read and write must end by the connection's deadline,
    however the other side dribbles or repeats itself: http.client, given a timeout, waits that
    long for each read, so it would read an endless stream of `100 Continue` answers, or headers
    sent a byte a second, for as long as they come."""

    def __init__(self, sock, connection):
        self.sock, self.connection = sock, connection
        self.readers, self.closed = 0, False  # as a socket, it closes once its last reader has

    def left(self):
        """Give the next read or write the time left, or raise timeout if there is none."""
        left = self.connection.deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("the exchange took longer than its timeout")
        self.sock.settimeout(left)

    def sendall(self, data):
        self.left()
        self.sock.sendall(data)

    def recv_into(self, buffer):
        self.left()
        return self.sock.recv_into(buffer)

    def makefile(self, mode="rb"):
        self.readers += 1
        return io.BufferedReader(Reader(self))

    def close(self, reader=False):
        self.readers -= reader
        self.closed = self.closed or not reader
        if self.closed and not self.readers:
            self.sock.close()


class Reader(io.RawIOBase):
    """What http.client reads a response from: the Deadline's socket, a read at a time."""

    def __init__(self, deadline):
        self.deadline = deadline

    def readable(self):
        return True

    def readinto(self, buffer):
        return self.deadline.recv_into(buffer)

    def close(self):
        if not self.closed:
            self.deadline.close(reader=True)
        super().close()


class Deadlined:
    """An HTTP connection whose exchanges each end by its `deadline` (set before each), connecting included."""

    deadline = math.inf

    def connect(self):
        self.timeout = max(self.deadline - time.monotonic(), 0.001)
        super().connect()  # type: ignore[misc]
        self.sock = Deadline(self.sock, self)


class Connection(Deadlined, http.client.HTTPConnection):
    pass


class SecureConnection(Deadlined, http.client.HTTPSConnection):
    pass


def unmark(value, marks):
    """Decode the base64 text at the places an `@base64_` header marks (for clients); ValueError
    if marked text is not base64."""
    if marks is True and type(value) is str:
        data = blobs.from_base64(value)
        if data is None:
            raise ValueError(f"{value[:40]!r} is marked as bytes in @base64_, but is not base64")
        return data
    if type(marks) is not dict:
        return value
    if type(value) is list:
        return [unmark(element, marks.get("*")) for element in value]
    if type(value) is dict:
        return {key: unmark(element, marks.get(key, marks.get("*"))) for key, element in value.items()}
    return value
