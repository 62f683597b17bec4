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

from .cli.options import Parser, interruptible, loading, program, said_problems, timeout

with loading():  # (Ctrl-C while the command loads its parts: status 130, no traceback)
    from . import sources
    from .changes import compatibility, report, revisions, traffic
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
    _, refused = sources.check(documents, problems)
    problems = refused.problems if refused else []
    if options.json:
        print(json.dumps([sources.as_data(problem) for problem in problems], indent=1))
    else:
        for problem in problems:
            print(problem)
    if refused:
        if not options.json:
            print(f"... and {refused.count - len(problems):,} more\n" * (refused.count > len(problems))
                  + f"{refused.count:,} problem{'s' * (refused.count != 1)}")
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
    parser = _compare_parser()
    options = parser.parse_args(argv)
    if options.against and options.new:
        parser.error(f"--against {options.against} compares NEW with its own path at that revision: name NEW alone")
    if options.against:
        options.old, options.new = None, options.old
    if not options.new:
        parser.error("name OLD and NEW, or NEW alone with --against REV")
    try:
        accepted = options.accepted + (_exceptions(options.exceptions) if options.exceptions else [])
        old = _compared(parser, "OLD", options.old, options) if options.old else _revision(parser, options)
        schemas = [old, _compared(parser, "NEW", options.new, options)]
    except ValueError as error:  # a schema or the exceptions that cannot be read at all
        return parser.fail(str(error))
    if None in schemas:
        return 2
    comparison = compatibility.compare(*schemas)
    try:  # (each recorded call replayed as it is read; the evidence may add findings)
        replay = traffic.Replay(_recorded(options.traffic), comparison) if options.traffic else None
    except ValueError as error:  # a recording that cannot be read
        return parser.fail(str(error))
    findings = sorted(comparison.findings.values(), key=lambda f: (f.order, f.rule))
    verdict = report.Verdict(options.old or f"{options.against}:{options.new}", options.new, findings, comparison,
                             replay, _accept(findings, accepted))
    for line in report.FORMATS[options.format](verdict, None if options.verbose else 3):
        print(line)
    if options.junit:
        try:
            report.junit(verdict, options.junit)
        except OSError as error:
            return parser.fail(f"--junit {options.junit}: cannot be written: {error.strerror}")
    return 1 if comparison.breaking() else 0


def _compare_parser():
    """The command line of `compare`."""
    parser = Parser(prog=program("reference.schema") + " compare", description=(
        "Say which changes from OLD to NEW break the clients of OLD: one line for each, where it is, its rule, "
        "the element, the path to it from each function it reaches, and which clients break (the rules are "
        "in reference/README.md). Exit status 0 when no old client breaks, 1 when one does, 2 when either "
        "schema does not load or for a usage error."))
    parser.add_argument("old", metavar="OLD", nargs="?", help="the schema the clients know: a file, a directory "
                        "of them, or the URL of a live server (its fn.api_); with --against, not given")
    parser.add_argument("new", metavar="NEW", nargs="?", help="the schema that replaces it, in one of the same forms")
    parser.add_argument("--against", metavar="REV", help="compare NEW (a file or directory in a git working tree) "
                        "with the same path at the git revision REV: a branch, a tag or a commit, read from the "
                        "repository without checking it out (origin/main, v1.2, HEAD~1)")
    parser.add_argument("--except", dest="accepted", action="append", default=[], type=_exception,
                        metavar="RULE[:ELEMENT]", help="accept a breaking change on purpose: every finding of the "
                        "rule, or only at ELEMENT (* matches any text: struct.Item.*); repeatable")
    parser.add_argument("--exceptions", metavar="FILE", help="accepted changes kept in a file beside the schema: "
                        "one RULE[:ELEMENT] a line, # starting a comment")
    parser.add_argument("--traffic", action="append", default=[], metavar="PATH", help="recorded calls, as "
                        "evidence: a folder of stub files saved by python -m reference.mock --record, or JSON "
                        "lines of [request, answer] pairs; repeatable. A recorded call the old schema took and "
                        "the new refuses breaks, whatever the rules say")
    parser.add_argument("--format", choices=sorted(report.FORMATS), default="text", help="text (the default); "
                        "json, for tools; github, annotations at each finding's file and line in GitHub Actions")
    parser.add_argument("--json", dest="format", action="store_const", const="json", help="the same as "
                        "--format json")
    parser.add_argument("--junit", metavar="FILE", help="also write the findings as JUnit XML, one test case each")
    parser.add_argument("--cafile", metavar="FILE", help="trust this certificate authority for an https:// URL")
    parser.add_argument("--timeout", type=timeout, default=10, metavar="SECONDS",
                        help="how long fetching a schema from a URL may take (default %(default)s)")
    parser.add_argument("-v", "--verbose", action="store_true", help="show every path to each element, not only "
                        "the first three")
    return parser


def _accept(findings, accepted):
    """Mark each finding an exception (rule, element glob, how it was given) names as accepted; the
    exceptions that named none, as they were given."""
    used = set()
    for finding in findings:
        for rule, element, said in accepted:
            if rule == finding.rule and fnmatch.fnmatchcase(finding.element, element or "*"):
                finding.accepted = True
                used.add(said)
    return [said for _, _, said in accepted if said not in used]


def _exception(text):
    """An --except value: (rule, element glob or None, how it was given)."""
    rule, _, element = text.partition(":")
    if rule not in compatibility.RULES:
        near = difflib.get_close_matches(rule, compatibility.RULES, n=1)
        raise argparse.ArgumentTypeError(f"{rule!r} is no rule" + (f"; did you mean {near[0]!r}?" if near else
                                         f" (they are {', '.join(compatibility.RULES)})"))
    return rule, element or None, f"--except {text}"


def _exceptions(path):
    """The exceptions of an --exceptions file, each told by its FILE:LINE; ValueError for a line that is none."""
    found = []
    for number, line in enumerate(sources.read_file(Path(path)).splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if text:
            try:
                rule, element, _ = _exception(text)
            except argparse.ArgumentTypeError as error:
                raise ValueError(f"--exceptions {path}:{number}: {error}") from None
            found.append((rule, element, f"{path}:{number}: {text}"))
    return found


def _recorded(paths):
    """Yield the exchanges recorded at each --traffic path; ValueError, saying it is --traffic's, for one
    that cannot be read."""
    for path in paths:
        try:
            yield from traffic.read(path)
        except ValueError as error:
            raise ValueError(f"--traffic {error}") from None


def _compared(parser, what, given, options):
    """The Schema of OLD or NEW (a file, a directory, or a live server's URL); None once its problems are
    said; ValueError if it cannot be read at all."""
    try:
        if given.startswith(("http://", "https://")):
            with Client(given, timeout=options.timeout, cafile=options.cafile) as client:
                read = [Document(given, client.schema())], []
        else:
            read = sources.read(Path(given))
    except (TransportError, ValueError) as error:
        raise ValueError(f"{what} {given}: {error}") from None
    return _loaded(parser, what, given, read)


def _revision(parser, options):
    """The Schema of NEW's path at the revision --against names; None once its problems are said;
    ValueError if it cannot be read at all."""
    try:
        read = revisions.read(options.against, options.new)
    except ValueError as error:
        raise ValueError(f"--against {options.against}: {error}") from None
    return _loaded(parser, "OLD", f"{options.against}:{options.new}", read)


def _loaded(parser, what, given, read):
    """The Schema of the (documents, problems) read for OLD or NEW; None once its problems are said."""
    loaded, error = sources.check(*read)
    if error:
        print("\n".join(said_problems(error.problems, error.count)), file=sys.stderr)
        parser.fail(f"{what} {given} does not load: {error.count:,} problem{'s' * (error.count != 1)}")
    return loaded


if __name__ == "__main__":
    sys.exit(main())
