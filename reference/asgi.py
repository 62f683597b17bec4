"""ASGI: the same core behind any ASGI server (uvicorn, hypercorn, daphne).

`make_application(service)` serves any Service; the calculator's is
`reference.calculator:asgi`, a factory, which uvicorn calls to make it:

    uvicorn --factory reference.calculator:asgi --port 8000

The HTTP rules are the WSGI adapter's and the bundled server's (`refusal()`);
the ASGI server does the rest of HTTP (framing, keep-alive, TLS). A request's
body is read up to its Content-Length and no further, and the service runs in
a worker thread, so a long call never stalls the event loop. A calculator
keeps its state in its process, so run one worker process.
"""

import asyncio
import sys

from .http_server import MAX_BODY, refusal


def make_application(service, path="/api", max_body=MAX_BODY):
    """An ASGI application answering the protocol's messages at `path`."""

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
        if problem:
            status, message, extra = problem
            await _respond(send, status, [*extra, ("Content-Type", "text/plain; charset=utf-8")],
                           (message + "\n").encode())
            return
        data = await _body(receive, int(length))
        if data is None:  # the client went away
            return
        if len(data) != int(length):  # (servers frame bodies by their length; one that did not)
            await _respond(send, 400, [("Content-Type", "text/plain; charset=utf-8")],
                           b"The body is not as long as its Content-Length says\n")
            return
        client = (scope.get("client") or ("",))[0]
        reply = await asyncio.get_running_loop().run_in_executor(None, service.handle, data, client)
        await _respond(send, 200, [("Content-Type", reply.media_type)], reply.data)

    return application


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
