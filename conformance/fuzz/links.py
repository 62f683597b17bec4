"""What one call gives the calls after it, by the links a schema states: credentials, calls an answer
holds, and the log that tells what a failure may depend on.

How this works
--------------
`Links(schema)` reads from the schema the results that hold a token
`union.Auth_` takes (a tag of one text field, as `Session {token}`): a
function whose `Ok_` has that field gives credentials (`gives`), and once it
answers, they become the `@auth_` of every later call (`learn`, `headers`).
`learn` also returns the calls an answer holds, the values of its `fn.X`
fields, for the fuzzer to send as a client would. A field of the same name
and type in two functions (an argument of both, or a result of one and an
argument of the other: `name` saved by one, read by the other) is `shared`:
the values an accepted call sent in it, or an `Ok_` gave in it, are `kept`,
and `carry` puts them back into later calls now and then, so that a call
reads what an earlier one wrote. `logged` keeps the latest calls, each
with its place in the run and the Ok_ it was answered (if small), and
`issued` which call gave each set of credentials: what a reproduction
replays (reproduction.py) to find the calls a failure needs; `accepted` the
latest calls of each function answered Ok_, which a scene begins with
(access.py).
"""

import json
import re
from collections import defaultdict, deque

LOG = 1000  # calls remembered, the latest, with their answers
KEPT, LARGEST = 20, 4096  # values kept of each shared field, the latest; the longest one kept, as JSON
# (and the largest answer the log keeps, in bytes as it came)
RECENT, PRIMED = 2, 20  # calls a scene begins with: the latest accepted of each function, and at most in all
ENDS = re.compile(r"log_?out|sign_?out|log_?off|revoke|end_?session", re.IGNORECASE)  # functions that end sessions


class Links:
    """The credentials, and the log of valid calls, of one fuzzing run."""

    def __init__(self, schema):
        self.tokens = [(tag, name) for tag, fields in schema.unions.get("union.Auth_", {}).items()
                       for name, type_ in fields.items() if len(fields) == 1 and type_.kind == "string"]
        self.credentials = {}  # the @auth_ an answer gave
        self.log, self.count = deque(maxlen=LOG), 0  # (place, function, call, Ok_ body or None); how many so far
        self.issued = {}  # an @auth_ (as JSON) -> the place of the call whose answer gave it
        self.passed = defaultdict(lambda: deque(maxlen=LOG))  # (function, @auth_ as JSON) -> the places of its
        # calls that passed every check, the latest
        self.schema, self.shared = schema, shared(schema)
        self.kept = defaultdict(lambda: deque(maxlen=KEPT))  # (name, type) -> (function, a value it sent or gave)
        self.recent = defaultdict(lambda: deque(maxlen=RECENT))  # function -> (place, body) of its latest calls
        # answered Ok_

    def gives(self, function):
        """Whether a result of `function` holds credentials (so that it is called first)."""
        return any(name in function.results["Ok_"] for _, name in self.tokens)

    def keeps_credentials(self, function):
        """Whether a call of `function` leaves the credentials as they are: it neither gives them (a login)
        nor, by its name (ENDS), ends them (a logout)."""
        return not self.gives(function) and not ENDS.search(function.name)

    def said(self, most=6):
        """The links followed, in a line (empty when there are none)."""
        functions = [f for f in self.schema.functions.values() if not f.internal]
        givers = [f.name for f in functions if self.gives(f)]
        holders = [f.name for f in functions if any(t.kind == "fn" for t in f.results["Ok_"].values())]
        fields = [f"{name} ({', '.join(writers)})" for (name, _), writers in self.shared.items()]
        parts = [f"credentials from {', '.join(givers)}" * bool(givers),
                 f"calls held in answers of {', '.join(holders)}" * bool(holders),
                 (f"values carried: {', '.join(fields[:most])}" + f" and {len(fields) - most} more" * (len(fields) > most))
                 * bool(fields)]
        return "; ".join(part for part in parts if part)

    def headers(self, given):
        """The headers of a call: those `given` (-H), and the credentials an answer gave, unless given."""
        return {**self.credentials, **given}

    def given(self, fields):
        """The credentials an Ok_'s `fields` hold, as the @auth_ header that carries them ({} if none)."""
        credentials = {}
        for tag, name in self.tokens if type(fields) is dict else ():
            if type(fields.get(name)) is str:
                credentials = {"@auth_": {tag: {name: fields[name]}}}
        return credentials

    def learn(self, function, fields):
        """Keep the credentials an Ok_ of `function` (its `fields`) holds; return the calls it holds, as
        (the field's name, the function called, the call's body)."""
        self.credentials = self.given(fields) or self.credentials
        return [(name, type_.of, fields[name]) for name, type_ in function.results["Ok_"].items()
                if type_.kind == "fn" and type(fields.get(name)) is dict and list(fields[name]) == [type_.of]]

    def logged(self, function, call, body, size):
        """Log a call, and its answer's `body` if it is an Ok_ that came in at most LARGEST bytes (`size`: a
        large answer is not written out again to be measured), and who it gave credentials to; return its
        place in the run."""
        place, self.count = self.count, self.count + 1
        ok = type(body) is dict and "Ok_" in body and size <= LARGEST
        self.log.append((place, function.name, call, body if ok else None))
        given = self.given(body["Ok_"]) if ok else {}
        if given:
            self.issued[json.dumps(given["@auth_"], sort_keys=True)] = place
        return place

    def passing(self, function, call, place):
        """Note that the call of `function` at `place` passed every check (a failure after it came after)."""
        self.passed[(function.name, json.dumps(call[0].get("@auth_"), sort_keys=True))].append(place)

    def begin(self, credentials):
        """Begin a scene (access.py) as the user of `credentials`: the values kept were another user's."""
        self.credentials = credentials
        self.kept.clear()

    def accepted(self, function, body, place):
        """Note that the call of `function` at `place`, of `body`, was answered Ok_: one a scene may begin with,
        unless it logs in or out (begun with, a login would waste a session, a logout end the scene's)."""
        if self.keeps_credentials(function):
            self.recent[function.name].append((place, body))

    def latest(self, most):
        """The bodies of the latest calls answered Ok_, RECENT of each function and `most` (at most PRIMED) in
        all, in the order they were made."""
        calls = sorted((entry for entries in self.recent.values() for entry in entries), key=lambda entry: entry[0])
        most = min(most, PRIMED)
        return [body for _, body in calls][-most:] if most else []

    def keep(self, function, arguments, fields):
        """Keep the values of shared fields that an accepted call of `function` sent, and its Ok_ gave."""
        for values, declared in ((arguments, function.arguments), (fields, function.results["Ok_"])):
            for name, type_ in declared.items():
                key = (name.rstrip("!"), type_)
                if key in self.shared and values.get(name) is not None and len(json.dumps(values[name])) <= LARGEST:
                    self.kept[key].append((function.name, values[name]))

    def carry(self, function, arguments, rng):
        """`arguments`, with the shared fields given, by a coin each, a value another function's call or
        answer held, where that value is one of the field's type here."""
        carried = dict(arguments)
        for name, type_ in function.arguments.items():
            kept = [value for writer, value in self.kept.get((name.rstrip("!"), type_), ()) if writer != function.name]
            if kept and rng.random() < 0.5:
                value = rng.choice(kept)
                if self.schema.holds(value, type_):
                    carried[name] = value
        return carried


def shared(schema):
    """{(field name without !, type): the functions that write it} for each field one function reads
    (an argument) and another writes (an argument, or a field of its Ok_)."""
    readers, writers = defaultdict(set), defaultdict(set)
    for function in schema.functions.values():
        if function.internal:
            continue
        for name, type_ in function.arguments.items():
            readers[(name.rstrip("!"), type_)].add(function.name)
            writers[(name.rstrip("!"), type_)].add(function.name)
        for name, type_ in function.results["Ok_"].items():
            writers[(name.rstrip("!"), type_)].add(function.name)
    return {key: sorted(writers[key]) for key in readers if len(writers[key]) > 1}
