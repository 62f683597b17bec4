"""`python -m conformance list`, `check`, `coverage` and `generate`: the suite itself, its cases listed,
checked (lint.py), held to the requirements they cite, and made again from conformance/tables."""

from .. import tables
from ..language import suite
from ..reports.results import plural
from . import lint
from .options import selectors, unable


def add(commands):
    """list, check, coverage, generate: the suite itself."""
    listing = commands.add_parser("list", help="list the cases", description=(
        "List the cases, one per line: id, level, what it needs, the features it uses, and what it checks. "
        "A level such as SHOULD+MUST is a convention's case with a part the spec demands; --level MUST "
        "lists it, and a run at that level checks only that part."))
    selectors(listing)
    listing.set_defaults(run=listed)
    commands.add_parser("check", help="lint the suite itself", description=(
        "Check the fixtures: their format, unique ids, known requirements, the features they use, that the "
        "generated ones are current, and that what they expect fits the schema of their service.")).set_defaults(
        run=checked)
    coverage = commands.add_parser("coverage", help="show which rules have cases (server and client)",
                                   description="Show every requirement and the cases that check it.")
    coverage.add_argument("--missing", action="store_true", help="show only requirements without cases")
    coverage.set_defaults(run=covered)
    commands.add_parser("generate", help="write the testbed schema and cases from conformance/tables",
                        description="Write testbed.json, cases/testbed-*.json and clients/*.json from the "
                                    "tables in conformance/tables.").set_defaults(run=generated)


def listed(options, parser):
    """list: one line for each case selected."""
    listed = suite.select(suite.everything(), options.id, options.level, options.exclude)
    if not listed:
        parser.error("no case matches the --id, --exclude and --level given")
    for case in listed:
        needs = {"client": lambda: f"client:{case.client['mode']}", "schema": lambda: "schema loader",
                 "server": lambda: ",".join(case.requires) or "any"}[case.kind]()
        level = "+".join(sorted(case.levels(), key=["MAY", "SHOULD", "MUST"].index))
        print(f"{case.id:<55} {level:<11} {needs:<22} {','.join(case.features) or '-':<14} {case.description}")
    return 0


def checked(options, parser):
    """check: every problem of the suite itself; status 1 if there is one."""
    problems = lint.check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{plural(len(problems), 'problem')}")
    else:
        servers, clients, loaders = len(suite.load()), len(suite.load(suite.CLIENTS)), len(suite.load(suite.SCHEMAS))
        print(f"The suite is sound: {servers} server cases, {clients} client cases and {loaders} schema cases.")
    return 1 if problems else 0


def covered(options, parser):
    """coverage: each requirement and the cases that check it; status 1 if one has none."""
    rows = suite.coverage(suite.everything())
    missing = [requirement for requirement, ids in rows if not ids]
    for requirement, ids in rows:
        if ids and options.missing:
            continue
        print(f"{requirement['id']:<32} {len(ids):>4} {'  '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}")
        print(f"{'':<32}      {requirement['cites']}: {requirement['text'][:100]}")
    print(f"{len(rows) - len(missing)} of {len(rows)} requirements have cases")
    return 1 if missing else 0


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
