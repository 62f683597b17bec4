"""A finding's reproduction: a case of the fixture language that fails while the bug is there and passes
once it is fixed, confirmed by running it before it is shown or written.

How this works
--------------
`case_of(fuzzer, finding, earlier)` writes a finding's call as a case. Its
last steps state the property the answer broke (properties.py); the earlier
calls it replays come first, made again as a client would make them: the
call whose answer gave the credentials logs in as the case's own user
("$user", a new one each time the case runs), and a value an earlier answer
made (an id, a token, a call an answer held) is captured from that answer
and sent as captured (`$capture`, `$var`), never as the value this run
happened to be given.

`made(fuzzer, finding)` confirms it with the suite's own runner
(runs/server_suite.py), on a fresh application where the target has a
factory (targets/inprocess.py), else on the target: first alone; if it
passes alone, after the calls made before it with the same credentials
(the latest HISTORY of them), where a fresh state can be had (a fresh
application, or the case's fresh user), and then with as few of them as
still make it fail (`fewest`): whatever made the state is in it, and
nothing else. Its property must also hold of the answer a fixed service
gives, the broken place mended, and of valid answers made anew
(properties.py), or it states more than the schema does. What cannot be
confirmed says why, and is written nowhere.
"""

import json
from typing import NamedTuple

from ..language.suite import Case, level_of
from ..reports.results import plural
from ..runs import server_suite
from . import mending, properties, values
from .verdicts import CHECKS, MESSAGEPACK

HISTORY = 30  # earlier calls a reproduction may start from: the latest, made with the same credentials
REPLAYS = 40  # runs of candidate cases one finding may spend on its fewest earlier calls


class Reproduction(NamedTuple):
    """How a finding was reproduced: the case confirmed (None if none was), the run of it that failed
    as the finding did (with its curl lines and answer), and, in words, how it was confirmed or why not."""

    case: Case | None
    result: object
    said: str


def made(fuzzer, finding):
    """The finding, with its Reproduction."""
    if finding.check == "time":
        return finding._replace(reproduction=Reproduction(None, None, "not confirmed: no case states how long an "
                                                          "answer may take (its call, sent again, is below)"))
    if finding.check in MESSAGEPACK and not properties.binary_steps(fuzzer.schema, finding):
        return finding._replace(reproduction=Reproduction(None, None, "not confirmed: the two answers differ only in "
                                                          "bytes, which no case can compare across the wires"))
    return finding._replace(reproduction=_confirmed(fuzzer, finding))


def _confirmed(fuzzer, finding):
    wrong = mending.overstated(fuzzer.schema, finding)
    if wrong:
        return Reproduction(None, None, f"not confirmed: {wrong}")
    fresh = _fresh_state(fuzzer) or ("a fresh user" if _logs_in(fuzzer, finding) else "")
    since = history(fuzzer, finding, since_passed=True)
    if not fresh and since:  # (it passed before: what came since may be what it needs, and cannot be undone)
        case = case_of(fuzzer, finding, since)
        result = replayed(fuzzer, case)
        if fails_last(result, case):
            return Reproduction(case, result, f"replayed on the target as it was left (no fresh state can be had), "
                                              f"after the {plural(len(since), 'call')} made since it last passed, it "
                                              f"fails again; which of them it needs cannot be told without a fresh state")
        return Reproduction(None, result, f"not confirmed: replayed after the {plural(len(since), 'call')} made since "
                                          f"it last passed, it passed")
    alone = case_of(fuzzer, finding, [])
    result = replayed(fuzzer, alone)
    if fails_last(result, alone):
        return Reproduction(alone, result, f"replayed alone on {fresh or 'the target as it was left'}, it fails again"
                            + ("" if fresh else ", and it failed from its first call: no earlier call is known to "
                                             "be needed"))
    earlier = history(fuzzer, finding)
    if not fresh or not earlier:
        return Reproduction(None, result, "not confirmed: replayed alone, it passed, and " + (
            "no fresh state can be had to replay what came before it on" if earlier else "no call came before it"))
    whole = case_of(fuzzer, finding, earlier)
    result = replayed(fuzzer, whole)
    if not fails_last(result, whole):
        return Reproduction(None, result, f"not confirmed: replayed on {fresh} after the "
                                          f"{plural(len(earlier), 'call')} made before it, it passed")
    kept, result, each = fewest(fuzzer, finding, earlier, result)
    names = ", ".join(sorted({name for _, name, _, _ in kept}))
    return Reproduction(case_of(fuzzer, finding, kept), result, f"replayed on {fresh}, it fails after "
                        f"{plural(len(kept), 'earlier call')} ({names}), " + (
                            "each needed: without any one of them it passes" if each else
                            f"fewer not tried (the {REPLAYS} replays were spent)"))


def fewest(fuzzer, finding, earlier, result):
    """As few of the `earlier` calls as still make the finding's case fail, within REPLAYS runs of cases;
    (those calls, the failing run, whether each left was tried without). First the calls that made the
    values it sends (`makers`), if they are enough; then chunks of the calls left out, halves, quarters,
    down to one call at a time (delta debugging: Zeller's ddmin)."""
    spent, kept = 1, makers([finding.call], earlier)
    tried = replayed(fuzzer, case_of(fuzzer, finding, kept)) if kept != earlier else None
    kept, result = (kept, tried) if fails_last(tried, None) else (list(earlier), result)
    chunks = 2
    while len(kept) > 0 and spent < REPLAYS:
        size = max(1, -(-len(kept) // chunks))  # (ceiling)
        for start in range(0, len(kept), size):
            fewer, spent = kept[:start] + kept[start + size:], spent + 1
            tried = replayed(fuzzer, case_of(fuzzer, finding, fewer))
            if fails_last(tried, None):
                kept, result, chunks = fewer, tried, max(chunks - 1, 2)
                break
            if spent >= REPLAYS:
                return kept, result, False
        else:
            if size == 1:
                return kept, result, True
            chunks = min(len(kept), chunks * 2)
    return kept, result, not kept


def makers(messages, earlier):
    """Of the `earlier` calls (log entries), those whose answers made the values the `messages` send, and
    the values they send in turn, however far back."""
    wanted, found = set().union(*map(_texts, messages)), []
    for entry in reversed(earlier):
        made = {json.dumps(value, sort_keys=True) for _, value in leaves((entry[3] or {}).get("Ok_"))}
        if made & wanted:
            found.insert(0, entry)
            wanted |= _texts(entry[2])
    return found


def history(fuzzer, finding, since_passed=False):
    """The calls logged before the finding's call that were made with its credentials: the latest HISTORY
    of them, and, however long ago, each whose answer made a value the others send (an id it sends was
    given by a call, which must come first); with `since_passed`, only those since a call of its function
    last passed every check (none if none did)."""
    auth = finding.call[0].get("@auth_")
    passes = fuzzer.links.passed.get((finding.function, json.dumps(auth, sort_keys=True)), ())
    first = max((place for place in passes if place < finding.at), default=finding.at) if since_passed else -1
    mine = [entry for entry in fuzzer.links.log if first < entry[0] < finding.at and entry[2][0].get("@auth_") == auth
            and entry[2] != finding.call]
    kept = mine[-HISTORY:]
    older = makers([entry[2] for entry in kept] + [finding.call], mine[:-HISTORY] if len(mine) > HISTORY else [])
    return older + kept


def _texts(message):
    """The values a message sends that a server may have made, as JSON."""
    return {json.dumps(value, sort_keys=True) for _, value in leaves(message) if _notable(value)}


def _fresh_state(fuzzer):
    """Where a case is replayed on a fresh state: "a fresh application" for one a factory makes, else ""."""
    return "a fresh application" if getattr(fuzzer.channel.target, "factory", None) else ""


def _logs_in(fuzzer, finding):
    """Whether the finding's credentials came from an answer still logged: its case logs in a user of its own."""
    auth = finding.call[0].get("@auth_")
    place = fuzzer.links.issued.get(json.dumps(auth, sort_keys=True)) if auth is not None else None
    return place is not None and any(entry[0] == place for entry in fuzzer.links.log)


def replayed(fuzzer, case):
    """The Result of running `case` with the suite's runner, on a fresh application if one can be made."""
    target = fuzzer.channel.target
    run = server_suite.Run(target, fuzzer.settings)
    if getattr(target, "factory", None):
        with target.fresh():
            return run.results([case])[0]
    return run.results([case])[0]


def fails_last(result, case):
    """Whether a run of a case failed at its last step: its earlier steps went as written, and the property
    broke (a case failing sooner shows something else)."""
    if result is None or result.status not in ("fail", "known-failure") or not result.problems:
        return False
    steps = len(case.steps) if case is not None else int(result.problems[0].split(" of ")[1].split(":")[0])
    return result.problems[0].startswith(f"step {steps} of {steps}")


def case_of(fuzzer, finding, earlier):
    """The case of a finding: the `earlier` calls (log entries), after the call that logged its user in,
    if an answer gave its credentials; then the steps that state its property."""
    schema, entries = fuzzer.schema, list(earlier)
    auth = finding.call[0].get("@auth_")
    place = fuzzer.links.issued.get(json.dumps(auth, sort_keys=True)) if auth is not None else None
    issuer = next((entry for entry in fuzzer.links.log if entry[0] == place), None)
    if issuer and issuer not in entries:
        entries.insert(0, issuer)
    last = properties.steps(schema, finding)
    requests = [[{k: v for k, v in entry[2][0].items() if k != "@auth_"}, entry[2][1]] if entry is issuer else entry[2]
                for entry in entries] + [step["request"]["message"] for step in last]  # (a login, as no one yet)
    named = _new(_users(requests, 0 if issuer else None)) if finding.function in fuzzer.creating else \
        _users(requests, 0 if issuer else None)
    made_by = [entry[3] for entry in entries] + [None] * len(last)
    names = [entry[1] for entry in entries] + [finding.function] * len(last)
    sent, captures = _captured(named, made_by, names)
    steps = [{"request": {"message": message}, "response": {"message": [{"$type": "object"}, properties.exactly(
        {path: {"$capture": name} for path, name in captures.get(number, {}).items()}) if number in captures
        else {"$type": "object"}]}} for number, message in enumerate(sent[:len(entries)])]
    steps += [{**step, "request": {"message": message}} for step, message in zip(last, sent[len(entries):])]
    functions = sorted({entry[1] for entry in entries} | {finding.function})
    features = sorted({feature for feature, header in (("binary", "@bin_"), ("select", "@select_"))
                       if any(header in message[0] for message in sent)}
                      | {"http" for step in steps if {"status", "headers"} & step["response"].keys()})  # (media's)
    description, requirements = CHECKS[finding.check]
    return Case(f"fuzz/{finding.function}/{finding.check}", f"{finding.function}: {description}.", tuple(requirements),
                level_of(requirements), "fuzz", tuple(functions), tuple(features), steps=steps)


def written(fuzzer, finding, steps, last):
    """The case of a finding made of `steps` ([call, answer body], each login's answer giving credentials),
    the last step's answer stated by `last`: each user logs in as one of the case's own ("$user",
    "$user-b", ...), and what an answer made is captured from it."""
    requests, bodies = [call for call, _ in steps], [body for _, body in steps]
    logins = [number for number, (_, body) in enumerate(steps) if fuzzer.links.given((body or {}).get("Ok_"))]
    for number, login in enumerate(logins):
        requests = _users(requests, login, "$user" + (f"-{chr(97 + number)}" if number else ""))
    names = [next(iter(call[1])) for call in requests]
    sent, captures = _captured(requests, bodies, names, notable=lambda value: value not in (None, "", [], {}))
    # (every value an answer made and a later call sends is captured: an id 1 as much as a token)
    made = [{"request": {"message": message}, "response": {"message": [{"$type": "object"}, properties.exactly(
        {path: {"$capture": name} for path, name in captures[number].items()}) if number in captures
        else {"$type": "object"}]}} for number, message in enumerate(sent)]
    made[-1]["response"] = {"message": last}
    description, requirements = CHECKS[finding.check]
    return Case(f"fuzz/{finding.function}/{finding.check}", f"{finding.function}: {description}.", tuple(requirements),
                level_of(requirements), "fuzz", tuple(sorted(set(names))), steps=made)


def _new(requests):
    """The requests with each text the run made new (values.unique) new each time the case runs: "$user-new-1"
    and on (for a function that makes something of each call, and refuses the same call again)."""
    made = {}

    def swap(value):
        if type(value) is str and value.startswith(f"fuzz-{values.RUN}-"):
            return made.setdefault(value, f"$user-new-{len(made) + 1}")
        if type(value) is dict:
            return {key: swap(element) for key, element in value.items()}
        return [swap(element) for element in value] if type(value) is list else value
    return [swap(request) for request in requests]


def _users(requests, login, user="$user"):
    """The requests with each text the login call (the `login`th) sent, a name, a password, as the case's
    own `user`'s: in the login itself every text, "" too, so that the user is new each time the case runs."""
    if login is None:
        return requests
    texts = [value for _, value in leaves(next(iter(requests[login][1].values()))) if type(value) is str]
    names = {text: user + (f"-{number}" if number else "") for number, text in enumerate(dict.fromkeys(texts))}
    met = {text: name for text, name in names.items() if text}  # (elsewhere, "" is any empty text)

    def swap(value, names):
        if type(value) is str:
            return names.get(value, value)
        if type(value) is dict:
            return {key: swap(element, names) for key, element in value.items()}
        return [swap(element, names) for element in value] if type(value) is list else value
    return [swap(request, names if number == login else met) for number, request in enumerate(requests)]


def _captured(requests, answers, functions, notable=None):
    """The requests with each value an earlier answer's Ok_ made, and no earlier request sent, as `{"$var":
    name}`; and, by the number of the step whose answer made it, where to capture each: {step: {path: name}}.
    What counts as made is `notable` (by default, a value a server makes rather than meets by chance)."""
    sent, made = set(), {}  # values sent so far, as JSON; a value an answer made -> (its step, its path): the latest
    captures, written, notable = {}, [], notable or _notable
    for number, request in enumerate(requests):
        written.append(_with_vars(request, made, captures, functions, notable))
        sent |= {json.dumps(value, sort_keys=True) for _, value in leaves(request)}
        for path, value in leaves((answers[number] or {}).get("Ok_"), ("Ok_",)):
            text = json.dumps(value, sort_keys=True)
            if notable(value) and text not in sent:
                made[text] = (number, path)
    return written, captures


def _with_vars(value, made, captures, functions, notable=None):
    """`value`, each part of it an earlier answer made written as the variable it is captured in (an object
    whole only if it is a call: else what it holds, one by one)."""
    text = json.dumps(value, sort_keys=True)
    whole = type(value) is not dict or any(type(key) is str and key.startswith("fn.") for key in value)
    if whole and (notable or _notable)(value) and text in made:
        number, path = made[text]
        name = f"{functions[number]}.{'.'.join(map(str, path))}@{number + 1}"  # (the step, and where its answer held it)
        captures.setdefault(number, {})[path] = name
        return {"$var": name}
    if isinstance(value, dict):
        return {key: _with_vars(element, made, captures, functions, notable) for key, element in value.items()}
    if isinstance(value, list):
        return [_with_vars(element, made, captures, functions, notable) for element in value]
    return value


def _notable(value):
    """Whether a value is one a server makes rather than meets by chance: text, a whole number past 1, an
    object or array that holds something."""
    if type(value) is str:
        return value != ""
    if type(value) is int:
        return abs(value) > 1
    return type(value) in (dict, list) and bool(value)


def leaves(value, path=()):
    """Every part of `value` with its path: the value itself, and what it holds, at any depth."""
    yield path, value
    if isinstance(value, dict):
        for key, element in value.items():
            yield from leaves(element, (*path, key))
    elif isinstance(value, list):
        for index, element in enumerate(value):
            yield from leaves(element, (*path, index))
