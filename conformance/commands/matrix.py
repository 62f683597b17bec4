"""`python -m conformance matrix`: every implementation a manifest lists (runs/manifest.py), or reports
made elsewhere, in one table (reports/grid.py), on the terminal and in the files asked for."""

import sys
from pathlib import Path

from ..language import suite
from ..reports import grid, readback
from ..runs import manifest
from . import files
from .options import writable


def add(commands):
    """matrix: every implementation of a manifest, or reports made elsewhere, in one table."""
    table = commands.add_parser("matrix", help="run the suites against every implementation a manifest lists",
                                description=("Build, start and check every implementation the manifest lists, one "
                                             "after the other, and show one table: groups of requirements against "
                                             "implementations, MUST and SHOULD apart (conformance/README.md, The "
                                             "matrix)."))
    table.add_argument("--manifest", metavar="FILE", help="the implementations to build, start and check, as "
                       "conformance/matrix.json lists them (default: that file, unless --report is given)")
    table.add_argument("--report", action="append", default=[], metavar="FILE", help="a column made elsewhere: "
                       "the JSON report of run --json --implementation NAME (or of matrix --json); repeatable")
    table.add_argument("--html", metavar="FILE", help="write the matrix there as one page, each failing cell "
                       "leading to its failures")
    table.add_argument("--json", metavar="FILE", help="write the matrix there as reports, one for each column, "
                       "that --report reads back")
    table.add_argument("--markdown", metavar="FILE", help="write the matrix there as a Markdown table (for a CI "
                       "job's summary)")
    table.set_defaults(run=main)


def main(options, parser):
    """Check the implementations of the manifest, or read the reports given; show the matrix; the exit status."""
    columns, sources, entries = [], [], None
    for number, path in enumerate(options.report, 1):
        try:
            made = readback.reports(files.read_json(path), path)
        except ValueError as error:
            parser.error(f"--report {error}" if str(error).startswith(path) else f"--report {path}: {error}")
        columns += made
        sources += [f"--report {number}, {path}" + (f", its report {index}" if len(made) > 1 else "")
                    for index in range(1, len(made) + 1)]
    columns = told_apart(columns, sources)
    if options.manifest or not options.report:  # (reports alone need no manifest)
        path = options.manifest or str(suite.HERE / "matrix.json")
        try:
            entries = files.read_json(path)
        except ValueError as error:
            parser.error(f"--manifest {error}")
        problems = manifest.problems(entries, path)
        if type(entries) is dict and type(entries.get("implementations")) is list:
            entries, unread = known_files(entries, Path(path).parent, path)
            problems += unread + manifest.unmatched(entries, path, suite.everything())
        if problems:
            parser.error("; ".join(problems))
    writable(parser, options, ("html", "json", "markdown"))
    interrupted = False
    try:
        if entries:
            manifest.run_all(entries, columns, str(Path(path).parent))
    except KeyboardInterrupt:  # the implementations checked so far are shown, and those that were not
        interrupted = True
    print("\n" + "\n".join(grid.terminal(columns)))
    for name, write in (("html", grid.as_html), ("json", grid.as_json), ("markdown", grid.as_markdown)):
        if getattr(options, name):
            Path(getattr(options, name)).write_text(write(columns), encoding="utf-8")
            print(f"\nWrote the matrix to {getattr(options, name)}")
    failed = any(column.state or any(r.failed for r in column.results) for column in columns)
    return 130 if interrupted else 1 if failed else 0


def known_files(entries, home, where):
    """The manifest with each `"known": "FILE"` (a known-failures file, such as the suite ships: from the
    manifest's folder, else from the suite's) read into the list it stands for; and what could not be read."""
    resolved, problems = [], []
    for index, entry in enumerate(entries["implementations"]):
        if type(entry) is dict and type(entry.get("known")) is str:
            path = next((p for p in (home / entry["known"], suite.HERE / entry["known"]) if p.exists()),
                        home / entry["known"])
            try:
                listed = suite.known_lines(files.read_text(path))
            except ValueError as error:
                problems.append(f"{where}: implementations[{index}].known: {entry['known']} (in the manifest's folder "
                                f"or the suite's) {str(error).removeprefix(f'{path}: ')}")
                listed = []
            entry = {**entry, "known": [{"id": glob, "category": "", "why": why, "file": str(path)}
                                        for glob, why in listed]}
        resolved.append(entry)
    return {**entries, "implementations": resolved}, problems


def told_apart(columns, sources):
    """The columns of reports (each from its source), those of the same implementation named by their
    sources too, with a warning: two reports of one implementation are two columns, never one twice."""
    titles = [column.title for column in columns]
    for title in sorted({title for title in titles if titles.count(title) > 1}):
        print(f"python -m conformance matrix: warning: {titles.count(title)} reports are of {title}; each column "
              f"says which it is", file=sys.stderr)
    return [column._replace(entry={**column.entry, "way": ", ".join(filter(None, (column.entry.get("way"),
                                                                                    f"from {source}")))})
            if titles.count(column.title) > 1 else column for column, source in zip(columns, sources)]
