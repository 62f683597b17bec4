"""Recorded traffic: calls a service really got, replayed against a new schema as evidence.

How this works
--------------
`read(path)` reads recorded exchanges from a file or the files of a folder:
the stub files `python -m reference.mock --record` writes (`{"stub":
{"fn.X": arguments, "->": result, "@auth_": ...}}`, or an array of them),
or JSON lines of `[request, answer]` pairs, each a message `[headers, body]`.
A `Replay` asks of each exchange what the new schema makes of it:

- would the new server refuse a request the old one took? The core's own
  steps 3 to 6 (headers, @auth_, the function, its arguments) answer, with
  the cases;
- is the recorded answer still one of the function's results in the new
  schema (less what its `@select_` dropped)?
- which findings of the Comparison does it touch? Those whose sites (where
  a change is: sites.py) the refusal's cases are at, or the answer holds a
  value at.

Evidence decides: a refused call that no breaking finding explains shows a
gap in the rules, and becomes a finding of its own, `recorded-call-refused`.
"""

import json
from pathlib import Path
from typing import NamedTuple

from .. import sources
from ..protocol import Refusal, Service, select, validate
from ..protocol.service import Exchange as Step
from .sites import held, refused_at

MAX_EXCHANGES = 1_000_000  # recorded exchanges read at most
MOST_KEPT = 10  # exchanges of each kind kept to show (refused, outside, touching a finding): the rest counted


class Exchange(NamedTuple):
    """One recorded call and its answer, and where it was read from (FILE, or FILE:LINE)."""

    source: str
    headers: dict
    function: str
    arguments: dict
    result: object  # the answer's body, or None when the recording has none


def read(path):
    """Yield the exchanges recorded in a file, or in the *.json and *.jsonl files of a folder, in name
    order, one file read at a time; ValueError says what cannot be read, and where."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: does not exist")
    files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
    count = 0
    for file in files:
        text = sources.read_file(file)
        found = _stubs(file, text) if file.suffix == ".json" else _lines(file, text)
        count += len(found)
        if count > MAX_EXCHANGES:
            raise ValueError(f"{path}: over {MAX_EXCHANGES:,} recorded exchanges, more than are replayed")
        yield from found


def _stubs(file, text):
    """The exchanges of a stub file: a recorded stub, or an array of them."""
    value = sources.parse_json(text, file)
    found = []
    for stub in value if type(value) is list else [value]:
        call = stub.get("stub") if type(stub) is dict else None
        names = [key for key in call if key.startswith("fn.")] if type(call) is dict else []
        if len(names) != 1 or type(call[names[0]]) is not dict:
            raise ValueError(f"{file}: not a recorded stub, {{\"stub\": {{\"fn.X\": {{...}}, \"->\": {{...}}}}}}")
        headers = {key: value for key, value in call.items() if key.startswith("@")}
        found.append(Exchange(str(file), headers, names[0], call[names[0]], call.get("->")))
    return found


def _lines(file, text):
    """The exchanges of JSON lines, each [request, answer]: two messages, [headers, body]."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{file}:{number}"
        pair = sources.parse_json(line, where)
        try:
            (headers, body), (_, answer) = pair
            [(function, arguments)] = body.items()
            if type(headers) is not dict or type(arguments) is not dict:
                raise ValueError
        except (TypeError, ValueError, AttributeError):
            raise ValueError(f"{where}: not [request, answer], two messages [headers, body]") from None
        found.append(Exchange(where, headers, function, arguments, answer))
    return found


class Kept:
    """Exchanges of one kind: how many there were, and the first MOST_KEPT (to show), each as given."""

    __slots__ = ("count", "first")

    def __init__(self):
        self.count, self.first = 0, []

    def add(self, item):
        self.count += 1
        if len(self.first) < MOST_KEPT:
            self.first.append(item)


class Replay:
    """What the new schema makes of recorded exchanges (see above), each replayed and let go (only the
    first few of each kind are kept, to show, and how many there were): the refused requests, the answers
    outside the new results, and for each finding the exchanges it touches."""

    def __init__(self, exchanges, comparison):
        self.comparison, self.total = comparison, 0
        self.old, self.new = _checker(comparison.old), _checker(comparison.new)
        self.refused = Kept()  # (Exchange, the answer the new server gives it), of those the old one took
        self.refused_before = 0  # recorded requests the old schema refuses too: no evidence either way
        self.outside = Kept()  # (Exchange, the first case of its answer against the new results)
        self.touched = {key: Kept() for key in comparison.findings}  # finding key -> Exchanges
        self.unexplained = {}  # function -> Kept (Exchange, refusal): refused, touching no breaking finding
        self.groups = {}  # the keys of the findings an exchange touches -> Kept (number, Exchange)
        self.at = {}  # site -> the keys of the findings there: each exchange costs its sites, not the findings
        for key, finding in comparison.findings.items():
            for site in finding.sites:
                self.at.setdefault(site, []).append(key)
        for exchange in exchanges:
            self.replay(exchange)
        if self.unexplained:
            self.evidence()

    def replay(self, exchange):
        self.total += 1
        refusal = refusal_by(self.new, exchange)
        if refusal is not None and refusal_by(self.old, exchange) is not None:
            self.refused_before, refusal = self.refused_before + 1, None
        sites, refused = held(self.comparison, exchange), set()
        if refusal is not None:
            self.refused.add((exchange, refusal))
            refused = refused_at(self.comparison, exchange, refusal)
        function = self.comparison.new.functions.get(exchange.function)
        if function is not None and exchange.result is not None:
            found = validate.check_tags(exchange.result, function.result, (), function)
            selection = exchange.headers.get("@select_")
            if type(selection) is dict:  # (a selection drops required fields legitimately)
                found = (case for case in found if not _dropped(case, selection, function))
            cases = validate.first(found)
            if cases:
                self.outside.add((exchange, cases[0]))
        refusing = {key for site in refused for key in self.at.get(site, ())}  # (the findings that say why)
        keys = frozenset(refusing.union(*(self.at.get(site, ()) for site in sites)))
        for key in keys:
            self.touched[key].add(exchange)
        explained = any(self.comparison.findings[key].level == "breaking" for key in refusing)
        if refusal is not None and not explained:
            self.unexplained.setdefault(exchange.function, Kept()).add((exchange, refusal))
            keys |= {("recorded-call-refused", exchange.function)}
        self.groups.setdefault(keys, Kept()).add((self.total, exchange))

    def evidence(self):
        """A `recorded-call-refused` finding for each function whose recorded calls were refused where no
        breaking finding says why: the rules missed a break that the traffic shows."""
        comparison = self.comparison
        for name, listed in self.unexplained.items():
            old, new = comparison.old.functions[name], comparison.new.functions.get(name)
            exchange, refusal = listed.first[0]
            where = (comparison.after if new else comparison.before).where(name, [name])
            finding = comparison.found("recorded-call-refused", name, where, f"{listed.count:,} recorded call"
                                       f"{'s' * (listed.count != 1)} refused, the first {exchange.source}: "
                                       f"{json.dumps(refusal)[:300]}")
            finding.add(comparison.pairs[(id(old.arguments), id(new.arguments) if new else None, "request")])
            self.touched[("recorded-call-refused", name)] = touched = Kept()
            touched.count, touched.first = listed.count, [e for e, _ in listed.first]

    def affected(self):
        """How many exchanges a breaking finding not accepted touches, and the first of them (or None)."""
        keys = {(f.rule, f.element) for f in self.comparison.breaking()}
        hit = [kept for touching, kept in self.groups.items() if touching & keys]
        return sum(kept.count for kept in hit), min((kept.first[0] for kept in hit), default=(0, None))[1]

    def lines(self):
        """What the replay found, as lines of text."""
        total = self.total
        lines = [f"Replayed {total:,} recorded call{'s' * (total != 1)} against the new schema."]
        for (rule, element), found in self.touched.items():
            if found.count:
                lines.append(f"  {rule} {element}: touches {found.count:,} of {total:,} (the first: "
                             f"{found.first[0].source})")
        for said, listed in (("Requests the new schema would refuse", self.refused),
                             ("Recorded answers outside the new schema's results", self.outside)):
            if listed.count:
                exchange, why = listed.first[0]
                lines.append(f"{said}: {listed.count:,} of {total:,}; the first, {exchange.source} "
                             f"({exchange.function}): {json.dumps(why)[:300]}")
        if self.refused_before:
            lines.append(f"Requests the old schema refuses too (no evidence either way): {self.refused_before:,} "
                         f"of {total:,}")
        affected, first = self.affected()
        verdict = "breaking" if self.comparison.breaking() else "compatible"
        shown = ("by the recorded calls, which the rules call compatible" if self.unexplained and any(
            f.rule == "recorded-call-refused" for f in self.comparison.breaking()) else "by the rules")
        lines.append(f"{verdict.capitalize()} {shown}, {affected:,} of {total:,} recorded calls affected"
                     + (f" (the first: {first.source})." if first else "."))
        return lines

    def as_data(self):
        """The replay as JSON data."""
        first = lambda kept: [{"source": e.source, "function": e.function, "why": why} for e, why in kept.first]
        return {"calls": self.total, "affected": self.affected()[0], "refused": self.refused.count,
                "refusedBefore": self.refused_before, "firstRefused": first(self.refused),
                "outside": self.outside.count, "firstOutside": first(self.outside)}


def _never(arguments, headers):
    """A handler no replay calls: it stops at the steps before it."""
    raise AssertionError("a replay never calls a handler")


def _checker(schema):
    """A Service of `schema` whose handlers are never called: its steps 3 to 6 judge recorded requests."""
    return Service(schema, {name: _never for name in schema.functions if name not in ("fn.ping_", "fn.api_")})


def refusal_by(service, exchange):
    """The answer `service` gives a recorded request before any handler, or None if it would call one."""
    step = Step(exchange.headers, exchange.function, exchange.arguments)
    try:
        for check in (service.check_headers, service.check_auth, service.find_function, service.check_arguments):
            check(step)
    except Refusal as refused:
        return refused.result
    return None


def _dropped(case, selection, function):
    """Whether a case of a recorded answer is a required field its request's `@select_` removes."""
    missing = case["reason"].get("RequiredObjectKeyMissing")
    return bool(missing) and select.removes(selection, function, case["path"], missing["key"])
