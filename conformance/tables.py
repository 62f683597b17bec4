"""The testbed: a schema built for testing, and the tables its cases are made from.

How this works
--------------
The testbed schema (`testbed.json`) holds every type expression of the
schema language in every position a type can take. Rather than writing its
few hundred fields by hand, `schema()` makes them from two small tables:
TYPES, one example of every kind of type, and VARIANTS, the ways a field can
wrap it (nullable, array, map, arrays and maps of nullables). The same tables
then make the testbed's cases (`cases/testbed-*.json`): each type's valid and
invalid values, in each position.

`python -m conformance generate` writes those files; `python -m conformance
check` fails when the committed files are not what the tables make, so the
JSON stays the suite and the tables stay its source.
"""

import json
import re

TYPES = {  # a field name -> the type expression a field of that name holds
    "bool": "boolean", "int": "integer", "num": "number", "str": "string", "bytes": "bytes",
    "any": "any", "point": "struct.Point", "shape": "union.Shape", "call": "fn.greet",
    "sel": "_ext.Select_",
}
VARIANTS = {  # a suffix of the field name -> the type expression, given the plain one
    "": lambda t: t,
    "Null": lambda t: t + "?",
    "Arr": lambda t: [t],
    "ArrNull": lambda t: [t + "?"],
    "Map": lambda t: {"string": t},
    "MapNull": lambda t: {"string": t + "?"},
}


def every(prefix="", suffix="!"):
    """One field for each type in each variant, such as "intArrNull!": ["integer?"]."""
    return {f"{prefix}{name}{variant}{suffix}": wrap(expression)
            for name, expression in TYPES.items() for variant, wrap in VARIANTS.items()}


def schema():
    """The testbed schema, as a list of entries."""
    echoed = {**every(), "every!": "struct.Every", "union!": "union.Every", "tree!": "union.Tree",
              "chain!": "struct.Chain"}
    strict = {"bool": "boolean", "boolNull": "boolean?", "point": "struct.Point",
              "pointNull": "struct.Point?", "shape": "union.Shape", "ints": ["integer"],
              "names": {"string": "string"}, "note!": "string", "noteNull!": "string?"}
    return [
        {"///": "A service built to test implementations of the protocol: see conformance/README.md.",
         "info.Testbed": {}},
        {"///": "Credentials: protected functions need an @auth_ header; the handler never judges it.",
         "union.Auth_": [{"Token": {"token": "string"}}]},
        {"///": "A header of every type, in both directions.",
         "headers.Every": every("@", ""), "->": every("@", "")},
        {"///": "An error any of the testbed's functions may answer with.",
         "errors.Testbed": [{"ErrorTestbed": {"code": "integer", "note!": "string"}}]},
        {"///": ["Echo: with no @result header the handler answers Ok_ with the arguments,",
                 "so every type can travel to the server and back."],
         "$authenticated": False,
         "fn.echo": echoed,
         "->": [{"Ok_": echoed}, {"///": "Only ever answered because @result asks for it.",
                                 "ErrorEcho": {"reason": "string"}}]},
        {"///": "Required fields: each must be sent, and only the nullable ones may be null.",
         "$authenticated": False, "fn.strict": strict, "->": [{"Ok_": strict}]},
        {"///": "A small function, whose call is the value of fn.greet fields.",
         "$authenticated": False, "fn.greet": {"name": "string"}, "->": [{"Ok_": {"greeting": "string"}}]},
        {"///": "A protected function: without @auth_ it is refused before its arguments are read.",
         "fn.secret": {"hint!": "string"}, "->": [{"Ok_": {"secret!": "string"}}]},
        {"///": "A field of every type, nested in a struct.", "struct.Every": every()},
        {"///": "A field of every type, in a union tag.", "union.Every": [{"Every": every()}, {"Nothing": {}}]},
        {"struct.Point": {"x": "integer", "y": "integer", "label!": "string"}},
        {"union.Shape": [{"Circle": {"radius": "number"}}, {"Square": {"side": "number", "label!": "string"}},
                         {"Dot": {}}]},
        {"///": "Recursive through its tags.",
         "union.Tree": [{"Leaf": {"value": "integer"}}, {"Node": {"left": "union.Tree", "right": "union.Tree"}}]},
        {"///": "Recursive through a nullable field.", "struct.Chain": {"value": "integer", "next": "struct.Chain?"}},
    ]


def dumps(value):
    """JSON text with one field per line, and arrays and objects that hold no others on one."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    return re.sub(r"[\[{][^\[\]{}]*[\]}]", lambda m: re.sub(r"\s*\n\s*", " ", m[0])
                  .replace("[ ", "[").replace(" ]", "]").replace("{ ", "{").replace(" }", "}"), text) + "\n"
