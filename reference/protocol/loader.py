"""Schemas: check the documents that describe a service, and resolve their type expressions
into the tree of types.py, which the validator walks.

How this works
--------------
A schema is a list of entries, each an object with one definition key (`fn.add`,
`struct.Variable`, `union.Expression`, `headers.Auth_`, `errors.Availability`,
`info.Calculator`, `_ext.Select_`), `->` for functions and headers, and maybe a
`///` comment and `$` annotations. `Schema()` adds the stock documents
(`internal.json`; `auth.json` if the service defines `union.Auth_`) and works
in three passes, each in time that grows with the schema, collecting every
problem: index (check each entry's outline and name, and make an empty Struct
or Union for each definition, so that definitions may refer to one another in
any order), resolve (turn each type expression into a `Type`, and add each
`errors.*` group's tags to the results of the functions it serves), and
terminate (refuse types with no finite value, by types.sizes). If anything is
wrong, `SchemaError` lists every problem in document order.
"""

import functools
import json
import re
from pathlib import Path

from .documents import Document, Problem, SchemaError, Where
from .limits import MAX_PROBLEMS, MAX_SCHEMA_DEPTH
from .select import Selection
from .types import SCALARS, Function, Struct, Type, Union, sizes

STOCK = Path(__file__).parent / "schemas"
PREFIXES = ("info.", "struct.", "union.", "fn.", "headers.", "errors.", "_ext.")
NAMES = {  # what each kind of name looks like, and the rule in words
    "definition name": (re.compile(r"[A-Za-z_]\w*"), "after its prefix, a name starts with a letter or _, then "
                                                     "letters, digits or _"),
    "field name": (re.compile(r"[a-z][A-Za-z0-9_]*!?"), "a field name starts with a lowercase letter, then letters, "
                                                        "digits or _, and may end with !"),
    "tag": (re.compile(r"[A-Z][A-Za-z0-9_]*"), "a tag starts with an uppercase letter, then letters, digits or _"),
    "header name": (re.compile(r"@[a-z][A-Za-z0-9_]*"), "a header name is @, a lowercase letter, then letters, "
                                                        "digits or _ (headers are always optional: no !)"),
}
EXTENSIONS = {"_ext.Select_": Selection}  # the _ext. kinds of every schema; a mock adds its own
# What an entry holds beside its key and `///`; "$" allows annotations. `_errors` chooses the
# errors.* groups of an internal function; `_ignoreIfDuplicate` means nothing.
ALLOWED = {"info": {"$"}, "struct": {"$", "_ignoreIfDuplicate"}, "union": set(), "errors": set(),
           "fn": {"$", "->", "_errors", "_ignoreIfDuplicate"}, "headers": {"$", "->"}, "_ext": {"$"}}
EMPTY = {"union": Union, "fn": Union, "errors": Union, "struct": Struct}  # what a definition starts as


@functools.cache
def stock(name):
    """The entries of a stock schema document of this package: "internal" or "auth"."""
    return json.loads((STOCK / f"{name}.json").read_text(encoding="utf-8"))


class Schema:
    """A checked schema: its functions, headers, and the entries `fn.api_` returns. `documents` are
    the service's own (problems found reading them come in `problems`); `internal` adds documents
    whose entries `fn.api_` shows only on request, and `extensions` the `_ext.` kinds they use, by
    name: a mock adds its own this way."""

    def __init__(self, documents, problems=(), internal=(), extensions=None):
        self.documents = documents  # the service's own, from which a mock can be made
        self.problems, self.unlisted = list(problems), 0
        self.extensions = {**EXTENSIONS, **(extensions or {})}
        self.named, self.defined = {}, {}  # definition key -> (kind, what it defines); -> Where
        self.entries = []  # (definition key, entry, whether fn.api_ shows it only on request)
        self.functions, self.errors, self.error_groups = {}, [], {}
        self.request_headers, self.response_headers = {}, {}
        self.header_owners, self.tag_owners = {}, {}  # which entry declared a header, an errors.* tag
        self.info = None  # the key of the info entry
        # Stock documents come first, so that a clash is reported on the service's own entry.
        defined = {key for document in documents for key in _keys(document.entries)}
        sources = [] if _holds(defined, "internal") else [(Document("internal.json", stock("internal")), True)]
        sources += [(Document(f"internal document {i + 1}", entries), True) for i, entries in enumerate(internal)]
        if "union.Auth_" in defined and not _holds(defined, "auth"):
            sources.append((Document("auth.json", stock("auth")), False))
        self.stock = {document.name for document, _ in sources}
        indexed = [item for document, hidden in sources + [(d, False) for d in documents]
                   for item in self._index(document, hidden)]
        for where, key, entry in indexed:
            self._resolve(where, key, entry)
        self._attach_errors()
        self._check_termination(indexed)
        if self.problems:
            order = {document.name: i for i, document in enumerate(documents)}
            raise SchemaError(sorted(self.problems, key=lambda p: (order.get(p.where.document, -1),
                                                                  p.where.entry or 0)), documents, self.unlisted)
        self.entries.sort(key=lambda e: (not e[0].startswith("info."), e[0]))

    def api(self, include_internal=False):
        """The entries of the schema, as `fn.api_` returns them: info first, then by name."""
        return [entry for _, entry, internal in self.entries if include_internal or not internal]

    def definition(self, key):
        """What the entry `key` defines: a Struct, Union, Function, Extension, (Struct, Struct) or None."""
        kind, target = self.named[key]
        return self.functions[key] if kind == "fn" else target

    # Pass 1: outlines and names

    def _index(self, document, hidden):
        """Check each entry's outline and make its definition; yield what to resolve."""
        if not isinstance(document.entries, list):
            return self._problem(Where(document.name), [], "a schema document is a JSON array of entries")
        for index, entry in enumerate(document.entries):
            where = Where(document.name, index + 1)
            if not isinstance(entry, dict):
                self._problem(where, [], "an entry is a JSON object")
                continue
            keys = [k for k in entry if k.startswith(PREFIXES)]
            if len(keys) != 1:
                self._problem(where, [], "an entry has exactly one definition key (info., struct., union., fn., "
                              f"headers. or errors. and a name); found {', '.join(map(json.dumps, keys)) or 'none'}",
                              near=([k.split(".")[0] for k in entry if "." in k], [p.rstrip(".") for p in PREFIXES]))
                continue
            key, kind = keys[0], keys[0].split(".")[0]
            where = where._replace(key=key)
            if not self._named(where, [key], key.split(".", 1)[1], "definition name"):
                continue
            if kind == "_ext" and key not in self.extensions:
                self._problem(where, [key], f"{key} is not a stock _ext. type (those are "
                              f"{', '.join(sorted(self.extensions))})", near=([key], list(self.extensions)))
                continue
            if key in self.named or (kind == "info" and self.info):
                first = self.defined[key if key in self.named else self.info]
                message = (f"a schema has one info entry, and {self.info} is one" if key not in self.named else
                           f"{key} is a stock definition of every schema" if first.document in self.stock else
                           f"{key} is defined already")
                self._problem(where, [key], message, first=None if first.document in self.stock else first)
                continue
            self.info = key if kind == "info" else self.info
            self._check_outline(where, key, kind, entry)
            target = ((Struct(key), Struct(key + " ->")) if kind == "headers" else
                      self.extensions[key](self.functions, key) if kind == "_ext" else EMPTY.get(kind, lambda _: None)(key))
            self.named[key], self.defined[key] = (kind, target), where
            self.entries.append((key, entry, hidden))
            yield where, key, entry

    def _check_outline(self, where, key, kind, entry):
        allowed = ALLOWED[kind] | {key, "///"}
        for name in entry:
            if name not in allowed and not (name.startswith("$") and "$" in allowed):
                self._problem(where, [name], f"{json.dumps(name)} is not a key of {_a(kind)}. entry",
                              near=([name], list(allowed)))
        self._check_comment(where, [], entry)
        for name in ("$authenticated", "$internal"):
            if name in entry and not isinstance(entry[name], bool):
                self._problem(where, [name], f"{name} is true or false")

    def _check_comment(self, where, path, holder):
        comment = holder.get("///", "")
        if not isinstance(comment, str) and not (isinstance(comment, list) and all(type(c) is str for c in comment)):
            self._problem(where, path + ["///"], "a comment is a string or an array of strings")

    def _named(self, where, path, name, what):
        pattern, rule = NAMES[what]
        if pattern.fullmatch(name):
            return True
        self._problem(where, path, f"{json.dumps(name, ensure_ascii=False)} is not a {what}: {rule}")
        return False

    # Pass 2: types

    def _resolve(self, where, key, entry):
        kind, target = self.named[key]
        body = entry[key]
        if kind in ("info", "_ext") and (not isinstance(body, dict) or (kind == "_ext" and body)):
            self._problem(where, [key], "this entry holds an object" + " (an empty one)" * (kind == "_ext"))
        elif kind == "struct":
            self._fields(where, [key], body, target)
        elif kind in ("union", "errors"):
            self._tags(where, [key], body, target)
        elif kind == "headers":
            self._headers(where, [key], body, target[0], self.request_headers, "request")
            if "->" not in entry:
                self._problem(where, [], "a headers entry has a -> key holding the response headers")
            else:
                self._headers(where, ["->"], entry["->"], target[1], self.response_headers, "response")
        elif kind == "fn":
            self._function(where, key, entry, target)
        if kind == "errors":
            for i, tag in enumerate(target.tags):  # a tag in two groups would have two meanings
                owner = self.tag_owners.setdefault(tag, key)
                if owner != key:
                    self._problem(where, [key, i, tag], f"the tag {tag} is in {owner} too; a tag belongs to one "
                                  "errors.* group", first=self.defined[owner])
            self.errors.append((where, target))

    def _function(self, where, name, entry, call):
        """Resolve a function's arguments and its `->` result union."""
        call.tags[name] = self._fields(where, [name], entry[name], Struct(name))
        result, results = Union(name + " ->"), entry.get("->")
        first = results[0] if isinstance(results, list) and results else None
        if not isinstance(first, dict) or [k for k in first if k != "///"] != ["Ok_"]:
            self._problem(where, ["->"], 'a function has a -> key holding an array whose first element is '
                          '{"Ok_": {...}} with the result fields',
                          near=(list(entry) + list(first if isinstance(first, dict) else ()), ["->", "Ok_"]))
        else:
            self._tags(where, ["->"], results, result)
        internal = name.endswith("_") or entry.get("$internal") is True
        if "_errors" in entry and not internal:
            self._problem(where, ["_errors"], "only internal functions choose their errors.* groups")
        try:
            self.error_groups[name] = re.compile(entry.get("_errors", r"errors\.Validation_$" if internal
                                                           else r"errors\."))
        except (TypeError, re.error):
            self._problem(where, ["_errors"], "_errors is a regular expression, as a string")
        authenticated = "union.Auth_" in self.named and not internal and entry.get("$authenticated") is not False
        self.functions[name] = Function(name, call, result, authenticated, internal)

    def _tags(self, where, path, body, union):
        """Resolve an array of tag objects (union, errors or result) into `union`."""
        if not isinstance(body, list) or not body:
            return self._problem(where, path, "this holds a non-empty array of tag objects")
        for i, tag_entry in enumerate(body):
            tags = [k for k in tag_entry if k != "///"] if isinstance(tag_entry, dict) else []
            if len(tags) != 1:
                self._problem(where, path + [i], 'a tag object has exactly one tag key, like {"Circle": {"radius": "number"}}')
                continue
            [tag] = tags
            self._check_comment(where, path + [i], tag_entry)
            if self._named(where, path + [i, tag], tag, "tag") and tag in union.tags:
                self._problem(where, path + [i, tag], f"the tag {tag} appears twice")
            union.tags[tag] = self._fields(where, path + [i, tag], tag_entry[tag], Struct(tag))

    def _fields(self, where, path, body, struct):
        """Resolve an object of field names to type expressions into `struct`."""
        if not isinstance(body, dict):
            self._problem(where, path, "this holds an object of field names to types")
            return struct
        bare = set()  # the names so far, without their "!"
        for name, expression in body.items():
            if self._named(where, path + [name], name, "field name") and name.rstrip("!") in bare:
                self._problem(where, path + [name], f"{name.rstrip('!')} is a field once, either required or optional (!)")
            bare.add(name.rstrip("!"))
            struct.fields[name] = self._type(where, path + [name], expression)
        struct.required = tuple(n for n in struct.fields if not n.endswith("!"))
        return struct

    def _headers(self, where, path, body, struct, headers, side):
        """Resolve an object of header names to types into `struct`, and add them to `headers`."""
        if not isinstance(body, dict):
            return self._problem(where, path, "this holds an object of header names to types")
        for name, expression in body.items():
            self._named(where, path + [name], name, "header name")
            owner = self.header_owners.setdefault((side, name), where.key)
            if owner != where.key:
                self._problem(where, path + [name], f"{name} is declared by {owner} already", first=self.defined[owner])
            headers[name] = struct.fields[name] = self._type(where, path + [name], expression)

    def _type(self, where, path, expression):
        """Resolve one type expression, such as "number?", ["string"] or {"string": "any"}."""
        if len(path) > MAX_SCHEMA_DEPTH:
            return self._unknown(where, path[:MAX_SCHEMA_DEPTH], f"a type nests deeper than {MAX_SCHEMA_DEPTH} levels")
        if isinstance(expression, list):
            if len(expression) != 1:
                return self._unknown(where, path, 'an array type holds exactly one type, like ["string"]')
            return Type("array", False, self._type(where, path + [0], expression[0]))
        if isinstance(expression, dict):
            if list(expression) != ["string"]:
                return self._unknown(where, path, 'a map type is an object whose only key is "string", '
                                     'like {"string": "number"}')
            return Type("map", False, self._type(where, path + ["string"], expression["string"]))
        if not isinstance(expression, str):
            return self._unknown(where, path, f"a type is a string, an array or an object, not {json.dumps(expression)}")
        name = expression.removesuffix("?")
        if name in SCALARS:
            return Type(name, name != expression)
        kind, target = self.named.get(name, (None, None))
        if kind in ("struct", "union", "fn", "_ext"):
            return Type("ext" if kind == "_ext" else kind, name != expression, target)
        if name.startswith(("[", "{")) or name in ("array", "object", "map", "list"):
            return self._unknown(where, path, f"unknown type {json.dumps(expression)}: arrays are written "
                                 '["T"] and maps {"string": "T"}, and neither can be nullable')
        known = [*SCALARS, *(k for k, (kind, _) in self.named.items() if kind in ("struct", "union", "fn", "_ext"))]
        return self._unknown(where, path, f"unknown type {json.dumps(expression)}", near=([name], known))

    def _unknown(self, where, path, message, near=()):  # a type it cannot be: then take it as any
        self._problem(where, path, message, value=True, near=near)
        return Type("any")

    def _attach_errors(self):
        """Add each errors.* group's tags to the results of the functions it serves (rule 4 of the
        spec): every group for the service's own, the stock validation errors for internal ones."""
        for function in self.functions.values():
            pattern = self.error_groups.get(function.name)
            for where, group in self.errors:
                for tag, struct in group.tags.items() if pattern and pattern.match(group.name) else ():
                    if tag in function.result.tags:
                        self._problem(where, [group.name], f"the tag {tag} is also a result of {function.name}; "
                                      "a result tag has one meaning")
                    function.result.tags[tag] = struct

    # Pass 3: termination

    def _check_termination(self, indexed):
        """Work out the size of every struct's and union's smallest value, and refuse those with
        none: no finite value has their type."""
        named = [(where, key, self.named[key][1]) for where, key, _ in indexed
                 if key.split(".")[0] in ("struct", "union", "fn")]
        nodes = [node for kind, target in self.named.values() if kind in EMPTY or kind == "headers"
                 for node in (target if kind == "headers" else [target])]
        nodes += [tag for node in nodes if isinstance(node, Union) for tag in node.tags.values()]
        for function in self.functions.values():
            nodes += [function.result, *function.result.tags.values()]
        sizes(nodes)
        for where, key, node in named:
            if node.size is None and not (isinstance(node, Union) and not node.tags):
                self._problem(where, [key], "no finite value has this type: every way through its required "
                              "fields leads back to it (make one optional or nullable)")

    def _problem(self, where, path, message, value=False, near=(), first=None):
        if len(self.problems) < MAX_PROBLEMS:  # past them, counted: a file of a million is not a million objects
            self.problems.append(Problem(where, path, message, first, value, near))
        else:
            self.unlisted += 1


def _keys(entries):
    for entry in entries if isinstance(entries, list) else ():
        yield from (k for k in entry if k.startswith(PREFIXES)) if isinstance(entry, dict) else ()


def _holds(defined, name):
    """Whether the service's own documents hold every entry of a stock document already."""
    return set(_keys(stock(name))) <= defined


def _a(kind):
    return ("an " if kind in ("info", "errors") else "a ") + kind
