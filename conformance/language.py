"""The schema language, as the suite reads it itself: the types a server's fn.api_ declares.

How this works
--------------
The suite imports nothing of the reference implementation, so that the two
check each other: this is its own reading of a schema (PROTOCOL.md, sections
5 and 6), made for the checks of a case (the binary encoding a server should
use) and for the fuzzer (fuzz.py), which makes values of every type and
checks answers against them. `Schema(entries)` reads the entries `fn.api_`
answers with `includeInternal!`, every stock one included, and trusts them:
the server loaded them already. A type is a `Type`: its kind (one of KINDS),
whether null is allowed, and `of`: the element type of an array or map, the
name of a struct, union or function. `problems(value, type)` yields where and
why a value is not of its type, as the server's validation cases would say
it; `encoding()` is the binary encoding the server must use.
"""

import json
import re
import subprocess
import sys
import zlib
from typing import Any, NamedTuple

SCALARS = ("boolean", "integer", "number", "string", "bytes", "any")
KINDS = (*SCALARS, "array", "map", "struct", "union", "fn", "ext")
INT64 = (-(2**63), 2**63 - 1)
BASE64 = re.compile(r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")
KEYS = ("info.", "struct.", "union.", "fn.", "headers.", "errors.", "_ext.")


class Type(NamedTuple):
    kind: str
    nullable: bool = False
    of: Any = None


class Schema:
    """A server's schema: its structs and unions (fields by name), its functions (arguments, and
    results by tag, the errors.* tags included), its headers, by name."""

    def __init__(self, entries):
        """Read `entries`; a ValueError says which one is not a schema's entry, or names no definition."""
        self.entries, self.structs, self.unions, self.functions = entries, {}, {}, {}
        self.request_headers, self.response_headers, groups, own = {}, {}, {}, {}
        for number, entry in enumerate(entries):
            try:
                [key] = [k for k in entry if k.startswith(KEYS)]
                if key.startswith("struct."):
                    self.structs[key] = self.fields(entry[key])
                elif key.startswith(("union.", "errors.")):
                    (self.unions if key.startswith("union.") else groups)[key] = self.tags(entry[key])
                elif key.startswith("fn."):
                    internal = key.endswith("_") or entry.get("$internal") is True
                    own[key] = entry.get("_errors", r"errors\.Validation_$" if internal else r"errors\.")
                    self.functions[key] = Function(key, self.fields(entry[key]), self.tags(entry["->"]),
                                                   internal, entry.get("$authenticated") is not False)
                elif key.startswith("headers."):
                    self.request_headers.update(self.fields(entry[key]))
                    self.response_headers.update(self.fields(entry["->"]))
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, RecursionError) as error:
                raise ValueError(f"entry {number + 1} of the schema is not one the suite reads "
                                 f"({unreadable(entry, error)}): {str(entry)[:200]}") from None
        self.check()
        for name, chosen in choices(own, groups).items():
            for group in chosen:
                self.functions[name].results.update(groups[group])
        self.protected = "union.Auth_" in self.unions  # (a function is, unless internal or $authenticated: false)

    def check(self):
        """Raise a ValueError naming a function without Ok_, or a type that no entry defines."""
        for function in self.functions.values():
            if "Ok_" not in function.results:
                raise ValueError(f"{function.name} of the schema has no Ok_ result")
        defined = {"struct": self.structs, "union": self.unions, "fn": self.functions}
        every = [self.request_headers, self.response_headers, *self.structs.values(),
                 *(fields for tags in self.unions.values() for fields in tags.values()),
                 *(f.arguments for f in self.functions.values()),
                 *(fields for f in self.functions.values() for fields in f.results.values())]
        for fields in every:
            for name, type_ in fields.items():
                while type_.kind in ("array", "map"):
                    type_ = type_.of
                if type_.kind not in KINDS or (type_.kind in defined and type_.of not in defined[type_.kind]):
                    raise ValueError(f"the field {name} of the schema is of {type_.of or type_.kind}, which it "
                                     "does not define")

    def fields(self, body):
        """Field name -> Type, of an object of field names to type expressions."""
        return {name: self.type(expression) for name, expression in body.items()}

    def tags(self, body):
        """Tag -> its fields, of an array of tag objects."""
        return {tag: self.fields(fields) for item in body for tag, fields in item.items() if tag != "///"}

    def type(self, expression):
        """The Type of a type expression: "number?", ["string"], {"string": "any"}, "struct.X"."""
        if isinstance(expression, list):
            return Type("array", False, self.type(expression[0]))
        if isinstance(expression, dict):
            return Type("map", False, self.type(expression["string"]))
        name = expression.removesuffix("?")
        kind = name if name in SCALARS else name.split(".")[0].lstrip("_")
        return Type(kind, name != expression, None if name in SCALARS else name)

    def struct(self, type_):
        """The fields of a struct, union tag or call Type: {tag: fields} for a union or a call."""
        if type_.kind == "struct":
            return self.structs[type_.of]
        return self.unions[type_.of] if type_.kind == "union" else {type_.of: self.functions[type_.of].arguments}

    def encoding(self):
        """The binary encoding (PROTOCOL.md, section 8): the names of every function, Ok_, and every field
        and tag reachable from a function's arguments or its Ok_ fields, by code point, with the signed
        CRC-32 of them joined by newlines; (names, checksum)."""
        names, seen, waiting = {"Ok_"}, set(), []
        for name, function in self.functions.items():
            names.add(name)
            waiting += [function.arguments, function.results["Ok_"]]
        while waiting:
            fields = waiting.pop()
            names.update(fields)
            for type_ in fields.values():
                while type_.kind in ("array", "map"):
                    type_ = type_.of
                if type_.kind in ("struct", "union", "fn") and (type_.kind, type_.of) not in seen:
                    seen.add((type_.kind, type_.of))
                    inner = self.struct(type_)
                    waiting += [inner] if type_.kind == "struct" else list(inner.values())
                    names.update(() if type_.kind == "struct" else inner)
        return sorted(names), checksum(names)

    def problems(self, value, type_, path=()):
        """Yield (path, reason) for each way `value` is not a `type_` (null only if nullable; `any` never
        null; an integer written as one and within 64 bits; bytes as base64 text, or bytes)."""
        if value is None:
            if not type_.nullable:
                yield path, "TypeUnexpected"
            return
        kind = type_.kind
        if kind in ("struct", "union", "fn"):
            yield from (self.object_problems(value, self.struct(type_), path) if kind == "struct"
                        else self.tag_problems(value, self.struct(type_), path))
        elif kind in ("array", "map"):
            if type(value) is not (list if kind == "array" else dict):
                yield path, "TypeUnexpected"
            else:
                for key, element in (enumerate(value) if kind == "array" else value.items()):
                    yield from self.problems(element, type_.of, (*path, key))
        elif not SCALAR_CHECKS[kind](value):
            yield path, "NumberOutOfRange" if type(value) is int and kind in ("integer", "number") else "TypeUnexpected"

    def object_problems(self, value, fields, path):
        """Yield the problems of an object that should hold `fields`."""
        if type(value) is not dict:
            yield path, "TypeUnexpected"
            return
        for name in fields:
            if not name.endswith("!") and name not in value:
                yield path, "RequiredObjectKeyMissing"
        for name, element in value.items():
            if name in fields:
                yield from self.problems(element, fields[name], (*path, name))
            else:
                yield (*path, name), "ObjectKeyDisallowed"

    def tag_problems(self, value, tags, path):
        """Yield the problems of a value that should be one of `tags`, holding its fields."""
        if type(value) is not dict:
            yield path, "TypeUnexpected"
        elif len(value) != 1:
            yield path, "ObjectSizeUnexpected"
        else:
            [(tag, fields)] = value.items()
            if tag not in tags:
                yield (*path, tag), "ObjectKeyDisallowed"
            else:
                yield from self.object_problems(fields, tags[tag], (*path, tag))


def unreadable(entry, error):
    """Why an entry of a schema could not be read, in the schema language's words."""
    if type(entry) is not dict:
        return "an entry is a JSON object"
    keys = [key for key in entry if key.startswith(KEYS)]
    if len(keys) != 1:
        return f"an entry has one key naming what it defines, not {len(keys)}"
    if keys[0].startswith(("fn.", "headers.")) and "->" not in entry:
        return f"{keys[0]} has no ->"
    if isinstance(error, RecursionError):
        return "a type in it is nested too deep to read"
    return ('fields are an object of type expressions (text, [TYPE] or {"string": TYPE}), and tags an array '
            "of objects")


def checksum(names):
    """The checksum of a binary encoding of `names`: the signed CRC-32 of them sorted by code point, joined
    by newlines."""
    crc = zlib.crc32("\n".join(sorted(names)).encode())
    return crc - 2**32 if crc >= 2**31 else crc


PLAIN = re.compile(r"[^*+?{|\\]*(\\.[^*+?{|\\]*)*")  # a pattern without repeats, alternatives or backreferences
MATCHING = """import json, re, sys
own, groups = json.load(sys.stdin)
json.dump({name: [g for g in groups if re.match(pattern, g)] for name, pattern in own.items()}, sys.stdout)"""


def choices(own, groups, seconds=5):
    """The errors.* groups each function's `_errors` pattern chooses ({function: [group]}), or a ValueError.
    Python's regular expressions have no time limit, and a pattern of nested repeats may take years on
    one name: a plain pattern is matched here, the others in a child process stopped after `seconds`."""
    try:
        plain = {name: re.compile(pattern) for name, pattern in own.items() if PLAIN.fullmatch(pattern)}
        chosen = {name: [g for g in groups if pattern.match(g)] for name, pattern in plain.items()}
        rest = {name: pattern for name, pattern in own.items() if name not in plain}
        if rest:
            for pattern in rest.values():
                re.compile(pattern)
            child = subprocess.run([sys.executable, "-c", MATCHING], input=json.dumps([rest, list(groups)]),
                                   capture_output=True, text=True, timeout=seconds, check=True)
            chosen.update(json.loads(child.stdout))
    except (TypeError, re.error) as error:
        raise ValueError(f"an _errors of the schema is not a regular expression ({error})") from None
    except subprocess.TimeoutExpired:
        raise ValueError(f"an _errors of the schema takes over {seconds} s to match the errors.* names "
                         f"({', '.join(f'{k}: {v!r}' for k, v in rest.items())[:300]})") from None
    except subprocess.CalledProcessError as error:
        raise ValueError(f"an _errors of the schema cannot be matched: {error.stderr.strip()[-200:]}") from None
    return chosen


class Function(NamedTuple):
    name: str
    arguments: dict  # field name -> Type
    results: dict  # tag -> its fields: Ok_, the function's own errors, its errors.* groups' tags
    internal: bool  # a stock function, or one marked $internal
    authenticated: bool  # not marked "$authenticated": false


SCALAR_CHECKS = {
    "boolean": lambda value: type(value) is bool,
    "integer": lambda value: type(value) is int and INT64[0] <= value <= INT64[1],
    "number": lambda value: type(value) is float or (type(value) is int and INT64[0] <= value <= INT64[1]),
    "string": lambda value: type(value) is str,
    "bytes": lambda value: type(value) is bytes or (type(value) is str and BASE64.fullmatch(value) is not None),
    "any": lambda value: True,
    "ext": lambda value: type(value) is dict,  # a selection, a mock's call or stub: rules of their own
}
