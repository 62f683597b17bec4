"""The JSON Schema of the schema language (reference/schemas/language.schema.json), held against
every schema case of the conformance suite: it accepts every schema the loader accepts, and
refuses every one it refuses, but for what a JSON Schema cannot say."""

import json
from importlib import resources

import jsonschema
import pytest

from conformance.language import suite as cases
from conformance.runs import schema_suite as schemas

LANGUAGE = json.loads(resources.files("reference").joinpath("schemas/language.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(LANGUAGE)
# What a JSON Schema cannot say, as reference/README.md lists it: that a name is defined once (two
# definitions of one kind in an entry, too), that a name a type uses is defined as that kind, that
# a type can end, and that a stock name is not defined again.
BEYOND = ("conv.schema-once", "conv.schema-terminates", "conv.schema-internal")
UNDEFINED = ("struct.Nope", "union.P", "fn.Nope")
TWO_OF_A_KIND = ("schema/entry/refused/two-definitions",)
CASES = [c for c in cases.load(cases.SCHEMAS) if len(c.documents) == 1]


def verdict(case):
    """Whether the JSON Schema accepts a case's one document (JSON that is not JSON: refused)."""
    try:
        document = json.loads(schemas.text(case.documents[0]))
    except ValueError:
        return False
    return VALIDATOR.is_valid(document)


def test_the_json_schema_is_a_json_schema():
    jsonschema.Draft202012Validator.check_schema(LANGUAGE)


@pytest.mark.parametrize("case", [c for c in CASES if c.expect["accepted"]], ids=lambda c: c.id)
def test_it_accepts_every_schema_the_loader_accepts(case):
    assert verdict(case)


@pytest.mark.parametrize("case", [c for c in CASES if not c.expect["accepted"]], ids=lambda c: c.id)
def test_it_refuses_every_schema_the_loader_refuses_but_what_it_cannot_say(case):
    """It refuses the schema; or, for what a JSON Schema cannot say, it accepts it, so that the
    list above is exactly what it misses."""
    beyond = bool(set(BEYOND) & set(case.requirements) or case.id in TWO_OF_A_KIND
                  or any(name in json.dumps(case.documents) for name in UNDEFINED))
    assert verdict(case) is beyond
