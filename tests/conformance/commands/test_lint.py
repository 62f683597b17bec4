"""python -m conformance check and generate (commands/lint.py): a broken suite is told, a generated file
that is not current too, and an installed copy is never written into."""

import json

from conformance.__main__ import main
from conformance.commands import lint
from conformance.language import suite as cases


def test_check_finds_problems_in_a_broken_suite(tmp_path, capsys):
    """The linter is real: duplicated ids, unknown requirements, bad shapes, misfits and stale files are found."""
    for path in cases.CASES.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    envelope = json.loads((tmp_path / "envelope.json").read_text())
    envelope["cases"].append(dict(envelope["cases"][0]))
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/one", "requirements": ["no.such.rule"]})
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/two", "requires": ["calculator"],
                              "steps": [{"request": {"message": [{}, {"fn.add": {"x": "1", "y": 2}}]},
                                         "response": {"message": [{}, {"Ok_": {"result": "three"}}]}}]})
    envelope["cases"].append({**envelope["cases"][1], "id": "envelope/new/three", "features": ["binary"]})
    (tmp_path / "envelope.json").write_text(json.dumps(envelope))
    problems = lint.check(tmp_path)
    assert "envelope.json: envelope/parse/not-json: the id is also used in envelope.json" in problems
    assert "envelope.json: envelope/new/one: unknown requirement no.such.rule" in problems
    assert "envelope.json: envelope/new/two: step 1: the expected Ok_ does not fit its fields {'result': 'number'}" in problems
    assert "envelope.json: envelope/new/two: step 1: the request does not fit fn.add, yet a Ok_ is expected" in problems
    assert "envelope.json: envelope/new/three: its requests use the features [], not ['binary']" in problems
    (tmp_path / "http.json").write_text(json.dumps({"description": "x", "cases": [{"id": "Bad Id", "steps": []}]}))
    problems = lint.check(tmp_path)
    assert "http.json: $.cases[0].id: 'Bad Id' does not match ^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)+$" in problems
    assert "http.json: $.cases[0]: level is missing" in problems


def test_check_fails_when_a_generated_file_is_not_current(tmp_path, monkeypatch):
    monkeypatch.setattr(cases, "HERE", tmp_path)
    (tmp_path / "cases").mkdir()
    for name in ("fixture.schema.json", "requirements.json", "retired.json"):
        (tmp_path / name).write_text((cases.CASES.parent / name).read_text())
    problems = lint.check(tmp_path / "cases")
    assert "testbed.json: not what conformance/tables makes; run python -m conformance generate" in problems
    assert "cases/testbed-types.json: not what conformance/tables makes; run python -m conformance generate" in problems


def test_generate_refuses_to_write_into_an_installed_copy(monkeypatch, tmp_path, capsys):
    """In a clone it rewrites conformance/; installed (no pyproject.toml beside it), it says why not."""
    monkeypatch.setattr(cases, "HERE", tmp_path / "site-packages" / "conformance")
    assert main(["generate"]) == 2
    assert capsys.readouterr().err == (f"python -m conformance generate: error: generate rewrites the suite's own "
                                       f"files, in a clone of its repository; this copy is installed at "
                                       f"{tmp_path / 'site-packages' / 'conformance'}\n")


def test_check_cases_holds_one_s_own_cases_to_what_the_suite_s_are_held_to(tmp_path, capsys):
    """check --cases FILE: an id used twice, a requirement the suite lacks, features not listed, a MUST case
    that pins the HTTP status; a sound file is said to be so, with its count."""
    ping = {"id": "mine/ping", "description": "Ping.", "requirements": ["service.one-call"], "level": "MUST",
            "requires": [], "features": [], "steps": [{"request": {"message": [{}, {"fn.ping_": {}}]},
                                                       "response": {"message": [{}, {"Ok_": {}}]}}]}
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps({"description": "Mine.", "cases": [ping]}))
    assert main(["check", "--cases", str(mine)]) == 0 and capsys.readouterr().out == f"{mine} is sound: 1 server case.\n"
    pinned = {**ping, "id": "mine/status", "steps": [{**ping["steps"][0], "response": {"status": 200, **ping["steps"][0]["response"]}}]}
    mine.write_text(json.dumps({"description": "Mine.", "cases": [ping, ping, {**ping, "id": "mine/x", "requirements": ["no.rule"]},
                                                                  pinned]}))
    assert main(["check", "--cases", str(mine)]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"{mine}: mine/ping: the id is also used in {mine}",
        f"{mine}: mine/x: unknown requirement no.rule",
        f"{mine}: mine/status: its requests use the features ['http'], not []",
        f"{mine}: mine/status: step 1: at MUST, the HTTP status, which the spec does not show",
        "4 problems"]
