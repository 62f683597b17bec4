"""WSGI: the same core behind any WSGI server (gunicorn, uWSGI, mod_wsgi, wsgiref).

`make_application(service)` serves any Service; the calculator's is
`reference.calculator:wsgi()`, which gunicorn calls to make it:

    gunicorn --workers 1 --threads 16 'reference.calculator:wsgi()'

The HTTP rules are the bundled server's (`refusal()`), and so are its bounds
on large requests: at most QUEUE of them at once (reading, waiting, being
answered), a 503 with Retry-After beyond, before the body is read; a costly
request that waits too long for its turn (the engine room's Service) is a 503
too. A WSGI server's thread is held while its request arrives and waits, so
give it more threads than QUEUE, for the small requests. A calculator keeps
its state in its process, so run one worker process (with as many threads as
you like): two would be two calculators, and the first request says so in
the log (the WSGI server's wsgi.multiprocess).
"""

import sys
import threading
from http import HTTPStatus

from .http_server import LARGE, MAX_BODY, QUEUE, RETRY, refusal, warn_of_workers


def make_application(service, path="/api", max_body=MAX_BODY, state=""):
    """A WSGI application answering the protocol's messages at `path`; one whose service keeps
    `state` (such as "variables") warns at its first request if the WSGI server runs several processes."""
    places = threading.BoundedSemaphore(QUEUE)  # for large requests
    first = [True]

    def application(environ, start_response):
        if first[0]:
            first[0] = False
            warn_of_workers(state, bool(environ.get("wsgi.multiprocess")))
        length = environ.get("CONTENT_LENGTH") or None
        problem = refusal(environ["REQUEST_METHOD"], environ.get("PATH_INFO") or "/", length, path, max_body)
        large = not problem and int(length) > LARGE
        if large and not places.acquire(blocking=False):
            problem = 503, "Too many large requests at once; try again soon", RETRY
        if problem:
            return _refuse(start_response, *problem)
        try:
            reply = service.handle(environ["wsgi.input"].read(int(length)), environ.get("REMOTE_ADDR", ""))
        except TimeoutError:  # the engine room's service found no turn for it in time
            return _refuse(start_response, 503, "The server is busy; try again soon", RETRY)
        finally:
            if large:
                places.release()
        start_response("200 OK", [("Content-Type", reply.media_type), ("Content-Length", str(len(reply.data)))])
        return [reply.data]

    return application


def _refuse(start_response, status, message, headers):
    body = (message + "\n").encode()
    start_response(f"{status} {HTTPStatus(status).phrase}",
                   [*headers, ("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(body)))])
    return [body]


if __name__ == "__main__":  # a library module, which people may try to run
    print("python -m reference.wsgi: error: this module is for WSGI servers, not a command; serve the "
          "calculator with gunicorn 'reference.calculator:wsgi()', or your Service with "
          "make_application(service)", file=sys.stderr)
    sys.exit(2)
