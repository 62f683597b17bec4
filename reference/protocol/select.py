"""Field selection: the `@select_` header keeps only some fields of a result.

How this works
--------------
A selection maps `"->"` to the `Ok_` fields to keep, `"struct.Name"` to the
fields of that struct to keep wherever it is, and `"union.Name"` each tag to
its fields to keep; anything not named keeps every field:

    {"->": {"Ok_": ["tape"]}, "struct.Evaluation": ["result"]}

It is a value of the stock type `_ext.Select_`, whose kind (`Selection`)
checks it against what the function's `Ok_` result can hold (`options()`).
`apply()` trims an `Ok_` result; errors are answered whole.
"""

import functools

from .types import Extension, reachable
from .validate import case, type_unexpected


@functools.cache
def options(function):
    """What `@select_` may name for `function`: {"->": {"Ok_": [...]}, "struct.X": [...], ...}."""
    ok = function.result.tags["Ok_"]
    found = {"->": {"Ok_": sorted(ok.fields)}}
    for node in reachable(ok):
        if node.name.startswith("struct.") and node.fields:
            found[node.name] = sorted(node.fields)
        elif node.name.startswith("union."):
            found[node.name] = {tag: sorted(s.fields) for tag, s in node.tags.items() if s.fields}
    return found


class Selection(Extension):
    """The `_ext.Select_` kind: a selection of what the function of the message offers."""

    def check(self, value, path, function):
        return _check_option(value, options(function), path)

    def generate(self, context):
        """Some of what the function being answered offers: a coin for each thing, in name order."""
        return _drawn(options(context.function), context)


def _check_option(value, option, path):
    if type(option) is list:  # field names
        if type(value) is not list:
            yield type_unexpected(value, "Array", path)
            return
        for index, name in enumerate(value):
            if name not in option:
                yield case((path, index), "ArrayElementDisallowed")
    elif type(value) is not dict:  # the result, a union's tags, or the whole selection
        yield type_unexpected(value, "Object", path)
    else:
        for key, inner in value.items():
            if key in option:
                yield from _check_option(inner, option[key], (path, key))
            else:
                yield case((path, key), "ObjectKeyDisallowed")


def _drawn(option, context):
    if type(option) is list:
        return sorted(name for name in option if context.random.boolean())
    drawn = {}
    for key in sorted(option):
        if context.random.boolean():
            inner = _drawn(option[key], context)
            if inner != {}:
                drawn[key] = inner
    return drawn


def apply(select, result, function):
    """Return the result union value `result` trimmed to the fields `select` keeps."""
    if "Ok_" not in result:
        return result
    return _tags(select, result, function.result, select.get("->"))


def trim(select, value, type_):
    """`value`, a `type_`, with the fields `select` leaves out removed wherever they are."""
    return TRIMS[type_.kind](select, value, type_)


def _tags(select, value, union, tags):
    if type(value) is not dict or len(value) != 1:
        return value  # only possible with @unsafe_: leave what we cannot read alone
    [(tag, fields)] = value.items()
    if tag not in union.tags:
        return value
    return {tag: _fields(select, fields, union.tags[tag], (tags or {}).get(tag))}


def _fields(select, value, struct, keep):
    if type(value) is not dict:
        return value
    kept = {}
    for name, field in value.items():  # a loop, not a comprehension: a frame less for each level
        if keep is None or name in keep:
            kept[name] = trim(select, field, struct.fields[name]) if name in struct.fields else field
    return kept


TRIMS = {  # what trimming does, by kind: only structs and unions lose fields
    **dict.fromkeys(("boolean", "integer", "number", "string", "bytes", "any", "ext"),
                    lambda select, value, type_: value),
    "array": lambda select, value, type_: ([trim(select, element, type_.of) for element in value]
                                           if type(value) is list else value),
    "map": lambda select, value, type_: ({key: trim(select, element, type_.of) for key, element in value.items()}
                                         if type(value) is dict else value),
    "struct": lambda select, value, type_: _fields(select, value, type_.of, select.get(type_.of.name)),
    "union": lambda select, value, type_: _tags(select, value, type_.of, select.get(type_.of.name)),
    "fn": lambda select, value, type_: _tags(select, value, type_.of, select.get(type_.of.name)),
}


def removes(select, function, path, key):
    """Whether `select` removes the field `key` of the object at `path` in a result.

    A handler need not fill in fields the caller did not select, so response
    validation forgives those missing fields."""
    if not path or path[0] not in function.result.tags:
        return False
    struct, keep = function.result.tags[path[0]], (select.get("->") or {}).get(path[0])
    at = 1
    while at < len(path):
        if path[at] not in struct.fields:
            return False
        type_, at = struct.fields[path[at]], at + 1
        while type_.kind in ("array", "map") and at < len(path):
            type_, at = type_.of, at + 1  # past an index or a key
        if type_.kind == "struct":
            struct, keep = type_.of, select.get(type_.of.name)
        elif type_.kind in ("union", "fn") and at < len(path) and path[at] in type_.of.tags:
            struct, keep = type_.of.tags[path[at]], (select.get(type_.of.name) or {}).get(path[at])
            at += 1
        else:
            return False
    return keep is not None and key not in keep
