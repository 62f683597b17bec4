"""Heads: a simple request's line and header lines, read at once.

How this works
--------------
http.server reads a request's header lines with the email package, which
takes more work than everything else in an exchange of a small message
(about 175k instructions for the four header lines http.client sends, where
the service's whole answer to `fn.add` takes 60k). Most requests are simple:
a request line `METHOD /path HTTP/1.1`, then lines `Name: value` of printable
ASCII, all arrived by the time the request line is read. `read()` reads such
a head with one regular expression a line, into the HTTPMessage the email
package would make of it. Anything else it leaves to http.server, which
answers it as it always does: HTTP/1.0, a path of `//`, a header name that is
no token, a byte outside ASCII, a line folded onto the next, 100 lines or
more, or `Expect:` (which http.server answers with 100 Continue).
tests/test_heads.py holds what it reads to http.server's reading.
"""

import re
from http.client import HTTPMessage
from typing import NamedTuple

REQUEST_LINE = re.compile(rb"([A-Z]+) (/(?!/)[!-~]*) HTTP/1\.1\r\n")
# A value starts with a visible character, so that no run of blanks can be split two ways (trying each
# split would take time growing with the square of its length).
HEADER_LINE = re.compile(r"([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*((?:[!-~][ -~\t]*)?)")
MAX_LINES = 99  # header lines http.client reads at most (100 with the empty line that ends them)


class Head(NamedTuple):
    """A request's head, as http.server's handler reads it into its attributes of these names."""

    command: str
    path: str
    request_version: str
    requestline: str
    close_connection: bool
    headers: HTTPMessage


def read(request_line, block):
    """The Head of a simple request, from its request line and its header lines (`block`, up to the
    empty line that ends them); else None."""
    line = REQUEST_LINE.fullmatch(request_line)
    if line is None or not block.isascii():
        return None
    lines = block.decode().split("\r\n")
    if len(lines) > MAX_LINES:
        return None
    headers = HTTPMessage()
    headers.set_payload("")  # (the email package reads an empty body after the lines)
    for text in lines:
        header = HEADER_LINE.fullmatch(text)
        if header is None:
            return None
        headers[header[1]] = header[2]
    if "Expect" in headers:
        return None
    return Head(line[1].decode(), line[2].decode(), "HTTP/1.1", request_line[:-2].decode(),
                headers.get("Connection", "").lower() == "close", headers)
