"""Generation: the seeded random source, valid values of every type, and fn.api_ examples."""

import pytest

from reference import load
from reference.protocol.generate import Context, OverBudget, Random, examples, generate, generate_fields, make
from reference.protocol.limits import MAX_VALUES
from reference.protocol.types import Type
from reference.protocol.validate import check, check_fields
from reference.services import calculator


def test_the_random_source_reproduces_the_other_implementation():
    """Seeds 0 and 1 give the same sequence, and the observed values come out in order."""
    one, zero = Random(1), Random(0)
    assert [one.number() for _ in range(3)] == [
        0.001007557381413671, 0.0014801179065742148, 0.016654991086877412]
    assert [zero.number() for _ in range(3)] == [
        0.001007557381413671, 0.0014801179065742148, 0.016654991086877412]
    assert Random(42).number() == 0.042317410019374176


SCHEMA = load([
    {"fn.all": {"b": "boolean", "i": "integer", "n": "number", "s": "string", "y": "bytes", "a": "any",
                "ni": "integer?", "arr": ["integer?"], "map": {"string": "bytes"}, "st": "struct.Pair",
                "un": "union.Shape", "call": "fn.ping2", "tree": "union.Tree", "opt!": "string?"},
     "->": [{"Ok_": {}}]},
    {"fn.ping2": {"note!": "string"}, "->": [{"Ok_": {}}]},
    {"struct.Pair": {"left": "integer", "right": "string?"}},
    {"union.Shape": [{"Circle": {"r": "number"}}, {"Empty": {}}]},
    {"union.Tree": [{"Leaf": {}}, {"Node": {"children": ["union.Tree"]}}]},
])


@pytest.mark.parametrize("seed", range(50))
@pytest.mark.parametrize("optional", ["random", "all", "none"])
def test_generated_values_are_valid_for_every_type(seed, optional):
    """Whatever the seed and options, what the generator makes passes the validator."""
    struct = SCHEMA.functions["fn.all"].arguments
    value = generate_fields(struct, Context(Random(seed), optional, (0, 3)))
    assert set(value) >= set(struct.required)
    assert ("opt!" in value) == {"all": True, "none": False}.get(optional, "opt!" in value)
    assert list(check_fields(value, struct, ())) == []


def test_collection_lengths_stay_in_range():
    """Array and map lengths are drawn from [low, high)."""
    context = Context(Random(7), "random", (2, 4))
    array = SCHEMA.functions["fn.all"].arguments.fields["arr"]
    assert {len(generate(array, context)) for _ in range(100)} == {2, 3}


def test_examples_are_the_ones_the_other_implementation_shows():
    """fn.api_ examples: a generator seeded with 1 per entry, every optional field, two elements."""
    api = {next(k for k in e if k[0] not in "/-$"): e for e in examples(load(calculator.entries()), True)}
    assert api["struct.Variable"]["example"] == {"name": "sigma", "value": 0.0014801179065742148}
    assert api["fn.add"]["inputExample"] == {"fn.add": {"x": 0.0014801179065742148, "y": 0.016654991086877412}}
    assert api["headers.Auth_"]["inputExample"] == {"@auth_": {"Session": {"token": "sigma"}}}
    assert api["fn.evaluate"]["outputExample"] == {"ErrorUnknownVariables": {"unknownVariables": ["sigma", "lambda"]}}
    assert api["fn.export"]["outputExample"] == {"Ok_": {"blob": "AiHAMQ=="}}
    assert api["info.Calculator"]["example"] == {}
    result = Type("union", False, load(calculator.entries()).functions["fn.api_"].result)
    assert list(check({"Ok_": {"api": list(api.values())}}, result)) == []


# The guide's generator (conformance/PROTOCOL.md, section 10), written from its words alone over
# the schema's JSON, makes the values the reference's does.

class Guide:
    """The value generator as the guide tells it, over a schema's entries."""

    WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
             "sigma tau upsilon phi chi psi omega").split()

    def __init__(self, entries, seed, function):
        self.named = {k: e for e in entries for k in e if k.split(".")[0] in ("struct", "union", "fn")}
        self.state = 1 if seed == 0 else self.wrap(seed)
        self.function = function

    @staticmethod
    def wrap(v):
        return (v + 2**31) % 2**32 - 2**31

    def next(self):
        x = self.state
        x = self.wrap(x ^ (x << 16))
        x = self.wrap(x ^ (x >> 11))
        x = self.wrap(x ^ (x << 5))
        self.state = x or 1
        return self.state & 0x7FFFFFFF

    def below(self, n):
        return self.next() % n if n else 0

    def coin(self):
        return self.below(31) > 15

    def value(self, expression):
        if type(expression) is list:
            return [self.value(expression[0]) for _ in range(self.below(3))]
        if type(expression) is dict:
            entries = {}
            for _ in range(self.below(3)):
                key = self.WORDS[self.below(24)]
                entries[key] = self.value(expression["string"])
            return entries
        if expression.endswith("?") and self.coin():
            return None
        name = expression.removesuffix("?")
        scalar = {"boolean": self.coin, "integer": self.next, "number": lambda: self.next() / 2147483647,
                  "string": lambda: self.WORDS[self.below(24)], "bytes": lambda: self.next().to_bytes(4, "big"),
                  "any": lambda: (self.coin, self.next, lambda: self.WORDS[self.below(24)])[self.below(3)]()}
        if name in scalar:
            return scalar[name]()
        if name == "_ext.Select_":
            return self.select(self.options())
        body = self.named[name][name]
        if name.startswith("struct."):
            return self.fields(body)
        if name.startswith("fn."):
            self.below(1)
            return {name: self.fields(body)}
        tags = sorted((t, f) for element in body for t, f in element.items() if t != "///")
        tag, fields = tags[self.below(len(tags))]
        return {tag: self.fields(fields)}

    def fields(self, body):
        made = {}
        for name in sorted(body):
            if name.endswith("!") and self.coin():
                continue
            made[name] = self.value(body[name])
        return made

    def options(self):
        """What the function may select: Ok_'s fields, and every struct and union its Ok_ reaches."""
        ok = self.named[self.function]["->"][0]["Ok_"]
        found, waiting = {"->": {"Ok_": sorted(ok)}}, list(ok.values())
        while waiting:
            expression = waiting.pop()
            while type(expression) in (list, dict):
                expression = expression[0] if type(expression) is list else expression["string"]
            name = expression.removesuffix("?")
            if name in found or name not in self.named:
                continue
            body = self.named[name][name]
            if name.startswith("union."):
                tags = {t: f for element in body for t, f in element.items() if t != "///"}
                found[name] = {t: sorted(f) for t, f in tags.items() if f}
                waiting += [e for f in tags.values() for e in f.values()]
            else:
                if name.startswith("struct.") and body:
                    found[name] = sorted(body)
                waiting += list(body.values())
        return found

    def select(self, option):
        if type(option) is list:
            return [name for name in sorted(option) if self.coin()]
        chosen = {}
        for key in sorted(option):
            if self.coin():
                inner = self.select(option[key])
                if inner != {}:
                    chosen[key] = inner
        return chosen


@pytest.mark.parametrize("seed", range(0, 400, 7))
def test_the_guides_generator_makes_the_mocks_values(seed):
    from conformance.tables import testbed as tables
    entries = tables.schema()
    schema = load(entries)
    function = schema.functions["fn.echo"]
    ours = generate_fields(function.result.tags["Ok_"], Context(Random(seed), "random", (0, 3), function))
    echo = next(entry for entry in entries if "fn.echo" in entry)
    assert Guide(entries, seed, "fn.echo").fields(echo["->"][0]["Ok_"]) == ours


# The budget: no answer holds more values than MAX_VALUES, whatever the schema.

def nodes(value):
    """Every value in `value` but nulls: containers and what they hold."""
    if type(value) in (dict, list):
        return 1 + sum(map(nodes, value.values() if type(value) is dict else value))
    return value is not None


WIDE = load([{"fn.wide": {"n!": "integer"}, "->": [{"Ok_": {"w": "struct.W"}}]},
             {"struct.W": {f"f{i}": "struct.V" for i in range(60)}},
             {"struct.V": {f"v{i}": "struct.U" for i in range(60)}},
             {"struct.U": {f"u{i}": "integer" for i in range(60)}},
             {"union.Tree": [{"Leaf": {"n": "integer"}}, {"Node": {"l": "union.Tree", "r": "union.Tree"}}]}])


def test_a_value_whose_smallest_form_is_over_the_budget_is_not_made():
    """Three levels of 60 required fields: the smallest value holds 219,660 values, so none is made."""
    with pytest.raises(OverBudget):
        make(Type("struct", False, WIDE.definition("struct.W")), Context(Random(1)))
    assert make(Type("struct", False, WIDE.definition("struct.U")), Context(Random(1), budget=61))


@pytest.mark.parametrize("budget", [2, 5, 50, 500, 10_000])
@pytest.mark.parametrize("seed", range(20))
def test_every_value_made_holds_at_most_the_budget_and_is_valid(budget, seed):
    """A recursive union, every optional field and long collections: still within the budget."""
    tree = Type("union", False, WIDE.definition("union.Tree"))
    value = make(tree, Context(Random(seed), "all", (0, 9), budget=budget))
    assert nodes(value) <= 2 * budget and not list(check(value, tree))  # a union's fields object adds one


def test_examples_share_one_budget_and_an_entry_too_large_has_none():
    api = {next(k for k in e if k[0] not in "/-$"): e for e in examples(WIDE, False)}
    assert "example" not in api["struct.W"] and "example" in api["struct.U"]
    assert nodes([e.get("example") for e in api.values()]) <= 2 * MAX_VALUES
