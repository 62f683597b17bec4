"""`python -m reference.server` (and `sdms-server`): serve the calculator or the testbed over HTTP.

The services it serves are services/'s; how a server command serves (its
options, HTTP or HTTPS, the core alone or the engine room) is cli/serving.py's.
"""

import sys

from .cli.options import Parser, interruptible, loading, positive, program, rate

with loading():  # (Ctrl-C while the command loads its parts: status 130, no traceback)
    from .cli.serving import add_server_options, check_server_options, kind, serve
    from .services import calculator, memory, testbed


@interruptible
def main(argv=None):
    """Serve the calculator (or the testbed) over HTTP until interrupted."""
    parser = Parser(
        prog=program("reference.server"),
        description="Serve the demo calculator, or the conformance suite's testbed, over HTTP "
                    "(POST [headers, body] messages).")
    parser.add_argument("--service", choices=["calculator", "testbed"], default="calculator",
                        help="the calculator, or the testbed that conformance/README.md describes "
                             "(default %(default)s)")
    add_server_options(parser, port=8000)
    calculator_options = parser.add_argument_group("options of the calculator")
    calculator_options.add_argument("--unavailable-rate", type=rate, metavar="RATE",
                                    help="answer ErrorUnavailable to this fraction of calls, to test "
                                         "clients (default 0)")
    for name, (meaning, default) in memory.LIMITS.items():
        metavar = "BYTES" if name.endswith(("bytes", "state")) else "SECONDS" if name == "idle" else "N"
        calculator_options.add_argument(f"--{name.replace('_', '-')}", type=positive, metavar=metavar,
                                        help=f"{meaning} (default {default})")
    options = parser.parse_args(argv)
    check_server_options(parser, options)
    given = {name: value for name in ["unavailable_rate", *memory.LIMITS]
             if (value := getattr(options, name)) is not None}
    if options.service == "testbed":
        if given:
            parser.error(f"--{next(iter(given)).replace('_', '-')} is an option of the calculator, not of the testbed")
        return serve(testbed.service(kind(options)), options, "the testbed", parser)
    try:
        service = calculator.service(kind(options), **given)
    except ValueError as error:  # limits that contradict each other
        parser.error(str(error).replace("max_state", "--max-state").replace("namespace_bytes", "--namespace-bytes"))
    return serve(service, options, "the calculator", parser)


if __name__ == "__main__":
    sys.exit(main())
