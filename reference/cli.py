"""The command lines: `python -m reference.server` and `.schema`, and what every command
shares (`.client`'s own part is calls.py, `.mock`'s mock.py).

Each command is a function of its arguments that returns an exit status: 0
when all went well, 2 for a usage error or a start-up problem: one line on
standard error that starts with the command's name, never a traceback. Every
command has `--help`, `--version` and `-v`, and options that mean the same
have the same name in each. The modules named in those commands only call the
function here, so the library modules know nothing of command lines.
"""

import argparse
import functools
import json
import logging
import math
import os
import ssl
import sys
from pathlib import Path

from . import __version__, calculator, drivers, namespaces, protocol, sources, testbed
from . import http_server
from .admission import MAX_CONNECTIONS
from .http_server import TIMEOUT
from .transports import MAX_BODY


def interruptible(command):
    """`command`, a command line's function, ended quietly by Ctrl-C wherever it falls: status 130 (a
    server's own, which stops it gracefully, returns 0 before); and by a reader that stops reading
    (`| head`): what it did not read is not missed."""
    @functools.wraps(command)
    def run(argv=None):
        try:
            return command(argv)
        except KeyboardInterrupt:
            print(file=sys.stderr)  # (past the ^C the terminal shows)
            return 130
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (so that exiting flushes nowhere)
            return 0
    return run


def program(module):
    """What the user typed to start this command: a console script's name (sdms-mock), or python -m MODULE."""
    name = os.path.basename(sys.argv[0])
    return name if name.startswith("sdms-") else f"python -m {module}"


class Parser(argparse.ArgumentParser):
    """A command line parser with --version, whose errors are one line, and exit status 2."""

    def __init__(self, **options):
        super().__init__(**options)
        self.add_argument("--version", action="version", version=f"%(prog)s {__version__}")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but an option this command does not know is told as such, before any missing
        argument (argparse names the missing ones first)."""
        args = sys.argv[1:] if args is None else list(args)
        for word in args:
            if word == "--":
                break
            if word.startswith("-") and len(word) > 1 and not word[1].isdigit() and not self._knows(word):
                self.error(f"unrecognized option {word.split('=')[0]}")
        return super().parse_known_args(args, namespace)

    def _knows(self, word):
        name = word.split("=")[0] if word.startswith("--") else word[:2]
        return any(known == name or (name.startswith("--") and known.startswith(name))
                   for action in self._actions for known in action.option_strings)

    def fail(self, message):
        """Say what went wrong, in one line that starts as usage errors do; return status 2."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        return 2


def add_server_options(parser, port):
    """Add the options every server command has."""
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default %(default)s)")
    parser.add_argument("--port", type=int, default=port, help="port to listen on (default %(default)s)")
    parser.add_argument("--path", default="/api", help="the API path (default %(default)s)")
    parser.add_argument("--log-level", default="info", type=str.lower, choices=["debug", "info", "warning", "error"],
                        help="logging detail; debug shows each step of every request, answered by the teaching core's "
                             "steps alone, as with --plain (default %(default)s)")
    parser.add_argument("-v", "--verbose", dest="log_level", action="store_const", const="debug",
                        help="the same as --log-level debug")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default %(default)s)")
    parser.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                        help="connections served at once; beyond, idle or stalled ones give way, "
                             "else HTTP 503 (default %(default)s)")
    parser.add_argument("--timeout", type=timeout, default=TIMEOUT, metavar="SECONDS",
                        help="how long a connection may stay idle, take to send a whole request, or "
                             "take to read an answer (default %(default)s)")
    parser.add_argument("--certfile", metavar="FILE", help="serve HTTPS with this certificate (PEM; its "
                        "private key too, unless --keyfile is given)")
    parser.add_argument("--keyfile", metavar="FILE", help="the private key of --certfile (PEM)")
    parser.add_argument("--plain", action="store_true", help="serve with the teaching core alone, without "
                        "the engine room's shortcuts (the answers are the same; reference/README.md)")


def check_server_options(parser, options):
    """Refuse option values argparse cannot check by itself."""
    if not options.path.startswith("/"):
        parser.error("--path must start with /")
    if not 0 <= options.port <= 65535:
        parser.error(f"--port {options.port} is not between 0 and 65535")
    for name in ("max_body", "max_connections", "timeout"):
        if getattr(options, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be positive")
    if options.keyfile and not options.certfile:
        parser.error("--keyfile goes with --certfile")


def core_only(options):
    """Whether to serve with the core alone, its Service and its transport: with --plain, and with the
    debug log, which only the core's steps write (the engine room's short paths log nothing)."""
    return options.plain or options.log_level == "debug"


def kind(options):
    """The kind of Service the options ask for: the core's, or the engine room's (imported only then)."""
    if core_only(options):
        return protocol.Service
    from .engine import Service
    return Service


def serve(service, options, what, parser):
    """Serve `service` as the options say until Ctrl-C or SIGTERM, stop gracefully, return the status."""
    logging.basicConfig(level=options.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    tls = None
    if options.certfile:
        try:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(options.certfile, options.keyfile)
        except (OSError, ssl.SSLError) as error:
            problem = error.reason or error if isinstance(error, ssl.SSLError) else error.strerror
            if "PEM lib" in str(problem) or "KEY_VALUES_MISMATCH" in str(problem):  # (OpenSSL's words for both)
                problem = _pem_problem(options.certfile, options.keyfile)
            return parser.fail(f"cannot serve HTTPS with --certfile {options.certfile}: {problem}")
    try:
        if core_only(options):
            transport = http_server.Server
        else:
            from .engine import guard  # (imported only here: with --plain, the core serves where it is absent)
            transport = guard.Server
        server = transport(service, options.host, options.port, options.path, options.max_body, options.timeout,
                           tls, options.max_connections)
    except OSError as error:
        return parser.fail(f"cannot listen on {options.host}:{options.port}: {error.strerror}")
    print(f"Serving {what} at {server.url} (Ctrl-C to stop)", flush=True)
    server.run()
    return 0


def _pem_problem(certfile, keyfile):
    """Which of the two files lacks what OpenSSL looked for in it, in words."""
    def holds(path):
        try:
            text = Path(path).read_bytes()[:1024 * 1024]
        except OSError:
            return set()
        return {kind for kind, mark in (("certificate", b"-----BEGIN CERTIFICATE"), ("key", b"PRIVATE KEY-----"))
                if mark in text}
    cert, key = holds(certfile), holds(keyfile) if keyfile else set()
    if "certificate" not in cert:
        return "it holds no PEM certificate" + (" (it is a private key: give that with --keyfile)" if "key" in cert
                                               else "")
    if not keyfile:
        return "it holds a certificate and no private key: give the key with --keyfile" if "key" not in cert else (
            "the private key it holds is not its certificate's")
    return (f"--keyfile {keyfile} holds no PEM private key" if "key" not in key
            else f"--keyfile {keyfile} is not the certificate's key")


def _number(text, most, what):
    """A finite number from 0 to `most`, as an option's value, or a usage error saying it is not `what`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value <= most and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


MAX_SECONDS = 86_400  # the longest time an option gives (a day): longer ones no clock of the system holds


def seconds(text):
    return _number(text, MAX_SECONDS, f"a number of seconds from 0 to {MAX_SECONDS:,} (a day)")


def timeout(text):
    """How long something may take: seconds, more than 0 (and at most a day)."""
    value = _number(text, MAX_SECONDS, f"a number of seconds above 0, at most {MAX_SECONDS:,} (a day)")
    if value == 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def rate(text):
    return _number(text, 1, "a number between 0 and 1")


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


# python -m reference.server

@interruptible
def server(argv=None):
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
    for name, (meaning, default) in namespaces.LIMITS.items():
        metavar = "BYTES" if name.endswith(("bytes", "state")) else "SECONDS" if name == "idle" else "N"
        calculator_options.add_argument(f"--{name.replace('_', '-')}", type=positive, metavar=metavar,
                                        help=f"{meaning} (default {default})")
    options = parser.parse_args(argv)
    check_server_options(parser, options)
    given = {name: value for name in ["unavailable_rate", *namespaces.LIMITS]
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


# python -m reference.schema

@interruptible
def schema(argv=None):
    """Check schema files: every problem as `file:line:col: message`; or the suite's schema driver; or,
    as `compare OLD NEW`, which changes break the old schema's clients."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compare"]:
        from .compare import compare  # (the command line of its own module, which needs this one's)
        return compare(argv[1:])
    parser = Parser(prog=program("reference.schema"), description=(
        "Check a schema before serving it: every problem of the files and directories given (one schema, "
        "made of all of them) is printed as FILE:LINE:COLUMN: MESSAGE, the form editors understand. Exit "
        "status 0 when the schema is sound, 1 when it has problems, 2 for a usage error."), epilog=(
        f"{program('reference.schema')} compare OLD NEW says which changes from OLD to NEW break OLD's clients "
        "(compare --help)."))
    parser.add_argument("paths", nargs="*", metavar="FILE_OR_DIR", help="schema files, or directories of them")
    parser.add_argument("--json", action="store_true", help="print the problems as JSON, for tools")
    parser.add_argument("--driver", action="store_true", help="speak the conformance suite's schema driver "
                        "protocol on stdin and stdout instead (python -m conformance schema --command ...)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list each document read")
    options = parser.parse_args(argv)
    if options.driver:
        if options.paths:
            parser.error("--driver reads its schemas from standard input, not from FILE_OR_DIR")
        drivers.drive_schema(sys.stdin, sys.stdout)
        return 0
    if not options.paths:
        parser.error("name at least one schema file or directory")
    documents, problems = [], []
    for path in options.paths:
        try:
            found, trouble = sources.read(Path(path))
        except ValueError as error:
            parser.error(str(error))
        documents, problems = documents + found, problems + trouble
    if options.verbose and not options.json:
        for document in documents:
            print(f"{document.name}: {len(document.entries)} entr{'ies' if len(document.entries) != 1 else 'y'}")
    _, problems = sources.check(documents, problems)
    if options.json:
        print(json.dumps([sources.as_data(problem) for problem in problems], indent=1))
    else:
        for problem in problems:
            print(problem)
    if problems:
        if not options.json:
            print(f"{len(problems)} problem{'s' * (len(problems) != 1)}")
        return 1
    if not options.json:
        kinds = [key.split(".")[0] for document in documents for entry in document.entries
                 for key in entry if key.split(".")[0] in ("info", "struct", "union", "fn", "headers", "errors")]
        print(f"ok: {len(documents)} document{'s' * (len(documents) != 1)}, {len(kinds)} entr{'ies' if len(kinds) != 1 else 'y'} "
              f"({', '.join(f'{kinds.count(k)} {k}' for k in sorted(set(kinds)))})")
    return 0
