"""python -m conformance fuzz (commands/fuzz.py) as people use it every day: the checks named or left out,
a budget for each answer's time, and the slowest calls said."""

import json
import re
import time

import pytest

from conformance.__main__ import main
from conformance.fuzz.verdicts import CHECKS
from reference import Service, load
from tests.support.servers import serving

SLOW = [{"info.Slow": {}}, {"fn.work": {"x": "integer"}, "->": [{"Ok_": {"y": "integer"}}]},
        {"fn.quick": {}, "->": [{"Ok_": {}}]}]


SPENT = [0.0]  # seconds the run's clock is moved on by, as if fn.work took them (no test waits them out)


def work(arguments, headers):
    """Slow past 100: three tenths of a second more on the run's clock (the calls a user's budget is for)."""
    if arguments["x"] > 100:
        SPENT[0] += 0.3
    return {"Ok_": {"y": arguments["x"]}}


def fuzzed(capsys, url, *args):
    status = main(["fuzz", "--target", url, "--seed", "1", "--max-examples", "12", *args])
    return status, capsys.readouterr().out


def test_slow_calls_are_said_and_fail_only_past_a_budget_given(capsys, tmp_path, monkeypatch):
    """(A run whose calls took 3 s each said "no failures".) Without a budget the slowest calls are said and
    nothing fails; with one, each function slower than it fails the time check, and the quick one passes."""
    clock = time.monotonic
    monkeypatch.setattr(time, "monotonic", lambda: clock() + SPENT[0])
    service = Service(load(SLOW), {"fn.work": work, "fn.quick": lambda a, h: {"Ok_": {}}})
    with serving(service) as server:
        status, text = fuzzed(capsys, server.url)
        assert status == 0 and "time" not in text.split("By check: ")[1].split("\n")[0], text
        slowest = re.search(r"Slowest calls: fn\.work (\d\.\d+) s, fn\.quick (\d\.\d+) s \(--response-time", text)
        assert slowest and float(slowest[1]) >= 0.3 > float(slowest[2]), text
        status, text = fuzzed(capsys, server.url, "--response-time", "0.2", "--json", str(tmp_path / "r.json"))
    verdicts = {case["id"]: case for case in json.loads((tmp_path / "r.json").read_text())["cases"]}
    assert status == 1 and verdicts["fuzz/fn.work/time"]["status"] in ("fail", "flaky"), text
    assert verdicts["fuzz/fn.quick/time"]["status"] == "pass", text
    assert re.search(r"time: it took 0\.3\d\d s, past the budget of 0\.2 s", text), text
    assert verdicts["fuzz/fn.work/time"]["level"] == "SHOULD"


def test_checks_named_are_the_only_ones_judged_and_those_left_out_are_not_reported(capsys):
    with serving(Service(load(SLOW), {"fn.work": lambda a, h: {"Ok_": {"y": 1}}, "fn.quick": lambda a, h: {"Ok_": {}}})) \
            as server:
        status, text = fuzzed(capsys, server.url, "--checks", "result,id", "--checks", "media")
        assert status == 0 and "By check: result passed (2), id passed (2), media passed (2)\n" in text, text
        assert "Fuzzed 2 functions with" in text
        status, text = fuzzed(capsys, server.url, "--exclude-checks", "rejected,binary,packed")
    kept = [check for check in CHECKS if check not in ("rejected", "binary", "packed", "time")]
    said = text.split("By check: ")[1].split("\n")[0]
    assert status == 0 and [part.split()[0] for part in said.split(", ")] == kept, text


@pytest.mark.parametrize("args, message", [
    (["--checks", "result,nope"], "no check is named nope; the checks are message, accepted"),
    (["--checks", "time"], "the time check needs a budget: give --response-time SECONDS"),
    (["--checks", "id", "--exclude-checks", "id"], "--checks and --exclude-checks leave no check to judge"),
    (["--response-time", "-1"], "--response-time"),
])
def test_a_check_option_misused_is_one_line_and_exit_2(args, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["fuzz", "--target", "http://127.0.0.1:9/api", *args])
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and message in error and error.count("\n") == 1, error
