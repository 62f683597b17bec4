"""The guard: the HTTP transport, made fair under load and abuse.

How this works
--------------
`Server` is the bundled transport (transports/http_server.py) with a `Visit` on record for
each connection: its state ("idle", "receiving", at "work", "sending") since
when, its address, and its credit: a byte for each byte it sends or takes (up
to CREDIT), less MIN_RATE bytes for each second the server waits on it, over
its whole life. A connection whose credit has run out is slow. Threads write
their own records, without a lock; the admission reads them when it must
choose whose place a newcomer takes (transports/admission.py, which bounds connections,
large requests and waiters for the turn the same way for every transport):

- a connection's place: that of a slow connection, else of an idle one (the
  oldest), preferring the address holding the most; else of one not at work
  of an address holding two places more than the newcomer's; else 503;
- a large request's place: that of a slow sender, else of one still being
  received from an address holding two more than the newcomer's; else 503.

Header lines may hold MAX_HEADERS bytes in all (else 431). A request must
arrive, an answer be taken, within `timeout`, which is also how long a
connection may stay idle: the server keeps the time, so sockets need no
timeout of their own (which costs a poll() before every read and write).
`stop()` gives requests in flight GRACE seconds. It reads a simple request's
head itself (heads.py), and writes the Date header once a second: in
http.server, both cost more than our whole answer.
"""

import http.client
import io
import logging
import ssl
import threading
import time
from contextlib import nullcontext

from ..transports import http_server
from ..transports.rules import Bounds
from . import heads

log = logging.getLogger("reference")

MAX_HEADERS = 64 * 1024  # bytes of header lines in one request
MIN_RATE = 16 * 1024  # bytes per second waited on, below which a connection may lose its place to a newcomer
CREDIT = 2 * MIN_RATE  # the most credit a connection has: what it moved fast pays for two seconds of waiting
START = MIN_RATE // 5  # a new connection's credit: a fifth of a second to start sending
WAITING = ("receiving", "sending")  # the states in which the server waits on the client
GRACE = 10  # seconds that requests in flight get to finish when the server stops


class Visit:
    """One connection, as its thread tells it: its state since when, its credit (see above), from which
    address, and how many bytes of header lines its request has sent."""

    __slots__ = ("connection", "address", "state", "since", "credit", "settled", "received", "cut")

    def __init__(self, connection, address):
        self.connection, self.address, self.cut = connection, address, False
        self.state, self.since, self.credit, self.settled, self.received = "idle", time.monotonic(), START, 0.0, 0

    def enter(self, state):
        """Go to `state`, the time waited on the client so far paid for."""
        self.moved(0)
        self.state, self.since = state, self.settled

    def moved(self, size):
        """The client sent, or took, `size` bytes: credited, and the time waited on it paid for."""
        now = time.monotonic()
        spent = MIN_RATE * (now - self.settled) if self.state in WAITING else 0
        self.credit, self.settled = max(min(self.credit - spent + size, CREDIT), -CREDIT), now

    def slow(self, now):
        """Whether the server waits on it with its credit run out."""
        return self.state in WAITING and self.credit < MIN_RATE * (now - self.settled)

    def hang_up(self, why):
        """End the connection from another thread, saying why once; its half a request is no error."""
        self.cut = True
        log.info("%s: closed a connection %s", self.address, why)
        http_server.hang_up(self.connection)

    def give_up(self):
        """Give this connection's place to a newcomer (the admission chose it), saying why."""
        self.hang_up(f"{self.state} slower than {MIN_RATE // 1024} KiB/s, for a newcomer" if self.slow(time.monotonic())
                     else "idle, for a newcomer" if self.state == "idle" else
                     "of an address holding more places than the newcomer's, for a newcomer")


def connection_rank(place, holding, mine):
    """Whose connection's place a newcomer takes (see above): slow, idle, else crowded and not at work."""
    visit, now = place.holder, time.monotonic()
    rank = (0 if visit.slow(now) else 1 if visit.state == "idle"
            else 2 if visit.state != "work" and holding[place.address] > mine + 1 else None)
    return None if rank is None else (rank, -holding[place.address], visit.since if rank == 1 else visit.credit)


def large_rank(place, holding, mine):
    """Whose large request's place a newcomer takes: a slow sender's, else one still arriving, crowded."""
    visit = place.holder
    rank = 0 if visit.slow(time.monotonic()) else 2 if (visit.state == "receiving"
                                                       and holding[place.address] > mine + 1) else None
    return None if rank is None else (rank, -holding[place.address], visit.credit)


class RequestHandler(http_server.RequestHandler):
    """The bundled transport's RequestHandler, telling its Visit what it does."""

    def log_message(self, format, *args):
        if not self.visit.cut:  # (what it read before the server hung up on it is not the client's error)
            super().log_message(format, *args)

    def refuse(self, status, message, headers=(), body_read=False):
        if self.visit.cut:  # hung up on: there is no one to answer, and the log said why already
            self.close_connection = True
            return None
        return super().refuse(status, message, headers, body_read)

    def setup(self):
        self.visit = self.server.visits[self.request]
        super().setup()
        self.connection.settimeout(None)  # the server keeps the time (service_actions)
        counted = Counted(self.connection, self.visit)  # (http.server's buffered streams, counted)
        self.rfile, self.wfile = io.BufferedReader(counted), io.BufferedWriter(counted)

    def send_response(self, code, message=None):
        self.visit.enter("sending")
        super().send_response(code, message)

    def date_time_string(self, timestamp=None):
        """The Date header of an answer, written once a second (email.utils.formatdate costs more than
        the rest of an answer's headers)."""
        if timestamp is not None:
            return super().date_time_string(timestamp)
        now = int(time.time())
        if self.server.date[0] != now:
            self.server.date = (now, super().date_time_string(now))
        return self.server.date[1]

    def handle_one_request(self):
        if self.server.stopping:
            self.close_connection = True
            return
        super().handle_one_request()

    def read_head(self):
        visit = self.visit
        visit.received = len(self.raw_requestline)
        buffered = self.rfile.peek(MAX_HEADERS)  # what has come already (or, if nothing yet, what comes next)
        end = buffered.find(b"\r\n\r\n")
        visit.enter("receiving")
        if end >= 0:  # the whole header block, shorter than a buffer: nothing to count
            visit.received += len(buffered)
            head = heads.read(self.raw_requestline, buffered[:end])
            if head is None:
                return super().read_head()
            self.command, self.path, self.request_version, self.requestline, self.close_connection, self.headers \
                = head
            self.rfile.read(end + 4)
            return True
        stream, self.rfile = self.rfile, HeaderBlock(self.rfile, visit)
        try:
            parsed = super().read_head()  # which answers 431 when HeaderBlock says the block is too long
        finally:
            self.rfile = stream
        if not parsed and visit.received > MAX_HEADERS:
            self.linger()
        return parsed

    def do_POST(self):
        try:
            super().do_POST()
        finally:
            self.visit.enter("idle")

    def holder(self):
        return self.visit

    def give_up(self):
        self.visit.give_up()

    def answer(self, data, started, scope=nullcontext):
        self.visit.enter("work")
        super().answer(data, started, scope)


class HeaderBlock:
    """The request's stream while header lines are read: over MAX_HEADERS bytes it fails, answered 431."""

    def __init__(self, stream, visit):
        self.stream, self.visit = stream, visit

    def readline(self, size=-1):
        left = MAX_HEADERS - self.visit.received
        line = self.stream.readline(left + 1 if size < 0 else min(size, left + 1))
        self.visit.received += len(line)
        if self.visit.received > MAX_HEADERS:
            error = http.client.LineTooLong("header block")  # which parse_request answers with 431
            error.args = (f"the header lines are over {MAX_HEADERS} bytes in all",)  # all of them, not one
            raise error
        return line


class Counted(io.RawIOBase):
    """The connection, as its streams read and write it, telling its Visit of each piece that comes or is taken."""

    def __init__(self, connection, visit):
        self.connection, self.visit = connection, visit

    def readable(self):
        return True

    def writable(self):
        return True

    def readinto(self, buffer):
        size = self.connection.recv_into(buffer)
        self.visit.moved(size)
        return size

    def write(self, data):
        size = self.connection.send(data)
        self.visit.moved(size)
        return size


class Server(http_server.Server):
    """The bundled Server, admitting connections and large requests as the module's story tells."""

    handler = RequestHandler
    grace = GRACE

    def __init__(self, service: http_server.Answering, host: str = "127.0.0.1", port: int = 8000, path: str = "/api",
                 tls: ssl.SSLContext | None = None, bounds: Bounds = Bounds()):
        super().__init__(service, host, port, path, tls, bounds)
        self.admission.connections.rank, self.admission.large.rank = connection_rank, large_rank
        self.visits: dict = {}  # connection -> Visit
        self.date = (0, "")  # the Date header's second and text (RequestHandler.date_time_string)
        self.lock = threading.Lock()

    def holder(self, request, client_address):
        """The connection's Visit, kept on record while it lasts."""
        visit = Visit(request, client_address[0])
        with self.lock:
            self.visits[request] = visit
        return visit

    def process_request(self, request, client_address):
        super().process_request(request, client_address)
        if request not in self.held:  # (refused: no place)
            with self.lock:
                self.visits.pop(request, None)

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            with self.lock:
                self.visits.pop(request, None)

    def service_actions(self):
        """Close connections that have been idle, receiving a request or sending an answer for longer
        than the timeout."""
        now = time.monotonic()
        with self.lock:
            late = [v for v in self.visits.values() if v.state != "work" and now - v.since > self.timeout]
        for visit in late:
            visit.hang_up(f"{visit.state} for over {self.timeout:g} s")

    def stop(self, grace: float = GRACE) -> int:
        """Stop gracefully (from another thread): requests in flight get `grace` seconds; return how many were cut."""
        super().stop()
        deadline = time.monotonic() + grace
        while True:
            with self.lock:
                idle = [v for v in self.visits.values() if v.state == "idle"]
                busy = [v for v in self.visits.values() if v.state != "idle"]
            for visit in idle:
                http_server.hang_up(visit.connection)
            if not busy or time.monotonic() > deadline or self.hurried:
                break
            time.sleep(0.05)
        for visit in busy:
            http_server.hang_up(visit.connection)
        return len(busy)
