"""Schema sources: files and directories read, and each problem located at its line and column; and
how every tool reads a file or JSON text it is given, within bounds.

The core (protocol/) makes a Schema of documents, and says where a problem is
as a document, an entry and a path of keys inside it. Here, for people and
their tools, schemas are loaded from files, text or entries (`load`), and
`check()` locates each problem in the text it was read from (`located()`),
walking the JSON with the json module's own decoder, which skips a whole
value at C speed: at the key for a problem with a name, at the value for a
problem with a type.
"""

import bisect
import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from .protocol.codec import deeper
from .protocol.documents import Document, Problem, SchemaError, Where, parse
from .protocol.limits import MAX_DEPTH, allow_depth
from .protocol.loader import Schema

SKIP = re.compile(r"[ \t\n\r]*").match  # JSON's whitespace
MAX_FILE = 16 * 1024 * 1024  # bytes of a file a tool reads: a schema, stubs, a call's arguments
DECODER = json.JSONDecoder()


def load(source: "str | Path | list | Schema", internal: Iterable = (), extensions: dict | None = None) -> Schema:
    """Load a schema from a JSON file, a directory of them, JSON text, a list of entries, or a
    Schema's documents (`internal` and `extensions` as the core's Schema takes them); SchemaError
    lists every problem, each located in its text (a file that cannot be read among them)."""
    problems: list = []
    if isinstance(source, Schema):
        documents = source.documents
    elif not isinstance(source, (str, Path)):  # entries (or what is meant to be, which is checked)
        documents = [Document("<schema>", source)]
    elif isinstance(source, str) and source.lstrip().startswith("["):
        documents, problems = parse("<schema>", source)
    else:
        try:
            documents, problems = read(Path(source))
        except ValueError as error:
            raise SchemaError([Problem(Where(str(source)), [], str(error).removeprefix(f"{source}: "))]) from None
    schema, refused = check(documents, problems, internal, extensions)
    if schema is None:
        raise refused
    return schema


def check(documents, problems=(), internal=(), extensions=None):
    """The Schema that `documents` make, and None; or None and the SchemaError of its problems (those
    of reading them first), each located in its text, in the order they appear in the documents."""
    try:
        return Schema(documents, problems, internal, extensions), None
    except SchemaError as error:
        return None, SchemaError(locate(error.problems, error.documents), documents, error.count - len(error.problems))


def read(path):
    """Parse the JSON documents of a file, or of the *.json files of a directory: (the documents read, the
    problems of the others); ValueError if `path` itself cannot be read (read_file)."""
    if not path.exists():
        raise ValueError(f"{path}: does not exist")
    files = sorted(p for p in path.iterdir() if p.suffix == ".json") if path.is_dir() else [path]
    if not files:
        raise ValueError(f"{path}: holds no .json files")
    documents, problems = [], []
    for file in files:
        try:
            found, trouble = parse(str(file), read_file(file))
        except ValueError as error:
            if file == path:
                raise
            found, trouble = [], [Problem(Where(str(file)), [], str(error).removeprefix(f"{file}: "))]
        documents, problems = documents + found, problems + trouble
    return documents, problems


def read_file(path):
    """The text of the file a tool was given: a regular file (not a pipe or a device, which might never
    end) of at most MAX_FILE bytes of UTF-8; else ValueError, saying what is wrong in one line."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # (a pipe would wait here)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise ValueError(f"{path}: not a regular file")
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_FILE + 1)
    except OSError as error:
        raise ValueError(f"{path}: cannot be read: {error.strerror}") from None
    finally:
        os.close(descriptor)
    return text_of(data, path)


def text_of(data, where):
    """The text of at most MAX_FILE bytes of UTF-8 read from `where`; else ValueError saying why not."""
    if len(data) > MAX_FILE:
        raise ValueError(f"{where}: over {MAX_FILE // 1024 // 1024} MiB, more than a tool reads")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"{where}: not UTF-8 text (byte {error.start} is not)") from None


def write_file(path, text):
    """Replace the file `path` with `text` at once: a reader never sees half of it, and a link in its
    place is replaced, not followed; ValueError says what went wrong."""
    written = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                         delete=False) as file:
            written = file.name
            file.write(text)  # (a full disk, or a limit on a file's size, may only be told as it is closed)
        os.replace(written, path)
    except OSError as error:
        if written is not None:  # (no half-written temporary file is left behind)
            with contextlib.suppress(OSError):
                os.unlink(written)
        raise ValueError(f"{path}: cannot be written: {error.strerror}") from None


def parse_json(text, what):
    """The JSON value in `text` (`what` it is, for the message), nested at most MAX_DEPTH levels; else
    ValueError, saying what is wrong in one line."""
    allow_depth()
    try:
        value = json.loads(text)
    except RecursionError:
        raise ValueError(f"{what}: nests arrays and objects deeper than {MAX_DEPTH:,} levels") from None
    except json.JSONDecodeError as error:
        raise ValueError(f"{what}: not JSON: {error.msg} (line {error.lineno}, column {error.colno})") from None
    except ValueError as error:  # a number of too many digits, say
        raise ValueError(f"{what}: not JSON: {str(error).split(';')[0]}") from None
    if deeper(value, MAX_DEPTH):
        raise ValueError(f"{what}: nests arrays and objects deeper than {MAX_DEPTH:,} levels")
    return value


def as_data(problem):
    """A problem as JSON data: document, entry, key, path, line, column, message, first."""
    where, first = problem.where, problem.first
    data = {"document": where.document, "entry": where.entry, "key": where.key or None, "path": problem.path,
            "line": where.line, "column": where.column, "message": problem.message}
    if first:
        data["first"] = {"document": first.document, "entry": first.entry, "line": first.line, "column": first.column}
    return data


def locate(problems, documents):
    """The problems, each with its line and column where its document's text is known, in the
    order they appear in the documents."""
    texts = {document.name: Text(document.text) for document in documents if document.text is not None}
    order = {document.name: i for i, document in enumerate(documents)}
    found = [located(problem, texts)._replace(message=problem.message + _near(*problem.near or ((), ())))
             for problem in problems]
    return sorted(found, key=lambda p: (order.get(p.where.document, -1), p.where.entry or 0,
                                        p.where.line or 0, p.where.column or 0))


def located(problem, texts):
    """`problem` with the line and column of its place, where its document's Text is known."""
    text = texts.get(problem.where.document)
    if text is None or problem.where.entry is None:
        return problem
    first = problem.first
    try:
        if first is not None and texts.get(first.document) is not None:
            first = first._replace(**texts[first.document].position([first.entry - 1, first.key]))
        where = problem.where._replace(**text.position([problem.where.entry - 1, *problem.path], problem.value))
    except (ValueError, RecursionError):  # text that is not what the entries were read from
        return problem
    return problem._replace(where=where, first=first)


class Text:
    """JSON text in which places are found, each array's elements and each object's members read
    once, as far as a place is sought inside it, and each line's start once: placing N problems
    costs at most one pass over the text, not N."""

    def __init__(self, text):
        self.text, self.arrays, self.objects, self.lines = text, {}, {}, None

    def position(self, steps, value=False):
        """The line and column of the key `steps` leads to (of its value, if `value`), or of the
        deepest found."""
        text = self.text
        at = shown = SKIP(text, 0).end()
        for step in steps:
            found = (self.element(at, step) if type(step) is int and text.startswith("[", at) else
                     self.member(at, step) if type(step) is str and text.startswith("{", at) else None)
            if found is None:
                break
            shown, at = found
        else:
            shown = at if value else shown
        if self.lines is None:
            self.lines = [match.end() for match in re.finditer("\n", text)]
        line = bisect.bisect_right(self.lines, shown)
        return {"line": line + 1, "column": shown - (self.lines[line - 1] if line else 0) + 1}

    def element(self, at, index):
        """Where the element `index` of the array at `at` starts (twice), or None; the elements are
        read as far as one is sought (the first problems of a million entries read only the first)."""
        text = self.text
        starts, next_ = self.arrays.get(at) or ([], SKIP(text, at + 1).end())
        while len(starts) <= index and next_ < len(text) and not text.startswith("]", next_):
            starts.append(next_)
            next_ = SKIP(text, DECODER.raw_decode(text, next_)[1]).end()
            next_ = SKIP(text, next_ + 1).end() if text.startswith(",", next_) else len(text)
        self.arrays[at] = starts, next_
        return (starts[index], starts[index]) if 0 <= index < len(starts) else None

    def member(self, at, key):
        """Where the key `key` of the object at `at` starts, and where its value starts, or None."""
        members = self.objects.get(at)
        if members is None:
            text, members, next_ = self.text, {}, SKIP(self.text, at + 1).end()
            while text.startswith('"', next_):
                name, end = json.decoder.scanstring(text, next_ + 1)
                value = SKIP(text, SKIP(text, end).end() + 1).end()  # past the colon
                members.setdefault(name, (next_, value))
                next_ = SKIP(text, DECODER.raw_decode(text, value)[1]).end()
                if not text.startswith(",", next_):
                    break
                next_ = SKIP(text, next_ + 1).end()
            self.objects[at] = members
        return members.get(key)


def _near(given, known):
    """"; did you mean X?" for the first of `given` a typing slip away from a name `known`, else "": a
    letter or two wrong, missing, extra or swapped, in a name of two letters or more (after its
    prefix), or the same name in other capitals."""
    for prefix, _, part in (str(name).rpartition(".") for name in given):
        for other in known:
            other_prefix, _, other_part = other.rpartition(".")
            if prefix != other_prefix or part == other_part:
                continue
            if part.lower() == other_part.lower() or (
                    len(part) >= 2 and _slips(part, other_part) <= max(1, len(part) // 4)):
                return f"; did you mean {json.dumps(other)}?"
    return ""


def _slips(a, b):
    """How many letters to change, add, remove or swap with the next to turn `a` into `b` (the
    edit distance, with a swap of neighbours one slip)."""
    rows = [list(range(len(b) + 1))]
    for i, x in enumerate(a, 1):
        row = [i]
        for j, y in enumerate(b, 1):
            row.append(min(rows[-1][j] + 1, row[j - 1] + 1, rows[-1][j - 1] + (x != y)))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y != x:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]
