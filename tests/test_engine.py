"""The engine room changes no answer: each of its pieces, held to the plain core on generated
schemas and values, invalid ones included."""

import importlib
import json
import random
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference import SchemaError, engine, load, protocol
from reference.services import calculator, testbed
from reference import mocking
from reference.mocking import stubs
from reference.mocking.matching import Matching
from reference.engine.checks import Compiler
from reference.engine.trims import Trims
from reference.engine.scans import deeper, may_hold_surrogates
from reference.protocol import blobs, codec, select
from reference.protocol.generate import Context, Random, generate
from reference.protocol.types import KINDS, Type, Union, reachable
from reference.protocol.validate import check, check_fields, check_tags

SCALARS = ["boolean", "integer", "number", "string", "bytes", "any", "_ext.Select_"]
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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


@PROPERTY
@given(st.integers(0, 2**32))
def test_compiled_checks_say_yes_exactly_when_the_walk_finds_nothing(seed):
    schema, rng = loaded(seed)
    compiler = Compiler()
    for function in schema.functions.values():
        for node in (function.arguments, function.result):
            kinds = {type_.kind for inner in reachable(node) if not isinstance(inner, Union)
                     for type_ in inner.fields.values()}
            type_ = Type("union", False, node) if isinstance(node, Union) else Type("struct", False, node)
            walk = check_tags if isinstance(node, Union) else check_fields
            valid = compiler.type(type_)
            for value in values_of(type_, function, rng):
                walked = not list(walk(value, node, (), function))
                assert not valid(value) or walked, value  # yes is never wrong
                if "ext" not in kinds and not any(t.kind == "ext" for t in _inner(node)):
                    assert valid(value) == walked, value  # and is said wherever it can be


def test_a_long_chain_of_definitions_compiles_without_recursion():
    """5,000 structs, each holding an array of the next: the Service is made, and its checks answer as
    the walk does (they once recursed a level a definition, past Python's limit)."""
    chain = [{f"struct.S{i}": {"n": "integer", "next": [f"struct.S{i + 1}"]}} for i in range(5000)]
    schema = load([*chain, {"struct.S5000": {"n": "integer"}}, {"fn.f": {"s": "struct.S0"}, "->": [{"Ok_": {}}]}])
    service = engine.Service(schema, {"fn.f": lambda arguments, headers: {"Ok_": {}}})
    deep = {"n": 1, "next": [{"n": 2, "next": []}]}
    assert service.handle(json.dumps([{}, {"fn.f": {"s": deep}}]).encode()).data == b'[{}, {"Ok_": {}}]'
    wrong = json.loads(service.handle(json.dumps([{}, {"fn.f": {"s": {**deep, "n": "x"}}}]).encode()).data)
    assert wrong[1]["ErrorInvalidRequestBody_"]["cases"][0]["path"] == ["fn.f", "s", "n"]


def _inner(node):
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
        made.append(json.dumps([headers, {name: arguments}]).encode())
    return made


@PROPERTY
@given(st.integers(0, 2**32))
def test_the_engine_answers_every_request_as_the_core_does(seed):
    schema, rng = loaded(seed)
    handlers = {name: steered for name in schema.functions if not name.endswith("_")}
    plain, fast = protocol.Service(schema, handlers), engine.Service(schema, handlers)
    for data in requests(schema, rng, plain):
        assert fast.handle(data) == plain.handle(data), data


@pytest.mark.parametrize("make", [calculator.service, testbed.service])
def test_the_shipped_services_answer_alike_with_and_without_the_engine(make):
    """The calculator and the testbed, each a plain and an engine-on copy, on the same requests."""
    plain, fast = make(protocol.Service), make()
    rng = random.Random(1)
    for data in requests(plain.schema, rng, plain) * 2:
        if b"fn.login" in data:
            continue  # its tokens are random
        assert fast.handle(data).data == plain.handle(data).data, data


# The scans, held to the core's walks of what they stand in for.

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text("[]{}\"\\ab\u00e9", max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("[]{}ab", max_size=2), inner,
                                                                                max_size=3), max_leaves=30)


@settings(max_examples=500, deadline=None)
@given(JSON, st.integers(0, 8), st.booleans())
def test_nesting_read_off_the_text_is_the_nesting_walked(value, limit, ascii_only):
    text = json.dumps(value, ensure_ascii=ascii_only).encode()
    assert deeper(text, limit) == codec.deeper(value, limit)


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(["a", "\u00e9", "\ud800", "\udc00", "\U0001F600", "\\"]), max_size=6))
def test_only_text_flagged_may_hold_half_a_surrogate_pair(text):
    data = json.dumps(text).encode()
    try:
        json.dumps(json.loads(data), ensure_ascii=False).encode()
        whole = True
    except UnicodeEncodeError:
        whole = False
    assert whole or may_hold_surrogates(data)


# Matching with indexes, held to the definition.

VALUES = st.recursive(st.integers(0, 3) | st.booleans() | st.sampled_from([1.0, "a", None]),
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from("abc"), inner,
                                                                                  max_size=3), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(VALUES, VALUES)
def test_matching_with_its_indexes_gives_the_answers_of_the_definition(wanted, actual):
    assert Matching(100).matches(wanted, actual, False, 100) == stubs.partial(wanted, actual)
    assert Matching(100).matches(wanted, wanted, False, 100)


@pytest.mark.parametrize("shape", [
    lambda n: ([{"a": i, "b": [i]} for i in range(n)], [{"a": i, "b": [i]} for i in range(n)][::-1]),
    lambda n: ([{"a": i} for i in range(n)], [{"a": i, "b": 0} for i in range(n)][::-1]),
    lambda n: ([{"k": 0, "a": [i]} for i in range(n)], [{"k": 0, "a": [i, 0]} for i in range(n)][::-1]),
    lambda n: ([[i] for i in range(n)], [[i, 0] for i in range(n)][::-1]),
])
def test_long_arrays_of_objects_and_arrays_match_in_any_order(shape):
    """Reordered, partial, nested: each is found through an index, not by trying every element
    (which would take the budget of steps many times over, and answer no match)."""
    wanted, actual = shape(5000)
    assert Matching(len(json.dumps(actual))).matches({"x": wanted}, {"x": actual}, False, 0)


# Every walk a type directs is a table over the same kinds.

@pytest.mark.parametrize("table", [
    "reference.protocol.validate:CHECKS", "reference.protocol.generate:GENERATORS",
    "reference.protocol.blobs:RESTORERS", "reference.protocol.blobs:MARKERS", "reference.protocol.select:TRIMS",
    "reference.mocking.stubs:FILLS", "reference.engine.checks:COMPILERS",
])
def test_every_table_covers_every_kind(table):
    module, name = table.split(":")
    assert set(getattr(importlib.import_module(module), name)) == set(KINDS)


def test_the_mock_kinds_restore_and_generate_as_the_core_would():
    """A stub's bytes are restored where its function's types say, and a generated stub is valid."""
    schema = mocking.schema([{"fn.f": {"b": "bytes"}, "->": [{"Ok_": {"c": "bytes"}}]}])
    stub = schema.definition("_ext.Stub_")
    assert stub.restore({"fn.f": {"b": "AQ=="}, "->": {"Ok_": {"c": "Ag=="}}}) == {
        "fn.f": {"b": b"\x01"}, "->": {"Ok_": {"c": b"\x02"}}}
    for seed in range(1, 20):
        generated = stub.generate(Context(Random(seed), function=schema.functions["fn.f"]))
        assert list(generated) == ["fn.f", "->"] and not list(check(generated, Type("ext", False, stub)))


@PROPERTY
@given(st.integers(0, 2**32))
def test_compiled_trims_trim_as_the_core_does(seed):
    """Generated selections of generated results (invalid ones too, as @unsafe_ lets them through)."""
    schema, rng = loaded(seed)
    trims = Trims()
    for function in schema.functions.values():
        result = Type("union", False, function.result)
        for _ in range(4):
            context = Context(Random(rng.randrange(1, 2**31)), function=function)
            selection = schema.definition("_ext.Select_").generate(context)
            for value in values_of(result, function, rng, 2):
                if type(value) is dict and "Ok_" in value:
                    assert trims.trim(selection, value, function) == select.apply(selection, value, function)


def test_the_core_loads_nothing_of_the_engine_room():
    """Importing the core, and serving with it alone, loads no module of reference/engine/; asking
    the package for its Service does."""
    code = ("import sys, json\nfrom reference import protocol\nfrom reference.services import calculator\n"
            "service = calculator.service(protocol.Service)\n"
            "assert service.handle(json.dumps([{}, {'fn.add': {'x': 1, 'y': 2}}]).encode()).result == 'Ok_'\n"
            "print(sorted(m for m in sys.modules if m.startswith('reference.engine')))\n"
            "import reference\nreference.Service\n"
            "print(sorted(m for m in sys.modules if m.startswith('reference.engine'))[:1])\n")
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert lines == ["[]", "['reference.engine']"]
