"""The matrix: the suites run against every implementation a manifest lists, in one table.

How this works
--------------
A manifest (`matrix.json` beside this file, or `--manifest FILE`) lists
implementations as data: a name, version and language; how to build one
(`build`), start it (`start`: a command, stopped with SIGTERM) and reach it
(`target`), the drivers of its client and schema loader (`client`,
`schema`), the limits it declares, the features it lacks, and its known
failures, each with a category and a link. `run_all` builds, starts, checks
and stops them one after the other; an implementation that cannot be built,
started or reached is `errored` in its column, and the others go on; what
a started one wrote before it stopped is kept to say why. reports/grid.py draws the
Columns as one table.
"""

import difflib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

from ..language import suite
from ..reports.grid import Column
from ..reports.results import printable
from ..targets.remote import Target, Trouble
from . import client_suite, schema_suite, server_suite
from .settings import Settings

CATEGORIES = ("implementation bug", "convention", "suite problem")
FIELDS = {  # a manifest entry's keys: whether required, and the type of their value
    "name": (True, str), "version": (False, str), "language": (False, str), "way": (False, str),
    "build": (False, str), "start": (False, str), "target": (False, str), "client": (False, str),
    "schema": (False, str), "limits": (False, dict), "without": (False, list), "known": (False, (list, str)),
}


def problems(manifest, where="the manifest"):
    """Every way the manifest breaks its shape, each with where it is, and two entries alike."""
    if type(manifest) is not dict or type(manifest.get("implementations")) is not list:
        return [f"{where}: not an object with a list of \"implementations\""]
    found = [f"{where}: unknown key {key!r}" + "".join(f" (did you mean {near!r}?)" for near in
                                                    difflib.get_close_matches(key, ("description", "implementations"), n=1))
             for key in manifest if key not in ("description", "implementations")]
    for index, entry in enumerate(manifest["implementations"]):
        at = f"{where}: implementations[{index}]"
        if type(entry) is not dict:
            found.append(f"{at}: not an object")
            continue
        found += [f"{at}: unknown key {key!r}" + "".join(f" (did you mean {near!r}?)" for near in
                                                         difflib.get_close_matches(key, FIELDS, n=1))
                  for key in entry if key not in FIELDS]
        found += [f"{at}.{key}: {'missing' if key not in entry else _not_a(kind)}"
                  for key, (required, kind) in FIELDS.items()
                  if (required and key not in entry) or (key in entry and type(entry[key]) not in _kinds(kind))]
        if not {"target", "client", "schema"} & entry.keys():
            found.append(f"{at}: no suite to run: give a target, a client driver or a schema driver")
        found += [f"{at}.limits.{name}: not one of {', '.join(suite.LIMITS)}, or not a whole number above 0"
                  for name, value in (entry.get("limits") or {}).items()
                  if name not in suite.LIMITS or type(value) is not int or value < 1]
        found += [f"{at}.without: {name!r} is not one of {', '.join(suite.FEATURES)}"
                  for name in entry.get("without") or () if name not in suite.FEATURES]
        for number, known in enumerate(entry.get("known") if type(entry.get("known")) is list else ()):
            place = f"{at}.known[{number}]"
            if type(known) is not dict or not all(type(known.get(k)) is str for k in ("id", "category", "why")):
                found.append(f"{place}: needs id, category and why, as text")
            elif known["category"] not in CATEGORIES:
                found.append(f"{place}.category: {known['category']!r} is not one of {', '.join(CATEGORIES)}")
    entries = [entry for entry in manifest["implementations"] if type(entry) is dict]
    titles = [Column(entry, []).title for entry in entries]
    found += [f"{where}: {title!r} is listed {titles.count(title)} times: give each a \"way\" of its own"
              for title in sorted(set(titles)) if titles.count(title) > 1]
    return found


def unmatched(manifest, where, cases):
    """Each known failure of the manifest (its lists, once files are read into them) that matches none of the
    suite's `cases`: a typo, which would pass silently."""
    return [f"{where}: implementations[{index}].known{'' if known.get('file') else f'[{number}]'}: "
            f"{known['id']!r}" + (f" (in {known['file']})" if known.get("file") else "") + " matches no case of the suite"
            for index, entry in enumerate(manifest["implementations"]) if type(entry) is dict
            for number, known in enumerate(entry.get("known") if type(entry.get("known")) is list else ())
            if type(known) is dict and type(known.get("id")) is str
            and not any(suite.matches([known["id"]], case.id) for case in cases)]


def _kinds(kind):
    return kind if type(kind) is tuple else (kind,)


def _not_a(kind):
    return "not " + " or ".join({str: "text", list: "a list", dict: "an object"}[k] for k in _kinds(kind))


def known_of(entry):
    """The globs of an entry's known failures (each resolved to a list by the matrix command)."""
    return frozenset(known["id"] for known in entry.get("known") or ())


def run_all(manifest, columns, home=".", say=print):
    """Check every implementation of the manifest, one after the other, adding each Column to `columns` as it
    is made, and `say`ing what it came to once it is there; relative program paths are from `home`.
    Interrupted, the one being checked is `interrupted` and those after it `not run`, each with a Column
    all the same, before KeyboardInterrupt goes on."""
    every, entries, before = suite.everything(), manifest["implementations"], len(columns)
    try:
        for entry in entries:
            say(f"{Column(entry, []).title}: ", end="", flush=True)
            columns.append(check(entry, every, home))
            say(columns[-1].said, flush=True)
    except KeyboardInterrupt:  # (wherever it comes, each entry gets one column: made, interrupted or not run)
        rest = entries[len(columns) - before:]
        columns += [Column(entry, [], "the matrix was interrupted while checking it", "interrupted")
                    for entry in rest[:1]]
        columns += [Column(later, [], "the matrix was interrupted before it", "not run") for later in rest[1:]]
        raise


def check(entry, every, home="."):
    """Build, start, check and stop one implementation; its Column."""
    settings = Settings(known=known_of(entry),
                        without=frozenset(entry.get("without", ())), limits=dict(entry.get("limits") or {}))
    process, results, output = None, [], tempfile.TemporaryFile()
    try:
        port = free_port()
        if entry.get("build"):
            build(command(entry["build"], port, home))
        if entry.get("start"):
            started = command(entry["start"], port, home)
            entry = {**entry, "started": " ".join(map(shlex.quote, started))}  # (how to start it again, to reproduce)
            try:
                process = subprocess.Popen(started, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
            except OSError as error:
                raise Trouble(f"cannot start {entry['start']!r}: {error.strerror}") from None
        if entry.get("target"):
            results += serve_suite(entry["target"].replace("{port}", str(port)), settings, every, process, output)
        for kind, run in (("client", client_suite.run), ("schema", schema_suite.run)):
            if entry.get(kind):
                chosen = [c for c in every if c.kind == kind]
                results += run(chosen, " ".join(command(entry[kind], port, home)), settings)
    except (Trouble, OSError, ValueError, subprocess.SubprocessError) as error:
        return Column(entry, results, _told(error), "errored")
    finally:
        stop(process)
        output.close()
    return Column(entry, results)


def serve_suite(url, settings, every, process=None, output=None):
    """The server cases against the target at `url`, as `run` runs them with `settings` (once the `process`
    started, if any, answers: one that ends first is told with its last words, in `output`)."""
    target = Target(url, timeout_option=None)
    deadline = time.monotonic() + 30
    while process and process.poll() is None and not target.answers() and time.monotonic() < deadline:
        time.sleep(0.2)
    if process and process.poll() is not None:
        last = _last(output)
        missing = re.search(r"No module named '?([\w.]+)", last)  # (the suite's [test] extra brings uvicorn)
        raise Trouble(f"it ended (status {process.returncode}) before answering: {last}"
                      + (f" (pip install {missing[1].split('.')[0]} where it runs)" if missing else ""))
    target.wait(max(0, deadline - time.monotonic()))
    profile, _ = server_suite.detect(target)
    chosen = [c for c in every if c.kind == "server"]
    selected, aside = server_suite.sort_out(chosen, profile, settings.without)
    results = server_suite.Run(target, settings).results(selected)
    if target.stopped:
        raise Trouble(f"the target {target.stopped}")
    return results + aside


def build(arguments):
    """Run a build command to its end (at most 10 minutes); its output goes to a file, not to memory,
    and a failure shows the end of it."""
    with tempfile.TemporaryFile() as output:
        status = subprocess.run(arguments, stdout=output, stderr=subprocess.STDOUT, timeout=600).returncode
        if status:
            raise Trouble(f"the build failed (status {status}): {_last(output)}")


def _last(output, shown=300):
    """The last `shown` characters a command wrote to the file `output`, printable."""
    output.seek(max(0, output.seek(0, os.SEEK_END) - shown))
    return printable(output.read().decode(errors="replace").strip()) or "it wrote nothing"


def _told(error):
    return str(getattr(error, "strerror", None) or error)


def command(text, port, home="."):
    """A manifest's command as arguments: {python} is this interpreter, {port} a free port, and a program
    named by a relative path (./venv/bin/python) is found from `home`, the manifest's folder."""
    words = [sys.executable if word == "{python}" else word.replace("{port}", str(port)) for word in shlex.split(text)]
    if words and os.sep in words[0] and not os.path.isabs(words[0]):
        words[0] = os.path.normpath(os.path.join(home, words[0]))
    return words


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def stop(process, grace=10):
    """Stop a started implementation, its children too: SIGTERM, then SIGKILL after `grace` seconds."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
