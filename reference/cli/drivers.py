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

from .. import sources
from ..protocol import blobs
from ..protocol.documents import parse
from ..transports.http_client import Client, TransportError

MODES = ("json", "binary", "binary-requests", "packed")  # the driver protocol's modes: Client modes all


def drive_client(url, lines, out):
    """Make the calls the JSON lines of `lines` ask for; write each result as a JSON line."""
    clients = {}
    for instruction in instructions(lines, out, CLIENT_FIELDS):
        name = instruction["client"]
        if name not in clients:  # a new case: a fresh client, and the old ones' connections closed
            for old in clients.values():
                old.close()
            clients = {name: Client(url, instruction["mode"], instruction["timeout"])}
        try:
            headers, body = clients[name].call(instruction["function"], from_wire(instruction["arguments"]),
                                               from_wire(instruction["headers"]))
            reply = {"headers": to_wire(headers), "body": to_wire(body)}
        except TransportError as error:
            reply = {"error": str(error)}
        write(out, {"id": instruction["id"], **reply})


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


def drive_schema(lines, out):
    """Load the documents each JSON line of `lines` holds; write the verdict as a JSON line."""
    for instruction in instructions(lines, out, SCHEMA_FIELDS):
        documents, problems = [], []
        for document in instruction["documents"]:
            found, trouble = parse(document["name"], document["text"])
            documents, problems = documents + found, problems + trouble
        _, error = sources.check(documents, problems)
        reply = {"accepted": not error, **({"problems": [sources.as_data(p) for p in error.problems]} if error else {})}
        write(out, {"id": instruction["id"], **reply})


def instructions(lines, out, fields):
    """Each JSON line of `lines` that is an instruction with `fields` (name -> the test of its value); a line
    that is not is answered with an error that says why, and the next is read (a person may be typing)."""
    for number, line in enumerate(lines, 1):
        try:
            instruction = sources.parse_json(line, f"line {number}")
            wrong = [name for name, fits in fields.items()
                     if type(instruction) is not dict or name not in instruction or not fits(instruction[name])]
        except ValueError as error:
            write(out, {"id": None, "error": str(error)})
            continue
        if wrong:
            example = json.dumps({name: EXAMPLES[name] for name in fields})
            write(out, {"id": None, "error": f"line {number} is not an instruction: {', '.join(wrong)} "
                                             f"missing or wrong, as in {example}"})
            continue
        yield instruction


def write(out, reply):
    out.write(json.dumps(reply) + "\n")
    out.flush()


CLIENT_FIELDS = {"id": lambda value: True, "client": lambda value: type(value) is str,
                 "mode": lambda value: value in MODES, "timeout": lambda value: type(value) in (int, float) and value > 0,
                 "function": lambda value: type(value) is str, "arguments": lambda value: type(value) is dict,
                 "headers": lambda value: type(value) is dict}
SCHEMA_FIELDS = {"id": lambda value: True,
                 "documents": lambda value: type(value) is list and all(
                     type(d) is dict and type(d.get("name")) is str and type(d.get("text")) is str for d in value)}
EXAMPLES = {"id": 1, "client": "case#1", "mode": "json", "timeout": 5, "function": "fn.ping_", "arguments": {},
            "headers": {}, "documents": [{"name": "a.json", "text": "[...]"}]}
