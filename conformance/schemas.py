"""Checking a schema loader: the suite hands a driver schema documents, and the driver says
whether its library accepts them, and if not, where each problem is.

How this works
--------------
`python -m conformance schema --command CMD` starts CMD, a driver for the
loader under test (drivers.py), and hands it each case's documents, each a
name and the JSON text of a file (`entries` are written one a line). The
driver replies `{"accepted": true}`, or `{"accepted": false, "problems":
[...]}`, each problem with its document, entry (from 1) and path. Whether a
schema is accepted is the case's MUST part (its `spec`); where each problem
is, our convention (conv.schema-problems), at the case's own level.
"""

import json
import time

from .drivers import Driver, each
from .match import compare, explain
from .runner import outcome

GRACE = 10.0  # seconds a driver may take to judge one set of documents


def text(document):
    """A case's document as the text a driver is given."""
    if "text" in document:
        return document["text"]
    entries = document["entries"]
    if type(entries) is not list:
        return json.dumps(entries)
    return "[\n" + ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries) + "\n]\n"


def run(cases, command, known=frozenset(), progress=None):
    """Run the schema cases one after the other with the driver `command`; return their Results."""
    driver = Driver(command)
    try:
        return each(cases, lambda case: run_case(case, driver, known), progress)
    finally:
        driver.stop()


def run_case(case, driver, known=frozenset()):
    """Hand the driver a case's documents; compare its verdict with the spec's part, then all of it."""
    started = time.monotonic()
    documents = [{"name": document["name"], "text": text(document)} for document in case["documents"]]
    reply = driver.call({"documents": documents}, GRACE)
    problems, level = [], ""
    if type(reply) is str:
        problems, level = [reply], "MUST"
    else:
        spec = case.get("spec")
        must = list(_compare(spec, reply)) if spec else []
        rest = list(_compare(case["expect"], reply))
        if must or (rest and not spec and case["level"] == "MUST"):
            problems, level = must or rest, "MUST"
        elif rest:
            problems, level = rest, case["level"]
    story = [f"the documents: {json.dumps([d['name'] for d in documents])}",
             *(f"{d['name']}:\n{d['text']}" for d in documents), f"the driver answered: {json.dumps(reply)[:600]}"]
    return outcome(case, problems, known, started, level, story, "What happened")


def _compare(expected, reply):
    if reply.get("accepted") is not expected["accepted"]:
        if expected["accepted"]:
            yield f"expected the schema to be accepted; the loader refused it: {json.dumps(reply.get('problems'))[:300]}"
        else:
            yield "expected the schema to be refused; the loader accepted it"
        return
    if "problems" in expected:
        yield from (f"problems{line}" for line in explain(list(compare(expected["problems"],
                                                                      reply.get("problems"), {}))))
