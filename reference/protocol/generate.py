"""Generation: random values of any schema type, for the mock server and for examples.

How this works
--------------
`generate(type, context)` mirrors `validate.check`: one small function per
kind in `GENERATORS`. Every value comes from `Random`, a seeded 32-bit
xorshift generator, drawn in a fixed order, so a seed always gives the same
values, the other implementation's too (conformance/PROTOCOL.md, section 10,
tells every draw): struct fields in name order, a coin before an optional
field; a coin before `T?`; an array's or map's length, then its elements; a
union's tag among its tags in name order; an `_ext.` type's own draws.

A budget keeps every answer within MAX_VALUES values, recursive types and
wide ones alike. Each value's smallest size (types.sizes) is paid before it
is made, its required fields included; anything more it could hold (an
optional field, a value for `T?`, an element, a costlier tag) is drawn for
only if its own smallest size can be paid from what is left, and within
MAX_GENERATED_DEPTH levels: else it is left out, or the cheapest tag taken.
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


class OverBudget(Exception):
    """The smallest value wanted holds more values than the budget has left."""


class Context:
    """Where values come from, how they are shaped, and what is left of the budget.

    `optional` says whether optional fields are made ("all", "none", or "random":
    a coin decides), `every_required` whether every required field is (a mock's
    calls and stubs leave some out, a coin deciding each), and `function` is the
    one being answered, whose results a selection may name."""

    def __init__(self, random, optional="random", length=(0, 3), function=None, budget=MAX_VALUES):
        self.random, self.optional, self.length, self.function = random, optional, length, function
        self.left, self.depth = budget, 0
        self.every_required = True

    def affords(self, type_):
        """Whether the smallest value of `type_` can be paid for here."""
        return smallest(type_) <= self.left and self.depth < MAX_GENERATED_DEPTH

    def pay(self, type_):
        self.left -= smallest(type_)


def smallest(type_):
    """How many values the smallest value of `type_` holds: 0 for null, 1 for a scalar or an empty
    array or map, 1 and its fields' for a struct, union or call."""
    return 0 if type_.nullable else 1 + type_.of.size if type_.kind in ("struct", "union", "fn") else 1


def make(type_, context):
    """A random value of `type_`, paid for out of the context's budget (OverBudget if it cannot be)."""
    if not context.affords(type_):
        raise OverBudget(f"the smallest value holds {smallest(type_)} values, over the {context.left} left")
    context.pay(type_)
    return generate(type_, context)


def generate(type_, context):
    """A random value of `type_`, whose smallest value is paid for already."""
    if type_.nullable:
        type_ = type_._replace(nullable=False)
        if not context.affords(type_) or context.random.boolean():
            return None
        context.pay(type_)
    context.depth += 1
    value = GENERATORS[type_.kind](type_, context)
    context.depth -= 1
    return value


def generate_any(type_, context):
    choice = context.random.below(3)
    return (context.random.boolean, context.random.next_int, context.random.string)[choice]()


def generate_array(type_, context):
    return [generate(type_.of, context) for _ in range(_length(type_.of, context))]


def generate_map(type_, context):
    return {context.random.string(): generate(type_.of, context) for _ in range(_length(type_.of, context))}


def _length(element, context):
    """How many elements an array or map gets: the length drawn, then as many as can be paid for."""
    if not context.affords(element):
        return 0
    low, high = context.length
    drawn = low + context.random.below(high - low)
    for count in range(drawn):
        if not context.affords(element):
            return count
        context.pay(element)
    return drawn


def generate_fields(struct, context):
    """A random object holding the fields of `struct` (its required ones paid for already)."""
    value = {}
    for name in sorted(struct.fields):
        type_ = struct.fields[name]
        if not name.endswith("!") and context.every_required:
            value[name] = generate(type_, context)
        elif _chosen(name, type_, context):
            context.pay(type_)
            value[name] = generate(type_, context)
    return value


def _chosen(name, type_, context):
    """Whether a field that may be left out is made: the options, the budget, else a coin decide."""
    if (name.endswith("!") and context.optional == "none") or not context.affords(type_):
        return False
    if name.endswith("!") and context.optional == "all":
        return True
    return not context.random.boolean()  # an optional field, or a required one in a call or stub


def generate_tags(union, context):
    """A random value of `union`: one of its tags (its cheapest paid for already), with its fields."""
    tags = sorted(union.tags)
    costliest = max(union.tags[tag].size for tag in tags) - union.size
    if costliest > context.left or context.depth >= MAX_GENERATED_DEPTH:
        tag = min(tags, key=lambda t: union.tags[t].size)
    else:
        tag = tags[context.random.below(len(tags))]
        context.left -= union.tags[tag].size - union.size
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
    """The `fn.api_` entries, each with example values added (bytes as base64 text), all of them
    within one budget: an entry whose smallest example does not fit what is left gets none."""
    names = sorted(schema.functions, key=lambda name: (name.endswith("_"), name))
    scope, left, found = schema.functions[names[0]], MAX_VALUES, []  # what selections select from
    for key, entry, internal in schema.entries:
        if include_internal or not internal:
            kind, target = key.split(".")[0], schema.definition(key)
            context = Context(Random(1), "all", (2, 2), target if kind == "fn" else scope, left)
            try:
                found.append({**entry, **blobs.mark(EXAMPLES.get(kind, _empty)(target, context))[0]})
                left = context.left
            except OverBudget:
                found.append(entry)
    return found


def _empty(target, context):
    return {"example": {}}


EXAMPLES = {  # what an entry's example is, by its kind
    "fn": lambda target, context: {"inputExample": make(Type("union", False, target.call), context),
                                   "outputExample": make(Type("union", False, target.result), context)},
    "headers": lambda target, context: {"inputExample": make(Type("struct", False, target[0]), context),
                                        "outputExample": make(Type("struct", False, target[1]), context)},
    "struct": lambda target, context: {"example": make(Type("struct", False, target), context)},
    "union": lambda target, context: {"example": make(Type("union", False, target), context)},
    "errors": lambda target, context: {"example": make(Type("union", False, target), context)},
    "_ext": lambda target, context: {"example": make(Type("ext", False, target), context)},
}
