"""ASGI: the same core behind any ASGI server (uvicorn, hypercorn, daphne).

`make_application(service)` serves any Service; the calculator's is
`reference.calculator:asgi`, a factory, which uvicorn calls to make it:

    uvicorn --factory reference.calculator:asgi --port 8000

The HTTP rules are the WSGI adapter's and the bundled server's (`refusal()`);
the ASGI server does the rest of HTTP (framing, keep-alive, TLS). A request's
body is read up to its Content-Length and no further, and the service runs in
a worker thread, so a long call never stalls the event loop. Large requests
are bounded as by the bundled server: at most QUEUE at once (a 503 with
Retry-After beyond, before the body is read), each answered in its turn by a
thread of their own, one at a time, so that they never hold the threads small
requests need; one whose turn does not come within WAIT seconds gets a 503,
and so does a costly call the engine room's Service cannot give a turn. A
calculator keeps its state in its process, so run one worker process: an
application made in a process whose command asks for several says so in
the log (http_server.workers()).
"""

import asyncio
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from .http_server import LARGE, MAX_BODY, QUEUE, RETRY, WAIT, refusal, warn_of_workers, workers

BUSY = 503, "The server is busy; try again soon", RETRY


def make_application(service, path="/api", max_body=MAX_BODY, state=""):
    """An ASGI application answering the protocol's messages at `path`; one whose service keeps
    `state` (such as "variables") warns when made if the command asks for several worker processes."""
    warn_of_workers(state, workers() > 1)
    turn = ThreadPoolExecutor(1, thread_name_prefix="turn")  # large requests, one at a time
    large = [0]  # large requests held now: one event loop counts them, so no lock

    async def application(scope, receive, send):
        if scope["type"] == "lifespan":  # nothing to start or stop: say so, as the server asks
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":  # a websocket: not accepted, which the server answers with 403
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length", b"").decode("latin-1") or None
        problem = refusal(scope["method"], scope["path"], length, path, max_body)
        if not problem and int(length) > LARGE and large[0] >= QUEUE:
            problem = 503, "Too many large requests at once; try again soon", RETRY
        if problem:
            return await _refuse(send, *problem)
        held = int(length) > LARGE
        large[0] += held
        try:
            data = await _body(receive, int(length))
            if data is None:  # the client went away
                return
            if len(data) != int(length):  # (servers frame bodies by their length; one that did not)
                return await _refuse(send, 400, "The body is not as long as its Content-Length says", [])
            client = (scope.get("client") or ("",))[0]
            reply = await (_in_turn(turn, service.handle, data, client) if held else
                           asyncio.get_running_loop().run_in_executor(None, service.handle, data, client))
        except TimeoutError:  # no turn for it in time
            return await _refuse(send, *BUSY)
        finally:
            large[0] -= held
        await _respond(send, 200, [("Content-Type", reply.media_type)], reply.data)

    return application


async def _in_turn(turn, handle, data, client):
    """`handle(data, client)` in the thread of large requests, when its turn comes: TimeoutError if it
    does not come within WAIT seconds."""
    started = threading.Event()

    def answer():
        started.set()
        return handle(data, client)
    future = turn.submit(answer)
    answered = asyncio.wrap_future(future)
    done, _ = await asyncio.wait([answered], timeout=WAIT)
    if not done and not started.is_set() and future.cancel():
        raise TimeoutError(f"a large request waited over {WAIT} s for its turn")
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
    print("python -m reference.asgi: error: this module is for ASGI servers, not a command; serve the "
          "calculator with uvicorn --factory reference.calculator:asgi, or your Service with "
          "make_application(service)", file=sys.stderr)
    sys.exit(2)
