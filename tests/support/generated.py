"""Schemas, values and requests made at random from a seed, for the tests that hold two walks to one
answer: the engine room to the core, and every answer to the schema it is of."""

import contextlib
import json
import random

import msgpack

from reference import SchemaError, load
from reference.protocol import blobs, codec
from reference.protocol.generate import Context, Random, generate
from reference.protocol.types import Type, Union, reachable

SCALARS = ["boolean", "integer", "number", "string", "bytes", "any", "_ext.Select_"]


def random_schema(rng):
    """A random schema of structs, unions and functions that refer to each other in every way."""
    names = [f"struct.S{i}" for i in range(rng.randint(0, 3))] + [f"union.U{i}" for i in range(rng.randint(0, 3))]
    functions = [f"fn.f{i}" for i in range(rng.randint(1, 3))]

    def type_(depth=0):
        pick = rng.random()
        if pick < 0.15 and depth < 2:
            return [type_(depth + 1)]
        if pick < 0.25 and depth < 2:
            return {"string": type_(depth + 1)}
        return rng.choice(SCALARS + names + functions) + ("?" if rng.random() < 0.25 else "")

    def fields():
        chosen = rng.sample(["a", "b", "c", "d", "x1", "yY"], rng.randint(0, 4))
        return {name + ("!" if rng.random() < 0.5 else ""): type_() for name in chosen}

    entries = [{name: fields()} if name.startswith("struct.")
               else {name: [{tag: fields()} for tag in rng.sample("ABCD", rng.randint(1, 3))]} for name in names]
    entries += [{name: fields(), "->": [{"Ok_": fields()}, {"ErrorF": fields()}],
                 **({"$authenticated": False} if rng.random() < 0.5 else {})} for name in functions]
    if rng.random() < 0.3:
        entries.append({"union.Auth_": [{"Token": {"t": "string"}}]})
    if rng.random() < 0.3:
        entries.append({"headers.H": {"@h": type_()}, "->": {"@r": type_()}})
    return entries


def loaded(seed):
    """A random schema that loads (its seed drawn again until one does)."""
    rng = random.Random(seed)
    while True:
        try:
            return load(random_schema(rng)), rng
        except SchemaError:
            continue


ODD = [None, True, 0, -1, 2**63, 1.5, "", "AQ==", "!!", [], {}, [1, "a"], {"x": 1}, {"Ok_": {}}]


def mutated(value, rng):
    """`value` with one part of it replaced by something of another kind, or left as it is."""
    if rng.random() < 0.4:
        return value
    if type(value) is dict and value and rng.random() < 0.7:
        key = rng.choice(list(value))
        changed = dict(value)
        if rng.random() < 0.2:
            del changed[key]
        else:
            changed[key] = mutated(value[key], rng)
        return changed
    if type(value) is list and value and rng.random() < 0.7:
        index = rng.randrange(len(value))
        return value[:index] + [mutated(value[index], rng)] + value[index + 1:]
    return rng.choice(ODD)


def values_of(type_, function, rng, count=6):
    """Valid values of `type_` (their bytes as base64 text, as on the JSON wire), and broken ones."""
    made = []
    for _ in range(count):
        context = Context(Random(rng.randrange(1, 2**31)), length=(0, 3), function=function, budget=200)
        value = blobs.mark(generate(type_, context))[0]
        made += [value, mutated(value, rng)]
    return made


def inner(node):
    for inner in reachable(node):
        for type_ in ([] if isinstance(inner, Union) else inner.fields.values()):
            while type_.kind in ("array", "map"):
                type_ = type_.of
            yield type_


def steered(arguments, headers):
    """A handler the request steers, as the testbed's is: `@result`, `@responseHeaders`."""
    result = headers.get("@result", {"Ok_": {}})
    return (headers["@responseHeaders"], result) if "@responseHeaders" in headers else result


def requests(schema, rng, plain):
    """Requests to `schema`'s service: valid and broken calls, each with a mix of stock headers,
    a result for the handler to answer (valid or not), and some bytes that are no message."""
    names = sorted(schema.functions)
    made = [b"", b"[", b"[{}, {}]", b'[{}, {"fn.f0": 1}]', b'[{"@id_": "\\ud800"}, {"fn.f0": {}}]',
            b"[" * 1100 + b"]" * 1100]
    for _ in range(12):
        name = rng.choice(names + ["fn.nope"])
        function = schema.functions.get(name) or schema.functions["fn.ping_"]
        call = values_of(Type("union", False, function.call), function, rng, 1)[rng.randrange(2)]
        arguments = next(iter(call.values())) if type(call) is dict and len(call) == 1 else {}
        headers = {}
        if rng.random() < 0.5:
            headers["@id_"] = rng.choice([1, "x", None, [1], {"a": {}}])
        if rng.random() < 0.7:
            result = Type("union", False, function.result)
            headers["@result"] = values_of(result, function, rng, 1)[rng.randrange(2)]
        if rng.random() < 0.2:
            headers["@responseHeaders"] = rng.choice([{"@r": 1}, {"@r": "x"}, {"bad": 1}, {"@any": [1]}])
        if rng.random() < 0.2:
            headers["@unsafe_"] = rng.choice([True, False, 1])
        if rng.random() < 0.3:
            context = Context(Random(rng.randrange(1, 2**31)), function=function)
            headers["@select_"] = schema.definition("_ext.Select_").generate(context) if rng.random() < 0.8 else []
        if rng.random() < 0.2:
            headers["@bin_"] = rng.choice([[], [plain.encoding.checksum], [1]])
        if rng.random() < 0.3:
            headers["@auth_"] = rng.choice([{"X": {}}, {"Token": {"t": "a"}}])
        if rng.random() < 0.2:
            headers["@pac_"] = rng.choice([True, True, False, 1])
        made.append(json.dumps([headers, {name: arguments}]).encode())
        if rng.random() < 0.3:  # the same call in MessagePack, from a client that has the checksum
            with contextlib.suppress(codec.Unwritable):
                made.append(codec.encode([{**headers, "@bin_": [plain.encoding.checksum]}, {name: arguments}],
                                         plain.encoding))
    return made + [msgpack.packb(message) for message in odd_binary(plain.encoding.checksum)]


def odd_binary(checksum):
    """MessagePack messages a reader must look at twice: keys of every kind, values JSON lacks."""
    return [[{"@bin_": [checksum]}, {True: {}}], [{"@bin_": [checksum]}, {-1: {}}], [{"@bin_": [checksum]}, {1.0: {}}],
            [{"@bin_": [checksum]}, {"fn.ping_": {True: 1}}], [{"@bin_": [checksum], 5: 1}, {"fn.ping_": {}}],
            [{"@bin_": [checksum]}, {"fn.ping_": {"x": float("nan")}}], [{"@bin_": [checksum + 1]}, {"fn.ping_": {}}],
            [{"@bin_": [checksum]}, {"fn.ping_": {"x": msgpack.ExtType(17, b"")}}], [{"@bin_": checksum}, {}],
            [{"@bin_": [checksum], "@pac_": True}, {"fn.ping_": {}}], [{"@bin_": [checksum]}, {"fn.ping_": []}]]
