"""Generation: the seeded random source, valid values of every type, and fn.api_ examples."""

import pytest

from reference import load
from reference.generate import Context, Random, examples, generate, generate_fields
from reference.loader import bundled
from reference.types import Type
from reference.validate import check, check_fields


def test_the_random_source_reproduces_the_other_implementation():
    """Seeds 0 and 1 give the same sequence, and the observed values come out in order."""
    one, zero = Random(1), Random(0)
    assert [one.number() for _ in range(3)] == [
        0.001007557381413671, 0.0014801179065742148, 0.016654991086877412]
    assert [zero.number() for _ in range(3)] == [
        0.001007557381413671, 0.0014801179065742148, 0.016654991086877412]
    assert Random(42).number() == 0.042317410019374176


SCHEMA = load([
    {"fn.all": {"b": "boolean", "i": "integer", "n": "number", "s": "string", "y": "bytes", "a": "any",
                "ni": "integer?", "arr": ["integer?"], "map": {"string": "bytes"}, "st": "struct.Pair",
                "un": "union.Shape", "call": "fn.ping2", "tree": "union.Tree", "opt!": "string?"},
     "->": [{"Ok_": {}}]},
    {"fn.ping2": {"note!": "string"}, "->": [{"Ok_": {}}]},
    {"struct.Pair": {"left": "integer", "right": "string?"}},
    {"union.Shape": [{"Circle": {"r": "number"}}, {"Empty": {}}]},
    {"union.Tree": [{"Leaf": {}}, {"Node": {"children": ["union.Tree"]}}]},
])


@pytest.mark.parametrize("seed", range(50))
@pytest.mark.parametrize("optional", ["random", "all", "none"])
def test_generated_values_are_valid_for_every_type(seed, optional):
    """Whatever the seed and options, what the generator makes passes the validator."""
    struct = SCHEMA.functions["fn.all"].arguments
    value = generate_fields(struct, Context(Random(seed), optional, (0, 3)))
    assert set(value) >= set(struct.required)
    assert ("opt!" in value) == {"all": True, "none": False}.get(optional, "opt!" in value)
    assert list(check_fields(value, struct, ())) == []


def test_collection_lengths_stay_in_range():
    """Array and map lengths are drawn from [low, high)."""
    context = Context(Random(7), "random", (2, 4))
    array = SCHEMA.functions["fn.all"].arguments.fields["arr"]
    assert {len(generate(array, context)) for _ in range(100)} == {2, 3}


def test_examples_are_the_ones_the_other_implementation_shows():
    """fn.api_ examples: a generator seeded with 1 per entry, every optional field, two elements."""
    api = {next(k for k in e if k[0] not in "/-$"): e for e in examples(load(bundled("calculator")), True)}
    assert api["struct.Variable"]["example"] == {"name": "sigma", "value": 0.0014801179065742148}
    assert api["fn.add"]["inputExample"] == {"fn.add": {"x": 0.0014801179065742148, "y": 0.016654991086877412}}
    assert api["headers.Auth_"]["inputExample"] == {"@auth_": {"Session": {"token": "sigma"}}}
    assert api["fn.evaluate"]["outputExample"] == {"ErrorUnknownVariables": {"unknownVariables": ["sigma", "lambda"]}}
    assert api["fn.export"]["outputExample"] == {"Ok_": {"blob": "AiHAMQ=="}}
    assert api["info.Calculator"]["example"] == {}
    result = Type("union", False, load(bundled("calculator")).functions["fn.api_"].result)
    assert list(check({"Ok_": {"api": list(api.values())}}, result)) == []
