"""A reference implementation of a schema-driven request/response protocol.

Serve any schema with plain Python functions:

    from reference import Server, Service, load

    def add(arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    schema = load([{"fn.add": {"x": "number", "y": "number"},
                    "->": [{"Ok_": {"result": "number"}}]}])
    Server(Service(schema, {"fn.add": add}), port=8000).serve_forever()

and call any server with `Client(url).call("fn.add", {"x": 1, "y": 2})`.
"""

from .http_client import Client
from .http_server import Server
from .documents import SchemaError
from .loader import Schema, load
from .service import Refusal, Reply, Service

__version__ = "0.2.0"
__all__ = ["Client", "Refusal", "Reply", "Schema", "SchemaError", "Server", "Service", "load", "__version__"]
