"""The HTTP rules a request must meet to carry a message: its method, path and length, and the largest
body, which every transport holds it to (the bundled server, WSGI, ASGI); its header lines' grammar,
which the bundled server checks as it reads them (a WSGI or ASGI server reads them itself); and a
warning when several worker processes serve one service.
"""

import logging
import os
import sys
from dataclasses import dataclass

from .admission import MAX_CONNECTIONS

log = logging.getLogger("reference")

MAX_BODY = 1024 * 1024  # bytes of a request's body read, by default
TIMEOUT = 30  # seconds a connection may stay idle, or take to send a request


@dataclass(frozen=True)
class Bounds:
    """What the bundled server allows (`Server(service, bounds=Bounds(...))`): the largest request body it
    reads, how long a connection may stay idle, take to send a whole request or to read an answer, and
    how many connections it serves at once."""

    max_body: int = MAX_BODY
    timeout: float = TIMEOUT
    max_connections: int = MAX_CONNECTIONS


def refusal(method, target, length, api_path, max_body):
    """Why an HTTP request cannot carry a message, as (status, explanation, headers), or None. The
    request `target` is in origin form (/api?q) or absolute form (http://host/api, RFC 9112 3.2.2)."""
    if target.startswith(("http://", "https://")):  # the path is what counts
        target = "/" + target.split("/", 3)[3] if target.count("/") > 2 else "/"
    if target.split("?")[0] != api_path:
        return 404, f"Not found: the API is at {api_path}", []
    if method != "POST":
        return 405, "Only POST is allowed", [("Allow", "POST")]
    if not length:
        return 411, "A Content-Length header is required", []
    if not (length.isascii() and length.isdigit()):
        return 400, "The Content-Length header is not a number", []
    if len(length.lstrip("0")) > len(str(max_body)) or int(length) > max_body:
        return 413, f"The body is over the limit of {max_body} bytes", []
    return None


def warn_of_workers(state, several):
    """Log that several processes each keep their own `state`, if there is state and `several` are."""
    if state and several:
        log.warning("several worker processes serve this application, and each keeps its own %s: a client's "
                    "calls land on any of them, so what one call saved another may not find. Run one worker "
                    "process, with threads for concurrency, or keep the state in a store they share", state)


def workers(argv=None, environ=None):
    """How many worker processes the command that started this one asks for: gunicorn's, uvicorn's and
    hypercorn's --workers N (or -w N), else WEB_CONCURRENCY, else 1. (A worker process of uvicorn is
    spawned with its parent's command line as its own sys.argv.)"""
    argv, environ = sys.argv if argv is None else argv, os.environ if environ is None else environ
    for option, value in zip(argv, argv[1:] + [""]):
        name, equals, given = option.partition("=")
        if name in ("--workers", "-w"):
            value = given if equals else value
            return int(value) if value.isdigit() else 1
    text = environ.get("WEB_CONCURRENCY", "")
    return int(text) if text.isdigit() else 1


class HeaderLines:
    """A request's stream while its header lines are read, holding each line to RFC 9112's grammar:
    a CR only where the line ends (2.2), no NUL (RFC 9110, 5.5), no line folded onto the one before
    (5.2), no blank between a name and its colon (5.1). What a line breaks is kept in `problem` (the
    first), and the request is answered 400: the email package would read a bare CR as the end of a
    line, and a header hidden behind it as a header of its own."""

    def __init__(self, stream):
        self.stream, self.problem = stream, None

    def readline(self, size=-1):
        line = self.stream.readline(size)
        text = line[:-2] if line.endswith(b"\r\n") else line.removesuffix(b"\n")
        if text and self.problem is None:
            self.problem = (b"\r" in text and "A header line holds a CR that does not end it"
                            or b"\0" in text and "A header line holds a NUL byte"
                            or text[:1] in (b" ", b"\t") and "A header line is folded onto the one before"
                            or any(blank in text.partition(b":")[0] for blank in b" \t")
                            and "A header name is followed by a blank before its colon" or None)
        return line
