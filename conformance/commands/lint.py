"""`python -m conformance check` and `generate`: the suite's checks on itself, and the files its tables
make written again.

`check()` finds every problem: files that break the fixture schema (`conforms`,
for the small part of JSON Schema it uses), ids used twice or retired, unknown
requirements, features a case uses but does not list, limits it uses but does
not name (`limited`), generated files that are
not what `tables` makes, and expectations that do not fit the schema of their
service (`consistent`, with `fits`). `fair` holds levels to the rule: a case is
MUST only if the spec states every requirement it cites, and what a MUST part
expects speaks only the spec's vocabulary (`spec_words`).
"""

import json
from pathlib import Path

from .. import tables
from ..language import fitting, suite
from ..language.matchers import compare, is_matcher
from ..reports.results import plural
from ..tables.spec import HEADERS, RESULTS, TYPE_NAMES
from . import files
from .options import unable


def add(commands):
    """check and generate: the suite's checks on itself, and its generated files."""
    checking = commands.add_parser("check", help="lint the suite itself, or cases of your own", description=(
        "Check the fixtures: their format, unique ids, known requirements, the features they use, that the "
        "generated ones are current, and that what they expect fits the schema of their service."))
    checking.add_argument("--cases", metavar="PATH", help="check this file of server cases of your own (or the "
                          "*.json files of a folder), as run --cases takes it, instead of the suite's")
    checking.set_defaults(run=checked)
    commands.add_parser("generate", help="write the testbed schema and cases from conformance/tables",
                        description="Write testbed.json, cases/testbed-*.json and clients/*.json from the "
                                    "tables in conformance/tables.").set_defaults(run=generated)


def checked(options, parser):
    """check: every problem of the suite itself (or of the --cases given); status 1 if there is one."""
    problems, cases = own(Path(options.cases)) if options.cases else (check(), None)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{plural(len(problems), 'problem')}")
    elif cases is not None:
        print(f"{options.cases} is sound: {plural(len(cases), 'server case')}.")
    else:
        servers, clients, loaders = len(suite.load()), len(suite.load(suite.CLIENTS)), len(suite.load(suite.SCHEMAS))
        print(f"The suite is sound: {servers} server cases, {clients} client cases and {loaders} schema cases.")
    return 1 if problems else 0


def generated(options, parser):
    """generate: the testbed schema and its cases written again from the tables."""
    if not (suite.HERE.parent / "pyproject.toml").exists():  # an installed copy, not the suite's source
        return unable(parser, f"generate rewrites the suite's own files, in a clone of its repository; "
                                f"this copy is installed at {suite.HERE}")
    for name, text in tables.files().items():
        path = suite.HERE / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


def check(directory=suite.CASES):
    """Every problem with the suite, as readable lines (none when it is sound)."""
    fixture_schema = suite.load_json("fixture.schema.json")
    problems = [f"{name}: not what conformance/tables makes; run python -m conformance generate"
                for name, text in tables.files().items()
                if not (suite.HERE / name).exists() or (suite.HERE / name).read_text(encoding="utf-8") != text]
    root, shapes = Path(directory).parent, fixture_schema["$defs"]
    folders = {"": (Path(directory), fixture_schema), "clients/": (root / "clients", shapes["clientFile"]),
               "schemas/": (root / "schemas", shapes["schemaFile"])}  # file name prefix -> (folder, its shape)
    for prefix, (folder, shape) in folders.items():
        for path in sorted(folder.glob("*.json")):
            try:
                document = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as error:
                problems.append(f"{prefix}{path.name}: not valid JSON: {error}")
                continue
            problems += [f"{prefix}{path.name}: {p}" for p in suite.conforms(document, shape, fixture_schema)]
    if problems:
        return problems
    retired, seen = set(suite.load_json("retired.json")), {}
    known_requirements = {r["id"] for r in suite.load_json("requirements.json")}
    servers = suite.load(directory)
    schemas = {"calculator": calculator_schema(servers), "testbed": testbed_schema(servers)}
    for prefix, (folder, _) in folders.items():
        for case in suite.load(folder) if prefix else servers:
            where = f"{prefix}{case.file}: {case.id}"
            if case.id in seen:
                problems.append(f"{where}: the id is also used in {seen[case.id]}")
            if case.id in retired:
                problems.append(f"{where}: the id is retired and may not be used again")
            seen[case.id] = case.file
            problems += [f"{where}: unknown requirement {r}" for r in case.requirements
                         if r not in known_requirements]
            if prefix:  # a client or schema case: its spec part is a whole verdict
                problems += [f"{where}: {p}" for p in _level(case)]
                if case.spec is not None and (case.level == "MUST" or set(case.spec) != {"accepted"}):
                    problems.append(f"{where}: a spec part, which only a SHOULD case has, says only "
                                    "whether it is accepted")
                continue
            if tables.features(case.steps) != list(case.features):
                problems.append(f"{where}: its requests use the features {tables.features(case.steps)}, "
                                f"not {list(case.features)}")
            schema = schemas.get(next((s for s in ("calculator", "testbed") if s in case.requires), "testbed"))
            problems += [f"{where}: {p}" for p in limited(case)]
            problems += [f"{where}: {p}" for p in fitting.consistent(case, schema)]
            problems += [f"{where}: {p}" for p in fair(case, schema)]
    return problems


def own(path):
    """Every problem of a file (or a folder of files) of one's own server cases, as `check` finds them in the
    suite's (but whether they fit a schema: theirs is the target's own), and the cases it read."""
    fixture_schema, problems, cases, seen = suite.load_json("fixture.schema.json"), [], [], {}
    for file in sorted(path.glob("*.json")) if path.is_dir() else [path]:
        try:
            document = files.read_json(file)
        except ValueError as error:
            problems.append(str(error))
            continue
        shape = list(suite.conforms(document, fixture_schema, fixture_schema))
        problems += [f"{file}: {problem}" for problem in shape]
        cases += [] if shape else [suite.Case.read(case, str(file)) for case in document["cases"]]
    for case in cases:
        where = f"{case.file}: {case.id}"
        if case.id in seen:
            problems.append(f"{where}: the id is also used in {seen[case.id]}")
        seen[case.id] = case.file
        unknown = [f"{where}: unknown requirement {r}" for r in case.requirements if r not in suite.rule_levels()]
        problems += unknown
        if tables.features(case.steps) != list(case.features):
            problems.append(f"{where}: its requests use the features {tables.features(case.steps)}, "
                            f"not {list(case.features)}")
        problems += [f"{where}: {p}" for p in limited(case)]
        problems += [] if unknown else [f"{where}: {p}" for p in fair(case, {})]  # (levels follow requirements)
    if not cases and not problems:
        problems.append(f"{path}: holds no cases")
    return problems, cases


def limited(case):
    """Yield how the limits a case names differ from those it uses, or from those it may answer without."""
    used = set(_limits(case.steps))
    if used != set(case.limits):
        yield f"it uses the limits {sorted(used)}, but names {list(case.limits)}"
    if any("undeclared" in step for step in case.steps) and not used:
        yield "a step has an answer for undeclared limits, but the case uses none"


def _limits(value):
    """The names of the limits a value uses ({"$limit": name})."""
    if type(value) is dict:
        return ([value["$limit"]] if "$limit" in value else []) + [n for v in value.values() for n in _limits(v)]
    return [n for v in value for n in _limits(v)] if type(value) is list else []


def _level(case):
    """Yield how a case's level breaks the rule: MUST is what the spec's words demand."""
    derived = suite.level_of(case.requirements)
    if case.level not in (derived, "MAY"):
        conventions = [r for r in case.requirements if suite.rule_levels().get(r) != "MUST"]
        yield (f"it is {case.level}, but it cites {', '.join(conventions)}, a convention, so it is SHOULD"
               if conventions else f"it is {case.level}, but every requirement it cites is the spec's: MUST")


def fair(case, schema):
    """Yield how a server case's levels break the rule: MUST is what the spec's words demand."""
    yield from _level(case)
    own = {tag for key in schema if key.startswith("fn.")
           for tag in fitting.results(key, schema)} if "testbed" in case.requires else set()
    for number, step in enumerate(case.steps, 1):
        response = step["response"]
        if "spec" in response and case.level == "MUST":
            yield f"step {number}: a spec part in a MUST case, which is all MUST already"
        parts = [response] if case.level == "MUST" else [response["spec"]] if "spec" in response else []
        for part in parts:
            yield from (f"step {number}: at MUST, {p}" for p in spec_words(part, own))
        message = response.get("message")
        if "spec" in response and "message" in response["spec"] and not _has_matcher(message):
            if list(compare(response["spec"]["message"], message, {})):
                yield f"step {number}: our own answer does not pass the step's spec part"


def spec_words(expected, own=()):
    """Yield what a MUST expectation pins beyond the spec's words."""
    for word in ("status", "headers"):
        if word in expected:
            yield f"the HTTP {'status' if word == 'status' else 'headers'}, which the spec does not show"
    message = expected.get("message")
    if type(message) is not list or len(message) != 2:
        return
    headers, body = message
    if type(headers) is dict and not is_matcher(headers):
        for name in headers:
            if name.endswith("_") and name not in HEADERS:
                yield f"the header {name}, which the spec does not name"
        if "@base64_" in headers and '"*"' in json.dumps(headers["@base64_"]):
            yield "@base64_ marks inside an array or a map, which are ours"
    if type(body) is dict and not is_matcher(body):
        for tag, fields in body.items():
            if tag not in RESULTS and tag not in own:
                yield f"the result {tag}, which the spec does not name"
            if tag == "ErrorInvalidRequestBody_":
                yield from _cases_words(fields.get("cases") if type(fields) is dict else None)


def _cases_words(cases_):
    elements = cases_.get("$unordered", cases_.get("$includes", [])) if is_matcher(cases_) else cases_ or []
    if is_matcher(cases_) and not {"$unordered", "$includes"} & set(cases_):
        return
    if not is_matcher(cases_):
        yield "validation cases in a fixed order, which is ours"
    for element in elements:
        path, reason = element.get("path"), element.get("reason")
        if not is_matcher(path) and len(path or []) > 2 or any(type(p) is int for p in path or []):
            yield f"the whole path {json.dumps(path)}, whose steps past the field are ours"
        if is_matcher(reason) or type(reason) is not dict:
            continue
        for name, data in reason.items():
            if name != "TypeUnexpected":
                yield f"the reason {name}, which the spec does not show"
            elif type(data) is dict:
                names = [n for side in ("actual", "expected") if not is_matcher(data.get(side))
                         for n in data.get(side) or {}]
                yield from (f"the type name {n}, which the spec does not show" for n in names if n not in TYPE_NAMES)


def _has_matcher(value):
    if is_matcher(value):
        return True
    if type(value) is dict:
        return any(map(_has_matcher, value.values()))
    return type(value) is list and any(map(_has_matcher, value))


def calculator_schema(servers):
    """The calculator's schema as the fn.api_ cases pin it (public and stock entries): key -> entry."""
    [case] = [c for c in servers if c.id == "api/public/calculator-schema"]
    entries = case.steps[0]["response"]["message"][1]["Ok_"]["api"]["$unordered"]
    return fitting.keyed(entries + stock_entries(servers))


def testbed_schema(servers):
    """The testbed's schema: testbed.json, the stock entries, and those that union.Auth_ brings."""
    calculator = calculator_schema(servers)
    return {**fitting.keyed(tables.schema() + stock_entries(servers)),
            "errors.Auth_": calculator["errors.Auth_"], "headers.Auth_": calculator["headers.Auth_"]}


def stock_entries(servers):
    [internal] = [c for c in servers if c.id == "api/internal/stock-definitions"]
    return internal.steps[0]["response"]["message"][1]["Ok_"]["api"]["$includes"]
