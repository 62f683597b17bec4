"""python -m conformance (and sdms-conformance): run the suite against a server, a client or a schema
loader, fuzz a server, draw the matrix, and list, check and generate its cases. Each command is a module
of commands/ (its options, and what it runs); settings from [tool.conformance] are their defaults.

Exit status: 0 when every case passed (known failures allowed), 1 when a case
failed or a known failure passed (stale), 2 for a usage error or a target
that cannot be tested, 130 when Ctrl-C or SIGTERM ended the run (after the
summary and the reports of what ran).
"""

import os
import signal
import sys

try:  # (Ctrl-C while the suite loads ends it as Ctrl-C at work does, below: status 130, no traceback)
    from .commands import config, driven, fuzz, lint, listing, matrix, run
    from .commands.options import Parser
    from .language.suite import version
except KeyboardInterrupt:
    sys.exit(130)

COMMANDS = (run, driven, fuzz, matrix, listing, lint)  # each adds its commands' parsers, and names what runs each
FRAMES = 10_000  # recursion to read back what a server may rightly echo thousands of levels deep (@id_)


def main(argv=None):
    """Run the command `argv` (else the command line) names; return its exit status."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), FRAMES))  # this program reads deep answers
    parser, commands = command_line()
    try:
        configured = config.apply(commands.choices, sys.argv[1:] if argv is None else argv)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    options = parser.parse_args(argv)
    if configured.get(options.subcommand):
        print(f"Settings from [tool.conformance] in {config.FILE}: {', '.join(configured[options.subcommand])}")
    before = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM ends a run as Ctrl-C does: with its reports
    try:
        return options.run(options, commands.choices[options.subcommand])
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupt(number, frame):
    raise KeyboardInterrupt


def command_line():
    """The parser of python -m conformance, and its commands (whose `choices` maps each name to its parser)."""
    name = os.path.basename(sys.argv[0])  # (the console script's, or python -m conformance)
    parser = Parser(prog=name if name.startswith("sdms-") else "python -m conformance", description=(
        "A language-neutral conformance suite for the Schema-Driven Message Service protocol."))
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND", parser_class=Parser)
    parser.commands = commands.choices
    for command in COMMANDS:
        command.add(commands)
    return parser, commands


def script():
    """python -m conformance, or the sdms-conformance script: main(), ended quietly by a closed pipe or Ctrl-C."""
    try:
        return main()
    except BrokenPipeError:  # the output went to a command that stopped reading, like head
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(script())
