"""The command-line client: `python -m reference.client URL FUNCTION [ARGUMENT ...]`.

How this works
--------------
One call per run, made with `Client`. The arguments are a JSON object, a
file holding one (`@FILE`, or `-` for standard input), `NAME=VALUE` pairs
(VALUE is JSON, or else text), or a mix, later ones winning. The answer is
printed as JSON, on one line when it goes to a pipe or a file and indented
on a terminal, bytes (which JSON lacks) as base64 text with a note on
standard error saying where they are. The exit status says how the call
went: 0 for `Ok_`, 1 for an error result, 2 for a usage or transport
problem. `--list` shows the server's functions, `--schema` prints its
schema, ready to be saved to a file; `-v` shows the request and the answer
whole, with the time it took; `--driver` speaks the conformance suite's
client driver protocol (drivers.py).
"""

import argparse
import difflib
import json
import os
import sys
import time

from . import drivers
from .protocol import blobs
from .cli import Parser, interruptible, positive, timeout
from .http_client import MAX_RESPONSE, Client, TransportError, Untrusted


@interruptible
def main(argv=None):
    """Make one call (or list or fetch the schema) as the command line says; return the exit status."""
    parser = Parser(prog="python -m reference.client", description=(
        "Call one function of a server and print the answer as JSON; exit status 0 for Ok_, 1 for an "
        "error result, 2 for a usage or transport problem. --list shows the functions, --schema the schema."),
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    parser.add_argument("url", metavar="URL", help="the server, such as http://127.0.0.1:8000/api (https:// too)")
    parser.add_argument("function", nargs="?", metavar="FUNCTION", help="the function to call, such as fn.add")
    parser.add_argument("arguments", nargs="*", metavar="ARGUMENT",
                        help="its arguments: a JSON object, @FILE holding one, - to read one from standard "
                             "input, or NAME=VALUE pairs (VALUE is JSON, or else text); default {}")
    parser.add_argument("-H", "--header", action="append", default=[], type=_header, metavar="NAME=VALUE",
                        help="a request header, repeatable; VALUE is JSON, or else text: "
                             "-H '@auth_={\"Ephemeral\": {\"username\": \"ann\"}}'")
    parser.add_argument("--select", type=_object, metavar="JSON",
                        help="keep only these result fields (the @select_ header): '{\"->\": {\"Ok_\": [\"result\"]}}'")
    parser.add_argument("--binary", action="store_true", help="negotiate MessagePack (the answer is printed "
                        "as JSON all the same)")
    parser.add_argument("--list", action="store_true", help="list the server's functions, their arguments and "
                        "results, instead of calling one")
    parser.add_argument("--schema", action="store_true", help="print the server's schema (fn.api_) instead "
                        "of calling a function: python -m reference.client URL --schema > schema.json")
    parser.add_argument("--internal", action="store_true", help="with --schema or --list, the protocol's own "
                        "entries too")
    layout = parser.add_mutually_exclusive_group()
    layout.add_argument("--pretty", action="store_true", help="indent the answer (the default on a terminal)")
    layout.add_argument("--compact", action="store_true", help="the answer on one line (the default elsewhere)")
    parser.add_argument("--timeout", type=timeout, default=5, metavar="SECONDS",
                        help="how long the whole call may take (default %(default)s)")
    parser.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file "
                        "for an https:// URL (by default, the system's authorities)")
    parser.add_argument("--max-response", type=positive, default=MAX_RESPONSE, metavar="BYTES",
                        help="the longest answer read (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show the request and the answer whole, "
                        "[headers, body], with its size and the time it took (on standard error)")
    parser.add_argument("--driver", action="store_true", help="speak the conformance suite's client driver "
                        "protocol on standard input and output instead (python -m conformance client --command "
                        "'python -m reference.client --driver')")
    options = parser.parse_args(argv)
    if options.driver:
        if options.function or options.schema or options.list:
            parser.error("--driver takes its calls from standard input, not from the command line")
        return _drive(options, parser)
    asked = [name for name in ("schema", "list") if getattr(options, name)]
    if len(asked) > 1 or (asked and options.function):
        parser.error(f"--{asked[0]} calls no FUNCTION" if options.function else "--schema or --list, not both")
    if not asked and not options.function:
        parser.error("name a FUNCTION to call (--list shows them), or ask for --schema")
    if options.internal and not asked:
        parser.error("--internal goes with --schema or --list")
    if options.cafile and not options.url.startswith("https://"):
        parser.error("--cafile is for an https:// URL; this one is plain HTTP")
    arguments = _arguments(options.arguments, parser)
    try:
        client = Client(options.url, binary=options.binary, timeout=options.timeout,
                        max_response=options.max_response, cafile=options.cafile)
    except ValueError as error:
        parser.error(str(error))
    pretty = options.pretty or (not options.compact and sys.stdout.isatty())
    try:
        with client:
            return _run(client, options, arguments, pretty)
    except TransportError as error:
        hint = "; to trust a private CA, give its certificate with --cafile" if isinstance(error, Untrusted) else ""
        return parser.fail(f"{error}{hint}")
    except BrokenPipeError:  # the reader went away (| head): what it did not read is not missed
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


EXAMPLES = """examples:
  python -m reference.client http://127.0.0.1:8000/api fn.add x=1 y=2
  python -m reference.client http://127.0.0.1:8000/api fn.add '{"x": 1, "y": 2}'
  python -m reference.client http://127.0.0.1:8000/api fn.evaluate @expression.json
  python -m reference.client http://127.0.0.1:8000/api --list"""


def _run(client, options, arguments, pretty):
    """Fetch what the options ask for, print it; the exit status."""
    if options.schema:
        return _print(client.schema(options.internal), pretty)
    if options.list:
        print("\n".join(listing(client.schema(options.internal))))
        return 0
    headers = dict(options.header, **({"@select_": options.select} if options.select else {}))
    started = time.perf_counter()
    answer = client.call(options.function, arguments, headers)
    if options.verbose:
        sent, received = client.last
        print(f"> POST {client.url}\n> {_text(sent)}\n< {len(received)} bytes in "
              f"{(time.perf_counter() - started) * 1000:.1f} ms", file=sys.stderr)
    if "ErrorInvalidRequestBody_" in answer[1]:
        _suggest(client, options.function, answer[1])
    paths: list = []
    _print(readable(list(answer) if options.verbose else answer[1], [], paths), pretty)
    for path in paths:
        print(f"note: {'.'.join(map(str, path))} is bytes, shown as base64", file=sys.stderr)
    return 0 if "Ok_" in answer[1] else 1


def _print(value, pretty):
    print(json.dumps(value, indent=2 if pretty else None, ensure_ascii=False))
    return 0


def _text(data):
    """Message bytes as text to show: JSON as it is, MessagePack as its size."""
    return data.decode() if data[:1] != b"\x92" else f"(MessagePack, {len(data)} bytes)"


def listing(entries):
    """Lines that show each function of a schema: its name and arguments, its comment, its results."""
    lines = []
    for entry in entries:
        [name] = [key for key in entry if key.startswith("fn.")] or [None]
        if name is None:
            continue
        comment = entry.get("///", "")
        lines.append(f"{name} {json.dumps(entry[name], ensure_ascii=False)}")
        if comment:
            lines.append(f"    {' '.join(comment) if type(comment) is list else comment}".rstrip())
        results = [next(key for key in tag if key != "///") for tag in entry["->"]]
        lines.append(f"    -> Ok_ {json.dumps(entry['->'][0]['Ok_'], ensure_ascii=False)}"
                     + (f"; errors: {', '.join(results[1:])}" if results[1:] else ""))
    return lines


def _suggest(client, function, body):
    """On standard error, the near names of a function the server does not have."""
    unknown = {"path": [function], "reason": {"FunctionUnknown": {}}}
    if body["ErrorInvalidRequestBody_"].get("cases") != [unknown]:
        return
    names = [name for entry in client.schema() for name in entry if name.startswith("fn.")]
    near = difflib.get_close_matches(function, names, n=3) or [n for n in names if n == f"fn.{function}"]
    if near:
        print(f"note: the server has no {function}; did you mean {' or '.join(near)}?", file=sys.stderr)


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
    drivers.drive_client(options.url, sys.stdin, sys.stdout)
    return 0


def _arguments(texts, parser):
    """The arguments the command line gives, as one object: later ones win."""
    arguments = {}
    for text in texts:
        name, equals, value = text.partition("=")
        if text == "-" or text.startswith("@"):
            arguments.update(_read(text, parser))
        elif text.lstrip().startswith("{"):
            arguments.update(_object(text, parser))
        elif equals and name:
            arguments[name] = _value(value)
        else:
            parser.error(f"argument {text!r} is not a JSON object, @FILE, - or NAME=VALUE")
    return arguments


def _read(text, parser):
    """The JSON object in the file `@FILE`, or on standard input for `-`."""
    try:
        data = sys.stdin.read() if text == "-" else open(text[1:], encoding="utf-8").read()
    except OSError as error:
        parser.error(f"cannot read {text[1:]}: {error.strerror}")
    return _object(data, parser, "standard input" if text == "-" else text[1:])


def _object(text, parser=None, where=None):
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if type(value) is not dict:
        message = f"{where or repr(text)} {'does not hold' if where else 'is not'} a JSON object"
        if parser is None:
            raise argparse.ArgumentTypeError(message)
        parser.error(message)
    return value


def _value(text):
    """A value on the command line: JSON if it is JSON, else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _header(text):
    name, equals, value = text.partition("=")
    if not name.startswith("@"):
        raise argparse.ArgumentTypeError(f"{text!r}: a header's NAME starts with @, as in @id_=1")
    if not equals:
        raise argparse.ArgumentTypeError(f"{text!r} has no =: a header is NAME=VALUE, as in @id_=1")
    return name, _value(value)
