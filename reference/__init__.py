"""A reference implementation of a schema-driven request/response protocol.

Serve any schema with plain Python functions:

    from reference import Server, Service, load

    def add(arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    schema = load([{"fn.add": {"x": "number", "y": "number"},
                    "->": [{"Ok_": {"result": "number"}}]}])
    Server(Service(schema, {"fn.add": add}), port=8000).run()  # until Ctrl-C or SIGTERM

and call any server with `Client(url).call("fn.add", {"x": 1, "y": 2})`.

Each name is imported from its module when first asked for: `import
reference` loads nothing else, so that a command starts (and Ctrl-C in its
first moment ends it quietly), and `reference.protocol`, the teaching core,
loads none of the engine room (reference/engine/), whose `Service` and
`Server` these are; the core's own serve alone: `protocol.Service` and
`http_server.Server`.
"""

from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine.guard import Server
    from .engine.service import Service
    from .protocol import Refusal, Reply, Schema, SchemaError
    from .sources import load
    from .transports.http_client import Client

__version__ = "0.3.0"
__all__ = ["Client", "Refusal", "Reply", "Schema", "SchemaError", "Server", "Service", "load", "__version__"]
MODULES = {"Client": ".transports.http_client", "Refusal": ".protocol", "Reply": ".protocol", "Schema": ".protocol",
           "SchemaError": ".protocol", "Server": ".engine.guard", "Service": ".engine.service", "load": ".sources"}


def __getattr__(name):
    """A name of `__all__`, imported from its module when first asked for."""
    if name not in MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(MODULES[name], __name__), name)
