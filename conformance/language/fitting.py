"""Whether what a case expects fits the schema of its service: `python -m conformance check` asks it of
every server case, so that an expectation no server could answer is found before anyone runs it.

An expected answer may hold matchers anywhere (language/matchers.py); a
matcher fits any type, and a schema pinned by a case (its fn.api_ answer) is
read with its $partial, $includes and $unordered wrappers taken off.
"""

from .matchers import is_matcher

FAILURES = ("ErrorParseFailure_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_",
            "ErrorUnauthenticated_", "ErrorUnknown_")


def keyed(entries):
    """A schema's entries, their matchers taken off, by the key each defines."""
    schema = {}
    for entry in map(_unwrapped, entries):
        [key] = [k for k in entry if k not in ("///", "->") and not k.startswith("$")]
        schema[key] = entry
    return schema


def _unwrapped(value):
    """An expected value with its $partial, $includes and $unordered wrappers taken off."""
    if is_matcher(value):
        for word in ("$partial", "$includes", "$unordered"):
            if word in value:
                return _unwrapped(value[word])
        return value
    if type(value) is dict:
        return {k: _unwrapped(v) for k, v in value.items()}
    if type(value) is list:
        return [_unwrapped(v) for v in value]
    return value


def consistent(case, schema):
    """Yield what in a case does not fit the schema of its service."""
    for number, step in enumerate(case.steps, 1):
        request, response = step["request"].get("message"), step["response"].get("message")
        if type(request) is not list or len(request) != 2 or type(request[1]) is not dict or len(request[1]) != 1:
            continue
        [(function, arguments)] = request[1].items()
        steered = "@select_" in request[0] or request[0].get("@pac_") is True or "@result" in request[0]
        tags = results(function, schema)
        if tags is None or is_matcher(response) or type(response) is not list or step["response"].get("raw"):
            continue
        body = response[1]
        alternatives = [body] if not is_matcher(body) else body.get("$oneOf", [])
        known = [r for r in alternatives if type(r) is dict and len(r) == 1 and next(iter(r)) in tags]
        if alternatives and not known:  # one of several may be a tag another implementation's schema adds
            yield f"step {number}: {function} has no result {' or '.join(k for r in alternatives for k in r)}"
        for result in known:
            [(tag, fields)] = result.items()
            if not steered and not fits_fields(fields, tags[tag], schema):
                yield f"step {number}: the expected {tag} does not fit its fields {tags[tag]}"
            if tag not in FAILURES + ("ErrorUnavailable",) and not fits_fields(
                    arguments, schema[function][function], schema):
                yield f"step {number}: the request does not fit {function}, yet a {tag} is expected"


def results(function, schema):
    """The result tags of a function (with every errors.* group), or None if unknown."""
    if function not in schema:
        return None
    groups = [schema[function]["->"], *(entry[key] for key, entry in schema.items() if key.startswith("errors."))]
    return {k: v for group in groups for tag in group for k, v in tag.items() if k != "///"}


SCALARS = {"boolean": lambda v: type(v) is bool, "integer": lambda v: type(v) is int,
           "number": lambda v: type(v) in (int, float), "string": lambda v: type(v) is str,
           "bytes": lambda v: type(v) is str, "any": lambda v: v is not None, "_ext.Select_": lambda v: type(v) is dict}


def fits(value, expression, schema):
    """Whether a value (matchers allowed anywhere) has the type a schema type expression names."""
    if is_matcher(value) or (type(value) is dict and list(value) == ["$bin"]):
        return True
    if type(expression) is list:  # [T]
        return type(value) is list and all(fits(v, expression[0], schema) for v in value)
    if type(expression) is dict:  # {"string": T}
        return type(value) is dict and all(fits(v, expression["string"], schema) for v in value.values())
    name = expression.removesuffix("?")
    if value is None:
        return name != expression
    if name in SCALARS:
        return SCALARS[name](value)
    if name.startswith("struct."):
        return fits_fields(value, schema[name][name], schema)
    tags = {name: schema[name][name]} if name.startswith("fn.") else {
        k: v for t in schema.get(name, {}).get(name, []) for k, v in t.items() if k != "///"}
    return type(value) is dict and len(value) == 1 and all(
        k in tags and fits_fields(v, tags[k], schema) for k, v in value.items())


def fits_fields(value, fields, schema):
    """Whether a value (matchers allowed) is an object with the fields of a struct, tag or call."""
    if is_matcher(value):
        return True
    required = {k for k in fields if not k.endswith("!")}
    return type(value) is dict and required <= value.keys() and all(
        k in fields and fits(v, fields[k], schema) for k, v in value.items())
