"""Turns: which requests are costly, learned per client and function; costly ones take the turn.

A request is costly when it is large (over LARGE bytes), or when its client's
last call of the same function was: an answer over LARGE bytes, or over COSTLY
seconds of work from its handler on (a 29-byte request for a full tape, a
verification over a large log). It is learned from the function's own work and
answer, for each client apart: no client makes a function costly for another,
whatever it sends, and each cheap answer halves what is remembered. Costly
requests take the one turn the Service's Admission gives (transports/admission.py).
"""

import threading
import time

from ..transports.admission import LARGE

COSTLY = 0.02  # seconds of work from which a request is costly
MAX_COSTLY = 10_000  # costly calls remembered; beyond, the oldest are forgotten


class Turns:
    """Which calls were costly lately."""

    def __init__(self):
        self.costly: dict[tuple, float] = {}  # (client, function) -> its last cost, as a share of costly (1 or more)
        self.learning = threading.Lock()  # changes to `costly`, one thread at a time

    def learn(self, client, name, size, wall, thread):
        """Remember what a call of the function `name` by `client` cost: `size` bytes out, and this
        thread's work since its clocks read `wall` (perf_counter) and `thread` (thread_time). The
        thread's is read again only if the wall's says the work may have been COSTLY: no more can have
        been at work than has passed, and each reading of the thread's clock is a system call."""
        seconds = time.perf_counter() - wall
        if seconds > COSTLY:
            seconds = time.thread_time() - thread
        cost = size / LARGE
        if seconds > COSTLY * cost:  # (not max(), whose parsing of its arguments costs more than all else here)
            cost = seconds / COSTLY
        if cost < 1 and not self.costly:
            return  # (most calls: nothing to remember, nothing to forget)
        call = (client, name)
        with self.learning:
            if cost >= 1:
                self.costly.pop(call, None)  # (so that the oldest costly answer comes first)
                self.costly[call] = cost
                if len(self.costly) > MAX_COSTLY:
                    del self.costly[next(iter(self.costly))]
            elif self.costly.get(call, 0) >= 2:
                self.costly[call] /= 2
            else:
                self.costly.pop(call, None)
