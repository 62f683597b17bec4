"""`python -m conformance run`: the server cases against a server; and the cases a run of any kind runs,
chosen by --id, --exclude, --level, --last-failed, --cases and the known failures (driven.py's too).

Exit status: 0 when every case passed (known failures allowed), 1 when a case
failed or a known failure passed (stale), 2 for a usage error or a target
that cannot be tested, 130 when Ctrl-C or SIGTERM ended the run (after the
summary and the reports of what ran), 5 when no case ran.
"""

import difflib
import http.client
import sys
from pathlib import Path

from ..language import suite
from ..reports import terminal
from ..reports.results import named, not_run, plural
from ..runs import server_suite
from ..targets.remote import Target, Trouble
from . import cache, files
from .options import (
    features,
    known_failures,
    limit,
    outcomes,
    positive,
    seconds,
    selectors,
    settings,
    timeout,
    unable,
    writable,
)


def add(commands):
    """run: the cases against a server."""
    run = commands.add_parser("run", help="run the cases against a server",
                              description="Run every case that applies against the server at --target.")
    run.add_argument("--target", required=True, metavar="URL", help="the API URL, such as http://127.0.0.1:8000/api "
                     "(https:// too)")
    run.add_argument("--cafile", metavar="FILE", help="trust the certificate authority in this PEM file for an "
                     "https:// target (by default, the system's authorities)")
    selectors(run)
    run.add_argument("--without", type=features, default=set(), metavar="LIST",
                     help="protocol features the target lacks, so their cases are not checked: "
                          + ", ".join(f"{name} ({meaning})" for name, meaning in suite.FEATURES.items()))
    run.add_argument("--cases", metavar="PATH", help="run the server cases of this fixture file, or of the *.json "
                     "files of this folder, instead of the suite's own (such as those fuzz --fixtures writes)")
    run.add_argument("--limit", type=limit, action="append", default=[], metavar="NAME=VALUE",
                     help="a limit the target keeps, repeatable; its cases then check that value, and without it "
                          "accept any clean answer: " + "; ".join(f"{name}, {meaning} (the guide's: {value})"
                                                                  for name, (value, _, meaning) in suite.LIMITS.items()))
    run.add_argument("--repeat", type=positive, default=1, metavar="N", help="run every case N times; a case "
                     "whose answers differ from run to run is reported as flaky, apart from failures (default 1)")
    run.add_argument("--workers", type=positive, default=4, metavar="N", help="cases run at once (default 4)")
    run.add_argument("--wait", type=seconds, default=10, metavar="SECONDS",
                     help="how long to wait for the target to answer (default 10)")
    run.add_argument("--timeout", type=timeout, default=10, metavar="SECONDS", help="how long one exchange with "
                     "the target may take, however slowly it answers (default 10)")
    outcomes(run)
    run.set_defaults(run=main)


def main(options, parser):
    """Run the server cases against --target; the exit status."""
    try:
        target = Target(options.target, options.timeout, options.cafile)
    except ValueError as error:
        parser.error(str(error))
    asked, chosen, set_aside, unselected = selected_cases(options, parser, "server")
    try:
        target.wait(options.wait, lambda reason: print(
            f"Waiting up to {options.wait:g} s for {target.url} to answer ({reason}; see --wait)...", flush=True))
        profile, service = server_suite.detect(target)
    except Trouble as trouble:
        return unable(parser, trouble)
    except (OSError, http.client.HTTPException) as error:
        return unable(parser, f"cannot reach {target.url}: {getattr(error, 'strerror', None) or error}")
    selected, aside = server_suite.sort_out(chosen, profile, asked.without)
    other, unchecked = (sum(r.reason.startswith(words) for r in aside) for words in ("for other", "not checked"))
    declared = named(asked.implementation)
    print(f"Checking {declared + ' at ' if declared else ''}{target.url}: {service}. Running {plural(len(selected), 'case')}"
          + (f"; {other} {'is' if other == 1 else 'are'} for other services" if other else "")
          + (f"; {unchecked} {'is' if unchecked == 1 else 'are'} not checked (without {', '.join(sorted(asked.without))})"
             if unchecked else "")
          + ".", flush=True)
    if asked.limits:
        print("Declared limits: " + ", ".join(f"{name} {value:,}" for name, value in asked.limits.items()), flush=True)
    ending = terminal.running(asked, selected, lambda progress: server_suite.Run(target, asked, progress).results(
        selected), target)
    ending = ending._replace(results=ending.results + aside + set_aside)
    return remembered(terminal.finish(asked, ending, target.url, service, unselected), "server", ending.results)


def selected_cases(options, parser, kind):
    """The run's Settings (with the known-failure globs, of any kind: one file serves all), the cases of
    `kind` selected, those --level sets aside, and how many --id left out; usage problems are found
    before any run."""
    writable(parser, options)
    everything = suite.everything()
    if getattr(options, "cases", None):
        try:
            own = own_cases(Path(options.cases))
        except ValueError as error:
            parser.error(f"--cases {error}")
        everything = own + [c for c in everything if c.kind != "server"]
    known = known_failures(options.known_failures, everything, parser) if options.known_failures else set()
    try:
        matched = suite.matching([c for c in everything if c.kind == kind], options.id, options.exclude,
                                 options.keyword)
    except ValueError as error:
        parser.error(str(error))
    unmatched(parser, everything, kind, options)
    failed = cache.last_failed(kind) if options.last_failed or options.failed_first else None
    if (options.last_failed or options.failed_first) and not failed:
        print(f"No failures recorded by the last run; running every case selected "
              f"(--{'last-failed' if options.last_failed else 'failed-first'}).")
    elif options.last_failed:
        matched = [c for c in matched if c.id in failed]
        print(f"Running only what failed last time (--last-failed): {len(matched)} of the cases selected.")
    elif failed:
        matched = sorted(matched, key=lambda c: c.id not in failed)
        print(f"Running first what failed last time (--failed-first): {len(set(failed) & {c.id for c in matched})} "
              f"of the cases selected.")
    chosen = [c for c in matched if c.levels() & suite.LEVELS[options.level]]
    if not chosen:
        parser.error("no case matches the --id, --exclude, -k and --level given")
    ran = {c.id for c in chosen}
    aside = [not_run(c, f"set aside by --level {options.level}", f"its level is {c.level}")
             for c in matched if c.id not in ran]
    return settings(options, known), chosen, aside, sum(c.kind == kind for c in everything) - len(matched)


def unmatched(parser, everything, kind, options):
    """Stop, with a usage error, on an --id glob that matches none of the cases of `kind` (a typo, or a
    case of another kind, said so), or an --exclude glob that matches no case at all."""
    for option, globs, cases in (("--id", options.id, [c for c in everything if c.kind == kind]),
                                 ("--exclude", options.exclude, everything)):
        for glob in globs:
            if not any(suite.matches([glob], c.id) for c in cases):
                other = next((c.kind for c in everything if suite.matches([glob], c.id)), None)
                near = difflib.get_close_matches(glob, [c.id for c in cases], n=1)
                parser.error(f"{option} {glob} matches no {kind} case" + (
                    f" (it matches {other} cases: python -m conformance {'run' if other == 'server' else other})"
                    if other else f" (did you mean {near[0]}?)" if near else ""))


def own_cases(path):
    """The server cases of a fixture file, or of the *.json files of a folder (such as fuzz --fixtures writes),
    each file read within bounds and held to the fixture format (fixture.schema.json); ValueError says the
    first thing wrong, where."""
    paths = sorted(path.glob("*.json")) if path.is_dir() else [path]
    found, shape = [], suite.load_json("fixture.schema.json")
    for file in paths:
        document = files.read_json(file)
        problems = list(suite.conforms(document, shape, shape))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            raise ValueError(f"{file}: not a fixture file of server cases: {problems[0]}{more}")
        found += [suite.Case.read(case, file.name) for case in document["cases"]]
        for index, case in enumerate(document["cases"]):
            for requirement in case["requirements"]:
                if requirement not in suite.rule_levels():
                    near = difflib.get_close_matches(requirement, suite.rule_levels(), n=1)
                    raise ValueError(f"{file}: cases[{index}] ({case['id']}) cites {requirement}, which is no requirement "
                                     f"of the suite" + (f": did you mean {near[0]}?" if near else
                                                        " (python -m conformance coverage lists them)"))
    if not found:
        raise ValueError(f"{path}: holds no cases")
    return found


def remembered(status, kind, results):
    """`status`, once the failures of `results` are kept for --last-failed (or a warning says why not)."""
    trouble = cache.remember(kind, results)
    if trouble:
        print(f"python -m conformance: warning: {trouble}", file=sys.stderr)
    return status
