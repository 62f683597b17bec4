"""The command lines: `python -m reference.server`, `.mock` and `.schema` (and, in
calls.py, `.client`).

Each command is a function of its arguments that returns an exit status: 0
when all went well, 2 for a usage error or a start-up problem: one line on
standard error that starts with the command's name, never a traceback. Every
command has `--help`, `--version` and `-v`, and options that mean the same
have the same name in each. The modules named in those commands only call the
function here, so the library modules know nothing of command lines.
"""

import argparse
import json
import logging
import math
import os
import signal
import ssl
import sys
import time
import urllib.parse
from pathlib import Path

from . import __version__, calculator, drivers, mocking, namespaces, sources, testbed
from .http_client import Client, TransportError, Unreachable
from . import http_server
from .engine import guard
from .http_server import MAX_BODY, TIMEOUT
from .protocol import allow_depth
from .protocol.documents import SchemaError
from .protocol.loader import Schema


class Parser(argparse.ArgumentParser):
    """A command line parser with --version, whose errors are one line, and exit status 2."""

    def __init__(self, **options):
        super().__init__(**options)
        self.add_argument("--version", action="version", version=f"%(prog)s {__version__}")

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

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
                        help="logging detail; debug shows each step of every request (default %(default)s)")
    parser.add_argument("-v", "--verbose", dest="log_level", action="store_const", const="debug",
                        help="the same as --log-level debug")
    parser.add_argument("--max-body", type=int, default=MAX_BODY, metavar="BYTES",
                        help="largest request body accepted (default %(default)s)")
    parser.add_argument("--max-connections", type=int, default=guard.MAX_CONNECTIONS, metavar="N",
                        help="connections served at once; beyond, idle or stalled ones give way, "
                             "else HTTP 503 (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=TIMEOUT, metavar="SECONDS",
                        help="how long a connection may stay idle, or take to send a whole request "
                             "(default %(default)s)")
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


def serve(service, options, what, parser):
    """Serve `service` as the options say until Ctrl-C or SIGTERM, stop gracefully, return the status."""
    logging.basicConfig(level=options.log_level.upper(), format="%(asctime)s %(levelname)s %(message)s")
    allow_depth()
    tls = None
    if options.certfile:
        try:
            tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            tls.load_cert_chain(options.certfile, options.keyfile)
        except (OSError, ssl.SSLError) as error:
            return parser.fail(f"cannot serve HTTPS with --certfile {options.certfile}: "
                               f"{getattr(error, 'strerror', None) or error}")
    try:
        server = (http_server.Server(service, options.host, options.port, options.path, options.max_body,
                                     options.timeout, tls) if options.plain else
                  guard.Server(service, options.host, options.port, options.path, options.max_body,
                               options.timeout, tls, max_connections=options.max_connections))
    except OSError as error:
        return parser.fail(f"cannot listen on {options.host}:{options.port}: {error.strerror}")
    print(f"Serving {what} at {server.url} (Ctrl-C to stop)", flush=True)
    # Both stop the same way, even when started with SIGINT ignored (as in a background job).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print(f"Stopping: requests in flight get up to {guard.GRACE} s to be answered.", flush=True)
    cut = server.stop()
    print(f"Stopped; cut off {cut} request{'s' * (cut != 1)} in flight." if cut else "Stopped.", flush=True)
    return 0


def _number(text, most, what):
    """A finite number from 0 to `most`, as an option's value, or a usage error saying it is not `what`."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (0 <= value <= most and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def seconds(text):
    return _number(text, math.inf, "a number of seconds (0 or more)")


def rate(text):
    return _number(text, 1, "a number between 0 and 1")


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


# python -m reference.server

def server(argv=None):
    """Serve the calculator (or the testbed) over HTTP until interrupted."""
    parser = Parser(
        prog="python -m reference.server",
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
        return serve(testbed.service(options.plain), options, "the testbed", parser)
    try:
        service = calculator.service(options.plain, **given)
    except ValueError as error:  # limits that contradict each other
        parser.error(str(error).replace("max_state", "--max-state").replace("namespace_bytes", "--namespace-bytes"))
    return serve(service, options, "the calculator", parser)


# python -m reference.mock

def mock(argv=None):
    """Serve a mock of a live server's schema until interrupted."""
    parser = Parser(
        prog="python -m reference.mock",
        description="Serve a mock built from a live server's schema (or a saved copy): it "
                    "validates like the server and answers with stubs or generated values.")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--schema-url", metavar="URL", type=_http_url, help="fetch the schema from this "
                        "live server (fn.api_, over http:// or https://) and save a copy in the cache file")
    source.add_argument("--schema-file", metavar="FILE", help="read the schema from a saved JSON file")
    source.add_argument("--schema-dir", metavar="DIR", help="read the schema from a directory of JSON files")
    parser.add_argument("--wait", type=seconds, default=10, metavar="SECONDS",
                        help="how long --schema-url waits for the server to answer (default %(default)s)")
    parser.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file "
                        "for an https:// --schema-url (by default, the system's authorities)")
    parser.add_argument("--cache", metavar="FILE", help="where --schema-url saves the schema (default "
                        "$XDG_CACHE_HOME/sdms-reference/HOST-PORT_PATH.json, where $XDG_CACHE_HOME is "
                        "~/.cache unless set)")
    add_server_options(parser, port=8080)
    parser.add_argument("--seed", type=int, default=0, help="seed of the generated values (default 0)")
    parser.add_argument("--collection-length", type=int, nargs=2, default=(0, 3), metavar=("MIN", "MAX"),
                        help="generated arrays and maps have at least MIN and fewer than MAX elements, "
                             "or exactly MIN if MAX is MIN (default 0 3: 0, 1 or 2)")
    optional = parser.add_mutually_exclusive_group()
    optional.add_argument("--no-optional-fields", dest="optional", action="store_const", const="none",
                          default="random", help="never generate optional fields")
    optional.add_argument("--all-optional-fields", dest="optional", action="store_const", const="all",
                          help="always generate optional fields (default: a coin decides each)")
    parser.add_argument("--no-generation", action="store_true",
                        help="answer unstubbed calls with ErrorNoMatchingStub_ instead of generated values")
    parser.add_argument("--max-stubs", type=positive, default=1000, metavar="N",
                        help="stubs kept; the oldest is dropped (default %(default)s)")
    parser.add_argument("--max-calls", type=positive, default=10_000, metavar="N",
                        help="calls recorded; the oldest is forgotten (default %(default)s)")
    parser.add_argument("--max-state", type=positive, default=64 * 1024 * 1024, metavar="BYTES",
                        help="bytes of state kept in all: stubs and recorded calls, half each; beyond, the "
                             "oldest give way (default %(default)s)")
    options = parser.parse_args(argv)
    low, high = options.collection_length
    if not 0 <= low <= high:
        parser.error("--collection-length needs 0 <= MIN <= MAX")
    check_server_options(parser, options)
    try:
        if options.cafile and not options.schema_url:
            parser.error("--cafile is for an https:// --schema-url")
        source = _schema_source(options)
        service = mocking.service(source, options.plain, seed=options.seed, optional=options.optional,
                                  length=(low, max(high, low)), generation=not options.no_generation,
                                  max_stubs=options.max_stubs, max_calls=options.max_calls,
                                  max_state=options.max_state)
    except (TransportError, OSError, SchemaError, ValueError) as error:
        return parser.fail(str(error))
    return serve(service, options, f"a mock of {options.schema_url or source}", parser)


def _http_url(text):
    try:
        Client(text)  # which knows what URL it can call
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _schema_source(options):
    """The schema to mock: fetched (and saved), or the path of a saved copy."""
    if options.schema_file or options.schema_dir:
        path = Path(options.schema_file or options.schema_dir)
        if not path.exists():
            raise OSError(f"cannot read the schema: {path} does not exist")
        return path
    api = fetch(options.schema_url, options.wait, options.cafile)
    cache = Path(options.cache) if options.cache else default_cache(options.schema_url)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(api, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise OSError(f"cannot save the schema to {cache}: {error.strerror}") from None
    print(f"Saved the schema of {options.schema_url} to {cache}; without the server, "
          f"start with --schema-file {cache}", flush=True)
    return api


def fetch(url, wait, cafile=None, pause=0.2):
    """The public schema of the live server at `url`, retried for `wait` seconds while it starts."""
    deadline, tries = time.monotonic() + wait, 0
    with Client(url, timeout=max(wait, 1), cafile=cafile) as client:
        while True:
            try:
                return client.schema()
            except Unreachable as error:
                if time.monotonic() + pause > deadline:
                    raise Unreachable(f"{error} (waited {wait:g} s)") from None
                tries += 1
                if tries == 1:
                    print(f"Waiting up to {wait:g} s for {url} to answer (see --wait)...", flush=True)
                time.sleep(pause)


def default_cache(url):
    """Where the schema fetched from `url` is saved unless --cache says otherwise."""
    parts = urllib.parse.urlsplit(url)
    name = f"{parts.hostname}-{parts.port or 80}{parts.path}".replace("/", "_")
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return root / "sdms-reference" / f"{name}.json"


# python -m reference.schema

def schema(argv=None):
    """Check schema files: every problem as `file:line:col: message`; or the suite's schema driver."""
    parser = Parser(prog="python -m reference.schema", description=(
        "Check a schema before serving it: every problem of the files and directories given (one schema, "
        "made of all of them) is printed as FILE:LINE:COLUMN: MESSAGE, the form editors understand. Exit "
        "status 0 when the schema is sound, 1 when it has problems, 2 for a usage error."))
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
        found, trouble = sources.read(Path(path))
        documents, problems = documents + found, problems + trouble
    if options.verbose and not options.json:
        for document in documents:
            print(f"{document.name}: {len(document.entries)} entries")
    try:
        Schema(documents, problems=problems)
    except SchemaError as error:
        problems = sources.locate(error.problems, error.documents)
    else:
        problems = []
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
        print(f"ok: {len(documents)} document{'s' * (len(documents) != 1)}, {len(kinds)} entries "
              f"({', '.join(f'{kinds.count(k)} {k}' for k in sorted(set(kinds)))})")
    return 0
