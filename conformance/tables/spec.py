"""What the specification's own words demand of an answer, as opposed to our conventions.

How this works
--------------
A case states the exact answer our conventions give. Where that answer goes
beyond what the specification's words say (integer indexes in paths, reason
names it never shows, the 64-bit range, which error wins), the case is a
SHOULD, and `demanded(message)` makes its MUST part: the same answer with
every convention loosened into a matcher, so that a server that follows the
specification literally, and does anything reasonable where it is silent,
passes the MUST part.

The specification pins these (and `commands/lint.py` refuses a MUST expectation that
pins more):

- results: the tags it names (`RESULTS`), and the function's own;
- an invalid request body: `ErrorInvalidRequestBody_` holding one case per
  violation, each a path that starts with the function name (and, for a
  wrongly typed field, the field's name) and a reason; `TypeUnexpected` with
  `actual` and `expected` for a value of the wrong JSON type, whose type names
  it shows only for `Number` and `String`;
- headers: `@id_` reflected, `@enc_` and `@bin_` in binary answers, and
  `@base64_` with `true` at a bytes field (marks inside arrays and maps are
  ours);
- not HTTP statuses, media types, parse failures, header or result checking,
  nor what a handler that raises gets: those are all ours.
"""

from ..language.matchers import is_matcher

RESULTS = {"Ok_", "ErrorInvalidRequestBody_", "ErrorUnauthenticated_", "ErrorUnauthorized_", "ErrorUnavailable",
           "ErrorUnknownVariables", "ErrorCannotDivideByZero", "ErrorVerificationFailure"}
TYPE_NAMES = {"Number", "String"}  # the type names of TypeUnexpected the spec shows
HEADERS = {"@id_", "@bin_", "@enc_", "@base64_"}  # response headers whose content the spec describes
ANY = {"$type": "any"}
OBJECT = {"$type": "object"}


def demanded(message):
    """The MUST part of an expected message [headers, body], or None when the spec demands
    nothing of it that a server of ours could not also answer otherwise."""
    if is_matcher(message) or type(message) is not list or len(message) != 2:
        return None
    headers, body = message
    if is_matcher(body) or type(body) is not dict or len(body) != 1:
        return None
    [(tag, fields)] = body.items()
    if tag.endswith("_") and tag not in RESULTS:
        return None  # a stock error the spec never names: how it is answered is ours
    if tag == "ErrorInvalidRequestBody_":
        fields = {"cases": _cases(fields["cases"])}
    elif tag in ("ErrorUnauthenticated_", "ErrorUnauthorized_"):
        fields = OBJECT  # the message is a sentence of the server's choosing
    return [_headers(headers), {tag: fields}]


def _headers(headers):
    if is_matcher(headers) or type(headers) is not dict:
        return ANY
    kept = {name: value for name, value in headers.items() if name in HEADERS}
    if "@base64_" in kept and not _plain_marks(kept["@base64_"]):
        del kept["@base64_"]  # "*" for the elements of arrays and maps is ours
    if "@enc_" in kept:
        kept["@enc_"] = OBJECT  # its layout is not shown
    return {"$partial": kept} if kept else OBJECT


def _plain_marks(marks):
    return marks is True or type(marks) is dict and "*" not in marks and all(map(_plain_marks, marks.values()))


def _cases(cases):
    if is_matcher(cases):  # {"$unordered": [...]}: the order of cases is ours
        [(word, elements)] = cases.items()
        return {"$unordered": [_case(c) for c in elements]} if word in ("$unordered", "$includes") else ANY
    return {"$unordered": [_case(c) for c in cases]}


def _case(case):
    """One validation case, loosened: the path's start, and the reason where it is pinned."""
    path, reason = case["path"], case["reason"]
    [(name, data)] = reason.items()
    # A value of another JSON type; not null (a reason of its own, or not, is ours), not a
    # fraction for an integer (is 1.0 whole?), nor text that is not base64 (how strict?).
    typed = (name == "TypeUnexpected" and "Null" not in data["actual"] and "Base64String" not in data["expected"]
             and not ("Number" in data["actual"] and "Integer" in data["expected"]))
    if typed and set(data["actual"]) <= TYPE_NAMES and set(data["expected"]) <= TYPE_NAMES:
        kept = reason
    elif typed:
        kept = {"TypeUnexpected": {"actual": OBJECT, "expected": OBJECT}}
    else:
        kept = OBJECT  # a reason the spec does not show, or a judgement that is ours
    start = path[:2] if typed and len(path) > 1 and type(path[1]) is str else path[:1]
    return {"path": {"$startsWith": start}, "reason": kept}
