"""WSGI: the same core behind any WSGI server (gunicorn, uWSGI, mod_wsgi, wsgiref).

`make_application(service)` serves any Service; the calculator's is
`reference.calculator:wsgi()`, which gunicorn calls to make it:

    gunicorn --workers 1 --threads 8 'reference.calculator:wsgi()'

A calculator keeps its state in its process, so run one worker process (with
as many threads as you like): two would be two calculators.
"""

import sys
from http import HTTPStatus

from .http_server import MAX_BODY, refusal


def make_application(service, path="/api", max_body=MAX_BODY):
    """A WSGI application answering the protocol's messages at `path`."""

    def application(environ, start_response):
        length = environ.get("CONTENT_LENGTH") or None
        problem = refusal(environ["REQUEST_METHOD"], environ.get("PATH_INFO") or "/", length, path, max_body)
        if problem:
            status, message, headers = problem
            body = (message + "\n").encode()
            start_response(f"{status} {HTTPStatus(status).phrase}",
                           [*headers, ("Content-Type", "text/plain; charset=utf-8"),
                            ("Content-Length", str(len(body)))])
            return [body]
        data = environ["wsgi.input"].read(int(length))
        reply = service.handle(data, environ.get("REMOTE_ADDR", ""))
        start_response("200 OK", [("Content-Type", reply.media_type), ("Content-Length", str(len(reply.data)))])
        return [reply.data]

    return application


if __name__ == "__main__":  # a library module, which people may try to run
    print("python -m reference.wsgi: error: this module is for WSGI servers, not a command; serve the "
          "calculator with gunicorn 'reference.calculator:wsgi()', or your Service with "
          "make_application(service)", file=sys.stderr)
    sys.exit(2)
