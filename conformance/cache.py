"""What the last run failed, kept between runs so that --last-failed can run only those cases again.

The ids are kept in .conformance_cache/last-failed.json in the current
directory, one list for each kind of run (server, client, schema), as
pytest keeps its own in .pytest_cache. The folder holds a .gitignore of its
own, so it never shows up in a repository's changes.
"""

import json
from pathlib import Path

FOLDER = Path(".conformance_cache")
FILE = FOLDER / "last-failed.json"


def last_failed(kind):
    """The ids the last run of `kind` failed, or None when no run of that kind left a record."""
    try:
        return json.loads(FILE.read_text(encoding="utf-8")).get(kind)
    except (OSError, ValueError, AttributeError):
        return None


def remember(kind, results):
    """Record which cases of `kind` failed; a case that did not run keeps its earlier record.
    Returns why the record could not be written, or None."""
    earlier = set(last_failed(kind) or [])
    ran = {r.case["id"] for r in results if r.status not in ("not-run", "set-aside")}
    failed = sorted(earlier - ran | {r.case["id"] for r in results if r.status in ("fail", "stale")})
    try:
        record = json.loads(FILE.read_text(encoding="utf-8")) if FILE.exists() else {}
        record = record if type(record) is dict else {}
    except (OSError, ValueError):
        record = {}
    try:
        FOLDER.mkdir(exist_ok=True)
        (FOLDER / ".gitignore").write_text("# written by python -m conformance\n*\n", encoding="utf-8")
        FILE.write_text(json.dumps({**record, kind: failed}, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        return f"cannot keep the failures for --last-failed in {FILE.resolve()}: {error.strerror}"
    return None
