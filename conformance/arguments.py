"""The command line's words: every command, its options and their help, and how each value is read
(a usage error is one line and exit status 2, as Parser says)."""

import argparse
import json
import os
import sys
from importlib import metadata

from . import cases, findings


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, and exit status 2; an option it does not know is told
    as such by the command it was given to, before any missing argument."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    commands = {}  # a parser of commands: each name's parser

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        unknown = next((word for word in _options(args, bool(self.commands)) if not self.knows(word)), None)
        if unknown:
            self.error(f"unrecognized option {unknown}")
        return super().parse_known_args(args, namespace)

    def parse_args(self, args=None, namespace=None):
        options, extras = self.parse_known_args(args, namespace)
        if extras:  # (said by the command they were given to, as its own usage error)
            self.commands.get(getattr(options, "subcommand", None), self).error(
                f"unrecognized arguments: {' '.join(extras)}")
        return options

    def knows(self, word):
        """Whether `word` (--name, --name=value, -x) is an option of this parser, or the start of one's name."""
        name = word.split("=")[0] if word.startswith("--") else word[:2]
        return any(known == name or (name.startswith("--") and known.startswith(name))
                   for action in self._actions for known in action.option_strings)


def _options(args, commanding):
    """The words of `args` that are options (not values such as -1); for a parser of commands, only those
    before the command's name, which belong to it."""
    for word in args:
        if word == "--" or (commanding and not word.startswith("-")):
            return
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit() and word[1] != ".":
            yield word


def command_line():
    """The parser of python -m conformance, and its commands (whose `choices` maps each name to its parser)."""
    name = os.path.basename(sys.argv[0])  # (the console script's, or python -m conformance)
    parser = Parser(prog=name if name.startswith("sdms-") else "python -m conformance", description=(
        "A language-neutral conformance suite for the Schema-Driven Message Service protocol."))
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND", parser_class=Parser)
    parser.commands = commands.choices
    for add in (_run, _drivers, _fuzz, _matrix, _suite):
        add(commands)
    return parser, commands


def _run(commands):
    """run: the cases against a server."""
    run = commands.add_parser("run", help="run the cases against a server",
                              description="Run every case that applies against the server at --target.")
    run.add_argument("--target", required=True, metavar="URL", help="the API URL, such as http://127.0.0.1:8000/api "
                     "(https:// too)")
    run.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file for an "
                     "https:// target (by default, the system's authorities)")
    _selectors(run)
    run.add_argument("--without", type=_features, default=set(), metavar="LIST",
                     help="protocol features the target lacks, so their cases are not checked: "
                          + ", ".join(f"{name} ({meaning})" for name, meaning in cases.FEATURES.items()))
    run.add_argument("--cases", metavar="PATH", help="run the server cases of this fixture file, or of the *.json "
                     "files of this folder, instead of the suite's own (such as those fuzz --fixtures writes)")
    run.add_argument("--limit", type=_limit, action="append", default=[], metavar="NAME=VALUE",
                     help="a limit the target keeps, repeatable; its cases then check that value, and without it "
                          "accept any clean answer: " + "; ".join(f"{name}, {meaning} (the guide's: {value})"
                                                                  for name, (value, _, meaning) in cases.LIMITS.items()))
    run.add_argument("--repeat", type=_positive, default=1, metavar="N", help="run every case N times; a case "
                     "whose answers differ from run to run is reported as flaky, apart from failures (default 1)")
    run.add_argument("--workers", type=_positive, default=4, metavar="N", help="cases run at once (default 4)")
    run.add_argument("--wait", type=_seconds, default=10, metavar="SECONDS",
                     help="how long to wait for the target to answer (default 10)")
    run.add_argument("--timeout", type=_timeout, default=10, metavar="SECONDS", help="how long one exchange with "
                     "the target may take, however slowly it answers (default 10)")
    _outcomes(run)


def _drivers(commands):
    """client and schema: a library checked through a driver."""
    client = commands.add_parser("client", help="check a client library through a driver", description=(
        "Check a client: a scripted server of the suite's own plays the other side, and --command, a driver "
        "for the client under test, makes the calls (conformance/README.md, Checking a client)."))
    client.add_argument("--command", required=True, metavar="CMD", help="the driver to start; the scripted "
                        "server's URL is added as its last argument")
    _selectors(client)
    _outcomes(client)

    schema = commands.add_parser("schema", help="check a schema loader through a driver", description=(
        "Check a schema loader: --command, a driver for the library under test, is handed each case's "
        "schema documents and answers whether the library accepts them, and where each problem is "
        "(conformance/README.md, Checking a schema loader)."))
    schema.add_argument("--command", required=True, metavar="CMD", help="the driver to start")
    _selectors(schema)
    _outcomes(schema)


def _fuzz(commands):
    """fuzz: calls made from a server's schema, and their answers checked."""
    fuzzing = commands.add_parser("fuzz", help="call a server's own functions, made from its schema, and check "
                                  "the answers", description=(
        "Read the target's schema (fn.api_), make calls of its functions by seed, valid ones and ones with one "
        "thing wrong, and check every answer against the schema: " + "; ".join(
            f"{name}: {what}" for name, (what, _) in findings.CHECKS.items()) + ". A failing call is shrunk."))
    where = fuzzing.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", metavar="URL", help="the API URL (http:// or https://)")
    where.add_argument("--app", metavar="MODULE:NAME", help="call a WSGI or ASGI application in process, no "
                       "server and no port: NAME is the application, or a factory that makes it (such as "
                       "reference.services.calculator:wsgi); its curl lines address it served at http://127.0.0.1:8000/api")
    fuzzing.add_argument("--cafile", metavar="FILE", help="trust this certificate authority for an https:// target")
    fuzzing.add_argument("--function", action="append", default=[], metavar="NAME",
                         help="call only this function (repeatable; default: every public one)")
    fuzzing.add_argument("--skip", action="append", default=[], metavar="NAME",
                         help="leave this function uncalled, such as one that deletes what others need (repeatable)")
    fuzzing.add_argument("--max-examples", type=_positive, default=50, metavar="N",
                         help="calls made of each function (default 50)")
    fuzzing.add_argument("--seed", type=int, metavar="N", help="the seed of the calls (default: a new one, printed)")
    fuzzing.add_argument("-H", "--header", action="append", default=[], type=_header, metavar="NAME=TEXT|NAME:=JSON",
                         help="a request header for every call, as the client takes it: such as '@auth_:={\"Session\": "
                              "{\"token\": \"t\"}}' for protected functions, or @id_=run1 (repeatable)")
    fuzzing.add_argument("--workers", type=_positive, default=1, metavar="N",
                         help="fuzz that many functions at once, each worker in a process (where the system forks) "
                              "and on a connection of its own (default 1); the sequences that follow run in one")
    fuzzing.add_argument("--rate", type=_rate, metavar="N", help="at most N requests a second (default: no limit)")
    fuzzing.add_argument("--time-limit", type=_seconds, default=600, metavar="SECONDS",
                         help="stop making calls after this long (default 600)")
    fuzzing.add_argument("--deterministic", action="store_true", help="the service answers the same call the "
                         "same way: a MessagePack answer unlike the JSON one fails at once (else the JSON answers "
                         "before and after it must agree for the binary check to judge it)")
    fuzzing.add_argument("--no-binary", action="store_true", help="make calls on JSON only")
    fuzzing.add_argument("--wait", type=_seconds, default=10, metavar="SECONDS",
                         help="how long to wait for the target to answer (default 10)")
    fuzzing.add_argument("--timeout", type=_timeout, default=10, metavar="SECONDS",
                         help="how long one exchange may take (default 10)")
    fuzzing.add_argument("-v", "--verbose", action="store_true", help="print every call made, and its answer's "
                         "result tag")
    fuzzing.add_argument("--known-failures", metavar="FILE", help="verdicts expected to fail, as fuzz/FUNCTION/CHECK "
                         "globs, one per line, '#' comments allowed: reported, not failing the run (the calculator's "
                         "are in conformance/known-failures/reference-calculator-fuzz.txt)")
    fuzzing.add_argument("--fixtures", metavar="FILE", help="write each failure there as a case, in a fixture file "
                         "(run --cases FILE runs them again)")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"), ("html", "an HTML report")):
        fuzzing.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")


def _matrix(commands):
    """matrix: every implementation of a manifest, or reports made elsewhere, in one table."""
    table = commands.add_parser("matrix", help="run the suites against every implementation a manifest lists",
                                description=("Build, start and check every implementation the manifest lists, one "
                                             "after the other, and show one table: groups of requirements against "
                                             "implementations, MUST and SHOULD apart (conformance/README.md, The "
                                             "matrix)."))
    table.add_argument("--manifest", metavar="FILE", help="the implementations to build, start and check, as "
                       "conformance/matrix.json lists them (default: that file, unless --report is given)")
    table.add_argument("--report", action="append", default=[], metavar="FILE", help="a column made elsewhere: "
                       "the JSON report of run --json --implementation NAME (or of matrix --json); repeatable")
    table.add_argument("--html", metavar="FILE", help="write the matrix there as one page, each failing cell "
                       "leading to its failures")
    table.add_argument("--json", metavar="FILE", help="write the matrix there as reports, one for each column, "
                       "that --report reads back")
    table.add_argument("--markdown", metavar="FILE", help="write the matrix there as a Markdown table (for a CI "
                       "job's summary)")


def _suite(commands):
    """list, check, coverage, generate: the suite itself."""
    listing = commands.add_parser("list", help="list the cases", description=(
        "List the cases, one per line: id, level, what it needs, the features it uses, and what it checks. "
        "A level such as SHOULD+MUST is a convention's case with a part the spec demands; --level MUST "
        "lists it, and a run at that level checks only that part."))
    _selectors(listing)
    commands.add_parser("check", help="lint the suite itself", description=(
        "Check the fixtures: their format, unique ids, known requirements, the features they use, that the "
        "generated ones are current, and that what they expect fits the schema of their service."))
    coverage = commands.add_parser("coverage", help="show which rules have cases (server and client)",
                                   description="Show every requirement and the cases that check it.")
    coverage.add_argument("--missing", action="store_true", help="show only requirements without cases")
    commands.add_parser("generate", help="write the testbed schema and cases from conformance/tables",
                        description="Write testbed.json, cases/testbed-*.json and clients/*.json from the "
                                    "tables in conformance/tables.")


def _version():
    try:
        return metadata.version("sdms-reference")
    except metadata.PackageNotFoundError:
        return "(not installed: run it from a clone with pip install -e .)"


def _selectors(parser):
    parser.add_argument("--id", action="append", default=[], metavar="GLOB",
                        help="only cases whose id matches (* within a segment, ** across); repeatable")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave out cases whose id matches, as --id would select them; repeatable")
    parser.add_argument("--level", type=str.upper, choices=["MUST", "SHOULD", "MAY"], default="MAY",
                        help="MUST cases only, MUST and SHOULD, or all of them (MAY, the default)")


def _outcomes(parser):
    parser.add_argument("--last-failed", "--lf", action="store_true", help="run only the cases that failed last "
                        "time (kept in .conformance_cache/ in the current directory); every case when none did")
    parser.add_argument("--failed-first", "--ff", action="store_true", help="run the cases that failed last "
                        "time first, then the rest")
    parser.add_argument("--durations", type=int, metavar="N", help="show the N slowest cases (0: all of them)")
    parser.add_argument("--maxfail", type=_positive, metavar="N", help="stop starting cases after N failures")
    parser.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                        help="stop at the first failure (--maxfail 1)")
    parser.add_argument("--known-failures", metavar="FILE", help="ids (or globs) expected to fail, one per line, "
                        "'#' comments allowed; they still run, and one that passes is reported as stale")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"),
                       ("html", "an HTML report: one self-contained page, to open in a browser")):
        parser.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only failures")
    named = parser.add_argument_group("what is checked, named in every report")
    named.add_argument("--implementation", default="", metavar="NAME", help="the implementation's name")
    named.add_argument("--implementation-version", default="", metavar="VERSION", help="its version")
    named.add_argument("--language", default="", metavar="LANGUAGE", help="its programming language")


def _features(text):
    features = {f for f in text.split(",") if f}
    unknown = sorted(features - cases.FEATURES.keys())
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown features {', '.join(unknown)}; known: {', '.join(cases.FEATURES)}")
    return features


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _limit(text):
    name, equals, value = text.partition("=")
    if name not in cases.LIMITS or not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with NAME one of {', '.join(cases.LIMITS)}")
    most = cases.LIMITS[name][1]
    if not value.isdigit() or not 1 <= int(value) <= most:
        raise argparse.ArgumentTypeError(f"the {name} limit must be a whole number from 1 to {most:,}, not {value!r}")
    return name, int(value)


MAX_SECONDS = 86_400  # the longest time an option gives (a day): longer ones no clock of the system holds


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not 0 <= seconds <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to {MAX_SECONDS:,} (a day)")
    return seconds


def _timeout(text):
    if _seconds(text) == 0:
        raise argparse.ArgumentTypeError("0 is no time to answer in; give a number of seconds above 0")
    return _seconds(text)


def _header(text):
    """A header as the client takes it: NAME:=JSON, or NAME=TEXT (a string); (name, None) if neither."""
    name, colon, value = text.partition(":=")
    if not colon:
        name, equals, value = text.partition("=")
        return name, value if equals else None
    try:
        return name, json.loads(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not JSON ({error})") from None


def _rate(text):
    try:
        rate = float(text)
    except ValueError:
        rate = 0
    if not 0 < rate < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of requests a second above 0")
    return rate
