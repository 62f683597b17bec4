"""Schema documents: JSON read from files, directories or text, and how a problem in one is told.

`read()` and `parse()` turn what `load()` is given into `Document`s: each a
name, the entries it holds, and the JSON text they were read from (None for
entries given in memory). When the loader finds something wrong with an
entry, it says where as a `Where` (the document, the entry counted from 1 as
people count, its definition key) and a path of keys and indexes inside the
entry. A tool that has the text can add the line and column (locate.py), and
a `Problem` then reads like a compiler's:

    shop.json:12:45: struct.Item: unknown type "numbr"

Problems are data too (`Problem.as_data()`), for the conformance suite's
schema driver and for other tools.
"""

import json
from pathlib import Path
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

    def __str__(self):
        what = f"{self.where.key}: " if self.where.key else ""
        at = f", at {json.dumps(self.path)}" if self.path and self.where.line is None else ""
        first = f" (first defined at {self.first})" if self.first else ""
        return f"{self.where}{at}: {what}{self.message}{first}"

    def as_data(self):
        """The problem as JSON data: document, entry, key, path, line, column, message, first."""
        data = {"document": self.where.document, "entry": self.where.entry, "key": self.where.key or None,
                "path": self.path, "line": self.where.line, "column": self.where.column, "message": self.message}
        if self.first:
            data["first"] = {"document": self.first.document, "entry": self.first.entry,
                             "line": self.first.line, "column": self.first.column}
        return data


class SchemaError(Exception):
    """A schema broke the rules; `problems` lists every violation, in document order, and
    `documents` are those they are in."""

    def __init__(self, problems, documents=()):
        self.problems, self.documents = problems, documents
        count = f"{len(problems)} problem{'s' * (len(problems) != 1)}"
        super().__init__(f"invalid schema, {count}:\n" + "\n".join(f"  {p}" for p in problems))


def read(path):
    """Parse the JSON documents of a file or directory: (the documents read, the problems of the rest)."""
    shown = path if path.is_absolute() else f"{path} (from {Path.cwd()})"
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        if not files:
            return [], [Problem(Where(str(path)), [], f"{shown} holds no .json files")]
    elif not path.exists():
        return [], [Problem(Where(str(path)), [], f"{shown} does not exist")]
    else:
        files = [path]
    documents, problems = [], []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as error:
            problems.append(Problem(Where(str(file)), [], error.strerror or str(error)))
        except UnicodeDecodeError as error:
            problems.append(Problem(Where(str(file)), [], f"not valid JSON: {error}"))
        else:
            found, trouble = parse(str(file), text)
            documents += found
            problems += trouble
    return documents, problems


def parse(name, text):
    """The document in JSON `text`, as ([Document], problems)."""
    try:
        return [Document(name, json.loads(text), text)], []
    except json.JSONDecodeError as error:
        return [], [Problem(Where(name, None, "", error.lineno, error.colno), [], f"not valid JSON: {error.msg}")]
    except ValueError as error:  # a number too large, say
        return [], [Problem(Where(name), [], f"not valid JSON: {error}")]
    except RecursionError:
        return [], [Problem(Where(name), [], "the document nests arrays and objects deeper than Python reads")]
