"""Scans: what JSON text could hold, read off the bytes before anything is parsed.

The core asks two questions of a JSON message it parsed (protocol/codec.py):
does a string hold half a UTF-16 surrogate pair, and does it nest past
MAX_DEPTH? Each costs a walk. The bytes answer "no" for most messages at C
speed: half a pair is only written as an escape, and nesting needs brackets;
"maybe" leaves it to the core. tests/reference/engine/test_service.py holds them to its walks.
"""

import re
from itertools import accumulate

SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # the escape of half a UTF-16 pair
OTHERS = bytes(b for b in range(256) if b not in b'[]{}"')  # all but brackets and quotes
NESTING = [0] * 256  # what each bracket does to the depth
NESTING[ord("[")] = NESTING[ord("{")] = 1
NESTING[ord("]")] = NESTING[ord("}")] = -1


def may_hold_surrogates(data):
    """Whether JSON text may hold half a surrogate pair: only an escape can write one, and an
    escape begins with a backslash (which memchr finds at once, where a longer needle is slow; `in`
    would first try the needle as an integer, and raise and clear an error)."""
    return data.find(b"\\") >= 0 and SURROGATE.search(data) is not None


def deeper(data, limit):
    """Whether JSON text nests arrays and objects more than `limit` deep: only a text with more
    brackets than that can; then its escaped backslashes and quotes are dropped (read left to
    right, as a reader reads escapes), so that quotes pair up around strings, and the brackets
    between the pairs are weighed: dropped, leaf pairs first, for a wide text; counted for a deep
    one. Each step is one pass of C over the bytes, whatever they hold."""
    if len(data) <= limit or data.count(b"[") + data.count(b"{") <= limit:
        return False
    if data.find(b"\\") >= 0:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    # Two quotes side by side (a string without brackets) change nobody's side of the quotes.
    brackets = data.translate(None, OTHERS).replace(b'""', b"")
    if brackets.find(b'"') >= 0:
        brackets = b"".join(brackets.split(b'"')[::2])  # (what is outside strings)
    rest = brackets  # (a round drops every leaf pair of both kinds: it lowers the nesting by 2 at most)
    for rounds in range(1, 5):
        rest = rest.replace(b"{}", b"").replace(b"[]", b"")
        if not rest and 2 * rounds <= limit:
            return False
    return max(accumulate(map(NESTING.__getitem__, brackets)), default=0) > limit
