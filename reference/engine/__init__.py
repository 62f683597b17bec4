"""The engine room: pieces that make the core faster and harder to abuse.

`Service` (service.py, with checks.py, scans.py and trims.py) is the core's
Service with single steps given short paths; `Matching` (matching.py) matches
a mock's stubs in linear time; the guard (guard.py) is the bundled HTTP
server, admitting connections and requests fairly and reading simple request
heads at once (heads.py). The core imports none of it, and serves alone
without it (`--plain`).

Its contract: every answer is the core's, byte for byte (tests/test_engine.py
holds each piece to the core on generated schemas, values and requests),
except where one of its named bounds is met:

- the guard answers 431 to header lines over 64 KiB in all (MAX_HEADERS), and
  503 when all its connections, or all its places for large requests, are
  taken by others that do not give way (guard.py);
- a costly request that waits its turn over 10 s is answered 503 (turns.py);
- a stub or verification whose matching takes more steps than its budget is
  taken as no match, with a warning in the log (matching.py).
"""

from .matching import Matching
from .service import Service

__all__ = ["Matching", "Service"]
