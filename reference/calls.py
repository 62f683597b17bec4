"""The command-line client: `python -m reference.client URL FUNCTION [ARGUMENTS]`.

How this works
--------------
One call per run, made with `Client`: the arguments and headers are JSON, and
the answer is printed as JSON, bytes (which JSON lacks) as base64 text with a
note on standard error saying where they are. The exit status says how the
call went: 0 for `Ok_`, 1 for an error result, 2 for a usage or transport
problem. `--schema` prints the server's schema instead, ready to be saved to
a file; `--driver` speaks the conformance suite's client driver protocol
(drivers.py).
"""

import argparse
import json
import sys

from . import drivers
from .protocol import blobs
from .cli import Parser, positive, seconds
from .http_client import MAX_RESPONSE, Client, TransportError


def main(argv=None):
    """Make one call (or fetch the schema) as the command line says; return the exit status."""
    parser = Parser(prog="python -m reference.client", description=(
        "Call one function of a server and print the answer as JSON; exit status 0 for Ok_, 1 for an "
        "error result, 2 for a usage or transport problem. --schema prints the server's schema instead."),
        epilog="example: python -m reference.client http://127.0.0.1:8000/api fn.add '{\"x\": 1, \"y\": 2}'")
    parser.add_argument("url", metavar="URL", help="the server, such as http://127.0.0.1:8000/api (https:// too)")
    parser.add_argument("function", nargs="?", metavar="FUNCTION", help="the function to call, such as fn.add")
    parser.add_argument("arguments", nargs="?", default={}, type=_object, metavar="ARGUMENTS",
                        help="its arguments, as a JSON object (default {})")
    parser.add_argument("-H", "--header", action="append", default=[], type=_header, metavar="NAME=VALUE",
                        help="a request header, repeatable; VALUE is JSON, or else text: "
                             "-H '@auth_={\"Ephemeral\": {\"username\": \"ann\"}}'")
    parser.add_argument("--select", type=_object, metavar="JSON",
                        help="keep only these result fields (the @select_ header): '{\"->\": {\"Ok_\": [\"result\"]}}'")
    parser.add_argument("--binary", action="store_true", help="negotiate MessagePack (the answer is printed "
                        "as JSON all the same)")
    parser.add_argument("--schema", action="store_true", help="print the server's schema (fn.api_) instead "
                        "of calling a function: python -m reference.client URL --schema > schema.json")
    parser.add_argument("--internal", action="store_true", help="with --schema, the protocol's own entries too")
    parser.add_argument("--timeout", type=seconds, default=5, metavar="SECONDS",
                        help="how long the whole call may take (default %(default)s)")
    parser.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file "
                        "for an https:// URL (by default, the system's authorities)")
    parser.add_argument("--max-response", type=positive, default=MAX_RESPONSE, metavar="BYTES",
                        help="the longest answer read (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print the whole answer, [headers, body]")
    parser.add_argument("--driver", action="store_true", help="speak the conformance suite's client driver "
                        "protocol on standard input and output instead (python -m conformance client --command "
                        "'python -m reference.client --driver')")
    options = parser.parse_args(argv)
    if options.driver:
        if options.function or options.schema:
            parser.error("--driver takes its calls from standard input, not from the command line")
        return _drive(options, parser)
    if options.schema == bool(options.function):
        parser.error("name a FUNCTION to call, or ask for --schema" if not options.schema
                     else "--schema prints the schema; it calls no FUNCTION")
    if options.internal and not options.schema:
        parser.error("--internal goes with --schema")
    try:
        client = Client(options.url, binary=options.binary, timeout=options.timeout,
                        max_response=options.max_response, cafile=options.cafile)
    except ValueError as error:
        parser.error(str(error))
    with client:
        try:
            if options.schema:
                print(json.dumps(client.schema(options.internal), indent=2, ensure_ascii=False))
                return 0
            headers = dict(options.header, **({"@select_": options.select} if options.select else {}))
            answer = client.call(options.function, options.arguments, headers)
        except TransportError as error:
            return parser.fail(str(error))
    paths: list = []
    shown = readable(list(answer) if options.verbose else answer[1], [], paths)
    print(json.dumps(shown, indent=2, ensure_ascii=False))
    for path in paths:
        print(f"note: {'.'.join(map(str, path))} is bytes, shown as base64", file=sys.stderr)
    return 0 if "Ok_" in answer[1] else 1


def readable(value, path, paths):
    """`value` with its bytes as base64 text; the path of each is added to `paths`."""
    if type(value) is bytes:
        paths.append(path)
        return blobs.to_base64(value)
    if type(value) is dict:
        return {key: readable(element, [*path, key], paths) for key, element in value.items()}
    if type(value) is list:
        return [readable(element, [*path, index], paths) for index, element in enumerate(value)]
    return value


def _drive(options, parser):
    try:
        drivers.drive_client(options.url, sys.stdin, sys.stdout)
    except (ValueError, KeyError) as error:
        return parser.fail(f"not an instruction of the driver protocol: {error}")
    except KeyboardInterrupt:
        return 130
    return 0


def _object(text):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if type(value) is not dict:
        raise argparse.ArgumentTypeError(f"{text!r} is not a JSON object")
    return value


def _header(text):
    name, equals, value = text.partition("=")
    if not equals or not name.startswith("@"):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with a NAME that starts with @")
    try:
        return name, json.loads(value)
    except ValueError:
        return name, value
