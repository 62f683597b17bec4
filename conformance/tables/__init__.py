"""The tables the testbed schema and its cases are made from.

How this works
--------------
`testbed.py` makes the testbed schema from two small tables and gives every
type valid and invalid values; `checking.py`, `extras.py` and `seeded.py` turn
those into families of cases, each a generator of cases in the fixture format;
`client_cases.py` makes the cases that check a client, and `schema_cases.py` those
that check a schema loader. FILES says which family fills which file.

`python -m conformance generate` writes the files; `python -m conformance
check` fails when the committed files are not what the tables make, so the
JSON stays the suite (any runner in any language reads it) and the tables
stay its source.
"""

import json
import re

from . import checking, client_cases, extras, schema_cases, seeded, wire
from .testbed import features, schema

__all__ = ["FILES", "features", "files", "schema"]


def dumps(value):
    """JSON text with one field per line, and arrays and objects that hold no others on one."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub(r"[\[{][^\[\]{}]*[\]}]", lambda m: re.sub(r"\s*\n\s*", " ", m[0])
                  .replace("[ ", "[").replace(" ]", "]").replace("{ ", "{").replace(" }", "}"), text) + "\n"


GENERATED = "Made by conformance/tables (python -m conformance generate): change the tables, not this file. "
FILES = {  # file -> (what its cases check, the family that makes them)
    "cases/testbed-types.json": ("Every type in every position, valid, invalid and null.", checking.type_cases),
    "cases/testbed-fields.json": ("Required, optional and nullable fields.", checking.strict_cases),
    "cases/testbed-precedence.json": ("Which error wins when a message has several problems.", checking.precedence_cases),
    "cases/testbed-results.json": ("Checking what handlers return: results, response headers, raising.", checking.result_cases),
    "cases/testbed-auth.json": ("Protected and open functions, and the @auth_ header.", checking.auth_cases),
    "cases/testbed-select.json": ("@select_ on every shape of result, and how it is checked.", extras.select_cases),
    "cases/testbed-base64.json": ("@base64_ marks inside every kind of container.", extras.base64_cases),
    "cases/testbed-binary.json": ("MessagePack round trips of every shape, packed arrays, deep values.", extras.binary_cases),
    "cases/testbed-api.json": ("fn.api_ of the testbed: public and internal entries, examples.", seeded.api_cases),
    "cases/testbed-mock.json": ("A mock of the testbed: seeded values, stubs of every type, verification.", seeded.mock_cases),
    "cases/testbed-numbers.json": ("Numbers written every way JSON allows, in every position.", wire.number_cases),
    "cases/testbed-wire.json": ("The encoding, which keys become integers, checksums, the nesting limit.", wire.wire_cases),
    "schemas/documents.json": ("Schema loader: what a schema document is, and several of them.", schema_cases.document_cases),
    "schemas/entries.json": ("Schema loader: every kind of entry, well formed and not.", schema_cases.entry_cases),
    "schemas/functions.json": ("Schema loader: a function's results, Ok_ first and alone.", schema_cases.function_cases),
    "schemas/names.json": ("Schema loader: every naming rule, in every place a name stands.", schema_cases.name_cases),
    "schemas/types.json": ("Schema loader: every type expression in every place a type stands.", schema_cases.type_cases),
    "schemas/comments.json": ("Schema loader: comments, where they may stand and what they are.", schema_cases.comment_cases),
    "schemas/conventions.json": ("Schema loader: types that never end, names defined twice, what else an entry holds.",
                                 schema_cases.convention_cases),
    "clients/plain.json": ("Client: JSON calls, headers both ways, @time_, @id_.", client_cases.plain_cases),
    "clients/results.json": ("Client: every kind of error result handed back unchanged.", client_cases.result_cases),
    "clients/binary.json": ("Client: binary negotiation, the steady state, a changed encoding.", client_cases.binary_cases),
    "clients/bytes.json": ("Client: bytes in every position, both wires, both ways.", client_cases.bytes_cases),
    "clients/packed.json": ("Client: packed answers.", client_cases.packed_cases),
    "clients/failures.json": ("Client: garbage, HTTP errors and silence, reported in time.", client_cases.failure_cases),
}


def files():
    """Every file the tables make, by path under conformance/, as text."""
    made = {"testbed.json": dumps(schema())}
    for path, (description, family) in FILES.items():
        made[path] = dumps({"description": GENERATED + description, "cases": list(family())})
    return made
