"""The testbed contract on the independent implementation's library, over HTTP.

Run with the peer's Python (it imports telepact, never reference):
    python peer_testbed.py SCHEMA_FILE PORT
It serves the schema at http://127.0.0.1:PORT/api (with PORT 0, at a port the system
picks, printed first), every function answered the way conformance/README.md says
a testbed handler answers.
"""

import asyncio
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from telepact_cli.telepact import FunctionRouter, Message, Server, TelepactSchema


async def handle(function, request):
    headers = request.headers
    if headers.get("@raise") is True:
        raise RuntimeError("the request asked the handler to raise (@raise)")
    arguments = request.body[function]
    answer = ({"Ok_": {"greeting": f"Hello, {arguments['name']}!"}} if function == "fn.greet" else
              {"Ok_": {"secret!": arguments["hint!"]} if "hint!" in arguments else {}} if function == "fn.secret"
              else {"Ok_": arguments})
    result = headers.get("@result", answer)
    return Message(dict(headers.get("@responseHeaders", {})), result)


schema = TelepactSchema.from_json(open(sys.argv[1], encoding="utf-8").read())
functions = [name for name in schema.parsed if name.startswith("fn.") and "->" not in name and not name.endswith("_")]
options = Server.Options()
options.auth_required = "union.Auth_" in schema.parsed  # it refuses to serve a schema without auth otherwise
server = Server(schema, FunctionRouter({name: handle for name in functions}), options)
loop, lock = asyncio.new_event_loop(), threading.Lock()
MAX_BODY = 1024 * 1024


class HeaderLines:
    """The request's stream while http.server reads the header lines, noting a bare CR in one: the email
    package would take it for a line's end, and what follows for a header (RFC 9112, 2.2: refuse it)."""

    def __init__(self, stream):
        self.stream, self.bare_cr = stream, False

    def readline(self, size=-1):
        line = self.stream.readline(size)
        self.bare_cr = self.bare_cr or b"\r" in line.removesuffix(b"\n").removesuffix(b"\r")
        return line


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # one write per response, or each waits for the client's delayed ACK

    def parse_request(self):
        lines = self.rfile = HeaderLines(self.rfile)
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = lines.stream
        self.bare_cr = lines.bare_cr
        return parsed

    def do_POST(self):  # HTTP as conformance/PROTOCOL.md section 1 has it: this transport is ours, not the peer's
        lengths = self.headers.get_all("Content-Length") or []
        if len(lengths) > 1 or "Transfer-Encoding" in self.headers and lengths or lengths and not lengths[0].isdigit() \
                or self.headers.defects or self.bare_cr:  # (header lines the email package misreads)
            self.close_connection = True  # framing that could be read two ways, or not at all
            return self.answer(400, b"ambiguous framing", "text/plain")
        length = lengths[0] if lengths else None
        if length is None or int(length) > MAX_BODY:
            self.close_connection = True  # the body, unread, would be taken for the next request
            self.connection.settimeout(0.2)
            try:  # what the client sends meanwhile, read and dropped, so that closing resets nothing
                while self.rfile.read1(65536):
                    pass
            except OSError:
                pass
            return self.answer(411, b"no Content-Length", "text/plain") if length is None else \
                self.answer(413, b"over 1 MiB", "text/plain")
        data = self.rfile.read(int(length))
        if urllib.parse.urlsplit(self.path).path != "/api":  # (/api, or the absolute form http://host/api)
            return self.answer(404, b"the API is at /api", "text/plain")
        with lock:  # one event loop, one request at a time
            answer = loop.run_until_complete(server.process(data)).bytes
        self.answer(200, answer, "application/octet-stream" if answer[:1] == b"\x92" else "application/json")

    def do_GET(self):
        self.answer(405, b"POST a message to /api", "text/plain", Allow="POST")

    do_PUT = do_DELETE = do_GET

    def answer(self, status, data, media_type, **headers):
        self.send_response(status)
        for name, value in {"Content-Type": media_type, "Content-Length": str(len(data)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


http = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler)
print(http.server_port, flush=True)  # the port, which the system picks when PORT is 0
http.serve_forever()
