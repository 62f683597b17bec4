"""The HTTP transport: POST a message to one path, get a message back.

How this works
--------------
`ThreadingHTTPServer` gives every connection a thread. `RequestHandler.do_POST`
reads exactly Content-Length bytes, hands them to the service's `handle()`,
and writes the reply with status 200 whatever the result: errors travel
inside the envelope. HTTP statuses only describe HTTP problems (`refusal()`):

    404  a path other than the API path       405  a method other than POST
    411  no Content-Length                    413  a body over the size limit
    400  a Content-Length that is not a number, or two of them, or one beside
         Transfer-Encoding, or a header line that RFC 9112 refuses
    503  no place for the connection, or for a large request, or no turn
         for a costly one (admission.py)

After a refusal with a body still coming, the connection is closed gently:
the rest is read and dropped for a moment, so that the client reads the
answer. A response goes out in one write with TCP_NODELAY, or each would wait
~40 ms for a delayed ACK. `Server(service)` serves any object whose
`handle(bytes, client)` returns a Reply (`client` is the address it came
from); with `tls`, an ssl.SSLContext, it speaks HTTPS. Connections and large
requests take places from the service's Admission (or the server's own, for
a service without one). This is all a server needs; the engine room's guard
(engine/guard.py) adds what keeps it fair under load and abuse.
"""

import logging
import signal
import socket
import ssl
import sys
import threading
import time
from contextlib import nullcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from .admission import LARGE, RETRY, Admission
from .rules import Bounds, HeaderLines, refusal

log = logging.getLogger("reference")
access = logging.getLogger("reference.access")  # a line for each request (the servers' --access-log)

LINGER = 2  # seconds a refused body is read and dropped, so that its sender reads the refusal
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 38\r\n\r\n"
        b"Too many connections; try again soon.\n")


class Answering(Protocol):
    """What a Server serves: anything that answers request bytes with a Reply (a Service)."""

    def handle(self, data: bytes, client: str = "") -> Any: ...


class RequestHandler(BaseHTTPRequestHandler):
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
        if isinstance(self.connection, ssl.SSLSocket):  # here, in the connection's own thread and time
            self.connection.do_handshake()

    def parse_request(self):
        """Read the request's headers, and refuse framing that could be read two ways."""
        for _ in range(2):  # an empty line or two before a request line are ignored (RFC 9112, 2.2)
            if self.raw_requestline not in (b"\r\n", b"\n"):
                break
            self.raw_requestline = self.rfile.readline(65537)
        if not self.raw_requestline.endswith(b"\n"):  # the client hung up halfway: no one to answer
            log.debug("%s went away in the middle of a request line", self.client_address[0])
            self.close_connection = True
            return False
        if not self.read_head():
            return False
        lengths = self.headers.get_all("Content-Length") or []
        self.content_length = lengths[0] if lengths else None  # (each look-up goes through every header)
        problem = (self.headers.defects and "A header line is malformed"
                   or len(lengths) > 1 and "A request has one Content-Length header"
                   or "Transfer-Encoding" in self.headers and lengths
                   and "Transfer-Encoding and Content-Length together are ambiguous")
        if problem:
            self.refuse(400, problem)
            return False
        return True

    def read_head(self):
        """Read the request line and header lines, as http.server does (it answers what is wrong), each
        header line held to RFC 9112's grammar (HeaderLines); False once the request is refused."""
        lines = HeaderLines(self.rfile)
        stream, self.rfile = self.rfile, lines
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = stream
        if parsed and lines.problem:
            self.refuse(400, lines.problem)
            return False
        return parsed

    def handle_expect_100(self):
        # (called while read_head reads the header lines, through HeaderLines: self.rfile is that)
        problem = ((400, self.rfile.problem) if self.rfile.problem else
                   refusal(self.command, self.path, self.headers.get("Content-Length"), self.server.path,
                           self.server.max_body))
        if problem:  # refuse now, rather than invite a body that will not be read
            self.refuse(*problem)
            return False
        super().handle_expect_100()
        self.wfile.flush()  # the client waits for this line before it sends the body
        return True

    def do_POST(self):
        started, length = time.perf_counter(), self.content_length
        problem = refusal(self.command, self.path, length, self.server.path, self.server.max_body)
        if problem:
            return self.refuse(*problem)
        admission, large = self.server.admission, int(length) > LARGE
        place = admission.large.take(self.client_address[0], self.holder(), self.give_up) if large else None
        if large and place is None:  # (a large request holds a place from here to its answer)
            return self.refuse(503, "Too many large requests at once; try again soon", RETRY)
        try:
            data = self.receive(int(length))
            if data is not None:
                self.answer(data, started, nullcontext if large else admission.cheap)
        finally:
            if place is not None:
                admission.large.release(place)

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_POST

    def receive(self, length):
        """The request's body; None if the client went away or stalled past the timeout."""
        try:
            data = self.rfile.read(length)
        except OSError:
            data = b""
        if len(data) < length:
            self.close_connection = True
            return None
        return data

    def holder(self):
        """What the transport knows of this connection, for choosing whose place a newcomer takes."""
        return None

    def give_up(self):
        """Give this connection's place up for a newcomer: end it from another thread."""
        hang_up(self.connection)

    def answer(self, data, started, scope=nullcontext):
        """Have the service answer the body `data` (within `scope`: admission.cheap for a cheap request),
        and send its reply."""
        try:
            with scope():
                reply = self.server.service.handle(data, self.client_address[0])
        except TimeoutError:  # the engine room's service found no turn for it in time
            return self.refuse(503, "The server is busy; try again soon", RETRY, body_read=True)
        except Exception:  # a bug of the service itself, not of a handler: those are answered
            log.exception("the service could not answer a request")
            return self.refuse(500, "The server failed to answer; its log says why", body_read=True)
        self.send_response(200)
        if self.server.stopping:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Type", reply.media_type)
        self.send_header("Content-Length", str(len(reply.data)))
        self.end_headers()
        self.wfile.write(reply.data)
        self.wfile.flush()
        if access.isEnabledFor(logging.INFO):
            access.info("%s %s %s -> %s %dB %.1fms", self.client_address[0], self.command, reply.function or "-",
                        reply.result, len(reply.data), (time.perf_counter() - started) * 1000)

    def refuse(self, status, message, headers=(), body_read=False):
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
        access.info("%s %s %s -> HTTP %d", self.client_address[0], self.command, self.path, status)
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
        pass  # answer() and refuse() log one line per request, with more to say

    def log_message(self, format, *args):
        log.warning("%s %s", self.client_address[0], format % args)


STOPPING = [signal.SIGINT, signal.SIGTERM] + [signal.SIGHUP] * hasattr(signal, "SIGHUP")  # a graceful stop


class Server(ThreadingHTTPServer):
    """An HTTP server for one service at one path, a thread per connection."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # connections the kernel may hold before accept (socketserver says 5)
    handler = RequestHandler
    grace = 0  # seconds that requests in flight get to finish when the server stops

    def __init__(self, service: Answering, host: str = "127.0.0.1", port: int = 8000, path: str = "/api",
                 tls: ssl.SSLContext | None = None, bounds: Bounds = Bounds()):
        self.service, self.path, self.max_body = service, path, bounds.max_body
        self.serving = self.stopping = self.hurried = False  # (hurried: stop without waiting, as asked)
        self.admission = getattr(service, "admission", None) or Admission()
        self.admission.connections.size = bounds.max_connections
        self.held: dict = {}  # a connection's socket -> its Place
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), self.handler)
        self.timeout, self.tls = bounds.timeout, tls
        if tls is not None:  # HTTPS; each handshake is made by the connection's own thread (setup)
            self.socket = tls.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)

    def process_request(self, request, client_address):
        """Serve a connection in a thread of its own, if it gets a place (see admission.py); else 503."""
        holder = self.holder(request, client_address)
        place = self.admission.connections.take(client_address[0], holder,
                                                holder.give_up if holder else lambda: hang_up(request))
        if place is None:
            try:
                request.settimeout(1)
                request.sendall(BUSY)
            except OSError:
                pass
            log.warning("%s refused: already serving the most connections allowed", client_address[0])
            self.shutdown_request(request)
            return
        self.held[request] = place
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.admission.connections.release(self.held.pop(request))

    def holder(self, request, client_address):
        """What the transport keeps of a connection, for choosing whose place a newcomer takes."""
        return None

    def handle_error(self, request, client_address):
        """A connection's thread failed: a client that went away is routine, anything else a bug."""
        error = sys.exc_info()[1]
        if isinstance(error, ssl.SSLError):  # a client that does not speak TLS to us, or distrusts us
            log.info("%s: the TLS handshake failed (%s)", client_address[0], error.reason or error)
        elif isinstance(error, OSError):
            log.debug("%s went away: %s", client_address[0], error)
        else:
            log.exception("the connection of %s failed", client_address[0])

    def serve_forever(self, poll_interval=0.5):
        """Serve until `shutdown()` or `stop()`, saying where (in the log, or on standard error)."""
        if not (logging.getLogger().handlers or log.handlers):
            print(f"Serving at {self.url}; set up logging (logging.basicConfig) to see each request",
                  file=sys.stderr)
        self.serving = True
        try:
            super().serve_forever(poll_interval)
        finally:
            self.serving = False

    def run(self) -> int:
        """Serve until Ctrl-C, SIGTERM or SIGHUP (its terminal closed), then stop gracefully, saying so; a
        second one stops at once. Return how many requests were cut off."""
        signals = threading.current_thread() is threading.main_thread()
        if signals:  # all stop the same way, even when started with SIGINT ignored (as in a background job)
            for number in STOPPING:
                signal.signal(number, signal.default_int_handler)
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            if signals:  # from here on, a signal is a wish to hurry, wherever it falls
                for number in STOPPING:
                    signal.signal(number, self.hurry)
            print("Stopping" + (f": requests in flight get up to {self.grace:g} s to be answered (Ctrl-C again "
                                "to stop at once)." if self.grace else "."), flush=True)
        cut = self.stop(self.grace)
        print(f"Stopped; cut off {cut} request{'s' * (cut != 1)} in flight." if cut else "Stopped.", flush=True)
        return cut

    def hurry(self, *_):
        """Stop without waiting any longer for the requests in flight (a second signal's handler)."""
        self.hurried = True

    def stop(self, grace: float = 0) -> int:
        """Stop serving (from another thread); return how many requests in flight were cut off."""
        self.stopping = True
        if self.serving:
            self.shutdown()
        self.server_close()
        return 0

    @property
    def url(self) -> str:
        host, port = self.socket.getsockname()[:2]
        return f"{'https' if self.tls else 'http'}://{f'[{host}]' if ':' in host else host}:{port}{self.path}"


def hang_up(connection):
    """End a connection from another thread: its thread's next read or write fails at once."""
    try:
        connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
