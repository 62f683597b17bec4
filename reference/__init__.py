"""A reference implementation of a schema-driven request/response protocol.

Serve any schema with plain Python functions:

    from reference import Server, Service, load

    def add(arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    schema = load([{"fn.add": {"x": "number", "y": "number"},
                    "->": [{"Ok_": {"result": "number"}}]}])
    Server(Service(schema, {"fn.add": add}), port=8000).run()  # until Ctrl-C or SIGTERM

and call any server with `Client(url).call("fn.add", {"x": 1, "y": 2})`.
"""

from .engine import Service
from .engine.guard import Server
from .http_client import Client
from .sources import load
from .protocol import Refusal, Reply, Schema, SchemaError, allow_depth

__version__ = "0.3.0"
__all__ = ["Client", "Refusal", "Reply", "Schema", "SchemaError", "Server", "Service", "allow_depth", "load",
           "__version__"]
