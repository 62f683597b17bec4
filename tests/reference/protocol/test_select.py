"""Field selection: what a function allows, header validation, and trimming results."""

import pytest

from reference import load
from reference.protocol import select
from reference.services import calculator

SCHEMA = load(calculator.entries())
TAPE, EVALUATE, PING = (SCHEMA.functions[n] for n in ("fn.getPaperTape", "fn.evaluate", "fn.ping_"))
VARIABLE = SCHEMA.functions["fn.getVariable"]


def test_options_list_everything_reachable_from_the_ok_result():
    """Reachable structs and unions (through arrays and tags) may be selected; fn links may not."""
    assert select.options(TAPE) == {
        "->": {"Ok_": ["tape"]},
        "struct.Evaluation": ["expression", "result", "successful", "timestamp"],
        "union.Expression": {"Add": ["left", "right"], "Constant": ["value"], "Div": ["left", "right"],
                             "Mul": ["left", "right"], "Sub": ["left", "right"], "Variable": ["name"]},
    }
    assert select.options(EVALUATE) == {"->": {"Ok_": ["result", "saveResult"]}}
    assert select.options(PING) == {"->": {"Ok_": []}}


A = {"Variable": {"name": "a"}}
ENTRIES = [
    {"expression": {"Div": {"left": {"Constant": {"value": 1}}, "right": {"Constant": {"value": 0}}}},
     "result": 0.0, "timestamp": 1, "successful": False},
    {"expression": {"Add": {"left": A, "right": {"Constant": {"value": 5}}}},
     "result": 15, "timestamp": 1, "successful": True},
]


@pytest.mark.parametrize("selection, expected", [
    ({"struct.Evaluation": ["result", "successful"]},
     {"Ok_": {"tape": [{"result": 0.0, "successful": False}, {"result": 15, "successful": True}]}}),
    ({"struct.Evaluation": []}, {"Ok_": {"tape": [{}, {}]}}),
    ({"->": {"Ok_": []}}, {"Ok_": {}}),
    ({"->": {"Ok_": ["tape"]}, "struct.Evaluation": ["expression"],
      "union.Expression": {"Add": ["left"], "Div": []}},
     {"Ok_": {"tape": [{"expression": {"Div": {}}}, {"expression": {"Add": {"left": A}}}]}}),
    ({}, {"Ok_": {"tape": ENTRIES}}),
])
def test_apply(selection, expected):
    """Selected structs and union tags keep only the listed fields, everywhere they appear."""
    assert select.apply(selection, {"Ok_": {"tape": ENTRIES}}, TAPE) == expected


def test_error_results_are_never_trimmed():
    """A selection applies to Ok_ only; an error comes back whole."""
    error = {"ErrorUnknownVariables": {"unknownVariables": ["zzz"]}}
    assert select.apply({"->": {"Ok_": ["saveResult"]}}, error, EVALUATE) == error


def test_removes_finds_fields_a_selection_drops_anywhere_in_a_result():
    """A handler may leave out fields the caller did not select; validation forgives them."""
    selection = {"->": {"Ok_": []}, "struct.Evaluation": ["result"], "union.Expression": {"Add": ["left"]}}
    assert select.removes(selection, TAPE, ["Ok_"], "tape")
    assert select.removes(selection, TAPE, ["Ok_", "tape", 3], "timestamp")
    assert not select.removes(selection, TAPE, ["Ok_", "tape", 3], "result")
    assert select.removes(selection, TAPE, ["Ok_", "tape", 0, "expression", "Add"], "right")
    assert not select.removes(selection, TAPE, ["Ok_", "tape", 0, "expression", "Sub"], "right")
    assert not select.removes({}, VARIABLE, ["Ok_", "variable!"], "name")
