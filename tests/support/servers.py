"""Servers for the tests, on free ports, and what talks to them: the reference serving in a thread or as
a command, uvicorn serving an application, hostile servers that never end or drip, a keep-alive
connection, and a service with one wrong behaviour (Mutated)."""

import contextlib
import http.client
import http.server
import json
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import urllib.parse

import msgpack
import uvicorn

from reference import Server
from reference.protocol.service import Reply
from reference.transports import http_server
from reference.transports.rules import Bounds


def started(module, *args, python=(sys.executable,), stderr=subprocess.PIPE, **options):
    """`python -m reference.MODULE ARGS` on a port the system picks (none another test can take meanwhile):
    the process, the lines it printed up to the one that says where it serves, and that URL."""
    process = subprocess.Popen([*python, "-m", f"reference.{module}", *args, "--port", "0"],
                               stdout=subprocess.PIPE, stderr=stderr, text=True, **options)
    printed = []
    while not printed or not printed[-1].startswith("Serving "):
        printed.append(process.stdout.readline())
        if not printed[-1]:
            process.kill()
            raise AssertionError(f"python -m reference.{module} did not start: {process.communicate()[1] or ''}")
    return process, printed, printed[-1].rsplit(" at ", 1)[1].removesuffix(" (Ctrl-C to stop)\n")


@contextlib.contextmanager
def refusing(port=0):
    """The URL of a port bound and never listening: connections to it are refused, and no other
    test's server can take it meanwhile (as one could a port left free)."""
    with socket.socket() as reserved:
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # (past its last server's TIME_WAIT)
        reserved.bind(("127.0.0.1", port))
        yield f"http://127.0.0.1:{reserved.getsockname()[1]}/api"


def respond(handler, data, status=200):
    """Answer a request to a test's own http.server handler with `data`, its whole body."""
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


@contextlib.contextmanager
def answering(answer):
    """Serve `answer(request body) -> response body` on a free port, as a server that is not ours
    might (None: it never answers, and holds the connection until the test is done with it); yield its
    URL."""
    done = threading.Event()

    class Answering(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            data = answer(self.rfile.read(int(self.headers["Content-Length"])))
            if data is None:
                done.wait()
                return
            respond(self, data)

        def log_message(self, *_):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/api"
    finally:
        done.set()
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serving(service, tls=None, plain=False, **options):
    """Run `service` on a free port in a background thread; yield the Server (the guarded one,
    or with `plain` the plain transport). With `tls`, an ssl.SSLContext, the server speaks HTTPS."""
    bounds = Bounds(**{name: options.pop(name) for name in ("max_body", "timeout", "max_connections") if name in options})
    server = (http_server.Server if plain else Server)(service, port=0, tls=tls, bounds=bounds, **options)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def raw(server, data, read=True):
    """Send raw bytes on a new socket; return everything the server sends until it closes (within 30 s, room
    for a busy machine: what never comes fails the test all the same)."""
    with socket.create_connection(server.server_address[:2], timeout=30) as sock:
        sock.sendall(data)
        if not read:
            return b""
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def endless(framing):
    """A server whose one answer never ends (with a Content-Length of 100 GB, or none); its URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer():
        connection, _ = listener.accept()
        with connection, listener:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\n" + framing + b"\r\n")
            try:
                while True:
                    connection.sendall(b" " * 65536)
            except OSError:
                pass

    threading.Thread(target=answer, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/api"


DRIPS = {  # how a hostile server makes an answer last: what it sends first, then again and again
    "body": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n", b" "),
    "endless 100 Continue": (b"", b"HTTP/1.1 100 Continue\r\n\r\n"),
    "status line": (b"", b"H"),
    "headers": (b"HTTP/1.1 200 OK\r\n", b"X"),
}


def dripping(shape, every=0.2, seconds=120):
    """A server that answers every connection with one of DRIPS, a piece every `every` seconds, for
    `seconds`; its URL. No client timeout on a read is ever reached: only a deadline ends it."""
    listener = socket.create_server(("127.0.0.1", 0))
    first, again = DRIPS[shape]

    def drip(connection):
        with connection:
            connection.recv(65536)
            connection.sendall(first)
            for _ in range(int(seconds / every)):
                time.sleep(every)
                try:
                    connection.sendall(again)
                except OSError:
                    return

    def serve():
        with listener:
            while True:
                connection, _ = listener.accept()
                threading.Thread(target=drip, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/api"


def handled_with_peak(service, data):
    """Have `service` answer `data`: (the Reply, the most memory it held meanwhile, in bytes)."""
    tracemalloc.start()
    try:
        reply = service.handle(data)
        return reply, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


class Connection:
    """One keep-alive HTTP connection that posts messages and decodes the answers. With `reopen`, a
    connection the server closed while it was idle is opened again, as HTTP clients do: the peer's
    server (uvicorn) closes one idle for 5 s, which a busy machine reaches between two calls."""

    def __init__(self, url, source="", timeout=10, reopen=False):
        parts = urllib.parse.urlsplit(url)
        self.path, self.reopen = parts.path, reopen
        self.http = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout,
                                               source_address=(source, 0) if source else None)

    def post(self, data):
        """POST raw bytes; return (status, response headers, response bytes)."""
        try:
            self.http.request("POST", self.path, body=data)
            response = self.http.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            if not self.reopen:
                raise
            self.http.close()  # (it had closed before reading the request: sending it again is safe)
            self.http.request("POST", self.path, body=data)
            response = self.http.getresponse()
        return response.status, response.headers, response.read()

    def call(self, message):
        """POST a message as JSON; return the decoded answer (JSON or MessagePack)."""
        status, _, data = self.post(json.dumps(message).encode())
        assert status == 200
        return decode(data)


def decode(data):
    """A response message, from JSON or MessagePack bytes."""
    if data[:1] == b"\x92":
        return msgpack.unpackb(data, strict_map_key=False)
    return json.loads(data)


class Mutated:
    """A service with one wrong behaviour: `request` changes what it is asked, `answer` what it says."""

    def __init__(self, service, answer=None, request=None):
        self.service, self.answer, self.request = service, answer, request
        self.schema = service.schema

    def handle(self, data, client=""):
        try:
            request = json.loads(data)
        except ValueError:
            request = None
        if type(request) is not list or len(request) != 2 or type(request[0]) is not dict:
            request = None  # not a message: the service alone answers it
        if self.request and request:
            request = self.request(request)
            data = json.dumps(request).encode()
        reply = self.service.handle(data)
        if not self.answer:
            return reply
        binary = reply.data[:1] == b"\x92"
        message = msgpack.unpackb(reply.data, strict_map_key=False) if binary else json.loads(reply.data)
        message = self.answer(request, message)
        encoded = msgpack.packb(message) if binary else json.dumps(message).encode()
        return Reply(encoded, reply.media_type, reply.function, reply.result)


@contextlib.contextmanager
def uvicorn_serving(application, interface="auto"):
    """`application` served by uvicorn (as ASGI, or as WSGI with interface="wsgi") on a free port, in a
    thread; yield its API URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(application, log_level="warning", lifespan="on" if interface != "wsgi"
                                           else "off", interface=interface))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/api"
    finally:
        server.should_exit = True
        thread.join(10)
        listener.close()


def until(condition, seconds=30):
    """Wait for the state a test is about: until `condition()` holds (asked every 10 ms), or fail after
    `seconds` saying so, however busy the machine is meanwhile."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"waited {seconds} s in vain for {condition.__doc__ or 'a state'}"
        time.sleep(0.01)


def taken(sock):
    """Whether the server at the other end of `sock` has read every byte sent on it (Linux's /proc/net/tcp
    keeps, for each socket, the bytes received and not read yet): a state a test can wait for."""
    (_, mine), (_, theirs) = sock.getsockname(), sock.getpeername()
    with open("/proc/net/tcp") as table:
        for line in table.readlines()[1:]:
            _, local, remote, _, queues = line.split()[:5]
            if int(local.split(":")[1], 16) == theirs and int(remote.split(":")[1], 16) == mine:
                return int(queues.split(":")[1], 16) == 0
    return False
