"""Schemas: read the documents that describe a service, check them, and resolve
their type expressions into a small tree that the validator walks.

How this works
--------------
A schema is a list of entries. Each entry is a JSON object with one definition
key (`fn.add`, `struct.Variable`, `union.Expression`, `headers.Auth_`,
`errors.Availability`, `info.Calculator`), a `->` key for functions and
headers, and optionally a `///` comment and `$` annotations such as
`"$authenticated": false`.

`load()` gathers the documents: a JSON file, a directory of JSON files, JSON
text, or entries already in memory. `Schema()` adds the bundled stock
documents (`internal.json` always, `auth.json` when the service defines
`union.Auth_`; neither when the service's own documents already hold all of
its entries) and works in passes, collecting every problem instead of
stopping at the first:

1. index: check each entry's shape and name, and create an empty `Struct` or
   `Union` for every named definition, so that definitions may refer to one
   another in any order, and to themselves (`union.Expression` does);
2. resolve: turn every type expression into a `Type` (see types.py), fill
   those structs and unions in, and append each `errors.*` group's tags to
   the results of the functions it applies to;
3. terminate: refuse types that have no finite value, such as a struct whose
   required field is that struct again.

If anything is wrong, `SchemaError` lists every problem, in document order,
each with where it is (documents.py: the document, the entry counted from 1,
the path inside it, and the line and column when the schema was JSON text).
"""

import functools
import json
import re
from collections.abc import Iterable
from pathlib import Path

from .documents import Document, Problem, SchemaError, Where, located, parse, read
from .types import Function, Struct, Type, Union

BUNDLED = Path(__file__).parent / "schemas"
SCALARS = {"boolean", "integer", "number", "string", "bytes", "any"}
KINDS = ("info.", "struct.", "union.", "fn.", "headers.", "errors.", "_ext.")
NAME = re.compile(r"[A-Za-z_]\w*")  # a definition's name, after its kind
EXTENSIONS = {"_ext.Select_", "_ext.Call_", "_ext.Stub_"}
FIELD = re.compile(r"[a-z][A-Za-z0-9_]*!?")
TAG = re.compile(r"[A-Z][A-Za-z0-9_]*")
HEADER = re.compile(r"@[a-z][A-Za-z0-9_]*")
# What an entry may hold beside its definition key, a `///` comment and, where
# `$` is listed, annotations. `_errors` chooses the errors.* groups of an
# internal function; `_ignoreIfDuplicate` is accepted and means nothing.
BESIDE = {"info": {"$"}, "struct": {"$", "_ignoreIfDuplicate"}, "union": set(), "errors": set(),
          "fn": {"$", "->", "_errors", "_ignoreIfDuplicate"}, "headers": {"$", "->"}, "_ext": {"$"}}


@functools.cache
def bundled(name):
    """The entries of a schema document shipped in this package, such as "calculator"."""
    return json.loads((BUNDLED / f"{name}.json").read_text(encoding="utf-8"))


def load(source: "str | Path | list | Schema", internal: Iterable = ()) -> "Schema":
    """Load a schema from a JSON file, a directory of JSON files, JSON text, a list of
    entries, or the documents of a schema already loaded.

    `internal` adds more stock documents whose entries `fn.api_` only shows on
    request; the mock server adds its control functions this way."""
    problems = []
    if isinstance(source, Schema):
        documents = source.documents
    elif isinstance(source, str) and source.lstrip().startswith("["):
        documents, problems = parse("<schema>", source)
    elif isinstance(source, (str, Path)):
        documents, problems = read(Path(source))
    else:
        documents = [Document("<schema>", source)]
    return Schema(documents, internal, problems)


class Schema:
    """A checked schema: its functions, headers, and the entries `fn.api_` returns."""

    def __init__(self, documents, internal=(), problems=()):
        self.documents = documents  # the service's own, from which a mock can be made
        self.problems = list(problems)
        self.named = {}  # definition name -> (kind, Struct | Union | None)
        self.defined = {}  # definition name -> the Where of its entry
        self.entries = []  # (definition key, entry, is internal)
        # Stock documents come first, so a clash is reported on the service's own entry.
        defined = {key for document in documents for key in _keys(document.entries)}
        stock = [(Document("internal.json", bundled("internal")), True)] if not _holds(defined, "internal") else []
        stock += [(Document(f"internal document {i}", entries), True) for i, entries in enumerate(internal)]
        if "union.Auth_" in defined and not _holds(defined, "auth"):
            stock.append((Document("auth.json", bundled("auth")), False))

        indexed = [item for source in stock + [(d, False) for d in documents] for item in self._index(*source)]
        self.functions, self.errors, self.chosen = {}, [], {}
        self.request_headers, self.response_headers, self.owners = {}, {}, {}
        for where, key, entry in indexed:
            self._resolve(where, key, entry)
        self._attach_errors()
        self._check_termination(indexed)
        if self.problems:
            texts = {document.name: document.text for document in documents}
            order = {document.name: i for i, document in enumerate(documents)}
            problems = [located(problem, texts) for problem in self.problems]
            problems.sort(key=lambda p: (order.get(p.where.document, -1), p.where.entry or 0,
                                         p.where.line or 0, p.where.column or 0))
            raise SchemaError(problems)
        self.entries.sort(key=lambda e: (not e[0].startswith("info."), e[0]))

    def api(self, include_internal=False):
        """The entries of the schema, as `fn.api_` returns them: info first, then by name."""
        return [entry for _, entry, internal in self.entries if include_internal or not internal]

    def definition(self, key):
        """What the entry `key` defines: a Struct, Union, Function, a pair of Structs (headers), or None."""
        kind, target = self.named[key]
        return self.functions[key] if kind == "fn" else target

    # Pass 1: shapes and names

    def _index(self, document, internal):
        """Check each entry's outline and register its definition; yield what to resolve."""
        if not isinstance(document.entries, list):
            self._problem(Where(document.name), [], "a schema document is a JSON array of entries")
            return
        for index, entry in enumerate(document.entries):
            where = Where(document.name, index + 1)
            if not isinstance(entry, dict):
                self._problem(where, [], "an entry is a JSON object")
                continue
            keys = [k for k in entry if k.startswith(KINDS)]
            if len(keys) != 1:
                found = ", ".join(map(json.dumps, keys)) or "none"
                self._problem(where, [], "an entry has exactly one definition key (info., struct., "
                              f"union., fn., headers. or errors. and a name); found {found}")
                continue
            key, kind = keys[0], keys[0].split(".")[0]
            where = Where(document.name, index + 1, key)
            if not NAME.fullmatch(key.split(".", 1)[1]) or (kind == "_ext" and key not in EXTENSIONS):
                self._problem(where, [key], "a definition name starts with a letter or _, then word "
                              "characters (and _ext. names are the stock _ext.Select_, _ext.Call_ "
                              "and _ext.Stub_)")
                continue
            info = next((k for k in self.named if k.startswith("info.")), None) if kind == "info" else None
            if key in self.named or info:
                first = self.defined[key if key in self.named else info]
                self.problems.append(Problem(where, [key], f"{key} is defined already" if key in self.named
                                             else f"a schema has one info entry, and {info} is one", first))
                continue
            self._check_outline(where, key, kind, entry)
            self.named[key] = (kind, {
                "union": Union, "fn": Union, "errors": Union, "struct": Struct,
                "headers": lambda name: (Struct(name), Struct(name + " ->")),
            }.get(kind, lambda name: None)(key))
            self.defined[key] = where
            self.entries.append((key, entry, internal))
            yield where, key, entry

    def _check_outline(self, where, key, kind, entry):
        """Check the keys around the definition: the comment, `->` and annotations."""
        for name in entry:
            allowed = BESIDE[kind] | {key, "///"}
            if name not in allowed and not (name.startswith("$") and "$" in allowed):
                self._problem(where, [name], f"a {kind}. entry holds no {name} key")
        self._check_comment(where, [], entry)
        for name in ("$authenticated", "$internal"):
            if name in entry and not isinstance(entry[name], bool):
                self._problem(where, [name], f"{name} is true or false")

    def _check_comment(self, where, path, holder):
        comment = holder.get("///", "")
        if not isinstance(comment, str) and not (
                isinstance(comment, list) and all(isinstance(line, str) for line in comment)):
            self._problem(where, path + ["///"], "a comment is a string or an array of strings")

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
            self._claim_error_tags(where, key, body, target)
            self.errors.append((where, target))
        elif kind == "headers":
            self._headers(where, [key], body, target[0], self.request_headers, "request")
            if "->" not in entry:
                self._problem(where, [], "a headers entry has a -> key holding the response headers")
            else:
                self._headers(where, ["->"], entry["->"], target[1], self.response_headers, "response")
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
        if "_errors" in entry and not internal:
            self._problem(where, ["_errors"], "only internal functions choose their errors.* groups")
        try:
            self.chosen[name] = re.compile(entry.get("_errors", r"errors\.Validation_$" if internal else r"errors\."))
        except (TypeError, re.error):
            self._problem(where, ["_errors"], "_errors is a regular expression, as a string")
        authenticated = ("union.Auth_" in self.named and not internal
                         and entry.get("$authenticated", True) is not False)
        self.functions[name] = Function(name, call, result, authenticated, internal)

    def _tags(self, where, path, body, union):
        """Resolve an array of tag objects (union, errors or result) into `union`."""
        if not isinstance(body, list) or not body:
            return self._problem(where, path, "this holds a non-empty array of tag objects")
        for i, tag_entry in enumerate(body):
            tags = [k for k in tag_entry if k != "///"] if isinstance(tag_entry, dict) else []
            if len(tags) != 1:
                self._problem(where, path + [i], 'a tag object has exactly one tag key, '
                              'like {"Circle": {"radius": "number"}}')
                continue
            tag = tags[0]
            self._check_comment(where, path + [i], tag_entry)
            if not TAG.fullmatch(tag):
                self._problem(where, path + [i, tag], "a tag name starts with an uppercase "
                              "letter, then letters, digits or _")
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
                              "letter, then letters, digits or _, and may end with !")
            elif name.rstrip("!") in {other.rstrip("!") for other in struct.fields}:
                self._problem(where, path + [name], f"{name.rstrip('!')} is a field once, either "
                              "required or optional (!)")
            struct.fields[name] = self._type(where, path + [name], expression)
        struct.required = tuple(n for n in struct.fields if not n.endswith("!"))
        return struct

    def _headers(self, where, path, body, struct, headers, side):
        """Resolve an object of header names to types into `struct`, and add them to `headers`."""
        if not isinstance(body, dict):
            return self._problem(where, path, "this holds an object of header names to types")
        for name, expression in body.items():
            if not HEADER.fullmatch(name):
                self._problem(where, path + [name], "a header name is @, a lowercase letter, "
                              "then letters, digits or _ (headers are always optional: no !)")
            owner = self.owners.setdefault((side, name), where.key)
            if owner != where.key:
                self.problems.append(Problem(where, path + [name], f"{name} is declared by {owner} already",
                                             self.defined[owner]))
            headers[name] = struct.fields[name] = self._type(where, path + [name], expression)

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
        kind, target = self.named.get(name, (None, None))
        if kind == "_ext":  # checked against the functions: selections, mock calls and stubs
            return Type(name, nullable, self.functions)
        if kind in ("struct", "union", "fn"):
            return Type(kind, nullable, target)
        if name.startswith(("[", "{")) or name in ("array", "object", "map", "list"):
            self._problem(where, path, f"unknown type {json.dumps(expression)}: arrays are written "
                          '["T"] and maps {"string": "T"}, and neither can be nullable')
        else:
            self._problem(where, path, f"unknown type {json.dumps(expression)}")
        return Type("any")

    def _claim_error_tags(self, where, key, body, group):
        """Refuse a tag that another errors.* group has too: it would have two meanings."""
        for i, tag in enumerate(group.tags):
            owner = self.owners.setdefault(("errors", tag), key)
            if owner != key:
                self.problems.append(Problem(where, [key, i, tag], f"the tag {tag} is in {owner} too; a tag "
                                             "belongs to one errors.* group", self.defined[owner]))

    def _attach_errors(self):
        """Add each errors.* group's tags to the results of the functions whose `_errors`
        pattern matches its name: every group for the service's own functions, only the
        stock validation errors for internal ones (rule 4 of the spec)."""
        for function in self.functions.values():
            pattern = self.chosen.get(function.name)
            for where, group in self.errors:
                if pattern is None or not pattern.match(group.name):
                    continue
                for tag, struct in group.tags.items():
                    if tag in function.result.tags:
                        self._problem(where, [group.name], f"the tag {tag} is also a result "
                                      f"of {function.name}; a result tag has one meaning")
                    function.result.tags[tag] = struct

    # Pass 3: termination

    def _check_termination(self, indexed):
        """Work out the height of every struct, union and call, and refuse those that have
        none: no finite value has their type.

        A struct's smallest value nests the smallest values of its required,
        non-nullable struct, union and call fields (collections may be empty);
        a union's is its shallowest tag's. Starting from the structs that nest
        nothing, heights are found (and lowered) until nothing changes; what is
        left without one leads back to itself whichever way it goes."""
        named = [(where, key, self.named[key][1]) for where, key, _ in indexed
                 if key.split(".")[0] in ("struct", "union", "fn")]
        nodes = [node for _, _, node in named]
        nodes += [tag for node in nodes if isinstance(node, Union) for tag in node.tags.values()]
        for function in self.functions.values():
            nodes += [function.result, *function.result.tags.values()]
        changed = True
        while changed:
            changed = False
            for node in nodes:
                height = _height(node)
                if height is not None and (node.height is None or height < node.height):
                    node.height, changed = height, True
        for where, key, node in named:
            if node.height is None and not (isinstance(node, Union) and not node.tags):
                self._problem(where, [key], "no finite value has this type: every way through its "
                              "required fields leads back to it (make one optional or nullable)")

    def _problem(self, where, path, message):
        self.problems.append(Problem(where, path, message))


def _height(node):
    """The height of a Struct's or Union's smallest value, from those known so far, or None."""
    if isinstance(node, Union):
        return min((tag.height for tag in node.tags.values() if tag.height is not None), default=None)
    height = 0
    for name, type_ in node.fields.items():
        if not name.endswith("!") and not type_.nullable and type_.kind in ("struct", "union", "fn"):
            if type_.of.height is None:
                return None
            height = max(height, type_.of.height + 1)
    return height


def _keys(entries):
    """The definition keys of a document's entries, ignoring malformed ones."""
    if isinstance(entries, list):
        for entry in entries:
            if isinstance(entry, dict):
                yield from (k for k in entry if k.startswith(KINDS))


def _holds(defined, name):
    """Whether the service's own documents already hold every entry of a stock document."""
    return set(_keys(bundled(name))) <= defined
