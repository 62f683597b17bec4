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


class Exchange(NamedTuple):
    """One recorded call and its answer, and where it was read from (FILE, or FILE:LINE)."""

    source: str
    headers: dict
    function: str
    arguments: dict
    result: object  # the answer's body, or None when the recording has none


def read(path):
    """The exchanges recorded in a file, or in the *.json and *.jsonl files of a folder, in name order;
    ValueError says what cannot be read, and where."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path}: does not exist")
    files = sorted(p for p in path.iterdir() if p.suffix in (".json", ".jsonl")) if path.is_dir() else [path]
    found = []
    for file in files:
        text = sources.read_file(file)
        found += _stubs(file, text) if file.suffix == ".json" else _lines(file, text)
        if len(found) > MAX_EXCHANGES:
            raise ValueError(f"{path}: over {MAX_EXCHANGES:,} recorded exchanges, more than are replayed")
    return found


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


class Replay:
    """What the new schema makes of recorded exchanges (see above): the refused requests, the answers
    outside the new results, and for each finding the exchanges it touches."""

    def __init__(self, exchanges, comparison):
        self.exchanges, self.comparison = exchanges, comparison
        self.old, self.new = _checker(comparison.old), _checker(comparison.new)
        self.refused = []  # (Exchange, the answer the new server gives it), of those the old one took
        self.refused_before = 0  # recorded requests the old schema refuses too: no evidence either way
        self.outside = []  # (Exchange, the first case of its answer against the new results)
        self.touched = {key: [] for key in comparison.findings}  # finding key -> Exchanges
        self.unexplained = []  # (Exchange, refusal): refused, and touching no breaking finding
        self.at = {}  # site -> the keys of the findings there: each exchange costs its sites, not the findings
        for key, finding in comparison.findings.items():
            for site in finding.sites:
                self.at.setdefault(site, []).append(key)
        for exchange in exchanges:
            self.replay(exchange)
        if self.unexplained:
            self.evidence()

    def replay(self, exchange):
        refusal = refusal_by(self.new, exchange)
        if refusal is not None and refusal_by(self.old, exchange) is not None:
            self.refused_before, refusal = self.refused_before + 1, None
        sites, refused = held(self.comparison, exchange), set()
        if refusal is not None:
            self.refused.append((exchange, refusal))
            refused = refused_at(self.comparison, exchange, refusal)
        function = self.comparison.new.functions.get(exchange.function)
        if function is not None and exchange.result is not None:
            found = validate.check_tags(exchange.result, function.result, (), function)
            selection = exchange.headers.get("@select_")
            if type(selection) is dict:  # (a selection drops required fields legitimately)
                found = (case for case in found if not _dropped(case, selection, function))
            cases = validate.first(found)
            if cases:
                self.outside.append((exchange, cases[0]))
        for key in {key for site in sites | refused for key in self.at.get(site, ())}:
            self.touched[key].append(exchange)
        explained = any(self.comparison.findings[key].level == "breaking"
                        for site in refused for key in self.at.get(site, ()))
        if refusal is not None and not explained:
            self.unexplained.append((exchange, refusal))

    def evidence(self):
        """A `recorded-call-refused` finding for each function whose recorded calls were refused where no
        breaking finding says why: the rules missed a break that the traffic shows."""
        comparison, by_function = self.comparison, {}
        for exchange, refusal in self.unexplained:
            by_function.setdefault(exchange.function, []).append((exchange, refusal))
        for name, listed in by_function.items():
            old, new = comparison.old.functions[name], comparison.new.functions.get(name)
            exchange, refusal = listed[0]
            where = (comparison.after if new else comparison.before).where(name, [name])
            finding = comparison.found("recorded-call-refused", name, where, f"{len(listed):,} recorded call"
                                       f"{'s' * (len(listed) != 1)} refused, the first {exchange.source}: "
                                       f"{json.dumps(refusal)[:300]}")
            finding.add(comparison.pairs[(id(old.arguments), id(new.arguments) if new else None, "request")])
            self.touched[("recorded-call-refused", name)] = [e for e, _ in listed]

    def affected(self):
        """The exchanges a breaking finding not accepted touches, in the order recorded."""
        keys = {(f.rule, f.element) for f in self.comparison.breaking()}
        touched = {id(e) for key in keys for e in self.touched[key]}
        return [e for e in self.exchanges if id(e) in touched]

    def lines(self):
        """What the replay found, as lines of text."""
        total = len(self.exchanges)
        lines = [f"Replayed {total:,} recorded call{'s' * (total != 1)} against the new schema."]
        for (rule, element), found in self.touched.items():
            if found:
                lines.append(f"  {rule} {element}: touches {len(found):,} of {total:,} (the first: {found[0].source})")
        for said, listed in (("Requests the new schema would refuse", self.refused),
                             ("Recorded answers outside the new schema's results", self.outside)):
            if listed:
                exchange, why = listed[0]
                lines.append(f"{said}: {len(listed):,} of {total:,}; the first, {exchange.source} "
                             f"({exchange.function}): {json.dumps(why)[:300]}")
        if self.refused_before:
            lines.append(f"Requests the old schema refuses too (no evidence either way): {self.refused_before:,} "
                         f"of {total:,}")
        affected = self.affected()
        verdict = "breaking" if self.comparison.breaking() else "compatible"
        shown = ("by the recorded calls, which the rules call compatible" if self.unexplained and any(
            f.rule == "recorded-call-refused" for f in self.comparison.breaking()) else "by the rules")
        lines.append(f"{verdict.capitalize()} {shown}, {len(affected):,} of {total:,} recorded calls affected"
                     + (f" (the first: {affected[0].source})." if affected else "."))
        return lines

    def as_data(self):
        """The replay as JSON data."""
        first = lambda listed: [{"source": e.source, "function": e.function, "why": why} for e, why in listed[:10]]
        return {"calls": len(self.exchanges), "affected": len(self.affected()), "refused": len(self.refused),
                "refusedBefore": self.refused_before,
                "firstRefused": first(self.refused), "outside": len(self.outside), "firstOutside": first(self.outside)}


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
