"""The target: a server of the protocol at a URL, reached over HTTP or HTTPS, every exchange
within its timeout (deadlines.py). How a request is framed (`send`), how much of an answer is
read (`read`), and whether the target answers at all (`wait`, `answers`) are decided here;
what is sent and what is expected, in runs/server_suite.py.
"""

import copy
import http.client
import json
import ssl
import time
import urllib.parse

from . import deadlines

MAX_ANSWER = 64 * 1024 * 1024  # bytes of one answer the suite reads; a server that sends more fails the case
MAX_VALUES = 2_000_000  # values (arrays, objects, and what they hold) of one JSON answer the suite decodes:
MAX_BINARY = 4 * 1024 * 1024  # and bytes of a MessagePack one, whose every byte may be a value: decoding
# costs about 60 bytes of memory a value (the largest answers the cases expect hold 800,000 or so)
FIRST_WORD = 1  # seconds of silence after which waiting for a target says why (the rest of --wait follows)


class Trouble(Exception):
    """The target cannot be tested: unreachable, or not a server of the protocol."""


class Overlong(http.client.HTTPException):
    """An answer holds more than the suite reads (MAX_ANSWER, MAX_BINARY, MAX_VALUES)."""


class Target:
    """The server under test."""

    def __init__(self, url, timeout=10, cafile=None, timeout_option="--timeout"):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"the target must be an http:// or https:// URL, such as "
                             f"http://127.0.0.1:8000/api, not {url!r}")
        self.url, self.host, self.path = url, parts.hostname, parts.path or "/"
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self.timeout, self.tls, self.timeout_option = timeout, None, timeout_option  # (the option that sets it)
        self.kept = None  # the connection post(keep=True) keeps alive
        self.stopped = ""  # why the target stopped answering during the run, once it has
        if cafile and parts.scheme != "https":
            raise ValueError(f"--cafile is for an https:// target, and {url} is not one")
        if parts.scheme == "https":  # certificates checked, against --cafile if given
            try:
                self.tls = ssl.create_default_context(cafile=cafile)
            except ssl.SSLError as error:  # (OpenSSL's own words name its source file and line)
                raise ValueError(f"--cafile {cafile}: " + (
                    "it holds no PEM certificate (a key, or DER?)" if error.reason == "NO_CERTIFICATE_OR_CRL_FOUND"
                    else f"OpenSSL says {error.reason or 'it is not PEM'}")) from None
            except OSError as error:
                raise ValueError(f"--cafile {cafile}: {error.strerror}") from None

    def another(self):
        """The same target, with a connection of its own (for another thread)."""
        other = copy.copy(self)
        other.kept = None
        return other

    def connect(self):
        """A connection whose every exchange ends within the timeout (deadlines.py)."""
        if self.tls:
            return deadlines.SecureConnection(self.host, self.port, context=self.tls)
        return deadlines.Connection(self.host, self.port)

    def post(self, message, data=None, media_type="application/json", keep=False, timeout=None):
        """POST a JSON message (or `data`, bytes of `media_type`); return (HTTP status, the answer's bytes,
        its Content-Type). With `keep`, on one connection kept alive from call to call (for one caller at a time), a new one
        when the target has closed it. `timeout` is the run's (--timeout) unless given."""
        reused = keep and self.kept is not None
        connection = (self.kept if reused else self.connect()).exchange(timeout or self.timeout)
        self.kept = None
        try:
            connection.request("POST", self.path, json.dumps(message).encode() if data is None else data,
                               {"Content-Type": media_type})
            response = connection.getresponse()
            answer = read(response)
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
            connection.close()
            if reused:  # (closed while idle, between two calls: the call was not read, so it goes again)
                return self.post(message, data, media_type, keep, timeout)
            raise
        except BaseException:
            connection.close()
            raise
        if keep and not response.will_close:
            self.kept = connection
        else:
            connection.close()
        return response.status, answer, response.getheader("Content-Type", "")

    def answers(self, tries=2):
        """Whether the target answers a ping on a new connection (in one of `tries`)."""
        for _ in range(tries):
            try:
                return self.post([{}, {"fn.ping_": {}}]) is not None
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
        return False

    def wait(self, seconds, waiting=lambda reason: None):
        """Wait until the target answers at all, telling `waiting` why once; raise Trouble if it never does."""
        deadline, tries, hung_up = time.monotonic() + seconds, 0, 0
        while True:
            # (where --wait leaves room for more tries, a server that takes the connection and is silent is told
            # of after FIRST_WORD seconds, not --timeout, and no later try waits much past --wait)
            patience = self.timeout if seconds <= FIRST_WORD else min(self.timeout, FIRST_WORD if tries == 0 else
                                                                     max(deadline - time.monotonic(), FIRST_WORD))
            try:
                return self.post([{}, {"fn.ping_": {}}], timeout=patience)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):  # no answer at all
                reason = "it closed the connection without answering" + (
                    "" if self.tls else " (an HTTPS server does that to plain HTTP: is it an https:// URL?)")
                hung_up += 1
                if hung_up == 3:  # (a server starting up refuses connections; one that takes and drops them is up)
                    raise Trouble(f"cannot reach {self.url}: {reason}") from None
            except Overlong as error:
                raise Trouble(f"{self.url} answered fn.ping_ with more than the suite reads: {error}") from None
            except http.client.HTTPException as error:
                raise Trouble(f"{self.url} is not a server of the protocol: its answer is not HTTP "
                              f"({type(error).__name__}: {' '.join(str(error).split())[:80] or 'nothing'})") from None
            except ssl.SSLCertVerificationError as error:
                raise Trouble(f"cannot reach {self.url}: its certificate is not trusted ({error.verify_message}); "
                              f"to trust a private CA, give its certificate with --cafile") from None
            except ssl.SSLError as error:
                said = "it does not speak TLS (is it an http:// URL?)" if error.reason == "WRONG_VERSION_NUMBER" else (
                    error.reason or error)
                raise Trouble(f"cannot reach {self.url}: {said}") from None
            except TimeoutError:
                reason = f"no answer within {self.timeout:g} s" + (f" (see {self.timeout_option})" if self.timeout_option
                                                                   else "")
                if patience < self.timeout:
                    reason = (f"it took the connection but has not answered in {patience:g} s" if tries == 0 else
                              f"it took the connection but did not answer within {seconds:g} s")
            except OSError as error:
                reason = error.strerror or str(error)
            if time.monotonic() >= deadline:
                raise Trouble(f"cannot reach {self.url}: {reason}")
            tries += 1
            if tries == 1:
                waiting(reason)
            time.sleep(0.2)


def read(response):
    """An answer's body; one over MAX_ANSWER bytes is a failure, not read to its end, and so is one that
    holds more values than the suite decodes (above)."""
    length = response.getheader("Content-Length", "")
    too_long = Overlong(f"the answer is over {MAX_ANSWER} bytes, more than the suite reads")
    if length.isdigit() and int(length) > MAX_ANSWER:
        raise too_long
    data = response.read() if length.isdigit() else _until_the_end(response)  # (read says if fewer bytes come)
    if len(data) > MAX_ANSWER:
        raise too_long
    return decodable(data)


def decodable(data):
    """An answer's body, if it holds no more than the suite decodes (above); else Overlong."""
    if data[:1] == b"\x92" and len(data) > MAX_BINARY:
        raise Overlong(f"the answer is over {MAX_BINARY} bytes of MessagePack, more than the suite decodes")
    if len(data) > MAX_VALUES and sum(map(data.count, (b"[", b"{", b","))) > MAX_VALUES:
        raise Overlong(f"the answer holds over {MAX_VALUES:,} values, more than the suite decodes")
    return data


def _until_the_end(response):
    """A body without a length, up to MAX_ANSWER + 1 bytes. One delimited by the connection's close
    also ends at a reset: a server that answers before it has read the whole request (a 400 for
    its framing) and closes makes its kernel reset the connection, after the answer it sent."""
    pieces, size = [], 0
    try:
        while size <= MAX_ANSWER and (piece := response.read1(MAX_ANSWER + 1 - size)):
            pieces.append(piece)
            size += len(piece)
    except ConnectionResetError:
        if response.chunked:
            raise
    return b"".join(pieces)


def send(connection, method, path, data, media_type, framing=None):
    """Send one request: a POST's body framed by its Content-Length, or with `framing` "chunked" in
    chunks (two, if it has two bytes), "none" told no way at all, "both" chunked with a
    Content-Length too, "two-lengths" with two Content-Lengths that disagree, "length-not-a-number"
    with one in hexadecimal, "blank-before-colon" with a header line `X-Probe : 1`, "length-behind-a-cr"
    with its Content-Length only behind a bare CR in another header's line. A server may
    answer before it has read the whole body (411, 413, 400) and close: its answer is read all the same."""
    try:
        _send(connection, method, path, data, media_type, framing)
    except (BrokenPipeError, ConnectionResetError):
        if connection.sock is None:  # refused while connecting: there is no answer to read
            raise


FRAMED_BY_HAND = {  # framing -> the body sent and its header lines (Content-Type aside; a name None: a raw line)
    "none": lambda data: (data, []),
    "both": lambda data: _both(b"%x\r\n%s\r\n0\r\n\r\n" % (len(data), data)),
    "two-lengths": lambda data: (data, [("Content-Length", len(data)), ("Content-Length", len(data) - 1)]),
    "length-not-a-number": lambda data: (data, [("Content-Length", f"0x{len(data):x}")]),
    "blank-before-colon": lambda data: (data, [("X-Probe ", 1), ("Content-Length", len(data))]),
    "length-behind-a-cr": lambda data: (data, [(None, b"X-Probe: 1\rContent-Length: %d" % len(data))]),
}


def _both(chunked):
    return chunked, [("Content-Length", len(chunked)), ("Transfer-Encoding", "chunked")]


def _send(connection, method, path, data, media_type, framing):
    if method != "POST":
        connection.request(method, path)
    elif framing == "chunked":
        connection.request(method, path, iter([data[:len(data) // 2], data[len(data) // 2:]]),
                           {"Content-Type": media_type, "Transfer-Encoding": "chunked"}, encode_chunked=True)
    elif framing in FRAMED_BY_HAND:
        body, lines = FRAMED_BY_HAND[framing](data)
        connection.putrequest(method, path)
        connection.putheader("Content-Type", media_type)
        for name, value in lines:
            if name is None:  # a line putheader rightly refuses (a bare CR): this request is meant to be malformed
                connection._output(value)
            else:
                connection.putheader(name, str(value))
        connection.endheaders()
        connection.send(body)
    else:
        connection.request(method, path, data, {"Content-Type": media_type})
