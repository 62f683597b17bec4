"""Heads: a simple request's line and header lines, read at once.

http.server reads header lines with the email package: 175k instructions for
the four lines http.client sends, where our whole answer to `fn.add` takes
60k. `read()` reads a simple head (a request line `METHOD /path HTTP/1.1` and
lines `Name: value` of printable ASCII, all arrived) with one regular
expression a line, into the HTTPMessage the email package would make. Anything
else is left to http.server (HTTP/1.0, a path of `//`, a name that is no
token, a byte outside ASCII, a folded line, 100 lines or more, `Expect:`).
tests/reference/engine/test_heads.py holds it to http.server's reading.
"""

import re
from http.client import HTTPMessage
from typing import NamedTuple

# The grammar, from RFC 9112 (HTTP/1.1) and RFC 9110 (HTTP semantics); each pattern takes a part of it:
#   request-line = method SP request-target SP HTTP-version CRLF       (RFC 9112, 3)
#   method       = token: here, capital letters only                   (RFC 9110, 9.1)
#   origin-form  = absolute-path [ "?" query ]: here "/" then visible  (RFC 9112, 3.2.1), not "//"
#                  characters, which http.server reads otherwise
#   HTTP-version = "HTTP/" DIGIT "." DIGIT: here "HTTP/1.1" only        (RFC 9112, 2.3)
REQUEST_LINE = re.compile(rb"([A-Z]+) (/(?!/)[!-~]*) HTTP/1\.1\r\n")
#   field-line   = field-name ":" OWS field-value OWS                  (RFC 9112, 5)
#   field-name   = token = 1*tchar, tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." /
#                  "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA             (RFC 9110, 5.1 and 5.6.2)
#   OWS          = *( SP / HTAB )                                       (RFC 9110, 5.6.3)
#   field-value  = *field-content, field-content = field-vchar [ 1*( SP / HTAB / field-vchar )
#                  field-vchar ]: here VCHAR (%x21-7E) only, no obs-text  (RFC 9110, 5.5)
# The value is taken with its trailing OWS, as the email package keeps it; it starts with a visible
# character, so that no run of blanks can be split two ways between OWS and the value (trying each split
# would take time growing with the square of its length). CR, LF and NUL are in no part: a line holding
# one is not simple (RFC 9112, 2.2 and 5.2: a bare CR is refused, obs-fold is not read as a value).
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
