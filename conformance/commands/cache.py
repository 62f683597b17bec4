"""What the last run failed, kept between runs so that --last-failed can run only those cases again.

The ids are kept in .conformance_cache/last-failed.json in the current
directory, one list for each kind of run (server, client, schema), as
pytest keeps its own in .pytest_cache. The folder holds a .gitignore of its
own, so it never shows up in a repository's changes. What a checkout may
have planted there is never trusted: a link is replaced, not followed, and
only a regular file of bounded size is read.
"""

import json
import os
import stat
import tempfile
from pathlib import Path

FOLDER = Path(".conformance_cache")
FILE = FOLDER / "last-failed.json"
MAX_RECORD = 4 * 1024 * 1024  # bytes of the record read at most: ids of failed cases


def last_failed(kind):
    """The ids the last run of `kind` failed, or None when no run of that kind left a record."""
    return _record().get(kind)


def remember(kind, results):
    """Record which cases of `kind` failed; a case that did not run keeps its earlier record.
    Returns why the record could not be written, or None."""
    record = _record()
    ran = {r.case.id for r in results if r.status not in ("not-run", "set-aside")}
    failed = set(record.get(kind) or []) - ran | {r.case.id for r in results if r.status in ("fail", "stale")}
    try:
        FOLDER.mkdir(exist_ok=True)
        _replace(FOLDER / ".gitignore", "# written by python -m conformance\n*\n")
        _replace(FILE, json.dumps({**record, kind: sorted(failed)}, indent=1) + "\n")
    except OSError as error:
        return f"cannot keep the failures for --last-failed in {FILE.absolute()}: {error.strerror}"
    return None


def _replace(path, text):
    """Write `path` anew at once: a link planted there is replaced, never followed, and nobody reads half."""
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, prefix=f".{path.name}.",
                                     delete=False) as file:
        file.write(text)
    os.replace(file.name, path)


def _record():
    """What the file holds: the failed ids of each kind of run; {} if there is none or it is unreadable."""
    try:
        descriptor = os.open(FILE, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:  # a regular file of a size a record may have, or nothing
        with os.fdopen(descriptor, "rb", closefd=False) as file:
            data = file.read(MAX_RECORD + 1) if stat.S_ISREG(os.fstat(descriptor).st_mode) else b""
    finally:
        os.close(descriptor)
    try:
        record = json.loads(data) if len(data) <= MAX_RECORD else None
    except (ValueError, RecursionError):
        return {}
    return record if type(record) is dict else {}
