"""ASGI: the same core behind any ASGI server (uvicorn, hypercorn, daphne).

`make_application(service)` serves any Service; the calculator's is
`reference.services.calculator:asgi`, a factory, which uvicorn calls to make it:

    uvicorn --factory reference.services.calculator:asgi --port 8000

The HTTP rules are the WSGI adapter's and the bundled server's (`refusal()`),
and so is the admission (admission.py); the ASGI server does the rest of HTTP
(framing, keep-alive, TLS). A request's body is read up to its Content-Length
and no further, and the service runs in a worker thread, so a long call never
stalls the event loop. A large request takes one of QUEUE places before its
body is read (a 503 with Retry-After beyond) and is answered in a thread of
its own, one at a time, so that large ones never hold the threads small
requests need; one that waits past the admission's WAIT seconds gets a 503,
and so does a costly call the engine room's Service cannot give a turn.
Cheap requests go first. A calculator keeps its state in its process, so run
one worker process: an application made in a process whose command asks for
several says so in the log (transports.workers()).
"""

import asyncio
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext

from .admission import LARGE, RETRY, Admission
from .rules import MAX_BODY, refusal, warn_of_workers, workers

BUSY = 503, "The server is busy; try again soon", RETRY


def make_application(service, path="/api", max_body=MAX_BODY, state=""):
    """An ASGI application answering the protocol's messages at `path`; one whose service keeps
    `state` (such as "variables") warns when made if the command asks for several worker processes."""
    warn_of_workers(state, workers() > 1)
    admission = getattr(service, "admission", None) or Admission()
    turn = ThreadPoolExecutor(1, thread_name_prefix="turn")  # large requests, one at a time

    async def application(scope, receive, send):
        if scope["type"] == "lifespan":  # nothing to start or stop: say so, as the server asks
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":  # a websocket: not accepted, which the server answers with 403
            return
        headers, client = dict(scope["headers"]), (scope.get("client") or ("",))[0]
        length = headers.get(b"content-length", b"").decode("latin-1") or None
        problem = refusal(scope["method"], scope["path"], length, path, max_body)
        if problem:
            return await _refuse(send, *problem)
        if int(length) <= LARGE:
            return await _answer(receive, send, int(length), lambda data: asyncio.get_running_loop()
                                 .run_in_executor(None, _cheaply, admission, service.handle, data, client),
                                 admission.counted)
        place = admission.large.take(client)  # (held from here to the answer, if it gets one)
        if place is None:
            return await _refuse(send, 503, "Too many large requests at once; try again soon", RETRY)
        try:
            return await _answer(receive, send, int(length),
                                 lambda data: _in_turn(turn, service.handle, data, client, place, admission.wait))
        finally:
            admission.large.release(place)

    return application


async def _answer(receive, send, length, answering, scope=nullcontext):
    """Read the body, then within `scope` (admission.counted, for a cheap request: costly ones let it go
    first, from being handed to a worker thread to its answer being handed to the server) have
    `answering(data)` answer it (TimeoutError: a 503), and send the reply."""
    data = await _body(receive, length)
    if data is None:  # the client went away
        return
    if len(data) != length:  # (servers frame bodies by their length; one that did not)
        return await _refuse(send, 400, "The body is not as long as its Content-Length says", [])
    with scope():
        try:
            reply = await answering(data)
        except TimeoutError:  # no turn for it in time, or its place went to a newcomer
            return await _refuse(send, *BUSY)
        await _respond(send, 200, [("Content-Type", reply.media_type)], reply.data)


def _cheaply(admission, handle, data, client):
    """`handle(data, client)` in a worker thread, for a cheap request the event loop counted."""
    with admission.marked():
        return handle(data, client)


async def _in_turn(turn, handle, data, client, place, wait):
    """`handle(data, client)` in the thread of large requests, when its turn comes: TimeoutError if it
    does not come within `wait` seconds, or if the request's place goes to a newcomer before it does."""
    started = threading.Event()

    def answer():
        started.set()
        return handle(data, client)
    future = turn.submit(answer)
    answered = asyncio.wrap_future(future)
    deadline = asyncio.get_running_loop().time() + wait
    while not started.is_set() and not place.cancelled and asyncio.get_running_loop().time() < deadline:
        await asyncio.wait([answered], timeout=0.05)
    if not started.is_set() and future.cancel():
        raise TimeoutError("a large request waited over its time for its turn, or gave its place up")
    return await answered


async def _refuse(send, status, message, headers):
    await _respond(send, status, [*headers, ("Content-Type", "text/plain; charset=utf-8")], (message + "\n").encode())


async def _body(receive, length):
    """The request's body, read up to one byte past `length`; None if the client went away."""
    chunks, size = [], 0
    while size <= length:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        size += len(chunks[-1])
        if not message.get("more_body"):
            break
    return b"".join(chunks)


async def _respond(send, status, headers, body):
    await send({"type": "http.response.start", "status": status,
                "headers": [(name.encode(), value.encode())
                            for name, value in [*headers, ("Content-Length", str(len(body)))]]})
    await send({"type": "http.response.body", "body": body})


if __name__ == "__main__":  # a library module, which people may try to run
    print("python -m reference.transports.asgi: error: this module is for ASGI servers, not a command; serve the "
          "calculator with uvicorn --factory reference.services.calculator:asgi, or your Service with "
          "make_application(service)", file=sys.stderr)
    sys.exit(2)
