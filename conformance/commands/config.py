"""Defaults from the [tool.conformance] table of pyproject.toml, as pytest reads its own table there.

    [tool.conformance]
    target = "http://127.0.0.1:8000/api"
    known-failures = "known-failures.txt"
    limit = ["body=2097152"]
    without = "binary"

Each key is a long option (dashes or underscores alike) of the commands that
have it; an option given on the command line replaces the setting. A value is what the command line would
take: text or a number, true or false for a flag, a list for an option that
repeats. Relative paths are from the directory the command runs in, where
pyproject.toml is read.
"""

import argparse
import difflib
import json
from pathlib import Path

from . import files

FILE = Path("pyproject.toml")


def apply(commands, argv, path=FILE):
    """Make the settings of `path`'s [tool.conformance] the defaults of the `commands` (parsers) that have
    each option, unless `argv` gives it; return, for each command's name, the keys it took. ValueError
    says what is wrong, and where."""
    given = {word.split("=", 1)[0] for word in argv if word.startswith("-")}
    if not path.exists() and not path.is_symlink():
        return {}
    settings = files.read_toml(path).get("tool", {}).get("conformance", {})  # (ValueError, in one line)
    if type(settings) is not dict:
        raise ValueError(f"{path}: [tool.conformance] is a table, not {json.dumps(settings, default=str)[:80]}")
    taken = {}
    for key, value in settings.items():
        owners = [(parser, action) for parser in commands.values() for action in parser._actions
                  if f"--{key.replace('_', '-')}" in action.option_strings]
        if not owners:
            known = sorted({o[2:] for p in commands.values() for a in p._actions for o in a.option_strings
                            if o.startswith("--") and o != "--help"})
            near = difflib.get_close_matches(key, known, n=1)
            raise ValueError(f"{path}: [tool.conformance] {key}: no command has this option; "
                             + (f"did you mean {near[0]}?" if near else f"they have {', '.join(known)}"))
        for parser, action in owners:
            if given & set(action.option_strings):  # (the command line wins: a list given there replaces this one)
                continue
            parser.set_defaults(**{action.dest: _value(path, key, value, action)})
            action.required = False  # (given here, as --target may be; and so is a choice it is one of)
            for group in parser._mutually_exclusive_groups:
                group.required = group.required and action not in group._group_actions
            taken.setdefault(parser.prog.rsplit(" ", 1)[-1], []).append(key)
    return taken


def _value(path, key, value, action):
    """`value` as the command line would have made it for `action`."""
    where = f"{path}: [tool.conformance] {key}"
    if action.nargs == 0:  # a flag
        if type(value) is not bool:
            raise ValueError(f"{where}: a flag takes true or false, not {json.dumps(value, default=str)}")
        return action.const if value else action.default
    repeats = isinstance(action, argparse._AppendAction)
    if type(value) is list and action.metavar == "LIST" and all(type(one) is str for one in value):
        value = ",".join(value)  # (an option of a comma-separated list, such as without, takes a TOML list too)
    values = value if type(value) is list and repeats else [value]
    if type(value) is list and not repeats:
        raise ValueError(f"{where}: takes one value, not a list")
    made = []
    for one in values:
        if type(one) not in (str, int, float):
            raise ValueError(f"{where}: takes text or a number, not {json.dumps(one, default=str)}")
        try:
            made.append(action.type(str(one)) if action.type else str(one))
        except (argparse.ArgumentTypeError, ValueError) as error:
            raise ValueError(f"{where}: {error}") from None
        if action.choices and made[-1] not in action.choices:
            raise ValueError(f"{where}: {json.dumps(one)} is not one of {', '.join(map(str, action.choices))}")
    return made if repeats else made[0]
