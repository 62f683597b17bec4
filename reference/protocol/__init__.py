"""The protocol, plainly: the teaching core of this implementation (reference/README.md).

It imports nothing of the rest of the package, and needs none of it: the
engine room beside it (reference/engine/) makes it faster and harder to abuse,
and `python -m reference.server --plain` serves with the core alone.
"""

from .documents import SchemaError
from .loader import Schema
from .service import Refusal, Reply, Service

__all__ = ["Refusal", "Reply", "Schema", "SchemaError", "Service"]
