"""Who may call, and whose data comes back (fuzz/access.py): a protected function answering without valid
credentials, and one user's data returned to another, are found by a default run on every seed, with a
case that fails while the bug is there and passes once it is fixed; the calculator, the testbed and a
mock are blamed for nothing."""

import contextlib
import io
import itertools
import json

import pytest

from conformance.__main__ import main
from reference import Service, load, mocking
from reference.services import calculator, testbed
from tests.support.servers import Mutated, serving

VAULT = [
    {"info.Vault": {}},
    {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}], "$authenticated": False},
    {"fn.logout": {}, "->": [{"Ok_": {}}]},
    {"fn.put": {"name": "string", "secret": "string"}, "->": [{"Ok_": {}}]},
    {"fn.get": {"name": "string"}, "->": [{"Ok_": {"secret!": "string"}}]},
    {"fn.list": {}, "->": [{"Ok_": {"names": ["string"]}}]},
]
REFUSED = {"ErrorUnauthenticated_": {"message!": "Who are you?"}}


def vault(bug=None):
    """A vault of secrets kept per user, as each user's session says; with `bug`, one way it is wrong:
    "leak" (fn.get reads every user's), "forged" (any token is taken), "ended" (fn.list takes a session
    a logout ended)."""
    sessions, ended, secrets, made = {}, set(), {}, itertools.count()  # (a token is never issued twice)

    def user(headers, function):
        token = headers["@auth_"]["Session"]["token"]
        if bug == "forged":
            return sessions.get(token, token)
        if bug == "ended" and function == "fn.list" and token in ended:
            return ended and token
        return sessions.get(token)

    def guarded(function, handler):
        def answer(arguments, headers):
            who = user(headers, function)
            return REFUSED if who is None else handler(arguments, who)
        return answer

    def get(arguments, who):
        if bug == "leak":
            found = [mine[arguments["name"]] for mine in secrets.values() if arguments["name"] in mine]
            return {"Ok_": {"secret!": found[0]} if found else {}}
        mine = secrets.get(who, {})
        return {"Ok_": {"secret!": mine[arguments["name"]]} if arguments["name"] in mine else {}}

    def login(arguments, headers):
        token = f"t-{next(made)}"
        sessions[token] = arguments["name"]
        return {"Ok_": {"token": token}}

    def logout(arguments, who):
        for token in [t for t, name in sessions.items() if name == who]:
            sessions.pop(token)
            ended.add(token)
        return {"Ok_": {}}

    return Service(load(VAULT), {
        "fn.login": login, "fn.logout": guarded("fn.logout", logout),
        "fn.put": guarded("fn.put", lambda a, who: secrets.setdefault(who, {}).update({a["name"]: a["secret"]})
                          or {"Ok_": {}}),
        "fn.get": guarded("fn.get", get),
        "fn.list": guarded("fn.list", lambda a, who: {"Ok_": {"names": sorted(secrets.get(who, {}))}})})


def without_credentials_answered(request, message):
    """The service's protocol layer taken away for fn.list: a call without @auth_ is answered Ok_."""
    if request and "@auth_" not in request[0] and "fn.list" in request[1]:
        return [message[0], {"Ok_": {"names": []}}]
    return message


def fuzzed(server, *args):
    """(exit status, output, the fixture file's cases by id) of a default run."""
    with contextlib.redirect_stdout(io.StringIO()) as out:
        status = main(["fuzz", "--target", server.url, "--max-examples", "10", *args])
    return status, out.getvalue()


BUGS = [("leak", lambda: vault("leak"), {"fn.get"}, "owner", "returned it at Ok_.secret! to another user"),
        ("forged", lambda: vault("forged"), {"fn.get", "fn.put", "fn.list", "fn.logout"}, "auth",
         "called with credentials never issued"),
        ("ended", lambda: vault("ended"), {"fn.list"}, "auth", "called with the credentials of a user fn.logout logged out"),
        ("unguarded", lambda: Mutated(vault(), without_credentials_answered), {"fn.list"}, "auth",
         "called without credentials")]


@pytest.mark.parametrize("seed", ["1", "2", "3"])
@pytest.mark.parametrize("bug, buggy, functions, check, said", BUGS, ids=[bug[0] for bug in BUGS])
def test_each_bug_of_whose_data_and_credentials_is_found_and_its_case_passes_once_fixed(bug, buggy, functions, check,
                                                                                        said, seed, tmp_path):
    """(Every answer had the right type: no run found any of them.) Each is found, blamed on its function
    alone, and its case fails on the buggy vault and passes on the right one."""
    fixtures = tmp_path / "fuzz.json"
    with serving(buggy()) as server:
        status, text = fuzzed(server, "--seed", seed, "--fixtures", str(fixtures))
        failing = {line.split()[1] for line in text.splitlines() if line.startswith("FAIL ")}
        assert status == 1 and failing == {f"fuzz/{function}/{check}" for function in functions}, text
        assert said in text and "it fails again" in text, text
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
    with serving(vault()) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0, out.getvalue()


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_the_right_vault_passes_both_checks(seed):
    """Every protected function refused each way of calling it without valid credentials; what one user
    wrote came back to them, and to no one else."""
    with serving(vault()) as server:
        status, text = fuzzed(server, "--seed", seed)
    assert status == 0, text
    assert "auth passed (4)" in text and "owner passed" in text, text


def test_shared_data_is_no_ones_secret():
    """A vault that keeps one store for every user, as a public board would: each user sees what the
    others wrote, nothing keeps it from them, and nothing is blamed."""
    board = {}
    handlers = {"fn.login": lambda a, h: {"Ok_": {"token": "t-" + a["name"]}}, "fn.logout": lambda a, h: REFUSED,
                "fn.put": lambda a, h: board.update({a["name"]: a["secret"]}) or {"Ok_": {}},
                "fn.get": lambda a, h: {"Ok_": {"secret!": board[a["name"]]} if a["name"] in board else {}},
                "fn.list": lambda a, h: {"Ok_": {"names": sorted(board)}}}
    with serving(Service(load(VAULT), handlers)) as server:
        status, text = fuzzed(server, "--seed", "1")
    assert "FAIL fuzz/fn.get/owner" not in text and "shared, not per user" in text, text


@pytest.mark.parametrize("make", [calculator.service, testbed.service,
                                  lambda: mocking.service(VAULT)], ids=["calculator", "testbed", "mock"])
def test_the_shipped_services_and_a_mock_are_blamed_for_nothing(make, tmp_path):
    report = tmp_path / "r.json"
    with serving(make()) as server:
        status, text = fuzzed(server, "--seed", "4", "--json", str(report))
    verdicts = {case["id"]: case for case in json.loads(report.read_text())["cases"]}
    assert not any(case["status"] == "fail" for case in verdicts.values()), text
    assert status == 0 and "FAIL" not in text, text


NOTES = [
    {"info.Notes": {}},
    {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}], "$authenticated": False},
    {"fn.create": {"text": "string"}, "->": [{"Ok_": {"id": "integer"}}]},
    {"fn.read": {"id": "integer"}, "->": [{"Ok_": {"text!": "string"}}]},
    {"fn.mine": {}, "->": [{"Ok_": {"texts": ["string"]}}]},
    {"fn.setStatus": {"status": "string"}, "->": [{"Ok_": {}}]},
    {"fn.myStatus": {}, "->": [{"Ok_": {"status!": "string"}}]},
    {"fn.everyone": {}, "->": [{"Ok_": {"users": [{"string": "string"}]}}]},
]


def notes(open_read=False):
    """Notes under ids the server makes, each its writer's: fn.read of another's id answers nothing (or, with
    `open_read`, the note: the bug); fn.mine lists one's own. A status is public: fn.myStatus says one's
    own, and fn.everyone, a directory, every user's."""
    sessions, written, statuses = {}, {}, {}

    def login(arguments, headers):
        sessions[token := f"t-{len(sessions)}"] = arguments["name"]
        return {"Ok_": {"token": token}}

    def who(headers):
        return sessions.get(headers["@auth_"]["Session"]["token"])

    def create(arguments, headers):
        written[len(written) + 1] = (who(headers), arguments["text"])
        return {"Ok_": {"id": len(written)}}

    def read(arguments, headers):
        owner, text = written.get(arguments["id"], (None, None))
        return {"Ok_": {"text!": text} if owner is not None and (open_read or owner == who(headers)) else {}}

    def guarded(handler):
        return lambda arguments, headers: REFUSED if who(headers) is None else handler(arguments, headers)
    return Service(load(NOTES), {
        "fn.login": login, "fn.create": guarded(create), "fn.read": guarded(read),
        "fn.mine": guarded(lambda a, h: {"Ok_": {"texts": [t for o, t in written.values() if o == who(h)]}}),
        "fn.setStatus": guarded(lambda a, h: statuses.update({who(h): a["status"]}) or {"Ok_": {}}),
        "fn.myStatus": guarded(lambda a, h: {"Ok_": {"status!": statuses[who(h)]} if who(h) in statuses else {}}),
        "fn.everyone": guarded(lambda a, h: {"Ok_": {"users": [{"name": name, "status": status}
                                                                for name, status in statuses.items()][-5:]}})})


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_a_note_read_by_its_id_as_another_user_is_found_and_a_public_directory_is_not(seed, tmp_path):
    """A note read by the id its creation answered (an IDOR): the id is captured from fn.create's answer and
    sent as the other user; fn.mine keeps each user's notes to them, so fn.read's leak is one. fn.everyone
    lists every user's status, as fn.myStatus says one's own: a listing beside a listing, which a public
    directory may be, is blamed for nothing."""
    fixtures = tmp_path / "fuzz.json"
    with serving(notes(open_read=True)) as server:
        status, text = fuzzed(server, "--seed", seed, "--fixtures", str(fixtures))
        failing = {line.split()[1] for line in text.splitlines() if line.startswith("FAIL ")}
        assert status == 1 and failing == {"fuzz/fn.read/owner"}, text
        assert "though fn.mine kept it from them" in text and "it fails again" in text, text
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 1
    with serving(notes()) as server, contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["run", "--target", server.url, "--cases", str(fixtures)]) == 0, out.getvalue()
        status, text = fuzzed(server, "--seed", seed)
    assert status == 0 and "FAIL" not in text, text
    assert "  fn.everyone: passed (" in text, text  # (its statuses come back to all: shared, not blamed)


LEDGER = [
    {"info.Ledger": {}},
    {"union.Auth_": [{"Session": {"token": "string"}}]},
    {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}], "$authenticated": False},
    {"fn.append": {"entry": "string"}, "->": [{"Ok_": {}}]},
    {"fn.logout": {}, "->": [{"Ok_": {}}]},
    {"fn.read": {}, "->": [{"Ok_": {"entries": ["string"]}}]},
]


def ledger(bug=False, ends=True):
    """(Each user's entries, appended and read whole, or with `bug` read as their lengths, and sessions a
    logout ends unless not `ends`; the number of entries each reading held.)"""
    sessions, entries, read, made = {}, {}, [], itertools.count()

    def login(arguments, headers):
        sessions[token := f"t-{next(made)}"] = arguments["name"]
        return {"Ok_": {"token": token}}

    def logout(arguments, token):
        del sessions[token]
        return {"Ok_": {}}

    def reading(arguments, who):
        mine = entries.get(who, [])
        read.append(len(mine))
        return {"Ok_": {"entries": [len(entry) for entry in mine] if bug else mine}}

    def guarded(handler):
        def answer(arguments, headers):
            token = headers["@auth_"]["Session"]["token"]
            return REFUSED if token not in sessions else handler(arguments, token)
        return answer
    handlers = {"fn.login": login, "fn.read": guarded(lambda a, token: reading(a, sessions[token])),
                "fn.append": guarded(lambda a, token: entries.setdefault(sessions[token], []).append(a["entry"])
                                     or {"Ok_": {}}),
                **({"fn.logout": guarded(logout)} if ends else {})}
    return Service(load([entry for entry in LEDGER if ends or "fn.logout" not in entry]), handlers), read


@pytest.mark.parametrize("seed", ["1", "2", "3"])
def test_a_reader_holds_what_its_scene_wrote_not_the_whole_run(seed):
    """Each function's calls, and each sequence, are a fresh user's (access.scene): fn.read's answers hold
    what a few calls wrote, at most a sequence's (four calls of each function), not the 80 and more of a
    run that kept one user (which a logout, ending it, would hide); fn.read, fuzzed after fn.append,
    reads what fn.append's latest calls wrote from its first call on (and not after fn.logout's latest,
    which would end the scene's session), so the bug of a reading with entries is found in its own calls."""
    service, read = ledger(ends=False)
    with serving(service) as server:
        status, text = fuzzed(server, "--seed", seed, "--max-examples", "60")
    assert status == 0 and 0 < max(read) <= 4 * 3, (read, text)
    service, read = ledger(bug=True)
    with serving(service) as server:
        status, text = fuzzed(server, "--seed", seed)
    assert status == 1 and "  fn.read: 1 failing (handler)" in text, text  # (a server checks its answers)


def test_a_login_that_takes_no_new_user_is_not_tried_for_each_scene():
    """A login of accounts made elsewhere refuses every name the run makes: a scene that could not have a
    user of its own is the last to try (three tries each, for every function and sequence, before)."""
    schema = [*LEDGER[:2], {"fn.login": {"name": "string"}, "->": [{"Ok_": {"token": "string"}}, {"ErrorNoSuchUser": {}}],
                            "$authenticated": False}, *LEDGER[3:]]
    tried = []
    handlers = {"fn.login": lambda a, h: tried.append(a["name"]) or {"ErrorNoSuchUser": {}},
                **{name: lambda a, h: REFUSED for name in ("fn.append", "fn.logout", "fn.read")}}
    with serving(Service(load(schema), handlers)) as server:
        status, text = fuzzed(server, "--seed", "1")
    assert status == 0 and "  fn.read: passed (" in text, text
    unique = [name for name in tried if name.startswith("fuzz-")]  # (the run's own: a fresh user's, not an example)
    assert len(unique) <= 3 * 4, tried  # (the owner check's two users, the auth check's one, one scene)
