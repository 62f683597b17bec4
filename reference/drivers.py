"""Drivers: the reference speaking the conformance suite's driver protocols.

How this works
--------------
The suite checks a client library, or a schema loader, through a driver: a
program that reads instructions as JSON lines on standard input and writes
one JSON line of reply each on standard output (conformance/README.md).
`drive_client` is that program for this package's `Client`: each instruction
is a call to make, and bytes travel as `{"$bin": "<base64>"}` both ways,
since JSON has no bytes. `drive_schema` is that program for its loader:
each instruction is a set of documents, and the reply whether they make a
schema, with the problems if not.
"""

import json

from . import sources
from .http_client import Client, TransportError
from .protocol import blobs
from .protocol.documents import parse

MODES = {  # a mode of the driver protocol -> the Client options it means
    "json": {}, "binary": {"binary": True}, "binary-requests": {"binary": True, "binary_requests": True},
    "packed": {"binary": True, "packed": True},
}


def drive_client(url, instructions, out):
    """Make the calls the JSON lines of `instructions` ask for; write each result as a JSON line."""
    clients = {}
    for line in instructions:
        instruction = json.loads(line)
        name = instruction["client"]
        if name not in clients:  # a new case: a fresh client, and the old ones' connections closed
            for old in clients.values():
                old.close()
            clients = {name: Client(url, timeout=instruction["timeout"], **MODES[instruction["mode"]])}
        try:
            headers, body = clients[name].call(instruction["function"], from_wire(instruction["arguments"]),
                                               from_wire(instruction["headers"]))
            reply = {"headers": to_wire(headers), "body": to_wire(body)}
        except TransportError as error:
            reply = {"error": str(error)}
        out.write(json.dumps({"id": instruction["id"], **reply}) + "\n")
        out.flush()


def to_wire(value):
    """Bytes as {"$bin": base64}, at any depth, as the driver protocols write them."""
    if type(value) is bytes:
        return {"$bin": blobs.to_base64(value)}
    if type(value) is dict:
        return {key: to_wire(element) for key, element in value.items()}
    return [to_wire(element) for element in value] if type(value) is list else value


def from_wire(value):
    """The inverse of `to_wire`."""
    if type(value) is dict:
        if list(value) == ["$bin"]:
            return blobs.from_base64(value["$bin"])
        return {key: from_wire(element) for key, element in value.items()}
    return [from_wire(element) for element in value] if type(value) is list else value


def drive_schema(instructions, out):
    """Load the documents each JSON line of `instructions` holds; write the verdict as a JSON line."""
    for number, line in enumerate(instructions, 1):
        try:
            instruction = json.loads(line)
            id_, pairs = instruction["id"], [(document["name"], document["text"]) for document in instruction["documents"]]
            if not all(type(name) is type(text) is str for name, text in pairs):
                raise TypeError("a document's name and text are strings")
        except (ValueError, TypeError, KeyError) as error:  # a person typing, not the runner: say what is wrong
            out.write(json.dumps({"id": None, "error": f"line {number} is not an instruction: {_why(error)}, such as "
                                  '{"id": 1, "documents": [{"name": "a.json", "text": "[...]"}]}'}) + "\n")
            out.flush()
            continue
        documents, problems = [], []
        for name, text in pairs:
            found, trouble = parse(name, text)
            documents, problems = documents + found, problems + trouble
        _, problems = sources.check(documents, problems)
        reply = {"accepted": not problems, **({"problems": [sources.as_data(p) for p in problems]} if problems else {})}
        out.write(json.dumps({"id": id_, **reply}) + "\n")
        out.flush()


def _why(error):
    return (str(error) if isinstance(error, json.JSONDecodeError) else
            "an instruction is an object with an id and documents, each a name and a text")
