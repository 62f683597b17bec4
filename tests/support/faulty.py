"""Services with bugs planted, which the fuzzer's tests find (over HTTP, and in process), and the fuzz
command run in process, with the failures it prints."""

import base64
import json
import re
import time

from conformance.__main__ import main

FAULTY = [
    {"info.Faulty": {}},
    {"fn.ok": {"x": "integer", "tags!": ["string"], "note!": "string?"}, "->": [{"Ok_": {"x": "integer"}}]},
    {"fn.typo": {"x": "integer", "note!": "string", "point!": "struct.Point"}, "->": [{"Ok_": {"n": "integer"}}]},
    {"fn.crash": {"x": "integer", "note!": "string"}, "->": [{"Ok_": {}}]},
    {"fn.tag": {"flag": "boolean", "items!": ["integer"]}, "->": [{"Ok_": {}}, {"ErrorDeclared": {}}]},
    {"struct.Point": {"x": "number", "y": "number", "label!": "string"}},
]


HANDLERS = {
    "fn.ok": lambda arguments, headers: {"Ok_": {"x": arguments["x"]}},
    "fn.typo": lambda arguments, headers: {"Ok_": {"n": str(arguments["x"]) if arguments["x"] < 0 else arguments["x"]}},
    "fn.crash": lambda arguments, headers: 1 / (arguments["x"] <= 500) and {"Ok_": {}},
    "fn.tag": lambda arguments, headers: {"ErrorUndeclared": {}} if arguments["flag"] else {"Ok_": {}},
}


COUNTER = [{"info.Counter": {}}, {"fn.getCounter": {}, "->": [{"Ok_": {"count": "integer"}}]},
           {"fn.reset": {"to!": "integer"}, "->": [{"Ok_": {}}]}]


def counter_handlers():
    """fn.getCounter answers a wrong type once fn.reset has been called: a bug no call of one function finds."""
    state = {"reset": False}
    return {"fn.getCounter": lambda a, h: {"Ok_": {"count": "zero" if state["reset"] else 0}},
            "fn.reset": lambda a, h: state.update(reset=True) or {"Ok_": {}}}


NOTEBOOK = [
    {"info.Notebook": {}}, {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"$authenticated": False, "fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}]},
    {"fn.create": {"text": "string", "tags!": ["string"]}, "->": [{"Ok_": {"id": "string"}}]},
    {"fn.read": {"id": "string"}, "->": [{"Ok_": {"note": "struct.Note"}}, {"ErrorNotFound": {}}]},
    {"struct.Note": {"text": "string", "state": "union.State", "marks": ["struct.Mark"]}},
    {"union.State": [{"Open": {}}, {"Closed": {"at": "integer"}}]},
    {"struct.Mark": {"at": "integer", "label!": "string"}},
]


def issued_only(handlers, tokens):
    """`handlers` whose every function but fn.login refuses a Session token that is not among `tokens` (those
    its logins issued), as a right service refuses credentials it never gave."""
    def guarded(handler):
        def answer(arguments, headers):
            session = (headers.get("@auth_") or {}).get("Session")
            if session is not None and session.get("token") not in tokens:
                return {"ErrorUnauthenticated_": {}}
            return handler(arguments, headers)
        return answer
    return {name: handler if name == "fn.login" else guarded(handler) for name, handler in handlers.items()}


def notebook_handlers():
    """Notes kept by user, each under an id the server makes: a note is read back only by its own user,
    with an id only fn.create's answer gave; its marks, one for each tag, have a label every other one."""
    users, notes, made = {}, {}, iter(range(10**9))

    def user(headers):
        return users.get(headers.get("@auth_", {}).get("Session", {}).get("token"))

    def login(arguments, headers):
        token = f"token-{next(made)}"
        users[token] = arguments["name"]
        return {"Ok_": {"token": token}}

    def create(arguments, headers):
        note = f"note-{next(made) * 7919 % 10007}"
        notes[(user(headers), note)] = arguments
        return {"Ok_": {"id": note}}

    def read(arguments, headers):
        note = notes.get((user(headers), arguments["id"]))
        if note is None:
            return {"ErrorNotFound": {}}
        marks = [{"at": number, **({"label!": tag} if number % 2 else {})} for number, tag in
                 enumerate(note.get("tags!", []))]
        return {"Ok_": {"note": {"text": note["text"], "state": {"Open": {}}, "marks": marks}}}
    return issued_only({"fn.login": login, "fn.create": create, "fn.read": read}, users)


NOTEBOOK_BUGS = {  # a bug in what fn.read answers for a note that exists, the schema's checks aside
    "state": lambda note: {**note, "state": {"Archived": {}}} if "state" in note else note,  # (an object still: a
    # tag the union lacks)
    "label": lambda note: {**note, "marks": [{**mark, "label!": 7} if "label!" in mark else mark
                                             for mark in note["marks"]]} if "marks" in note else note,
    "text": lambda note: {**note, "text": {"words": note.get("text")}},  # (an object where text goes)
}


def notebook_bug(name):
    """An answer mutation (servers.Mutated) that plants the NOTEBOOK_BUGS bug `name` in fn.read's notes."""
    def planted(request, message):
        note = message[1].get("Ok_", {}).get("note") if request and "fn.read" in request[1] else None
        if isinstance(note, dict):
            message[1]["Ok_"]["note"] = NOTEBOOK_BUGS[name](note)
        return message
    return planted


def fuzzing(capsys, url, *args):
    """Run `python -m conformance fuzz` in-process; return (exit status, output lines, seconds)."""
    started = time.monotonic()
    status = main(["fuzz", "--target", url, "--seed", "7", *args])
    return status, capsys.readouterr().out.splitlines(), time.monotonic() - started


def failures(lines):
    """{(function, check): the call of its reproduction} of a run's output."""
    found = {}
    for number, line in enumerate(lines):
        if line.startswith("FAIL fuzz/"):
            _, function, check = line.split()[1].split("/")
            curl = next(later for later in lines[number:] if later.strip().startswith("curl "))
            found[(function, check)] = json.loads(re.search(r"--data-binary '(.*)'$", curl)[1])
    return found


def bytes_as_text(request, message):
    """An answer mutation (servers.Mutated): on MessagePack, every bytes value sent as a str of its base64, as
    on JSON."""
    def text(value):
        if type(value) is bytes:
            return base64.b64encode(value).decode()
        if type(value) is list:
            return [text(element) for element in value]
        return {key: text(element) for key, element in value.items()} if type(value) is dict else value
    return [message[0], text(message[1])] if "@bin_" in message[0] else message
