"""What a stub's `match!` says: places in a call that match a pattern instead of the stub's value.

How this works
--------------
A stub matches a call by its values (stubs.py). `match!` loosens that at
named places: `{"match!": {"name": {"Glob": {"pattern": "ann*"}}, "id":
{"Any": {}}}}` lets a call match whose `name` starts with "ann" and whose
`id` is anything, whatever values the stub gives there. A place is written
as a path into the call's arguments, or into its headers when it starts
with `@`: `item.tags[0]`, `@auth_.Session.token`. `compiled` reads them
once, when the stub is made; `patterned` tests each place of a call, and
when all hold, gives the call with the stub's own values at those places (or
without them, where the stub gives none), so that the mock's matching,
strict or partial, then compares the rest as always.

A glob, not a regular expression: a stub comes from the network, and a
regular expression can take exponential time on a string made for it. A
glob (`*` any run of characters, `?` any one, `\\` the next one as it is) is
matched piece by piece: the pieces between its stars have fixed lengths, so
the leftmost place each fits is the one to take, found by a search with no
repetition in it, in time within the string's length times the piece's
(MAX_PATTERN characters at most); `spend` is told that bound first.
"""

import re

MAX_PATTERN = 256  # characters of a glob
PART = re.compile(r"([^.\[\]]+)((?:\[\d+\])*)")  # a name, and perhaps [index] after it
INDEX = re.compile(r"\[(\d+)\]")


def steps(place):
    """The steps of a path written as `a.b[0]`, names and indexes; ValueError if it is not one."""
    found = []
    for part in place.split("."):
        written = PART.fullmatch(part)
        if written is None:
            raise ValueError(f"{place!r} is not a path such as item.tags[0]")
        found += [written[1], *(int(index) for index in INDEX.findall(written[2]))]
    return found


def problem(pattern):
    """Why a value is no pattern, {"Any": {}} or {"Glob": {"pattern": TEXT}}, or None."""
    if pattern == {"Any": {}}:
        return None
    glob = pattern.get("Glob") if type(pattern) is dict and len(pattern) == 1 else None
    if type(glob) is not dict or list(glob) != ["pattern"] or type(glob["pattern"]) is not str:
        return 'a pattern is {"Any": {}} or {"Glob": {"pattern": TEXT}}'
    if len(glob["pattern"]) > MAX_PATTERN:
        return f"a glob has at most {MAX_PATTERN} characters"
    return None


def compiled(match):
    """[(the steps of a place, a test of the value there)] of a stub's `match!`, checked before."""
    return [(steps(place), _test(pattern)) for place, pattern in match.items()]


def _test(pattern):
    [(kind, fields)] = pattern.items()
    if kind == "Any":
        return lambda value, spend: True
    pieces = [(re.compile(piece, re.DOTALL), length) for piece, length in _pieces(fields["pattern"])]
    return lambda value, spend: type(value) is str and globbed(pieces, value, spend)


def _pieces(glob):
    """The pieces of a glob between its stars: (a regular expression without repetition, the number of
    characters it matches). A backslash at the end stands for itself."""
    pieces, piece, length, escaped = [], "", 0, False
    for character in glob:
        if escaped or character not in "\\*?":
            piece, length, escaped = piece + re.escape(character), length + 1, False
        elif character == "\\":
            escaped = True
        elif character == "?":
            piece, length = piece + ".", length + 1
        else:
            pieces, piece, length = pieces + [(piece, length)], "", 0
    if escaped:
        piece, length = piece + re.escape("\\"), length + 1
    return pieces + [(piece, length)]


def globbed(pieces, text, spend):
    """Whether `text` matches a glob's pieces: the first at its start, the last at its end, and each
    other at the leftmost place after the one before (their lengths are fixed, so no other can be better).
    `spend` is told the most steps each search may take."""
    (first, _), (last, length) = pieces[0], pieces[-1]
    spend(len(pieces) + length)
    if len(pieces) == 1:
        return first.fullmatch(text) is not None
    found = first.match(text)
    if found is None:
        return False
    start = found.end()
    for piece, size in pieces[1:-1]:
        spend((len(text) - start) * max(size, 1))
        found = piece.search(text, start)
        if found is None:
            return False
        start = found.end()
    return len(text) - length >= start and last.fullmatch(text, len(text) - length) is not None


def patterned(match, arguments, headers, given, given_headers, spend=lambda steps: None):
    """(arguments, headers) of a call with the stub's values (`given`, `given_headers`) at each place
    `match` (compiled) names, or None if a place of the call does not hold its pattern. `spend` is told
    the most steps each test may take (the engine room's matching keeps a budget)."""
    for path, test in match:
        header = path[0].startswith("@")
        value, found = at(headers if header else arguments, path)
        if not found or not test(value, spend):
            return None
        stub_value, stubbed = at(given_headers if header else given, path)
        if header:
            headers = _put(headers, path, stub_value, stubbed, spend)
        else:
            arguments = _put(arguments, path, stub_value, stubbed, spend)
    return arguments, headers


def at(value, path):
    """(the value at `path`, whether there is one)."""
    for step in path:
        if type(step) is str and type(value) is dict and step in value:
            value = value[step]
        elif type(step) is int and type(value) is list and step < len(value):
            value = value[step]
        else:
            return None, False
    return value, True


def _put(value, path, new, given, spend):
    """A copy of `value` with `new` at `path` (the key left out, if not `given`), copied along it only
    (`spend` told what each copy costs: a place of {"Any": {}} in a large call is no free test)."""
    [step, *rest] = path
    spend(len(value))
    copy = dict(value) if type(value) is dict else list(value)
    if rest:
        copy[step] = _put(value[step], rest, new, given, spend)
    elif given:
        copy[step] = new
    elif type(copy) is dict:
        del copy[step]
    return copy
