"""The suite's own reading of the schema language against the reference's: two validators, one verdict
(and the suite's plain walk, `holds`, saying yes exactly where its describing walk finds nothing).

conformance/ imports nothing of reference/, so each checks the other: on random schemas, values made
valid by the suite's generator and made wrong in one place, and random JSON, both validators must find
the same problems at the same places."""

import json
import random

import pytest

from conformance.fuzz import values
from conformance.language import schema as language
from reference import load
from reference.protocol import validate

SCALARS = ["boolean", "integer", "number", "string", "bytes", "any"]


def random_schema(rng):
    """A schema of a few structs and unions and one function, of random type expressions."""
    names = [f"struct.S{i}" for i in range(3)] + [f"union.U{i}" for i in range(2)]

    def expression(depth=0):
        kind = rng.random()
        if kind < 0.45 or depth > 2:
            base = rng.choice(SCALARS + names[:2] + names[3:4])
        elif kind < 0.7:
            return [expression(depth + 1)]
        elif kind < 0.85:
            return {"string": expression(depth + 1)}
        else:
            base = rng.choice(names)
        return base + "?" * (rng.random() < 0.2 and base != "any")

    def fields(count):
        return {f"f{i}" + "!" * (rng.random() < 0.4): expression() for i in range(count)}

    entries = [{name: fields(rng.randint(0, 3))} for name in names[:3]]
    entries += [{name: [{f"T{i}": fields(rng.randint(0, 2))} for i in range(rng.randint(1, 3))]} for name in names[3:]]
    entries.append({"fn.f": fields(rng.randint(1, 4)), "->": [{"Ok_": {}}]})
    return entries


def reference_problems(schema, arguments):
    function = schema.functions["fn.f"]
    return {(tuple(found["path"]), next(iter(found["reason"])))
            for found in validate.check_fields(arguments, function.arguments, validate.at("fn.f"), function)}


def suite_problems(schema, arguments):
    """The suite's problems of the arguments, its plain yes-or-no walk (holds) agreeing with them."""
    fields = schema.functions["fn.f"].arguments
    found = {(tuple(path), reason) for path, reason in schema.object_problems(arguments, fields, ("fn.f",))}
    assert schema.holds_fields(arguments, fields) == (not found), arguments
    return found


def random_json(rng, depth=0):
    """A JSON value of any shape, field names and tags the random schemas use among its keys."""
    makers = [lambda: None, lambda: True, lambda: rng.randint(-5, 5), lambda: 2**64, lambda: 1.5,
              lambda: rng.choice(["", "AQI=", "x"]), lambda: {f"T{rng.randint(0, 2)}": {}}]
    if depth < 3:
        makers += [lambda: [random_json(rng, depth + 1) for _ in range(rng.randint(0, 2))],
                   lambda: {f"f{rng.randint(0, 3)}": random_json(rng, depth + 1) for _ in range(rng.randint(0, 2))}]
    return rng.choice(makers)()


@pytest.mark.parametrize("seed", range(40))
def test_the_suite_and_the_reference_judge_every_value_alike(seed):
    rng = random.Random(seed)
    entries = random_schema(rng)
    try:
        reference = load(entries)
    except Exception:  # (a random schema whose types never end: both loaders refuse it, elsewhere tested)
        return
    suite = language.Schema(entries)
    function = suite.functions["fn.f"]
    for _ in range(30):
        arguments = values.Maker(suite, rng).fields(function.arguments, 0)
        assert suite_problems(suite, arguments) == reference_problems(reference, arguments) == set(), (entries, arguments)
        for wrong, _, _ in values.object_wrongs(suite, arguments, function.arguments, ("fn.f",))[:10]:
            assert suite_problems(suite, wrong) == reference_problems(reference, wrong), (entries, wrong)
        anything = {name: random_json(rng) for name in function.arguments if rng.random() < 0.8}
        assert suite_problems(suite, anything) == reference_problems(reference, anything), (entries, anything)


def test_the_agreement_is_not_vacuous():
    """The values made hold every kind of JSON value, and the random ones are mostly wrong: both
    validators are asked about valid values and invalid ones alike."""
    rng, kinds, wrong = random.Random(1), set(), 0
    for seed in range(40):
        entries = random_schema(random.Random(seed))
        suite = language.Schema(entries)
        try:
            made = values.Maker(suite, rng).fields(suite.functions["fn.f"].arguments, 0)
        except values.TooLarge:  # (a struct requiring itself: no value has its type, and no loader takes it)
            continue
        kinds |= {type(value).__name__ for value in json.loads(json.dumps(made)).values()}
        wrong += bool(suite_problems(suite, {name: random_json(rng) for name in suite.functions["fn.f"].arguments}))
    assert {"bool", "int", "str", "list", "dict"} <= kinds and wrong >= 30
