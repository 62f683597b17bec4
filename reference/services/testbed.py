"""The testbed: the conformance suite's schema, served through the suite's handler contract.

The suite owns the schema (`conformance/testbed.json`) and the contract
(`conformance/README.md`): the request says what the handler does, so the
suite can steer any implementation of the protocol the same way. Serve it
with `python -m reference.server --service testbed`, or behind an ASGI or
WSGI server: `uvicorn --factory reference.services.testbed:asgi`, `uvicorn --interface
wsgi --factory reference.services.testbed:wsgi`, `gunicorn 'reference.services.testbed:wsgi()'`.
"""

from importlib import resources

from ..sources import load
from ..transports import asgi as asgi_, wsgi as wsgi_


def handle(arguments, headers, answer=lambda arguments: {"Ok_": arguments}):
    """Raise if asked (`@raise`), answer `@result` or else `answer` (an echo of the arguments), add
    `@responseHeaders`."""
    if headers.get("@raise") is True:
        raise RuntimeError("the request asked the handler to raise (@raise)")
    result = headers["@result"] if "@result" in headers else answer(arguments)
    if "@responseHeaders" in headers:
        return headers["@responseHeaders"], result
    return result


def greet(arguments):
    """fn.greet's own answer: its arguments are no result of it."""
    return {"Ok_": {"greeting": f"Hello, {arguments['name']}!"}}


def secret(arguments):
    """fn.secret's own answer, for the same reason: the hint it was given, as its secret."""
    return {"Ok_": {"secret!": arguments["hint!"]} if "hint!" in arguments else {}}


def service(kind=None):
    """A Service of the testbed schema, every function answered by `handle`: of `kind`, the core's
    `protocol.Service` or by default the engine room's (imported only then)."""
    schema = load(resources.files("conformance").joinpath("testbed.json").read_text(encoding="utf-8"))
    handlers = {name: handle for name in schema.functions if not name.endswith("_")}
    handlers["fn.greet"] = lambda arguments, headers: handle(arguments, headers, greet)
    handlers["fn.secret"] = lambda arguments, headers: handle(arguments, headers, secret)
    if kind is None:
        from ..engine import Service as kind
    return kind(schema, handlers)


def wsgi():
    """A new testbed as a WSGI application (a factory, for gunicorn or uvicorn --interface wsgi --factory)."""
    return wsgi_.make_application(service())


def asgi():
    """A new testbed as an ASGI application (a factory: uvicorn --factory reference.services.testbed:asgi)."""
    return asgi_.make_application(service())
