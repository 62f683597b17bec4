"""The testbed contract on the independent implementation's library, over HTTP.

Run with the peer's Python (it imports telepact, never reference):
    python peer_testbed.py SCHEMA_FILE PORT
It serves the schema at http://127.0.0.1:PORT/api, every function answered the
way conformance/README.md says a testbed handler answers.
"""

import asyncio
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from telepact_cli.telepact import FunctionRouter, Message, Server, TelepactSchema


async def handle(function, request):
    headers = request.headers
    if headers.get("@raise") is True:
        raise RuntimeError("the request asked the handler to raise (@raise)")
    result = headers.get("@result", {"Ok_": request.body[function]})
    return Message(dict(headers.get("@responseHeaders", {})), result)


schema = TelepactSchema.from_json(open(sys.argv[1], encoding="utf-8").read())
functions = [name for name in schema.parsed if name.startswith("fn.") and "->" not in name and not name.endswith("_")]
server = Server(schema, FunctionRouter({name: handle for name in functions}), Server.Options())
loop, lock = asyncio.new_event_loop(), threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = -1  # one write per response, or each waits for the client's delayed ACK

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with lock:  # one event loop, one request at a time
            answer = loop.run_until_complete(server.process(data)).bytes
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream" if answer[:1] == b"\x92" else "application/json")
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), Handler).serve_forever()
