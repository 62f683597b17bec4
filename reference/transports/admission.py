"""Admission: what a server lets in at once, and whose turn it is, the same for every transport.

How this works
--------------
A server gives out places of three kinds, each bounded and counted by the
address that holds it:

- a connection's (`max_connections`), from its first byte to its last: the
  bundled transports (http_server.py, engine/guard.py);
- a large request's (QUEUE of them, over LARGE bytes), from its head to its
  answer: every transport, and no body is read without one;
- a waiter's (QUEUE of them), while a costly request waits for its turn.

When every place of a kind is taken, a newcomer takes the place of the holder
the transport ranks first (the guard: the slowest sender, else the oldest
idle connection), else of one from an address holding two places more than
the newcomer's: whatever a connection is doing, waiting included, no address
keeps more places than a newcomer's when the server is full. The holder given
up is cancelled (its connection hung up, its wait ended: a 503), else the
newcomer gets a 503 with Retry-After.

Costly requests (large ones, and those a client's earlier calls made costly:
engine/turns.py) take one `turn()`, waiting at most WAIT seconds. Cheap ones
go first: a costly request about to take the turn lets those being answered
(`cheap()`, from their whole body received to their answer made) be answered
first, for at most CHEAP_FIRST seconds, so a cheap call never queues behind a
costly one's work, whatever carries it. (A costly request's work holds
Python's interpreter in long stretches, such as reading a large body at once,
which would otherwise keep a cheap one waiting at each of its steps.) A
request that takes the turn is costly, not cheap, while it waits and works.
"""

import threading
import time
from contextlib import contextmanager

MAX_CONNECTIONS = 100  # connections served at once (the bundled transports)
LARGE = 16 * 1024  # bytes from which a request is large, and an answer costly
QUEUE = 8  # large requests held at once (reading, waiting, processed), and waiters for the turn
WAIT = 10  # seconds a costly request may wait for its turn; beyond, it is answered 503
CHEAP_FIRST = 0.05  # seconds a costly request may let cheap ones go first, each time it takes the turn
RETRY = [("Retry-After", "1")]  # what a 503 says


class Place:
    """A place given out: who holds it (an address, and what the transport knows of it), and how to
    give it up for a newcomer."""

    __slots__ = ("address", "holder", "cancel", "cancelled")

    def __init__(self, address, holder, cancel):
        self.address, self.holder, self.cancel, self.cancelled = address, holder, cancel, False


class Places:
    """At most `size` places (see above); `rank(place, holding, mine)` says whose a newcomer takes: a
    sortable key, smallest first, or None for a place it may not take (`holding`: places by address;
    `mine`: the newcomer's)."""

    def __init__(self, size, rank=None):
        self.size, self.rank = size, rank or crowded
        self.held: list[Place] = []
        self.lock = threading.Lock()

    def take(self, address, holder=None, cancel=lambda: None):
        """A place for `address`, free or given up by another (cancelled here); None if none is to be had."""
        with self.lock:
            if len(self.held) >= self.size:
                holding: dict[str, int] = {}
                for place in self.held:
                    holding[place.address] = holding.get(place.address, 0) + 1
                ranked = [(key, index) for index, place in enumerate(self.held)
                          if (key := self.rank(place, holding, holding.get(address, 0))) is not None]
                if not ranked:
                    return None
                given_up = self.held.pop(min(ranked)[1])
                given_up.cancelled = True
            else:
                given_up = None
            place = Place(address, holder, cancel)
            self.held.append(place)
        if given_up is not None:
            given_up.cancel()
        return place

    def release(self, place):
        """Give a place back (one given up for a newcomer is gone already)."""
        with self.lock:
            if not place.cancelled:
                self.held.remove(place)


def crowded(place, holding, mine):
    """The default rank: the places of an address holding two more than the newcomer's, the most first."""
    return -holding[place.address] if holding[place.address] > mine + 1 else None


class Admission:
    """The places of one server (or of one service, whoever carries it), and the turn of costly requests."""

    def __init__(self, connections=MAX_CONNECTIONS, wait=WAIT):
        self.connections, self.large, self.waiting = Places(connections), Places(QUEUE), Places(QUEUE)
        self.wait = wait  # seconds a costly request may wait for its turn
        self.lock = threading.Lock()  # the turn
        self.owner = None  # the thread holding the turn
        self.in_flight, self.counting = 0, threading.Lock()  # cheap requests being answered
        self.local = threading.local()  # whether this thread answers a cheap request

    @contextmanager
    def cheap(self):
        """A cheap request being answered in this thread: costly ones let it go first (see above)."""
        with self.counted(), self.marked():
            yield

    @contextmanager
    def counted(self):
        """A cheap request being answered, counted where it is handed on (an event loop, to a worker thread)."""
        self.count(1)
        try:
            yield
        finally:
            self.count(-1)

    @contextmanager
    def marked(self):
        """This thread answers a cheap request counted already: should it take the turn, it is cheap no longer."""
        self.local.cheap = True
        try:
            yield
        finally:
            self.local.cheap = False

    def count(self, change):
        with self.counting:
            self.in_flight += change

    @contextmanager
    def turn(self, address):
        """Hold the turn of costly requests, waiting for it in a waiter's place, at most `wait` seconds:
        TimeoutError if there is no place, or the place is given up, or the time runs out."""
        if self.owner == threading.get_ident():  # (a large request's turn holds for its function's too)
            yield
            return
        cheap = getattr(self.local, "cheap", False)  # (a request learned costly is cheap no longer)
        if cheap:
            self.count(-1)
        try:
            with self.waited(address):
                self.let_cheap_go_first()
                yield
        finally:
            if cheap:
                self.count(1)

    @contextmanager
    def waited(self, address):
        """Hold the turn, once waited for in a waiter's place (TimeoutError, as `turn` says)."""
        place = self.waiting.take(address)
        if place is None:
            raise TimeoutError("no place to wait for the turn of costly requests")
        deadline = time.monotonic() + self.wait
        try:
            while not self.lock.acquire(timeout=min(0.05, max(deadline - time.monotonic(), 0))):
                if place.cancelled or time.monotonic() >= deadline:
                    raise TimeoutError(f"a costly request waited over {self.wait:g} s for its turn"
                                       if not place.cancelled else "a waiter's place went to a newcomer")
        finally:
            self.waiting.release(place)
        self.owner = threading.get_ident()
        try:
            yield
        finally:
            self.owner = None
            self.lock.release()

    def let_cheap_go_first(self):
        """Wait while cheap requests are in flight, at most CHEAP_FIRST seconds."""
        until = time.monotonic() + CHEAP_FIRST
        while self.in_flight and time.monotonic() < until:
            time.sleep(0.001)
