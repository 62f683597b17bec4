"""Schema documents, and how a problem in one is told.

A `Document` is a name, the entries it holds, and the JSON text they were
read from, if any (`parse()`; sources.py reads files). The loader says where
a problem is as a `Where` (the document, the entry counted from 1, its
definition key) and a path of keys inside the entry; a tool that has the
text adds the line and column, and a `Problem` then reads like a compiler's:
`shop.json:12:45: struct.Item: unknown type "numbr"`.
"""

import json
import re
from typing import Any, NamedTuple


class Document(NamedTuple):
    """A schema document: its name, its entries, and the JSON text they came from."""

    name: str
    entries: Any
    text: str | None = None


class Where(NamedTuple):
    """A place in a schema: a document, an entry (from 1), and its line and column, if known."""

    document: str
    entry: int | None = None
    key: str = ""  # the entry's definition key, when known
    line: int | None = None
    column: int | None = None

    def __str__(self):
        if self.line is not None:
            return f"{self.document}:{self.line}:{self.column}"
        return self.document + (f", entry {self.entry}" if self.entry is not None else "")


class Problem(NamedTuple):
    """One thing wrong with a schema: where, the path inside the entry, and what."""

    where: Where
    path: list
    message: str
    first: Where | None = None  # for a name defined twice, where it was defined first
    value: bool = False  # whether it is about the value at the path (else its key)
    near: tuple = ()  # (names given, names known), for a tool to ask "did you mean"

    def __str__(self):
        what = f"{self.where.key}: " if self.where.key else ""
        at = f", at {json.dumps(self.path)}" if self.path and self.where.line is None else ""
        first = f" (first defined at {self.first})" if self.first else ""
        return f"{self.where}{at}: {what}{self.message}{first}"


class SchemaError(Exception):
    """A schema broke the rules; `problems` lists the violations, in document order (the first
    MAX_PROBLEMS found), `count` says how many there are, and `documents` are those they are in."""

    def __init__(self, problems, documents=(), unlisted=0):
        self.problems, self.documents, self.count = problems, documents, len(problems) + unlisted
        count = f"{self.count:,} problem{'s' * (self.count != 1)}"
        more = f"\n  and {self.count - 20:,} more" if self.count > 20 else ""  # (not a million lines)
        super().__init__(f"invalid schema, {count}:\n" + "\n".join(f"  {p}" for p in problems[:20]) + more)


def parse(name, text):
    """The document in JSON `text`, as ([Document], problems)."""
    try:
        return [Document(name, json.loads(text), text)], []
    except json.JSONDecodeError as error:
        return [], [Problem(Where(name, None, "", error.lineno, error.colno), [], f"not valid JSON: {error.msg}")]
    except ValueError as error:  # a number too large, say
        return [], [Problem(Where(name), [], f"not valid JSON: {error}")]
    except RecursionError:
        line, column = _deep(text)
        return [], [Problem(Where(name, None, "", line, column), [], f"the document nests arrays and objects "
                            f"deeper than Python reads: here {DEEP:,} levels are open")]


DEEP = 1000  # levels of nesting at which a document too deep to read is located


def _deep(text):
    """The line and column where `text` opens its DEEP-th level (strings skipped: a linear scan)."""
    depth = 0
    for token in re.finditer(r'"(?:[^"\\]|\\.)*"|[\[{]|[\]}]', text):
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(token.group(), 0)
        if depth == DEEP:
            at = token.start()
            return text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
    return None, None
