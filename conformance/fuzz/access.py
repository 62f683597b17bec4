"""Who may call, and whose data comes back: the fuzzer's checks of credentials (`auth`) and of ownership
(`owner`), made once the functions were fuzzed alone.

How this works
--------------
`auth`: each function the schema protects (union.Auth_ is defined, and it
is not marked `"$authenticated": false`) is called with a valid call three
ways: without `@auth_`, with credentials of the tag a login gives but never
issued, and with the credentials of a fresh user whom a function that ends
sessions (by its name: logout, sign out, revoke) then logged out. An `Ok_`
to any of them is a finding.

`owner`: two fresh users log in, A and B. Each function that takes text
writes, as A, texts no earlier call used (markers); each function that
reads it is called as A, then as B: a lookup (taking a field of the same
name and type as the writer's arguments or its answer's, given that value:
a name A sent, an id the answer made) or a listing (nothing required). A
marker that comes back to A and not to B (and to A again) shows that the
service keeps that data from other users, by lookup or by listing; a marker
that then comes back to B through the other kind (a lookup open to all
beside a listing of one's own, or the other way) is a finding. Where B sees
it through the same kind ("me" beside a public directory), or every kind,
the data may be shared by design, and nothing is blamed. A mock is left
out: its answers are its stubs'.

Each finding's case replays its calls for users of its own ("$user"), the
credentials captured as a login answers them.

The run's own data is kept in scenes (`scene`): each function's calls, and
each sequence of all of them interleaved, are a fresh user's, where a
function gives credentials (none given with -H, and no mock). A function
fuzzed alone is first sent, as that user, the latest calls of each function
before it that were answered Ok_ (links.py): what it reads holds what they
wrote, and the values carried into its calls are theirs (those of earlier
scenes, another user's, are dropped). A reader's answers then hold what a
few calls wrote, not all the run's, and no call gets dearer as the run goes
on. Once a login takes none of the users the run makes (accounts made
elsewhere), no later scene tries again.
"""

import json
import time

from . import answers, reproduction, values
from .answers import Call
from .links import ENDS
from .properties import none_of
from .verdicts import Finding

WRITERS, READERS = 50, 50  # functions whose data the owner check follows, and readers of each
MOCKED = "a mock judges no credentials and keeps no data of its own: its stubs answer"


def fresh_user(fuzzer):
    """A new user's login, from a function that gives credentials (three tries): (its credentials, the
    login call, its answer's body), or None. Its texts are new to the run, so the user holds no state yet."""
    givers = _givers(fuzzer)
    for _ in range(3 if givers else 0):
        function = fuzzer.rng.choice(givers)
        arguments = values.unique(values.Maker(fuzzer.schema, fuzzer.rng).fields(function.arguments, 0), fuzzer.rng)
        call = [dict(fuzzer.settings.headers), {function.name: arguments}]
        _, body = _checked(fuzzer, Call(function, call, nested=True))
        given = fuzzer.links.given(body.get("Ok_") if body else None)
        if given:
            return given, call, body
    return None


def scene(fuzzer, prime):
    """Begin a scene (see above): the calls after it are a fresh user's, first sent the latest `prime` calls
    answered Ok_ (links.py); nothing where the run has no user of its own to begin with."""
    if "@auth_" in fuzzer.settings.headers or "fn.createStub_" in fuzzer.schema.functions or not fuzzer.scenes \
            or fuzzer.late():
        return
    user = fresh_user(fuzzer)
    if not user:
        fuzzer.scenes = False  # (a login that takes no new user's arguments: no scene will have one)
        return
    fuzzer.links.begin(user[0])
    for body in fuzzer.links.latest(prime):
        if fuzzer.late():
            return
        _checked(fuzzer, Call(fuzzer.schema.functions[next(iter(body))], [fuzzer.headers(), body], nested=True))


def credentials(fuzzer, function):
    """Yield a Finding if `function`, protected, answers Ok_ without valid credentials (see above)."""
    if "fn.createStub_" in fuzzer.schema.functions:
        fuzzer.missed[(function.name, "auth")] = MOCKED
        return
    if fuzzer.late():
        return
    if not (fuzzer.schema.protected and function.authenticated):
        fuzzer.missed[(function.name, "auth")] = ("the schema does not protect it" if fuzzer.schema.protected else
                                                  "the schema defines no union.Auth_: no function is protected")
        return
    if fuzzer.ways is None:
        fuzzer.ways = ways(fuzzer)
    for way, sent, before in fuzzer.ways:
        arguments = values.Maker(fuzzer.schema, fuzzer.rng).fields(function.arguments, 0)
        call = [sent, {function.name: arguments}]
        started = time.monotonic()
        found, body = _checked(fuzzer, Call(function, call, nested=True))
        if found or body is None:
            continue
        fuzzer.judged(function, ["auth"], started)
        if "Ok_" in body:
            problem = f"called {way}, it answered Ok_: a protected function refuses it (ErrorUnauthenticated_)"
            finding = Finding("auth", function.name, call, False, problem, answers.shown(body, b""), "Ok_",
                              message=[{}, body])
            yield confirmed(fuzzer, finding, [*before, (call, None)], last=[{"$type": "object"}, none_of(["Ok_"])])
            return


def ways(fuzzer):
    """The ways a protected function is called without valid credentials: (in words, the headers, the
    [call, answer body] to make first): without any; with a token of the tag a login gives, never issued;
    with those of a user logged out."""
    headers = {k: v for k, v in fuzzer.settings.headers.items() if k != "@auth_"}
    made = [("without credentials", headers, [])]
    givers = _givers(fuzzer)
    if givers:  # (a token a login gives: one it did not give is forged)
        tag, name = next(token for token in fuzzer.links.tokens if any(token[1] in f.results["Ok_"] for f in givers))
        forged = {tag: {name: f"fuzz-never-issued-{fuzzer.rng.getrandbits(48):012x}"}}
        made.append(("with credentials never issued", {**headers, "@auth_": forged}, []))
    ended = logged_out(fuzzer)
    if ended:
        given, login, logout = ended
        made.append((f"with the credentials of a user {next(iter(logout[0][1]))} logged out", {**headers, **given},
                     [login, logout]))
    return made


def logged_out(fuzzer):
    """A fresh user logged in, then out by a function that ends sessions: (their credentials, the login
    [call, body], the logout [call, body]); None if there is no such function, or it did not answer Ok_."""
    enders = [f for f in fuzzer.schema.functions.values() if ENDS.search(f.name) and not f.internal]
    user = fresh_user(fuzzer) if enders else None
    if not user:
        return None
    given, login, answer = user
    sent = next(iter(login[1].values()))
    function = fuzzer.rng.choice(enders)
    arguments = values.Maker(fuzzer.schema, fuzzer.rng).fields(function.arguments, 0)
    arguments.update({name: sent[name] for name in arguments if name in sent})  # (the user's own name, say)
    call = [{**fuzzer.settings.headers, **given}, {function.name: arguments}]
    found, body = _checked(fuzzer, Call(function, call, nested=True))
    return (given, (login, answer), (call, body)) if not found and body and "Ok_" in body else None


def owners(fuzzer, functions):
    """Yield a Finding for each function that returns one user's data to another, where the service keeps
    that data per user (see above): of at most WRITERS functions writing, each read by at most READERS."""
    if "fn.createStub_" in fuzzer.schema.functions:
        fuzzer.missed["owner"] = MOCKED
        return
    if fuzzer.late():
        return
    why = "" if _givers(fuzzer) else "no function gives credentials, so a second user cannot be had"
    users = [] if why else [fresh_user(fuzzer), fresh_user(fuzzer)]
    if not why and not all(users):
        why = "no login gave a fresh user credentials"
    if why:
        fuzzer.missed["owner"] = why
        return
    (a, login_a, answer_a), (b, login_b, answer_b) = users
    plain = [f for f in functions if not f.internal and fuzzer.links.keeps_credentials(f)]
    for writer in plain[:WRITERS]:
        if fuzzer.late():
            return
        arguments = values.unique(values.Maker(fuzzer.schema, fuzzer.rng).fields(writer.arguments, 0), fuzzer.rng)
        wrote = [{**fuzzer.settings.headers, **a}, {writer.name: arguments}]
        found, body = _checked(fuzzer, Call(writer, wrote, nested=True))
        if found or not body or "Ok_" not in body:
            continue
        isolated, leaks = _read_back(fuzzer, writer, wrote, body, _readers(plain, writer)[:READERS], b)
        for reader, keyed, as_b, (path, marker, shown), started in leaks:
            kept = isolated.get(not keyed)  # (a listing of one's own beside a lookup open to all, or the other way)
            if not kept:
                fuzzer.missed.setdefault((reader.name, "owner"), f"what {writer.name} wrote as one user it returned "
                                         f"to another, and no {'listing' if keyed else 'lookup'} kept it from them: "
                                         f"shared, not per user")
                continue
            fuzzer.judged(reader, ["owner"], started)
            problem = (f"{writer.name} wrote {json.dumps(marker)} as one user; {reader.name} returned it at "
                       f"{'.'.join(map(str, path))} to another user (a fresh login), though {kept.name} kept it "
                       f"from them: the service keeps it per user")
            finding = Finding("owner", reader.name, as_b, False, problem, answers.shown(shown, b""), next(iter(shown)),
                              ((path, "another user's data"),), message=[{}, shown])
            steps = [(login_a, answer_a), (wrote, body), (login_b, answer_b), (as_b, None)]
            yield confirmed(fuzzer, finding, steps, last=[{"$type": "object"}, {"$not": _holding(path, marker)}])
        for reader in isolated.values() if not leaks else ():
            fuzzer.judged(reader, ["owner"], time.monotonic())


def _read_back(fuzzer, writer, wrote, body, readers, b):
    """Call each of `readers` as the user who `wrote` (answered `body`), then as the user `b` (credentials),
    then as the first again: ({whether a lookup: the first reader of that kind that kept what was written
    from `b`}, [(a reader, whether a lookup, the call as `b`, where `b` was shown it, when)])."""
    arguments, made = wrote[1][writer.name], body["Ok_"] if type(body["Ok_"]) is dict else {}
    markers = {text for text in _texts(arguments) if text.startswith("fuzz-")}
    isolated, leaks = {}, []
    for reader in readers if markers else ():
        given = {name: sent[name] for name, type_ in reader.arguments.items()
                 for sent, declared in ((made, writer.results["Ok_"]), (arguments, writer.arguments))
                 if declared.get(name) == type_ and sent.get(name) is not None}  # (an id it made, a name sent)
        read = {**values.Maker(fuzzer.schema, fuzzer.rng).fields(reader.arguments, 0), **given}
        mine = markers - set(_texts(read))
        if not mine or fuzzer.late():
            continue
        as_a, as_b = [wrote[0], {reader.name: read}], [{**fuzzer.settings.headers, **b}, {reader.name: read}]
        seen_a = _shows(fuzzer, reader, as_a, mine)
        started = time.monotonic()
        seen_b = _shows(fuzzer, reader, as_b, mine)
        if seen_b is None:
            continue
        keyed = bool(given)  # (a lookup of what A wrote, by its key; else a listing)
        if seen_b:
            leaks.append((reader, keyed, as_b, seen_b, started))
        elif seen_a and keyed not in isolated and _shows(fuzzer, reader, as_a, mine):
            isolated[keyed] = reader
        else:
            fuzzer.judged(reader, ["owner"], started)
    return isolated, leaks


def _checked(fuzzer, call):
    """(A Finding of a check the answer fails, or None; its body): a call past the run's time budget is still
    an answer of what it holds (the time check says it was slow)."""
    found, body = fuzzer.check(call)
    return (None if found and found.check == "time" else found), body


def _givers(fuzzer):
    """The functions whose answers give credentials (logins)."""
    return [f for f in fuzzer.schema.functions.values() if fuzzer.links.gives(f) and not f.internal]


def _readers(functions, writer):
    """The functions that may read what `writer` wrote: those taking one of its arguments or of its Ok_'s
    fields (name and type: a key), and those that require nothing (listings)."""
    fields = {**writer.results["Ok_"], **writer.arguments}
    return [f for f in functions if f is not writer and (
        any(fields.get(name) == type_ for name, type_ in f.arguments.items())
        or all(name.endswith("!") for name in f.arguments))]


def _shows(fuzzer, reader, call, markers):
    """Where the answer to `call` holds one of `markers`: (its path in the body, the marker, the body); ()
    if nowhere; None if the call failed a check or was refused."""
    found, body = _checked(fuzzer, Call(reader, call, nested=True))
    if found or not body or "Ok_" not in body:
        return None if found or not body else ()
    return next(((path, value, body) for path, value in reproduction.leaves(body)
                 if type(value) is str and value in markers), ())


def _holding(path, marker):
    """A matcher of a body that holds `marker` at `path`, whichever element of an array holds it."""
    matcher = marker
    for key in reversed(path):
        matcher = {"$includes": [matcher]} if type(key) is int else {"$partial": {key: matcher}}
    return matcher


def confirmed(fuzzer, finding, steps, last):
    """The finding, with the case of its `steps` ([call, answer body]) for users of its own, the last
    answer stated by `last`, replayed: confirmed if it fails again."""
    case = reproduction.written(fuzzer, finding, steps, last)
    result = reproduction.replayed(fuzzer, case)
    again = reproduction.fails_last(result, case)
    said = ("replayed as a case, for users of its own, it fails again" if again else
            "not confirmed: replayed as a case, for users of its own, it passed")
    fuzzer.seen[finding.kind] += 1
    return finding._replace(again=(int(again), 1), reproduction=reproduction.Reproduction(
        case if again else None, result, said))


def _texts(value):
    return [leaf for _, leaf in reproduction.leaves(value) if type(leaf) is str]
