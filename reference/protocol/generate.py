"""Generation: random values of any schema type, for the mock server and for examples.

How this works
--------------
`generate(type, context)` mirrors `validate.check`: one small function per
kind in the `GENERATORS` table, recursing through arrays, maps, structs and
unions; the context holds the random source and the options.

Every value comes from `Random`, a seeded 32-bit xorshift generator, drawn in
a fixed order, so a seed always gives the same values (the other
implementation's too, draw for draw):

- struct fields in name order; a coin leaves an optional field out (or the
  option says always or never), and a required one too where the context
  says so (in a mock's calls and stubs);
- `T?` is null when a coin says so, before anything else is drawn;
- integer: a non-negative 31-bit number; number: a fraction in [0, 1];
  string: one of 24 Greek letter names; bytes: four bytes; any: a boolean,
  an integer or a string;
- an array or map draws its length, then its elements (keys are strings);
- a union, or an `fn.X` call, draws one of its tags in name order;
- an `_ext.` type generates its own values: a selection tosses a coin for
  each thing the answered function offers to select, in name order (select.py).

`examples()` serves `fn.api_ {includeExamples!: true}` the same way: seed 1,
every optional field, collections of two.
"""

from . import blobs
from .limits import MAX_GENERATED_DEPTH, MAX_VALUES
from .types import Type

WORDS = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "omicron", "pi", "rho", "sigma", "tau", "upsilon", "phi",
         "chi", "psi", "omega")


def int32(value):
    """`value` wrapped to a signed 32-bit integer, as C would store it."""
    return (value + 2**31) % 2**32 - 2**31


class Random:
    """A seeded 32-bit xorshift generator; seeds 0 and 1 give the same sequence."""

    def __init__(self, seed=0):
        self.seed(seed)

    def seed(self, seed):
        self.state = 1 if seed == 0 else int32(seed)

    def next_int(self):
        x = self.state
        x = int32(x ^ (x << 16))
        x = int32(x ^ (x >> 11))  # >> on a negative int shifts in sign bits, as in C
        x = int32(x ^ (x << 5))
        self.state = x or 1
        return self.state & 0x7FFFFFFF

    def below(self, ceiling):
        return self.next_int() % ceiling if ceiling else 0

    def boolean(self):
        return self.below(31) > 15

    def number(self):
        return (self.next_int() & 0x7FFFFFFF) / 0x7FFFFFFF

    def string(self):
        return WORDS[self.below(24)]

    def bytes(self):
        return self.next_int().to_bytes(4, "big")


class Context:
    """Where values come from and how they are shaped, with a budget that keeps them finite.

    `function` is the function being answered: what a selection may name
    depends on it. A recursive type can describe values of any size (a
    union.Expression whose tags mostly hold two more expressions has a fair
    chance of never ending). Once `budget` values have been made, or the
    nesting reaches `MAX_DEPTH` (deeper than the other implementation can go
    before its stack overflows), everything left is made as small as it can
    be: null where allowed, empty collections, no optional fields, and the
    union tag with the shallowest smallest value (see `Struct.height`). Values
    that fit the budget are not affected at all.

    `optional` says whether optional fields are made ("all", "none", or
    "random": a coin decides), `every_required` whether every required field
    is (a mock's calls and stubs leave some out, a coin deciding each)."""

    def __init__(self, random, optional="random", length=(0, 3), function=None, budget=MAX_VALUES):
        self.random, self.optional, self.length, self.function = random, optional, length, function
        self.left, self.depth = budget, 0
        self.every_required = True

    @property
    def exhausted(self):
        return self.left <= 0 or self.depth >= MAX_GENERATED_DEPTH

    def count(self):
        if self.exhausted:
            return 0
        low, high = self.length
        return low + self.random.below(high - low)


def generate(type_, context):
    """A random value of `type_`."""
    if type_.nullable and (context.exhausted or context.random.boolean()):
        return None
    context.left -= 1
    context.depth += 1
    value = GENERATORS[type_.kind](type_, context)
    context.depth -= 1
    return value


def generate_any(type_, context):
    choice = context.random.below(3)
    return (context.random.boolean, context.random.next_int, context.random.string)[choice]()


def generate_array(type_, context):
    return [generate(type_.of, context) for _ in range(context.count())]


def generate_map(type_, context):
    return {context.random.string(): generate(type_.of, context) for _ in range(context.count())}


def generate_fields(struct, context):
    """A random object holding the fields of `struct`."""
    value = {}
    for name in sorted(struct.fields):
        if name.endswith("!"):
            if context.optional == "none" or context.exhausted or (
                    context.optional == "random" and context.random.boolean()):
                continue
        elif not context.every_required and (context.exhausted or context.random.boolean()):
            continue
        value[name] = generate(struct.fields[name], context)
    return value


def generate_tags(union, context):
    """A random value of `union`: one of its tags, with its fields."""
    tags = sorted(union.tags)
    if context.exhausted:
        tag = min(tags, key=lambda t: (union.tags[t].height is None, union.tags[t].height or 0))
    else:
        tag = tags[context.random.below(len(tags))]
    return {tag: generate_fields(union.tags[tag], context)}


GENERATORS = {
    "boolean": lambda type_, context: context.random.boolean(),
    "integer": lambda type_, context: context.random.next_int(),
    "number": lambda type_, context: context.random.number(),
    "string": lambda type_, context: context.random.string(),
    "bytes": lambda type_, context: context.random.bytes(),
    "any": generate_any,
    "array": generate_array,
    "map": generate_map,
    "struct": lambda type_, context: generate_fields(type_.of, context),
    "union": lambda type_, context: generate_tags(type_.of, context),
    "fn": lambda type_, context: generate_tags(type_.of, context),
    "ext": lambda type_, context: type_.of.generate(context),
}


def examples(schema, include_internal):
    """The `fn.api_` entries, each with example values added (bytes as base64 text)."""
    names = sorted(schema.functions, key=lambda name: (name.endswith("_"), name))
    scope = schema.functions[names[0]]  # what selections in examples select from
    return [{**entry, **blobs.mark(_example(schema, key, scope))[0]}
            for key, entry, internal in schema.entries if include_internal or not internal]


def _example(schema, key, scope):
    kind, target = key.split(".")[0], schema.definition(key)
    context = Context(Random(1), "all", (2, 2), target if kind == "fn" else scope)
    if kind == "fn":
        return {"inputExample": generate_tags(target.call, context),
                "outputExample": generate_tags(target.result, context)}
    if kind == "headers":
        return {"inputExample": generate_fields(target[0], context),
                "outputExample": generate_fields(target[1], context)}
    if kind == "struct":
        return {"example": generate_fields(target, context)}
    if kind in ("union", "errors"):
        return {"example": generate_tags(target, context)}
    if kind == "_ext":
        return {"example": generate(Type("ext", False, target), context)}
    return {"example": {}}
