"""What fuzz checks in one answer past its types (fuzz/answers.py, fuzz/values.py): every header the protocol
defines and every byte of the wire. Each planted bug is found by a default run on every seed, blamed on
the check it breaks, and its case fails while the bug is there and passes once it is fixed."""

import base64
import contextlib
import io
import json

import msgpack
import pytest

from conformance.__main__ import main
from reference import Service, load
from tests.support.servers import Mutated, serving

ROWS = [
    {"info.Rows": {}},
    {"struct.Row": {"a": "integer", "b": "string", "data": "bytes"}},
    {"fn.rows": {"n": "integer", "tag": "string"}, "->": [{"Ok_": {"rows": ["struct.Row"], "blob": "bytes"}}]},
]


def rows(arguments, headers):
    """Up to 4 rows, each with its bytes; a tag holding U+0000 crashes it when `nul` is planted."""
    count = min(abs(arguments["n"]), 4)
    return {"Ok_": {"rows": [{"a": i, "b": arguments["tag"][:3], "data": bytes([i])} for i in range(count)],
                    "blob": arguments["tag"].encode()}}


def crashing_on_nul(arguments, headers):
    if "\x00" in arguments["tag"]:
        raise ValueError("a C library stops at NUL")
    return rows(arguments, headers)


def numbers_echoed_as_text(request, message):
    """@id_ comes back, but a number as text (some kinds echoed wrongly, as a typed language's server may)."""
    echoed = message[0].get("@id_")
    if type(echoed) in (int, float) and type(echoed) is not bool:
        message[0]["@id_"] = str(echoed)
    return message


def last_row_dropped(request, message):
    """A packed array (its header row an Ext 17) loses its last row."""
    def drop(value):
        if type(value) is list and value and value[0] == msgpack.ExtType(17, b"") and len(value) > 2:
            return [drop(element) for element in value[:-1]]
        if type(value) is list:
            return [drop(element) for element in value]
        return {key: drop(element) for key, element in value.items()} if type(value) is dict else value
    return [message[0], drop(message[1])]


def bytes_as_text(request, message):
    """On MessagePack, every bytes value sent as a str of its base64, as on JSON."""
    def text(value):
        if type(value) is bytes:
            return base64.b64encode(value).decode()
        if type(value) is list:
            return [text(element) for element in value]
        return {key: text(element) for key, element in value.items()} if type(value) is dict else value
    return [message[0], text(message[1])] if "@bin_" in message[0] else message


def marks_dropped(request, message):
    """A JSON answer's @base64_ marks only its top-level bytes: those in its rows go unsaid."""
    marks = message[0].get("@base64_")
    if marks and "Ok_" in marks:
        message[0]["@base64_"] = {"Ok_": {key: mark for key, mark in marks["Ok_"].items() if key != "rows"}}
    return message


def selected_rows_dropped(request, message):
    """An answer to a call selecting `rows` leaves them out (a required field: a selection made them
    forgiven, even where it asked for them)."""
    selection = (request[0].get("@select_") or {}) if request else {}
    if "rows" in selection.get("->", {}).get("Ok_", []) and "Ok_" in message[1]:
        message[1]["Ok_"].pop("rows", None)
    return message


PLANTED = [("id", lambda: Mutated(Service(load(ROWS), {"fn.rows": rows}), numbers_echoed_as_text)),
           ("packed", lambda: Mutated(Service(load(ROWS), {"fn.rows": rows}), last_row_dropped)),
           ("bytes", lambda: Mutated(Service(load(ROWS), {"fn.rows": rows}), bytes_as_text)),
           ("base64", lambda: Mutated(Service(load(ROWS), {"fn.rows": rows}), marks_dropped)),
           ("select", lambda: Mutated(Service(load(ROWS), {"fn.rows": rows}), selected_rows_dropped)),
           ("handler", lambda: Service(load(ROWS), {"fn.rows": crashing_on_nul}))]


@pytest.mark.parametrize("seed", ["1", "2", "3"])
@pytest.mark.parametrize("check, buggy", PLANTED, ids=[check for check, _ in PLANTED])
def test_each_bug_past_the_types_is_found_on_every_seed_and_its_case_passes_once_fixed(check, buggy, seed, tmp_path):
    """(None was found by any run: @id_ was never sent, @pac_ never, MessagePack answers were turned to text
    before they were checked, @base64_ was never compared, a required field missing was forgiven under
    @select_ even where it was selected, and no text held a control character.)"""
    fixtures = tmp_path / "fuzz.json"
    with serving(buggy()) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["fuzz", "--target", server.url, "--seed", seed, "--max-examples", "30",
                       "--fixtures", str(fixtures)])
        text = out.getvalue()
        failing = {line.split()[1] for line in text.splitlines() if line.startswith("FAIL ")}
        ours = {f"fuzz/fn.rows/{check}", f"fuzz/fn.rows/{check}-2"}  # (a second kind: the bug at fewer places)
        assert status == 1 and f"fuzz/fn.rows/{check}" in failing and failing <= ours, text
        written = {case["id"] for case in json.loads(fixtures.read_text())["cases"]}
        assert written == failing, text
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
    with serving(Service(load(ROWS), {"fn.rows": rows})) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0, out.getvalue()


def test_the_right_service_passes_every_check_past_the_types():
    with serving(Service(load(ROWS), {"fn.rows": rows})) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["fuzz", "--target", server.url, "--seed", "1", "--max-examples", "30"]) == 0, out.getvalue()
    text = out.getvalue()
    for check in ("bytes", "binary", "packed", "base64", "id", "select", "handler"):
        assert f"{check} passed (1)" in text, text


CREATE = [{"info.Names": {}},
          {"fn.create": {"name": "string"}, "->": [{"Ok_": {"id": "integer", "name": "string", "blob": "bytes"}},
                                                   {"ErrorTaken": {}}]}]


def names():
    """fn.create makes a name once: the same name again is ErrorTaken."""
    taken = {}

    def create(arguments, headers):
        if arguments["name"] in taken:
            return {"ErrorTaken": {}}
        taken[arguments["name"]] = len(taken)
        return {"Ok_": {"id": len(taken), "name": arguments["name"], "blob": arguments["name"].encode()}}
    return Service(load(CREATE), {"fn.create": create})


def selection_ignored(request, message):
    """Every field comes back, whatever @select_ asked."""
    return message if not request or "@select_" not in request[0] or "Ok_" not in message[1] else [
        message[0], {"Ok_": {**message[1]["Ok_"], "id": 1}}]


@pytest.mark.parametrize("seed", ["1", "2", "3"])
@pytest.mark.parametrize("check, planted", [("select", selection_ignored), ("bytes", bytes_as_text)])
def test_a_function_that_refuses_to_make_a_thing_twice_is_judged_on_new_values(check, planted, seed):
    """(The call made again for select and MessagePack was ErrorTaken, so neither was judged: "not run:
    select", exit 0.) It is made again with new texts, and the first answer of each is judged."""
    with serving(Mutated(names(), planted)) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["fuzz", "--target", server.url, "--seed", seed, "--max-examples", "20"])
    failing = {line.split()[1] for line in out.getvalue().splitlines() if line.startswith("FAIL ")}
    assert status == 1 and failing == {f"fuzz/fn.create/{check}"}, out.getvalue()
    with serving(names()) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["fuzz", "--target", server.url, "--seed", seed, "--max-examples", "20"]) == 0, out.getvalue()
    said = out.getvalue()
    assert "select passed" in said and "bytes passed" in said, said
