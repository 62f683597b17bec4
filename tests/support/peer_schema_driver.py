"""The independent implementation's schema loader, driven by the conformance suite's schema checks.

Run with the peer's Python (it imports telepact, never reference):
    python -m conformance schema --command "PEER_PYTHON tests/support/peer_schema_driver.py"
It speaks the driver protocol of conformance/README.md: for each set of documents, whether the
peer's TelepactSchema accepts them, and where it says each problem is.
"""

import contextlib
import json
import sys

from telepact_cli.telepact import TelepactSchema
from telepact_cli.telepact.TelepactSchemaParseError import TelepactSchemaParseError


def problems(error):
    """The peer's failures in the driver protocol's words: the entry counted from 1, the path inside it."""
    found = []
    for failure in error.schema_parse_failures_pseudo_json:
        path = failure.get("path", [])
        entry = path[0] + 1 if path and type(path[0]) is int else None
        location = failure.get("location") or {}
        found.append({"document": failure.get("document"), "entry": entry, "path": path[1:] if entry else path,
                      "line": location.get("row"), "column": location.get("col"),
                      "message": json.dumps(failure.get("reason"))})
    return found


for line in sys.stdin:
    instruction = json.loads(line)
    texts = {document["name"]: document["text"] for document in instruction["documents"]}
    try:
        with contextlib.redirect_stdout(sys.stderr):  # it prints what it thinks of type names on stdout
            TelepactSchema.from_file_json_map(texts)
        reply = {"accepted": True}
    except TelepactSchemaParseError as error:
        reply = {"accepted": False, "problems": problems(error)}
    except Exception as error:  # what the peer raises beside its own error, for text that is not a schema
        reply = {"accepted": False, "problems": [{"document": None, "entry": None, "path": [],
                                                  "message": f"{type(error).__name__}: {error}"}]}
    print(json.dumps({"id": instruction["id"], **reply}), flush=True)
