"""The mock's kinds of value (mocking/stubs.py): calls and stubs restored and generated as the core does."""

from reference import mocking
from reference.protocol.generate import Context, Random
from reference.protocol.types import Type
from reference.protocol.validate import check


def test_the_mock_kinds_restore_and_generate_as_the_core_would():
    """A stub's bytes are restored where its function's types say, and a generated stub is valid."""
    schema = mocking.schema([{"fn.f": {"b": "bytes"}, "->": [{"Ok_": {"c": "bytes"}}]}])
    stub = schema.definition("_ext.Stub_")
    assert stub.restore({"fn.f": {"b": "AQ=="}, "->": {"Ok_": {"c": "Ag=="}}}) == {
        "fn.f": {"b": b"\x01"}, "->": {"Ok_": {"c": b"\x02"}}}
    for seed in range(1, 20):
        generated = stub.generate(Context(Random(seed), function=schema.functions["fn.f"]))
        assert list(generated) == ["fn.f", "->"] and not list(check(generated, Type("ext", False, stub)))
