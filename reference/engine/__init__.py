"""The engine room: the core (protocol/), made faster and harder to abuse; the core imports none of it.

`Service` (service.py, with checks, scans and trims) is the core's Service with
single steps given short paths; `Matching` matches a mock's stubs in linear
time; the guard (guard.py, heads.py) is the bundled HTTP server, fair under
load. Every answer is the core's, byte for byte (tests/test_engine.py holds
each piece to the core), but at three named bounds: the guard's 431 (header
lines over 64 KiB) and 503 (no place free for a connection or a large
request); a costly request's 503 after `Turns.wait` seconds without its turn;
a mock's matching past its budget of steps (no match, and a warning).
"""

from .matching import Matching
from .service import Service

__all__ = ["Matching", "Service"]
