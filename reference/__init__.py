"""A reference implementation of a schema-driven request/response protocol.

Serve any schema with plain Python functions:

    from reference import Server, Service, load

    def add(arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    schema = load([{"fn.add": {"x": "number", "y": "number"},
                    "->": [{"Ok_": {"result": "number"}}]}])
    Server(Service(schema, {"fn.add": add}), port=8000).run()  # until Ctrl-C or SIGTERM

and call any server with `Client(url).call("fn.add", {"x": 1, "y": 2})`.

`Service` and `Server` are the engine room's (reference/engine/), loaded when
first asked for, so that `reference.protocol`, the teaching core, loads none
of it and serves alone: `protocol.Service` and `http_server.Server`.
"""

from typing import TYPE_CHECKING

from .protocol import Refusal, Reply, Schema, SchemaError
from .sources import load
from .transports.http_client import Client

if TYPE_CHECKING:
    from .engine.guard import Server
    from .engine.service import Service

__version__ = "0.3.0"
__all__ = ["Client", "Refusal", "Reply", "Schema", "SchemaError", "Server", "Service", "load", "__version__"]


def __getattr__(name):
    """`Service` and `Server`, imported from the engine room when first asked for."""
    if name == "Service":
        from .engine.service import Service
        return Service
    if name == "Server":
        from .engine.guard import Server
        return Server
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
