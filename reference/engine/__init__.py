"""The engine room: pieces that make the core fast or hard to abuse, and change no answer.

Each wraps a piece of the core (protocol/) or stands in for it, and gives the
answers the core would give: `Service` (service.py, with checks.py and
scans.py) answers requests faster, `Matching` (matching.py) matches a mock's
stubs in linear time, and `guard` (guard.py) admits connections and requests
to an HTTP server fairly, reading simple request heads at once (heads.py).
The core never imports any of it; `--plain` on the command lines runs the
core alone.
"""

from .matching import Matching
from .service import Service

__all__ = ["Matching", "Service"]
