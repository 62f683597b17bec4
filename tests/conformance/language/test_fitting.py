"""Whether an expectation fits its service's schema (language/fitting.py): types with matchers anywhere, and
what `consistent` says of a case that no server could answer."""

import pytest

from conformance.language import fitting
from conformance.language.suite import Case

SCHEMA = fitting.keyed([
    {"struct.Point": {"x": "integer", "label!": "string?"}},
    {"union.Shape": [{"Dot": {}}, {"Line": {"to": "struct.Point"}}]},
    {"fn.move": {"to": "struct.Point"}, "->": [{"Ok_": {"moved": "boolean"}}, {"ErrorFar": {}}]},
    {"errors.Busy": [{"ErrorBusy": {"wait": "number"}}]},
    {"errors.Validation_": [{"ErrorInvalidRequestBody_": {"cases": ["any"]}}]},  # (of the stock entries)
])

FITS = [  # value, type expression, whether it fits
    (1, "integer", True),
    (1.5, "integer", False),
    (True, "integer", False),
    (1.5, "number", True),
    (None, "string?", True),
    (None, "string", False),
    ([1, 2], ["integer"], True),
    ([1, "2"], ["integer"], False),
    ({"a": 1}, {"string": "integer"}, True),
    ({"x": 1}, "struct.Point", True),
    ({"x": 1, "label!": None}, "struct.Point", True),
    ({"label!": "a"}, "struct.Point", False),  # x is required
    ({"x": 1, "y": 2}, "struct.Point", False),  # y is no field of it
    ({"Line": {"to": {"x": 1}}}, "union.Shape", True),
    ({"Circle": {}}, "union.Shape", False),
    ({"$capture": "p"}, "struct.Point", True),  # a matcher fits any type
    ({"x": {"$type": "integer"}}, "struct.Point", True),
    ({"$bin": "AQ=="}, "bytes", True),
]


@pytest.mark.parametrize("value, expression, expected", FITS)
def test_a_value_fits_the_type_its_expression_names(value, expression, expected):
    assert fitting.fits(value, expression, SCHEMA) is expected


def test_a_schema_s_wrappers_come_off_and_each_entry_is_keyed_by_what_it_defines():
    keyed = fitting.keyed([{"$partial": {"struct.A": {"$unordered": {"a": "integer"}}, "///": "An A."}}])
    assert keyed == {"struct.A": {"struct.A": {"a": "integer"}, "///": "An A."}}


def test_a_function_s_results_include_every_errors_group():
    assert set(fitting.results("fn.move", SCHEMA)) == {"Ok_", "ErrorFar", "ErrorBusy", "ErrorInvalidRequestBody_"}
    assert fitting.results("fn.nope", SCHEMA) is None


CONSISTENT = [  # request, expected response, what consistent says
    ({"fn.move": {"to": {"x": 1}}}, {"Ok_": {"moved": True}}, []),
    ({"fn.move": {"to": {"x": 1}}}, {"Ok_": {"moved": "yes"}},
     ["step 1: the expected Ok_ does not fit its fields {'moved': 'boolean'}"]),
    ({"fn.move": {"to": {"x": 1}}}, {"ErrorGone": {}}, ["step 1: fn.move has no result ErrorGone"]),
    ({"fn.move": {"to": "here"}}, {"ErrorBusy": {"wait": 1}},
     ["step 1: the request does not fit fn.move, yet a ErrorBusy is expected"]),
    ({"fn.move": {"to": "here"}}, {"ErrorInvalidRequestBody_": {"cases": []}}, []),  # a refusal may follow any call
    ({"fn.move": {"to": {"x": 1}}}, {"$oneOf": [{"Ok_": {"moved": True}}, {"ErrorOther": {}}]}, []),
    ({"fn.unknown": {}}, {"Ok_": {"anything": 1}}, []),  # no schema entry: nothing to hold it to
]


@pytest.mark.parametrize("request_body, response_body, expected", CONSISTENT)
def test_consistent_finds_what_no_server_could_answer(request_body, response_body, expected):
    case = Case.read({"id": "mine/one", "description": "One.", "requirements": [], "level": "MUST", "requires": [],
                      "features": [], "steps": [{"request": {"message": [{}, request_body]},
                                                 "response": {"message": [{}, response_body]}}]}, "mine.json")
    assert list(fitting.consistent(case, SCHEMA)) == expected
