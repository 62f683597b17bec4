"""A finding's reproduction (fuzz/reproduction.py, fuzz/properties.py): a case, confirmed by running it
before it is written, that fails on a fresh buggy service and passes on the fixed one."""

import json

import pytest

from conformance.__main__ import main
from reference import Service, load
from reference.services import calculator
from tests.support.faulty import NOTEBOOK, fuzzing, issued_only, notebook_bug, notebook_handlers
from tests.support.servers import Mutated, serving


def notebook(bug=None):
    """The notebook service, fresh, with the bug `bug` planted (None: fixed)."""
    service = Service(load(NOTEBOOK), notebook_handlers())
    return Mutated(service, notebook_bug(bug)) if bug else service


def written(path):
    return json.loads(path.read_text())["cases"]


@pytest.mark.parametrize("bug", ["state", "label", "text"])
def test_a_reproduction_fails_on_a_fresh_buggy_service_and_passes_once_it_is_fixed(bug, capsys, tmp_path):
    """A note only its user reads, by an id only the server made: the case logs in a user of its own,
    captures the id fn.create answers and reads it back; its property is the schema's own type where the
    answer broke it (a union's tags, an optional field that other marks lack, a string), which the
    broken value's JSON kind would not tell."""
    fixtures = tmp_path / "fuzz.json"
    with serving(notebook(bug)) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--fixtures", str(fixtures))
    text = "\n".join(lines)
    assert status == 1 and "FAIL fuzz/fn.read/result " in text, text
    [case] = [case for case in written(fixtures) if case["id"] == "fuzz/fn.read/result"]
    calls = [next(iter(step["request"]["message"][1])) for step in case["steps"]]
    assert calls[0] == "fn.login" and calls[-1] == "fn.read" and "fn.create" in calls, calls
    assert case["steps"][0]["request"]["message"][1]["fn.login"]["name"].startswith("$user")
    made = calls.index("fn.create") + 1
    assert case["steps"][-1]["request"]["message"][1]["fn.read"]["id"] == {"$var": f"fn.create.Ok_.id@{made}"}, case
    assert case["steps"][-1]["request"]["message"][0]["@auth_"] == {"Session": {"token": {"$var": "fn.login.Ok_.token@1"}}}
    assert case["requires"] == sorted(set(calls))
    for fixed, expected in ((bug, 1), (None, 0)):  # (each a fresh server: nothing of the fuzzing run is left)
        with serving(notebook(fixed)) as server:
            assert main(["run", "--target", server.url, "--cases", str(fixtures), "--id", case["id"]]) == expected, \
                capsys.readouterr().out
        capsys.readouterr()


def test_a_fixture_applies_only_to_a_target_that_serves_its_functions(capsys, tmp_path):
    """(Run against the calculator, a reproduction about functions it lacks passed.)"""
    fixtures = tmp_path / "fuzz.json"
    with serving(notebook("text")) as server:
        assert fuzzing(capsys, server.url, "--fixtures", str(fixtures))[0] == 1
    with serving(calculator.service()) as server:
        status = main(["run", "--target", server.url, "--cases", str(fixtures)])
    lines = capsys.readouterr().out.splitlines()
    assert status == 5 and "; 1 for other services (needs fn.create, fn.login, fn.read)" in lines[-2], lines[-3:]


NAMED = [{"info.Named": {}}, {"union.Auth_": [{"Session": {"token": "string"}}]},
         {"$authenticated": False, "fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}]},
         {"fn.getCounter": {}, "->": [{"Ok_": {"count": "integer"}}]}, {"fn.reset": {}, "->": [{"Ok_": {}}]}]


def named_handlers(bug=True):
    """State kept by the name a user logs in with: fn.getCounter answers a wrong type once that name's user
    called fn.reset (the same name again is the same user, who holds that state); fixed, it never does."""
    names, reset = {}, set()
    tokens = iter(range(10**9))

    def login(arguments, headers):
        token = f"t{next(tokens)}"
        names[token] = arguments["name"]
        return {"Ok_": {"token": token}}
    user = lambda headers: names.get(headers["@auth_"]["Session"]["token"])  # noqa: E731
    return issued_only({"fn.login": login, "fn.getCounter": lambda a, h: {"Ok_": {
        "count": "zero" if bug and user(h) in reset else 0}}, "fn.reset": lambda a, h: reset.add(user(h)) or {"Ok_": {}}},
        names)


def test_a_fresh_user_holds_no_state_of_another_by_the_same_name(capsys, tmp_path):
    """(Generated names repeat, "", "a": a login taken for a fresh user was one that had called fn.reset, and
    the reproduction said it failed alone.) The case logs in as "$user", a name no run used before."""
    fixtures = tmp_path / "fuzz.json"
    with serving(Service(load(NAMED), named_handlers())) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--fixtures", str(fixtures))
    text = "\n".join(lines)
    assert status == 1 and "replayed on a fresh user, it fails after 1 earlier call (fn.reset)" in text, text
    [case] = written(fixtures)
    assert [next(iter(step["request"]["message"][1])) for step in case["steps"]] == ["fn.login", "fn.reset",
                                                                                      "fn.getCounter"]
    assert case["steps"][0]["request"]["message"][1]["fn.login"]["name"] == "$user"
    for bug, expected in ((True, 1), (False, 0)):
        with serving(Service(load(NAMED), named_handlers(bug))) as server:
            assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == expected


class Mislabelled:
    """The calculator, but its MessagePack answers are labelled application/json (the other implementation's)."""

    def __init__(self):
        self.service = calculator.service()
        self.schema = self.service.schema

    def handle(self, data, client=""):
        reply = self.service.handle(data)
        return reply._replace(media_type="application/json") if reply.data[:1] == b"\x92" else reply


def test_a_media_reproduction_names_the_http_feature_it_uses_and_is_sound(capsys, tmp_path):
    """Its step checks an HTTP header, so the case lists http (it listed only binary, and check --cases found it)."""
    fixtures = tmp_path / "fuzz.json"
    with serving(Mislabelled()) as server:
        status, lines, _ = fuzzing(capsys, server.url, "--function", "fn.add", "--fixtures", str(fixtures))
        assert status == 1 and "FAIL fuzz/fn.add/media " in "\n".join(lines)
        [case] = written(fixtures)
        assert case["features"] == ["binary", "http"]
        assert main(["check", "--cases", str(fixtures)]) == 0
        assert capsys.readouterr().out == f"{fixtures} is sound: 1 server case.\n"
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
    with serving(calculator.service()) as server:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0
