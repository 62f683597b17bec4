"""Turns: costly requests are answered one at a time, cheap ones as they come.

What a request costs the server is what answering it takes: the bytes that
come in, the bytes that go out, and the time at work (and the memory, which
grows with all three). Most requests cost little. A request is costly when it
is large (over LARGE bytes), or when the last answer to its function was (over
LARGE bytes out, or over COSTLY seconds of work): a 29-byte request for a
full paper tape, or a verification over a large log of calls. Costly requests
take turns, one at a time, each waiting at most WAIT seconds for its turn
(`TimeoutError` beyond, which the transports answer with 503). What a
function costs is learned from its answers, and forgotten again as its
answers grow cheap: each cheap one halves what is remembered.
"""

import threading
import time
from contextlib import contextmanager

LARGE = 16 * 1024  # bytes in or out from which a request is costly
COSTLY = 0.02  # seconds of work from which a request is costly
WAIT = 10  # seconds a costly request may wait for its turn


class Turns:
    """The one turn that costly requests take, and what each function's answers cost lately."""

    def __init__(self):
        self.lock = threading.Lock()
        self.costs: dict[str, float] = {}  # function -> its last answer's cost, as a share of costly

    def costly(self, name):
        """Whether a request for the function `name` is costly, as its last answers were."""
        return self.costs.get(name, 0) >= 1

    @contextmanager
    def turn(self):
        """Wait for the turn of costly requests, and hold it (TimeoutError after WAIT seconds)."""
        if not self.lock.acquire(timeout=WAIT):
            raise TimeoutError(f"a costly request waited over {WAIT} s for its turn")
        try:
            yield
        finally:
            self.lock.release()

    def learn(self, name, size, wall, thread):
        """Remember what answering `name` cost: `size` bytes in or out, and this thread's work since its
        clocks read `wall` (perf_counter) and `thread` (thread_time). The thread's is read again only
        if the wall's says the work may have been COSTLY: no more can have been at work than has
        passed, and each reading of the thread's clock is a system call."""
        seconds = time.perf_counter() - wall
        if seconds > COSTLY:
            seconds = time.thread_time() - thread
        cost = max(size / LARGE, seconds / COSTLY)
        self.costs[name] = cost if cost >= 1 else self.costs.get(name, 0) / 2
