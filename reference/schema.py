"""`python -m reference.schema` (and `sdms-schema`): check schema files as a compiler would, speak the
suite's schema driver protocol, or, as `compare OLD NEW`, say which changes break the old schema's clients.

Checking: every problem of the files and directories given, one schema made
of all of them, printed as FILE:LINE:COLUMN: MESSAGE (sources.py places them).
Comparing: the findings of changes/compatibility.py, one line each, then the
notes, the evidence of recorded traffic (changes/traffic.py) and the verdict.
Exit status 0 when the schema is sound, or no old client breaks; 1 when it
has problems, or one does; 2 when a schema does not load or the command is
misused.
"""

import argparse
import difflib
import fnmatch
import json
import sys
from pathlib import Path

from .cli.options import Parser, interruptible, loading, program, timeout

with loading():  # (Ctrl-C while the command loads its parts: status 130, no traceback)
    from . import sources
    from .changes import compatibility, traffic
    from .cli import drivers
    from .protocol.documents import Document
    from .transports.http_client import Client, TransportError


@interruptible
def main(argv=None):
    """Check schema files: every problem as `file:line:col: message`; or the suite's schema driver; or,
    as `compare OLD NEW`, which changes break the old schema's clients."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["compare"]:
        return compare(argv[1:])
    parser = Parser(prog=program("reference.schema"), description=(
        "Check a schema before serving it: every problem of the files and directories given (one schema, "
        "made of all of them) is printed as FILE:LINE:COLUMN: MESSAGE, the form editors understand. Exit "
        "status 0 when the schema is sound, 1 when it has problems, 2 for a usage error."), epilog=(
        f"{program('reference.schema')} compare OLD NEW says which changes from OLD to NEW break OLD's clients "
        "(compare --help)."))
    parser.add_argument("paths", nargs="*", metavar="FILE_OR_DIR", help="schema files, or directories of them")
    parser.add_argument("--json", action="store_true", help="print the problems as JSON, for tools")
    parser.add_argument("--driver", action="store_true", help="speak the conformance suite's schema driver "
                        "protocol on stdin and stdout instead (python -m conformance schema --command ...)")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list each document read")
    options = parser.parse_args(argv)
    if options.driver:
        if options.paths:
            parser.error("--driver reads its schemas from standard input, not from FILE_OR_DIR")
        drivers.drive_schema(sys.stdin, sys.stdout)
        return 0
    if not options.paths:
        parser.error("name at least one schema file or directory")
    documents, problems = [], []
    for path in options.paths:
        try:
            found, trouble = sources.read(Path(path))
        except ValueError as error:
            parser.error(str(error))
        documents, problems = documents + found, problems + trouble
    if options.verbose and not options.json:
        for document in documents:
            print(f"{document.name}: {len(document.entries)} entr{'ies' if len(document.entries) != 1 else 'y'}")
    _, problems = sources.check(documents, problems)
    if options.json:
        print(json.dumps([sources.as_data(problem) for problem in problems], indent=1))
    else:
        for problem in problems:
            print(problem)
    if problems:
        if not options.json:
            print(f"{len(problems)} problem{'s' * (len(problems) != 1)}")
        return 1
    if not options.json:
        kinds = [key.split(".")[0] for document in documents for entry in document.entries
                 for key in entry if key.split(".")[0] in ("info", "struct", "union", "fn", "headers", "errors")]
        print(f"ok: {len(documents)} document{'s' * (len(documents) != 1)}, {len(kinds)} entr{'ies' if len(kinds) != 1 else 'y'} "
              f"({', '.join(f'{kinds.count(k)} {k}' for k in sorted(set(kinds)))})")
    return 0

@interruptible
def compare(argv=None):
    """Say which changes from one schema to another break the clients of the first, by the protocol's rules."""
    parser = Parser(prog=program("reference.schema") + " compare", description=(
        "Say which changes from OLD to NEW break the clients of OLD: one line for each, where it is, its rule, "
        "the element, the path to it from each function it reaches, and which clients break (the rules are "
        "in reference/README.md). Exit status 0 when no old client breaks, 1 when one does, 2 when either "
        "schema does not load or for a usage error."))
    parser.add_argument("old", metavar="OLD", help="the schema the clients know: a file, a directory of them, or "
                        "the URL of a live server (its fn.api_)")
    parser.add_argument("new", metavar="NEW", help="the schema that replaces it, in one of the same forms")
    parser.add_argument("--except", dest="accepted", action="append", default=[], type=_exception,
                        metavar="RULE[:ELEMENT]", help="accept a breaking change on purpose: every finding of the "
                        "rule, or only at ELEMENT (* matches any text: struct.Item.*); repeatable")
    parser.add_argument("--traffic", action="append", default=[], metavar="PATH", help="recorded calls, as "
                        "evidence: a folder of stub files saved by python -m reference.mock --record, or JSON "
                        "lines of [request, answer] pairs; repeatable")
    parser.add_argument("--json", action="store_true", help="print the findings as JSON, for tools")
    parser.add_argument("--cafile", metavar="FILE", help="trust this certificate authority for an https:// URL")
    parser.add_argument("--timeout", type=timeout, default=10, metavar="SECONDS",
                        help="how long fetching a schema from a URL may take (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every path to each element, not only "
                        "the first three")
    options = parser.parse_args(argv)
    try:
        schemas = [_compared(parser, "OLD", options.old, options), _compared(parser, "NEW", options.new, options)]
        recorded = [exchange for path in options.traffic for exchange in _recorded(path)]
    except ValueError as error:  # a schema or a recording that cannot be read at all
        return parser.fail(str(error))
    if None in schemas:
        return 2
    comparison = compatibility.compare(*schemas)
    replay = traffic.Replay(recorded, comparison) if options.traffic else None  # (its evidence may add findings)
    findings = sorted(comparison.findings.values(), key=lambda f: (f.order, f.rule))
    for finding in findings:
        finding.accepted = any(rule == finding.rule and fnmatch.fnmatchcase(finding.element, element or "*")
                               for rule, element in options.accepted)
    if options.json:
        print(json.dumps(_comparison_data(options, findings, comparison, replay), indent=1))
    else:
        for line in _comparison_lines(findings, comparison, replay, None if options.verbose else 3):
            print(line)
    return 1 if comparison.breaking() else 0


def _exception(text):
    """An --except value: (rule, element glob or None)."""
    rule, _, element = text.partition(":")
    if rule not in compatibility.RULES:
        near = difflib.get_close_matches(rule, compatibility.RULES, n=1)
        raise argparse.ArgumentTypeError(f"{rule!r} is no rule" + (f"; did you mean {near[0]!r}?" if near else
                                         f" (they are {', '.join(compatibility.RULES)})"))
    return rule, element or None


def _recorded(path):
    """The exchanges recorded at --traffic `path`; ValueError, saying it is --traffic's, if it cannot be read."""
    try:
        return traffic.read(path)
    except ValueError as error:
        raise ValueError(f"--traffic {error}") from None


def _compared(parser, what, given, options):
    """The Schema of OLD or NEW (a file, a directory, or a live server's URL); None once its problems are
    said; ValueError if it cannot be read at all."""
    try:
        if given.startswith(("http://", "https://")):
            with Client(given, timeout=options.timeout, cafile=options.cafile) as client:
                documents, problems = [Document(given, client.schema())], []
        else:
            documents, problems = sources.read(Path(given))
    except (TransportError, ValueError) as error:
        raise ValueError(f"{what} {given}: {error}") from None
    loaded, problems = sources.check(documents, problems)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        parser.fail(f"{what} {given} does not load: {len(problems)} problem{'s' * (len(problems) != 1)}")
    return loaded


def _comparison_lines(findings, comparison, replay, most):
    """The findings, the notes, the replay and the verdict, as lines of text."""
    lines = []
    for f in findings:
        count = f.count()
        shown = "; ".join(f.routes(most)) + (f"; and {count - most} more" if most and count > most else "")
        clients = f.clients()
        affects = "breaks" if f.level == "breaking" else "affects"
        lines.append(f"{f.where}: {f.level}{' (accepted)' * f.accepted} {f.rule}: {f.element}: {f.detail}; from "
                     f"{shown}; {affects} clients that {' or '.join(clients[:most])}"
                     + (f" (and {len(clients) - most} more)" if most and len(clients) > most else ""))
    lines += [f"note: {text}" for _, text in comparison.notes]
    lines += replay.lines() if replay else []
    counts = {level: sum(f.level == level and not f.accepted for f in findings) for level in ("breaking", "warning")}
    accepted = sum(f.accepted for f in findings)
    said = [f"{counts['breaking']} breaking change{'s' * (counts['breaking'] != 1)}",
            f"{counts['warning']} warning{'s' * (counts['warning'] != 1)}"] + [f"{accepted} accepted"] * bool(accepted)
    lines.append(", ".join(said) + (": clients of the old schema break." if counts["breaking"] else
                                   ": clients of the old schema keep working."))
    return lines


MOST_ROUTES = 100  # paths to an element --json lists (reachedFrom counts them all)


def _comparison_data(options, findings, comparison, replay):
    """The comparison as JSON data."""
    touched = replay.touched if replay else {}
    return {"old": options.old, "new": options.new, "breaking": bool(comparison.breaking()),
            "findings": [{"rule": f.rule, "level": f.level, "side": compatibility.RULES[f.rule][0],
                          "element": f.element, "where": f.where, "change": f.detail, "accepted": f.accepted,
                          "routes": f.routes(MOST_ROUTES), "reachedFrom": f.count(), "clients": f.clients(),
                          **({"traffic": {"touched": len(touched[(f.rule, f.element)]),
                                          "first": [e.source for e in touched[(f.rule, f.element)][:10]]}}
                             if replay else {})} for f in findings],
            "notes": [{"rule": rule, "text": text} for rule, text in comparison.notes],
            **({"traffic": replay.as_data()} if replay else {})}


if __name__ == "__main__":
    sys.exit(main())
