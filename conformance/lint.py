"""The suite's checks on itself: `python -m conformance check`.

`check()` finds every problem with the suite: every file matches the fixture
schema (`conforms`, a checker for the small part of JSON Schema the fixture
schema uses), ids are unique and not retired, every requirement named exists,
every case lists the features its requests use, the generated files are what
`tables` makes, and every request the suite expects to succeed, and every
expected result, fits the schema of the service the case is for
(`consistent`, with `fits`, a checker of values against schema type
expressions, matchers allowed).
"""

import json
import re
from pathlib import Path

from . import cases, tables
from .match import is_matcher

FAILURES = ("ErrorParseFailure_", "ErrorInvalidRequestHeaders_", "ErrorInvalidRequestBody_",
            "ErrorUnauthenticated_", "ErrorUnknown_")


def check(directory=cases.CASES):
    """Every problem with the suite, as readable lines (none when it is sound)."""
    problems, seen = [], {}
    fixture_schema, requirements = cases.load_json("fixture.schema.json"), cases.load_json("requirements.json")
    retired = set(cases.load_json("retired.json"))
    known_requirements = {r["id"] for r in requirements}
    for name, text in tables.files().items():
        path = cases.HERE / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            problems.append(f"{name}: not what conformance/tables makes; run python -m conformance generate")
    for path in sorted(Path(directory).glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            problems.append(f"{path.name}: not valid JSON: {error}")
            continue
        problems += [f"{path.name}: {problem}" for problem in conforms(document, fixture_schema, fixture_schema)]
    clients = Path(directory).parent / "clients"
    for path in sorted(clients.glob("*.json")):
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except ValueError as error:
            problems.append(f"clients/{path.name}: not valid JSON: {error}")
            continue
        problems += [f"clients/{path.name}: {problem}"
                     for problem in conforms(document, fixture_schema["$defs"]["clientFile"], fixture_schema)]
    if problems:
        return problems
    for case in cases.load(clients):
        where = f"clients/{case['file']}: {case['id']}"
        if case["id"] in seen:
            problems.append(f"{where}: the id is also used in {seen[case['id']]}")
        seen[case["id"]] = case["file"]
        problems += [f"{where}: unknown requirement {r}" for r in case["requirements"] if r not in known_requirements]
    servers = cases.load(directory)
    schemas = {"calculator": calculator_schema(servers), "testbed": testbed_schema(servers)}
    for case in servers:
        where = f"{case['file']}: {case['id']}"
        if case["id"] in seen:
            problems.append(f"{where}: the id is also used in {seen[case['id']]}")
        if case["id"] in retired:
            problems.append(f"{where}: the id is retired and may not be used again")
        seen[case["id"]] = case["file"]
        problems += [f"{where}: unknown requirement {r}" for r in case["requirements"]
                     if r not in known_requirements]
        if tables.features(case["steps"]) != case["features"]:
            problems.append(f"{where}: its requests use the features {tables.features(case['steps'])}, "
                            f"not {case['features']}")
        schema = schemas.get(next((s for s in ("calculator", "testbed") if s in case["requires"]), "testbed"))
        problems += [f"{where}: {p}" for p in consistent(case, schema)]
    return problems


def conforms(value, rule, root, path="$"):
    """Yield how `value` breaks a JSON Schema (the small subset the fixture schema uses)."""
    if "$ref" in rule:
        rule = root["$defs"][rule["$ref"].split("/")[-1]]
    kinds = {"object": (dict,), "array": (list,), "string": (str,), "integer": (int,), "boolean": (bool,),
             "number": (int, float)}
    if "type" in rule and type(value) not in kinds[rule["type"]]:
        yield f"{path}: expected {rule['type']}, got {json.dumps(value)[:60]}"
        return
    if "enum" in rule and value not in rule["enum"]:
        yield f"{path}: {json.dumps(value)} is not one of {rule['enum']}"
    if "pattern" in rule and not re.fullmatch(rule["pattern"], value):
        yield f"{path}: {value!r} does not match {rule['pattern']}"
    if "minItems" in rule and len(value) < rule["minItems"]:
        yield f"{path}: needs at least {rule['minItems']} items"
    for key in rule.get("required", ()):
        if key not in value:
            yield f"{path}: {key} is missing"
    if "oneOf" in rule and sum(not list(conforms(value, r, root)) for r in rule["oneOf"]) != 1:
        yield f"{path}: matches {'none' if not value else 'more than one'} of the allowed forms"
    if type(value) is dict:
        properties = rule.get("properties", {})
        for key, item in value.items():
            if key in properties:
                yield from conforms(item, properties[key], root, f"{path}.{key}")
            elif rule.get("additionalProperties") is False:
                yield f"{path}: unknown key {key!r}"
    if type(value) is list and "items" in rule:
        for index, item in enumerate(value):
            yield from conforms(item, rule["items"], root, f"{path}[{index}]")


def calculator_schema(servers):
    """The calculator's schema as the fn.api_ cases pin it (public and stock entries): key -> entry."""
    [case] = [c for c in servers if c["id"] == "api/public/calculator-schema"]
    entries = case["steps"][0]["response"]["message"][1]["Ok_"]["api"]["$unordered"]
    return _keyed(entries + stock_entries(servers))


def testbed_schema(servers):
    """The testbed's schema: testbed.json, the stock entries, and those that union.Auth_ brings."""
    calculator = calculator_schema(servers)
    return {**_keyed(tables.schema() + stock_entries(servers)),
            "errors.Auth_": calculator["errors.Auth_"], "headers.Auth_": calculator["headers.Auth_"]}


def stock_entries(servers):
    [internal] = [c for c in servers if c["id"] == "api/internal/stock-definitions"]
    return internal["steps"][0]["response"]["message"][1]["Ok_"]["api"]["$includes"]


def _keyed(entries):
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
    for number, step in enumerate(case["steps"], 1):
        request, response = step["request"].get("message"), step["response"].get("message")
        if type(request) is not list or len(request) != 2 or type(request[1]) is not dict or len(request[1]) != 1:
            continue
        [(function, arguments)] = request[1].items()
        steered = "@select_" in request[0] or request[0].get("@pac_") is True or "@result" in request[0]
        results = _results(function, schema)
        if results is None or is_matcher(response) or type(response) is not list:
            continue
        body = response[1]
        alternatives = [body] if not is_matcher(body) else body.get("$oneOf", [])
        known = [r for r in alternatives if type(r) is dict and len(r) == 1 and next(iter(r)) in results]
        if alternatives and not known:  # one of several may be a tag another implementation's schema adds
            yield f"step {number}: {function} has no result {' or '.join(k for r in alternatives for k in r)}"
        for result in known:
            [(tag, fields)] = result.items()
            if not steered and not fits_fields(fields, results[tag], schema):
                yield f"step {number}: the expected {tag} does not fit its fields {results[tag]}"
            if tag not in FAILURES + ("ErrorUnavailable",) and not fits_fields(
                    arguments, schema[function][function], schema):
                yield f"step {number}: the request does not fit {function}, yet a {tag} is expected"


def _results(function, schema):
    """The result tags of a function (with every errors.* group), or None if unknown."""
    if function not in schema:
        return None
    results = {}
    for tag in schema[function]["->"]:
        results.update({k: v for k, v in tag.items() if k != "///"})
    for key, entry in schema.items():
        if key.startswith("errors."):
            for tag in entry[key]:
                results.update({k: v for k, v in tag.items() if k != "///"})
    return results


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
