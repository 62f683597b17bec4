"""Field selection: the `@select_` header keeps only some fields of a result.

How this works
--------------
A selection is an object. `"->"` maps the result tag `Ok_` to the result
fields to keep, `"struct.Name"` to the fields of that struct to keep wherever
it appears, `"union.Name"` each tag to the fields of that tag to keep.
Anything not named keeps every field, and `{}` selects nothing away:

    {"->": {"Ok_": ["tape"]}, "struct.Evaluation": ["result"]}

`options(function)` lists what each struct and union reachable from the `Ok_`
fields could keep. A selection is a value of the stock type `_ext.Select_`,
checked against those options (`validate.check_select`): naming an unknown
or unreachable struct, or a field it lacks, is a request header error.
`apply()` trims a valid `Ok_` result; error results are returned whole.
"""

import functools

from .types import reachable


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


def apply(select, result, function):
    """Return the result union value `result` trimmed to the fields `select` keeps."""
    if "Ok_" not in result:
        return result
    return _union(select, result, function.result, select.get("->"))


def _value(select, value, type_):
    kind = type_.kind
    if kind == "array" and type(value) is list:
        return [_value(select, element, type_.of) for element in value]
    if kind == "map" and type(value) is dict:
        return {key: _value(select, element, type_.of) for key, element in value.items()}
    if kind == "struct":
        return _fields(select, value, type_.of, select.get(type_.of.name))
    if kind in ("union", "fn"):
        return _union(select, value, type_.of, select.get(type_.of.name))
    return value


def _union(select, value, union, tags):
    if type(value) is not dict or len(value) != 1:
        return value  # only possible with @unsafe_: leave what we cannot read alone
    [(tag, fields)] = value.items()
    if tag not in union.tags:
        return value
    return {tag: _fields(select, fields, union.tags[tag], (tags or {}).get(tag))}


def _fields(select, value, struct, keep):
    if type(value) is not dict:
        return value
    return {
        name: _value(select, field, struct.fields[name]) if name in struct.fields else field
        for name, field in value.items()
        if keep is None or name in keep
    }


def removes(select, function, path, key):
    """Whether `select` removes the field `key` of the object at `path` in a result.

    A handler need not fill in fields the caller did not select, so response
    validation forgives those missing fields."""
    union, keep, steps = function.result, select.get("->"), list(path)
    if not steps or steps[0] not in union.tags:
        return False
    struct, keep = union.tags[steps[0]], (keep or {}).get(steps.pop(0))
    while steps:
        step = steps.pop(0)
        if step not in struct.fields:
            return False
        type_ = struct.fields[step]
        while type_.kind in ("array", "map") and steps:
            type_, _ = type_.of, steps.pop(0)
        if type_.kind == "struct":
            struct, keep = type_.of, select.get(type_.of.name)
        elif type_.kind in ("union", "fn") and steps and steps[0] in type_.of.tags:
            tag = steps.pop(0)
            struct, keep = type_.of.tags[tag], (select.get(type_.of.name) or {}).get(tag)
        else:
            return False
    return keep is not None and key not in keep
