"""The testbed: the conformance suite's schema, served through the suite's handler contract.

The suite owns the schema (`conformance/testbed.json`) and the contract
(`conformance/README.md`): the request says what the handler does, so the
suite can steer any implementation of the protocol the same way. Serve it
with `python -m reference.server --service testbed`.
"""

from importlib import resources

from .loader import load
from .service import Service


def handle(arguments, headers):
    """Raise if asked (`@raise`), answer `@result` or echo the arguments, add `@responseHeaders`."""
    if headers.get("@raise") is True:
        raise RuntimeError("the request asked the handler to raise (@raise)")
    result = headers.get("@result", {"Ok_": arguments})
    if "@responseHeaders" in headers:
        return headers["@responseHeaders"], result
    return result


def service():
    """A Service of the testbed schema, every function answered by `handle`."""
    schema = load(resources.files("conformance").joinpath("testbed.json").read_text(encoding="utf-8"))
    return Service(schema, {name: handle for name in schema.functions if not name.endswith("_")})
