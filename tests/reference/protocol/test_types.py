"""The type tree: what a schema's expressions resolve into, sizes, and the one walk through it."""

import pytest

from reference import load
from reference.protocol.types import Struct, Type, Union, reachable

SCHEMA = load([
    {"struct.Node": {"value": "integer", "next": "struct.Node?", "tags!": {"string": ["union.Tag"]}}},
    {"union.Tag": [{"Leaf": {}}, {"Pair": {"left": "union.Tag", "right": "union.Tag"}}, {"Call": {"f": "fn.f"}}]},
    {"fn.f": {"node": "struct.Node", "nodes": ["struct.Node?"]}, "->": [{"Ok_": {"tag": "union.Tag"}}]},
    {"struct.Alone": {"x": "boolean"}},
])


def definition(name):
    return SCHEMA.definition(name)


@pytest.mark.parametrize("field, expected", [
    ("value", Type("integer")),
    ("next", Type("struct", True, definition("struct.Node"))),
])
def test_expressions_resolve_to_shared_definitions(field, expected):
    assert definition("struct.Node").fields[field] == expected


def test_collections_nest_their_element_types():
    tags = definition("struct.Node").fields["tags!"]
    assert (tags.kind, tags.of.kind, tags.of.of.kind) == ("map", "array", "union")
    assert tags.of.of.of is definition("union.Tag")  # the same object, so recursion is a cycle


def test_required_fields_are_those_without_a_bang_in_schema_order():
    assert definition("struct.Node").required == ("value", "next")


@pytest.mark.parametrize("name, size", [
    ("struct.Alone", 1),  # one boolean
    ("struct.Node", 1),  # an integer; next is nullable, so the smallest Node holds no other
    ("union.Tag", 0),  # Leaf {} holds nothing
])
def test_sizes_count_the_values_of_the_smallest_value(name, size):
    assert definition(name).size == size


def test_a_function_is_a_call_union_and_a_result_union():
    function = SCHEMA.functions["fn.f"]
    assert isinstance(function.call, Union) and list(function.call.tags) == ["fn.f"]
    assert function.arguments is function.call.tags["fn.f"] and list(function.arguments.fields) == ["node", "nodes"]
    assert "Ok_" in function.result.tags and "ErrorInvalidRequestBody_" in function.result.tags


def test_reachable_visits_each_node_once_through_cycles_collections_and_calls():
    function = SCHEMA.functions["fn.f"]
    seen = list(reachable(function.arguments))
    names = [node.name for node in seen]
    assert len(names) == len(set(map(id, seen)))
    assert {"struct.Node", "union.Tag", "fn.f"} <= set(names)
    assert "struct.Alone" not in names
    assert all(isinstance(node, (Struct, Union)) for node in seen)


def test_reachable_from_a_scalar_only_struct_is_just_itself():
    assert list(reachable(definition("struct.Alone"))) == [definition("struct.Alone")]
