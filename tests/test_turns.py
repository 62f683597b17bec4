"""Turns (engine/turns.py): what makes a request costly, learned from its function's answers."""

import time

import pytest

from reference import engine, load


def burn(seconds):
    """Work (not wait) for `seconds` of this thread's time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


@pytest.mark.parametrize("handler, costly", [
    (lambda: None, False),
    (lambda: burn(0.05), True),  # 50 ms at work
    (lambda: time.sleep(0.1), False),  # 100 ms waiting, no work: other threads were free to work
    (lambda: "x" * 20_000, True),  # over 16 KiB out
])
def test_a_function_is_costly_as_its_last_answer_was(handler, costly):
    schema = load([{"fn.f": {}, "->": [{"Ok_": {"text!": "string"}}]}])
    service = engine.Service(schema, {"fn.f": lambda arguments, headers: {"Ok_": {"text!": handler() or ""}}})
    assert service.handle(b'[{}, {"fn.f": {}}]').result == "Ok_"
    assert service.turns.costly("fn.f") is costly


def test_a_costly_function_grows_cheap_again_as_its_answers_do():
    schema = load([{"fn.f": {"size": "integer"}, "->": [{"Ok_": {"text": "string"}}]}])
    service = engine.Service(schema, {"fn.f": lambda arguments, headers: {"Ok_": {"text": "x" * arguments["size"]}}})
    service.handle(b'[{}, {"fn.f": {"size": 40000}}]')  # 2.4 times costly
    assert service.turns.costly("fn.f")
    service.handle(b'[{}, {"fn.f": {"size": 1}}]')  # halved: 1.2
    assert service.turns.costly("fn.f")
    service.handle(b'[{}, {"fn.f": {"size": 1}}]')  # 0.6
    assert not service.turns.costly("fn.f")
