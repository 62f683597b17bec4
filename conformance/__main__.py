"""python -m conformance: run the suite against a server, list, check and generate its cases.

Exit status: 0 when every case passed (known failures allowed), 1 when a case
failed or a known failure passed (stale), 2 for a usage error or a target
that cannot be tested, 130 when Ctrl-C or SIGTERM ended the run (after the
summary and the reports of what ran).
"""

import argparse
import http.client
import json
import os
import random
import signal
import sys
import time
from importlib import metadata
from pathlib import Path

from . import cache, cases, clients, config, console, fuzz, lint, matrix, report, runner, schemas, tables
from .target import Target, Trouble


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def main(argv=None):
    sys.setrecursionlimit(max(sys.getrecursionlimit(), runner.FRAMES))  # this program reads deep answers
    name = os.path.basename(sys.argv[0])  # (the console script's, or python -m conformance)
    parser = Parser(prog=name if name.startswith("sdms-") else "python -m conformance", description=(
        "A language-neutral conformance suite for the Schema-Driven Message Service protocol."))
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="subcommand", required=True, metavar="COMMAND", parser_class=Parser)

    run = commands.add_parser("run", help="run the cases against a server",
                              description="Run every case that applies against the server at --target.")
    run.add_argument("--target", required=True, metavar="URL", help="the API URL, such as http://127.0.0.1:8000/api "
                     "(https:// too)")
    run.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file for an "
                     "https:// target (by default, the system's authorities)")
    _selectors(run)
    run.add_argument("--without", type=_features, default=set(), metavar="LIST",
                     help="protocol features the target lacks, so their cases are not checked: "
                          + ", ".join(f"{name} ({meaning})" for name, meaning in cases.FEATURES.items()))
    run.add_argument("--cases", metavar="PATH", help="run the server cases of this fixture file, or of the *.json "
                     "files of this folder, instead of the suite's own (such as those fuzz --fixtures writes)")
    run.add_argument("--limit", type=_limit, action="append", default=[], metavar="NAME=VALUE",
                     help="a limit the target keeps, repeatable; its cases then check that value, and without it "
                          "accept any clean answer: " + "; ".join(f"{name}, {meaning} (the guide's: {value})"
                                                                  for name, (value, _, meaning) in cases.LIMITS.items()))
    run.add_argument("--repeat", type=_positive, default=1, metavar="N", help="run every case N times; a case "
                     "whose answers differ from run to run is reported as flaky, apart from failures (default 1)")
    run.add_argument("--workers", type=_positive, default=4, metavar="N", help="cases run at once (default 4)")
    run.add_argument("--wait", type=_seconds, default=10, metavar="SECONDS",
                     help="how long to wait for the target to answer (default 10)")
    run.add_argument("--timeout", type=_timeout, default=10, metavar="SECONDS", help="how long one exchange with "
                     "the target may take, however slowly it answers (default 10)")
    _outcomes(run)

    client = commands.add_parser("client", help="check a client library through a driver", description=(
        "Check a client: a scripted server of the suite's own plays the other side, and --command, a driver "
        "for the client under test, makes the calls (conformance/README.md, Checking a client)."))
    client.add_argument("--command", required=True, metavar="CMD", help="the driver to start; the scripted "
                        "server's URL is added as its last argument")
    _selectors(client)
    _outcomes(client)

    schema = commands.add_parser("schema", help="check a schema loader through a driver", description=(
        "Check a schema loader: --command, a driver for the library under test, is handed each case's "
        "schema documents and answers whether the library accepts them, and where each problem is "
        "(conformance/README.md, Checking a schema loader)."))
    schema.add_argument("--command", required=True, metavar="CMD", help="the driver to start")
    _selectors(schema)
    _outcomes(schema)

    fuzzing = commands.add_parser("fuzz", help="call a server's own functions, made from its schema, and check "
                                  "the answers", description=(
        "Read the target's schema (fn.api_), make calls of its functions by seed, valid ones and ones with one "
        "thing wrong, and check every answer against the schema: " + "; ".join(
            f"{name}: {what}" for name, (what, _) in fuzz.CHECKS.items()) + ". A failing call is shrunk."))
    fuzzing.add_argument("--target", required=True, metavar="URL", help="the API URL (http:// or https://)")
    fuzzing.add_argument("--cafile", metavar="FILE", help="trust this certificate authority for an https:// target")
    fuzzing.add_argument("--function", action="append", default=[], metavar="NAME",
                         help="call only this function (repeatable; default: every public one)")
    fuzzing.add_argument("--max-examples", type=_positive, default=50, metavar="N",
                         help="calls made of each function (default 50)")
    fuzzing.add_argument("--seed", type=int, metavar="N", help="the seed of the calls (default: a new one, printed)")
    fuzzing.add_argument("-H", "--header", action="append", default=[], type=_header, metavar="NAME:=JSON",
                         help="a request header for every call, such as '@auth_:={\"Session\": {\"token\": "
                              "\"t\"}}' for protected functions (repeatable)")
    fuzzing.add_argument("--rate", type=_rate, metavar="N", help="at most N requests a second (default: no limit)")
    fuzzing.add_argument("--time-limit", type=_seconds, default=600, metavar="SECONDS",
                         help="stop making calls after this long (default 600)")
    fuzzing.add_argument("--deterministic", action="store_true", help="the service answers the same call the "
                         "same way: compare MessagePack answers with JSON ones (the binary check)")
    fuzzing.add_argument("--no-binary", action="store_true", help="make calls on JSON only")
    fuzzing.add_argument("--wait", type=_seconds, default=10, metavar="SECONDS",
                         help="how long to wait for the target to answer (default 10)")
    fuzzing.add_argument("--timeout", type=_timeout, default=10, metavar="SECONDS",
                         help="how long one exchange may take (default 10)")
    fuzzing.add_argument("-v", "--verbose", action="store_true", help="print every call made, and its answer's "
                         "result tag")
    fuzzing.add_argument("--fixtures", metavar="FILE", help="write each failure there as a case, in a fixture file "
                         "(run --cases FILE runs them again)")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"), ("html", "an HTML report")):
        fuzzing.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")
    table = commands.add_parser("matrix", help="run the suites against every implementation a manifest lists",
                                description=("Build, start and check every implementation the manifest lists, one "
                                             "after the other, and show one table: groups of requirements against "
                                             "implementations, MUST and SHOULD apart (conformance/README.md, The "
                                             "matrix)."))
    table.add_argument("--manifest", default=str(cases.HERE / "matrix.json"), metavar="FILE",
                       help="the implementations, as conformance/matrix.json lists them (default: that file)")
    table.add_argument("--html", metavar="FILE", help="write the matrix there as one page, each failing cell "
                       "leading to its failures")
    listing = commands.add_parser("list", help="list the cases", description=(
        "List the cases, one per line: id, level, what it needs, the features it uses, and what it checks. "
        "A level such as SHOULD+MUST is a convention's case with a part the spec demands; --level MUST "
        "lists it, and a run at that level checks only that part."))
    _selectors(listing)
    commands.add_parser("check", help="lint the suite itself", description=(
        "Check the fixtures: their format, unique ids, known requirements, the features they use, that the "
        "generated ones are current, and that what they expect fits the schema of their service."))
    coverage = commands.add_parser("coverage", help="show which rules have cases (server and client)",
                                   description="Show every requirement and the cases that check it.")
    coverage.add_argument("--missing", action="store_true", help="show only requirements without cases")
    commands.add_parser("generate", help="write the testbed schema and cases from conformance/tables",
                        description="Write testbed.json, cases/testbed-*.json and clients/*.json from the "
                                    "tables in conformance/tables.")

    parser.set_defaults(interrupted="")  # (why the run ended early, once Ctrl-C or SIGTERM ends it)
    try:
        configured = config.apply(commands.choices, sys.argv[1:] if argv is None else argv)
    except ValueError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    options = parser.parse_args(argv)
    if configured.get(options.subcommand):
        print(f"Settings from [tool.conformance] in {config.FILE}: {', '.join(configured[options.subcommand])}")
    command = {"run": _run, "client": _driven, "schema": _driven, "fuzz": _fuzz, "matrix": _matrix, "list": _list, "check": _check,
               "coverage": _coverage, "generate": _generate}
    before = signal.signal(signal.SIGTERM, _interrupt)  # SIGTERM ends a run as Ctrl-C does: with its reports
    try:
        return command[options.subcommand](options, commands.choices[options.subcommand])
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupt(number, frame):
    raise KeyboardInterrupt


def _version():
    try:
        return metadata.version("sdms-reference")
    except metadata.PackageNotFoundError:
        return "(not installed: run it from a clone with pip install -e .)"


def _selectors(parser):
    parser.add_argument("--id", action="append", default=[], metavar="GLOB",
                        help="only cases whose id matches (* within a segment, ** across); repeatable")
    parser.add_argument("--exclude", action="append", default=[], metavar="GLOB",
                        help="leave out cases whose id matches, as --id would select them; repeatable")
    parser.add_argument("--level", type=str.upper, choices=["MUST", "SHOULD", "MAY"], default="MAY",
                        help="MUST cases only, MUST and SHOULD, or all of them (MAY, the default)")


def _outcomes(parser):
    parser.add_argument("--last-failed", "--lf", action="store_true", help="run only the cases that failed last "
                        "time (kept in .conformance_cache/ in the current directory); every case when none did")
    parser.add_argument("--failed-first", "--ff", action="store_true", help="run the cases that failed last "
                        "time first, then the rest")
    parser.add_argument("--durations", type=int, metavar="N", help="show the N slowest cases (0: all of them)")
    parser.add_argument("--maxfail", type=_positive, metavar="N", help="stop starting cases after N failures")
    parser.add_argument("-x", "--exitfirst", dest="maxfail", action="store_const", const=1,
                        help="stop at the first failure (--maxfail 1)")
    parser.add_argument("--known-failures", metavar="FILE", help="ids (or globs) expected to fail, one per line, "
                        "'#' comments allowed; they still run, and one that passes is reported as stale")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"),
                       ("html", "an HTML report: one self-contained page, to open in a browser")):
        parser.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every case, not only failures")
    named = parser.add_argument_group("what is checked, named in every report")
    named.add_argument("--implementation", default="", metavar="NAME", help="the implementation's name")
    named.add_argument("--implementation-version", default="", metavar="VERSION", help="its version")
    named.add_argument("--language", default="", metavar="LANGUAGE", help="its programming language")


def _features(text):
    features = {f for f in text.split(",") if f}
    unknown = sorted(features - cases.FEATURES.keys())
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown features {', '.join(unknown)}; known: {', '.join(cases.FEATURES)}")
    return features


def _positive(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return int(text)


def _limit(text):
    name, equals, value = text.partition("=")
    if name not in cases.LIMITS or not equals:
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with NAME one of {', '.join(cases.LIMITS)}")
    most = cases.LIMITS[name][1]
    if not value.isdigit() or not 1 <= int(value) <= most:
        raise argparse.ArgumentTypeError(f"the {name} limit must be a whole number from 1 to {most:,}, not {value!r}")
    return name, int(value)


def _seconds(text):
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1
    if not 0 <= seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 or more)")
    return seconds


def _timeout(text):
    if _seconds(text) == 0:
        raise argparse.ArgumentTypeError("0 is no time to answer in; give a number of seconds above 0")
    return _seconds(text)


def _run(options, parser):
    try:
        target = Target(options.target, options.timeout, options.cafile)
    except ValueError as error:
        parser.error(str(error))
    chosen, set_aside, known, unselected = _chosen(options, parser, "server")
    try:
        target.wait(options.wait, lambda reason: print(
            f"Waiting up to {options.wait:g} s for {target.url} to answer ({reason}; see --wait)...", flush=True))
        profile, service = runner.detect(target)
    except Trouble as trouble:
        return _trouble(parser, trouble)
    except (OSError, http.client.HTTPException) as error:
        return _trouble(parser, f"cannot reach {target.url}: {getattr(error, 'strerror', None) or error}")
    selected, aside = runner.sort_out(chosen, profile, options.without)
    other, unchecked = (sum(r.status == status for r in aside) for status in ("other-service", "not-checked"))
    named = report.named({"name": options.implementation, "version": options.implementation_version,
                          "language": options.language})
    print(f"Checking {named + ' at ' if named else ''}{target.url}: {service}. Running {report.plural(len(selected), 'case')}"
          + (f"; {other} {'is' if other == 1 else 'are'} for other services" if other else "")
          + (f"; {unchecked} {'is' if unchecked == 1 else 'are'} not checked (without {', '.join(sorted(options.without))})"
             if unchecked else "")
          + ".", flush=True)
    limits = dict(options.limit)
    if limits:
        print("Declared limits: " + ", ".join(f"{name} {value:,}" for name, value in limits.items()), flush=True)
    results = console.running(options, selected, lambda progress: runner.merged(
        [runner.run(selected, target, options.workers, _matching(known, selected), progress, options.level, limits)
         for _ in range(options.repeat)]), target)
    return console.finish(options, results + aside + set_aside, target.url, service, unselected, "server", target.stopped,
                   limits)


DRIVEN = {"client": (clients.run, "client"), "schema": (schemas.run, "schema loader")}  # command -> what it checks


def _driven(options, parser):
    """Check what the driver --command drives (a client, a schema loader) with the cases of its kind."""
    kind = options.subcommand
    run, what = DRIVEN[kind]
    chosen, aside, known, unselected = _chosen(options, parser, kind)
    subject = f"the {what} driven by {options.command!r}"
    print(f"Checking {subject}. Running {report.plural(len(chosen), 'case')}.", flush=True)
    try:
        results = console.running(options, chosen, lambda progress: run(chosen, options.command,
                                                                 _matching(known, chosen), progress))
    except Trouble as trouble:
        return _trouble(parser, trouble)
    return console.finish(options, results + aside, subject, f"a {what}", unselected, kind)


def _chosen(options, parser, kind):
    """The cases of `kind` selected, those --level sets aside, the known-failure globs (of any kind:
    one file serves all), and how many --id left out; usage problems are found before any run."""
    _writable(parser, options)
    everything = cases.everything()
    if getattr(options, "cases", None):
        try:
            own = cases.load(Path(options.cases))
        except (OSError, ValueError, KeyError) as error:
            parser.error(f"cannot read the cases of {options.cases}: {getattr(error, 'strerror', None) or error}")
        everything = own + [c for c in everything if cases.kind(c) != "server"]
    known = _known(options.known_failures, everything, parser) if options.known_failures else set()
    matched = cases.matching([c for c in everything if cases.kind(c) == kind], options.id, options.exclude)
    failed = cache.last_failed(kind) if options.last_failed or options.failed_first else None
    if (options.last_failed or options.failed_first) and not failed:
        print(f"No failures recorded by the last run; running every case selected "
              f"(--{'last-failed' if options.last_failed else 'failed-first'}).")
    elif options.last_failed:
        matched = [c for c in matched if c["id"] in failed]
        print(f"Running only what failed last time (--last-failed): {len(matched)} of the cases selected.")
    elif failed:
        matched = sorted(matched, key=lambda c: c["id"] not in failed)
        print(f"Running first what failed last time (--failed-first): {len(set(failed) & {c['id'] for c in matched})} "
              f"of the cases selected.")
    chosen = [c for c in matched if cases.levels(c) & cases.LEVELS[options.level]]
    if not chosen:
        parser.error("no case matches the --id, --exclude and --level given")
    aside = [runner.Result(c, "set-aside", [f"its level is {c['level']}, beside --level {options.level}"], 0)
             for c in matched if c not in chosen]
    return chosen, aside, known, sum(cases.kind(c) == kind for c in everything) - len(matched)


def _matching(globs, chosen):
    return {c["id"] for c in chosen if any(cases.pattern(glob).match(c["id"]) for glob in globs)}


def _trouble(parser, message):
    """Say why the subject cannot be checked, in one line that starts as usage errors do."""
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def _known(path, everything, parser):
    """The globs of a known-failures file; each must match some case, or it is a typo."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as error:
        parser.error(f"cannot read the known-failures file {path}: {error.strerror}")
    globs = {line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()}
    unmatched = sorted(g for g in globs if not any(cases.pattern(g).match(c["id"]) for c in everything))
    if unmatched:
        parser.error(f"the known-failures file {path} lists what matches no case: {', '.join(unmatched)}")
    return globs


def _header(text):
    name, colon, value = text.partition(":=")
    try:
        return name, json.loads(value) if colon else None
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r}: the value is not JSON ({error})") from None


def _rate(text):
    try:
        rate = float(text)
    except ValueError:
        rate = 0
    if not 0 < rate < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of requests a second above 0")
    return rate


def _fuzz(options, parser):
    """Fuzz the target's functions; print each failure and a summary; return the exit status."""
    if any(value is None or not name.startswith("@") for name, value in options.header):
        parser.error("a header is -H NAME:=JSON, its name starting with @")
    _writable(parser, options, ("junit", "json", "html", "fixtures"))
    seed = options.seed if options.seed is not None else random.randrange(2**32)
    try:
        target = Target(options.target, options.timeout, options.cafile)
        target.wait(options.wait)
        profile, service = runner.detect(target)
        fuzzer = fuzz.Fuzzer(target, random.Random(seed), dict(options.header), options.rate,
                             time.monotonic() + options.time_limit, options.deterministic, not options.no_binary,
                             console.call_line if options.verbose else None)
        unknown = [name for name in options.function if name not in fuzzer.schema.functions]
        if unknown:
            parser.error(f"the target has no {', '.join(unknown)}; it has {', '.join(sorted(fuzzer.schema.functions))}")
        functions = fuzzer.functions(options.function)
    except (ValueError, Trouble, OSError, http.client.HTTPException) as error:
        return _trouble(parser, getattr(error, "strerror", None) or error)
    print(f"Fuzzing {target.url}: {service}, {report.plural(len(functions), 'function')}, "
          f"{options.max_examples} calls each, "
          f"seed {seed} (--seed {seed} makes the same calls again).", flush=True)
    started, findings, checked = time.monotonic(), [], []
    try:
        for function in functions:
            mine = list(fuzzer.examples(function, options.max_examples))
            findings += mine
            checked += [(function.name, check) for check in fuzz.CHECKS
                        if check != "binary" or (fuzzer.encoding and options.deterministic)]
            said = f"{len(mine)} failing ({', '.join(sorted({f.check for f in mine}))})" if mine else "passed"
            note = (" (every call was answered ErrorUnauthenticated_: give -H '@auth_:=...')"
                    if fuzzer.tags.get(function.name) == {"ErrorUnauthenticated_"} else "")
            print(f"  {function.name}: {said}{note}", flush=True)
    except Trouble as trouble:
        return _trouble(parser, trouble)
    except KeyboardInterrupt:  # what was found so far is reported all the same
        options.interrupted = "interrupted"
        left = len(functions) - len({name for name, _ in checked})
        print(f"\nThe fuzzing was interrupted: {report.plural(left, 'function')} left not fuzzed.", flush=True)
    results = fuzz.as_results(findings, checked, fuzzer, sorted(profile & {"calculator", "testbed"}))
    for result in results:
        if result.failed:
            console.print_failure(result)
    if options.fixtures and findings:
        fixture = {"description": f"Calls that failed python -m conformance fuzz --target {target.url} --seed {seed}.",
                   "cases": [{k: v for k, v in r.case.items() if k != "file"} for r in results if r.failed]}
        Path(options.fixtures).write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    scope = report.Scope()
    for form, make in {"junit": lambda: report.junit(results, target.url, scope),
                       "json": lambda: report.as_json(results, target.url, service, scope),
                       "html": lambda: report.as_html(results, target.url, service, scope,
                                                      cases.load_json("requirements.json"))}.items():
        if getattr(options, form):
            Path(getattr(options, form)).write_text(make(), encoding="utf-8")
    by_check = {check: sum(f.check == check for f in findings) for check in fuzz.CHECKS}
    print("\nBy check: " + ", ".join(f"{check} {count} failing" if count else f"{check} passed"
                                      for check, count in by_check.items() if any(c == check for _, c in checked)))
    failed = sum(r.failed for r in results)
    print(f"Fuzzed {report.plural(len(functions), 'function')} with {fuzzer.sent} requests in {time.monotonic() - started:.1f} s "
          f"(seed {seed}): " + (f"{report.plural(failed, 'failure')}, in {len(findings)} calls." if findings
                                else "no failures."))
    return 130 if options.interrupted else 1 if findings else 0


def _writable(parser, options, names=("junit", "json", "html")):
    """Stop before anything runs if a report asked for cannot be written (leaving no empty file)."""
    for name in names:
        path = getattr(options, name) and Path(getattr(options, name))
        if path and str(path) == "-":
            parser.error(f"--{name} needs a file name: standard output carries the run's lines")
        try:
            if path:
                existed = path.exists()
                path.open("a", encoding="utf-8").close()
                if not existed:
                    path.unlink()
        except OSError as error:
            parser.error(f"cannot write the --{name} report to {path}: {error.strerror or error}")


def _matrix(options, parser):
    try:
        manifest = json.loads(Path(options.manifest).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        parser.error(f"cannot read the manifest {options.manifest}: {getattr(error, 'strerror', None) or error}")
    problems = matrix.problems(manifest, options.manifest)
    if problems:
        parser.error("; ".join(problems))
    if options.html:
        try:
            Path(options.html).open("a", encoding="utf-8").close()
        except OSError as error:
            parser.error(f"cannot write the matrix to {options.html}: {error.strerror}")
    columns = matrix.run_all(manifest)
    print("\n" + "\n".join(matrix.terminal(columns)))
    if options.html:
        Path(options.html).write_text(matrix.as_html(columns), encoding="utf-8")
        print(f"\nWrote the matrix to {options.html}")
    return 1 if any(column.trouble or any(r.failed for r in column.results) for column in columns) else 0


def _list(options, parser):
    listed = cases.select(cases.everything(), options.id, options.level, options.exclude)
    if not listed:
        parser.error("no case matches the --id, --exclude and --level given")
    for case in listed:
        needs = {"client": lambda: f"client:{case['client']['mode']}", "schema": lambda: "schema loader",
                 "server": lambda: ",".join(case["requires"]) or "any"}[cases.kind(case)]()
        level = "+".join(sorted(cases.levels(case), key=["MAY", "SHOULD", "MUST"].index))
        print(f"{case['id']:<55} {level:<11} {needs:<22} {','.join(case.get('features', [])) or '-':<14} "
              f"{case['description']}")
    return 0


def _check(options, parser):
    problems = lint.check()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{report.plural(len(problems), 'problem')}")
    else:
        servers, clients, loaders = len(cases.load()), len(cases.load(cases.CLIENTS)), len(cases.load(cases.SCHEMAS))
        print(f"The suite is sound: {servers} server cases, {clients} client cases and {loaders} schema cases.")
    return 1 if problems else 0


def _coverage(options, parser):
    rows = cases.coverage(cases.everything())
    missing = [requirement for requirement, ids in rows if not ids]
    for requirement, ids in rows:
        if ids and options.missing:
            continue
        print(f"{requirement['id']:<32} {len(ids):>4} {'  '.join(ids[:3])}{' ...' if len(ids) > 3 else ''}")
        print(f"{'':<32}      {requirement['cites']}: {requirement['text'][:100]}")
    print(f"{len(rows) - len(missing)} of {len(rows)} requirements have cases")
    return 1 if missing else 0


def _generate(options, parser):
    if not (cases.HERE.parent / "pyproject.toml").exists():  # an installed copy, not the suite's source
        return _trouble(parser, f"generate rewrites the suite's own files, in a clone of its repository; "
                                f"this copy is installed at {cases.HERE}")
    for name, text in tables.files().items():
        path = cases.HERE / name
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return 0


def script():
    """python -m conformance, or the sdms-conformance script: main(), ended quietly by a closed pipe or Ctrl-C."""
    try:
        return main()
    except BrokenPipeError:  # the output went to a command that stopped reading, like head
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(script())
