"""The HTTP server: POST a message to one path, get a message back.

How this works
--------------
`ThreadingHTTPServer` gives every connection a thread. `Handler.do_POST`
reads exactly Content-Length bytes, hands them to `Service.handle`, and writes
the reply with status 200, whatever the result: errors travel inside the
envelope. HTTP statuses only describe HTTP problems:

    404  a path other than the API path       405  a method other than POST
    411  no Content-Length                    413  a body over the size limit
    400  a Content-Length that is not a number

Connections are HTTP/1.1 keep-alive. Responses go out in one write with
TCP_NODELAY set, because otherwise each response of a kept-alive connection
waits ~40 ms for the client's delayed ACK. A socket timeout frees the thread
of a client that stalls mid-request.

`python -m reference.server` serves the calculator.
"""

import argparse
import logging
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import calculator, testbed

log = logging.getLogger("reference")

MAX_BODY = 1024 * 1024  # bytes
TIMEOUT = 30  # seconds a connection may stall mid-request
MAX_CONNECTIONS = 100
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\n"
        b"Content-Type: text/plain; charset=utf-8\r\nContent-Length: 38\r\n\r\n"
        b"Too many connections; try again soon.\n")


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

    def do_POST(self):
        started = time.perf_counter()
        length = self.headers.get("Content-Length")
        problem = refusal(self.command, self.path, length, self.server.path, self.server.max_body)
        if problem:
            return self.refuse(*problem)
        try:
            data = self.rfile.read(int(length))
        except OSError:  # the client stalled past the timeout, or went away
            self.close_connection = True
            return
        if len(data) < int(length):
            self.close_connection = True  # the client closed the connection early
            return
        reply = self.server.service.handle(data)
        self.send_response(200)
        self.send_header("Content-Type", reply.media_type)
        self.send_header("Content-Length", str(len(reply.data)))
        self.end_headers()
        self.wfile.write(reply.data)
        log.info("%s %s %s -> %s %dB %.1fms", self.client_address[0], self.command,
                 reply.function or "-", reply.result, len(reply.data),
                 (time.perf_counter() - started) * 1000)

    do_GET = do_HEAD = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_POST

    def refuse(self, status, message, headers):
        """Answer an HTTP-level problem with a plain-text explanation, and close the
        connection if a body may follow that was not read."""
        body = (message + "\n").encode()
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if self.headers.get("Content-Length", "0") != "0" or "Transfer-Encoding" in self.headers:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        log.info("%s %s %s -> HTTP %d", self.client_address[0], self.command, self.path, status)

    def log_request(self, code="-", size="-"):
        pass  # do_POST and refuse() log one line per request, with more to say

    def log_message(self, format, *args):
        log.warning("%s %s", self.client_address[0], format % args)


def refusal(method, path, length, api_path, max_body):
    """Why an HTTP request cannot carry a message, as (status, explanation, headers), or None.

    Shared by every transport, so they all refuse the same requests the same way."""
    if path.split("?")[0] != api_path:
        return 404, f"Not found: the API is at {api_path}", []
    if method != "POST":
        return 405, "Only POST is allowed", [("Allow", "POST")]
    if not length:
        return 411, "A Content-Length header is required", []
    if not length.isdigit():
        return 400, "The Content-Length header is not a number", []
    if int(length) > max_body:
        return 413, f"The body is over the limit of {max_body} bytes", []
    return None


class Server(ThreadingHTTPServer):
    """An HTTP server for one Service at one path, with a thread per connection.

    At most `max_connections` connections are served at once; one more is
    answered 503 with Retry-After and closed, so no crowd can exhaust threads."""

    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # connections the kernel may hold before accept (socketserver says 5)

    def __init__(self, service, host="127.0.0.1", port=8000, path="/api",
                 max_body=MAX_BODY, timeout=TIMEOUT, max_connections=MAX_CONNECTIONS):
        self.service, self.path, self.max_body = service, path, max_body
        self.slots = threading.BoundedSemaphore(max_connections)
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host, port), Handler)
        self.timeout = timeout

    def process_request(self, request, client_address):
        if not self.slots.acquire(blocking=False):
            try:
                request.settimeout(1)
                request.sendall(BUSY)
            except OSError:
                pass
            log.warning("%s refused: already serving the most connections allowed", client_address[0])
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    @property
    def url(self):
        host, port = self.server_address[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}{self.path}"


def add_options(parser, port):
    """Add the options every server command has to an argparse parser."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=port, help="port to listen on (default %(default)s)")
    parser.add_argument("--path", default="/api", help="the API path (default %(default)s)")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"],
                        help="logging detail (default %(default)s)")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default %(default)s)")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                        help="connections served at once; more get HTTP 503 (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                        help="how long a connection may stall mid-request (default %(default)s)")


def check_options(parser, options):
    """Refuse option values argparse cannot check by itself."""
    if not options.path.startswith("/"):
        parser.error("--path must start with /")
    if not 0 <= options.port <= 65535:
        parser.error(f"--port {options.port} is not between 0 and 65535")
    for name in ("max_body", "max_connections", "timeout"):
        if getattr(options, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")


def run(service, options, what):
    """Serve `service` as the options say until Ctrl-C; return the exit status."""
    logging.basicConfig(level=options.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    try:
        server = Server(service, options.host, options.port, options.path, options.max_body,
                        options.timeout, options.max_connections)
    except OSError as error:
        print(f"error: cannot listen on {options.host}:{options.port}: {error.strerror}", file=sys.stderr)
        return 1
    print(f"Serving {what} at {server.url} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("Stopped.")
    finally:
        server.server_close()
    return 0


def main(argv=None):
    """Serve the calculator (or the testbed) over HTTP until interrupted."""
    parser = argparse.ArgumentParser(
        prog="python -m reference.server",
        description="Serve the demo calculator, or the conformance suite's testbed, over HTTP "
                    "(POST [headers, body] messages).")
    parser.add_argument("--service", choices=["calculator", "testbed"], default="calculator",
                        help="the calculator, or the testbed that conformance/README.md describes "
                             "(default %(default)s)")
    add_options(parser, port=8000)
    calculator_options = parser.add_argument_group("options of the calculator")
    calculator_options.add_argument("--unavailable-rate", type=_rate, metavar="RATE",
                                    help="answer ErrorUnavailable to this fraction of calls, to test "
                                         "clients (default 0)")
    limits = {"max_namespaces": "namespaces kept; the least recently used is forgotten",
              "max_sessions": "sessions kept; the oldest ends", "max_variables": "variables in a namespace",
              "tape_length": "evaluations on a tape; the oldest are dropped"}
    for name, meaning in limits.items():
        calculator_options.add_argument(f"--{name.replace('_', '-')}", type=positive, metavar="N",
                                        help=f"{meaning} (default 1000)")
    options = parser.parse_args(argv)
    check_options(parser, options)
    given = {name: value for name in ["unavailable_rate", *limits] if (value := getattr(options, name)) is not None}
    if options.service == "testbed":
        if given:
            parser.error(f"--{next(iter(given)).replace('_', '-')} is an option of the calculator, not of the testbed")
        return run(testbed.service(), options, "the testbed")
    return run(calculator.service(**given), options, "the calculator")


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _rate(text):
    try:
        rate = float(text)
    except ValueError:
        rate = -1
    if not 0 <= rate <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1")
    return rate


if __name__ == "__main__":
    sys.exit(main())
