"""python -m conformance: run the suite against a server, list its cases, check it, show coverage."""

import argparse
import sys
from pathlib import Path

from . import cases, runner


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m conformance", description=(
        "A language-neutral conformance suite for the Schema-Driven Message Service protocol."))
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="run the cases against a server",
                              description="Run the cases against the server at --target.")
    run.add_argument("--target", required=True, metavar="URL", help="the API URL, such as http://127.0.0.1:8000/api")
    _selectors(run)
    run.add_argument("--features", type=_features, metavar="LIST",
                     help=f"what the target offers, of {','.join(cases.FEATURES)} (default: found out by asking it)")
    run.add_argument("--known-failures", metavar="FILE", help="ids (or globs) expected to fail, one per line, "
                     "'#' comments allowed; they still run, and one that passes is reported as stale")
    run.add_argument("--workers", type=_positive, default=4, metavar="N", help="cases run at once (default 4)")
    run.add_argument("--wait", type=float, default=10, metavar="SECONDS",
                     help="how long to wait for the target to answer (default 10)")
    run.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    run.add_argument("--json", metavar="FILE", help="write a JSON report")
    run.add_argument("-v", "--verbose", action="store_true", help="print every case, not only failures")

    listing = commands.add_parser("list", help="list the cases", description="List the cases, one per line.")
    _selectors(listing)
    listing.add_argument("--features", type=_features, metavar="LIST", help="only cases these features allow")
    commands.add_parser("check", help="lint the suite itself", description=(
        "Check the fixtures: their format, unique ids, known requirements, and that what they expect "
        "fits the calculator schema."))
    coverage = commands.add_parser("coverage", help="show which spec rules have cases",
                                   description="Show every requirement of the spec and the cases that check it.")
    coverage.add_argument("--missing", action="store_true", help="show only requirements without cases")

    options = parser.parse_args(argv)
    return {"run": _run, "list": _list, "check": _check, "coverage": _coverage}[options.command](options, parser)


def _selectors(parser):
    parser.add_argument("--id", action="append", default=[], metavar="GLOB",
                        help="only cases whose id matches (* within a segment, ** across); repeatable")
    parser.add_argument("--level", choices=["MUST", "SHOULD"], help="only MUST cases, or MUST and SHOULD")


def _features(text):
    features = [f for f in text.split(",") if f]
    unknown = [f for f in features if f not in cases.FEATURES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown features {', '.join(unknown)}; known: {', '.join(cases.FEATURES)}")
    return set(features)


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _run(options, parser):
    try:
        target = runner.Target(options.target)
    except ValueError as error:
        parser.error(str(error))
    known = _known(options.known_failures, parser) if options.known_failures else set()
    problem = target.wait(options.wait)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        features = options.features or runner.detect(target)
    except (ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    everything = cases.select(cases.load(), options.id, level=options.level)
    selected = cases.select(everything, features=features)
    if not everything:
        parser.error("no case matches the --id and --level given")
    known = {c["id"] for c in selected if any(cases.pattern(glob).match(c["id"]) for glob in known)}
    print(f"Running {len(selected)} cases against {target.url} (features: {', '.join(sorted(features))})")
    done = []
    terminal = sys.stdout.isatty()

    def progress(result):
        done.append(result)
        if options.verbose:
            print(f"{result.status.upper():>13} {result.case['id']}", flush=True)
        elif terminal:
            print(f"\r[{len(done)}/{len(selected)}] {result.case['id'][:60]:<60}", end="", flush=True)

    results = runner.run(selected, target, options.workers, known, progress)
    if terminal and not options.verbose:
        print("\r" + " " * 80 + "\r", end="")
    skipped = [runner.Result(c, "skip", [f"needs {', '.join(sorted(set(c['features']) - features))}"], [], 0)
               for c in everything if c not in selected]
    for result in results:
        if result.status in ("fail", "stale"):
            _print_failure(result, target)
    results += skipped
    if options.junit:
        Path(options.junit).write_text(runner.junit(results, target), encoding="utf-8")
    if options.json:
        Path(options.json).write_text(runner.report(results, target, features), encoding="utf-8")
    print(runner.summary(results))
    return 1 if any(r.status in ("fail", "stale") for r in results) else 0


def _print_failure(result, target):
    case = result.case
    print(f"\nFAIL {case['id']} ({case['level']}; {case['file']}; checks {', '.join(case['requirements'])})")
    print(f"  {case['description']}")
    if result.status == "stale":
        print("  It passes, but the known-failures file lists it: remove it from there.")
    for line in result.problems[:10]:
        print(f"  {line}")
    if len(result.problems) > 10:
        print(f"  ... and {len(result.problems) - 10} more differences (all of them are in the --json report)")
    commands = runner.curl(target, result.transcript)
    if commands:
        print("  To reproduce:")
        for command in commands:
            print("    " + command.replace("\n", "\n    "))


def _known(path, parser):
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        parser.error(f"cannot read the known-failures file {path}: {error.strerror}")
    return {line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()}


def _list(options, parser):
    for case in cases.select(cases.load(), options.id, options.features, options.level):
        print(f"{case['id']:<55} {case['level']:<6} {','.join(case['features']):<18} {case['description']}")
    return 0


def _check(options, parser):
    problems = cases.check()
    for problem in problems:
        print(problem)
    count = len(cases.load()) if not problems else 0
    print(f"{len(problems)} problems" if problems else f"The suite is sound: {count} cases.")
    return 1 if problems else 0


def _coverage(options, parser):
    rows = cases.coverage(cases.load())
    missing = [requirement for requirement, ids in rows if not ids]
    for requirement, ids in rows:
        if ids and options.missing:
            continue
        print(f"{requirement['id']:<32} {len(ids):>3} {'  '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}")
        print(f"{'':<32}     {requirement['section']}: {requirement['text'][:100]}")
    print(f"{len(rows) - len(missing)} of {len(rows)} requirements have cases")
    return 1 if missing else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the output went to a command that stopped reading, like head
        sys.stderr.close()
        sys.exit(0)
