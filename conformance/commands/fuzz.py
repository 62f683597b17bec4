"""`python -m conformance fuzz`: any server, or an application in process, checked against its own schema
with calls made from it (fuzz/); each failure printed with its reproduction, then the verdicts."""

import http.client
import json
import random
import time
from dataclasses import replace
from pathlib import Path

from ..fuzz.channel import Channel, Pace
from ..fuzz.fuzzer import UNREACHED, Fuzzer
from ..fuzz.verdicts import CHECKS, by_check, verdicts
from ..reports import fuzzing, terminal
from ..reports.results import JUDGED, Scope, counts, plural, seeded, tally
from ..runs import server_suite
from ..targets.inprocess import Application
from ..targets.remote import Target, Trouble
from .options import header, known_failures, positive, rate, seconds, settings, timeout, unable, writable


def add(commands):
    """fuzz: calls made from a server's schema, and their answers checked."""
    fuzzing = commands.add_parser("fuzz", help="call a server's own functions, made from its schema, and check "
                                  "the answers", description=(
        "Read the target's schema (fn.api_), make calls of its functions by seed, valid ones and ones with one "
        "thing wrong, and check every answer against the schema: " + "; ".join(
            f"{name}: {what}" for name, (what, _) in CHECKS.items()) + ". A failing call is shrunk."))
    where = fuzzing.add_mutually_exclusive_group(required=True)
    where.add_argument("--target", metavar="URL", help="the API URL (http:// or https://)")
    where.add_argument("--app", metavar="MODULE:NAME", help="call a WSGI or ASGI application in process, no "
                       "server and no port: NAME is the application, or a factory that makes it (such as "
                       "reference.services.calculator:wsgi); its curl lines address it served at http://127.0.0.1:8000/api")
    fuzzing.add_argument("--cafile", metavar="FILE", help="trust this certificate authority for an https:// target")
    fuzzing.add_argument("--function", action="append", default=[], metavar="NAME",
                         help="call only this function (repeatable; default: every public one)")
    fuzzing.add_argument("--skip", action="append", default=[], metavar="NAME",
                         help="leave this function uncalled, such as one that deletes what others need (repeatable)")
    fuzzing.add_argument("--max-examples", type=positive, default=50, metavar="N",
                         help="calls made of each function (default 50)")
    fuzzing.add_argument("--seed", type=int, metavar="N", help="the seed of the calls (default: a new one, printed)")
    fuzzing.add_argument("-H", "--header", action="append", default=[], type=header, metavar="NAME=TEXT|NAME:=JSON",
                         help="a request header for every call, as the client takes it: such as '@auth_:={\"Session\": "
                              "{\"token\": \"t\"}}' for protected functions, or @id_=run1 (repeatable)")
    fuzzing.add_argument("--workers", type=positive, default=1, metavar="N",
                         help="fuzz that many functions at once, each worker in a process (where the system forks) "
                              "and on a connection of its own (default 1); the sequences that follow run in one")
    fuzzing.add_argument("--rate", type=rate, metavar="N", help="at most N requests a second (default: no limit)")
    fuzzing.add_argument("--time-limit", type=seconds, default=600, metavar="SECONDS",
                         help="stop making calls after this long (default 600)")
    fuzzing.add_argument("--deterministic", action="store_true", help="the service answers the same call the "
                         "same way: a MessagePack answer unlike the JSON one fails at once (else the JSON answers "
                         "before and after it must agree for the binary check to judge it)")
    fuzzing.add_argument("--no-binary", action="store_true", help="make calls on JSON only")
    fuzzing.add_argument("--checks", action="append", default=[], type=names, metavar="NAME[,NAME...]",
                         help=f"judge only these checks ({', '.join(CHECKS)}; default: all, time only with "
                              f"--response-time)")
    fuzzing.add_argument("--exclude-checks", action="append", default=[], type=names, metavar="NAME[,NAME...]",
                         help="judge every check but these")
    fuzzing.add_argument("--response-time", type=seconds, metavar="SECONDS",
                         help="an answer slower than this fails the time check (default: none is judged)")
    fuzzing.add_argument("--wait", type=seconds, default=10, metavar="SECONDS",
                         help="how long to wait for the target to answer (default 10)")
    fuzzing.add_argument("--timeout", type=timeout, default=10, metavar="SECONDS",
                         help="how long one exchange may take (default 10)")
    fuzzing.add_argument("-v", "--verbose", action="store_true", help="print every call made, and its answer's "
                         "result tag")
    fuzzing.add_argument("--known-failures", metavar="FILE", help="verdicts expected to fail, as fuzz/FUNCTION/CHECK "
                         "globs, one per line, '#' comments allowed: reported, not failing the run (the calculator's "
                         "are in conformance/known-failures/reference-calculator-fuzz.txt)")
    fuzzing.add_argument("--fixtures", metavar="FILE", help="write each failure there as a case, in a fixture file "
                         "(run --cases FILE runs them again)")
    for kind, what in (("junit", "a JUnit XML report"), ("json", "a JSON report"), ("html", "an HTML report")):
        fuzzing.add_argument(f"--{kind}", metavar="FILE", help=f"write {what} there")
    fuzzing.set_defaults(run=main)


def main(options, parser):
    """Fuzz the target's functions; print each failure and a summary; return the exit status."""
    begun = time.monotonic()  # (the time limit bounds the whole run, its preparation too)
    if any(value is None or not name.startswith("@") for name, value in options.header):
        parser.error("a header is -H NAME=TEXT or -H NAME:=JSON, its name starting with @")
    writable(parser, options, ("junit", "json", "html", "fixtures"))
    known = known_failures(options.known_failures, None, parser) if options.known_failures else set()
    asked = settings(options, known)
    asked = replace(asked, seed=random.randrange(2**32) if asked.seed is None else asked.seed,
                    checks=checks(parser, options, asked))
    try:
        if options.app and options.cafile:
            parser.error("--cafile is for an https:// --target, not an --app called in process")
        if options.app and asked.workers > 1:
            parser.error("--workers is for a --target: an --app is called in one thread, one call at a time")
        target = (Application(options.app, options.timeout) if options.app else
                  Target(options.target, options.timeout, options.cafile))
        target.wait(options.wait)
        _, service = server_suite.detect(target)
        channel = Channel(target, Pace(options.rate), terminal.call_line if asked.verbose else None)
        fuzzer = Fuzzer(channel, random.Random(asked.seed), asked, begun=begun)
        unknown = [name for name in asked.functions + asked.skip if name not in fuzzer.schema.functions]
        if unknown:
            parser.error(f"the target has no {', '.join(unknown)}; it has {', '.join(sorted(fuzzer.schema.functions))}")
        functions = fuzzer.functions()
    except (ValueError, Trouble, OSError, http.client.HTTPException) as error:
        return unable(parser, getattr(error, "strerror", None) or error)
    print(f"Fuzzing {target.url}: {service}, {plural(len(functions), 'function')}, "
          f"{plural(asked.max_examples, 'call')} each, "
          f"seed {asked.seed} ({seeded(asked.seed)}).", flush=True)
    if fuzzer.links.said():
        print(f"Links followed: {fuzzer.links.said()}.", flush=True)
    found, unreached, interrupted = [], UNREACHED, False
    try:
        fuzzer.run(functions, found, lambda line: print(line, flush=True))
    except Trouble as trouble:
        return unable(parser, trouble)
    except KeyboardInterrupt:  # what was found so far is reported all the same
        interrupted, unreached = True, "the run was interrupted before its calls"
        print("\nThe fuzzing was interrupted: what was checked so far is reported.", flush=True)
    results = verdicts(fuzzer, functions, found, unreached)
    for result in results:
        if result.failed:
            terminal.print_failure(result)
    if options.fixtures and found:
        where = f"--app {options.app}" if options.app else f"--target {target.url}"
        write_fixtures(options.fixtures, f"python -m conformance fuzz {where} --seed {asked.seed}", results)
    seconds = time.monotonic() - begun
    scope = Scope.of(asked, seconds=seconds, interrupted="the fuzzing was interrupted" if interrupted else "")

    def page():  # (the table of every function is made only for the page)
        made = [(f.name, fuzzer.evidence[(f.name, "message")], (fuzzer.slowest.get(f.name) or [(None,)])[0][0])
                for f in functions]
        return fuzzing.as_html(results, target.url, service, scope, made)
    terminal.write_reports(asked, results, target.url, service, scope, page)
    return summary(fuzzer, functions, results, seconds, interrupted)


def names(text):
    """The names a comma-separated option lists."""
    return [name.strip() for name in text.split(",") if name.strip()]


def checks(parser, options, asked):
    """The checks the command line chose (--checks, --exclude-checks), each name known; () if every one."""
    named, excluded = sum(options.checks, []), sum(options.exclude_checks, [])
    unknown = [name for name in named + excluded if name not in CHECKS]
    if unknown:
        parser.error(f"no check is named {', '.join(unknown)}; the checks are {', '.join(CHECKS)}")
    if not (named or excluded):
        return ()
    left = [check for check in (named or CHECKS) if check not in excluded and (
        check != "time" or asked.response_time is not None or "time" in named)]
    if not left:
        parser.error("--checks and --exclude-checks leave no check to judge")
    if "time" in left and asked.response_time is None:
        parser.error("the time check needs a budget: give --response-time SECONDS")
    return tuple(left)


def summary(fuzzer, functions, results, seconds, interrupted):
    """Print how each check fared and what the run came to, in the words of every command; return the exit
    status."""
    count, seed = counts(results), fuzzer.settings.seed
    print("\n" + by_check(results, fuzzer.chosen))
    slowest = sorted(((calls[0][0], name) for name, calls in fuzzer.slowest.items() if calls), reverse=True)
    if slowest:
        budget = fuzzer.settings.response_time
        print("Slowest calls: " + ", ".join(f"{name} {seconds:.3f} s" for seconds, name in slowest[:5])
              + (f" and {len(slowest) - 5} more functions" if len(slowest) > 5 else "")
              + (f" (budget {budget:g} s)" if budget is not None else
                 " (--response-time SECONDS makes a call slower than that a failure)"))
    for function in functions:
        if fuzzer.tags.get(function.name) == {"ErrorUnauthenticated_"}:
            print(f"Every call of {function.name} was answered ErrorUnauthenticated_: none reached its handler, so "
                  f"what it does was not checked (give -H '@auth_:=...').")
    called = sum(bool(fuzzer.evidence[(function.name, "message")]) or function.name in fuzzer.tags
                 for function in functions)
    print(f"Fuzzed {called if called == len(functions) else f'{called} of {len(functions)}'} "
          f"function{'s' * (len(functions) != 1)} with {fuzzer.channel.sent} requests in {seconds:.1f} s "
          f"({fuzzer.channel.sent / max(seconds, 1e-3):,.0f} a second; seed {seed}), checks: {tally(results)}.")
    if not sum(count[status] for status in JUDGED):
        print("Nothing was checked: no verdict rests on any answer.")
    return (130 if interrupted else 1 if count["fail"] + count["flaky"] else
            0 if count["pass"] + count["known-failure"] else terminal.NOTHING_RAN)


def write_fixtures(path, command, results):
    """Write the failures of `command` whose reproduction was confirmed as cases, in a fixture file at
    `path`; say how many, and how many had none."""
    failed = [r for r in results if r.failed or r.status == "known-failure"]
    cases = [r.case.as_data() for r in failed if r.case.steps]
    fixture = {"description": f"Calls that failed {command}, each replayed as a case that failed again.", "cases": cases}
    Path(path).write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nWrote {plural(len(cases), 'reproduction')} to {path} (run --cases {path} runs them)"
          + (f"; {len(failed) - len(cases)} of the failures had none confirmed, and are not in it"
             if len(failed) > len(cases) else "") + ".")
