"""python -m conformance: run the suite against a server, list, check and generate its cases. The
options are arguments.py's, and what a run says on the terminal is console.py's.

Exit status: 0 when every case passed (known failures allowed), 1 when a case
failed or a known failure passed (stale), 2 for a usage error or a target
that cannot be tested, 130 when Ctrl-C or SIGTERM ended the run (after the
summary and the reports of what ran).
"""

import http.client
import json
import random
import signal
import sys
import time
from pathlib import Path

from . import (arguments, cache, cases, clients, config, console, files, findings, fuzz, grid, inprocess, lint, matrix,
               report, runner, schemas, tables)
from .channel import Channel, Pace
from .target import Target, Trouble


def main(argv=None):
    """Run the command `argv` (else the command line) names; return its exit status."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), runner.FRAMES))  # this program reads deep answers
    parser, commands = arguments.command_line()
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
    known = _matching(known, selected)
    ending = console.running(options, selected, lambda progress: runner.merged(
        [runner.Run(target, options.workers, known, options.level, limits, progress).results(selected)
         for _ in range(options.repeat)]), target)
    ending = ending._replace(results=ending.results + aside + set_aside)
    return console.finish(options, ending, target.url, service, unselected, "server", limits)


DRIVEN = {"client": (clients.run, "client"), "schema": (schemas.run, "schema loader")}  # command -> what it checks


def _driven(options, parser):
    """Check what the driver --command drives (a client, a schema loader) with the cases of its kind."""
    kind = options.subcommand
    run, what = DRIVEN[kind]
    chosen, aside, known, unselected = _chosen(options, parser, kind)
    subject = f"the {what} driven by {options.command!r}"
    print(f"Checking {subject}. Running {report.plural(len(chosen), 'case')}.", flush=True)
    try:
        ending = console.running(options, chosen, lambda progress: run(chosen, options.command,
                                                                _matching(known, chosen), progress))
    except Trouble as trouble:
        return _trouble(parser, trouble)
    return console.finish(options, ending._replace(results=ending.results + aside), subject, f"a {what}",
                          unselected, kind)


def _chosen(options, parser, kind):
    """The cases of `kind` selected, those --level sets aside, the known-failure globs (of any kind:
    one file serves all), and how many --id left out; usage problems are found before any run."""
    _writable(parser, options)
    everything = cases.everything()
    if getattr(options, "cases", None):
        try:
            own = _own_cases(Path(options.cases))
        except ValueError as error:
            parser.error(f"--cases {error}")
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


def _own_cases(path):
    """The server cases of a fixture file, or of the *.json files of a folder (such as fuzz --fixtures writes),
    each file read within bounds and held to the fixture format (fixture.schema.json); ValueError says the
    first thing wrong, where."""
    paths = sorted(path.glob("*.json")) if path.is_dir() else [path]
    found, shape = [], cases.load_json("fixture.schema.json")
    for file in paths:
        document = files.read_json(file)
        problems = list(lint.conforms(document, shape, shape))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ValueError(f"{file}: not a fixture file of server cases: {problems[0]}{more}")
        found += [{**case, "file": file.name} for case in document["cases"]]
    if not found:
        raise ValueError(f"{path}: holds no cases")
    return found


def _matching(globs, chosen):
    return {c["id"] for c in chosen if any(cases.pattern(glob).match(c["id"]) for glob in globs)}


def _trouble(parser, message):
    """Say why the subject cannot be checked, in one line that starts as usage errors do."""
    print(f"{parser.prog}: error: {message}", file=sys.stderr)
    return 2


def _known(path, everything, parser):
    """The globs of a known-failures file; each must match some case (of fuzz: fuzz/FUNCTION/CHECK, where
    `everything` is None), or it is a typo."""
    try:
        lines = files.read_text(path).splitlines()
    except ValueError as error:
        parser.error(f"--known-failures {error}")
    globs = {line.split("#")[0].strip() for line in lines if line.split("#")[0].strip()}
    matches = (lambda g: any(cases.pattern(g).match(c["id"]) for c in everything)) if everything is not None else (
        lambda g: g.startswith("fuzz/") and g.count("/") == 2)
    unmatched = sorted(g for g in globs if not matches(g))
    if unmatched:
        parser.error(f"the known-failures file {path} lists what matches no case: {', '.join(unmatched)}")
    return globs


def _fuzz(options, parser):
    """Fuzz the target's functions; print each failure and a summary; return the exit status."""
    if any(value is None or not name.startswith("@") for name, value in options.header):
        parser.error("a header is -H NAME=TEXT or -H NAME:=JSON, its name starting with @")
    _writable(parser, options, ("junit", "json", "html", "fixtures"))
    known = _known(options.known_failures, None, parser) if options.known_failures else set()
    seed = options.seed if options.seed is not None else random.randrange(2**32)
    try:
        if options.app and options.cafile:
            parser.error("--cafile is for an https:// --target, not an --app called in process")
        if options.app and options.workers > 1:
            parser.error("--workers is for a --target: an --app is called in one thread, one call at a time")
        target = (inprocess.Application(options.app, options.timeout) if options.app else
                  Target(options.target, options.timeout, options.cafile))
        target.wait(options.wait)
        profile, service = runner.detect(target)
        channel = Channel(target, Pace(options.rate), console.call_line if options.verbose else None)
        fuzzer = fuzz.Fuzzer(channel, random.Random(seed), dict(options.header),
                             time.monotonic() + options.time_limit, options.deterministic, not options.no_binary)
        unknown = [name for name in options.function + options.skip if name not in fuzzer.schema.functions]
        if unknown:
            parser.error(f"the target has no {', '.join(unknown)}; it has {', '.join(sorted(fuzzer.schema.functions))}")
        functions = fuzzer.functions(options.function, options.skip)
    except (ValueError, Trouble, OSError, http.client.HTTPException) as error:
        return _trouble(parser, getattr(error, "strerror", None) or error)
    print(f"Fuzzing {target.url}: {service}, {report.plural(len(functions), 'function')}, "
          f"{report.plural(options.max_examples, 'call')} each, "
          f"seed {seed} (--seed {seed} makes the same calls again).", flush=True)
    if fuzzer.links.said():
        print(f"Links followed: {fuzzer.links.said()}.", flush=True)
    started, found, unreached, interrupted = time.monotonic(), [], fuzz.UNREACHED, False
    try:
        fuzzer.run(functions, options.max_examples, found, lambda line: print(line, flush=True), options.workers)
    except Trouble as trouble:
        return _trouble(parser, trouble)
    except KeyboardInterrupt:  # what was found so far is reported all the same
        interrupted, unreached = True, "the run was interrupted before its calls"
        print("\nThe fuzzing was interrupted: what was checked so far is reported.", flush=True)
    results = findings.verdicts(fuzzer, functions, found, unreached, sorted(profile & {"calculator", "testbed"}), known)
    for result in results:
        if result.failed:
            console.print_failure(result)
    if options.fixtures and found:
        where = f"--app {options.app}" if options.app else f"--target {target.url}"
        _write_fixtures(options.fixtures, f"python -m conformance fuzz {where} --seed {seed}", results)
    console.write_reports(options, results, target.url, service, report.Scope(seed=seed))
    tally = report.counts(results)
    print("\n" + findings.by_check(results))
    told = (f"{report.plural(tally['fail'] + tally['flaky'], 'failure')}" + (f" ({tally['flaky']} flaky)" * bool(tally["flaky"]))
            if tally["fail"] + tally["flaky"] else "no failures") + (
        f", {report.plural(tally['known-failure'], 'known failure')}" if tally["known-failure"] else "")
    called = sum(bool(fuzzer.evidence[(function.name, "message")]) for function in functions)
    seconds = time.monotonic() - started
    print(f"Fuzzed {called if called == len(functions) else f'{called} of {len(functions)}'} "
          f"function{'s' * (len(functions) != 1)} with {fuzzer.channel.sent} requests in {seconds:.1f} s "
          f"({fuzzer.channel.sent / max(seconds, 1e-3):,.0f} a second; seed {seed}): {told}; {tally['pass']} checks passed"
          + (f", {tally['not-run']} not run" if tally["not-run"] else "") + ".")
    if not tally["pass"] + tally["fail"] + tally["flaky"] + tally["known-failure"]:
        print("Nothing was checked: no verdict rests on any answer.")
    return (130 if interrupted else 1 if tally["fail"] + tally["flaky"] else
            0 if tally["pass"] + tally["known-failure"] else console.NOTHING_RAN)


def _write_fixtures(path, command, results):
    """Write the failed `results` of `command` as cases, in a fixture file at `path`."""
    fixture = {"description": f"Calls that failed {command}.",
               "cases": [{k: v for k, v in r.case.items() if k != "file"} for r in results if r.failed]}
    Path(path).write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


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
    columns, manifest = [], None
    for path in options.report:
        try:
            columns += grid.reports(files.read_json(path), path)
        except ValueError as error:
            parser.error(f"--report {error}" if str(error).startswith(path) else f"--report {path}: {error}")
    if options.manifest or not options.report:  # (reports alone need no manifest)
        path = options.manifest or str(cases.HERE / "matrix.json")
        try:
            manifest = files.read_json(path)
        except ValueError as error:
            parser.error(f"--manifest {error}")
        problems = matrix.problems(manifest, path)
        if problems:
            parser.error("; ".join(problems))
    _writable(parser, options, ("html", "json", "markdown"))
    interrupted = False
    try:
        if manifest:
            matrix.run_all(manifest, columns, str(Path(path).parent))
    except KeyboardInterrupt:  # the implementations checked so far are shown all the same
        interrupted = True
        print("\nThe matrix was interrupted: it shows the implementations checked so far.", flush=True)
    print("\n" + "\n".join(grid.terminal(columns)))
    for name, write in (("html", grid.as_html), ("json", grid.as_json), ("markdown", grid.as_markdown)):
        if getattr(options, name):
            Path(getattr(options, name)).write_text(write(columns), encoding="utf-8")
            print(f"\nWrote the matrix to {getattr(options, name)}")
    failed = any(column.trouble or any(r.failed for r in column.results) for column in columns)
    return 130 if interrupted else 1 if failed else 0


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
