"""Heads (engine/heads.py): what it reads of a request's head is what http.server reads, or nothing."""

import io
import time
from http.server import BaseHTTPRequestHandler

import pytest
from hypothesis import given, settings, strategies as st

from reference.engine import heads


class Reading(BaseHTTPRequestHandler):
    """http.server's reading of a request head from bytes, answers kept in memory."""

    protocol_version = "HTTP/1.1"

    def __init__(self, request_line, rest):  # (no socket: only parse_request is used)
        self.raw_requestline, self.rfile, self.wfile = request_line, io.BytesIO(rest), io.BytesIO()
        self.client_address = ("test", 0)

    def log_message(self, format, *args):
        pass


def agree(request_line, rest):
    """Check that heads.read() reads nothing, or what http.server reads; whether it read anything."""
    end = rest.find(b"\r\n\r\n")  # (the guard calls heads.read() once the header lines have all come)
    head = heads.read(request_line, rest[:end]) if end >= 0 else None
    if head is None:
        return False
    reading = Reading(request_line, rest)
    assert reading.parse_request()
    assert reading.rfile.tell() == end + 4 and reading.wfile.getvalue() == b""
    for name in heads.Head._fields[:5]:
        assert getattr(head, name) == getattr(reading, name), name
    read, expected = head.headers, reading.headers
    assert type(read) is type(expected)
    assert (read.items(), read.defects, read.get_payload(), read.get_unixfrom(), read.as_string()) == \
        (expected.items(), expected.defects, expected.get_payload(), expected.get_unixfrom(), expected.as_string())
    return True


SIMPLE = b"POST /api HTTP/1.1\r\n"


@pytest.mark.parametrize("request_line, rest, read", [
    (SIMPLE, b"Host: x\r\nContent-Length: 2\r\n\r\n{}", True),
    (SIMPLE, b"Host: x\r\nAccept-Encoding: identity\r\nContent-Length: 34\r\nContent-Type: application/json\r\n\r\n",
     True),
    (SIMPLE, b"Connection:close\r\nX-A: \t spaced  \r\nX-A: twice\r\n\r\n", True),
    (SIMPLE, b"Connection: Keep-Alive\r\nX-Empty:\r\n\r\n", True),
    (b"GET /api?x=1 HTTP/1.1\r\n", b"Host: x\r\n\r\n", True),
    (b"POST //api HTTP/1.1\r\n", b"Host: x\r\n\r\n", False),  # http.server makes it /api
    (b"POST /api HTTP/1.0\r\n", b"Host: x\r\n\r\n", False),
    (b"POST /api HTTP/1.1\n", b"Host: x\r\n\r\n", False),
    (b"POST  /api HTTP/1.1\r\n", b"Host: x\r\n\r\n", False),
    (SIMPLE, b"Expect: 100-continue\r\nContent-Length: 2\r\n\r\n", False),
    (SIMPLE, b"Host: x\r\n folded\r\n\r\n", False),
    (SIMPLE, b"Host: x\r\nNoColon\r\n\r\n", False),
    (SIMPLE, b"Host: x\r\nBad Name: y\r\n\r\n", False),
    (SIMPLE, b"Host: \xe9\r\n\r\n", False),
    (SIMPLE, b"Host: x\r\nX: a\rb\r\n\r\n", False),
    (SIMPLE, b"Host: x\r\n", False),  # not all of it yet
    (SIMPLE, b"X: 1\r\n" * 99 + b"\r\n", True),
    (SIMPLE, b"X: 1\r\n" * 100 + b"\r\n", False),  # http.server answers 431
])
def test_simple_heads_are_read_as_http_server_reads_them_and_others_left_to_it(request_line, rest, read):
    assert agree(request_line, rest) is read


TOKEN = "!#$%&'*+-.^_`|~abcXYZ09"
PRINTABLE = "".join(map(chr, range(32, 127))) + "\t"
SIMPLE_LINES = st.sampled_from([SIMPLE, b"GET /x?y=1 HTTP/1.1\r\n", b"PUT / HTTP/1.1\r\n"])
ODD_LINES = st.builds(
    lambda method, gap, path, version, end: f"{method}{gap}{path}{gap}{version}{end}".encode("utf-8"),
    st.sampled_from(["POST", "GET", "post", "P-OST", ""]), st.sampled_from([" ", "  ", "\t"]),
    st.sampled_from(["/api", "//api", "/é", "/a b", "http://x/api", "/\x7f", "*"]),
    st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.10", "HTTP/01.1", "http/1.1"]),
    st.sampled_from(["\r\n", "\n", " \r\n"]))
NAMES = st.sampled_from(["Connection", "connection", "CONNECTION", "Expect", "Content-Length", "Host", "From"]) \
    | st.text(TOKEN, min_size=1, max_size=6)
VALUES = st.sampled_from(["close", "Close", "keep-alive", "100-continue", "", " x "]) | st.text(PRINTABLE, max_size=8)
SIMPLE_HEADERS = st.builds(lambda name, gap, value: f"{name}:{gap}{value}\r\n", NAMES,
                           st.sampled_from(["", " ", "\t ", "  "]), VALUES)
ODD_HEADERS = st.builds(lambda name, value, end: f"{name}:{value}{end}", st.text(TOKEN + ' "(:é\t\x00', max_size=4),
                        st.text("ab 1\t:é\r\n\x00\x7f", max_size=6), st.sampled_from(["\r\n", "\n", "\r", ""])) \
    | st.sampled_from([" folded\r\n", "\tfolded\r\n", "From x\r\n", "NoColon\r\n", ":x\r\n", "\r\n"])


@settings(max_examples=1000, deadline=None)
@given(SIMPLE_LINES | ODD_LINES, st.lists(SIMPLE_HEADERS, min_size=1, max_size=5), st.none() | ODD_HEADERS,
       st.integers(0, 5), st.sampled_from(["\r\n", "\r\n", "\r\n[{}, {}]", "", "\n"]))
def test_any_head_is_read_as_http_server_reads_it_or_left_to_it(request_line, lines, odd, where, end):
    """Heads of simple lines, or with one odd line among them: about one in seven is read (each as
    http.server reads it), the rest left to http.server."""
    lines[where:where] = [odd] if odd else []
    agree(request_line, "".join(lines).encode("utf-8") + end.encode())


@settings(max_examples=100, deadline=None)
@given(st.integers(97, 101), st.sampled_from(["X: 1", "Connection: close", "A:b"]))
def test_a_head_of_many_lines_is_read_as_http_server_reads_it_or_left_to_it(count, line):
    agree(SIMPLE, (line + "\r\n").encode() * count + b"\r\n")


def test_a_line_of_many_blanks_is_read_in_linear_time():
    """A regular expression that could split a run of blanks two ways tried each split: 0.27 s for
    8,000 blanks before a control character, growing with the square (170 s for these)."""
    started = time.process_time()
    for end in (b"\x01", b"", b"x \x01"):
        heads.read(SIMPLE, b"A:" + b" \t" * 100_000 + end)
    assert time.process_time() - started < 1
