"""The fuzzer's two wires (fuzz/wires.py): a function that refuses to make the same thing twice is judged
on new values, on MessagePack and with @select_ alike."""

import contextlib
import io

import pytest

from conformance.__main__ import main
from reference import Service, load
from tests.support.faulty import bytes_as_text
from tests.support.servers import Mutated, serving


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
