"""Values of a schema's types, made at random for the fuzzer: valid ones, and ones with one thing wrong.

How this works
--------------
`Maker(schema, rng).make(type_)` mirrors `Schema.problems` (language/schema.py): for
each kind it makes a value that check accepts, reaching for the edges (0,
the 64-bit bounds, fractions, empty and long strings and arrays, optional
fields left out and null where null is allowed), and within a budget of
depth and size, so that recursive types end. `wrongs(value, type_)` lists the
ways to make a valid value wrong in exactly one place, each with the path of
the case a server must report and its reason: a value of another type, a
required field left out, a field the type lacks, an integer past 64 bits,
text that is not base64 for bytes, a union value with two tags.
`smaller(value, type_)` lists simpler valid values of the same type, for
shrinking a failing call. For MessagePack, `as_bytes` makes bytes of base64
text, `as_text` undoes it, and `with_ids` writes names as the encoding's ids.
"""

import base64
import os
import string

from ..language.decoding import PLAIN
from ..language.schema import INT64

EDGES = {  # values every run tries first, by kind
    "integer": [0, 1, -1, INT64[0], INT64[1], 2**53 + 1],
    "number": [0, -1.5, 0.1, 1e300, INT64[1], -(2**53) - 1],
    "string": ["", "a", "ü€😀", " " * 3, "\\\"\n", "\x00", "nul\x00inside", "\x01\x07\x1b\x7f\x9f", "\u2028\ufeff"],
}
CONTROLS = "\x00\t\n\r\x1f\x7f"  # one in a made text now and then: what a handler may break on
OWN = {"@auth_", "@select_", "@bin_", "@pac_"}  # request headers sent for checks of their own (fuzzer.py)
MEANT = {  # request headers whose values change what a right answer is: only values that do not
    "@unsafe_": lambda rng: False,  # (true asks the server not to check its results, which the checks judge)
    "@time_": lambda rng: rng.randint(1000, 60_000),  # (a client's timeout: one too short may be refused)
}
OTHERS = [True, 7, 2.5, "text", [1], {"k": 1}]  # one value of each JSON type, for "a value of another type"
ACCEPTS = {"boolean": (bool,), "integer": (int,), "number": (int, float), "string": (str,)}


RUN = os.urandom(3).hex()  # what makes a run's new texts (`unique`) new to a target an earlier run left
MOST = 10_000  # values one call may hold: past the budget only required fields are made, and they may not end


class TooLarge(Exception):
    """No valid value of a type holds at most MOST values within 100 levels (a struct requiring itself, or
    structs each requiring two of the next): no call of it can be made."""


class Maker:
    """Random valid values of a schema's types, within `depth` levels and `budget` values each (or raise
    TooLarge)."""

    def __init__(self, schema, rng, depth=6, budget=200, binary=False):
        self.schema, self.rng, self.depth, self.budget, self.binary = schema, rng, depth, budget, binary

    def make(self, type_, level=0):
        """A value of `type_`: null sometimes where allowed, else one of its kind."""
        self.budget -= 1
        deep = level >= self.depth or self.budget <= 0
        if type_.nullable and (deep or self.rng.random() < 0.15):
            return None
        if level > self.depth + 100 or self.budget < -MOST:
            raise TooLarge(f"a valid {type_.of or type_.kind} holds over {MOST:,} values or "
                           f"{self.depth + 100} levels")
        return MAKERS[type_.kind](self, type_, level)

    def headers(self, declared):
        """Some of the request headers `declared` (by name), each by a coin, a value of its type (those in
        MEANT, of what they mean): every header the schema and the protocol declare, but OWN."""
        return {name: MEANT[name](self.rng) if name in MEANT else self.make(type_, 1)
                for name, type_ in sorted(declared.items()) if name not in OWN and self.rng.random() < 0.4}

    def fields(self, fields, level):
        """An object of `fields`: every required one, and each optional one by a coin (none when deep)."""
        shallow = level < self.depth and self.budget > 0
        return {name: self.make(type_, level + 1) for name, type_ in fields.items()
                if not name.endswith("!") or (shallow and self.rng.random() < 0.5)}

    def count(self, level):
        return 0 if level >= self.depth or self.budget <= 0 else self.rng.choice([0, 1, 1, 2, 3, 5])

    def scalar(self, kind):
        rng = self.rng
        if kind in EDGES and rng.random() < 0.3:
            return rng.choice(EDGES[kind])
        if kind == "integer":
            return rng.randint(-1000, 1000)
        if kind == "number":
            return rng.choice([rng.randint(-1000, 1000), round(rng.uniform(-1e6, 1e6), 3)])
        if kind == "string":
            text = "".join(rng.choice(string.ascii_letters + " é") for _ in range(rng.choice([0, 3, 8, 40])))
            if rng.random() < 0.25:  # (a control character somewhere, U+0000 most often)
                where = rng.randint(0, len(text))
                text = text[:where] + rng.choice("\x00\x00\x00" + CONTROLS) + text[where:]
            return text
        if kind == "bytes":
            data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 3, 16])))
            return data if self.binary else base64.b64encode(data).decode()
        if kind == "any":  # (a value of every JSON kind, and their edges)
            return rng.choice([1, "x", True, False, [1, "y"], {"k": [None]}, 2.5, 0, -1, 2**53, -1e300, "",
                               "ü\x00", [], {}, {"a": {"b": [1.5, "c", False]}}])  # (integers an `any` keeps
            # in every language: up to 2**53)
        return rng.random() < 0.5  # boolean


def _tag(maker, type_, level):
    """A union's value (or a call): a tag at random, or, deep down, one of those that nest least."""
    tags = maker.schema.struct(type_)
    names = sorted(tags)
    if level >= maker.depth or maker.budget <= 0:
        least = min(map(_nesting, tags.values()))
        names = [name for name in names if _nesting(tags[name]) == least]
    tag = maker.rng.choice(names)
    return {tag: maker.fields(tags[tag], level)}


def _nesting(fields):
    """How many of `fields` must hold a struct, union or call: what a value of them nests at least."""
    return sum(not name.endswith("!") and not type_.nullable and type_.kind in ("struct", "union", "fn")
               for name, type_ in fields.items())


def _ext(maker, type_, level):
    """A mock's call (`fn.X` and its arguments) or stub (the call and `->` with an Ok_), of one of the service's
    own functions; a selection of nothing."""
    own = sorted(name for name, function in maker.schema.functions.items() if not function.internal)
    if type_.of not in ("_ext.Call_", "_ext.Stub_") or not own:
        return {}
    function = maker.schema.functions[maker.rng.choice(own)]
    made = {function.name: maker.fields(function.arguments, level + 1)}
    return made if type_.of == "_ext.Call_" else {**made, "->": {"Ok_": maker.fields(function.results["Ok_"], level + 1)}}


MAKERS = {
    **{kind: lambda maker, type_, level: maker.scalar(type_.kind)
       for kind in ("boolean", "integer", "number", "string", "bytes", "any")},
    "array": lambda maker, type_, level: [maker.make(type_.of, level + 1) for _ in range(maker.count(level))],
    "map": lambda maker, type_, level: {f"k{i}": maker.make(type_.of, level + 1) for i in range(maker.count(level))},
    "struct": lambda maker, type_, level: maker.fields(maker.schema.struct(type_), level),
    "union": _tag,
    "fn": _tag,
    "ext": _ext,
}


def wrongs(schema, value, type_, path=()):
    """Every way to make `value` (valid) wrong in one place: (the wrong value, the case's path, its reason)."""
    found = []
    if type_.kind != "any":  # (anything is an any but null)
        found += [(other, path, "TypeUnexpected") for other in OTHERS if not _fits(schema, other, type_)][:2]
    if not type_.nullable:
        found.append((None, path, "TypeUnexpected"))
    if value is None:
        return found
    if type_.kind in ("integer", "number") and type(value) in (int, float):
        found.append((INT64[1] + 1, path, "NumberOutOfRange"))
    if type_.kind == "bytes" and type(value) is str:  # (text, but not base64: a validator too lax takes it)
        found.append(("not base64!", path, "TypeUnexpected"))
    if type_.kind in ("array", "map") and value:
        items = list(enumerate(value)) if type_.kind == "array" else list(value.items())
        for key, element in items[:2]:
            found += [(_put(value, key, wrong), where, reason)
                      for wrong, where, reason in wrongs(schema, element, type_.of, (*path, key))]
    if type_.kind == "struct":
        found += object_wrongs(schema, value, schema.struct(type_), path)
    if type_.kind in ("union", "fn"):
        tags = schema.struct(type_)
        [(tag, fields)] = value.items()
        found += [({**value, **{other: {}}}, path, "ObjectSizeUnexpected") for other in sorted(tags) if other != tag][:1]
        found += [({tag: wrong}, where, reason) for wrong, where, reason in
                  object_wrongs(schema, fields, tags[tag], (*path, tag))]
    return found


def object_wrongs(schema, value, fields, path):
    """The ways to make an object of `fields` wrong in one place."""
    found = [({**value, "unknownField": 1}, (*path, "unknownField"), "ObjectKeyDisallowed")]
    found += [({k: v for k, v in value.items() if k != name}, path, "RequiredObjectKeyMissing")
              for name in value if not name.endswith("!")]
    for name, element in value.items():
        found += [({**value, name: wrong}, where, reason)
                  for wrong, where, reason in wrongs(schema, element, fields[name], (*path, name))]
    return found


def _put(container, key, element):
    if type(container) is list:
        return [element if index == key else item for index, item in enumerate(container)]
    return {**container, key: element}


def _fits(schema, value, type_):
    """Whether a value of OTHERS is already of `type_` (so it is no wrong value for it)."""
    if type_.kind in ACCEPTS:
        return type(value) in ACCEPTS[type_.kind]
    return schema.holds(value, type_)


def smaller(schema, value, type_):
    """Simpler valid values of `type_` than `value`, the simplest first."""
    if value is None:
        return []
    kind = type_.kind
    if kind in ("integer", "number"):  # toward 0: halved, then ever closer to the value (a bound in log steps)
        steps = [value - value // 2**k if type(value) is int else round(value - value / 2**k, 3) for k in range(1, 7)]
        whole = int(value) if type(value) is float and value.is_integer() is False and abs(value) < 2**53 else 0
        return list(dict.fromkeys(v for v in (0, 1, *steps, whole, value - 1 if value > 0 else value + 1)
                                  if v != value and abs(v) < abs(value) + 1))
    if kind in ("string", "bytes"):
        return [""] if value else []
    if kind == "array":  # emptied, halved, one element fewer (any one), or one element simpler
        fewer = [value[:1], value[:len(value) // 2], *(value[:i] + value[i + 1:] for i in range(len(value)))]
        return ([[]] if value else []) + [v for i, v in enumerate(fewer) if 0 < len(v) < len(value) and v not in fewer[:i]] + [
            _put(value, i, simpler) for i, element in enumerate(value) for simpler in smaller(schema, element, type_.of)]
    if kind == "map":
        return ([{}] if value else []) + [
            {**value, key: simpler} for key, element in value.items() for simpler in smaller(schema, element, type_.of)]
    if kind == "struct":
        return smaller_fields(schema, value, schema.struct(type_))
    if kind in ("union", "fn"):
        [(tag, fields)] = value.items()
        return [{tag: simpler} for simpler in smaller_fields(schema, fields, schema.struct(type_)[tag])]
    return []


def smaller_fields(schema, value, fields):
    """Simpler objects of `fields`: an optional field left out, or one field's value simpler."""
    found = [{k: v for k, v in value.items() if k != name} for name in value if name.endswith("!")]
    return found + [{**value, name: simpler} for name, element in value.items() if name in fields
                    for simpler in smaller(schema, element, fields[name])]


def as_bytes(schema, value, fields):
    """An object of `fields` with its bytes values, made as base64 text, as bytes (for MessagePack)."""
    return {name: _bytes(schema, element, fields[name]) if name in fields else element
            for name, element in value.items()}


def as_text(value):
    """A decoded value with its bytes (and {"$bin": ...} notation) as base64 text: as_bytes undone, so that
    the two wires' answers compare."""
    if type(value) is dict:
        if len(value) == 1 and "$bin" in value:
            return value["$bin"]
        return {key: element if type(element) in PLAIN else as_text(element) for key, element in value.items()}
    if type(value) is list:
        return [element if type(element) in PLAIN else as_text(element) for element in value]
    return base64.b64encode(value).decode() if type(value) is bytes else value


def with_ids(value, ids):
    """A body with every map key the encoding knows as its id, at any depth."""
    if isinstance(value, dict):
        return {ids.get(key, key): with_ids(element, ids) for key, element in value.items()}
    return [with_ids(element, ids) for element in value] if isinstance(value, list) else value


def _bytes(schema, value, type_):
    if value is None:
        return None
    if type_.kind == "bytes":
        return base64.b64decode(value)
    if type_.kind in ("array", "map"):
        return ([_bytes(schema, e, type_.of) for e in value] if type_.kind == "array"
                else {k: _bytes(schema, e, type_.of) for k, e in value.items()})
    if type_.kind == "struct":
        return as_bytes(schema, value, schema.struct(type_))
    if type_.kind in ("union", "fn"):
        [(tag, fields)] = value.items()
        return {tag: as_bytes(schema, fields, schema.struct(type_)[tag])}
    return value


def unique(value, rng):
    """`value` with every text and integer in it made new: the run's own, which no earlier call used."""
    if isinstance(value, str):  # (the run's own: a seed made again meets the names its last run left)
        return f"fuzz-{RUN}-{rng.getrandbits(40):010x}"
    if type(value) is int:
        return rng.randrange(10**9, 10**12)
    if isinstance(value, dict):
        return {key: unique(element, rng) for key, element in value.items()}
    return [unique(element, rng) for element in value] if isinstance(value, list) else value
