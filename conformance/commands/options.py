"""What every command of the suite shares: its parser (a usage error is one line and exit status 2), the
options of case selection and of outcomes, how each option's value is read, and what a command does
before anything runs (reports it can write, a known-failures file it can read).

Each command is a module of this folder that adds its parser (`add`) and names the function that runs it
(`set_defaults(run=...)`); __main__.py puts them together.
"""

import argparse
import difflib
import json
import re
import sys
from pathlib import Path

from ..language import suite
from ..runs.settings import Settings
from . import files


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, and exit status 2; an option it does not know is told
    as such by the command it was given to, before any missing argument."""

    def error(self, message):
        chosen = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if chosen:  # (a misspelt command or choice gets the nearest, as a misspelt option does)
            message += near(chosen[1], re.findall(r"'(.*?)'", chosen[2]))
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    commands = {}  # a parser of commands: each name's parser

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        unknown = next((word for word in option_words(args, bool(self.commands)) if not self.knows(word)), None)
        if unknown:
            name = unknown.split("=")[0]
            self.error(f"unrecognized option {unknown}" + near(name, [known for action in self._actions
                                                                     for known in action.option_strings]))
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


def near(word, known):
    """"; did you mean --target?": the name of `known` nearest to a misspelt `word`, if one is near."""
    starting = [name for name in known if name.startswith(word)]
    nearest = starting if len(starting) == 1 else difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {nearest[0]}?" if nearest else ""


def option_words(args, commanding):
    """The words of `args` that are options (not values such as -1); for a parser of commands, only those
    before the command's name, which belong to it."""
    for word in args:
        if word == "--" or (commanding and not word.startswith("-")):
            return
        if word.startswith("-") and len(word) > 1 and not word[1].isdigit() and word[1] != ".":
            yield word


def selectors(parser):
    parser.add_argument("--id", action="append", default=[], metavar="GLOB",
                        help="only cases whose id matches (* within a segment, ** across); repeatable")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave out cases whose id matches, as --id would select them; repeatable")
    parser.add_argument("--level", type=str.upper, choices=["MUST", "SHOULD", "MAY"], default="MAY",
                        help="MUST cases only, MUST and SHOULD, or all of them (MAY, the default)")
    parser.add_argument("-k", "--keyword", default="", metavar="EXPRESSION",
                        help="only cases whose id holds these words, as pytest's -k takes them: "
                             "'add and not (overflow or fractions)'")


def outcomes(parser):
    parser.add_argument("--last-failed", "--lf", action="store_true", help="run only the cases that failed last "
                        "time (kept in .conformance_cache/ in the current directory); every case when none did")
    parser.add_argument("--failed-first", "--ff", action="store_true", help="run the cases that failed last "
                        "time first, then the rest")
    parser.add_argument("--durations", type=int, metavar="N", help="show the N slowest cases (0: all of them)")
    parser.add_argument("--maxfail", type=positive, metavar="N", help="stop starting cases after N failures")
    parser.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                        help="stop at the first failure (--maxfail 1)")
    parser.add_argument("--known-failures", metavar="FILE", help="ids (or globs) expected to fail, one per line, "
                        "'#' comments allowed; they still run, and one that passes is reported as stale")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"),
                       ("html", "an HTML report: one self-contained page, to open in a browser")):
        parser.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")
    told = parser.add_mutually_exclusive_group()
    told.add_argument("-v", "--verbose", action="store_true", help="print every case, not only failures")
    told.add_argument("-q", "--quiet", action="store_true", help="print a line for each failure and the summary, "
                      "no more (the reports keep the rest)")
    named = parser.add_argument_group("what is checked, named in every report")
    named.add_argument("--implementation", default="", metavar="NAME", help="the implementation's name")
    named.add_argument("--implementation-version", default="", metavar="VERSION", help="its version")
    named.add_argument("--language", default="", metavar="LANGUAGE", help="its programming language")


SETTINGS = {  # an option's name on the command line (its dest) -> the setting it gives, and how
    "level": ("level", str), "id": ("ids", tuple), "exclude": ("exclude", tuple), "last_failed": ("last_failed", bool),
    "without": ("without", frozenset), "limit": ("limits", dict), "workers": ("workers", int),
    "repeat": ("repeat", int), "maxfail": ("maxfail", None), "verbose": ("verbose", bool), "quiet": ("quiet", bool),
    "keyword": ("keyword", str),
    "durations": ("durations", None), "seed": ("seed", None), "max_examples": ("max_examples", int),
    "function": ("functions", tuple), "skip": ("skip", tuple), "header": ("headers", dict),
    "time_limit": ("time_limit", float), "deterministic": ("deterministic", bool),
    "no_binary": ("binary", lambda given: not given), "response_time": ("response_time", float),
}


def settings(options, known=frozenset()):
    """The Settings of a run as its command line says ([tool.conformance] gave the defaults), with the
    globs of its `known` failures; the command line itself goes no further."""
    given = vars(options)
    made = {name: convert(given[dest]) if convert and given[dest] is not None else given[dest]
            for dest, (name, convert) in SETTINGS.items() if dest in given}
    implementation = {key: given[dest] for key, dest in (("name", "implementation"), ("version",
                      "implementation_version"), ("language", "language")) if given.get(dest)}
    reports = {form: given[form] for form in ("junit", "json", "html") if given.get(form)}
    return Settings(implementation=implementation, known=frozenset(known), reports=reports, **made)


def unable(parser, message):
    """Say why the subject cannot be checked, in one line that starts as usage errors do."""
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def writable(parser, options, names=("junit", "json", "html")):
    """Stop before anything runs if a report asked for cannot be written (leaving no empty file)."""
    for name in names:
        path = getattr(options, name) and Path(getattr(options, name))
        if path and str(path) == "-":
            parser.error(f"--{name} needs a file name: standard output carries the run's lines")
        try:
            if path:
                existed = path.exists()
                path.open("a", encoding="utf-8").close()
                if not existed:
                    path.unlink()
        except OSError as error:
            parser.error(f"cannot write the --{name} report to {path}: {error.strerror or error}")


def known_failures(path, everything, parser):
    """The globs of a known-failures file; each must match some case (of fuzz: fuzz/FUNCTION/CHECK, where
    `everything` is None), or it is a typo."""
    try:
        globs = {glob for glob, _ in suite.known_lines(files.read_text(path))}
    except ValueError as error:
        parser.error(f"--known-failures {error}")
    matches = (lambda g: any(suite.matches([g], c.id) for c in everything)) if everything is not None else (
        lambda g: g.startswith("fuzz/") and g.count("/") == 2)
    unmatched = sorted(g for g in globs if not matches(g))
    if unmatched:
        parser.error(f"the known-failures file {path} lists what matches no case: {', '.join(unmatched)}")
    return globs


def features(text):
    features = {f for f in text.split(",") if f}
    unknown = sorted(features - suite.FEATURES.keys())
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown features {', '.join(unknown)}; known: {', '.join(suite.FEATURES)}")
    return features


def positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def limit(text):
    name, equals, value = text.partition("=")
    if name not in suite.LIMITS or not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with NAME one of {', '.join(suite.LIMITS)}")
    most = suite.LIMITS[name][1]
    if not value.isdigit() or not 1 <= int(value) <= most:
        raise argparse.ArgumentTypeError(f"the {name} limit must be a whole number from 1 to {most:,}, not {value!r}")
    return name, int(value)


MAX_SECONDS = 86_400  # the longest time an option gives (a day): longer ones no clock of the system holds


def seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not 0 <= seconds <= MAX_SECONDS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds from 0 to {MAX_SECONDS:,} (a day)")
    return seconds


def timeout(text):
    if seconds(text) == 0:
        raise argparse.ArgumentTypeError("0 is no time to answer in; give a number of seconds above 0")
    return seconds(text)


def header(text):
    """A header as the client takes it: NAME:=JSON, or NAME=TEXT (a string); (name, None) if neither."""
    name, colon, value = text.partition(":=")
    if not colon:
        name, equals, value = text.partition("=")
        return name, value if equals else None
    try:
        return name, json.loads(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not JSON ({error})") from None


def rate(text):
    try:
        rate = float(text)
    except ValueError:
        rate = 0
    if not 0 < rate < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of requests a second above 0")
    return rate
