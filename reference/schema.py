"""Schemas: read the documents that describe a service, check them, and resolve
their type expressions into a small tree that the validator walks.

How this works
--------------
A schema is a list of entries. Each entry is a JSON object with one definition
key (`fn.add`, `struct.Variable`, `union.Expression`, `headers.Auth_`,
`errors.Availability`, `info.Calculator`), a `->` key for functions and
headers, and optionally a `///` comment and `$` annotations such as
`"$authenticated": false`.

`load()` gathers the documents: a JSON file, a directory of JSON files, or
entries already in memory. `Schema()` adds the bundled stock documents
(`internal.json` always, `auth.json` when the service defines `union.Auth_`)
and works in two passes, collecting every problem instead of stopping at the
first:

1. index: check each entry's shape and name, and create an empty `Struct` or
   `Union` for every named definition, so that definitions may refer to one
   another in any order, and to themselves (`union.Expression` does);
2. resolve: turn every type expression into a `Type` (see types.py), fill
   those structs and unions in, and append each `errors.*` group's tags to
   function results.

If anything is wrong, `SchemaError` lists every problem and where it is.
"""

import json
import re
from pathlib import Path
from typing import NamedTuple

from .types import Function, Struct, Type, Union

BUNDLED = Path(__file__).parent / "schemas"
SCALARS = {"boolean", "integer", "number", "string", "bytes", "any"}
EXTENSIONS = {"_ext.Select_", "_ext.Call_", "_ext.Stub_"}

DEFINITION = re.compile(r"(info|struct|union|fn|headers|errors|_ext)\.[A-Za-z_]\w*")
FIELD = re.compile(r"[a-z]\w*!?")
TAG = re.compile(r"[A-Z]\w*")
HEADER = re.compile(r"@[a-z]\w*")


class Problem(NamedTuple):
    """One thing wrong with a schema, and where it is."""

    document: str
    entry: int | None  # index of the entry in its document
    key: str  # the entry's definition key, when known
    path: list  # keys and indexes inside the entry
    message: str

    def __str__(self):
        where = self.document
        if self.entry is not None:
            where += f", entry {self.entry}" + (f" ({self.key})" if self.key else "")
        if self.path:
            where += f", at {json.dumps(self.path)}"
        return f"{where}: {self.message}"


class SchemaError(Exception):
    """A schema broke the rules; `problems` lists every violation."""

    def __init__(self, problems):
        self.problems = problems
        count = f"{len(problems)} problem{'s' * (len(problems) != 1)}"
        super().__init__(f"invalid schema, {count}:\n" + "\n".join(f"  {p}" for p in problems))


def bundled(name):
    """The entries of a schema document shipped in this package, such as "calculator"."""
    return json.loads((BUNDLED / f"{name}.json").read_text(encoding="utf-8"))


def load(source, internal=()):
    """Load a schema from a JSON file, a directory of JSON files, or a list of entries.

    `internal` adds more stock documents whose entries `fn.api_` only shows on
    request; the mock server adds its control functions this way."""
    if isinstance(source, (str, Path)):
        documents, problems = read(Path(source))
        if problems:
            raise SchemaError(problems)
    else:
        documents = [("<schema>", source)]
    return Schema(documents, internal)


def read(path):
    """Parse the JSON documents at `path`: one file, or every *.json file of a directory."""
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix == ".json" and p.is_file())
        if not files:
            return [], [Problem(str(path), None, "", [], "the directory holds no .json files")]
    else:
        files = [path]
    documents, problems = [], []
    for file in files:
        try:
            documents.append((file.name, json.loads(file.read_text(encoding="utf-8"))))
        except OSError as error:
            problems.append(Problem(str(file), None, "", [], error.strerror or str(error)))
        except (UnicodeDecodeError, ValueError) as error:
            problems.append(Problem(file.name, None, "", [], f"not valid JSON: {error}"))
    return documents, problems


class Schema:
    """A checked schema: its functions, headers, and the entries `fn.api_` returns."""

    def __init__(self, documents, internal=()):
        self.problems = []
        self.named = {}  # definition name -> (kind, Struct | Union | None)
        self.entries = []  # (definition key, entry, is internal)
        # Stock documents come first, so a clash is reported on the service's own entry.
        stock = [("internal.json", bundled("internal"), True)]
        stock += [(f"internal document {i}", doc, True) for i, doc in enumerate(internal)]
        defined = {key for _, entries in documents for key in _keys(entries)}
        if "union.Auth_" in defined and "headers.Auth_" not in defined:
            stock.append(("auth.json", bundled("auth"), False))
        documents = stock + [(name, entries, False) for name, entries in documents]

        indexed = [item for document in documents for item in self._index(*document)]
        self.internal = {key for key, _, internal in self.entries if internal}
        self.functions, self.errors = {}, []
        self.request_headers, self.response_headers = {}, {}
        for where, key, entry in indexed:
            self._resolve(where, key, entry)
        self._attach_errors()
        if self.problems:
            raise SchemaError(self.problems)
        self.entries.sort(key=lambda e: (not e[0].startswith("info."), e[0]))

    def api(self, include_internal=False):
        """The entries of the schema, as `fn.api_` returns them: info first, then by name."""
        return [entry for _, entry, internal in self.entries if include_internal or not internal]

    def definition(self, key):
        """What the entry `key` defines: a Struct, a Union, a Function, or for headers
        a pair of Structs (request and response); None for info and _ext entries."""
        kind, target = self.named[key]
        return self.functions[key] if kind == "fn" else target

    # Pass 1: shapes and names

    def _index(self, document, entries, internal):
        """Check each entry's outline and register its definition; yield what to resolve."""
        if not isinstance(entries, list):
            self._problem((document, None, ""), [], "a schema document is a JSON array of entries")
            return
        for index, entry in enumerate(entries):
            where = (document, index, "")
            if not isinstance(entry, dict):
                self._problem(where, [], "an entry is a JSON object")
                continue
            keys = [k for k in entry if k not in ("///", "->") and not k.startswith("$")]
            if len(keys) != 1:
                found = ", ".join(map(json.dumps, keys)) or "none"
                self._problem(where, [], f"an entry has exactly one definition key; found {found}")
                continue
            key = keys[0]
            where = (document, index, key)
            if not DEFINITION.fullmatch(key) or (key.startswith("_ext.") and not internal):
                self._problem(where, [key], "a definition key is info., struct., union., fn., "
                              "headers. or errors. followed by a letter or _, then word characters")
                continue
            if key in self.named:
                self._problem(where, [key], f"{key} is defined more than once")
                continue
            self._check_outline(where, key, entry)
            kind = key.split(".")[0]
            self.named[key] = (kind, {
                "union": Union, "fn": Union, "errors": Union, "struct": Struct,
                "headers": lambda name: (Struct(name), Struct(name + " ->")),
            }.get(kind, lambda name: None)(key))
            self.entries.append((key, entry, internal))
            yield where, key, entry

    def _check_outline(self, where, key, entry):
        """Check the keys around the definition: the comment, `->` and annotations."""
        comment = entry.get("///", "")
        if not isinstance(comment, str) and not (
            isinstance(comment, list) and all(isinstance(line, str) for line in comment)
        ):
            self._problem(where, ["///"], "a comment is a string or an array of strings")
        kind = key.split(".")[0]
        if "->" in entry and kind not in ("fn", "headers"):
            self._problem(where, ["->"], "only fn. and headers. entries have a -> key")
        for name in ("$authenticated", "$internal"):
            if name in entry and not isinstance(entry[name], bool):
                self._problem(where, [name], f"{name} is true or false")

    # Pass 2: types

    def _resolve(self, where, key, entry):
        """Fill in the definition `key` from its entry."""
        kind, target = self.named[key]
        body = entry[key]
        if kind in ("info", "_ext"):
            if not isinstance(body, dict) or (kind == "_ext" and body):
                self._problem(where, [key], "this entry holds an object")
        elif kind == "struct":
            self._fields(where, [key], body, target)
        elif kind == "union":
            self._tags(where, [key], body, target)
        elif kind == "errors":
            self._tags(where, [key], body, target)
            self.errors.append((where, target))
        elif kind == "headers":
            self._headers(where, [key], body, target[0], self.request_headers)
            if "->" not in entry:
                self._problem(where, [], "a headers entry has a -> key holding the response headers")
            else:
                self._headers(where, ["->"], entry["->"], target[1], self.response_headers)
        elif kind == "fn":
            self._function(where, key, entry, target)

    def _function(self, where, name, entry, call):
        """Resolve a function's arguments and its `->` result union."""
        call.tags[name] = self._fields(where, [name], entry[name], Struct(name))
        result = Union(name + " ->")
        results = entry.get("->")
        first = results[0] if isinstance(results, list) and results else None
        if not isinstance(first, dict) or [k for k in first if k != "///"] != ["Ok_"]:
            self._problem(where, ["->"], 'a function has a -> key holding an array whose first '
                          'element is {"Ok_": {...}} with the result fields')
        else:
            self._tags(where, ["->"], results, result)
        internal = name.endswith("_") or entry.get("$internal") is True
        authenticated = ("union.Auth_" in self.named and not internal
                         and entry.get("$authenticated", True) is not False)
        self.functions[name] = Function(name, call, result, authenticated, internal)

    def _tags(self, where, path, body, union):
        """Resolve an array of tag objects (union, errors or result) into `union`."""
        if not isinstance(body, list):
            return self._problem(where, path, "this holds an array of tag objects")
        for i, tag_entry in enumerate(body):
            tags = [k for k in tag_entry if k != "///"] if isinstance(tag_entry, dict) else []
            if len(tags) != 1:
                self._problem(where, path + [i], 'a tag object has exactly one tag key, '
                              'like {"Circle": {"radius": "number"}}')
                continue
            tag = tags[0]
            if not TAG.fullmatch(tag):
                self._problem(where, path + [i, tag], "a tag name starts with an uppercase "
                              "letter, then word characters")
            elif tag in union.tags:
                self._problem(where, path + [i, tag], f"the tag {tag} appears twice")
            union.tags[tag] = self._fields(where, path + [i, tag], tag_entry[tag], Struct(tag))

    def _fields(self, where, path, body, struct):
        """Resolve an object of field names to type expressions into `struct`."""
        if not isinstance(body, dict):
            self._problem(where, path, "this holds an object of field names to types")
            return struct
        for name, expression in body.items():
            if not FIELD.fullmatch(name):
                self._problem(where, path + [name], "a field name starts with a lowercase "
                              "letter, then word characters, and may end with !")
            struct.fields[name] = self._type(where, path + [name], expression)
        struct.required = tuple(n for n in struct.fields if not n.endswith("!"))
        return struct

    def _headers(self, where, path, body, struct, headers):
        """Resolve an object of header names to types into `struct`, and add them to `headers`."""
        if not isinstance(body, dict):
            return self._problem(where, path, "this holds an object of header names to types")
        for name, expression in body.items():
            if not HEADER.fullmatch(name):
                self._problem(where, path + [name], "a header name is @, a lowercase letter, "
                              "then word characters (headers are always optional: no !)")
            declared = struct.fields[name] = self._type(where, path + [name], expression)
            if headers.get(name, declared) != declared:
                self._problem(where, path + [name], f"{name} is declared twice, with two types")
            headers[name] = declared

    def _type(self, where, path, expression):
        """Resolve one type expression, such as "number?", ["string"] or {"string": "any"}."""
        if isinstance(expression, list):
            if len(expression) != 1:
                self._problem(where, path, 'an array type holds exactly one type, like ["string"]')
                return Type("any")
            return Type("array", False, self._type(where, path + [0], expression[0]))
        if isinstance(expression, dict):
            if list(expression) != ["string"]:
                self._problem(where, path, 'a map type is an object whose only key is "string", '
                              'like {"string": "number"}')
                return Type("any")
            return Type("map", False, self._type(where, path + ["string"], expression["string"]))
        if not isinstance(expression, str):
            self._problem(where, path, f"a type is a string, an array or an object, "
                          f"not {json.dumps(expression)}")
            return Type("any")
        name = expression.removesuffix("?")
        nullable = name != expression
        if name in SCALARS:
            return Type(name, nullable)
        if name in EXTENSIONS and where[2] in self.internal:  # checked against the functions
            return Type(name, nullable, self.functions)
        if name in self.named and name.split(".")[0] in ("struct", "union", "fn"):
            kind, target = self.named[name]
            return Type(kind, nullable, target)
        if name.startswith(("[", "{")) or name in ("array", "object", "map", "list"):
            self._problem(where, path, f"unknown type {json.dumps(expression)}: arrays are written "
                          '["T"] and maps {"string": "T"}, and neither can be nullable')
        else:
            self._problem(where, path, f"unknown type {json.dumps(expression)}")
        return Type("any")

    def _attach_errors(self):
        """Add every errors.* group's tags to function results, as rule 4 of the spec says.

        Every function can answer with the stock validation errors; only the
        service's own functions answer with the other groups."""
        for function in self.functions.values():
            for where, group in self.errors:
                if function.internal and group.name != "errors.Validation_":
                    continue
                for tag, struct in group.tags.items():
                    if tag in function.result.tags:
                        self._problem(where, [group.name], f"the tag {tag} is also a result "
                                      f"of {function.name}; a result tag has one meaning")
                    function.result.tags[tag] = struct

    def _problem(self, where, path, message):
        self.problems.append(Problem(*where, path, message))


def _keys(entries):
    """The definition keys of a document's entries, ignoring malformed ones."""
    if not isinstance(entries, list):
        return
    for entry in entries:
        if isinstance(entry, dict):
            yield from (k for k in entry if k not in ("///", "->") and not k.startswith("$"))
