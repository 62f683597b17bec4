"""Families of cases about what a server checks: types in every position, fields, which error
wins, what handlers return, and credentials.

Each family is a generator of cases in the fixture format; each request is
steered through the testbed contract (conformance/README.md).
"""

from .testbed import (
    AUTH,
    DISALLOWED,
    NAMES,
    REQUIREMENTS,
    STRICT,
    TYPES,
    UNAUTHENTICATED,
    VALUES,
    case,
    cases_of,
    echo,
    error,
    missing,
    nest,
    size,
    slug,
    step,
    unexpected,
    unwrap,
)


# A position -> (a description, and a function of a field's base name and a value giving
# the request, the valid answer, and for an invalid value the error tag and path prefix).
def _in_arguments(path):
    def build(field, value, bytes_):
        keys = [*path, field + "!"]
        mark = nest(keys, True) if bytes_ else None
        return ([{}, {"fn.echo": nest(keys, value)}], echo(nest(keys, value), mark),
                "ErrorInvalidRequestBody_", ["fn.echo", *keys])
    return build


def _in_collection(suffix, wrap, key):
    def build(field, value, bytes_):
        name = f"{field.removesuffix('Null')}{suffix}{'Null' if field.endswith('Null') else ''}!"
        return ([{}, {"fn.echo": {name: wrap(value)}}], echo({name: wrap(value)}, {name: {"*": True}} if bytes_ else None),
                "ErrorInvalidRequestBody_", ["fn.echo", name, key])
    return build


def _in_result(field, value, bytes_):
    return ([{"@result": {"Ok_": {field + "!": value}}}, {"fn.echo": {}}], [{}, {"Ok_": {field + "!": value}}],
            "ErrorInvalidResponseBody_", ["Ok_", field + "!"])


def _in_request_header(field, value, bytes_):
    return [{"@" + field: value}, {"fn.echo": {}}], [{}, {"Ok_": {}}], "ErrorInvalidRequestHeaders_", ["@" + field]


def _in_response_header(field, value, bytes_):
    return ([{"@responseHeaders": {"@" + field: value}}, {"fn.echo": {}}], [{"@" + field: value}, {"Ok_": {}}],
            "ErrorInvalidResponseHeaders_", ["@" + field])


POSITIONS = {  # a position -> (what it is called, how a value is put there, the rules it adds)
    "argument": ("an argument", _in_arguments([]), ["validation.always"]),
    "nested": ("a field of a struct in the arguments", _in_arguments(["every!"]), ["type.struct"]),
    "union-tag": ("a field of a union tag", _in_arguments(["union!", "Every"]), ["type.union"]),
    "array-element": ("an element of an array", _in_collection("Arr", lambda v: [v], 0), ["type.array"]),
    "map-value": ("a value of a map", _in_collection("Map", lambda v: {"k": v}, "k"), ["type.map"]),
    "result": ("a field of the result", _in_result, ["conv.response-validation"]),
    "request-header": ("a request header", _in_request_header, ["headers.optional", "conv.header-types"]),
    "response-header": ("a response header", _in_response_header, ["conv.response-headers"]),
}


def type_cases():
    """Every type in every position: its valid values, its invalid ones, and null."""
    for kind, (valid, invalid) in VALUES.items():
        for position, (where, build, requirements) in POSITIONS.items():
            base = f"testbed/types/{kind}/{position}"
            needs = [*REQUIREMENTS[kind], *requirements]
            marked = kind == "bytes" and position in ("array-element", "map-value")  # {"*": true}: ours
            needs_valid = [*needs, "conv.base64"] if marked else needs
            skip_result = position == "result" and kind == "bytes"  # base64 text a handler returns: see README
            for i, value in enumerate(valid):
                value, judged = unwrap(value)
                if not skip_result:
                    yield _valid(f"{base}/valid-{i}", f"A valid {TYPES[kind]} value as {where} is accepted.",
                                 [*needs_valid, *judged], *build(kind, value, kind == "bytes")[:2], spec=not judged)
            for i, (value, problem) in enumerate(invalid):
                value, judged = unwrap(value)
                yield _invalid(f"{base}/invalid-{i}", f"A value that is not {TYPES[kind]} as {where} is refused, "
                               "with its path.", [*needs, *judged], build(kind, value, False),
                               cases_of(kind, value, problem), spec=not judged and kind != "sel")
            null = ["conv.any-null"] if kind == "any" else []  # the spec's any is any value: is null one?
            yield _invalid(f"{base}/null-refused", f"null is not {TYPES[kind]} as {where}, unless the type is nullable.",
                           [*needs, "type.nullable", "type.null-is-not-absent", *null], build(kind, None, False),
                           [([], unexpected("Null", NAMES[kind]))], spec=not null)
            yield _valid(f"{base}/null-allowed", f"null is a value of {TYPES[kind]}? as {where}.",
                         [*needs, "type.nullable"], *build(kind + "Null", None, False)[:2])
            if not skip_result:
                yield _valid(f"{base}/nullable-value", f"A {TYPES[kind]} value is one of {TYPES[kind]}? too, "
                             f"as {where}.", [*needs_valid, "type.nullable"],
                             *build(kind + "Null", unwrap(valid[0])[0], kind == "bytes")[:2])
            for value, problem in invalid[-1:]:  # a nullable type lets null through, and nothing else
                value, judged = unwrap(value)
                yield _invalid(f"{base}/nullable-invalid", f"A value that is not {TYPES[kind]} is refused "
                               f"as {TYPES[kind]}? too, as {where}.", [*needs, "type.nullable", *judged],
                               build(kind + "Null", value, False), cases_of(kind, value, problem),
                               spec=not judged and kind != "sel")


def _valid(id_, description, requirements, request, answer, spec=True):
    return case(id_, description, requirements, [step(request, answer)], spec=spec)


def _invalid(id_, description, requirements, built, found, spec=True):
    """A case whose exact answer (paths, reasons, their order) is our convention; the spec's
    part of it is its MUST part."""
    request, _, tag, prefix = built
    requirements = [*requirements, "case.path", "conv.path-format",
                    "case.type-unexpected" if any("TypeUnexpected" in r for _, r in found) else "conv.reasons"]
    if tag == "ErrorInvalidRequestBody_":
        requirements.append("error.invalid-body")
    answer = [{}, {tag: {"cases": [{"path": [*prefix, *path], "reason": reason} for path, reason in found]}}]
    return case(id_, description, requirements, [step(request, answer)], spec=spec)


def strict_cases():
    """Required, optional and nullable fields: what may be left out, and what may be null."""
    strict = ["type.optional", "type.null-is-not-absent", "case.path", "conv.reasons", "error.invalid-body"]
    yield case("testbed/strict/all-required", "A call with every required field, and no optional one, is valid.",
               ["type.optional"], [step([{}, {"fn.strict": STRICT}], [{}, {"Ok_": STRICT}])])
    yield case("testbed/strict/optional-fields", "Optional fields may be sent, and a nullable optional one as null.",
               ["type.optional", "type.nullable"], [step([{}, {"fn.strict": {**STRICT, "note!": "n", "noteNull!": None}}],
                                                         [{}, {"Ok_": {**STRICT, "note!": "n", "noteNull!": None}}])])
    for name in STRICT:
        arguments = {k: v for k, v in STRICT.items() if k != name}
        yield case(f"testbed/strict/missing/{slug(name)}", f"Leaving out the required field {name} is refused.", strict,
                   [step([{}, {"fn.strict": arguments}], error("ErrorInvalidRequestBody_", (["fn.strict"], missing(name))))])
    for name, expected in (("bool", "Boolean"), ("point", "Object"), ("shape", "Object"), ("ints", "Array"),
                           ("names", "Object"), ("note!", "String")):
        yield case(f"testbed/strict/null/{slug(name)}", f"null in the non-nullable field {name} is refused.",
                   [*strict, "type.nullable", "case.type-unexpected"],
                   [step([{}, {"fn.strict": {**STRICT, name: None}}],
                         error("ErrorInvalidRequestBody_", (["fn.strict", name], unexpected("Null", expected))))])
    for name in ("boolNull", "pointNull", "noteNull!"):
        yield case(f"testbed/strict/nullable/{slug(name)}", f"null in the nullable field {name} is accepted.",
                   ["type.nullable"], [step([{}, {"fn.strict": {**STRICT, name: None}}], [{}, {"Ok_": {**STRICT, name: None}}])])
    yield case("testbed/strict/absent-is-not-null", "A nullable required field must still be sent.", strict,
               [step([{}, {"fn.strict": {k: v for k, v in STRICT.items() if k != "pointNull"}}],
                     error("ErrorInvalidRequestBody_", (["fn.strict"], missing("pointNull"))))])
    yield case("testbed/strict/optional-without-mark", "An optional field sent without its ! is an unknown field.",
               strict, [step([{}, {"fn.strict": {**STRICT, "note": "n"}}],
                             error("ErrorInvalidRequestBody_", (["fn.strict", "note"], DISALLOWED)))])
    yield case("testbed/strict/order", "Missing fields come first, in schema order, then the sent keys in the order sent.",
               [*strict, "conv.case-order", "case.count"],
               [step([{}, {"fn.strict": {"zzz": 1, "shape": {}, "bool": True, "aaa": 2}}], error(
                   "ErrorInvalidRequestBody_", *[(["fn.strict"], missing(k)) for k in STRICT if k not in ("bool", "shape")],
                   (["fn.strict", "zzz"], DISALLOWED), (["fn.strict", "shape"], size(0)), (["fn.strict", "aaa"], DISALLOWED)))],
               level="SHOULD")
    yield case("testbed/strict/all-problems", "Every problem of a call is reported, each as one case.",
               [*strict, "case.count"], [step([{}, {"fn.strict": {**STRICT, "bool": 1, "ints": [1, "2", None]}}], [{}, {
                   "ErrorInvalidRequestBody_": {"cases": {"$unordered": [
                       {"path": ["fn.strict", "bool"], "reason": unexpected("Number", "Boolean")},
                       {"path": ["fn.strict", "ints", 1], "reason": unexpected("String", "Integer")},
                       {"path": ["fn.strict", "ints", 2], "reason": unexpected("Null", "Integer")}]}}}])])


def precedence_cases():
    """Which error wins when a message has several problems (the order the server checks in)."""
    order = ["conv.order-of-checks"]
    time_case = (["@time_"], unexpected("String", "Integer"))
    rows = [  # (name, request, answer, what it shows)
        ("headers-before-body", [{"@time_": "x"}, {"fn.echo": {"int!": "x"}}], error("ErrorInvalidRequestHeaders_", time_case),
         "A header error wins over an error in the arguments."),
        ("headers-before-unknown-function", [{"@time_": "x"}, {"fn.nope": {}}], error("ErrorInvalidRequestHeaders_", time_case),
         "A header error wins over an unknown function."),
        ("headers-before-auth", [{"@time_": "x"}, {"fn.secret": {}}], error("ErrorInvalidRequestHeaders_", time_case),
         "A header error wins over missing credentials."),
        ("auth-before-body", [{}, {"fn.secret": {"hint!": 5}}], [{}, UNAUTHENTICATED],
         "A protected function without @auth_ is refused before its arguments are checked."),
        ("body-after-auth", [AUTH, {"fn.secret": {"hint!": 5}}],
         error("ErrorInvalidRequestBody_", (["fn.secret", "hint!"], unexpected("Number", "String"))),
         "With @auth_, a protected function's arguments are checked as usual."),
        ("unknown-function-unchecked", [{}, {"fn.nope": {"anything": [1, 2]}}],
         error("ErrorInvalidRequestBody_", (["fn.nope"], {"FunctionUnknown": {}})),
         "An unknown function's arguments are not checked."),
        ("body-before-handler", [{"@raise": True}, {"fn.echo": {"int!": "x"}}],
         error("ErrorInvalidRequestBody_", (["fn.echo", "int!"], unexpected("String", "Integer"))),
         "Invalid arguments are refused before the handler runs (so it cannot raise)."),
        ("raise-beats-result", [{"@raise": True, "@result": {"Ok_": {}}}, {"fn.echo": {}}],
         [{}, {"ErrorUnknown_": {"caseId": {"$type": "string"}}}], "A handler that raises gives ErrorUnknown_."),
        ("result-before-response-headers", [{"@result": {"Ok_": {"int!": "x"}}, "@responseHeaders": {"@int": "x"}},
                                            {"fn.echo": {}}],
         [{"$type": "object"}, {"ErrorInvalidResponseBody_": {"cases": [
             {"path": ["Ok_", "int!"], "reason": unexpected("String", "Integer")}]}}],
         "An invalid result wins over invalid response headers."),
        ("select-checked-with-headers", [{"@select_": {"struct.Nope": []}, "@time_": "x"}, {"fn.echo": {}}],
         error("ErrorInvalidRequestHeaders_", (["@select_", "struct.Nope"], DISALLOWED), time_case),
         "A selection is a header, checked with the others, in the order sent."),
    ]
    for name, request, answer, description in rows:  # which error wins is ours alone: no MUST part
        yield case(f"testbed/precedence/{name}", description, order, [step(request, answer)], spec=False)


def result_cases():
    """What a handler returns is checked before it leaves: results, response headers, and raising."""
    checked = ["conv.response-validation", "case.path"]
    rows = [  # (name, function, result, answer cases or None when valid, what it shows)
        ("ok", "fn.greet", {"Ok_": {"greeting": "hi"}}, None, "A valid result is sent as it is."),
        ("own-error", "fn.echo", {"ErrorEcho": {"reason": "r"}}, None, "A function's own error is a valid result."),
        ("group-error", "fn.greet", {"ErrorTestbed": {"code": 7, "note!": "n"}}, None,
         "A tag of an errors.* group is a result of every function of the service."),
        ("auth-error", "fn.greet", {"ErrorUnauthorized_": {"message!": "no"}}, None,
         "The errors union.Auth_ brings are results of every function."),
        ("group-error-required-only", "fn.greet", {"ErrorTestbed": {"code": 0}}, None,
         "A result of an errors.* group needs only its required fields."),
        ("other-function-error", "fn.greet", {"ErrorEcho": {"reason": "r"}}, [(["ErrorEcho"], DISALLOWED)],
         "Another function's error is not a result of this one."),
        ("unknown-tag", "fn.echo", {"Nope": {}}, [(["Nope"], DISALLOWED)], "An undeclared result tag is refused."),
        ("no-tag", "fn.echo", {}, [([], size(0))], "A result holds one tag."),
        ("two-tags", "fn.echo", {"Ok_": {}, "ErrorEcho": {"reason": "r"}}, [([], size(2))], "A result holds one tag only."),
        ("not-an-object", "fn.echo", "Ok_", [([], unexpected("String", "Object"))], "A result is an object."),
        ("fields-not-an-object", "fn.echo", {"Ok_": [1]}, [(["Ok_"], unexpected("Array", "Object"))],
         "A result's fields are an object."),
        ("missing-field", "fn.greet", {"Ok_": {}}, [(["Ok_"], missing("greeting"))], "A required result field must be there."),
        ("unknown-field", "fn.greet", {"Ok_": {"greeting": "g", "extra": 1}}, [(["Ok_", "extra"], DISALLOWED)],
         "An undeclared result field is refused."),
        ("error-fields", "fn.echo", {"ErrorEcho": {}}, [(["ErrorEcho"], missing("reason"))],
         "An error result's fields are checked too."),
        ("deep", "fn.echo", {"Ok_": {"every!": {"pointArr!": [{"x": 1, "y": 2}, {"x": 1}]}}},
         [(["Ok_", "every!", "pointArr!", 1], missing("y"))], "Result paths go as deep as the problem."),
    ]
    for name, function, result, found, description in rows:
        request = [{"@result": result}, {function: {"name": "a"} if function == "fn.greet" else {}}]
        answer = [{}, result] if found is None else error("ErrorInvalidResponseBody_", *found)
        yield case(f"testbed/result/{name}", description, checked if found else ["fn.results", "fn.errors-added", "errors.kinds"],
                   [step(request, answer)])
    yield case("testbed/result/unknown-error", "A handler that raises gives ErrorUnknown_ with a caseId; @id_ is kept.",
               ["conv.unknown-error", "header.id"], [step([{"@id_": [1, "a"], "@raise": True}, {"fn.echo": {}}],
                                                         [{"@id_": [1, "a"]}, {"ErrorUnknown_": {"caseId": {"$type": "string"}}}])])
    yield case("testbed/result/unsafe", "@unsafe_ true sends an invalid result as it is, and is not echoed.",
               ["conv.unsafe"], [step([{"@unsafe_": True, "@result": {"Ok_": {"int!": "x", "extra": [1]}}}, {"fn.echo": {}}],
                                      [{}, {"Ok_": {"int!": "x", "extra": [1]}}])], spec=False)
    yield case("testbed/result/unsafe-false", "@unsafe_ false leaves results checked.", ["conv.unsafe"],
               [step([{"@unsafe_": False, "@result": {"Ok_": {"int!": "x"}}}, {"fn.echo": {}}],
                     error("ErrorInvalidResponseBody_", (["Ok_", "int!"], unexpected("String", "Integer"))))])
    yield case("testbed/result/unsafe-headers-still-checked", "@unsafe_ does not turn off checking response headers.",
               ["conv.unsafe", "conv.response-headers"],
               [step([{"@unsafe_": True, "@responseHeaders": {"@int": "x"}}, {"fn.echo": {}}],
                     error("ErrorInvalidResponseHeaders_", (["@int"], unexpected("String", "Integer"))))])
    for name, result, found in (("not-an-object", [1], ([], unexpected("Array", "Object"))), ("no-tag", {}, ([], size(0))),
                                ("two-tags", {"Ok_": {}, "ErrorEcho": {"reason": "r"}}, ([], size(2))),
                                ("fields-not-an-object", {"Ok_": 5}, (["Ok_"], unexpected("Number", "Object")))):
        yield case(f"testbed/result/unsafe-{name}", "@unsafe_ lets no result through that is not one tag holding an "
                   "object: the answer is still a message.", ["conv.unsafe", "message.response-body"],
                   [step([{"@unsafe_": True, "@result": result}, {"fn.echo": {}}], error("ErrorInvalidResponseBody_", found),
                         spec={"message": [{"$type": "object"}, {"$not": {"$literal": result}}]})])  # (no body as given)
    yield case("testbed/result/invalid-keeps-headers", "The valid response headers a handler added go out with the "
               "ErrorInvalidResponseBody_ its invalid result gets.", ["conv.response-validation", "conv.response-headers"],
               [step([{"@responseHeaders": {"@int": 1}, "@result": {"Ok_": {"int!": "x"}}}, {"fn.echo": {}}],
                     [{"@int": 1}, error("ErrorInvalidResponseBody_", (["Ok_", "int!"], unexpected("String", "Integer")))[1]])])
    headers = [  # (name, added headers, answer cases or None when sent, what it shows)
        ("declared", {"@int": 1, "@strArr": ["a"]}, None, "Declared response headers of the right type are sent."),
        ("undeclared", {"@other": {"a": [1]}}, None, "Undeclared response headers starting with @ are sent."),
        ("no-prefix", {"plain": 1}, [(["plain"], {"RequiredObjectKeyPrefixMissing": {"prefix": "@"}})],
         "A response header name starts with @."),
        ("wrong-type", {"@bool": "yes", "@int": 1}, [(["@bool"], unexpected("String", "Boolean"))],
         "A declared response header of the wrong type is refused, and none is sent."),
    ]
    for name, added, found, description in headers:
        answer = [added, {"Ok_": {}}] if found is None else error("ErrorInvalidResponseHeaders_", *found)
        yield case(f"testbed/response-headers/{name}", description, ["conv.response-headers", "headers.optional"],
                   [step([{"@responseHeaders": added}, {"fn.echo": {}}], answer)])


def auth_cases():
    """union.Auth_: protected and open functions, and the @auth_ header."""
    protection = ["conv.auth-presence"]  # which functions are protected, and the sentence, are ours
    rows = [
        ("protected-without-auth", [{}, {"fn.secret": {}}], [{}, UNAUTHENTICATED],
         "A protected function called without @auth_ is refused.", ["auth.unauthenticated", *protection]),
        ("protected-with-auth", [AUTH, {"fn.secret": {}}], [{}, {"Ok_": {}}],
         "With @auth_, a protected function runs; judging the credentials is the handler's job.", ["auth.header"]),
        ("id-kept", [{"@id_": 5}, {"fn.secret": {}}], [{"@id_": 5}, UNAUTHENTICATED],
         "@id_ is reflected on the refusal too.", ["auth.unauthenticated", "header.id", *protection]),
        ("open-function", [{"@result": {"Ok_": {"greeting": "g"}}}, {"fn.greet": {"name": "a"}}],
         [{}, {"Ok_": {"greeting": "g"}}], "A function marked $authenticated false needs no @auth_.",
         ["auth.header", *protection]),
        ("handler-unauthorized", [{**AUTH, "@result": {"ErrorUnauthorized_": {"message!": "no"}}}, {"fn.secret": {}}],
         [{}, {"ErrorUnauthorized_": {"message!": "no"}}], "A handler may answer ErrorUnauthorized_.",
         ["auth.errors", "error.unauthorized"]),
        ("header-checked", [{"@auth_": {"Token": {}}}, {"fn.greet": {"name": "a"}}],
         error("ErrorInvalidRequestHeaders_", (["@auth_", "Token"], missing("token"))),
         "@auth_ is checked against union.Auth_, even for open functions.", ["auth.header", "header.auth", "conv.header-types"]),
        ("unknown-tag", [{"@auth_": {"Basic": {}}}, {"fn.secret": {}}],
         error("ErrorInvalidRequestHeaders_", (["@auth_", "Basic"], DISALLOWED)),
         "An @auth_ tag union.Auth_ does not have is refused.", ["auth.header", "header.auth", "conv.header-types"]),
    ]
    for name, request, answer, description, requirements in rows:
        yield case(f"testbed/auth/{name}", description, requirements, [step(request, answer)], spec=False)
