"""The mock: a Service for any schema, answering with stubs, generated values, or a real server's answers.

Read it in this order: handlers.py (the Mock: every function's handler, the
stubs and calls it keeps, the Service made of them), stubs.py (calls and stubs
as value kinds of the mock's schema: how they are checked, matched and
filled), patterns.py (the places a stub's `match!` names), matching.py (stubs
matched by the definitions, or in linear time), relay.py (a mock that passes
calls on to a real server, to record or check its answers) and stub_files.py
(stubs read from files at start). `python -m reference.mock` (mock.py) serves
one.
"""

from .handlers import LENGTH, MAX_CALLS, MAX_STATE, MAX_STUBS, Mock, Options, schema, service
from .matching import as_json

__all__ = ["LENGTH", "MAX_CALLS", "MAX_STATE", "MAX_STUBS", "Mock", "Options", "as_json", "schema", "service"]
