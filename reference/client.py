"""The command-line client: `python -m reference.client URL FUNCTION [ARGUMENT ...]`.

How this works
--------------
One call per run, made with `Client`. The arguments are `NAME=TEXT` and
`NAME:=JSON` pairs, as httpie writes them (`=` gives text, but JSON where the
server's schema says the field is not text: `x=1` is the number for a number
field, `name=1` the text for a string one), a JSON object, a file holding one
(`@FILE`, or `-` for standard input), or a mix, later ones winning; headers
(`-H`) are written the same way. Options may stand anywhere. The answer's
body is printed as JSON, on one line when it goes to a pipe or a file and
indented (in colour, unless NO_COLOR is set) on a terminal, bytes as base64
text with a note on standard error saying where. The exit status says how the
call went: 0 for `Ok_`, 1 for an error result, 2 for a usage or transport
problem. `--session FILE` keeps headers between calls, and the token an `Ok_`
result gives, as the `@auth_` a `Session` tag carries, until a function named
as a logout answers `Ok_` or the server refuses it; `--list` shows the
server's functions, `--schema` prints its schema; `-v` shows the request and
the whole answer on standard error; `--driver` speaks the conformance suite's
client driver protocol (cli/drivers.py).
"""

import argparse
import json
import re
import sys
import time
from pathlib import Path

from .cli.options import Parser, interruptible, loading, positive, program, timeout

with loading():  # (Ctrl-C while the command loads its parts: status 130, no traceback)
    from . import sources
    from .cli import drivers, fetched, notes
    from .cli.printing import listing, print_json, readable, wire_text
    from .transports.http_client import MAX_RESPONSE, Client, TransportError, Untrusted

PAIR = re.compile(r"(@?[A-Za-z_][\w!]*)(:?=)(.*)", re.DOTALL)  # NAME=TEXT, NAME:=JSON
TEXT = ("string", "string?", "bytes", "bytes?")  # the types whose values `=` gives as they are written
ENDS_SESSION = re.compile(r"\.(log_?out|sign_?out|end_?session)$", re.IGNORECASE)  # (no schema says which does)


@interruptible
def main(argv=None):
    """Make one call (or list or fetch the schema) as the command line says; return the exit status."""
    parser = _parser()
    options = parser.parse_intermixed_args(argv)
    if options.url is None and options.driver:
        parser.error("--driver drives calls to a server: give its URL, such as http://127.0.0.1:8000/api")
    if options.url is None:
        parser.error("give the server's URL, then a FUNCTION to call: python -m reference.client "
                     "http://127.0.0.1:8000/api fn.ping_")
    if options.driver:
        if options.function or options.schema or options.list:
            parser.error("--driver takes its calls from standard input, not from the command line")
        drivers.drive_client(options.url, sys.stdin, sys.stdout)
        return 0
    asked = [name for name in ("schema", "list") if getattr(options, name)]
    if len(asked) > 1 or (asked and options.function):
        parser.error(f"--{asked[0]} calls no FUNCTION" if options.function else "--schema or --list, not both")
    if not asked and not options.function:
        parser.error("name a FUNCTION to call (--list shows them), or ask for --schema")
    if options.internal and not asked:
        parser.error("--internal goes with --schema or --list")
    if options.offline and asked:
        parser.error(f"--offline shows a call's request; --{asked[0]} asks the server")
    if options.cafile and not options.url.startswith("https://"):
        parser.error("--cafile is for an https:// URL; this one is plain HTTP")
    try:
        client = Client(options.url, "binary" if options.binary else "json", timeout=options.timeout,
                        max_response=options.max_response, cafile=options.cafile)
        call = Call(options, client) if not asked else None
    except ValueError as error:
        parser.error(str(error))
    pretty = options.pretty or (not options.compact and sys.stdout.isatty())
    try:
        with client:
            if asked:
                return _show(client, options, pretty)
            return call.make(pretty)
    except TransportError as error:
        hint = "; to trust a private CA, give its certificate with --cafile" if isinstance(error, Untrusted) else ""
        return parser.fail(f"{error}{hint}")
    except ValueError as error:  # what the schema said makes an argument impossible, or the session unwritable
        return parser.fail(str(error))



def _parser():
    """The command line of the client: the call, its headers and session, what is shown, how it is sent."""
    parser = Parser(prog=program("reference.client"), description=(
        "Call one function of a server and print the answer as JSON; exit status 0 for Ok_, 1 for an "
        "error result, 2 for a usage or transport problem. --list shows the functions, --schema the schema."),
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EXAMPLES)
    parser.add_argument("url", nargs="?", metavar="URL", help="the server, such as http://127.0.0.1:8000/api "
                        "(https:// too)")
    parser.add_argument("function", nargs="?", metavar="FUNCTION", help="the function to call, such as fn.add")
    parser.add_argument("arguments", nargs="*", metavar="ARGUMENT",
                        help="its arguments (none: {}): NAME=TEXT (JSON where the schema's field is not text), "
                             "NAME:=JSON (NAME:=@FILE: the JSON in FILE), a JSON object, @FILE holding one, or - to "
                             "read one from standard input")
    parser.add_argument("-H", "--header", action="append", default=[], metavar="NAME=TEXT|NAME:=JSON",
                        help="a request header, repeatable, written as an argument is: "
                             "-H '@auth_:={\"Ephemeral\": {\"username\": \"ann\"}}'")
    parser.add_argument("--select", metavar="JSON", help="keep only these result fields (the @select_ "
                        "header): '{\"->\": {\"Ok_\": [\"result\"]}}'")
    parser.add_argument("--session", metavar="FILE", help="keep headers between calls in FILE: those given "
                        "with -H, and the token an Ok_ result holds, as @auth_ {\"Session\": {\"token\": ...}}, "
                        "until fn.logout (or signOut, endSession) answers Ok_ or the server refuses it")
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
    parser.add_argument("--print", dest="parts", metavar="WHAT", type=_parts,
                        help="what to print, as httpie's --print: H the request's headers, B its body, h the "
                             "answer's headers, b its body, each as JSON on a line of its own (default b; HB "
                             "with --offline)")
    parser.add_argument("--offline", action="store_true", help="print the request as it would be sent, and "
                        "send nothing (NAME=TEXT is typed by the schema kept from an earlier call, else text)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also show the request and the whole "
                        "answer, [headers, body], with its size and the time it took, on standard error")
    parser.add_argument("--driver", action="store_true", help="speak the conformance suite's client driver "
                        "protocol on standard input and output instead (python -m conformance client --command "
                        "'python -m reference.client --driver')")
    return parser


EXAMPLES = """examples:
  python -m reference.client http://127.0.0.1:8000/api fn.add x=1 y=2
  python -m reference.client http://127.0.0.1:8000/api fn.saveVariable name=x value:=1.5
  python -m reference.client http://127.0.0.1:8000/api fn.add '{"x": 1, "y": 2}'
  python -m reference.client http://127.0.0.1:8000/api fn.evaluate @expression.json
      (expression.json holding the arguments: {"expression": {"Constant": {"value": 1}}})
  python -m reference.client http://127.0.0.1:8000/api fn.login username=ann --session ann.json
  python -m reference.client http://127.0.0.1:8000/api fn.getVariables --session ann.json
  python -m reference.client http://127.0.0.1:8000/api --list"""


class Call:
    """The call the command line asks for: its arguments and headers, read (ValueError if one cannot
    be) but for the `NAME=TEXT` pairs, which the schema decides when they are made."""

    def __init__(self, options, client):
        self.options, self.client, self.schema = options, client, None
        self.unconfirmed = False  # whether the schema is one kept from an earlier run, not yet fetched again
        self.arguments, self.pairs = {}, []
        for text in options.arguments:
            if text == "-" or text.startswith(("@", "{")):
                self.arguments.update(_object(*_given(text)))
            elif PAIR.fullmatch(text):
                self.pairs.append(PAIR.fullmatch(text).groups())
            else:
                raise ValueError(f"argument {text!r} is not NAME=TEXT, NAME:=JSON, a JSON object, @FILE or -")
        self.headers = (_object(*_given("@" + options.session)) if options.session and Path(options.session).exists()
                        else {})
        for text in options.header:
            if not PAIR.fullmatch(text) or not text.startswith("@"):
                raise ValueError(f"-H {text}: a header is @NAME=TEXT or @NAME:=JSON, as in -H @id_=a1")
        if options.select:
            self.headers["@select_"] = _object(options.select, "--select")

    def make(self, pretty):
        """Make the call, print what it answered (or, --offline, what it would send); the exit status."""
        if self.options.offline:
            headers, arguments = self.made()
            self.show({"H": headers, "B": {self.options.function: arguments}}, self.options.parts or "HB", pretty)
            return 0
        started = time.perf_counter()
        headers, answer = self.send()
        if "ErrorInvalidRequestBody_" in answer[1] and self.unconfirmed:  # (refused, so it changed nothing)
            fresh, self.unconfirmed = fetched.checked(self.client, internal=True), False
            if fresh != self.schema:  # the kept schema was stale: the call goes again, made by the new one
                self.schema = fresh
                fetched.keep(self.client.url, fresh)
                headers, answer = self.send()
        if self.options.verbose:
            sent, received = self.client.last
            print(f"> POST {self.client.url}\n> {wire_text(sent)}\n< {json.dumps(readable(list(answer), [], []))}\n"
                  f"< {len(received)} bytes in {(time.perf_counter() - started) * 1000:.1f} ms", file=sys.stderr)
        if "ErrorInvalidRequestBody_" in answer[1]:
            notes.suggest(self.client, self.options.function, answer[1])
        if "ErrorInvalidRequestHeaders_" in answer[1] and "@select_" in headers:
            notes.fields_near(self.entries(), self.options.function, headers["@select_"], answer[1])
        if self.options.session:
            self.keep(headers, answer[1])
        if self.options.function == "fn.listCalls_":
            notes.when_calls_came(answer[1])
        self.show({"H": headers, "B": {self.options.function: self.arguments_sent}, "h": answer[0], "b": answer[1]},
                  self.options.parts or "b", pretty)
        return 0 if "Ok_" in answer[1] else 1

    def show(self, parts, chosen, pretty):
        """Print the `parts` (H, B, h, b) `chosen`, in that order, each as JSON; bytes as base64, with a note."""
        for part in "HBhb":
            if part in chosen and part in parts:
                paths: list = []
                print_json(readable(parts[part], [], paths), pretty)
                for path in paths:
                    print(f"note: {'.'.join(map(str, path))} is bytes, shown as base64", file=sys.stderr)

    def made(self):
        """The call as the command line and the schema make it: (its headers, its arguments)."""
        headers = {**self.headers, **self.values([PAIR.fullmatch(text).groups() for text in self.options.header],
                                                 self.declared_headers)}
        return headers, {**self.arguments, **self.values(self.pairs, self.declared_arguments)}

    def send(self):
        """Send the call as the command line and the schema make it: (its headers, the answer)."""
        headers, self.arguments_sent = self.made()
        return headers, self.client.call(self.options.function, self.arguments_sent, headers)

    def values(self, pairs, declared):
        """The values of NAME=TEXT and NAME:=JSON pairs, `=` giving JSON where `declared` (the types of
        their names, by the schema, asked for only if some `=` needs it) says the name is not text."""
        types = declared() if any(operator == "=" for _, operator, _ in pairs) else {}
        values = {}
        for name, operator, text in pairs:
            if operator == ":=":  # (NAME:=@FILE: the JSON in a file, as httpie reads it)
                values[name] = sources.parse_json(*_given(text) if text.startswith("@") else (text, f"{name}:="))
            elif types.get(name, "string") in TEXT:
                values[name] = text
            else:
                try:
                    values[name] = sources.parse_json(text, f"{name}={text if len(text) <= 40 else text[:40] + '...'}")
                except ValueError as error:  # sent as it is, for the server to say what is wrong, if anything
                    if types[name] not in ("any", "any?"):
                        print(f"note: {name} is {json.dumps(types[name])}, and {error}: sent as text", file=sys.stderr)
                    values[name] = text
        return values

    def entries(self):
        """The server's schema, with its stock entries: as kept from an earlier run (cli/fetched.py), else asked
        for once, and kept (checked either way: ValueError if unsound)."""
        if self.schema is None and self.options.offline:  # (what was kept, if anything: nothing is asked)
            self.schema = fetched.kept(self.client.url) or []
            if not self.schema:
                print(f"note: no schema of {self.client.url} is kept (one is, once a call is made): NAME=TEXT "
                      f"goes as text", file=sys.stderr)
        if self.schema is None:
            kept = fetched.kept(self.client.url)
            self.unconfirmed = kept is not None and not fetched.problems(self.client.url, kept)
            self.schema = kept if self.unconfirmed else fetched.checked(self.client, internal=True)
            if not self.unconfirmed:
                fetched.keep(self.client.url, self.schema)
        return self.schema

    def declared_arguments(self):
        """The types of the function's arguments, by name, as the schema writes them."""
        return next((entry[key] for entry in self.entries() for key in entry if key == self.options.function), {})

    def declared_headers(self):
        """The types of the request headers, by name, as the schema writes them."""
        return {name: type_ for entry in self.entries() for key in entry if key.startswith("headers.")
                for name, type_ in entry[key].items()}

    def keep(self, headers, body):
        """Keep the session's headers, and as its @auth_ the token an Ok_ result holds, if the schema has
        a Session tag with a token in union.Auth_."""
        token = body.get("Ok_", {}).get("token")
        auth = next((entry["union.Auth_"] for entry in self.entries() if "union.Auth_" in entry), [])
        if type(token) is str and any(tag.get("Session") == {"token": "string"} for tag in auth):
            headers["@auth_"] = {"Session": {"token": token}}
        elif "Ok_" in body and ENDS_SESSION.search(self.options.function) and "Session" in self.headers.get("@auth_", {}):
            headers.pop("@auth_")
            print(f"note: {self.options.function} ended the session: its token is dropped from "
                  f"{self.options.session}", file=sys.stderr)
        elif "ErrorUnauthenticated_" in body and "@auth_" in self.headers:  # (a token expired, or forgotten)
            headers.pop("@auth_")
            print(f"note: the server refused the session's credentials: they are dropped from "
                  f"{self.options.session}", file=sys.stderr)
        sources.write_file(Path(self.options.session), json.dumps(
            {name: value for name, value in headers.items() if name != "@select_"}, indent=2) + "\n")


def _show(client, options, pretty):
    """Print the schema, or the list of functions, as asked; the exit status."""
    if options.schema:
        print_json(client.schema(options.internal), pretty)
    else:
        print("\n".join(listing(fetched.checked(client, options.internal))))
    return 0


def _parts(text):
    """The parts --print names: letters of HBhb."""
    if not text or set(text) - set("HBhb"):
        raise argparse.ArgumentTypeError(f"{text!r} is not letters of HBhb (H and B: the request's headers and "
                                         f"body; h and b: the answer's)")
    return text


def _given(argument):
    """(the text, where it comes from) of an argument: written out, in @FILE, or on standard input (-)."""
    if argument == "-":
        return sources.text_of(sys.stdin.buffer.read(sources.MAX_FILE + 1), "standard input"), "standard input"
    if argument.startswith("@"):
        return sources.read_file(Path(argument[1:])), argument[1:]
    return argument, "the argument " + repr(argument[:40] + "..." * (len(argument) > 40))


def _object(text, where):
    """The JSON object in `text`, from `where`; ValueError says why there is none."""
    value = sources.parse_json(text, where)
    if type(value) is not dict:
        raise ValueError(f"{where}: not a JSON object")
    return value


if __name__ == "__main__":
    sys.exit(main())
