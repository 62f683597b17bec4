"""What a run comes to: its summary line, its failures by cause, and their reproductions.

A reproduction is a curl command per step that sends the same bytes again (a
MessagePack answer saved to `step-N.bin`, with a way to read it). Failures are
grouped by their cause: what their first difference is about, with the
values that vary from case to case left out, so that 67 cases missing the
same header read as one group, which names the rule whose check failed (that
header's) rather than the rules the cases cite. formats.py writes them as
JUnit, JSON and HTML files.
"""

import base64
import json
import re
import shlex
from collections import Counter
from typing import NamedTuple

import msgpack

from . import cases
from .cases import LEVELS
from .match import from_msgpack

STATUSES = ("pass", "fail", "flaky", "errored", "known-failure", "stale", "other-service", "not-checked", "set-aside",
            "not-run")
# Read with the python3 of the PATH (with msgpack, as in the environment the suite runs in), never this interpreter's
# own path, so that a reproduction runs on another machine; bytes are shown in base64, not as Python writes them.
READ_BINARY = ("python3 -c \"import base64, json, msgpack, sys; print(json.dumps(msgpack.unpackb(open(sys.argv[1], "
               "'rb').read(), strict_map_key=False), default=lambda b: base64.b64encode(b).decode()))\" {file}")


UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # control characters, and halves of surrogate pairs


def printable(text):
    """`text` as every report can carry it, whatever a target answered: each control character (which a
    terminal would obey: a title, a cleared screen) and each half of a surrogate pair (which no UTF-8 file
    holds, nor XML) written as \\uXXXX."""
    return UNPRINTABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


VALUES = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?')  # texts and numbers


def gist(problem):
    """A problem without the values in it (texts, numbers): what stays the same each time a failure is
    met, whatever varies by design (a caseId, a timestamp, a username)."""
    return re.sub(r"…(?:, …)+", "…", VALUES.sub("…", problem))  # (a path of any length is one value)


def plural(count, word):
    """"1 case", "2 cases"."""
    return f"{count} {word}{'s' * (count != 1)}"


def counts(results):
    """How many results have each status."""
    return {status: sum(r.status == status for r in results) for status in STATUSES}


class Scope(NamedTuple):
    """What a run was asked to check: features declared absent, level, id globs, cases the globs left out."""

    without: set = set()
    level: str = "MAY"
    ids: list = []
    unselected: int = 0
    last_failed: bool = False
    stopped: str = ""  # why the target stopped answering during the run, if it did
    implementation: dict = {}  # what the target is, as declared: name, version, language
    limits: dict = {}  # the limits the target declared
    exclude: list = []  # id globs of the cases left out
    seed: int | None = None  # of a fuzzing run: the same seed makes the same calls again


def named(implementation):
    """An implementation as declared, in words: "name version (language)", or ""."""
    words = " ".join(implementation.get(key, "") for key in ("name", "version")).strip()
    language = implementation.get("language")
    return f"{words} ({language})" if words and language else words or language or ""


def failed_at(result):
    """How a failure reads: MUST, or a convention's level when the spec's part passed."""
    if result.level == "MUST" or "MUST" not in cases.levels(result.case):
        return result.level
    return f"{result.level}: the spec's own part passed"


def summary(results, scope=Scope()):
    """The last line of a run: what passed and failed, at which level, and what was set aside."""
    tally = counts(results)
    line = f"{tally['pass']} passed, {tally['fail']} failed"
    if tally["fail"]:
        levels = Counter(r.level for r in results if r.status == "fail")
        line += " (" + ", ".join(f"{levels[level]} {level}" for level in ("MUST", "SHOULD", "MAY") if levels[level]) + ")"
    if tally["flaky"]:
        line += f", {tally['flaky']} flaky (their answers differ from run to run)"
    if tally["known-failure"] or tally["stale"]:
        line += f", {tally['known-failure']} known failures, {tally['stale']} stale"
    if tally["errored"]:
        line += f"; {tally['errored']} errored (the target stopped answering)"
    if tally["other-service"]:
        line += f"; {tally['other-service']} for other services"
    if tally["not-checked"]:
        line += f"; {tally['not-checked']} not checked (without {', '.join(sorted(scope.without))})"
    if tally["set-aside"]:
        line += f"; {tally['set-aside']} set aside by --level {scope.level}"
    if tally["not-run"]:  # (why, unless the target stopped: that is said above)
        why = next(r.problems[0] for r in results if r.status == "not-run").removesuffix(" first")
        line += f"; {tally['not-run']} not run" + ("" if scope.stopped else f" ({why})")
    if scope.unselected:
        by = [name for name, used in (("--id", scope.ids), ("--exclude", scope.exclude),
                                      ("--last-failed", scope.last_failed)) if used]
        line += f"; {scope.unselected} not selected by {' or '.join(by or ['--id'])}"
    partly = sum(r.status in ("pass", "fail", "flaky", "known-failure", "stale") and r.case["level"] not in LEVELS[scope.level]
                 for r in results)
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
    lines += [f"  {r.case['id']}: {r.diagnostics[0][:200]}" for r in differ[:shown]]
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
    levels = cases.rule_levels()
    wanted = "MUST" if result.level == "MUST" else "SHOULD"
    return next((r for r in result.case["requirements"] if levels.get(r) == wanted), result.case["requirements"][0])


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
        lines.append(f"       first: {group[0].case['id']}: {first_difference(group[0])}")
    return lines


OTHER_CAUSES = {"stale": "it passes, but is listed as a known failure",  # failures that are no difference
                "errored": "the target stopped answering", "flaky": "its answers differ from run to run"}


def first_difference(result):
    if result.status == "stale":
        return OTHER_CAUSES["stale"]
    return result.problems[0][:300] if result.problems else ""


def reproduce(target, exchanges):
    """Shell commands that send a server case's requests again, one per step (runner.Exchange)."""
    commands, scheme = [], "https" if target.tls else "http"
    for number, (data, method, path, media_type, answer, framing) in enumerate(exchanges, 1):
        absolute = path.startswith(("http://", "https://"))  # (the request target in absolute form)
        url = shlex.quote(f"{scheme}://{target.host}:{target.port}{'' if absolute else path}")
        url += f" --request-target {shlex.quote(path)}" if absolute else ""
        if method != "POST":
            commands.append(f"curl -s -i -X {method} {url}")
            continue
        try:
            text = data.decode() if data[:1] != b"\x92" else None
        except UnicodeDecodeError:
            text = None
        send = (f"--data-binary {shlex.quote(text)}" if text is not None
                else "--data-binary @-")
        pipe = "" if text is not None else f"echo {base64.b64encode(data).decode()} | base64 -d | "
        framed = {"chunked": " -H 'Transfer-Encoding: chunked'", "none": " -H 'Content-Length:'",
                  "both": f" -H 'Transfer-Encoding: chunked' -H 'Content-Length: {len(data)}'",
                  "two-lengths": f" -H 'Content-Length: {len(data)}' -H 'Content-Length: {len(data) - 1}'",
                  "length-not-a-number": f" -H 'Content-Length: 0x{len(data):x}'",
                  "blank-before-colon": " -H 'X-Probe : 1'",
                  "length-behind-a-cr": f" -H $'X-Probe: 1\\rContent-Length: {len(data)}' -H 'Content-Length:'",
                  }.get(framing, "")
        command = f"{pipe}curl -s -i -X POST {url} -H 'Content-Type: {media_type}'{framed} {send}"
        if text is None:  # (base64 says nothing to a reader: the message it holds, keys as the ids sent)
            commands.append(f"# step {number} sends MessagePack: {_readable(data)}")
        if answer[:1] == b"\x92":  # MessagePack: headers on the terminal, the answer to a file
            file = f"step-{number}.bin"
            command = command.replace("curl -s -i", "curl -s -D -") + f" -o {file}; {READ_BINARY.format(file=file)}"
        commands.append(command)
    return commands


def _readable(data, most=300):
    """MessagePack bytes as the suite's notation (match.py), or what they are if they hold no message."""
    try:
        text = json.dumps(from_msgpack(msgpack.unpackb(data, strict_map_key=False)), ensure_ascii=False)
    except (ValueError, msgpack.UnpackException, RecursionError):
        return f"{len(data)} bytes that are not MessagePack"
    return printable(text if len(text) <= most else text[:most] + " ...")


LABELS = {"pass": "passed", "fail": "failed", "flaky": "flaky", "errored": "errored", "known-failure": "known failures",
          "stale": "stale", "other-service": "for other services", "not-checked": "not checked",
          "set-aside": "set aside by --level", "not-run": "not run"}
