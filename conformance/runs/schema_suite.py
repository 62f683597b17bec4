"""Checking a schema loader: the suite hands a driver schema documents, and the driver says
whether its library accepts them, and if not, where each problem is.

How this works
--------------
`python -m conformance schema --command CMD` starts CMD, a driver for the
loader under test (targets/drivers.py), and hands it each case's documents, each a
name and the JSON text of a file (`entries` are written one a line). The
driver replies `{"accepted": true}`, or `{"accepted": false, "problems":
[...]}`, each problem with its document, entry (from 1) and path. Whether a
schema is accepted is the verdict, which passes or fails the case: at MUST
where the spec decides it (a `spec` part, or a MUST case), else at the case's
level. Where each problem is (conv.schema-problems) is a diagnostic, kept
apart as Bowtie keeps them: a loader whose verdicts are right passes, and
the report counts where its diagnostics differ from ours.
"""

import json
import time

from ..language.matchers import compare, explain
from ..reports.results import outcome
from ..targets.drivers import Driver, each
from ..targets.remote import Trouble

GRACE = 10.0  # seconds a driver may take to judge one set of documents


def text(document):
    """A case's document as the text a driver is given."""
    if "text" in document:
        return document["text"]
    entries = document["entries"]
    if type(entries) is not list:
        return json.dumps(entries)
    return "[\n" + ",\n".join(json.dumps(entry, ensure_ascii=False) for entry in entries) + "\n]\n"


def run(cases, command, settings, progress=None):
    """Run the schema cases one after the other with the driver `command`; return their Results."""
    driver = Driver(command)
    try:
        return each(cases, lambda case: run_case(case, driver, settings), progress)
    finally:
        driver.stop()


def run_case(case, driver, settings):
    """Hand the driver a case's documents; compare its verdict, then, apart, its diagnostics."""
    started = time.monotonic()
    documents = [{"name": document["name"], "text": text(document)} for document in case.documents]
    reply = driver.call({"documents": documents}, GRACE)
    expected, problems, diagnostics = case.expect, [], []
    if type(reply) is dict and (type(reply.get("accepted")) is not bool or type(reply.get("problems", [])) is not list):
        raise Trouble(f"the driver {driver.command!r} replied {json.dumps(reply)[:200]} to a schema; its reply is "
                      '{"accepted": true}, or {"accepted": false, "problems": [...]} (conformance/README.md, '
                      "Checking a schema loader)")
    if type(reply) is str:
        problems = [reply]
    elif reply.get("accepted") is not expected["accepted"]:
        problems = ["expected the schema to be refused; the loader accepted it" if not expected["accepted"] else
                    f"expected the schema to be accepted; the loader refused it: {json.dumps(reply.get('problems'))[:300]}"]
    elif "problems" in expected:
        diagnostics = [f"problems{line}" for line in explain(list(compare(expected["problems"], reply.get("problems"), {})))]
    level = "MUST" if case.spec is not None or case.level == "MUST" else case.level
    story = [f"the documents: {json.dumps([d['name'] for d in documents])}",
             *(f"{d['name']}:\n{d['text']}" for d in documents), f"the driver answered: {json.dumps(reply)[:600]}"]
    return outcome(case, problems, level, started, story, settings.known_failure(case.id))._replace(
        replay_title="What happened", diagnostics=tuple(diagnostics))
