"""How the client command prints what a server answers: JSON indented and in colour on a terminal, bytes
as base64 text (with where they are), and a schema's functions listed."""

import json
import os
import re
import sys

from ..protocol import blobs


def print_json(value, pretty):
    """Print `value` as JSON: indented and coloured if `pretty` and on a terminal (unless NO_COLOR), else on one line."""
    text = json.dumps(value, indent=2 if pretty else None, ensure_ascii=False)
    print(COLOURS.sub(_coloured, text) if pretty and sys.stdout.isatty() and "NO_COLOR" not in os.environ else text)


# Colours, as a terminal shows them: keys blue, text green, numbers cyan, true, false and null magenta.
COLOURS = re.compile(r'("(?:[^"\\]|\\.)*")(\s*:)?|(-?\d[\d.eE+-]*)|\b(true|false|null)\b')


def _coloured(match):
    text, key, number, literal = match.groups()
    if text is not None:
        return f"\033[34m{text}\033[0m{key}" if key else f"\033[32m{text}\033[0m"
    return f"\033[36m{number}\033[0m" if number else f"\033[35m{literal}\033[0m"


def wire_text(data):
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
