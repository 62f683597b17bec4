"""What the client command tells on standard error beside an answer, for a person to read: the fields a
misspelt selection's place has, the functions near a name the server lacks, and when a mock's calls
came."""

import difflib
import sys
from datetime import datetime, timezone

from .fetched import checked


def fields_near(entries, function, selection, body):
    """On standard error, for each field a @select_ names that its place does not have, the fields it has
    (the nearest first)."""
    for case in body["ErrorInvalidRequestHeaders_"].get("cases") or []:
        path = case.get("path") if type(case) is dict else None
        if type(path) is not list or path[:1] != ["@select_"] or "ArrayElementDisallowed" not in case.get("reason", {}):
            continue
        place, named = path[1:-1], selection
        for step in path[1:]:
            try:
                named = named[step]
            except (KeyError, IndexError, TypeError):
                named = None
        key = function if place[:1] == ["->"] else place[0] if place else None
        found = next((entry[key if key == place[0] else "->"] for entry in entries if key in entry), None)
        if type(found) is list:  # (a result's or a union's tags: the fields of the tag named)
            found = next((tag[place[1]] for tag in found if len(place) > 1 and place[1] in tag), None)
        if type(found) is dict and type(named) is str:
            near = difflib.get_close_matches(named, list(found), n=1)
            print(f"note: {' '.join(map(str, place))} has no field {named!r}" + (f"; did you mean {near[0]!r}?" if near
                  else "") + f" (its fields: {', '.join(found) or 'none'})", file=sys.stderr)


def moment(milliseconds):
    """A time given in milliseconds since 1970, as a person reads it: 2026-11-28 06:19:03.477 UTC."""
    return datetime.fromtimestamp(milliseconds / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def when_calls_came(body):
    """A note on when the calls fn.listCalls_ lists came (its `at` is milliseconds since 1970)."""
    times = [call["at"] for call in body.get("Ok_", {}).get("calls", [])
             if type(call) is dict and type(call.get("at")) is int]
    if times:
        print(f"note: at is milliseconds since 1970: these calls came from {moment(min(times))} to "
              f"{moment(max(times))}", file=sys.stderr)


def suggest(client, function, body):
    """On standard error, the near names of a function the server does not have."""
    unknown = {"path": [function], "reason": {"FunctionUnknown": {}}}
    if body["ErrorInvalidRequestBody_"].get("cases") != [unknown]:
        return
    try:
        names = [name for entry in checked(client) for name in entry if name.startswith("fn.")]
    except ValueError:  # (a note, not worth failing the call for)
        return
    near = difflib.get_close_matches(function, names, n=3) or [n for n in names if n == f"fn.{function}"]
    if near:
        print(f"note: the server has no {function}; did you mean {' or '.join(near)}?", file=sys.stderr)
