"""What a run comes to: its summary line, its failures by cause, and their reproductions.

A reproduction is a curl command per step that sends the same bytes again (a
MessagePack answer saved to `step-N.bin`, with a way to read it). Failures are
grouped by their cause: what their first difference is about, with the
values that vary from case to case left out, so that 67 cases missing the
same header read as one group, which names the rule whose check failed (that
header's) rather than the rules the cases cite. formats.py writes them as
JUnit, JSON and HTML files.
"""

import re
from collections import Counter

from ..language import suite
from ..language.suite import LEVELS
from .results import JUDGED, Scope, plural, tally


def failed_at(result):
    """How a failure reads: MUST, or a convention's level when the spec's part passed (a case that found
    nothing wrong, a stale one: its own level)."""
    if not result.level:
        return result.case.level
    if result.level == "MUST" or "MUST" not in result.case.levels():
        return result.level
    return f"{result.level}: the spec's own part passed"


def summary(results, scope=Scope()):
    """The last line of a run: what passed and failed, at which level, what was not run and why, and what
    the run was asked to leave out."""
    line = tally(results)
    made, asked = scope.rounds
    if asked > 1:
        line += f"; every case run {asked} times" if made == asked and not scope.interrupted else \
            f"; {made} of the {asked} runs of every case made" + (" (the last cut short)" * bool(
                scope.interrupted or scope.stopped))
    if scope.unselected:
        by = [name for name, used in (("--id", scope.ids), ("--exclude", scope.exclude), ("-k", scope.keyword),
                                      ("--last-failed", scope.last_failed)) if used]
        line += f"; {scope.unselected} not selected by {' or '.join(by or ['--id'])}"
    partly = sum(r.status in JUDGED and r.case.level not in LEVELS[scope.level] for r in results)
    if partly:
        line += f"; {partly} checked only for what the spec demands (MUST)"
    differ = sum(bool(r.diagnostics) for r in results)
    if differ:
        line += f"; {plural(differ, 'case')} with problems placed otherwise (diagnostics, not verdicts)"
    return line


def diagnostics(results, shown=5):
    """Lines on the schema cases whose verdict is right but whose problems are placed otherwise."""
    differ = [r for r in results if r.diagnostics]
    if not differ:
        return []
    lines = [f"Diagnostics: {plural(len(differ), 'case')} with the right verdict and problems placed "
             f"otherwise than conv.schema-problems (a convention, never a failure):"]
    lines += [f"  {r.case.id}: {r.diagnostics[0][:200]}" for r in differ[:shown]]
    if len(differ) > shown:
        lines.append(f"  ... and {len(differ) - shown} more (all of them are in the --json and --html reports)")
    return lines


# What a difference is about, from its first words, with what varies from case to case left out.
GISTS = [(re.compile(pattern), gist) for pattern, gist in (
    (r"^missing$", "missing"),
    (r"^unexpected key", "an unexpected key"),
    (r"^expected (an object|an array|no value|any \w+)", r"expected \1"),
    (r"^expected \d+ elements", "another number of elements"),
    (r"^expected the bytes", "other bytes"),
    (r"^(matches none|no element matches|each expected element)", "no element or alternative matches"),
    (r"^expected anything but", "a value it must not be"),
    (r"^expected", "another value"),
)]
INDEX = re.compile(r"(?<=.)\[\d+\]")  # an array index below the message's own two places
HEADER_RULES = {"@id_": "header.id", "@enc_": "header.enc", "@bin_": "header.bin", "@base64_": "header.base64",
                "@pac_": "conv.packing", "@time_": "header.time", "@select_": "header.select"}
BODY_RULES = [(re.compile(pattern), rule) for pattern, rule in (  # a difference inside a validation case
    (r"\.cases\[\*\]\.path", "conv.path-format"), (r"\.cases\[\*\]\.reason", "conv.reasons"))]
CHECK_RULES = [(re.compile(pattern), rule) for pattern, rule in (  # checks of the answer as a whole
    (r"^expected HTTP|^expected the HTTP header", "conv.http"), (r"^the answer is not a message", "message.two-objects"),
    (r"^expected a (json|msgpack) answer", "binary.negotiate"), (r"^expected (fewer|more) than", "binary.sizes"),
    (r"^no answer from", "conv.no-crash"))]


def cause(result):
    """What a failure's first difference is about, the same for every case it shows in: where, and
    what kind of difference, without the values (`[0].@enc_: missing`)."""
    text = re.sub(r"^step \d+( of \d+)?: ", "", first_difference(result))
    if not text.startswith(("[", "(top)")):  # a check of the whole answer, or a case of another kind
        return re.sub(r" \d+ bytes \(step \d+\)", "", re.split(r": |, got ", text)[0]).strip()
    where, _, why = text.partition(": ")
    if "; the closest differs at " in why:  # no element matched: how the nearest one differs
        where, _, why = why.split("; the closest differs at ")[1].partition(" ")
    where = re.sub(r"^\[1\]\.\w+\.cases", "[1].*.cases", INDEX.sub("[*]", where))  # any error's cases
    return f"{where}: " + next((pattern.sub(gist, why[:match.end()])
                               for pattern, gist in GISTS if (match := pattern.match(why))), why)


def rule(result):
    """The rule whose check failed: a header's own rule, a validation case's path or reason rule,
    the whole answer's; else, of the rules the case cites, the first of the level it failed at."""
    found = cause(result)
    header = re.match(r"\[0\]\.(@\w+)", found)
    if header:
        return HEADER_RULES.get(header[1], "conv.response-headers")
    checked = next((r for pattern, r in BODY_RULES + CHECK_RULES if pattern.search(found)), None)
    if checked and result.status != "stale":
        return checked
    levels = suite.rule_levels()
    wanted = "MUST" if result.level == "MUST" else "SHOULD"
    return next((r for r in result.case.requirements if levels.get(r) == wanted), result.case.requirements[0])


def by_cause(results):
    """The failures (stale ones too) as (cause, level, rule, results), one group per cause, the
    largest first: its strongest level, and the rule most of its cases break."""
    groups = {}
    for result in results:
        if result.failed:
            groups.setdefault(OTHER_CAUSES.get(result.status) or cause(result), []).append(result)
    found = []
    order = ("MUST", "SHOULD", "MAY", *OTHER_CAUSES)
    for name, group in sorted(groups.items(), key=lambda item: -len(item[1])):
        group = sorted(group, key=lambda r: order.index(_level(r)))  # (the strongest first: the one shown)
        found.append((name, _level(group[0]), Counter(map(rule, group)).most_common(1)[0][0], group))
    return found


def _level(result):
    return result.status if result.status in OTHER_CAUSES else result.level


def mix(group):
    """How many cases of a group failed at each level, when they differ: "4 MUST, 7 SHOULD"; else ""."""
    levels = Counter(map(_level, group))
    return ", ".join(f"{count} {level}" for level, count in levels.items()) if len(levels) > 1 else ""


def causes(results, texts):
    """The failures by cause, as lines: how many, level, the cause, the rule broken, the first case (the
    cases a target that stopped answering left unanswered are told once, apart)."""
    groups = by_cause([result for result in results if result.status != "errored"])
    if not groups:
        return []
    failures = sum(len(group) for *_, group in groups)
    lines = [f"{plural(failures, 'failure')}, "
             + ("one cause:" if len(groups) == 1 else f"{len(groups)} causes:")]
    for name, level, broken, group in groups:  # (a cause's level is its strongest case's: the mix is told)
        lines.append(f"  {len(group):>4} {level:<6} {name}" + (f"  ({mix(group)})" if mix(group) else ""))
        if group[0].status != "stale":  # (which breaks no rule)
            lines.append(f"       breaks {broken}: {texts.get(broken, '')}")
        lines.append(f"       first: {group[0].case.id}: {first_difference(group[0])}")
    return lines


OTHER_CAUSES = {"stale": "it passes, but is listed as a known failure",  # failures that are no difference
                "errored": "the target stopped answering", "flaky": "its answers differ from run to run"}


def first_difference(result):
    if result.status == "stale":
        return OTHER_CAUSES["stale"]
    return result.problems[0][:300] if result.problems else ""


