"""Services with bugs planted, which the fuzzer's tests find (over HTTP, and in process), and the fuzz
command run in process, with the failures it prints."""

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
