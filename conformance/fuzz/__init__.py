"""Fuzzing: any server checked against its own schema, with calls made from it (`python -m conformance
fuzz`, or `fuzz_application` from a test suite).

Read it in this order: fuzzer.py (the Fuzzer: calls made, sent and judged),
values.py (values of a schema's types, valid and with one thing wrong),
channel.py (how calls reach the target), answers.py and selections.py (what
the checks find wrong in an answer), links.py (what one call gives the calls
after it), shrinking.py (a failure made small and sent again), workers.py
(several workers), verdicts.py (a verdict for each function and check) and
application.py (the same from a test suite).
"""

from .application import fuzz_application

__all__ = ["fuzz_application"]
