"""Where a schema problem is in its JSON text: the line and column a compiler would show.

The loader (protocol/loader.py) says where a problem is as a document, an
entry and a path of keys inside it. `located()` finds that path in the text
the document was read from, walking the JSON with the json module's own
decoder, which skips a whole value at C speed.
"""

import json
import re
from collections.abc import Iterable
from pathlib import Path

from . import protocol
from .protocol.documents import SchemaError
from .protocol.loader import Schema

SKIP = re.compile(r"[ \t\n\r]*").match  # JSON's whitespace
DECODER = json.JSONDecoder()


def load(source: "str | Path | list | Schema", internal: Iterable = (), extensions: dict | None = None) -> Schema:
    """Load a schema as the core's `load()` does, each problem located in the text it was read from."""
    try:
        return protocol.load(source, internal, extensions)
    except SchemaError as error:
        raise SchemaError(locate(error.problems, error.documents), error.documents) from None


def locate(problems, documents):
    """The problems, each with its line and column where its document's text is known, in the
    order they appear in the documents."""
    texts = {document.name: document.text for document in documents}
    order = {document.name: i for i, document in enumerate(documents)}
    found = [located(problem, texts) for problem in problems]
    return sorted(found, key=lambda p: (order.get(p.where.document, -1), p.where.entry or 0,
                                        p.where.line or 0, p.where.column or 0))


def located(problem, texts):
    """`problem` with the line and column of its place, where its document's text is known."""
    text = texts.get(problem.where.document)
    if text is None or problem.where.entry is None:
        return problem
    first = problem.first
    if first is not None and texts.get(first.document) is not None:
        first = first._replace(**_position(texts[first.document], [first.entry - 1, first.key]))
    return problem._replace(where=problem.where._replace(**_position(text, [problem.where.entry - 1, *problem.path])),
                            first=first)


def _position(text, steps):
    """The line and column of the value (or key) `steps` leads to in JSON text, or of the deepest found."""
    at = shown = SKIP(text, 0).end()
    for step in steps:
        found = (_element(text, at, step) if type(step) is int and text.startswith("[", at) else
                 _member(text, at, step) if type(step) is str and text.startswith("{", at) else None)
        if found is None:
            break
        shown, at = found
    line, column = _line_and_column(text, shown)
    return {"line": line, "column": column}


def _line_and_column(text, offset):
    return text.count("\n", 0, offset) + 1, offset - text.rfind("\n", 0, offset)


def _element(text, at, index):
    """Where the element `index` of the array at `at` starts (twice), or None."""
    at = SKIP(text, at + 1).end()
    for _ in range(index):
        if text.startswith("]", at):
            return None
        at = SKIP(text, DECODER.raw_decode(text, at)[1]).end()
        at = SKIP(text, at + 1).end() if text.startswith(",", at) else at
    return None if text.startswith("]", at) else (at, at)


def _member(text, at, key):
    """Where the key `key` of the object at `at` starts, and where its value starts, or None."""
    at = SKIP(text, at + 1).end()
    while text.startswith('"', at):
        name, end = json.decoder.scanstring(text, at + 1)
        value = SKIP(text, SKIP(text, end).end() + 1).end()  # past the colon
        if name == key:
            return at, value
        at = SKIP(text, DECODER.raw_decode(text, value)[1]).end()
        if not text.startswith(",", at):
            return None
        at = SKIP(text, at + 1).end()
    return None
