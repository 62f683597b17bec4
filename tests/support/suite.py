"""The conformance suite as its tests use it: its server cases, its command line run in process, and a
driver made of a program."""

import re
import shlex
import sys

from conformance.__main__ import main
from conformance.language import suite as cases


def run(capsys, *args):
    """Run `python -m conformance ARGS` in-process; return (exit status, output lines)."""
    status = main(list(args))
    return status, capsys.readouterr().out.splitlines()


def counted(line):
    """The numbers of a summary line, by word: {"passed": 3, "failed": 0, ...}."""
    return {word: int(n) for n, word in re.findall(r"(\d+) (passed|failed|known failures|stale|for other services"
                                                    r"|not checked)", line)}


ALL = cases.load()


def applying(profile):
    return [c for c in ALL if c.applies(profile)]


def driver(program):
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(program)}"
