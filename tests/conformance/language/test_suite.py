"""The suite as data (language/suite.py and the fixtures): sound, large, covering every requirement,
and citing the spec without copying it."""

import re

from conformance.language import suite as cases
from tests.support.suite import ALL, applying, run


def test_core_cases_need_nothing_but_the_protocol():
    core = applying({"live"})
    assert len(core) >= 80 and all(not c.requires for c in core)
    assert {c.id.split("/")[0] for c in core} >= {"api", "binary", "envelope", "headers", "http", "select"}


def test_the_suite_is_sound_large_and_covers_every_requirement(capsys):
    clients, loaders = len(cases.load(cases.CLIENTS)), len(cases.load(cases.SCHEMAS))
    assert run(capsys, "check") == (0, [f"The suite is sound: {len(ALL)} server cases, {clients} client cases and "
                                        f"{loaders} schema cases."])
    assert len(ALL) >= 1300 and len([c for c in ALL if c.id.startswith("testbed/")]) >= 1000
    requirements = cases.load_json("requirements.json")
    status, lines = run(capsys, "coverage")
    assert status == 0 and lines[-1] == f"{len(requirements)} of {len(requirements)} requirements have cases"


# (client and schema cases run on no service; whose data a user sees needs a service keeping data per user)
NOT_ON_THE_TESTBED = re.compile(r"calc\.|calculator\.|conv\.calculator|conv\.ownership|auth\.session|error\."
                             r"(unavailable|unknown-variables|divide-by-zero)|client\.|schema\.(?!api)|conv\.schema-")


def test_every_rule_but_the_calculators_own_has_cases_on_the_testbed():
    on_testbed = {r for c in ALL for r in c.requirements
                  if c.applies({"testbed", "live"}) or c.applies({"testbed", "mock"})}
    rules = {r["id"] for r in cases.load_json("requirements.json")}
    assert rules - on_testbed == {r for r in rules if NOT_ON_THE_TESTBED.match(r)}


def test_requirements_are_cited_not_copied():
    for requirement in cases.load_json("requirements.json"):
        assert re.match(r"(spec: [A-Z][\w ]+(, |$)|PROTOCOL\.md: )", requirement["cites"]), requirement
        assert requirement["text"].endswith(".") and len(requirement["text"]) < 300
