"""The engine room changes no answer (engine/service.py, checks.py, scans.py, trims.py): each of its
pieces, held to the plain core on generated schemas, values and requests."""

import json
import random

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from reference import engine, load, protocol
from reference.engine import binary
from reference.engine.checks import Compiler
from reference.engine.scans import deeper, may_hold_surrogates
from reference.engine.trims import Trims
from reference.protocol import codec, select
from reference.protocol.generate import Context, Random
from reference.protocol.types import Type, Union, reachable
from reference.protocol.validate import check_fields, check_tags
from reference.services import calculator, testbed
from tests.support import generated
from tests.support.generated import loaded, requests, steered, values_of

PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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
                if "ext" not in kinds and not any(t.kind == "ext" for t in generated.inner(node)):
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


@pytest.mark.parametrize("headers", [{}, {"@id_": [1, "x"]}, {"@select_": {"->": {"Ok_": []}}}, {"@bin_": []}])
@pytest.mark.parametrize("flags", [{}, {"includeInternal!": True}, {"includeExamples!": True},
                                   {"includeInternal!": True, "includeExamples!": False}])
def test_the_schema_made_and_written_once_is_the_schema_the_core_writes_each_time(headers, flags):
    plain, fast = calculator.service(protocol.Service), calculator.service()
    data = json.dumps([headers, {"fn.api_": flags}]).encode()
    for _ in range(2):
        assert fast.handle(data) == plain.handle(data)


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


def test_a_message_the_packer_refuses_midway_leaves_its_thread_packer_clean():
    """An answer MessagePack cannot carry (an integer past 64 bits, after other values) goes out as the
    core sends it, and the next answer on that thread is packed from an empty buffer."""
    plain, fast = testbed.service(protocol.Service), testbed.service()
    checksum = plain.encoding.checksum
    calls = [[{"@bin_": [checksum]}, {"fn.echo": {"any!": ["x" * 40, 2**70]}}],
             [{"@bin_": [checksum]}, {"fn.echo": {"any!": [1]}}]]
    replies = [fast.handle(json.dumps(call).encode()) for call in calls]
    assert replies == [plain.handle(json.dumps(call).encode()) for call in calls]
    assert [reply.media_type for reply in replies] == [protocol.service.JSON, protocol.service.MSGPACK]


def _calls(ids, checksum):
    """MessagePack calls of the calculator whose keys and values the engine checks as it names them."""
    x, y, add, evaluate, expression = ids["x"], ids["y"], ids["fn.add"], ids["fn.evaluate"], ids["expression"]
    constant = {ids["Constant"]: {ids["value"]: 1}}
    steady = {"@bin_": [checksum]}
    return [[steady, {add: {x: 1, y: 2.5}}], [{**steady, "@id_": [1, {"a": 2}]}, {add: {x: 1, y: 2}}],
            [steady, {add: {"x": 1, "y": 2}}], [steady, {add: {float(x): 1, y: 2}}], [steady, {add: {True: 1, y: 2}}],
            [steady, {add: {x: 1}}], [steady, {add: {x: 1, y: 2, 99999: 1}}], [steady, {add: {x: 2**63, y: 1}}],
            [steady, {add: {x: float("inf"), y: 1}}], [steady, {add: {x: None, y: 1}}], [steady, {add: {x: [1], y: 1}}],
            [{"@bin_": [float(checksum)]}, {add: {x: 1, y: 2}}], [{"@bin_": [checksum, checksum]}, {add: {x: 1, y: 2}}],
            [{**steady, "@select_": {"->": {"Ok_": []}}}, {add: {x: 1, y: 2}}],
            [steady, {evaluate: {expression: {ids["Add"]: {ids["left"]: constant, ids["right"]: constant}}}}],
            [steady, {evaluate: {expression: {float(ids["Constant"]): {ids["value"]: 1}}}}],
            [steady, {evaluate: {expression: {ids["Constant"]: {ids["value"]: 1}, ids["Add"]: {}}}}],
            [steady, {evaluate: {expression: {ids["Constant"]: {ids["value"]: "1"}}}}]]


def test_keys_renamed_as_they_are_checked_are_read_and_written_as_the_core_does():
    """A steady client's calls whose arguments the engine checks and names in one walk, and whose Ok_ it
    writes as it checks it (checks.renamed): keys that equal an id without being one (1.0, True), values
    out of range, not finite or of the wrong kind, nested unions, and headers that are not the checksum
    alone, each answered as the core answers it."""
    plain, fast = calculator.service(protocol.Service), calculator.service()
    for call in _calls(plain.encoding.ids, plain.encoding.checksum):
        data = msgpack.packb(call)
        assert fast.handle(data) == plain.handle(data), call


def test_an_ok_checked_as_it_was_renamed_gives_way_to_a_later_refusal():
    """A valid Ok_ whose handler added a header not named with @: the answer is the refusal of step 9."""
    schema = load([{"fn.f": {"a": "integer"}, "->": [{"Ok_": {"b": "integer"}}]}])
    handlers = {"fn.f": lambda arguments, headers: ({"bad": 1}, {"Ok_": {"b": 1}})}
    plain, fast = protocol.Service(schema, handlers), engine.Service(schema, handlers)
    ids = plain.encoding.ids
    data = msgpack.packb([{"@bin_": [plain.encoding.checksum]}, {ids["fn.f"]: {ids["a"]: 1}}])
    assert fast.handle(data) == plain.handle(data)
    assert fast.handle(data).result == "ErrorInvalidResponseHeaders_"


KEYS = st.sampled_from(["Circle", "Dot", "Leaf", "Node", "api", "bool", "not a name"])
ROWS = st.recursive(st.none() | st.integers(-3, 3) | st.text("ab", max_size=2) | st.floats(allow_nan=True),
                    lambda inner: st.lists(st.dictionaries(KEYS, inner, max_size=3), max_size=4)
                    | st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=25)


@settings(max_examples=500, deadline=None)
@given(ROWS, st.booleans())
def test_packed_arrays_made_at_once_are_the_bytes_the_core_streams(value, packed):
    """Arrays of maps with known keys, missing ones, nested maps, and ones the core leaves unpacked."""
    encoding = testbed.service().encoding
    message = [{"@bin_": [encoding.checksum]}, {"Ok_": {"any!": value}}]
    try:
        streamed = codec.encode(message, encoding, packed)
    except codec.Unwritable:
        streamed = None
    made = binary.write({}, message[1], encoding, packed)
    assert made == streamed or (made is None and streamed is not None)  # (None: the core writes it)
