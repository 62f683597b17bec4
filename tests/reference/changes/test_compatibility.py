"""Schema evolution: every rule of reference/changes/compatibility.py on every shape of type, from either side."""

import json
import random
import re
from pathlib import Path

import pytest

from conformance.fuzz import values
from conformance.language import schema as language
from conformance.targets.remote import Target
from reference import load, mocking
from reference.protocol import select
from reference.changes import compatibility
from reference.changes.compatibility import RULES, compare
from tests.support.servers import serving


def fn(arguments=None, ok=None, *errors, name="fn.f", **annotations):
    """A function entry: its arguments, its Ok_ fields, and its own errors as {tag: fields}."""
    return {name: arguments or {}, **annotations, "->": [{"Ok_": ok or {}}, *({tag: fields} for error in errors
                                                                               for tag, fields in error.items())]}


def found(old, new):
    """{(rule, element)} of what a change from entries `old` to entries `new` does to old clients."""
    return {(f.rule, f.element) for f in compare(load(old), load(new)).findings.values()}


ITEM = {"struct.Item": {"sku": "string", "price": "number", "note!": "string"}}
SHAPE = {"union.Shape": [{"Circle": {"r": "number"}}, {"Square": {"side": "number"}}]}
CASES = {  # id -> (old entries, new entries, findings)
    "nothing": ([fn({"x": "integer"})], [fn({"x": "integer"})], set()),
    "comments and order": ([ITEM, fn({"i": "struct.Item"})],
                           [fn({"i": "struct.Item"}, ), {**ITEM, "///": "An item."}], set()),
    "argument removed": ([fn({"x!": "integer"})], [fn()], {("request-field-removed", "fn.f.x!")}),
    "argument required added": ([fn()], [fn({"y": "integer"})], {("request-field-added", "fn.f.y")}),
    "argument optional added": ([fn()], [fn({"y!": "integer"})], set()),
    "argument made optional": ([fn({"id": "string"})], [fn({"id!": "string"})],
                               {("request-field-renamed", "fn.f.id")}),
    "argument made required": ([fn({"id!": "string"})], [fn({"id": "string"})],
                               {("request-field-renamed", "fn.f.id!")}),
    "argument integer to number": ([fn({"x": "integer"})], [fn({"x": "number"})], set()),
    "argument number to integer": ([fn({"x": "number"})], [fn({"x": "integer"})],
                                   {("request-type-narrowed", "fn.f.x")}),
    "argument made nullable": ([fn({"x": "string"})], [fn({"x": "string?"})], set()),
    "argument made not nullable": ([fn({"x": "string?"})], [fn({"x": "string"})],
                                   {("request-type-narrowed", "fn.f.x")}),
    "argument any to string": ([fn({"x": "any"})], [fn({"x": "string"})], {("request-type-narrowed", "fn.f.x")}),
    "argument string to any": ([fn({"x": "string"})], [fn({"x": "any"})], set()),
    "argument nullable string to any": ([fn({"x": "string?"})], [fn({"x": "any"})],
                                        {("request-type-narrowed", "fn.f.x")}),
    "argument string to integer": ([fn({"x": "string"})], [fn({"x": "integer"})], {("type-changed", "fn.f.x")}),
    "argument bytes to string": ([fn({"x": "bytes"})], [fn({"x": "string"})], {("type-changed", "fn.f.x")}),
    "argument array widened": ([fn({"x": ["integer"]})], [fn({"x": ["number"]})], set()),
    "argument array narrowed": ([fn({"x": [["number"]]})], [fn({"x": [["integer"]]})],
                                {("request-type-narrowed", "fn.f.x")}),
    "argument map elements made not nullable": ([fn({"x": {"string": "integer?"}})],
                                                [fn({"x": {"string": "integer"}})],
                                                {("request-type-narrowed", "fn.f.x")}),
    "argument array to map": ([fn({"x": ["integer"]})], [fn({"x": {"string": "integer"}})],
                              {("type-changed", "fn.f.x")}),
    "argument struct to union": ([ITEM, SHAPE, fn({"x": "struct.Item"})], [ITEM, SHAPE, fn({"x": "union.Shape"})],
                                 {("type-changed", "fn.f.x")}),
    "result field removed": ([fn({}, {"x": "integer"})], [fn()], {("response-field-removed", "fn.f -> Ok_.x")}),
    "result optional field removed": ([fn({}, {"x!": "integer"})], [fn()],
                                      {("selected-field-removed", "fn.f -> Ok_.x!")}),
    "error's optional field removed": ([fn({}, {}, {"ErrorBusy": {"x!": "integer"}})],
                                       [fn({}, {}, {"ErrorBusy": {}})],
                                       {("response-optional-field-removed", "fn.f -> ErrorBusy.x!")}),
    "result field added": ([fn()], [fn({}, {"x": "integer", "y!": "string"})], set()),
    "result field made optional": ([fn({}, {"id": "string"})], [fn({}, {"id!": "string"})],
                                   {("response-field-renamed", "fn.f -> Ok_.id")}),
    "result field made required": ([fn({}, {"id!": "string"})], [fn({}, {"id": "string"})],
                                   {("selected-field-removed", "fn.f -> Ok_.id!")}),
    "result number to integer": ([fn({}, {"x": "number"})], [fn({}, {"x": "integer"})], set()),
    "result integer to number": ([fn({}, {"x": "integer"})], [fn({}, {"x": "number"})],
                                 {("response-type-widened", "fn.f -> Ok_.x")}),
    "result made nullable": ([fn({}, {"x": "integer"})], [fn({}, {"x": "integer?"})],
                             {("response-type-widened", "fn.f -> Ok_.x")}),
    "result made not nullable": ([fn({}, {"x": "integer?"})], [fn({}, {"x": "integer"})], set()),
    "result string to any": ([fn({}, {"x": "string"})], [fn({}, {"x": "any"})],
                             {("response-type-widened", "fn.f -> Ok_.x")}),
    "result any to string": ([fn({}, {"x": "any"})], [fn({}, {"x": "string"})], set()),
    "result array elements made nullable": ([fn({}, {"x": ["integer"]})], [fn({}, {"x": ["integer?"]})],
                                            {("response-type-widened", "fn.f -> Ok_.x")}),
    "result tag added": ([fn()], [fn({}, {}, {"ErrorSoldOut": {}})], {("result-tag-added", "fn.f -> ErrorSoldOut")}),
    "result tag removed": ([fn({}, {}, {"ErrorSoldOut": {}})], [fn()], set()),
    "errors group added": ([fn(), fn(name="fn.g")], [fn(), fn(name="fn.g"), {"errors.Busy": [{"ErrorBusy": {}}]}],
                           {("errors-tag-added", "errors.Busy.ErrorBusy")}),
    "errors tag added": ([fn(), {"errors.Busy": [{"ErrorBusy": {}}]}],
                         [fn(), {"errors.Busy": [{"ErrorBusy": {}}, {"ErrorLater": {}}]}],
                         {("errors-tag-added", "errors.Busy.ErrorLater")}),
    "errors group removed": ([fn(), {"errors.Busy": [{"ErrorBusy": {}}]}], [fn()], set()),
    "argument union tag added": ([SHAPE, fn({"s": "union.Shape"})],
                                 [{"union.Shape": [*SHAPE["union.Shape"], {"Dot": {}}]}, fn({"s": "union.Shape"})],
                                 set()),
    "argument union tag removed": ([SHAPE, fn({"s": "union.Shape"})],
                                   [{"union.Shape": SHAPE["union.Shape"][:1]}, fn({"s": "union.Shape"})],
                                   {("request-tag-removed", "union.Shape.Square")}),
    "result union tag added": ([SHAPE, fn({}, {"s": "union.Shape"})],
                               [{"union.Shape": [*SHAPE["union.Shape"], {"Dot": {}}]}, fn({}, {"s": "union.Shape"})],
                               {("response-tag-added", "union.Shape.Dot")}),
    "result union tag removed": ([SHAPE, fn({}, {"s": "union.Shape"})],
                                 [{"union.Shape": SHAPE["union.Shape"][:1]}, fn({}, {"s": "union.Shape"})],
                                 {("selected-tag-removed", "union.Shape.Square")}),
    "result union tag without fields removed": ([{"union.U": [{"A": {"x": "integer"}}, {"B": {}}]},
                                                 fn({}, {"u": "union.U"})],
                                                [{"union.U": [{"A": {"x": "integer"}}]}, fn({}, {"u": "union.U"})],
                                                set()),
    "error's union tag removed": ([SHAPE, fn({}, {}, {"ErrorBad": {"s": "union.Shape"}})],
                                  [{"union.Shape": SHAPE["union.Shape"][:1]},
                                   fn({}, {}, {"ErrorBad": {"s": "union.Shape"}})], set()),
    "union tag's field removed, both sides": (
        [SHAPE, fn({"s": "union.Shape"}, {"s": "union.Shape"})],
        [{"union.Shape": [{"Circle": {}}, SHAPE["union.Shape"][1]]}, fn({"s": "union.Shape"}, {"s": "union.Shape"})],
        {("request-field-removed", "union.Shape.Circle.r"), ("response-field-removed", "union.Shape.Circle.r")}),
    "shared struct, required field added": ([ITEM, fn({"i": "struct.Item"}, {"i": "struct.Item"})],
                                            [{"struct.Item": {**ITEM["struct.Item"], "qty": "integer"}},
                                             fn({"i": "struct.Item"}, {"i": "struct.Item"})],
                                            {("request-field-added", "struct.Item.qty")}),
    "shared struct, optional field removed": (
        [ITEM, fn({"i": "struct.Item"}, {"i": "struct.Item"})],
        [{"struct.Item": {"sku": "string", "price": "number"}}, fn({"i": "struct.Item"}, {"i": "struct.Item"})],
        {("request-field-removed", "struct.Item.note!"), ("selected-field-removed", "struct.Item.note!")}),
    "union tag's optional field removed, in a result": (
        [{"union.U": [{"A": {"x!": "integer"}}]}, fn({}, {"u": "union.U"})],
        [{"union.U": [{"A": {}}]}, fn({}, {"u": "union.U"})], {("selected-field-removed", "union.U.A.x!")}),
    "shared struct, integer to number": (
        [{"struct.Item": {"n": "integer"}}, fn({"i": "struct.Item"}, {"i": "struct.Item"})],
        [{"struct.Item": {"n": "number"}}, fn({"i": "struct.Item"}, {"i": "struct.Item"})],
        {("response-type-widened", "struct.Item.n")}),
    "deep inside arrays, maps and structs": (
        [{"struct.A": {"b": "struct.B"}}, {"struct.B": {"c": "integer"}}, fn({"a": [{"string": "struct.A"}]})],
        [{"struct.A": {"b": "struct.B"}}, {"struct.B": {"c": "string"}}, fn({"a": [{"string": "struct.A"}]})],
        {("type-changed", "struct.B.c")}),
    "recursive struct": ([{"struct.Node": {"value": "integer", "next!": "struct.Node"}}, fn({}, {"n": "struct.Node"})],
                         [{"struct.Node": {"value": "number", "next!": "struct.Node"}}, fn({}, {"n": "struct.Node"})],
                         {("response-type-widened", "struct.Node.value")}),
    "a call as a result value": ([fn({"x!": "integer"}, name="fn.g"), fn({}, {"then": "fn.g"})],
                                 [fn({}, name="fn.g"), fn({}, {"then": "fn.g"})],
                                 {("request-field-removed", "fn.g.x!"), ("response-optional-field-removed", "fn.g.x!")}),
    "a call of another function": ([fn(name="fn.g"), fn(name="fn.h"), fn({}, {"then": "fn.g"})],
                                   [fn(name="fn.g"), fn(name="fn.h"), fn({}, {"then": "fn.h"})],
                                   {("type-changed", "fn.f -> Ok_.then")}),
    "function removed": ([fn(), fn(name="fn.g")], [fn()], {("function-removed", "fn.g")}),
    "function added": ([fn()], [fn(), fn(name="fn.g")], set()),
    "a service's own internal function removed": ([fn(), fn(name="fn.stats_")], [fn()],
                                                  {("function-removed", "fn.stats_")}),
    "a service's own internal function's argument added": (
        [fn(), fn(name="fn.stats_")], [fn(), fn({"since": "integer"}, name="fn.stats_")],
        {("request-field-added", "fn.stats_.since")}),
    "a function made $internal": ([fn(), fn({}, {"n": "integer"}, name="fn.stats"),
                                   {"errors.Busy": [{"ErrorBusy": {}}]}],
                                  [fn(), fn({}, {"n": "integer"}, name="fn.stats", **{"$internal": True}),
                                   {"errors.Busy": [{"ErrorBusy": {}}]}], set()),
    "a $internal function's result widened": ([fn({}, {"n": "integer"}, name="fn.stats", **{"$internal": True})],
                                              [fn({}, {"n": "number"}, name="fn.stats", **{"$internal": True})],
                                              {("response-type-widened", "fn.stats -> Ok_.n")}),
    "renamed struct of the same shape": ([ITEM, fn({"i": "struct.Item"})],
                                         [{"struct.Product": ITEM["struct.Item"]}, fn({"i": "struct.Product"})], set()),
    "renamed struct in a result": ([ITEM, fn({}, {"i": ["struct.Item"]})],
                                   [{"struct.Product": ITEM["struct.Item"]}, fn({}, {"i": ["struct.Product"]})],
                                   {("selected-type-renamed", "struct.Item")}),
    "renamed union in a result": ([SHAPE, fn({}, {"s!": "union.Shape"})],
                                  [{"union.Form": SHAPE["union.Shape"]}, fn({}, {"s!": "union.Form"})],
                                  {("selected-type-renamed", "union.Shape")}),
    "renamed struct in a call held by a result": (
        [ITEM, fn({"i": "struct.Item"}, name="fn.g"), fn({}, {"then": "fn.g"})],
        [{"struct.Product": ITEM["struct.Item"]}, fn({"i": "struct.Product"}, name="fn.g"), fn({}, {"then": "fn.g"})],
        {("selected-type-renamed", "struct.Item")}),
    "renamed struct in an error only": ([ITEM, fn({}, {}, {"ErrorBad": {"i": "struct.Item"}})],
                                        [{"struct.Product": ITEM["struct.Item"]},
                                         fn({}, {}, {"ErrorBad": {"i": "struct.Product"}})], set()),
    "renamed struct without fields": ([{"struct.E": {}}, fn({}, {"e": "struct.E"})],
                                      [{"struct.F": {}}, fn({}, {"e": "struct.F"})], set()),
    "renamed union whose tags have no fields": ([{"union.E": [{"A": {}}]}, fn({}, {"e": "union.E"})],
                                                [{"union.F": [{"A": {}}]}, fn({}, {"e": "union.F"})],
                                                {("selected-type-renamed", "union.E")}),
    "authentication needed": ([{"union.Auth_": [{"Token": {"t": "string"}}]}, fn(**{"$authenticated": False})],
                              [{"union.Auth_": [{"Token": {"t": "string"}}]}, fn()],
                              {("function-protected", "fn.f")}),
    "authentication turned on": ([fn()], [{"union.Auth_": [{"Token": {"t": "string"}}]}, fn()],
                                 {("function-protected", "fn.f")}),
    "authentication no longer needed": ([{"union.Auth_": [{"Token": {"t": "string"}}]}, fn()],
                                        [{"union.Auth_": [{"Token": {"t": "string"}}]},
                                         fn(**{"$authenticated": False})], set()),
    "an Auth_ tag removed": ([{"union.Auth_": [{"Token": {"t": "string"}}, {"Key": {"k": "string"}}]}, fn()],
                             [{"union.Auth_": [{"Token": {"t": "string"}}]}, fn()],
                             {("request-tag-removed", "union.Auth_.Key")}),
    "request header widened": ([fn(), {"headers.H": {"@h": "integer"}, "->": {}}],
                               [fn(), {"headers.H": {"@h": "number"}, "->": {}}], set()),
    "request header narrowed": ([fn(), {"headers.H": {"@h": "number"}, "->": {}}],
                                [fn(), {"headers.H": {"@h": "integer"}, "->": {}}],
                                {("request-type-narrowed", "headers.H.@h")}),
    "request header added or removed": ([fn(), {"headers.H": {"@h": "number"}, "->": {}}],
                                        [fn(), {"headers.H": {"@g": "string"}, "->": {}}], set()),
    "response header widened": ([fn(), {"headers.H": {}, "->": {"@r": "integer"}}],
                                [fn(), {"headers.H": {}, "->": {"@r": "integer?"}}],
                                {("response-type-widened", "headers.H -> @r")}),
    "response header added or removed": ([fn(), {"headers.H": {}, "->": {"@r": "integer"}}],
                                         [fn(), {"headers.H": {}, "->": {"@s": "integer"}}], set()),
}


@pytest.mark.parametrize("old, new, expected", CASES.values(), ids=CASES)
def test_each_change_is_judged_by_its_side(old, new, expected):
    assert found(old, new) == expected


def test_every_rule_is_shown_by_a_case():
    """(The notes aside: a change of the checksum is no finding.)"""
    shown = {rule for _, _, expected in CASES.values() for rule, _ in expected}
    evidence = {"recorded-call-refused"}  # (found by a replay: test_traffic.py)
    assert shown == {rule for rule, (_, level, _, _) in RULES.items() if level != "note"} - evidence


def test_a_finding_in_a_shared_struct_names_every_way_to_it_and_every_client():
    def entries(price):
        return [{"struct.Item": {"sku": "string", "price": price}}, fn({"item": "struct.Item"}, name="fn.add"),
                fn({}, {"items": ["struct.Item"]}, name="fn.list"), fn({}, {"item!": "struct.Item"}, name="fn.get")]
    [widened] = compare(load(entries("integer")), load(entries("number"))).findings.values()
    assert (widened.rule, widened.element, widened.detail) == ("response-type-widened", "struct.Item.price",
                                                               "integer -> number")
    assert sorted(widened.routes()) == ["fn.get -> Ok_ → item!: struct.Item → price",
                                        "fn.list -> Ok_ → items: [struct.Item] → price"]
    assert sorted(widened.clients()) == ["read fn.get's result", "read fn.list's result"]
    [narrowed] = compare(load(entries("number")), load(entries("integer"))).findings.values()
    assert narrowed.rule == "request-type-narrowed" and narrowed.clients() == ["call fn.add"]
    assert narrowed.routes() == ["fn.add → item: struct.Item → price"]


def test_a_selection_finding_breaks_only_the_clients_that_select():
    old = [ITEM, fn({"i": "struct.Item"}, name="fn.add"), fn({}, {"items": ["struct.Item"]}, name="fn.list")]
    renamed = json.loads(json.dumps(old).replace("struct.Item", "struct.Product"))
    [finding] = compare(load(old), load(renamed)).findings.values()
    assert (finding.rule, finding.detail, RULES[finding.rule][0]) == ("selected-type-renamed",
                                                                     "struct.Item -> struct.Product", "selection")
    assert finding.clients() == ["select from fn.list's result"]
    assert finding.routes() == ["fn.list -> Ok_ → items: [struct.Product]"]


def test_the_checksum_change_is_a_note_and_only_when_the_names_change():
    assert compare(load([fn({"x": "integer"})]), load([fn({"x": "number"})])).notes == []
    [(rule, text)] = compare(load([fn({"x": "integer"})]), load([fn({"y!": "integer"})])).notes
    assert rule == "binary-checksum-changed" and re.match(r"the binary checksum changes from -?\d+ to -?\d+: ", text)


def test_a_long_chain_of_definitions_is_walked_without_recursion():
    """Pairs wait in a list: 3,000 structs, each holding the next, compare as quickly as one."""
    chain = [{f"struct.S{i}": {"next!": f"struct.S{i + 1}"}} for i in range(3000)] + [{"struct.S3000": {"x": "integer"}}]
    changed = chain[:-1] + [{"struct.S3000": {"x": "number"}}]
    finding, = compare(load([*chain, fn({}, {"s": "struct.S0"})]), load([*changed, fn({}, {"s": "struct.S0"})])
                       ).findings.values()
    route = finding.routes()[0]  # (3,002 steps: the first and last 20 are shown, and how many between)
    assert finding.element == "struct.S3000.x" and route.count("→") == 40 and "→ (2,963 steps more) →" in route
    assert route.startswith("fn.f -> Ok_ → s: struct.S0 → next!: struct.S1 →") and route.endswith("struct.S3000 → x")


def test_cycles_of_coprime_lengths_compare_once_per_root_not_once_per_finding():
    """200 and 201 structs in a ring make 40,200 pairs; a search per finding took 31 s and 1 GB for 201
    findings. Each struct is still reached from the result, so no selection breaks."""
    def ring(size, type_):
        return [{f"struct.S{i}": {"next!": f"struct.S{(i + 1) % size}", "v": type_}} for i in range(size)]
    old, new = load([*ring(200, "integer"), fn({}, {"s": "struct.S0"})]), load([*ring(201, "integer"),
                                                                               fn({}, {"s": "struct.S0"})])
    assert compare(old, new).findings == {}
    comparison = compare(old, load([*ring(201, "number"), fn({}, {"s": "struct.S0"})]))
    assert len(comparison.pairs) > 40_200 and {f.rule for f in comparison.findings.values()} == {"response-type-widened"}
    reached = [(finding.count(), finding.routes()) for finding in comparison.findings.values()]
    assert len(reached) == 201 and all(count == 1 for count, _ in reached)
    assert reached[5][1] == ["fn.f -> Ok_ → s: struct.S0 → next!: struct.S1 → next!: struct.S2 → next!: struct.S3 → "
                             "next!: struct.S4 → next!: struct.S5 → v"]


# Checked from the schema's own point of view: the calls old clients make, the answers they read.

SCALARS = ["boolean", "integer", "number", "string", "any"]


def random_schema(rng):
    """A few structs and unions and two functions of random type expressions (conformance's fuzz values
    make calls of them; the reference's mock answers them)."""
    names = ["struct.S0", "struct.S1", "union.U0"]

    def expression(depth=0):
        if depth > 1 or rng.random() < 0.6:
            base = rng.choice(SCALARS + names)
            return base + "?" * (rng.random() < 0.2 and base != "any")
        return [expression(depth + 1)] if rng.random() < 0.5 else {"string": expression(depth + 1)}

    def fields(count):
        return {f"f{i}" + "!" * (rng.random() < 0.4): expression() for i in range(count)}

    return [{"struct.S0": fields(rng.randint(0, 3))}, {"struct.S1": {"x": "integer", **fields(1)}},
            {"union.U0": [{f"T{i}": fields(rng.randint(0, 2))} for i in range(rng.randint(1, 3))]},
            {"union.U1": [{"A": {"a!": "integer"}}]},
            {"fn.f": fields(rng.randint(1, 3)), "->": [{"Ok_": fields(rng.randint(1, 3))}]},
            {"fn.g": {"s": "struct.S1"}, "->": [{"Ok_": {"s": "struct.S1", "u!": "union.U0", "v!": "union.U1"}}]}]


def mutated(entries, rng):
    """The entries with one random change: a field or tag removed, added, renamed, retyped or made nullable,
    or a definition renamed."""
    entries = json.loads(json.dumps(entries))
    if rng.random() < 0.1:  # (every use of it too)
        old, new = rng.choice(["struct.S0", "struct.S1", "union.U0", "union.U1"]), "S9"
        new = old.split(".")[0] + "." + new
        return json.loads(json.dumps(entries).replace(f'"{old}', f'"{new}'))
    entry = rng.choice(entries)
    key = next(k for k in entry if k.startswith(("struct.", "union.", "fn.")))
    body = entry["->"][0]["Ok_"] if key.startswith("fn.") and rng.random() < 0.5 else entry[key]
    if isinstance(body, list):
        if len(body) > 1 and rng.random() < 0.5:
            body.pop(rng.randrange(len(body)))
        else:
            body.append({f"T{len(body) + 5}": {}})
        return entries
    change = rng.choice(["remove", "add", "rename", "retype", "null"]) if body else "add"
    name = rng.choice(sorted(body)) if body else None
    if change == "remove":
        del body[name]
    elif change == "add":
        body[f"n{rng.randint(0, 9)}" + "!" * (rng.random() < 0.5)] = rng.choice(SCALARS)
    elif change == "rename":
        body[name[:-1] if name.endswith("!") else name + "!"] = body.pop(name)
    elif change == "retype":
        body[name] = rng.choice(SCALARS + ["struct.S0"])
    elif isinstance(body[name], str) and body[name] != "any":
        body[name] = body[name].rstrip("?") if body[name].endswith("?") else body[name] + "?"
    return entries


def replayed(old, new, rng, calls=12):
    """Old clients' calls of every function (valid by the old schema, made by the suite's generator) sent to
    a mock of the new schema: the first that is refused, or answered with what an old client cannot read.
    Every other call selects all that the old schema lets it name (`@select_`)."""
    suite, loaded = language.Schema(old), load(old)
    with serving(mocking.service(new, options=mocking.Options(seed=rng.randrange(1000)))) as server:
        target = Target(server.url)
        for name in ("fn.f", "fn.g"):
            function = suite.functions[name]
            for count in range(calls):
                headers = {"@select_": select.options(loaded.functions[name])} if count % 2 else {}
                call = [headers, {name: values.Maker(suite, rng).fields(function.arguments, 0)}]
                status, data, _ = target.post(call)
                [(tag, fields)] = json.loads(data)[1].items()
                if tag.startswith("ErrorInvalidRequest"):
                    return f"refused: {call} -> {tag} {fields}"
                if tag not in function.results:
                    return f"a result an old client does not know: {call} -> {tag}"
                unread = [problem for problem in suite.object_problems(fields, function.results[tag], (tag,))
                          if problem[1] != "ObjectKeyDisallowed"]  # (a client ignores fields it does not know)
                if unread:
                    return f"an answer an old client cannot read: {call} -> {tag} {fields}: {unread}"
    return None


@pytest.mark.parametrize("seed", range(30))
def test_a_change_judged_compatible_breaks_no_old_call_on_a_server_of_the_new_schema(seed):
    """The rules are sound: whatever the comparison lets through, old clients' calls, made by the suite's
    own generator from the old schema, are accepted by a mock of the new one and answered readably."""
    rng = random.Random(seed)
    old = random_schema(rng)
    try:
        load(old)
    except Exception:  # (a random schema whose types never end: refused, tested elsewhere)
        return
    for _ in range(6):
        new = mutated(old, rng)
        try:
            breaking = compare(load(old), load(new)).breaking()
        except Exception:  # (a change that makes the schema invalid)
            continue
        if not breaking:
            assert replayed(old, new, rng) is None, (old, new)


def test_the_replays_find_what_the_rules_call_breaking():
    """The other way round, the check is not vacuous: breaking changes that old calls and answers meet
    are found by the same replay."""
    old = [ITEM, fn({"i": "struct.Item", "n": "number"}, {"r": "integer"}), fn({"s": "string"}, name="fn.g")]
    selected = [ITEM, fn({}, {"i": "struct.Item", "n!": "number"}), fn({"s": "string"}, name="fn.g")]
    for new in ([{"struct.Product": ITEM["struct.Item"]}, fn({}, {"i": "struct.Product", "n!": "number"}),
                 fn({"s": "string"}, name="fn.g")],
                [ITEM, fn({}, {"i": "struct.Item"}), fn({"s": "string"}, name="fn.g")]):
        assert compare(load(selected), load(new)).breaking()
        assert replayed(selected, new, random.Random(1), calls=4) is not None, new
    for new in ([ITEM, fn({"i": "struct.Item", "n": "integer"}, {"r": "integer"}), fn({"s": "string"}, name="fn.g")],
                [ITEM, fn({"i": "struct.Item", "n": "number"}, {"r": "number"}), fn({"s": "string"}, name="fn.g")],
                [ITEM, fn({"i": "struct.Item", "n": "number", "m": "string"}, {"r": "integer"}),
                 fn({"s": "string"}, name="fn.g")]):
        assert compare(load(old), load(new)).breaking()
        assert replayed(old, new, random.Random(1), calls=40) is not None, new


def test_the_readme_states_the_rules_the_code_walks():
    """reference/README.md's table is RULES, row for row: neither can change without the other."""
    readme = (Path(compatibility.__file__).parent.parent / "README.md").read_text()
    table = readme.split("| Rule | Side | Level | What an old client meets | Example |\n| --- | --- | --- | --- | --- |\n")[1]
    rows = table.split("\n\n")[0].splitlines()
    assert rows == [f"| `{rule}` | {side} | {level} | {meets} | {example} |"
                    for rule, (side, level, meets, example) in RULES.items()]


def test_the_random_changes_replayed_are_many():
    """(So that the soundness test above replays compatible changes, not only refuses breaking ones.)"""
    compatible = 0
    for seed in range(30):
        rng = random.Random(seed)
        old = random_schema(rng)
        for _ in range(6):
            new = mutated(old, rng)
            try:
                compatible += not compare(load(old), load(new)).breaking()
            except Exception:
                continue
    assert compatible >= 30
