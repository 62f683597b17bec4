"""`python -m conformance list` and `coverage`: the suite's cases, one line each, and the requirements
they cite, each with the cases that check it."""

from ..language import suite
from .options import selectors


def add(commands):
    """list and coverage: the suite's cases, and what they cover."""
    listing = commands.add_parser("list", help="list the cases", description=(
        "List the cases, one per line: id, level, what it needs, the features it uses, and what it checks. "
        "A level such as SHOULD+MUST is a convention's case with a part the spec demands; --level MUST "
        "lists it, and a run at that level checks only that part."))
    selectors(listing)
    listing.set_defaults(run=listed)
    coverage = commands.add_parser("coverage", help="show which rules have cases (server and client)",
                                   description="Show every requirement and the cases that check it.")
    coverage.add_argument("--missing", action="store_true", help="show only requirements without cases")
    coverage.set_defaults(run=covered)


def listed(options, parser):
    """list: one line for each case selected."""
    try:
        listed = suite.select(suite.everything(), options.id, options.level, options.exclude, options.keyword)
    except ValueError as error:
        parser.error(str(error))
    if not listed:
        parser.error("no case matches the --id, --exclude, -k and --level given")
    for case in listed:
        needs = {"client": lambda: f"client:{case.client['mode']}", "schema": lambda: "schema loader",
                 "server": lambda: ",".join(case.requires) or "any"}[case.kind]()
        level = "+".join(sorted(case.levels(), key=["MAY", "SHOULD", "MUST"].index))
        print(f"{case.id:<55} {level:<11} {needs:<22} {','.join(case.features) or '-':<14} {case.description}")
    return 0


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
