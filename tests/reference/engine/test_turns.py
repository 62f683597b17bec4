"""Turns (engine/turns.py): what makes a call costly, learned from its function's own work and
answer, for each client apart."""

import json
import time

import pytest

from reference import engine, load

SCHEMA = load([{"fn.f": {"size!": "integer"}, "->": [{"Ok_": {"text!": "string"}}]}])


def burn(seconds):
    """Work (not wait) for `seconds` of this thread's time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def sized(arguments, headers):
    """An answer of `size!` characters."""
    return {"Ok_": {"text!": "x" * arguments.get("size!", 0)}}


def call(service, size=0, client="", headers=None):
    """Call fn.f for an answer of `size` characters; whether the call is costly now, for `client`."""
    data = json.dumps([headers or {}, {"fn.f": {"size!": size}}]).encode()
    service.handle(data, client)
    return (client, "fn.f") in service.turns.costly


@pytest.mark.parametrize("handler, costly", [
    (lambda: None, False),
    (lambda: burn(0.05), True),  # 50 ms at work
    (lambda: time.sleep(0.1), False),  # 100 ms waiting, no work: other threads were free to work
    (lambda: "x" * 20_000, True),  # over 16 KiB out
])
def test_a_call_is_costly_as_its_last_answer_was(handler, costly):
    service = engine.Service(SCHEMA, {"fn.f": lambda arguments, headers: {"Ok_": {"text!": handler() or ""}}})
    assert call(service) is costly


def test_a_costly_call_grows_cheap_again_as_its_answers_do():
    service = engine.Service(SCHEMA, {"fn.f": sized})
    assert call(service, 40_000)  # 2.4 times costly
    assert call(service, 1)  # halved: 1.2
    assert not call(service, 1)  # 0.6: forgotten
    assert service.turns.costly == {}


def test_one_client_cannot_make_a_function_costly_for_another():
    service = engine.Service(SCHEMA, {"fn.f": sized})
    assert call(service, 40_000, client="10.0.0.1")
    assert not call(service, 1, client="10.0.0.2")
    assert ("10.0.0.1", "fn.f") in service.turns.costly


@pytest.mark.parametrize("request_", [
    [{"@pad": "x" * 40_000}, {"fn.f": {}}],  # a large request, a small answer
    [{}, {"fn.f": {"size!": "x" * 40_000}}],  # a large request that is refused: no handler at work
    [{}, {"fn.g": {"x": "x" * 40_000}}],  # a function the schema lacks
])
def test_what_a_client_sends_makes_no_call_costly(request_):
    service = engine.Service(SCHEMA, {"fn.f": sized})
    service.handle(json.dumps(request_).encode())
    assert service.turns.costly == {}
