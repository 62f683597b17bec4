"""`python -m conformance fuzz`: any server checked against its own schema, with calls made from it.

How this works
--------------
The target's schema is read from `fn.api_` (language/schema.py). For each function,
`Fuzzer.examples` makes calls by seed (values.py), with the headers the
schema declares: a valid call, checked as the named CHECKS say (answers.py);
the same call on MessagePack now and then (packed by a coin), once the
target has negotiated it, judged alone and against the JSON answer
(wires.py); the call with a generated `@select_`; and the call with exactly
one thing wrong, which must be refused with a case at that place
(rejections.py). Who may call and whose data comes back are judged with
credentials of their own (access.py); the slowest calls are kept, and one
past a --response-time budget fails. Each check counts the answers it
judged (`evidence`) and keeps why it judged none (`missed`). A failing call becomes a `Finding`: the check, the function, the
call, what is wrong, the answer. The first of each kind is shrunk while it
fails the same way and sent again, to tell a steady failure from a flaky one
(shrinking.py); verdicts.py makes the verdicts. Calls follow the schema's
links (links.py): credentials an answer gives go with later calls, a call an
answer holds is sent too, values one function wrote go into another's, and
`sequences` interleaves the functions' calls once each was fuzzed alone; each
function's calls, and each sequence, are a scene: a fresh user's (access.py).
Requests keep to a rate and a time limit, on one kept-alive connection (or
one a worker, workers.py), through a Channel (channel.py), which also
negotiates the MessagePack encoding; a target that stops answering ends the
run, said once.
"""

import json
import random
import time
from collections import Counter

from ..language.schema import Schema
from ..reports.results import plural
from ..targets.remote import Trouble
from . import access, answers, rejections, reproduction, selections, shrinking, values, wires
from .answers import Call
from .links import Links
from .properties import HANDLER_BUGS, REFUSALS
from .verdicts import MESSAGEPACK, WIRES, Finding, chosen, function_line, verdicts, where
from .workers import shared_out

UNREACHED = "the time limit ended the run before its calls"  # why a function never called was not
SEQUENCE = 4  # calls of each function, about, in one sequence: what a reader's answers hold stays that small


class Fuzzer:
    """Calls of the target's functions, made and checked (see above); what each check was given to judge
    is counted in `evidence`, and why a check judged nothing is kept in `missed`."""

    def __init__(self, channel, rng, settings, like=None, begun=None):
        """Read the schema of the `channel`'s target and negotiate its binary encoding (unless the run's
        Settings say not to); or, `like` another Fuzzer of the same target (a worker of --workers), take
        them, and the deadline, from it. The time limit counts from `begun` (the run's start: reading a
        schema of 100,000 functions is part of the run), else from now."""
        self.channel, self.rng, self.settings = channel, rng, settings
        self.deadline = like.deadline if like else (begun or time.monotonic()) + settings.time_limit
        self.tags = {}  # function -> the result tags its calls were answered with
        self.evidence, self.seconds, self.seen = Counter(), Counter(), Counter()  # by (function, check); by kind
        self.missed = {}  # (function, check), function, or check -> why it judged nothing
        self.varying = set()  # functions that answer the same call differently (the binary check cannot tell)
        self.chosen = chosen(settings)  # the checks judged, in the order they are reported
        self.slowest = {}  # function -> its slowest calls, (seconds, call, on MessagePack), the slowest first
        self.creating = set()  # functions that refuse the same call made again (wires.py)
        self.bytes_held = {}  # function -> whether its results may hold bytes
        self.followed = []  # Findings of calls answers held
        self.ways = None  # how a protected function is called without valid credentials, once made (access.py)
        self.scenes = True  # whether a scene's fresh user can be had (access.py): not once a login failed
        if like:
            self.schema, self.links = like.schema, Links(like.schema)
            self.links.credentials, self.missed = dict(like.links.credentials), dict(like.missed)
            self.scenes = like.scenes
            return
        api = self.channel.send([{}, {"fn.api_": {"includeInternal!": True}}])[1]
        entries = api and api[1].get("Ok_", {}).get("api")
        if not isinstance(entries, list):
            raise Trouble(f"{channel.target.url} did not answer fn.api_ with its schema: {str(api)[:200]}")
        try:
            self.schema = self.channel.schema = Schema(entries)
        except ValueError as error:
            raise Trouble(f"{channel.target.url} answered fn.api_ with a schema the suite cannot read: {error}") from None
        self.links = Links(self.schema)
        if not (settings.binary and self.channel.negotiate()):
            self.missed["binary"] = self.missed["packed"] = (
                "the target negotiated no binary encoding" if settings.binary else "--no-binary was given")

    def twin(self, number):
        """Another fuzzer of the same target, its `number`th worker (workers.py): a connection, a generator
        and counts of its own."""
        return Fuzzer(self.channel.another(), random.Random(f"{self.rng.random()}/{number}"), self.settings, like=self)

    def functions(self):
        """The functions to call: those the Settings name, else every public one; but those they skip."""
        names = self.settings.functions
        chosen = [self.schema.functions[name] for name in names] if names else [
            f for name, f in sorted(self.schema.functions.items()) if not f.internal]
        return sorted((f for f in chosen if f.name not in self.settings.skip), key=lambda f: not self.links.gives(f))

    def held(self):
        """Yield the failures of calls answers held since asked last, sent again (not shrunk)."""
        while self.followed:
            follow = self.followed.pop()
            yield reproduction.made(self, shrinking.confirm(self, self.schema.functions[follow.function], follow))

    def follow(self, function, fields):
        """Check each call an Ok_ of `function` holds (a `fn.X` value) as a call of its own, as a client would
        send it; keep the failures of new kinds, said to depend on that call."""
        for name, called, body in self.links.learn(function, fields):
            found, _ = self.check(Call(self.schema.functions[called], [self.headers(), body], nested=True))
            if found and found.kind not in self.seen:
                self.seen[found.kind] += 1
                self.followed.append(found._replace(problem=f"{found.problem} (the call {function.name}'s answer "
                                                            f"held, at {name}: it depends on that call)"))

    def run(self, functions, found, tell=lambda line: None):
        """Fuzz each function alone, as many calls as the Settings say, then all of them interleaved: what
        fails only after other calls shows there. The Findings go into `found` as they come (kept if the
        run is interrupted); `tell` is given a line for each function, and one for the sequences. With
        several workers, the functions that give no credentials are shared out among that many twins,
        each in a process of its own (workers.py), once those that do were called (so that every twin
        starts with their credentials)."""
        count, workers = self.settings.max_examples, self.settings.workers
        alone = [f for f in functions if workers == 1 or self.links.gives(f)]
        found += access.owners(self, functions) if "owner" in self.chosen else []
        for number, function in enumerate(alone):
            if self.late() and self.unreached(alone[number:], tell):
                break
            found += self.examples(function, count)
            tell(self.said(function, found))
        shared = [f for f in functions if not (workers == 1 or self.links.gives(f))]  # (not a search of `alone`
        # for each: over thousands of functions, that was most of a run)
        if shared:
            shared_out(self, shared, count, found, workers)
            called = [f for f in shared if self.evidence[(f.name, "message")] or f.name in self.tags]
            for function in called:
                tell(self.said(function, found))
            if len(called) < len(shared):
                self.unreached([f for f in shared if f not in set(called)], tell, always=True)
        if len(functions) > 1:
            made = []
            mine = list(self.sequences(functions, count * len(functions) // 2, made))
            found += mine
            failing = ", ".join(sorted({f"{f.function} {f.check}" for f in mine}))
            tell("  in sequences of them all: " + (f"{len(mine)} failing ({failing})" if mine else
                                                   f"no new failure in {plural(len(made), 'call')}" if made else
                                                   f"not run ({UNREACHED})"))

    def unreached(self, functions, tell, always=False, most=20):
        """Tell, in one line, that the time limit left `functions` uncalled, if they are more than `most`
        (or `always`); whether it did (else each gets its line, as a function called does)."""
        if len(functions) <= most and not always:
            return False
        names = ", ".join(f.name for f in functions[:3])
        tell(f"  {names}" + (f" and {len(functions) - 3:,} more functions" if len(functions) > 3 else "")
             + f": not run ({UNREACHED})")
        return True

    def said(self, function, found):
        """The line that says how the checks of `function` went."""
        note = (" (every call was answered ErrorUnauthenticated_: give -H '@auth_:=...')"
                if self.tags.get(function.name) == {"ErrorUnauthenticated_"} else "")
        return function_line(function.name, verdicts(self, [function], found, UNREACHED)) + note

    def examples(self, function, count):
        """Make and check `count` calls of `function`; yield a Finding for each kind of failure, the first
        call of its kind shrunk and sent again (later ones are counted in `seen`). They are a scene of their
        own (access.py): a fresh user's, where the schema gives one."""
        access.scene(self, count)  # (begun with no more calls than it is given: a run of thousands of functions
        # and few calls each would be mostly beginnings)
        yield from access.credentials(self, function) if "auth" in self.chosen else ()
        for number in range(count):
            if self.late():
                return
            try:
                arguments = self.links.carry(function, values.Maker(self.schema, self.rng).fields(
                    function.arguments, 0), self.rng)
            except values.TooLarge as error:
                self.missed[function.name] = f"no call of it can be made: {error}"
                return
            found = self.exercise(function, arguments, number)
            if found and found.kind not in self.seen:
                found = shrinking.confirm(self, function, shrinking.shrink(self, function, found))
                if found.check in WIRES and found.again[0] < found.again[1] and not self.settings.deterministic:
                    wires.vary(self, function)  # (a difference of the wires would come back each time)
                    continue
                yield reproduction.made(self, found)
            if found:
                self.seen[found.kind] += 1
            yield from self.held()

    def exercise(self, function, arguments, number):
        """Check one call made of `arguments` in the ways its number chooses; the first Finding, or None."""
        call = Call(function, [self.headers(), {function.name: arguments}])
        found, answered = self.check(call)
        headers, body = call.message
        if not found and self.channel.encoding and number % 3 == 0 and any(check in self.chosen for check in MESSAGEPACK):
            packed = {**headers, "@pac_": True} if self.rng.random() < 0.5 else headers  # (by a coin)
            found = wires.anew(self, call._replace(message=[packed, body], binary=True, before=answered), answered)
        if not function.results["Ok_"]:
            self.missed[(function.name, "select")] = "its Ok_ has no fields to select"
        elif not found and number % 2 == 0 and "select" in self.chosen:
            selection = selections.made(self.schema, self.rng, function)
            found = wires.anew(self, call._replace(message=[{**headers, "@select_": selection}, body]), answered)
        return found or (rejections.check_wrong(self, function, arguments) if "rejected" in self.chosen else None)

    def headers(self):
        """The headers of a call: some the schema declares, made (values.py), the credentials an answer gave,
        and those given (-H)."""
        made = values.Maker(self.schema, self.rng, depth=3, budget=30).headers(self.schema.request_headers)
        return {**made, **self.links.headers(self.settings.headers)}

    def late(self):
        """Whether the time limit is past."""
        return self.deadline is not None and time.monotonic() > self.deadline

    def judged(self, function, checks, started):
        """Count an answer received since `started` as evidence for each of `checks` of `function`."""
        for check in checks:
            self.evidence[(function.name, check)] += 1
            self.seconds[(function.name, check)] += time.monotonic() - started

    def holds_bytes(self, function):
        """Whether a result of `function` may hold bytes, asked once for each."""
        if function.name not in self.bytes_held:
            self.bytes_held[function.name] = answers.holds_bytes(
                self.schema, [type_ for fields in function.results.values() for type_ in fields.values()])
        return self.bytes_held[function.name]

    def timed(self, function, request, binary, started, kept=3):
        """How long the call `request` of `function` took since `started`, kept among its `kept` slowest."""
        took = time.monotonic() - started
        slowest = self.slowest.setdefault(function.name, [])
        if len(slowest) < kept or took > slowest[-1][0]:
            slowest[:] = sorted([*slowest, (took, request, binary)], key=lambda entry: -entry[0])[:kept]
        return took

    def check(self, call):
        """Send a Call and judge its answer: (the first check it fails, as a Finding, or None; the body
        answered, or None if no message came). An answer that never reached the handler (no credentials,
        or none it takes) is evidence for no check of what the handler does."""
        started, function, request, binary = time.monotonic(), call.function, call.message, call.binary
        status, typed, answer, labelled = self.channel.send(request, binary)
        took = self.timed(function, request, binary, started)
        message = values.as_text(typed) if binary else typed  # (bytes as base64 text, as on JSON)
        problem = answers.message_problem(status, message)
        if problem:
            self.judged(function, ["message"], started)
            at = self.links.logged(function, request, None, len(answer))
            shown = answers.shown(message, answer)
            return Finding("message", function.name, request, binary, problem, shown, at=at), None
        headers, body = message
        [(tag, fields)] = body.items()
        at = self.links.logged(function, request, body, len(answer))
        self.tags[function.name] = self.tags.get(function.name, set()) | {tag}
        selected, reached = "@select_" in request[0], tag != "ErrorUnauthenticated_"
        packed = request[0].get("@pac_") is True
        if selected and tag != "Ok_":
            self.missed[(function.name, "select")] = f"no call with @select_ was answered Ok_ (the last: {tag})"
        if not reached:
            for check in ("handler", "accepted", "result"):
                self.missed[(function.name, check)] = ("every call was answered ErrorUnauthenticated_, so none reached "
                                                       "the handler (give -H '@auth_:=...', or a function that logs in)")
        results, budget = function.results, self.settings.response_time
        checks = [  # each (name, whether it applies, its problems as (path, why), what a path is in), asked in turn
            ("message", True, lambda: [], None),
            ("handler", reached, lambda: [((), f"the service answered {tag}: {_json(fields)}")] if tag in HANDLER_BUGS
             else [], None),
            ("accepted", reached, lambda: [((), f"a valid call was refused: {tag} {_json(fields)}")] if tag in REFUSALS
             else [], None),
            ("result", reached, lambda: answers.result_problems(self.schema, function, tag, fields, selected), results),
            ("headers", True, lambda: answers.header_problems(self.schema, headers), self.schema.response_headers),
            ("select", selected and tag == "Ok_",
             lambda: answers.selection_problems(self.schema, function, fields, request[0]), results),
            ("bytes", binary, lambda: wires.bytes_problems(self, function, typed[1]), results),
            ("binary", binary and not packed, lambda: wires.parity_problems(self, call, body), results),
            ("packed", binary and packed, lambda: wires.parity_problems(self, call, body), results),
            ("id", "@id_" in request[0], lambda: answers.id_problems(request[0]["@id_"], headers), None),
            ("base64", True, lambda: answers.base64_problems(self.schema, function, body, headers, answers.wire(answer),
                                                             self.holds_bytes(function)), None),
            ("media", True, lambda: answers.media_problems(labelled, answer), None),
            ("time", budget is not None, lambda: [((), f"it took {took:.3f} s, past the budget of {budget:g} s")]
             if took > budget else [], None),
        ]
        for check, applies, problems, declared in checks:
            found = problems() if applies and check in self.chosen else None
            if found is None:  # (nothing to judge: it does not apply, or could not be told)
                continue
            self.judged(function, [check], started)
            if found:
                said = "; ".join(f"{where(path)}: {why}" if path else why for path, why in found[:3])
                general = tuple((answers.general(self.schema, declared, path), why) for path, why in found) \
                    if declared is not None else ()
                return Finding(check, function.name, request, binary, said, answers.shown(message, answer), tag,
                               tuple(found), at=at, general=general, message=message, before=call.before), body
        self.passed(call, body, at)
        return None, body

    def passed(self, call, body, at):
        """What a Call that passed every check (answered `body`, at its place `at` in the log) gives the calls
        after it: its values, the calls its answer holds, or (refused) new credentials."""
        function, request = call.function, call.message
        [(tag, fields)] = body.items()
        self.links.passing(function, request, at)
        if tag == "ErrorUnauthenticated_" and self.links.credentials and request[0].get("@auth_") == \
                self.links.credentials["@auth_"] and not call.nested:
            self.links.credentials = self.login() or {}  # (those an answer gave were refused: a logout ended them)
        if tag == "Ok_" and not function.internal:
            self.links.keep(function, request[1][function.name], fields)
        if tag == "Ok_" and "@select_" not in request[0] and not function.internal and not call.nested:
            self.follow(function, fields)
            if not call.binary:  # (the same call on MessagePack came just after it on JSON)
                self.links.accepted(function, request[1], at)

    def login(self):
        """The credentials of a fresh user's login (access.py), or None; the run's own stay as they are."""
        user = access.fresh_user(self)
        return user and user[0]

    def sequences(self, functions, count, made):
        """`count` valid calls of `functions` interleaved at random, once each was fuzzed alone: a failure
        here depends on calls made before it, in its sequence (a scene of SEQUENCE calls of each function,
        access.py). Yield the Findings of kinds not seen yet, sent again and reproduced; each call made goes
        into `made`."""
        for number in range(count):
            if self.late():
                return
            if number % (SEQUENCE * len(functions)) == 0:
                access.scene(self, 0)
            function = self.rng.choice(functions)
            try:
                arguments = self.links.carry(function, values.Maker(self.schema, self.rng).fields(
                    function.arguments, 0), self.rng)
            except values.TooLarge:
                continue
            found, _ = self.check(Call(function, [self.headers(), {function.name: arguments}]))
            made.append(function.name)
            if found and found.kind not in self.seen:
                yield reproduction.made(self, shrinking.confirm(self, function, found))
            if found:
                self.seen[found.kind] += 1
            yield from self.held()


def _json(value):
    return json.dumps(value, ensure_ascii=False, default=repr)[:300]
