"""WSGI: the same core behind any WSGI server (gunicorn, uWSGI, mod_wsgi, wsgiref).

`make_application(service)` serves any Service; the calculator's is
`reference.services.calculator:wsgi()`, which gunicorn calls to make it:

    gunicorn --workers 1 --threads 16 'reference.services.calculator:wsgi()'

The HTTP rules are the bundled server's (`refusal()`), and so is its
admission (admission.py): a large request takes one of QUEUE places before
its body is read (a 503 with Retry-After beyond), a costly request that waits
too long for its turn is a 503 too, and a cheap one goes first. A WSGI
server's thread is held while its request arrives and waits, so give it more
threads than QUEUE, for the small requests. A calculator keeps its state in
its process, so run one worker process (with as many threads as you like):
two would be two calculators, and the first request says so in the log (the
WSGI server's wsgi.multiprocess).
"""

import sys
from contextlib import nullcontext
from http import HTTPStatus

from .admission import LARGE, RETRY, Admission
from .rules import MAX_BODY, refusal, warn_of_workers

BUSY = 503, "The server is busy; try again soon", RETRY


def make_application(service, path="/api", max_body=MAX_BODY, state=""):
    """A WSGI application answering the protocol's messages at `path`; one whose service keeps
    `state` (such as "variables") warns at its first request if the WSGI server runs several processes."""
    admission = getattr(service, "admission", None) or Admission()
    first = [True]

    def application(environ, start_response):
        if first[0]:
            first[0] = False
            warn_of_workers(state, bool(environ.get("wsgi.multiprocess")))
        length, client = environ.get("CONTENT_LENGTH") or None, environ.get("REMOTE_ADDR", "")
        problem = refusal(environ["REQUEST_METHOD"], environ.get("PATH_INFO") or "/", length, path, max_body)
        if problem:
            return _refuse(start_response, *problem)
        if int(length) <= LARGE:
            return _answer(service, environ, start_response, admission.cheap)
        place = admission.large.take(client)  # (held from here to the answer, if it gets one)
        if place is None:
            return _refuse(start_response, 503, "Too many large requests at once; try again soon", RETRY)
        try:
            return _answer(service, environ, start_response, nullcontext, place)
        finally:
            admission.large.release(place)

    return application


def _answer(service, environ, start_response, scope, place=None):
    """Read the body and have the service answer it within `scope` (admission.cheap for a cheap request),
    unless the large request's `place` went to a newcomer meanwhile, or its turn does not come: a 503."""
    data = environ["wsgi.input"].read(int(environ["CONTENT_LENGTH"]))
    client = environ.get("REMOTE_ADDR", "")
    try:
        if place is not None and place.cancelled:
            raise TimeoutError("its place went to a newcomer while it arrived")
        with scope():
            reply = service.handle(data, client)
    except TimeoutError:  # no turn for it in time (the engine room's Service)
        return _refuse(start_response, *BUSY)
    start_response("200 OK", [("Content-Type", reply.media_type), ("Content-Length", str(len(reply.data)))])
    return [reply.data]


def _refuse(start_response, status, message, headers):
    body = (message + "\n").encode()
    start_response(f"{status} {HTTPStatus(status).phrase}",
                   [*headers, ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


if __name__ == "__main__":  # a library module, which people may try to run
    print("python -m reference.transports.wsgi: error: this module is for WSGI servers, not a command; serve the "
          "calculator with gunicorn 'reference.services.calculator:wsgi()', or your Service with "
          "make_application(service)", file=sys.stderr)
    sys.exit(2)
