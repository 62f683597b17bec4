"""Values the fuzzer makes (fuzz/values.py): valid ones are valid, and each wrong one has exactly its problem."""

import json
import random

from conformance.fuzz import values
from conformance.language import schema as language
from tests.support import ROOT

TESTBED = ROOT / "conformance" / "testbed.json"


def test_values_made_are_valid_and_each_wrong_one_has_exactly_its_problem():
    """The generator and the checker of language.py mirror each other, on every type of the testbed."""
    schema, rng = language.Schema(json.loads(TESTBED.read_text())), random.Random(3)
    function = schema.functions["fn.echo"]
    for _ in range(200):
        arguments = values.Maker(schema, rng).fields(function.arguments, 0)
        assert not list(schema.object_problems(arguments, function.arguments, ("fn.echo",))), arguments
        for wrong, path, reason in values.object_wrongs(schema, arguments, function.arguments, ("fn.echo",)):
            assert (path, reason) in list(schema.object_problems(wrong, function.arguments, ("fn.echo",)))
        for simpler in values.smaller_fields(schema, arguments, function.arguments):
            assert not list(schema.object_problems(simpler, function.arguments, ("fn.echo",))), simpler


def test_as_text_turns_bytes_and_bin_notation_into_base64_text_at_any_depth_and_leaves_the_rest():
    """(The two wires' answers compare as text; scalars are left where they are, with no call each.)"""
    decoded = {"a": b"\x00\xff", "b": [1, 2.5, None, True, "x", {"$bin": "AP8="}, [b"\x01"]], "c": {"$bin": "AQ=="},
               "d": {"$bin": "AQ==", "other": 1}}
    assert values.as_text(decoded) == {"a": "AP8=", "b": [1, 2.5, None, True, "x", "AP8=", ["AQ=="]], "c": "AQ==",
                                       "d": {"$bin": "AQ==", "other": 1}}
    assert values.as_text(b"\x01") == "AQ==" and values.as_text(7) == 7
