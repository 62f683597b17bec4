"""The validator: every type expression, valid and invalid values, paths and case order."""

import pytest

from reference import load
from reference.protocol.types import Type
from reference.protocol.validate import at, check, check_fields
from reference.services import calculator

SCHEMA = load([
    {"fn.test": {"v!": "any?"}, "->": [{"Ok_": {}}]},
    {"fn.ping2": {"note!": "string"}, "->": [{"Ok_": {}}]},
    {"struct.Pair": {"left": "integer", "right": "string?"}},
    {"union.Shape": [{"Circle": {"r": "number"}}, {"Square": {"side": "number"}}, {"Empty": {}}]},
    {"union.Expr": [{"Leaf": {"n": "integer"}}, {"Neg": {"of": "union.Expr"}}]},
])


def cases(expression, value):
    """The cases of `{"v": value}` checked against a struct whose field v has type `expression`."""
    struct = load([{"struct.T": {"v": expression}}] + [e for e in SCHEMA.api() if "fn.test" not in e])
    return [(c["path"][1:], c["reason"]) for c in
            check_fields({"v": value}, struct.definition("struct.T"), at("T"))]


def unexpected(actual, expected, path=()):
    return [(["v", *path], {"TypeUnexpected": {"actual": {actual: {}}, "expected": {expected: {}}}})]


def out_of_range(path=()):
    return [(["v", *path], {"NumberOutOfRange": {}})]


@pytest.mark.parametrize("expression, value, expected", [
    ("boolean", True, []),
    ("boolean", False, []),
    ("boolean", 0, unexpected("Number", "Boolean")),
    ("boolean", "true", unexpected("String", "Boolean")),
    ("boolean", None, unexpected("Null", "Boolean")),
    ("boolean", [], unexpected("Array", "Boolean")),
    ("boolean", {}, unexpected("Object", "Boolean")),
    ("integer", 1, []),
    ("integer", -(2**63), []),
    ("integer", 2**63 - 1, []),
    ("integer", 2**63, out_of_range()),
    ("integer", -(2**63) - 1, out_of_range()),
    ("integer", 2**64, out_of_range()),
    ("integer", 1.0, unexpected("Number", "Integer")),
    ("integer", 1.5, unexpected("Number", "Integer")),
    ("integer", True, unexpected("Boolean", "Integer")),
    ("integer", "3", unexpected("String", "Integer")),
    ("number", 1, []),
    ("number", 1.5, []),
    ("number", 1e300, []),
    ("number", -0.0, []),
    ("number", 2**63, out_of_range()),
    ("number", float("inf"), out_of_range()),
    ("number", float("nan"), out_of_range()),
    ("number", False, unexpected("Boolean", "Number")),
    ("number", "1", unexpected("String", "Number")),
    ("number", None, unexpected("Null", "Number")),
    ("string", "", []),
    ("string", "héllo", []),
    ("string", 1, unexpected("Number", "String")),
    ("string", b"x", unexpected("Bytes", "String")),
    ("bytes", "", []),
    ("bytes", "AQI=", []),
    ("bytes", b"\x01\x02", []),
    ("bytes", "AQI", unexpected("String", "Base64String")),
    ("bytes", "A=", unexpected("String", "Base64String")),
    ("bytes", "!!", unexpected("String", "Base64String")),
    ("bytes", "@@AQ==", unexpected("String", "Base64String")),
    ("bytes", "AQ-_", unexpected("String", "Base64String")),
    ("bytes", 5, unexpected("Number", "Bytes")),
    ("bytes", None, unexpected("Null", "Bytes")),
    ("any", 0, []),
    ("any", {"nested": [1, None, {"k": "x"}]}, []),
    ("any", None, unexpected("Null", "Any")),
    ("any?", None, []),
    ("integer?", None, []),
    ("struct.Pair?", None, []),
    ("union.Shape?", None, []),
    ("struct.Pair", None, unexpected("Null", "Object")),
    (["integer?"], [1, None, 3], []),
    (["integer?"], [1, "x"], unexpected("String", "Integer", [1])),
    (["string"], ["a", 1, None, "b", True], [
        *unexpected("Number", "String", [1]), *unexpected("Null", "String", [2]),
        *unexpected("Boolean", "String", [4])]),
    (["string"], {}, unexpected("Object", "Array")),
    (["string"], None, unexpected("Null", "Array")),
    ([["integer"]], [[1], [2, "x"]], unexpected("String", "Integer", [1, 1])),
    ({"string": "number"}, {"a": 1, "b": "x", "c": None},
     [*unexpected("String", "Number", ["b"]), *unexpected("Null", "Number", ["c"])]),
    ({"string": "number"}, [], unexpected("Array", "Object")),
    ({"string": ["bytes"]}, {"k": ["AQ==", 7]}, unexpected("Number", "Bytes", ["k", 1])),
    ("struct.Pair", {"left": 1, "right": None}, []),
    ("struct.Pair", {"left": 1}, [(["v"], {"RequiredObjectKeyMissing": {"key": "right"}})]),
    ("struct.Pair", {"z": 0, "left": "a"}, [
        (["v"], {"RequiredObjectKeyMissing": {"key": "right"}}), (["v", "z"], {"ObjectKeyDisallowed": {}}),
        *unexpected("String", "Integer", ["left"])]),
    ("struct.Pair", 5, unexpected("Number", "Object")),
    ("struct.Pair", [], unexpected("Array", "Object")),
    ("union.Shape", {"Empty": {}}, []),
    ("union.Shape", {"Circle": {"r": 2}}, []),
    ("union.Shape", {}, [(["v"], {"ObjectSizeUnexpected": {"actual": 0, "expected": 1}})]),
    ("union.Shape", {"Circle": {"r": 1}, "Empty": {}},
     [(["v"], {"ObjectSizeUnexpected": {"actual": 2, "expected": 1}})]),
    ("union.Shape", {"Pow": {}}, [(["v", "Pow"], {"ObjectKeyDisallowed": {}})]),
    ("union.Shape", {"Circle": 5}, unexpected("Number", "Object", ["Circle"])),
    ("union.Shape", {"Circle": {}}, [(["v", "Circle"], {"RequiredObjectKeyMissing": {"key": "r"}})]),
    ("union.Shape", "Circle", unexpected("String", "Object")),
    ("union.Expr", {"Neg": {"of": {"Neg": {"of": {"Leaf": {"n": "x"}}}}}},
     unexpected("String", "Integer", ["Neg", "of", "Neg", "of", "Leaf", "n"])),
    ("fn.ping2", {"fn.ping2": {"note!": "hi"}}, []),
    ("fn.ping2", {"fn.ping2": {}}, []),
    ("fn.ping2", {"note!": "hi"}, [(["v", "note!"], {"ObjectKeyDisallowed": {}})]),
    ("fn.ping2", {"fn.test": {}}, [(["v", "fn.test"], {"ObjectKeyDisallowed": {}})]),
    ("fn.ping2", {"fn.ping2": {"bad": 1}}, [(["v", "fn.ping2", "bad"], {"ObjectKeyDisallowed": {}})]),
    ("fn.ping2", {}, [(["v"], {"ObjectSizeUnexpected": {"actual": 0, "expected": 1}})]),
])
def test_type_expressions(expression, value, expected):
    """Each value gets exactly the expected cases, with paths from the field down."""
    assert cases(expression, value) == expected


def test_optional_fields_may_be_absent_but_not_null():
    """`name!` may be left out; present, it is validated, so null needs a nullable type."""
    struct = load([{"struct.T": {"limit!": "integer", "note!": "string?"}}]).definition("struct.T")
    assert list(check_fields({}, struct, ())) == []
    assert list(check_fields({"note!": None}, struct, ())) == []
    assert list(check_fields({"limit!": None}, struct, at("f"))) == [{"path": ["f", "limit!"], "reason": {
        "TypeUnexpected": {"actual": {"Null": {}}, "expected": {"Integer": {}}}}}]
    assert list(check_fields({"limit": 3}, struct, at("f"))) == [
        {"path": ["f", "limit"], "reason": {"ObjectKeyDisallowed": {}}}]


def test_missing_fields_come_first_in_schema_order_then_sent_keys_in_sent_order():
    """Case order inside one object is fixed, so an error compares equal across servers."""
    struct = load([{"struct.T": {"a": "integer", "b": "integer", "c": "integer"}}]).definition("struct.T")
    reasons = [(c["path"], c["reason"]) for c in check_fields({"z": 1, "b": "x", "y": 2}, struct, at("f"))]
    assert reasons == [
        (["f"], {"RequiredObjectKeyMissing": {"key": "a"}}),
        (["f"], {"RequiredObjectKeyMissing": {"key": "c"}}),
        (["f", "z"], {"ObjectKeyDisallowed": {}}),
        (["f", "b"], {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Integer": {}}}}),
        (["f", "y"], {"ObjectKeyDisallowed": {}}),
    ]


def test_deep_recursive_values_validate():
    """A value nested hundreds of levels deep is walked without trouble."""
    expr = {"Leaf": {"n": 1}}
    for _ in range(500):
        expr = {"Neg": {"of": expr}}
    assert cases("union.Expr", expr) == []


CALCULATOR = load(calculator.entries())
TAPE = CALCULATOR.functions["fn.getPaperTape"]
SELECT = Type("ext", False, CALCULATOR.definition("_ext.Select_"))


def select_failures(selection, function=TAPE):
    return [(c["path"], c["reason"]) for c in check(selection, SELECT, at("@select_"), function)]


@pytest.mark.parametrize("selection, expected", [
    ({}, []),
    ({"->": {"Ok_": []}}, []),
    ({"struct.Evaluation": ["result", "result"]}, []),
    ({"struct.Evaluation": ["nope"]}, [(["@select_", "struct.Evaluation", 0], {"ArrayElementDisallowed": {}})]),
    ({"struct.Evaluation": [1, None]}, [(["@select_", "struct.Evaluation", 0], {"ArrayElementDisallowed": {}}),
                                       (["@select_", "struct.Evaluation", 1], {"ArrayElementDisallowed": {}})]),
    ({"struct.Evaluation": "x"}, [(["@select_", "struct.Evaluation"],
                                   {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Array": {}}}})]),
    ({"struct.Variable": ["name"]}, [(["@select_", "struct.Variable"], {"ObjectKeyDisallowed": {}})]),
    ({"fn.saveVariable": ["name"]}, [(["@select_", "fn.saveVariable"], {"ObjectKeyDisallowed": {}})]),
    ({"->": {"ErrorUnknownVariables": []}}, [(["@select_", "->", "ErrorUnknownVariables"],
                                              {"ObjectKeyDisallowed": {}})]),
    ({"->": ["Ok_"]}, [(["@select_", "->"], {"TypeUnexpected": {"actual": {"Array": {}},
                                                                "expected": {"Object": {}}}})]),
    ({"->": {"Ok_": "x"}}, [(["@select_", "->", "Ok_"],
                             {"TypeUnexpected": {"actual": {"String": {}}, "expected": {"Array": {}}}})]),
    ({"union.Expression": []}, [(["@select_", "union.Expression"],
                                 {"TypeUnexpected": {"actual": {"Array": {}}, "expected": {"Object": {}}}})]),
    ({"union.Expression": {"Constant": ["value", "x"], "Pow": ["a"]}}, [
        (["@select_", "union.Expression", "Constant", 1], {"ArrayElementDisallowed": {}}),
        (["@select_", "union.Expression", "Pow"], {"ObjectKeyDisallowed": {}})]),
    ([], [(["@select_"], {"TypeUnexpected": {"actual": {"Array": {}}, "expected": {"Object": {}}}})]),
    (5, [(["@select_"], {"TypeUnexpected": {"actual": {"Number": {}}, "expected": {"Object": {}}}})]),
])
def test_selections(selection, expected):
    """A selection names only what the function's result can hold, in the right shapes."""
    assert select_failures(selection) == expected
