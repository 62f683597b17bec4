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
    return _record().get(kind)


def remember(kind, results):
    """Record which cases of `kind` failed; a case that did not run keeps its earlier record.
    Returns why the record could not be written, or None."""
    record = _record()
    ran = {r.case["id"] for r in results if r.status not in ("not-run", "set-aside")}
    failed = set(record.get(kind) or []) - ran | {r.case["id"] for r in results if r.status in ("fail", "stale")}
    try:
        FOLDER.mkdir(exist_ok=True)
        (FOLDER / ".gitignore").write_text("# written by python -m conformance\n*\n", encoding="utf-8")
        FILE.write_text(json.dumps({**record, kind: sorted(failed)}, indent=1) + "\n", encoding="utf-8")
    except OSError as error:
        return f"cannot keep the failures for --last-failed in {FILE.resolve()}: {error.strerror}"
    return None


def _record():
    """What the file holds: the failed ids of each kind of run; {} if there is none or it is unreadable."""
    try:
        record = json.loads(FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if type(record) is dict else {}
