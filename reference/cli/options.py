"""What every command line shares: its parser, a quiet end on Ctrl-C, and the values of its options.

Each command (`server.py`, `client.py`, `mock.py`, `schema.py`) is a function
of its arguments that returns an exit status: 0 when all went well, 2 for a
usage error or a start-up problem: one line on standard error that starts
with the command's name, never a traceback. Every command has `--help`,
`--version` and `-v`, and options that mean the same have the same name in
each. The library modules know nothing of command lines.
"""

import argparse
import contextlib
import difflib
import functools
import math
import os
import re
import sys

from .. import __version__


@contextlib.contextmanager
def loading():
    """Around a command's imports: Ctrl-C while it loads ends it as Ctrl-C at work does (`interruptible`),
    with status 130 and no traceback."""
    try:
        yield
    except KeyboardInterrupt:
        print(file=sys.stderr)
        raise SystemExit(130) from None


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
        chosen = re.search(r"invalid choice: '(.*?)' \(choose from (.*)\)$", message)
        if chosen:  # (a misspelt choice gets the nearest, as a misspelt option does)
            message += near(chosen[1], re.findall(r"'(.*?)'", chosen[2]))
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        """As argparse's, but an option this command does not know is told as such, with the nearest it
        knows, before any missing argument (argparse names the missing ones first)."""
        args = sys.argv[1:] if args is None else list(args)
        for word in args:
            if word == "--":
                break
            if word.startswith("-") and len(word) > 1 and not word[1].isdigit() and not self._knows(word):
                name = word.split("=")[0]
                self.error(f"unrecognized option {name}" + near(name, [known for action in self._actions
                                                                        for known in action.option_strings]))
        return super().parse_known_args(args, namespace)

    def _knows(self, word):
        name = word.split("=")[0] if word.startswith("--") else word[:2]
        return any(known == name or (name.startswith("--") and known.startswith(name))
                   for action in self._actions for known in action.option_strings)

    def fail(self, message):
        """Say what went wrong, in one line that starts as usage errors do; return status 2."""
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        return 2



MOST_PROBLEMS = 20  # problems of a schema or stubs a command says before it stops (the checker says more)


def said_problems(problems, count=None, most=MOST_PROBLEMS):
    """The first `most` problems as lines, and how many more of `count` in all: a server's answer of a
    million problems is not a million lines (`python -m reference.schema FILE` lists a thousand)."""
    count = len(problems) if count is None else count
    lines = [str(problem) for problem in problems[:most]]
    return lines + [f"... and {count - len(lines):,} more"] * (count > len(lines))


def near(word, known):
    """"; did you mean --target?": the name of `known` nearest to a misspelt `word`, if one is near."""
    starting = [name for name in known if name.startswith(word)]
    nearest = starting if len(starting) == 1 else difflib.get_close_matches(word, known, n=1)
    return f"; did you mean {nearest[0]}?" if nearest else ""


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
