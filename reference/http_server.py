"""The HTTP transport: POST a message to one path, get a message back.

How this works
--------------
`ThreadingHTTPServer` gives every connection a thread. `Handler.do_POST`
reads exactly Content-Length bytes, hands them to `Service.handle`, and writes
the reply with status 200 whatever the result: errors travel inside the
envelope. HTTP statuses only describe HTTP problems:

    404  a path other than the API path       405  a method other than POST
    411  no Content-Length                    413  a body over the size limit
    431  over MAX_HEADERS bytes of headers    503  busy (see below)
    400  unclear framing: a Content-Length that is not a number, two of them,
         Transfer-Encoding beside one, a broken header line

After a 4xx with a body still coming, the connection is closed gently (the
rest is read and dropped for a moment, so the client reads the answer).

Connections are kept alive, each idle, in io (a request arriving or its
answer leaving) or at work; `timeout` bounds the time idle or in io, so a
whole request must arrive in that time however slowly it trickles. When all
`max_connections` slots are taken, a newcomer takes the slot of the oldest
idle connection, else of a request arriving for over PATIENCE seconds, else
gets 503. Processing takes many times a message's size in memory, so requests
over LARGE bytes take turns one at a time (at most QUEUE admitted, 503 beyond),
smaller ones SMALL at a time, and one that waits over WAIT seconds gets 503.

`stop()` is graceful: requests in flight get GRACE seconds to be answered.
With `tls`, an ssl.SSLContext, the server speaks HTTPS. A response goes out
in one write with TCP_NODELAY, or each would wait ~40 ms for a delayed ACK.
`Server(service)` serves any object whose `handle(bytes)` returns a `Reply`.
"""

import http.client
import logging
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

log = logging.getLogger("reference")


class Answering(Protocol):
    """What a Server serves: anything that answers request bytes with a Reply (a Service)."""

    def handle(self, data: bytes) -> Any: ...


MAX_BODY = 1024 * 1024  # bytes
TIMEOUT = 30  # seconds a connection may stay idle, or take to send a request
MAX_CONNECTIONS = 100
PATIENCE = 1  # seconds a request may take to arrive before a newcomer may take its slot
MAX_HEADERS = 64 * 1024  # bytes of header lines in one request
LARGE = 16 * 1024  # bytes from which a request is large: one is processed at a time
SMALL = 16  # smaller requests processed at once (each takes milliseconds)
QUEUE = 8  # large requests admitted at once (reading, waiting or processed); beyond, 503
WAIT = 10  # seconds a request may wait for its turn; beyond, 503
GRACE = 10  # seconds that requests in flight get to finish when the server stops
LINGER = 2  # seconds a refused body is read and thrown away, so that its sender reads the refusal
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 38\r\n\r\n"
        b"Too many connections; try again soon.\n")
RETRY = [("Retry-After", "1")]


class Handler(BaseHTTPRequestHandler):
    """Answers one connection's requests."""

    protocol_version = "HTTP/1.1"
    default_request_version = "HTTP/1.1"  # so even a garbage request line gets a status line
    server_version = "reference"
    error_content_type = "text/plain; charset=utf-8"
    error_message_format = "%(code)d %(message)s: %(explain)s\n"
    wbufsize = -1  # buffer the status line, headers and body into one write

    def setup(self):
        self.timeout = self.server.timeout
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if isinstance(self.connection, ssl.SSLSocket):  # in the connection's thread, within its timeout
            self.connection.do_handshake()

    def handle_one_request(self):
        if self.server.stopping:
            self.close_connection = True
            return
        self.server.watch(self.connection, "idle")
        super().handle_one_request()

    def parse_request(self):
        """Read the headers of a request whose first line has come, and refuse unclear framing."""
        self.server.watch(self.connection, "io")
        stream, self.rfile = self.rfile, HeaderBlock(self.rfile, MAX_HEADERS)
        try:
            parsed = super().parse_request()  # which answers 431 when HeaderBlock says the block is too long
        finally:
            stream, self.rfile = self.rfile, stream
        if not parsed:
            if stream.left < 0:
                self.linger()
            return False
        if self.path.startswith(("http://", "https://")):  # absolute form: the path is what counts
            self.path = "/" + self.path.split("/", 3)[3] if self.path.count("/") > 2 else "/"
        lengths = self.headers.get_all("Content-Length") or []
        problem = (self.headers.defects and "A header line is malformed"
                   or len(lengths) > 1 and "A request has one Content-Length header"
                   or "Transfer-Encoding" in self.headers and lengths
                   and "Transfer-Encoding and Content-Length together are ambiguous")
        if problem:
            self.refuse(400, problem, [])
            return False
        return True

    def handle_expect_100(self):
        problem = refusal(self.command, self.path, self.headers.get("Content-Length"), self.server.path,
                          self.server.max_body)
        if problem:  # refuse now, rather than invite a body that will not be read
            self.refuse(*problem)
            return False
        super().handle_expect_100()
        self.wfile.flush()  # the client waits for this line before it sends the body
        return True

    def do_POST(self):
        started = time.perf_counter()
        length = self.headers.get("Content-Length")
        problem = refusal(self.command, self.path, length, self.server.path, self.server.max_body)
        if problem:
            return self.refuse(*problem)
        large = int(length) > LARGE
        if large and not self.server.admitted.acquire(blocking=False):  # it holds its place, released below
            return self.refuse(503, "Too many large requests at once; try again soon", RETRY)
        try:
            reply = self.answer(int(length), large)
        finally:
            if large:
                self.server.admitted.release()
        if reply is None:
            return
        self.send_response(200)
        if self.server.stopping:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Type", reply.media_type)
        self.send_header("Content-Length", str(len(reply.data)))
        self.end_headers()
        self.wfile.write(reply.data)
        self.wfile.flush()
        self.server.watch(self.connection, "idle")  # before the client, answered, may send its next request
        log.info("%s %s %s -> %s %dB %.1fms", self.client_address[0], self.command,
                 reply.function or "-", reply.result, len(reply.data),
                 (time.perf_counter() - started) * 1000)

    def answer(self, length, large):
        """Read the body and answer it: a Reply, or None if the client went away or was answered 503."""
        try:
            data = self.rfile.read(length)
        except OSError:  # the client stalled past the timeout, or went away
            data = b""
        if len(data) < length:
            self.close_connection = True  # the client closed the connection early
            return None
        self.server.watch(self.connection, "work")
        turn = self.server.large if large else self.server.small
        if not turn.acquire(timeout=WAIT):
            self.refuse(503, f"The request waited over {WAIT} s for its turn; try again soon", RETRY, body_read=True)
            return None
        try:
            return self.server.service.handle(data)
        except Exception:  # a bug of the service itself, not of a handler: those are answered
            log.exception("the service could not answer a request")
            self.refuse(500, "The server failed to answer; its log says why", [], body_read=True)
            return None
        finally:
            turn.release()
            self.server.watch(self.connection, "io")

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_POST

    def refuse(self, status, message, headers, body_read=False):
        """Answer an HTTP problem in plain text; close the connection if a body may follow unread."""
        body = (message + "\n").encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        unread = not body_read and (self.headers.get("Content-Length", "0") != "0"
                                    or "Transfer-Encoding" in self.headers)
        if unread or status in (400, 500, 503):
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        log.info("%s %s %s -> HTTP %d", self.client_address[0], self.command, self.path, status)
        if unread:
            self.linger()

    def linger(self):
        """Send the answer, then drop what the client still sends for a moment, so that it reads the answer."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER
            while (left := deadline - time.monotonic()) > 0:
                self.connection.settimeout(left)
                if not self.connection.recv(65536):
                    break
        except OSError:
            pass

    def send_response_only(self, code, message=None):
        """Write the status line with the standard reason phrase: http.server's details go in the body."""
        super().send_response_only(code)

    def log_request(self, code="-", size="-"):
        pass  # do_POST and refuse() log one line per request, with more to say

    def log_message(self, format, *args):
        log.warning("%s %s", self.client_address[0], format % args)


class HeaderBlock:
    """The request's stream while header lines are read: over `limit` bytes it fails, answered 431."""

    def __init__(self, stream, limit):
        self.stream, self.left = stream, limit

    def readline(self, size=-1):
        line = self.stream.readline(self.left + 1 if size < 0 else min(size, self.left + 1))
        self.left -= len(line)
        if self.left < 0:
            error = http.client.LineTooLong("header block")  # which parse_request answers with 431
            error.args = (f"the header lines are over {MAX_HEADERS} bytes in all",)  # not one line: all of them
            raise error
        return line


def refusal(method, path, length, api_path, max_body):
    """Why an HTTP request cannot carry a message, as (status, explanation, headers), or None."""
    if path.split("?")[0] != api_path:
        return 404, f"Not found: the API is at {api_path}", []
    if method != "POST":
        return 405, "Only POST is allowed", [("Allow", "POST")]
    if not length:
        return 411, "A Content-Length header is required", []
    if not (length.isascii() and length.isdigit()):
        return 400, "The Content-Length header is not a number", []
    if len(length.lstrip("0")) > len(str(max_body)) or int(length) > max_body:
        return 413, f"The body is over the limit of {max_body} bytes", []
    return None


class Server(ThreadingHTTPServer):
    """An HTTP server for one Service at one path, a thread and (see above) a slot per connection."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # connections the kernel may hold before accept (socketserver says 5)

    def __init__(self, service: Answering, host: str = "127.0.0.1", port: int = 8000, path: str = "/api",
                 max_body: int = MAX_BODY, timeout: float = TIMEOUT, max_connections: int = MAX_CONNECTIONS,
                 tls: ssl.SSLContext | None = None):
        self.service, self.path, self.max_body = service, path, max_body
        self.slots = threading.BoundedSemaphore(max_connections)
        self.admitted = threading.BoundedSemaphore(QUEUE)
        self.large, self.small = threading.BoundedSemaphore(1), threading.BoundedSemaphore(SMALL)
        self.serving = self.stopping = False
        self.states: dict[socket.socket, tuple[str, float]] = {}  # state and since when, of every connection
        self.lock = threading.Lock()
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), Handler)
        self.timeout, self.tls = timeout, tls
        if tls is not None:  # HTTPS; each handshake is made by the connection's own thread (setup)
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def watch(self, connection, state):
        """Note that a connection is now idle, in io or at work."""
        with self.lock:
            self.states[connection] = (state, time.monotonic())

    def service_actions(self):
        """Close connections that have been idle, or sending a request, for too long."""
        now = time.monotonic()
        with self.lock:
            late = [c for c, (state, since) in self.states.items() if state != "work" and now - since > self.timeout]
        for connection in late:
            _hang_up(connection)

    def reclaim(self):
        """Close the oldest idle connection, else the oldest request arriving for over PATIENCE seconds."""
        now = time.monotonic()
        with self.lock:
            candidates = sorted((state != "idle", since, id(c), c) for c, (state, since) in self.states.items()
                                if state == "idle" or (state == "io" and now - since > PATIENCE))
        if candidates:
            _hang_up(candidates[0][-1])
        return bool(candidates)

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False) and not (self.reclaim() and self.slots.acquire(timeout=1)):
            try:
                request.settimeout(1)
                request.sendall(BUSY)
            except OSError:
                pass
            log.warning("%s refused: already serving the most connections allowed", client_address[0])
            self.shutdown_request(request)
            return
        self.watch(request, "idle")
        super().process_request(request, client_address)

    def handle_error(self, request, client_address):
        """A connection's thread failed: a client that went away is routine, anything else a bug."""
        if isinstance(sys.exc_info()[1], OSError):
            log.debug("%s went away: %s", client_address[0], sys.exc_info()[1])
        else:
            log.exception("the connection of %s failed", client_address[0])

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.lock:
                self.states.pop(request, None)
            self.slots.release()

    def serve_forever(self, poll_interval=0.5):
        """Serve until `shutdown()` or `stop()`, saying where (in the log, or on standard error)."""
        log.info("serving at %s", self.url)
        if not (logging.getLogger().handlers or log.handlers):
            print(f"Serving at {self.url}; set up logging (logging.basicConfig) to see each request",
                  file=sys.stderr)
        self.serving = True
        try:
            super().serve_forever(poll_interval)
        finally:
            self.serving = False

    def stop(self, grace: float = GRACE) -> int:
        """Stop gracefully (from another thread): requests in flight get `grace` seconds; return how many were cut."""
        self.stopping = True
        if self.serving:
            self.shutdown()
        self.server_close()
        deadline = time.monotonic() + grace
        while True:
            with self.lock:
                idle = [c for c, (state, _) in self.states.items() if state == "idle"]
                busy = [c for c, (state, _) in self.states.items() if state != "idle"]
            for connection in idle:
                _hang_up(connection)
            if not busy or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        for connection in busy:
            _hang_up(connection)
        return len(busy)

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"{'https' if self.tls else 'http'}://{f'[{host}]' if ':' in host else host}:{port}{self.path}"


def _hang_up(connection):
    """End a connection from another thread: its thread's next read or write fails at once."""
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
