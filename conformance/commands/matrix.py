"""`python -m conformance matrix`: every implementation a manifest lists (runs/manifest.py), or reports
made elsewhere, in one table (reports/grid.py), on the terminal and in the files asked for."""

from pathlib import Path

from ..language import suite
from ..reports import grid
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
    columns, entries = [], None
    for path in options.report:
        try:
            columns += grid.reports(files.read_json(path), path)
        except ValueError as error:
            parser.error(f"--report {error}" if str(error).startswith(path) else f"--report {path}: {error}")
    if options.manifest or not options.report:  # (reports alone need no manifest)
        path = options.manifest or str(suite.HERE / "matrix.json")
        try:
            entries = files.read_json(path)
        except ValueError as error:
            parser.error(f"--manifest {error}")
        problems = manifest.problems(entries, path)
        if problems:
            parser.error("; ".join(problems))
    writable(parser, options, ("html", "json", "markdown"))
    interrupted = False
    try:
        if entries:
            manifest.run_all(entries, columns, str(Path(path).parent))
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
