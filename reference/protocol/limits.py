"""Limits: how much one message may hold and one answer may cost, all in one place.

The spec states no limits; these are ours (conformance/PROTOCOL.md, section 11),
each chosen so that no message, however made, costs more than a small multiple
of its size.
"""

import sys

MAX_DEPTH = 1024  # levels of arrays and objects in a message, the outer array counted as 1
MIN_INT64, MAX_INT64 = -(2**63), 2**63 - 1  # the integers a message carries, in integer and number fields
MAX_CASES = 100  # validation cases one answer reports
MAX_PATH_CHARACTERS = 64 * 1024  # characters of the keys in their paths: the case that reaches it is the last
MAX_VALUES = 10_000  # values generated for one answer (a mock's, or fn.api_'s examples)
MAX_GENERATED_DEPTH = 250  # nesting of a generated value, past which everything is made as small as it can be
MAX_SCHEMA_DEPTH = 64  # levels of arrays and objects in a schema document
MAX_PROBLEMS = 1000  # problems of a schema kept and listed; those past them are counted

# Checking a message MAX_DEPTH deep recurses a few Python frames per level: more than Python's
# default recursion limit allows. A Service and a Client raise the limit so far when they are made.
FRAMES = 4 * MAX_DEPTH + 1000


def allow_depth():
    """Let this program recurse as deeply as handling a message MAX_DEPTH deep needs (a limit set
    higher stays as it is)."""
    if sys.getrecursionlimit() < FRAMES:
        sys.setrecursionlimit(FRAMES)
