"""`python -m conformance client` and `schema`: a client library, or a schema loader, checked through a
driver (targets/drivers.py) with the cases of its kind (runs/client_suite.py, runs/schema_suite.py)."""

from ..reports import terminal
from ..reports.results import plural
from ..runs import client_suite, schema_suite
from ..targets.remote import Trouble
from .options import outcomes, selectors, unable
from .run import remembered, selected_cases


def add(commands):
    """client and schema: a library checked through a driver."""
    client = commands.add_parser("client", help="check a client library through a driver", description=(
        "Check a client: a scripted server of the suite's own plays the other side, and --command, a driver "
        "for the client under test, makes the calls (conformance/README.md, Checking a client)."))
    client.add_argument("--command", required=True, metavar="CMD", help="the driver to start; the scripted "
                        "server's URL is added as its last argument")
    selectors(client)
    outcomes(client)
    client.set_defaults(run=main)

    schema = commands.add_parser("schema", help="check a schema loader through a driver", description=(
        "Check a schema loader: --command, a driver for the library under test, is handed each case's "
        "schema documents and answers whether the library accepts them, and where each problem is "
        "(conformance/README.md, Checking a schema loader)."))
    schema.add_argument("--command", required=True, metavar="CMD", help="the driver to start")
    selectors(schema)
    outcomes(schema)
    schema.set_defaults(run=main)


DRIVEN = {"client": (client_suite.run, "client"), "schema": (schema_suite.run, "schema loader")}  # command -> what it checks


def main(options, parser):
    """Check what the driver --command drives (a client, a schema loader) with the cases of its kind."""
    kind = options.subcommand
    run, what = DRIVEN[kind]
    asked, chosen, aside, unselected = selected_cases(options, parser, kind)
    subject = f"the {what} driven by {options.command!r}"
    print(f"Checking {subject}. Running {plural(len(chosen), 'case')}.", flush=True)
    try:
        ending = terminal.running(asked, chosen, lambda progress: run(chosen, options.command, asked, progress))
    except Trouble as trouble:
        return unable(parser, trouble)
    ending = ending._replace(results=ending.results + aside)
    return remembered(terminal.finish(asked, ending, subject, f"a {what}", unselected), kind, ending.results)
