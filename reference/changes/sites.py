"""Sites: where in a schema a recorded exchange meets a change, so that a finding can count the calls it touches.

How this works
--------------
A site is (side, id of a definition of the old schema, a field or tag name
or None): compatibility.py's findings each hold the sites they are at
(`Finding.add`), and these functions give the sites an exchange is at. A
request-side change touches the calls it gets refused: each case of the new
server's refusal, its path read with the old schema's types, leads to the
site it is at (a field, a tag, a whole object, a function's calls, a name a
recorded `@select_` carries). A response-side change touches the answers
that hold a value at its site (`held`): those the old clients read there.
"""

from ..protocol.types import Union


def refused_at(comparison, exchange, refusal):
    """The request sites the new server's refusal is about: each case's path read with the old schema's
    types (the function's calls, for a function unknown or protected now)."""
    [(tag, fields)] = refusal.items()
    if tag in ("ErrorUnauthenticated_", "ErrorUnauthorized_"):
        return {("call", exchange.function)}
    function = comparison.old.functions.get(exchange.function)
    cases = fields.get("cases", []) if type(fields) is dict else []
    if tag == "ErrorInvalidRequestHeaders_":
        return {_selected(comparison, exchange, case) if case["path"][:1] == ["@select_"] and function else
                _site(comparison.headers["request"], case) for case in cases}
    if function is None or any("FunctionUnknown" in case["reason"] for case in cases):
        return {("call", exchange.function)}
    return {_site(function.arguments, case, 1) for case in cases}


def _site(node, case, start=0):
    """The site of a validation case, its path followed from `node` (a Struct) through the old types: a
    missing field's case is about the object that lacks it; any other, about the field or tag its
    path last enters (a key refused, or a value wrong inside it)."""
    keyed, type_ = (node, None), None  # (the node, its field or tag the path last entered); that field's type
    for step in case["path"][start:]:
        if type_ is not None and type_.kind in ("array", "map"):
            type_ = type_.of  # (the step is an index or a key)
            continue
        if type_ is not None:
            if type_.kind not in ("struct", "union", "fn"):
                break  # inside a value that holds no fields
            node, type_ = type_.of, None
        keyed = (node, step)
        if isinstance(node, Union):
            if step not in node.tags:
                break
            node = node.tags[step]
        elif step in node.fields:
            type_ = node.fields[step]
        else:
            break
    if "RequiredObjectKeyMissing" in case["reason"]:
        return "request", id(type_.of if type_ is not None and type_.kind == "struct" else node), None
    return "request", id(keyed[0]), keyed[1]


def _selected(comparison, exchange, case):
    """The site of a case about a recorded `@select_`, read with the old schema: a name it gives a
    definition, a tag, or a field of one (as compatibility.py's `selected-*` findings are sited)."""
    path, selection = case["path"][1:], exchange.headers["@select_"]
    named = comparison.old.named.get(path[0], (None, None))
    node = comparison.old.functions[exchange.function].result if path[0] == "->" else named[1]
    if node is None or len(path) == 1:
        return "select", id(node), None
    keep = selection[path[0]]
    if isinstance(node, Union):
        struct = node.tags.get(path[1])
        if struct is None or len(path) == 2:
            return "select", id(node), path[1]
        node, keep, path = struct, keep[path[1]], path[1:]
    return "select", id(node), keep[path[1]] if type(keep) is list and type(path[1]) is int else None


def held(comparison, exchange):
    """The response sites an exchange's answer holds a value at, as the old schema reads it: its union, its
    tag, each object and field inside."""
    found = set()
    function = comparison.old.functions.get(exchange.function)
    if function is not None:
        _tags(exchange.result, function.result, found)
    return found


def _value(value, type_, found):
    if type_.kind in ("array", "map") and type(value) in (list, dict):
        for element in value if type(value) is list else value.values():
            _value(element, type_.of, found)
    elif type_.kind == "struct":
        _fields(value, type_.of, found)
    elif type_.kind in ("union", "fn"):
        _tags(value, type_.of, found)


def _fields(value, struct, found):
    if type(value) is dict:
        found.add(("response", id(struct), None))
        for name, element in value.items():
            found.add(("response", id(struct), name))
            if name in struct.fields:
                _value(element, struct.fields[name], found)


def _tags(value, union, found):
    if type(value) is dict and len(value) == 1:
        [(tag, fields)] = value.items()
        found.update({("response", id(union), None), ("response", id(union), tag)})
        if tag in union.tags:
            _fields(fields, union.tags[tag], found)
