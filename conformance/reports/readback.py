"""Reports read back: a `run --json` report written anywhere, as a Column of the matrix.

How this works
--------------
`matrix --report FILE` takes reports that CI jobs wrote elsewhere, perhaps
of implementations nobody here has seen: input like any other. Each field
is checked for the type the report format gives it (`_field`), and a report
that holds another is refused in one line that says where; the text it
holds is made safe to show (`_shown`): no control character reaches a
terminal or splits a Markdown row, and half a UTF-16 pair becomes U+FFFD. A
file holds at most MAX_REPORTS reports, each at most MAX_CASES cases, so
the page it makes is bounded too.
"""

import functools
import re

from ..language import suite
from ..language.suite import Case
from .grid import UNCHECKED, Column
from .results import STATUSES, Result

MAX_REPORTS = 100  # reports of one --report file: columns of one matrix
MAX_CASES = 100_000  # cases of one report (the suite has about 2,000)
OLD = {"other-service": "for other services", "not-checked": "not checked", "set-aside": "set aside"}  # (older reports)
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # what a terminal or a table row takes as more than text
TYPES = {str: "text", list: "a list", (int, float): "a number", dict: "an object"}


def reports(document, where):
    """The reports a file holds: one (run --json), or several (matrix --json); ValueError says how not."""
    if type(document) is dict and type(document.get("reports")) is list:
        if len(document["reports"]) > MAX_REPORTS:
            raise ValueError(f"{where}: holds {len(document['reports']):,} reports, more than the {MAX_REPORTS} a "
                             f"matrix shows")
        return [from_report(one, f"{where}: reports[{i}]") for i, one in enumerate(document["reports"])]
    return [from_report(document, where)]


def from_report(document, where):
    """The Column of a `run --json` report; ValueError says how it is not one."""
    if type(document) is not dict or type(document.get("cases")) is not list:
        raise ValueError(f"{where}: not a report of run --json (an object with a list of \"cases\")")
    if len(document["cases"]) > MAX_CASES:
        raise ValueError(f"{where}: holds {len(document['cases']):,} cases, more than the {MAX_CASES:,} a report may")
    every, results = _suite(), []
    for number, item in enumerate(document["cases"]):
        if type(item) is not dict or type(item.get("id")) is not str or item.get("status") not in STATUSES + tuple(OLD):
            raise ValueError(f"{where}: cases[{number}] has no id, or no status of {', '.join(STATUSES)}")
        field = lambda name, kind, default: _field(item, name, kind, default, f"{where}: cases[{number}]")
        requirements, level = field("requirements", list, []), field("level", str, "MAY")
        case = every.get(item["id"]) or Case(_shown(item["id"]), "", tuple(map(_shown, requirements)),
                                             _shown(level))  # (a case of another suite)
        status, reason = (("not-run", OLD[item["status"]]) if item["status"] in OLD else
                          (item["status"], _shown(field("reason", str, ""))))
        tries = field("tries", list, [])
        results.append(Result(case, status, [_shown(p, lines=True) for p in field("problems", list, [])],
                              float(field("seconds", (int, float), 0)), _shown(field("failedLevel", str, "")),
                              reason, tuple(tries) if len(tries) == 2 else (),
                              tuple(_shown(p, lines=True) for p in field("reproduce", list, [])),
                              **{name: _shown(field(name, str, ""), lines=True)
                                 for name in ("answer", "evidence", "expected")}))
    implementation = _field(document, "implementation", dict, {}, where)
    entry = {key: _shown(implementation[key]) for key in ("name", "version", "language", "way") if implementation.get(key)}
    entry.setdefault("name", _shown(document.get("target") or where))
    for key in ("limits", "suite"):
        if _field(document, key, dict, {}, where):
            entry[key] = {_shown(name): _shown(value) for name, value in document[key].items()}
    state = _shown(document.get("column") or ("errored" if document.get("stopped") else ""))
    trouble = _shown(document.get("stopped") or document.get("interrupted") or "")
    if document.get("interrupted") and not state:
        state = "interrupted"
    return Column(entry, results, trouble, state if state in ("errored", *UNCHECKED) else "errored" * bool(trouble))


def _field(item, name, kind, default, where):
    """`item[name]` if it is of `kind` (a number is no boolean), `default` if it is absent or null; else
    ValueError saying where."""
    value = item.get(name)
    if value is None:
        return default
    if not isinstance(value, kind) or type(value) is bool:
        raise ValueError(f"{where}.{name} is not {TYPES[kind]}")
    return value


def _shown(value, lines=False):
    """A report's value as text safe to show: half a UTF-16 pair replaced, and no control character (but
    line breaks, where `lines` may hold several)."""
    text = str(value).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return CONTROL.sub(lambda found: found[0] if lines and found[0] == "\n" else " ", text)


@functools.cache
def _suite():
    """The suite's cases by id, read once for all the reports of a matrix."""
    return {case.id: case for case in suite.everything()}
