"""The engine room: the core (protocol/), made faster and harder to abuse; the core imports none of it.

`Service` (service.py, with checks, scans and trims) is the core's Service with
single steps given short paths; the guard (guard.py, heads.py) is the bundled
HTTP server, fair under load. Every answer is the core's, byte for byte
(the engine's tests hold each piece to the core), but at two named bounds:
the guard's 431 (header lines over 64 KiB) and 503 (no place free for a
connection or a large request); and a costly request's 503 after
`Turns.wait` seconds without its turn. (A mock it serves matches stubs in
linear time, within a budget: mocking/matching.py.)
"""

from .service import Service

__all__ = ["Service"]
