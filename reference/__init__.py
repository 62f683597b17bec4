"""A reference implementation of a schema-driven request/response protocol.

Serve any schema with plain Python functions:

    from reference import Service, load
    from reference.server import Server

    def add(arguments, headers):
        return {"Ok_": {"result": arguments["x"] + arguments["y"]}}

    schema = load([{"fn.add": {"x": "number", "y": "number"},
                    "->": [{"Ok_": {"result": "number"}}]}])
    Server(Service(schema, {"fn.add": add}), port=8000).serve_forever()
"""

from . import stubs  # for its effect: the mock's calls and stubs join the validator's tables
from .schema import Schema, SchemaError, load
from .service import Reply, Service

__all__ = ["Reply", "Schema", "SchemaError", "Service", "load"]
