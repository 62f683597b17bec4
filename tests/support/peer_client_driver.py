"""The independent implementation's Python client, driven by the conformance suite's client checks.

Run with the peer's Python (it imports telepact, never reference):
    python -m conformance client --command "PEER_PYTHON tests/support/peer_client_driver.py"
It speaks the driver protocol of conformance/README.md; the HTTP transport is
ours (the peer's client leaves transport to its user).
"""

import asyncio
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

from telepact_cli.telepact import Client, Message

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # (the repository, for the suite's notation)
from conformance.language.decoding import from_msgpack as wire, to_msgpack as unwire

MODES = {"json": (False, True), "binary": (True, True), "binary-requests": (True, False), "packed": (True, True)}


def adapter_for(url, seconds):
    def post(data):
        request = urllib.request.Request(url, data=data, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=seconds) as response:
                return response.read()
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"HTTP {error.code}") from None

    async def adapter(message, serializer):
        # In a thread, so that the client's own timeout (asyncio) can end a slow exchange.
        return serializer.deserialize(await asyncio.to_thread(post, serializer.serialize(message)))
    return adapter


clients, loop = {}, asyncio.new_event_loop()  # one loop: threads of abandoned calls do not hold up the next
for line in sys.stdin:
    instruction = json.loads(line)
    if instruction["client"] not in clients:
        options = Client.Options()
        options.use_binary, options.always_send_json = MODES[instruction["mode"]]
        options.timeout_ms_default = round(instruction["timeout"] * 1000)
        clients = {instruction["client"]: Client(adapter_for(sys.argv[1], instruction["timeout"]), options)}
    headers = unwire(instruction["headers"])
    if instruction["mode"] == "packed":
        headers["@pac_"] = True
    message = Message(headers, {instruction["function"]: unwire(instruction["arguments"])})
    try:
        response = loop.run_until_complete(clients[instruction["client"]].request(message))
        reply = {"headers": wire(response.headers), "body": wire(response.body)}
    except Exception as error:  # whatever the client raises is its way of reporting a failure
        reply = {"error": f"{type(error).__name__}: {error}"}
    print(json.dumps({"id": instruction["id"], **reply}, default=repr), flush=True)
